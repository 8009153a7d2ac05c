//! What a load run measured, in plain domain terms: one worker's share of a measured window
//! or the merge of all of them, its per-second samples, its transaction types (or query
//! classes), its statements and the workload metrics a kind computes. The worker fills it,
//! the wire contract (blocklab-proto) converts it, the coordinator merges and stores it. [`job`] holds a job's results: its export and statistics.

use serde::Serialize;

pub mod job;

/// A load's result over its measured window: one worker's share, or all of them merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadResult {
    pub transactions: u64,
    pub failures: u64,
    pub retries: u64,
    pub skipped: u64,
    pub late: u64,
    pub tps_including_connections: f64,
    pub tps_excluding_connections: f64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: f64,
    pub latency_p50_ms: f64,
    pub latency_p90_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_p999_ms: f64,
    pub latency_max_ms: f64,
    /// Wall time to connect all clients (pgbench's "initial connection time").
    pub connection_time_ms: f64,
    pub measured_seconds: f64,
    pub client_cpu_user_s: f64,
    pub client_cpu_system_s: f64,
    pub schedule_lag_avg_ms: f64,
    pub schedule_lag_max_ms: f64,
    pub samples: Vec<Sample>,
    /// Serialized HDR histogram (V2 deflate) of latencies in microseconds.
    pub latency_histogram: Vec<u8>,
    pub random_seed: u64,
    pub clients: u32,
    /// Measurements of the workload kind beyond the pgbench columns (NOTPM, tup/s, ...), as
    /// a worker computed them over its share.
    pub metrics: Vec<Metric>,
    /// Per transaction type (TPC-C-like) or query class (AS3AP-like).
    pub txn_types: Vec<TxnType>,
    /// Per statement of each script (pgbench -r).
    pub statements: Vec<Statement>,
}

impl LoadResult {
    /// The value of the first metric in `unit` (0 when there is none).
    pub fn metric(&self, unit: &str) -> f64 {
        self.metrics
            .iter()
            .find(|m| m.unit == unit)
            .map_or(0.0, |m| m.value)
    }
}

/// One command of one script: how often it ran, its summed latency, its failures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Statement {
    pub script_index: u32,
    pub script: String,
    pub position: u32,
    pub command: String,
    pub count: u64,
    pub latency_sum_ms: f64,
    pub failures: u64,
}

impl Statement {
    pub fn latency_avg_ms(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.latency_sum_ms / self.count as f64
        }
    }
}

/// One second of a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Sample {
    pub second: u32,
    pub transactions: u64,
    pub latency_avg_ms: f64,
    pub failures: u64,
}

/// One transaction type (or query class) of a load.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TxnType {
    pub name: String,
    /// Completed: committed plus intended rollbacks.
    pub count: u64,
    /// Intended rollbacks (TPC-C New-Order's 1% unused item).
    pub rollbacks: u64,
    pub failures: u64,
    /// Serialized HDR histogram (V2 deflate) of response times in microseconds.
    pub latency_histogram: Vec<u8>,
    /// Tuples returned or changed (AS3AP-like mixes).
    pub rows: u64,
}

/// A named measurement of a run beyond the pgbench columns (NOTPM, tup/s, seconds of a step).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    /// NOTPM | s | ms | tup/s | tps | count | bytes
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_average_and_metric_lookup() {
        let s = Statement {
            count: 4,
            latency_sum_ms: 10.0,
            ..Default::default()
        };
        assert_eq!(s.latency_avg_ms(), 2.5);
        assert_eq!(Statement::default().latency_avg_ms(), 0.0);
        let r = LoadResult {
            metrics: vec![Metric::seconds("load_s", 3.0)],
            ..Default::default()
        };
        assert_eq!(r.metric("s"), 3.0);
        assert_eq!(r.metric("NOTPM"), 0.0);
    }
}
