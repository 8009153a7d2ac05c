//! The result of a multi-user mix in the pgbench engine's form, plus its query class and
//! tuples per second, and the cross-section tests timed inside it.

use super::cross::{CrossOutcome, Timed};
use super::mix::Mix;
use crate::engine::stats::{ClientStats, new_histogram, serialize_histogram};
use crate::engine::window::{self, WindowFacts};
use blocklab_measure::{LoadResult, Metric, TxnType};

/// The prefix of a cross-section test's query class (`xs.mu_sel_100_seq`).
pub const CROSS_PREFIX: &str = "xs.";

/// A cross-section statement as a query class of its own: one execution, its rows.
fn cross_class(t: &Timed) -> TxnType {
    let mut histogram = new_histogram();
    let us = (t.seconds * 1e6).round().max(1.0) as u64;
    // record() grows the histogram to the value; saturating_record() alone would clamp it.
    if histogram.record(us).is_err() {
        histogram.saturating_record(us);
    }
    TxnType {
        name: format!("{CROSS_PREFIX}{}", t.name),
        count: 1,
        rollbacks: 0,
        failures: 0,
        latency_histogram: serialize_histogram(&histogram),
        rows: t.rows,
    }
}

/// A mix's window as a result: the common figures, its query class with the tuples, and
/// tuples per second; with the cross section (on the worker that ran it), one query class
/// and one metric in seconds per statement and the sum of the timed tests.
pub fn result(
    total: &ClientStats,
    tuples: u64,
    mix: Mix,
    facts: &WindowFacts,
    tup_per_s: f64,
    cross: Option<&CrossOutcome>,
) -> LoadResult {
    let summary = window::summary(total, facts);
    let mut metrics = vec![Metric {
        name: format!("{}.tup_per_s", mix.class()),
        value: tup_per_s,
        unit: "tup/s".into(),
        higher_is_better: true,
    }];
    let mut txn_types = vec![TxnType {
        name: mix.class().into(),
        count: total.transactions,
        rollbacks: 0,
        failures: total.failures,
        latency_histogram: summary.latency_histogram.clone(),
        rows: tuples,
    }];
    if let Some(x) = cross {
        for t in x.tests.iter().chain(&x.checks) {
            metrics.push(Metric::seconds(
                format!("{}.{CROSS_PREFIX}{}", mix.class(), t.name),
                t.seconds,
            ));
            txn_types.push(cross_class(t));
        }
        metrics.push(Metric::seconds(
            format!("{}.cross_section_s", mix.class()),
            x.total_s(),
        ));
    }
    LoadResult {
        metrics,
        txn_types,
        ..summary
    }
}
