//! The result of a multi-user mix in the pgbench engine's form, plus its query class and
//! tuples per second.

use blocklab_proto::{RunLoadResult, TxnTypeStats, WorkloadMetric};

use super::multi::Mix;
use crate::engine::stats::{self, ClientStats, WindowFacts};

/// A mix's window as a result: the common figures, its query class with the tuples, and
/// tuples per second.
pub fn result(
    total: &ClientStats,
    tuples: u64,
    mix: Mix,
    facts: &WindowFacts,
    tup_per_s: f64,
) -> RunLoadResult {
    let mut r = stats::window_result(total, facts);
    r.metrics = vec![WorkloadMetric {
        name: format!("{}.tup_per_s", mix.class()),
        value: tup_per_s,
        unit: "tup/s".into(),
        higher_is_better: true,
    }];
    r.txn_types = vec![TxnTypeStats {
        name: mix.class().into(),
        count: total.transactions,
        rollbacks: 0,
        failures: total.failures,
        latency_histogram: r.latency_histogram.clone(),
        rows: tuples,
    }];
    r
}
