//! A job's export: the document the coordinator reads out of its catalog for one job.

use crate::job::results::CellResult;
use crate::job::summary::JobSummary;
use serde::Serialize;

use crate::{Metric, Sample};

/// One job with its cells, runs (in execution order), builds and hosts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobExport {
    pub job: Option<JobSummary>,
    pub spec_toml: String,
    /// As recorded: interleaved, sequential or shuffled(seed=N).
    pub run_order: String,
    pub seed: Option<u64>,
    pub started_at: String,
    pub finished_at: String,
    pub cells: Vec<ExportCell>,
    /// In sequence (execution) order.
    pub runs: Vec<ExportRun>,
    pub builds: Vec<ExportBuild>,
    /// The job's database host first, then the workers its runs used.
    pub hosts: Vec<ExportHost>,
    /// Per-cell statistics of `metric` against the baseline.
    pub metric: String,
    pub results: Vec<CellResult>,
    pub catalog_path: String,
    pub analysis: Option<AnalysisOptions>,
}

/// How a job's statistics are computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct AnalysisOptions {
    /// The equivalence band of the TOST check, in percent of the baseline mean.
    pub equivalence_pct: f64,
    /// Suspect runs are left out of the statistics.
    pub exclude_suspect: bool,
    /// Adaptive repetitions: the target 95% CI half-width in percent of the mean, and the
    /// bounds; no target = a fixed number of repetitions.
    pub target_ci_pct: Option<f64>,
    pub min_repetitions: u32,
    pub max_repetitions: u32,
    /// `until = "decided"`: rounds were added until every compared cell was decided, and the
    /// verdicts use the sequential boundary over the looks from `min_repetitions` to
    /// `max_repetitions`.
    pub until_decided: bool,
    /// `budget = "10m"`: the measured runs' time adaptive repetitions may spend, in seconds.
    pub budget_seconds: Option<f64>,
    /// `search = "race"`: cells significantly worse than the best left after each round.
    pub race: bool,
}

/// One cell of the job's matrix.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExportCell {
    pub cell_index: u32,
    pub label: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub clients: u32,
    pub is_baseline: bool,
    pub dims_json: String,
    /// The cell this one is compared with (none for a baseline cell, or without a like one).
    pub baseline_cell_index: Option<u32>,
    /// What differs from that baseline ("page size", "source", ..., "replicate").
    pub compared_on: String,
    /// An A/A cell: the baseline build measured again as its own cell.
    pub replicate: bool,
    /// `kind = "series"`: the place of the cell's source among the series' points.
    pub series_point: Option<u32>,
}

/// One run (cell x repetition) with its outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExportRun {
    pub run_id: String,
    pub cell_index: u32,
    pub repetition: u32,
    pub sequence: u32,
    pub attempt: u32,
    pub state: String,
    pub stage: String,
    pub error: String,
    pub started_at: String,
    pub finished_at: String,
    pub db_host_id: String,
    pub worker_host_id: String,
    pub build_key: String,
    pub build_reused: bool,
    pub server_version: String,
    /// Proven by the live server (0 until known).
    pub block_size: u32,
    pub wal_block_size: u32,
    /// Why the run is suspect; empty when it is not.
    pub suspect_reasons: Vec<String>,
    /// Set once the run is done.
    pub result: Option<RunMetrics>,
    /// Only when samples were asked for.
    pub samples: Vec<Sample>,
    /// Effective non-default settings of the live server.
    pub settings: Vec<EffectiveSetting>,
    /// Server statistics deltas over the measured window.
    pub server_stats: Vec<ServerStatDelta>,
}

/// What a done run measured, as the catalog stores it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunMetrics {
    pub transactions: u64,
    pub failures: u64,
    pub retries: u64,
    pub tps: f64,
    pub tps_incl_conn: f64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: f64,
    pub latency_p50_ms: f64,
    pub latency_p90_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_p999_ms: f64,
    pub latency_max_ms: f64,
    pub connection_time_ms: f64,
    pub measured_seconds: f64,
    pub client_cpu_user_s: f64,
    pub client_cpu_system_s: f64,
    /// Metrics of the workload kind.
    pub extra: Vec<Metric>,
    /// Schedule lag behind a rate (0 without one), and transactions over the latency limit or
    /// skipped for it.
    pub schedule_lag_avg_ms: f64,
    pub schedule_lag_max_ms: f64,
    pub late: u64,
    pub skipped: u64,
    /// Per statement of each script, merged over the run's workers.
    pub statements: Vec<StatementLatency>,
}

/// One statement of a script in one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatementLatency {
    pub script: String,
    /// 0-based position of the command in the script.
    pub position: u32,
    pub command: String,
    pub count: u64,
    pub latency_avg_ms: f64,
    pub failures: u64,
}

/// A non-default setting of the live server.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EffectiveSetting {
    pub name: String,
    pub setting: String,
    pub unit: String,
    pub source: String,
}

/// A server statistic's change over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerStatDelta {
    pub name: String,
    pub delta: f64,
}

/// A build a job's runs used.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExportBuild {
    pub host_id: String,
    pub build_key: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub source_sha256: String,
    pub pg_version: String,
    pub reused: bool,
    pub build_seconds: f64,
    pub recorded_at: String,
}

/// A host a job's runs used.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExportHost {
    pub host_id: String,
    pub role: String,
    pub labels: Vec<String>,
    pub address: String,
    pub version: String,
    /// The facts the host last reported before the job finished, else its current ones.
    pub facts_json: String,
    pub facts_seen_at: String,
    /// The job's pinned database host.
    pub is_job_db_host: bool,
}
