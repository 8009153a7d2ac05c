//! Per-cell statistics from a [`JobExport`]: one job against its baseline cells, or the like
//! cells of two jobs. Pure functions; the coordinator calls them for `QueryResults`,
//! `ExportJob` and `CompareJobs`.
//!
//! Every metric of a job is analysed at once, because a comparison's q-value depends on the
//! whole family of the job's comparisons ([`family`]): the same cell and metric get the same
//! q-value and verdict whichever metric `results` is asked for.

use blocklab_measure::job::*;

use crate::stats::{self, Metric};

mod baseline;
pub mod budget;
mod cell;
mod family;
mod job;
pub mod race;

pub use baseline::NO_LIKE_CELL;
use baseline::Pair;
pub use cell::{measured, metric_value};
pub use job::{
    Options, headline_metric, resolve_metric, rounds_are_blocks, rounds_run, workload_metrics,
};

/// Adaptive repetitions: the cell met the target half-width.
pub const TARGET_REACHED: &str = "target reached";
/// Adaptive repetitions: the cell has its maximum repetitions without meeting the target.
pub const MAX_REPETITIONS_REACHED: &str = "max repetitions reached";
/// Adaptive repetitions: another round would not fit the job's `budget`.
pub const BUDGET_REACHED: &str = "budget reached";
/// Adaptive repetitions: neither (yet).
pub const TARGET_NOT_REACHED: &str = "target not reached";

/// `until = "decided"`: the cell's headline verdict answers the question; then the rounds.
pub const SEQUENTIAL_DECIDED: &str = "sequential: decided at round";
/// `until = "decided"`: the cell is undecided after the maximum of repetitions.
pub const SEQUENTIAL_MAX_REACHED: &str = "sequential: undecided, max repetitions reached";
/// `until = "decided"`: the cell is undecided, and another round would not fit the budget.
pub const SEQUENTIAL_BUDGET_REACHED: &str = "sequential: undecided, budget reached";
/// `until = "decided"`: the cell is undecided so far.
pub const SEQUENTIAL_UNDECIDED: &str = "sequential: undecided at round";

/// Where a cell stands under `until = "decided"`: decided (faster, slower or equivalent) at
/// the job's last round, undecided at the maximum, or undecided so far; the level of a look
/// follows. Empty for a baseline or uncompared cell.
fn sequential_status(
    o: &Options,
    r: &CellResult,
    rounds: u32,
    budget: Option<budget::BudgetLook>,
) -> String {
    if r.is_baseline || r.baseline_cell_index.is_none() {
        return String::new();
    }
    let level = format!(
        "(alpha {:.4} per look, {} looks)",
        o.alpha(),
        stats::sequential::looks(o.min_repetitions, o.max_repetitions)
    );
    if stats::sequential::is_decided(&r.verdict) {
        format!("{SEQUENTIAL_DECIDED} {rounds} {level}")
    } else if o.max_repetitions > 0 && rounds >= o.max_repetitions {
        format!("{SEQUENTIAL_MAX_REACHED} ({rounds}) {level}")
    } else if let Some(b) = budget.filter(|b| !b.round_fits()) {
        format!(
            "{SEQUENTIAL_BUDGET_REACHED} ({rounds} rounds, {:.0}s of {:.0}s) {level}",
            b.spent_seconds, b.budget_seconds
        )
    } else {
        format!("{SEQUENTIAL_UNDECIDED} {rounds} {level}")
    }
}

fn target_status(
    o: &Options,
    r: &CellResult,
    rounds: u32,
    budget: Option<budget::BudgetLook>,
) -> String {
    if o.until_decided {
        return sequential_status(o, r, rounds, budget);
    }
    let Some(target) = o.target_ci_pct else {
        return String::new();
    };
    if r.ci95_half_width_pct.is_some_and(|h| h <= target) {
        TARGET_REACHED
    } else if o.max_repetitions > 0 && r.runs_total >= o.max_repetitions {
        MAX_REPETITIONS_REACHED
    } else if budget.is_some_and(|b| !b.round_fits()) {
        BUDGET_REACHED
    } else {
        TARGET_NOT_REACHED
    }
    .to_string()
}

/// The metrics a job is analysed on: pgbench's columns, the job's workload metrics, and
/// `also` when it is neither (a headline no run has yet).
pub fn job_metrics(export: &JobExport, also: Option<&Metric>) -> Vec<Metric> {
    let mut out: Vec<Metric> = Metric::ALL.to_vec();
    out.extend(
        workload_metrics(export)
            .into_iter()
            .map(|(name, unit, higher_is_better)| Metric::Workload {
                name,
                unit,
                higher_is_better,
            }),
    );
    if let Some(m) = also
        && !out.iter().any(|x| x.name() == m.name())
    {
        out.push(m.clone());
    }
    out
}

fn side(e: &JobExport, exclude: bool) -> Vec<cell::Runs<'_>> {
    e.cells
        .iter()
        .map(|c| cell::runs(e, c.cell_index, exclude))
        .collect()
}

