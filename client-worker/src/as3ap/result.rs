//! The result of a multi-user mix in the pgbench engine's form, plus its query class and
//! tuples per second.

use super::mix::Mix;
use crate::engine::stats::ClientStats;
use crate::engine::window::{Metric, TxnTypeOutcome, WindowFacts, WindowOutcome, WindowSummary};

/// A mix's window as a result: the common figures, its query class with the tuples, and
/// tuples per second.
pub fn result(
    total: &ClientStats,
    tuples: u64,
    mix: Mix,
    facts: &WindowFacts,
    tup_per_s: f64,
) -> WindowOutcome {
    let summary = WindowSummary::new(total, facts);
    let metrics = vec![Metric {
        name: format!("{}.tup_per_s", mix.class()),
        value: tup_per_s,
        unit: "tup/s".into(),
        higher_is_better: true,
    }];
    let txn_types = vec![TxnTypeOutcome {
        name: mix.class().into(),
        count: total.transactions,
        rollbacks: 0,
        failures: total.failures,
        histogram: summary.histogram.clone(),
        rows: tuples,
    }];
    WindowOutcome {
        summary,
        metrics,
        txn_types,
    }
}
