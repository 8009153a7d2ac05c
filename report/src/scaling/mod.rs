//! Client-count ladders: a job whose matrix has several `clients` values, read as DBT-2's
//! connection-scaling runs and HammerDB's autopilot are read. Cells that differ only in their
//! client count form a ladder (one per page size and other dimensions); each step between
//! neighbouring rungs gets the 95% CI of the change of the mean as a ratio on the log scale
//! (Welch's test with the delta method, [`stats::delta`]: the rungs' runs are of different
//! cells, so the CI of the change cannot pass -100%).
//!
//! The rule: step k→k+1 **gains** when the lower bound of the 95% CI of
//! `ln(mean(k+1) / mean(k))` is above 0 (both rungs need 2 runs or more). The **knee** is the
//! client count at the top of the last step that gained; when no step gained it is the first
//! rung. Only throughput-like metrics (higher is better) make ladders.

use blocklab_measure::job::CellResult;

use crate::stats::{self, Summary};

/// One rung: a cell's statistics at one client count.
#[derive(Debug, Clone, PartialEq)]
pub struct Rung {
    pub clients: u32,
    pub label: String,
    pub n: u32,
    pub mean: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// From one rung to the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub from: u32,
    pub to: u32,
    /// mean(to) - mean(from).
    pub diff: f64,
    /// 95% CI of the difference, `mean(from)` times the ratio's CI less one; `None` when a
    /// rung has fewer than 2 runs.
    pub diff_ci95: Option<(f64, f64)>,
    /// The change in percent of mean(from) (the ratio of the means), and its CI.
    pub pct: Option<f64>,
    pub pct_ci95: Option<(f64, f64)>,
    pub gained: bool,
}

/// Cells that differ only in their client count, in rising client order.
#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    /// The cells' label without the client token (`bs=8K wal=8K`).
    pub series: String,
    pub block_size_kb: u32,
    pub metric: String,
    pub rungs: Vec<Rung>,
    pub steps: Vec<Step>,
    /// The client count at the top of the last gaining step (the first rung if none gained).
    pub knee: u32,
}

impl Ladder {
    /// The step that ends at the knee (`None` when no step gained).
    pub fn knee_step(&self) -> Option<&Step> {
        self.steps.iter().rev().find(|s| s.gained)
    }

    /// One line: `bs=8K wal=8K: knee at 4 clients (2→4: +84.2% [+80.1%, +88.3%]; ...)`.
    pub fn sentence(&self) -> String {
        let why = match self.knee_step() {
            Some(s) => format!(
                "the last step whose 95% CI of the change is above 0: {}→{} clients {}",
                s.from,
                s.to,
                step_change(s)
            ),
            None => "no step from it gained beyond its 95% CI".to_string(),
        };
        format!(
            "{}: {} knee at {} clients ({why})",
            self.series, self.metric, self.knee
        )
    }
}

/// `+12.3% [+5.1%, +19.0%]`, or the difference alone without a CI.
pub fn step_change(s: &Step) -> String {
    match (s.pct, s.pct_ci95) {
        (Some(p), Some((lo, hi))) => format!(
            "{} [{}, {}]",
            crate::format::pct(p),
            crate::format::pct(lo),
            crate::format::pct(hi)
        ),
        (Some(p), None) => format!("{} (no CI)", crate::format::pct(p)),
        _ => format!("{:+.1}", s.diff),
    }
}

/// The label without its `c=` token.
fn series_of(label: &str) -> String {
    let s: Vec<&str> = label
        .split_whitespace()
        .filter(|t| !t.starts_with("c="))
        .collect();
    if s.is_empty() {
        "all".into()
    } else {
        s.join(" ")
    }
}

fn summary(c: &CellResult) -> Summary {
    Summary {
        n: c.n as usize,
        mean: c.mean,
        stddev: c.stddev,
        cv: None,
        ci95: (c.n >= 2).then_some((c.ci95_low, c.ci95_high)),
    }
}

/// A step between two rungs under the rule above.
pub fn step(from: &CellResult, to: &CellResult) -> Step {
    let change = stats::delta(&summary(from), &summary(to));
    let pct_ci95 = change.and_then(|c| c.pct_ci95());
    Step {
        from: from.clients,
        to: to.clients,
        diff: to.mean - from.mean,
        diff_ci95: pct_ci95.map(|(lo, hi)| (from.mean * lo / 100.0, from.mean * hi / 100.0)),
        pct: change.and_then(|c| c.pct()).or_else(|| {
            (from.mean != 0.0 && from.n > 0 && to.n > 0)
                .then(|| 100.0 * (to.mean - from.mean) / from.mean)
        }),
        pct_ci95,
        // With zero variance on both rungs the CI is the point change.
        gained: change.is_some_and(|c| c.log_ci95.0 > 0.0),
    }
}

/// The knee of a ladder's steps: the top of the last gaining step, else `first`.
pub fn knee(first: u32, steps: &[Step]) -> u32 {
    steps
        .iter()
        .rev()
        .find(|s| s.gained)
        .map_or(first, |s| s.to)
}

/// Every ladder among a metric's cells (several client counts, same other dimensions), in the
/// order their first cell appears; empty for lower-is-better metrics.
pub fn ladders(cells: &[CellResult]) -> Vec<Ladder> {
    let mut groups: Vec<(String, Vec<&CellResult>)> = Vec::new();
    for c in cells
        .iter()
        .filter(|c| c.higher_is_better && c.n > 0 && c.clients > 0)
    {
        let key = series_of(&c.label);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(c),
            None => groups.push((key, vec![c])),
        }
    }
    let mut out = Vec::new();
    for (series, mut group) in groups {
        group.sort_by_key(|c| c.clients);
        group.dedup_by_key(|c| c.clients);
        if group.len() < 2 {
            continue;
        }
        let steps: Vec<Step> = group.windows(2).map(|w| step(w[0], w[1])).collect();
        out.push(Ladder {
            knee: knee(group[0].clients, &steps),
            block_size_kb: group[0].block_size_kb,
            metric: group[0].metric.clone(),
            rungs: group
                .iter()
                .map(|c| Rung {
                    clients: c.clients,
                    label: c.label.clone(),
                    n: c.n,
                    mean: c.mean,
                    ci95_low: c.ci95_low,
                    ci95_high: c.ci95_high,
                })
                .collect(),
            steps,
            series,
        });
    }
    out
}

#[cfg(test)]
mod tests;