/// The cells of the treatment side for every metric of `metrics`, `[metric][cell]`.
fn analyse(
    treat: &JobExport,
    base: Option<&JobExport>,
    pairs: &[Pair],
    metrics: &[Metric],
    held: bool,
) -> Vec<Vec<CellResult>> {
    let o = Options::of(treat);
    let base_excludes = base.map_or(o.exclude_suspect, |b| Options::of(b).exclude_suspect);
    let judged = |exclude_t: bool, exclude_b: bool| {
        let t = side(treat, exclude_t);
        let b = base.map(|b| side(b, exclude_b));
        let design = family::Design {
            band_pct: o.equivalence_pct,
            // Rounds of two jobs are not blocks: they ran apart.
            rounds_are_blocks: base.is_none() && o.rounds_are_blocks,
            max_repetitions: o.max_repetitions,
            alpha: o.alpha(),
        };
        let stats = family::judge(metrics, &t, b.as_deref(), pairs, design);
        (t, stats)
    };
    let (runs, primary) = judged(o.exclude_suspect, base_excludes);
    let all_runs = (o.exclude_suspect || base_excludes).then(|| judged(false, false).1);
    let base_cells = base.map_or(&treat.cells, |b| &b.cells);
    let rounds = rounds_run(treat);
    let budget = budget::look(treat);
    // The race is judged on the headline metric, within one job.
    let headline = resolve_metric("", treat).ok().filter(|_| base.is_none());
    let races = headline
        .as_ref()
        .map(|m| race::job_races(treat, m))
        .unwrap_or_default();
    metrics
        .iter()
        .enumerate()
        .map(|(mi, metric)| {
            treat
                .cells
                .iter()
                .enumerate()
                .map(|(c, ec)| {
                    let mut r = cell::head(treat, ec, &runs[c]);
                    cell::put(&mut r, &primary[mi][c].stats);
                    r.hosts = primary[mi][c].hosts.clone();
                    r.metric = metric.name().to_string();
                    r.unit = metric.unit().to_string();
                    r.higher_is_better = metric.higher_is_better();
                    r.equivalence_pct = o.equivalence_pct;
                    r.all_runs = all_runs.as_ref().map(|a| a[mi][c].stats.clone());
                    r.target_ci_pct = o.target_ci_pct;
                    match &pairs[c] {
                        Pair::Baseline => r.baseline_label = ec.label.clone(),
                        Pair::Against { at, compared_on } => {
                            let b = &base_cells[*at];
                            r.baseline_label = b.label.clone();
                            r.baseline_cell_index = Some(b.cell_index);
                            r.compared_on = compared_on.clone();
                            if held {
                                r.held_constant =
                                    crate::held::line(treat, ec.cell_index, Some(b.cell_index));
                            }
                        }
                        Pair::NoBaseline | Pair::NoLikeCell => {}
                    }
                    if base.is_some() {
                        r.is_baseline = false;
                    }
                    r.target_status = target_status(&o, &r, rounds, budget);
                    if headline.as_ref().is_some_and(|h| h.name() == metric.name()) {
                        r.race = race::standing(treat, &races, ec.cell_index);
                        if let Some(s) = &r.race {
                            r.target_status = race::status(s);
                        }
                    }
                    r
                })
                .collect()
        })
        .collect()
}

/// Every metric of a job ([`job_metrics`], with `also`), each with every cell's statistics
/// against its baseline cell.
pub fn job_results(export: &JobExport, also: Option<&Metric>) -> Vec<(Metric, Vec<CellResult>)> {
    let metrics = job_metrics(export, also);
    let pairs = baseline::job_pairs(export);
    let cells = analyse(export, None, &pairs, &metrics, true);
    metrics.into_iter().zip(cells).collect()
}

/// Every cell of job B against A's like cell for every metric of B (A is the baseline, B the
/// treatment; B's equivalence band; each job's runs selected by its own options).
pub fn compare_results(
    a: &JobExport,
    b: &JobExport,
    also: Option<&Metric>,
) -> Vec<(Metric, Vec<CellResult>)> {
    let metrics = job_metrics(b, also);
    let pairs = baseline::like_pairs(a, b);
    let cells = analyse(b, Some(a), &pairs, &metrics, false);
    metrics.into_iter().zip(cells).collect()
}

fn pick(all: Vec<(Metric, Vec<CellResult>)>, metric: &Metric) -> Vec<CellResult> {
    all.into_iter()
        .find(|(m, _)| m.name() == metric.name())
        .map(|(_, cells)| cells)
        .unwrap_or_default()
}

/// Every cell of a job with its statistics of `metric`; each non-baseline cell is compared
/// with its baseline cell: the one the plan names (`baseline_cell_index`), or, for catalogs
/// whose cells name none, the cell flagged baseline (baseline page sizes and source) that has
/// the same clients and other dimensions.
pub fn cell_results(export: &JobExport, metric: &Metric) -> Vec<CellResult> {
    pick(job_results(export, Some(metric)), metric)
}

/// Each cell of job B compared with A's like cell (A is the baseline, B the treatment).
pub fn compare(a: &JobExport, b: &JobExport, metric: &Metric) -> Vec<CellResult> {
    pick(compare_results(a, b, Some(metric)), metric)
}

#[cfg(test)]
mod tests;
