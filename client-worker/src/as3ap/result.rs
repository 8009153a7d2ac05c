//! The result of a multi-user mix in the pgbench engine's form, plus its query class and
//! tuples per second; the live progress while it measures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{RunLoadResult, TxnTypeStats, WorkloadMetric};

use super::multi::Mix;
use crate::stats::{self, ClientStats, WindowFacts};

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

/// Every second, the queries of the last second as `live_tps=N`.
pub async fn report_live(live: Arc<AtomicU64>, sink: ProgressSink) {
    let mut last = live.load(Ordering::Relaxed);
    let mut at = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = live.load(Ordering::Relaxed);
        let secs = at.elapsed().as_secs_f64();
        at = Instant::now();
        let tps = now.wrapping_sub(last) as f64 / secs.max(1e-3);
        last = now;
        sink.live(tps).await;
    }
}
