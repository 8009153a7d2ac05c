//! Statistics, results, comparisons, charts and reports of a job, from its export (a
//! [`JobExport`], the document the coordinator reads out of its catalog).
//!
//! The coordinator computes every statistic with the pure functions of [`analysis`] (per-cell
//! [`CellResult`]s: one job against its baseline cell, or two jobs' like cells); the CLI and
//! the dashboard only render what it returns ([`render`], [`plot`], [`html`]), so a table, a
//! chart and a report always agree. Nothing here reads a catalog or talks to the network.

use blocklab_measure::job::*;

use crate::stats::{Metric, StatsError};

pub mod analysis;
pub mod bisect;
pub mod calibration;
pub mod format;
pub mod headline;
pub mod held;
pub mod html;
pub mod own;
pub mod pilot;
pub mod plot;
pub mod race;
pub mod render;
pub mod scaling;
pub mod stats;

pub use analysis::{headline_metric, workload_metrics};
pub use own::own_workload;

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
    Ok(analysis::resolve_metric(name, export)?)
}

/// Every workload metric of a job with its per-cell statistics against the baseline.
pub fn metric_results(export: &JobExport) -> Vec<MetricResults> {
    results(export, &Metric::Tps).by_metric
}

/// A job's (or a comparison's) statistics: the cells of one metric, and each workload metric
/// with its cells. All come from one analysis, so they share the q-values' family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Results {
    pub cells: Vec<CellResult>,
    pub by_metric: Vec<MetricResults>,
}

fn split(all: Vec<(Metric, Vec<CellResult>)>, metric: &Metric, of: &JobExport) -> Results {
    let known = workload_metrics(of);
    let mut out = Results::default();
    for (m, cells) in all {
        if m.name() == metric.name() {
            out.cells = cells.clone();
        }
        if let Metric::Workload {
            name,
            unit,
            higher_is_better,
        } = m
            && known.iter().any(|(n, _, _)| *n == name)
        {
            out.by_metric.push(MetricResults {
                name,
                unit,
                higher_is_better,
                cells,
            });
        }
    }
    out
}

/// A job's cells of `metric` and every workload metric's cells, each against its baseline.
pub fn results(export: &JobExport, metric: &Metric) -> Results {
    split(analysis::job_results(export, Some(metric)), metric, export)
}

/// Each cell of job B against A's like cell, for `metric` and every workload metric of B.
pub fn compare_results(a: &JobExport, b: &JobExport, metric: &Metric) -> Results {
    split(analysis::compare_results(a, b, Some(metric)), metric, b)
}
