//! Statistics, results, comparisons, charts and reports of a job, from its export (a
//! [`JobExport`], the document the coordinator reads out of its catalog).
//!
//! The coordinator computes every statistic with the pure functions of [`analysis`] (per-cell
//! [`CellResult`]s: one job against its baseline cell, or two jobs' like cells); the CLI and
//! the dashboard only render what it returns ([`render`], [`plot`], [`html`]), so a table, a
//! chart and a report always agree. Nothing here reads a catalog or talks to the network.

use std::collections::BTreeSet;

use blocklab_proto::v1::*;

use crate::stats::{Metric, StatsError};

pub mod analysis;
pub mod format;
pub mod held;
pub mod html;
pub mod plot;
pub mod render;
pub mod stats;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error("format: unknown format {0:?}; allowed: table, csv, json, markdown")]
    UnknownFormat(String),
}

/// The metric `name` names for this job: a pgbench column or one of the job's workload
/// metrics; empty = the job's headline metric.
pub fn resolve(name: &str, export: &JobExport) -> Result<Metric, ReportError> {
    let known = workload_metrics(export);
    let name = if name.is_empty() {
        let headline = headline_metric(export);
        if headline != "tps" && !known.iter().any(|(n, _, _)| *n == headline) {
            // No run has the headline metric yet.
            return Ok(Metric::Workload {
                name: headline,
                unit: String::new(),
                higher_is_better: true,
            });
        }
        headline
    } else {
        name.to_string()
    };
    Ok(Metric::resolve(&name, &known)?)
}

/// Every workload metric of a job with its per-cell statistics against the baseline.
pub fn metric_results(export: &JobExport) -> Vec<MetricResults> {
    per_metric(export, |m| analysis::cell_results(export, m))
}

/// For each workload metric of `export`, the cells `cells_of` gives for it.
pub fn per_metric(
    export: &JobExport,
    cells_of: impl Fn(&Metric) -> Vec<CellResult>,
) -> Vec<MetricResults> {
    workload_metrics(export)
        .into_iter()
        .map(|(name, unit, higher_is_better)| {
            let m = Metric::Workload {
                name: name.clone(),
                unit: unit.clone(),
                higher_is_better,
            };
            MetricResults {
                cells: cells_of(&m),
                name,
                unit,
                higher_is_better,
            }
        })
        .collect()
}

/// The workload metrics a job's runs have, as (name, unit, higher is better), in the order
/// the runs list them.
pub fn workload_metrics(export: &JobExport) -> Vec<(String, String, bool)> {
    let mut out: Vec<(String, String, bool)> = Vec::new();
    let mut seen = BTreeSet::new();
    for m in export
        .runs
        .iter()
        .filter_map(|r| r.result.as_ref())
        .flat_map(|r| &r.extra)
    {
        if seen.insert(m.name.clone()) {
            out.push((m.name.clone(), m.unit.clone(), m.higher_is_better));
        }
    }
    out
}

/// The metric a job's results show when none is asked for: its workload kind's headline
/// (tps for pgbench scripts, NOTPM for tpcc, ...), as the catalog stored it at submit.
pub fn headline_metric(export: &JobExport) -> String {
    export
        .job
        .as_ref()
        .map(|j| j.headline_metric.clone())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| Metric::Tps.name().to_string())
}
