//! The human table of `results` and `compare` (also the HTML report's): one row per cell.

use blocklab_measure::job::*;

use crate::format::{cell_metric, num, p_value, pct, size};
use crate::stats::Metric;

pub(super) fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

pub(super) fn change(c: &CellResult, s_pct: Option<f64>) -> String {
    match (c.is_baseline, s_pct) {
        (true, _) => "(baseline)".into(),
        (false, Some(p)) => pct(p),
        (false, None) => "-".into(),
    }
}

/// The more rounds an inconclusive comparison would need to show equivalence.
fn more_rounds(c: &CellResult) -> String {
    match (c.extra_rounds, c.extra_rounds_cannot) {
        (Some(k), _) => format!("+{k}"),
        (None, true) => "cannot".into(),
        (None, false) => "-".into(),
    }
}

fn interval(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(l), Some(h)) => format!("[{}, {}]", pct(l), pct(h)),
        _ => "-".into(),
    }
}

/// Which optional columns a table has.
#[derive(Debug, Clone, Copy)]
pub(super) struct Columns {
    pub compare: bool,
    /// The job sets a target CI half-width (adaptive repetitions).
    pub target: bool,
    /// The job excludes suspect runs: the all-runs statistics go beside.
    pub all_runs: bool,
}

impl Columns {
    pub fn of(cells: &[CellResult], compare: bool) -> Columns {
        Columns {
            compare,
            target: cells.iter().any(|c| !c.target_status.is_empty()),
            all_runs: cells.iter().any(|c| c.all_runs.is_some()),
        }
    }
}

/// The human cells of one row.
fn human_row(c: &CellResult, metric: &Metric, k: Columns) -> Vec<String> {
    let measured = c.n > 0;
    let spread = c.n > 1;
    let mut row = vec![c.label.clone()];
    if k.compare {
        row.push(if c.baseline_label.is_empty() {
            "-".into()
        } else {
            c.baseline_label.clone()
        });
        row.push(or_dash(c.baseline_mean.map(|m| num(metric, m))));
    }
    row.extend([
        size(c.proven_block_size),
        size(c.proven_wal_block_size),
        c.clients.to_string(),
        format!("{}/{}", c.n, c.runs_total),
        or_dash(measured.then(|| num(metric, c.mean))),
        or_dash(spread.then(|| num(metric, c.stddev))),
        or_dash(spread.then(|| format!("{:.1}%", c.cv * 100.0))),
        or_dash(spread.then(|| {
            format!(
                "[{}, {}]",
                num(metric, c.ci95_low),
                num(metric, c.ci95_high)
            )
        })),
        or_dash(c.ci95_half_width_pct.map(|h| format!("±{h:.1}%"))),
    ]);
    if k.target {
        row.push(if c.target_status.is_empty() {
            "-".into()
        } else {
            c.target_status.clone()
        });
    }
    row.extend([
        change(c, c.pct_change_vs_baseline),
        interval(c.pct_change_ci95_low, c.pct_change_ci95_high),
        if c.model.is_empty() {
            "-".into()
        } else {
            c.model.clone()
        },
        or_dash(c.mde_pct.map(|m| format!("{m:.2}%"))),
        or_dash(c.p_value.map(p_value)),
        or_dash(c.q_value.map(p_value)),
        or_dash(c.tost_q_value.map(p_value)),
        c.verdict.clone(),
        more_rounds(c),
    ]);
    if !k.compare {
        row.push(if c.compared_on.is_empty() {
            "-".into()
        } else {
            c.compared_on.clone()
        });
    }
    row.push(
        match (c.runs_suspect, c.runs_excluded, c.suspect_included) {
            (0, _, _) => "0".into(),
            (n, _, true) => format!("{n} (included)"),
            (n, 0, false) => n.to_string(),
            (n, _, false) => format!("{n} (excluded)"),
        },
    );
    if k.all_runs {
        let a = c.all_runs.clone().unwrap_or_default();
        row.extend([
            format!("{}/{}", a.n, c.runs_total),
            change(c, a.pct_change_vs_baseline),
            or_dash(a.q_value.map(p_value)),
            if a.verdict.is_empty() {
                "-".into()
            } else {
                a.verdict
            },
        ]);
    }
    row
}

fn header(metric: &Metric, band: Option<f64>, k: Columns) -> Vec<String> {
    let mut h = vec![if k.compare { "cell (B)" } else { "cell" }.to_string()];
    if k.compare {
        h.push("like cell (A)".into());
        h.push(format!("{metric} mean (A)"));
    }
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    h.extend(s(&["block_size", "wal_block_size", "clients", "n/runs"]));
    h.push(format!("{metric} mean"));
    h.extend(s(&["stddev", "CV", "95% CI", "CI ±% of mean"]));
    if k.target {
        h.push("repetitions".into());
    }
    h.extend(s(&[
        if k.compare {
            "% change vs A"
        } else {
            "% change vs baseline"
        },
        "95% CI of change",
        "model",
        "MDE (80%)",
        "p-value",
        "q-value",
    ]));
    h.push(match band {
        Some(b) => format!("TOST q (±{b:.1}%)"),
        None => "TOST q".into(),
    });
    h.push("verdict".into());
    h.push("rounds to equivalence".into());
    if !k.compare {
        h.push("compared on".into());
    }
    h.push("suspect".into());
    if k.all_runs {
        h.extend(s(&[
            "all runs: n/runs",
            "all runs: % change",
            "all runs: q-value",
            "all runs: verdict",
        ]));
    }
    h
}

/// The equivalence band of a set of cells (the job's), when it is known.
pub(super) fn band(cells: &[CellResult]) -> Option<f64> {
    cells.iter().map(|c| c.equivalence_pct).find(|b| *b > 0.0)
}

/// The human table of `results` (or `compare`): header and rows, as the HTML report shows it.
pub fn table_rows(cells: &[CellResult], compare: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let metric = metric_of(cells);
    let k = Columns::of(cells, compare);
    let rows = cells.iter().map(|c| human_row(c, &metric, k)).collect();
    (header(&metric, band(cells), k), rows)
}

/// The metric of a set of cells (tps when there are none).
pub(super) fn metric_of(cells: &[CellResult]) -> Metric {
    cells.first().map_or(Metric::Tps, cell_metric)
}
