//! What a job's export says of how it is judged: its analysis options with the defaults
//! filled in, the rounds it has run, its workload metrics and its headline metric.

use std::collections::BTreeSet;

use blocklab_measure::job::*;

use crate::stats::{self, DEFAULT_EQUIVALENCE_PCT, Metric, StatsError};

/// How a job's results are judged: its [`AnalysisOptions`] with the defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The equivalence band in percent of the baseline mean (2 when the job names none).
    pub equivalence_pct: f64,
    pub exclude_suspect: bool,
    pub target_ci_pct: Option<f64>,
    pub max_repetitions: u32,
    /// The job's run order makes each round a block (one run of every cell, close in time):
    /// interleaved or randomized-block; not sequential or shuffled.
    pub rounds_are_blocks: bool,
    /// `until = "decided"`: the verdicts use the sequential boundary ([`Options::alpha`]).
    pub until_decided: bool,
    pub min_repetitions: u32,
    /// `search = "race"`: the job's cells race ([`crate::race`]).
    pub race: bool,
}

/// Whether a recorded run order (`interleaved`, `sequential`, `shuffled(seed=N)`,
/// `randomized-block(seed=N)`) puts one run of every cell in each round, in a row.
pub fn rounds_are_blocks(run_order: &str) -> bool {
    let name = run_order.split('(').next().unwrap_or_default().trim();
    matches!(name, "interleaved" | "randomized-block")
}

impl Options {
    pub fn of(export: &JobExport) -> Options {
        let a = export.analysis.unwrap_or_default();
        Options {
            equivalence_pct: if a.equivalence_pct > 0.0 {
                a.equivalence_pct
            } else {
                DEFAULT_EQUIVALENCE_PCT
            },
            exclude_suspect: a.exclude_suspect,
            target_ci_pct: a.target_ci_pct.filter(|t| *t > 0.0),
            max_repetitions: a.max_repetitions,
            rounds_are_blocks: rounds_are_blocks(&export.run_order),
            until_decided: a.until_decided,
            min_repetitions: a.min_repetitions,
            race: a.race,
        }
    }

    /// The level of the verdicts: ALPHA, or under `until = "decided"` the level of each look,
    /// ALPHA over the planned looks from the minimum to the maximum of repetitions.
    pub fn alpha(&self) -> f64 {
        if self.until_decided {
            stats::sequential::look_alpha(self.min_repetitions, self.max_repetitions)
        } else {
            stats::ALPHA
        }
    }
}

/// The rounds a job has run: the highest repetition of its runs, plus one.
pub fn rounds_run(export: &JobExport) -> u32 {
    export
        .runs
        .iter()
        .map(|r| r.repetition + 1)
        .max()
        .unwrap_or(0)
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

/// The metric `name` names for this job: a pgbench column or one of the job's workload
/// metrics; empty = the job's headline metric.
pub fn resolve_metric(name: &str, export: &JobExport) -> Result<Metric, StatsError> {
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
    Metric::resolve(&name, &known)
}
