//! What a load run is asked to do and what it reports.

use std::time::Duration;

use blocklab_proto::{PerSecondSample, RunLoadResult, RunLoadTask};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::cpu::CpuTimes;
use crate::error::WorkerError;
use crate::script::{Builtin, Protocol};
use crate::stats::{self, ClientStats, Sample};

/// A load to run.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// libpq-style `key=value` connection string.
    pub conninfo: String,
    pub builtin: Builtin,
    pub clients: u32,
    pub threads: u32,
    /// The measured window.
    pub duration: Duration,
    /// Run before the measured window; its transactions are not counted.
    pub warmup: Duration,
    pub protocol: Protocol,
    /// 0: read it from pgbench_branches, as pgbench does.
    pub scale: u32,
}

impl LoadOptions {
    /// Defaults like pgbench's: tpcb-like, one client, one thread, simple protocol.
    pub fn new(conninfo: impl Into<String>, duration: Duration) -> Self {
        LoadOptions {
            conninfo: conninfo.into(),
            builtin: Builtin::TpcbLike,
            clients: 1,
            threads: 1,
            duration,
            warmup: Duration::ZERO,
            protocol: Protocol::Simple,
            scale: 0,
        }
    }

    pub fn from_task(task: &RunLoadTask) -> Result<Self, WorkerError> {
        let conn = task
            .conninfo
            .as_ref()
            .ok_or_else(|| WorkerError::InvalidArgument("run-load task without conninfo".into()))?;
        Ok(LoadOptions {
            conninfo: conn.to_conninfo_string(),
            builtin: task.builtin.parse().map_err(WorkerError::InvalidArgument)?,
            clients: task.clients,
            threads: task.threads.max(1),
            duration: Duration::from_millis(task.duration_ms),
            warmup: Duration::from_millis(task.warmup_ms),
            protocol: task
                .protocol
                .parse()
                .map_err(WorkerError::InvalidArgument)?,
            scale: task.scale,
        })
    }

    pub fn validate(&self) -> Result<(), WorkerError> {
        let bad = |m: &str| Err(WorkerError::InvalidArgument(m.to_string()));
        if self.clients == 0 {
            return bad("clients must be at least 1");
        }
        if self.threads == 0 {
            return bad("threads must be at least 1");
        }
        if self.duration.is_zero() {
            return bad("duration must be positive");
        }
        Ok(())
    }
}

/// Measured facts other than the transactions themselves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timings {
    pub scale: u32,
    pub threads: u32,
    pub measured: Duration,
    /// Wall time from the start until every client was connected.
    pub connection_elapsed: Duration,
    /// Sum over clients of each one's connection time.
    pub connection_total: Duration,
    pub cpu: CpuTimes,
}

/// The outcome of a load run.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub builtin: String,
    pub transaction_type: String,
    pub protocol: String,
    pub scale: u32,
    pub clients: u32,
    pub threads: u32,
    pub duration_s: f64,
    pub warmup_s: f64,
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
    /// Wall time to connect all clients (pgbench's "initial connection time").
    pub connection_time_ms: f64,
    /// Average time one client took to connect.
    pub connection_time_per_client_ms: f64,
    pub measured_seconds: f64,
    pub client_cpu_user_s: f64,
    pub client_cpu_system_s: f64,
    pub first_error: Option<String>,
    pub samples: Vec<Sample>,
    /// Latency of successful transactions, microseconds.
    #[serde(skip)]
    pub histogram: Histogram<u64>,
}

