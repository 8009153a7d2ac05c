//! The measured window and the steps of the workload kinds other than pgbench's scripts
//! (TPC-C-like, AS3AP-like), in the worker's own terms: what a window or a step is asked to
//! do, and what it reports (a blocklab-measure `LoadResult`). `serve` converts them from and
//! to the wire types.

use std::time::Duration;

use blocklab_script::Protocol;

use crate::cpu::CpuTimes;
use crate::engine::stats::{
    ClientStats, quantile_ms, serialize_histogram, tps_excluding_connections,
    tps_including_connections,
};
use blocklab_measure::{LoadResult, Metric};

/// A measured window of a workload kind: how many clients, how long, against what.
#[derive(Clone, Debug)]
pub struct WindowParams {
    /// libpq-style `key=value` connection string; None when the task carries none.
    pub conninfo: Option<String>,
    pub clients: u32,
    pub duration: Duration,
    pub warmup: Duration,
    /// None: from the clock.
    pub random_seed: Option<u64>,
    /// First client id of this worker's share.
    pub client_id_offset: u32,
    pub protocol: Protocol,
    /// The load threads the clients are split over, each running its share on its own
    /// executor; 0: as many as the machine has cores. At most one a client.
    pub threads: u32,
}

/// This worker's share of a step outside the window: part `part` (0-based) of `parts`.
#[derive(Clone, Debug)]
pub struct StepParams {
    pub conninfo: Option<String>,
    pub part: u32,
    /// 0 means 1.
    pub parts: u32,
}

/// What a measured window of any workload kind reports beyond its clients' statistics.
#[derive(Clone, Copy, Debug)]
pub struct WindowFacts {
    pub measured_s: f64,
    /// Wall time until every client was connected.
    pub connection_elapsed: Duration,
    /// Connection time summed over the clients.
    pub connection_total: Duration,
    pub cpu: CpuTimes,
    pub clients: u32,
    pub random_seed: u64,
}

/// The pgbench-engine figures of a window: throughput, latency percentiles from the
/// histogram, per-second samples. The kind adds its metrics and transaction types.
pub fn summary(total: &ClientStats, w: &WindowFacts) -> LoadResult {
    let h = &total.histogram;
    let (avg, stddev) = total.latency_avg_stddev_ms();
    LoadResult {
        transactions: total.transactions,
        failures: total.failures,
        tps_including_connections: tps_including_connections(
            total.transactions,
            w.measured_s,
            w.connection_total.as_secs_f64(),
            w.clients,
        ),
        tps_excluding_connections: tps_excluding_connections(total.transactions, w.measured_s),
        latency_avg_ms: avg,
        latency_stddev_ms: stddev,
        latency_p50_ms: quantile_ms(h, 0.5),
        latency_p90_ms: quantile_ms(h, 0.9),
        latency_p99_ms: quantile_ms(h, 0.99),
        latency_p999_ms: quantile_ms(h, 0.999),
        latency_max_ms: if h.is_empty() {
            0.0
        } else {
            h.max() as f64 / 1000.0
        },
        connection_time_ms: w.connection_elapsed.as_secs_f64() * 1e3,
        measured_seconds: w.measured_s,
        client_cpu_user_s: w.cpu.user_s,
        client_cpu_system_s: w.cpu.system_s,
        samples: total.samples(),
        latency_histogram: serialize_histogram(h),
        random_seed: w.random_seed,
        clients: w.clients,
        ..LoadResult::default()
    }
}

/// What a step did: its seconds, metrics, and one note per thing done or checked.
#[derive(Clone, Debug, Default)]
pub struct StepOutcome {
    pub seconds: f64,
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
}
