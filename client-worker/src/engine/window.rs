//! The measured window and the steps of the workload kinds other than pgbench's scripts
//! (TPC-C-like, AS3AP-like), in the worker's own terms: what a window or a step is asked to
//! do, and what it reports. `serve` converts them from and to the wire types.

use std::time::Duration;

use blocklab_script::Protocol;
use hdrhistogram::Histogram;

use crate::cpu::CpuTimes;
use crate::engine::stats::{
    ClientStats, Sample, quantile_ms, tps_excluding_connections, tps_including_connections,
};

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
}

/// This worker's share of a step outside the window: part `part` (0-based) of `parts`.
#[derive(Clone, Debug)]
pub struct StepParams {
    pub conninfo: Option<String>,
    pub part: u32,
    /// 0 means 1.
    pub parts: u32,
}

/// A measurement beyond the pgbench columns (NOTPM, tup/s, seconds of a step).
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
}

impl Metric {
    /// A duration in seconds (lower is better).
    pub fn seconds(name: impl Into<String>, value: f64) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: "s".into(),
            higher_is_better: false,
        }
    }
}

/// One transaction type (TPC-C-like) or query class (AS3AP-like) of a window.
#[derive(Clone, Debug)]
pub struct TxnTypeOutcome {
    pub name: String,
    /// Completed: committed plus intended rollbacks.
    pub count: u64,
    pub rollbacks: u64,
    pub failures: u64,
    /// Response times, microseconds.
    pub histogram: Histogram<u64>,
    /// Tuples returned or changed.
    pub rows: u64,
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
/// histogram, per-second samples.
#[derive(Clone, Debug)]
pub struct WindowSummary {
    pub transactions: u64,
    pub failures: u64,
    pub tps_including_connections: f64,
    pub tps_excluding_connections: f64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: f64,
    pub latency_p50_ms: f64,
    pub latency_p90_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_p999_ms: f64,
    pub latency_max_ms: f64,
    pub connection_time_ms: f64,
    pub measured_seconds: f64,
    pub cpu: CpuTimes,
    pub samples: Vec<Sample>,
    /// Latency of successful transactions, microseconds.
    pub histogram: Histogram<u64>,
    pub random_seed: u64,
    pub clients: u32,
}

impl WindowSummary {
    pub fn new(total: &ClientStats, w: &WindowFacts) -> WindowSummary {
        let h = &total.histogram;
        let (avg, stddev) = total.latency_avg_stddev_ms();
        WindowSummary {
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
            cpu: w.cpu,
            samples: total.samples(),
            histogram: h.clone(),
            random_seed: w.random_seed,
            clients: w.clients,
        }
    }
}

/// A window of a workload kind: the common figures, the kind's metrics and its
/// transaction types or query classes.
#[derive(Clone, Debug)]
pub struct WindowOutcome {
    pub summary: WindowSummary,
    pub metrics: Vec<Metric>,
    pub txn_types: Vec<TxnTypeOutcome>,
}

impl WindowOutcome {
    /// The value of the first metric in `unit` (0 when there is none).
    pub fn metric(&self, unit: &str) -> f64 {
        self.metrics
            .iter()
            .find(|m| m.unit == unit)
            .map_or(0.0, |m| m.value)
    }
}

/// What a step did: its seconds, metrics, and one note per thing done or checked.
#[derive(Clone, Debug, Default)]
pub struct StepOutcome {
    pub seconds: f64,
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
}