impl LoadReport {
    pub(crate) fn build(opts: &LoadOptions, t: &Timings, total: &ClientStats) -> LoadReport {
        let measured_s = t.measured.as_secs_f64();
        let (avg, stddev) = total.latency_avg_stddev_ms();
        let h = &total.histogram;
        LoadReport {
            builtin: opts.builtin.name().into(),
            transaction_type: opts.builtin.description().into(),
            protocol: opts.protocol.name().into(),
            scale: t.scale,
            clients: opts.clients,
            threads: t.threads,
            duration_s: opts.duration.as_secs_f64(),
            warmup_s: opts.warmup.as_secs_f64(),
            transactions: total.transactions,
            failures: total.failures,
            tps_including_connections: stats::tps_including_connections(
                total.transactions,
                measured_s,
                t.connection_total.as_secs_f64(),
                opts.clients,
            ),
            tps_excluding_connections: stats::tps_excluding_connections(
                total.transactions,
                measured_s,
            ),
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
            connection_time_ms: t.connection_elapsed.as_secs_f64() * 1e3,
            connection_time_per_client_ms: t.connection_total.as_secs_f64() * 1e3
                / f64::from(opts.clients.max(1)),
            measured_seconds: measured_s,
            client_cpu_user_s: t.cpu.user_s,
            client_cpu_system_s: t.cpu.system_s,
            first_error: total.first_error.clone(),
            samples: total.samples(),
            histogram: total.histogram.clone(),
        }
    }

    /// The wire form sent to the coordinator.
    pub fn to_proto(&self) -> RunLoadResult {
        RunLoadResult {
            transactions: self.transactions,
            failures: self.failures,
            tps_including_connections: self.tps_including_connections,
            tps_excluding_connections: self.tps_excluding_connections,
            latency_avg_ms: self.latency_avg_ms,
            latency_stddev_ms: self.latency_stddev_ms,
            latency_p50_ms: self.latency_p50_ms,
            latency_p90_ms: self.latency_p90_ms,
            latency_p99_ms: self.latency_p99_ms,
            latency_max_ms: self.latency_max_ms,
            connection_time_ms: self.connection_time_ms,
            measured_seconds: self.measured_seconds,
            client_cpu_user_s: self.client_cpu_user_s,
            client_cpu_system_s: self.client_cpu_system_s,
            samples: self
                .samples
                .iter()
                .map(|s| PerSecondSample {
                    second: s.second,
                    transactions: s.transactions,
                    latency_avg_ms: s.latency_avg_ms,
                    failures: s.failures,
                })
                .collect(),
            latency_histogram: stats::serialize_histogram(&self.histogram),
            latency_p999_ms: self.latency_p999_ms,
            ..Default::default()
        }
    }

    /// A summary laid out like pgbench's, plus latency percentiles.
    pub fn summary(&self) -> String {
        let total = self.transactions + self.failures;
        let fail_pct = if total == 0 {
            0.0
        } else {
            100.0 * self.failures as f64 / total as f64
        };
        let mut s = String::new();
        let mut line = |l: String| {
            s.push_str(&l);
            s.push('\n');
        };
        line(format!("transaction type: {}", self.transaction_type));
        line(format!("scaling factor: {}", self.scale));
        line(format!("query mode: {}", self.protocol));
        line(format!("number of clients: {}", self.clients));
        line(format!("number of threads: {}", self.threads));
        line(format!("duration: {} s", self.duration_s));
        line(format!(
            "number of transactions actually processed: {}",
            self.transactions
        ));
        line(format!(
            "number of failed transactions: {} ({fail_pct:.3}%)",
            self.failures
        ));
        line(format!("latency average = {:.3} ms", self.latency_avg_ms));
        line(format!("latency stddev = {:.3} ms", self.latency_stddev_ms));
        line(format!("latency p50 = {:.3} ms", self.latency_p50_ms));
        line(format!("latency p90 = {:.3} ms", self.latency_p90_ms));
        line(format!("latency p99 = {:.3} ms", self.latency_p99_ms));
        line(format!("latency p99.9 = {:.3} ms", self.latency_p999_ms));
        line(format!("latency max = {:.3} ms", self.latency_max_ms));
        line(format!(
            "initial connection time = {:.3} ms",
            self.connection_time_ms
        ));
        line(format!(
            "tps = {:.6} (including connections establishing)",
            self.tps_including_connections
        ));
        line(format!(
            "tps = {:.6} (without initial connection time)",
            self.tps_excluding_connections
        ));
        line(format!(
            "client cpu: user {:.3} s, system {:.3} s",
            self.client_cpu_user_s, self.client_cpu_system_s
        ));
        s
    }
}
