//! The compact tables of `results` and `compare`, fitted to a width (a terminal's, or
//! [`PIPE_WIDTH`](super::fit::PIPE_WIDTH) when piped); `--wide` gives the full ones instead.
//!
//! The cell table shows the cell, n/runs, the mean, its 95% CI, the change against the
//! baseline with its 95% CI, the verdict and the MDE. When that is wider than the width, the
//! least important columns go, in this order ([`LEFT_OUT_ORDER`]): the 95% CI of the mean, the
//! MDE, n/runs, the change's interval (the change itself stays), the mean. The cell and its
//! verdict are never cut; nothing wraps inside the table.
//!
//! The per-metric table shows, per metric and cell, the mean, the % change and the verdict
//! unless it is inconclusive; cells that do not fit beside the metric go to a further table
//! below, with the metric repeated, and the unit column goes first when even one cell does
//! not fit.

use blocklab_measure::job::*;

use super::fit::{Column, plain_table, table_width, wrap};
use super::table::{change, or_dash};
use crate::format::{cell_metric, num, pct};
use crate::stats::{DESCRIPTIVE_UNITS, Metric};

/// The columns of the cell table the width leaves out, first to last.
pub const LEFT_OUT_ORDER: [&str; 5] = ["95% CI", "MDE", "n/runs", "the change's interval", "mean"];

/// The change with its interval, as one column.
fn change_with_interval(c: &CellResult) -> String {
    match (
        c.is_baseline,
        c.pct_change_vs_baseline,
        c.pct_change_ci95_low,
        c.pct_change_ci95_high,
    ) {
        (false, Some(p), Some(low), Some(high)) => {
            format!("{} [{}, {}]", pct(p), pct(low), pct(high))
        }
        _ => change(c, c.pct_change_vs_baseline),
    }
}

/// The compact cell table at `width`, and the columns it left out (in [`LEFT_OUT_ORDER`]'s
/// words).
pub(super) fn cell_table(
    cells: &[CellResult],
    metric: &Metric,
    compare: bool,
    width: usize,
) -> (String, Vec<&'static str>) {
    let col = |f: &dyn Fn(&CellResult) -> String| cells.iter().map(f).collect::<Vec<_>>();
    let versus = if compare { "vs A" } else { "vs baseline" };
    let label = Column::left(
        if compare { "cell (B)" } else { "cell" },
        col(&|c| c.label.clone()),
    );
    let n = Column::right("n/runs", col(&|c| format!("{}/{}", c.n, c.runs_total)));
    let mean = Column::right(
        format!("{metric} mean"),
        col(&|c| or_dash((c.n > 0).then(|| num(metric, c.mean)))),
    );
    let ci = Column::left(
        "95% CI",
        col(&|c| {
            or_dash((c.n > 1).then(|| {
                format!(
                    "[{}, {}]",
                    num(metric, c.ci95_low),
                    num(metric, c.ci95_high)
                )
            }))
        }),
    );
    let change_ci = Column::left(format!("{versus} (95% CI)"), col(&change_with_interval));
    let change_only = Column::left(versus, col(&|c| change(c, c.pct_change_vs_baseline)));
    let verdict = Column::left(
        "verdict",
        col(&|c| {
            if c.verdict.is_empty() {
                "-".into()
            } else {
                c.verdict.clone()
            }
        }),
    );
    let mde = Column::right(
        "MDE",
        col(&|c| or_dash(c.mde_pct.map(|m| format!("{m:.2}%")))),
    );
    // From the widest layout to the narrowest: each leaves out one more of LEFT_OUT_ORDER.
    let layouts: [Vec<&Column>; 6] = [
        vec![&label, &n, &mean, &ci, &change_ci, &verdict, &mde],
        vec![&label, &n, &mean, &change_ci, &verdict, &mde],
        vec![&label, &n, &mean, &change_ci, &verdict],
        vec![&label, &mean, &change_ci, &verdict],
        vec![&label, &mean, &change_only, &verdict],
        vec![&label, &change_only, &verdict],
    ];
    let chosen = layouts
        .iter()
        .position(|l| table_width(l) <= width)
        .unwrap_or(layouts.len() - 1);
    (
        plain_table(&layouts[chosen]),
        LEFT_OUT_ORDER[..chosen].to_vec(),
    )
}

