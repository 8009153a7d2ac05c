//! The result of a multi-user mix in the pgbench engine's form, plus its query class and
//! tuples per second; the live progress while it measures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use blocklab_proto::fleet::ProgressSink;
use blocklab_proto::{PerSecondSample, RunLoadResult, RunLoadTask, TxnTypeStats, WorkloadMetric};

use super::multi::Mix;
use crate::cpu::CpuTimes;
use crate::stats::{self, ClientStats};

#[allow(clippy::too_many_arguments)]
pub fn result(
    t: &RunLoadTask,
    total: &ClientStats,
    tuples: u64,
    mix: Mix,
    measured_s: f64,
    connection_elapsed: Duration,
    conn_total: Duration,
    cpu: CpuTimes,
    random_seed: u64,
    tup_per_s: f64,
) -> RunLoadResult {
    let h = &total.histogram;
    let (avg, stddev) = total.latency_avg_stddev_ms();
    let histogram = stats::serialize_histogram(h);
    RunLoadResult {
        transactions: total.transactions,
        failures: total.failures,
        tps_including_connections: stats::tps_including_connections(
            total.transactions,
            measured_s,
            conn_total.as_secs_f64(),
            t.clients,
        ),
        tps_excluding_connections: stats::tps_excluding_connections(total.transactions, measured_s),
        latency_avg_ms: avg,
        latency_stddev_ms: stddev,
        latency_p50_ms: stats::quantile_ms(h, 0.5),
        latency_p90_ms: stats::quantile_ms(h, 0.9),
        latency_p99_ms: stats::quantile_ms(h, 0.99),
        latency_p999_ms: stats::quantile_ms(h, 0.999),
        latency_max_ms: if h.is_empty() {
            0.0
        } else {
            h.max() as f64 / 1000.0
        },
        connection_time_ms: connection_elapsed.as_secs_f64() * 1e3,
        measured_seconds: measured_s,
        client_cpu_user_s: cpu.user_s,
        client_cpu_system_s: cpu.system_s,
        samples: total
            .samples()
            .iter()
            .map(|s| PerSecondSample {
                second: s.second,
                transactions: s.transactions,
                latency_avg_ms: s.latency_avg_ms,
                failures: s.failures,
            })
            .collect(),
        latency_histogram: histogram.clone(),
        random_seed,
        clients: t.clients,
        metrics: vec![WorkloadMetric {
            name: format!("{}.tup_per_s", mix.class()),
            value: tup_per_s,
            unit: "tup/s".into(),
            higher_is_better: true,
        }],
        txn_types: vec![TxnTypeStats {
            name: mix.class().into(),
            count: total.transactions,
            rollbacks: 0,
            failures: total.failures,
            latency_histogram: histogram,
            rows: tuples,
        }],
        ..Default::default()
    }
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
        sink.stage("measuring", &format!("live_tps={tps:.1}")).await;
    }
}
