//! How numbers and metrics read: shared by the text renderings, the charts and the report.

use blocklab_measure::job::CellResult;

use crate::stats::Metric;

/// The metric a cell's statistics are about.
pub fn cell_metric(c: &CellResult) -> Metric {
    Metric::parse(&c.metric).unwrap_or_else(|_| Metric::Workload {
        name: c.metric.clone(),
        unit: c.unit.clone(),
        higher_is_better: c.higher_is_better,
    })
}

/// The first columns of every runs table (`blocklab job`, the HTML report): which run it is
/// and where it is.
pub const RUN_KEY_COLUMNS: [&str; 6] = ["#", "cell", "rep", "attempt", "state", "stage"];

/// A page size in bytes for a table: `-` when unknown (0).
pub fn size(bytes: u32) -> String {
    if bytes == 0 {
        "-".into()
    } else {
        bytes.to_string()
    }
}

/// A value of `metric` for people: tps with one decimal, latencies in ms with three,
/// seconds with four, counts whole.
pub fn num(metric: &Metric, v: f64) -> String {
    let d = metric.decimals();
    format!("{v:.d$}")
}

pub fn pct(v: f64) -> String {
    format!("{v:+.1}%")
}

pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}