/// What the compact cell table does not show, under the notes: each cell's repetitions
/// status, the columns the width left out and what `--wide` adds.
pub(super) fn cell_notes(cells: &[CellResult], compare: bool, left_out: &[&str]) -> String {
    let mut out = String::new();
    if cells.iter().any(|c| !c.target_status.is_empty()) {
        out.push_str("repetitions per cell:\n");
        for c in cells.iter().filter(|c| !c.target_status.is_empty()) {
            out.push_str(&format!("  {}: {}\n", c.label, c.target_status));
        }
    }
    if !left_out.is_empty() {
        out.push_str(&format!(
            "left out at this width: {}\n",
            left_out.join(", ")
        ));
    }
    let mut more = vec![
        "block sizes",
        "stddev",
        "CV",
        "model",
        "p-value",
        "q-value",
        "TOST q",
        "rounds to equivalence",
    ];
    if compare {
        more.insert(0, "like cell (A) and its mean");
    } else {
        more.push("compared on");
    }
    more.push("suspect runs");
    if cells.iter().any(|c| c.all_runs.is_some()) {
        more.push("the 'all runs' columns");
    }
    out.push_str(&format!("--wide adds: {}\n", more.join(", ")));
    out
}

/// One entry of the compact per-metric table: the mean (with its n when not the usual one),
/// then for a compared cell the % change and the verdict unless inconclusive (counts,
/// shares, sizes and costs: the change alone).
fn entry(m: &MetricResults, c: &CellResult, n_usual: u32) -> String {
    if c.n == 0 {
        return "-".into();
    }
    let mut s = num(&cell_metric(c), c.mean);
    if c.n != n_usual {
        s.push_str(&format!(" (n={})", c.n));
    }
    if c.is_baseline {
        return s;
    }
    if let Some(p) = c.pct_change_vs_baseline {
        s.push_str(&format!(" {}", pct(p)));
    }
    let descriptive = DESCRIPTIVE_UNITS.contains(&m.unit.as_str());
    match c.verdict.as_str() {
        "inconclusive" | "" => {}
        v if !descriptive || c.zero_variance => s.push_str(&format!(" {v}")),
        _ => {}
    }
    s
}

/// The compact per-metric table at `width` under `title`, or empty when there is none.
pub(super) fn metric_table(by_metric: &[MetricResults], title: &str, width: usize) -> String {
    let Some(first) = by_metric.first() else {
        return String::new();
    };
    let n_usual = first.cells.iter().map(|c| c.n).max().unwrap_or(0);
    let name = Column::left("metric", by_metric.iter().map(|m| m.name.clone()).collect());
    let unit = Column::left(
        "unit",
        by_metric
            .iter()
            .map(|m| {
                if DESCRIPTIVE_UNITS.contains(&m.unit.as_str()) {
                    m.unit.clone()
                } else if m.higher_is_better {
                    format!("{} ↑", m.unit)
                } else {
                    format!("{} ↓", m.unit)
                }
            })
            .collect(),
    );
    let cells: Vec<Column> = first
        .cells
        .iter()
        .map(|want| {
            let header = if want.is_baseline {
                format!("{} (baseline)", want.label)
            } else {
                want.label.clone()
            };
            let entries = by_metric
                .iter()
                .map(|m| {
                    m.cells
                        .iter()
                        .find(|c| c.cell_index == want.cell_index)
                        .map_or_else(|| "-".into(), |c| entry(m, c, n_usual))
                })
                .collect();
            Column::left(header, entries)
        })
        .collect();
    let first_fits = |keys: &[&Column]| {
        let mut l = keys.to_vec();
        l.extend(cells.first());
        table_width(&l) <= width
    };
    let keys: Vec<&Column> = if first_fits(&[&name, &unit]) {
        vec![&name, &unit]
    } else {
        vec![&name]
    };
    // Groups of cell columns, each as many as fit beside the keys (at least one).
    let mut tables = Vec::new();
    let mut group: Vec<&Column> = keys.clone();
    for c in &cells {
        let mut wider = group.clone();
        wider.push(c);
        if group.len() > keys.len() && table_width(&wider) > width {
            tables.push(plain_table(&group));
            group = keys.clone();
            group.push(c);
        } else {
            group = wider;
        }
    }
    tables.push(plain_table(&group));
    let head = format!(
        "{title}; each entry: mean, % change and the verdict unless inconclusive (↑ higher \
         is better, ↓ lower; --wide adds the p- and q-values, and the CI of the change for \
         counts, shares and sizes)\n"
    );
    format!("\n{}{}", wrap(&head, width), tables.join("\n"))
}

#[cfg(test)]
mod tests;
