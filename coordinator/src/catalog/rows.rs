//! Plain records read from and written to the catalog.

use blocklab_spec::state::UnknownName;
use blocklab_spec::{HostRole, JobKind, JobState, RunState, Stage};
use sqlx::any::AnyRow;
use sqlx::{FromRow, Row};

use super::error::CatalogError;

pub(super) const JOB_SELECT_ALL: &str =
    "SELECT j.job_id, j.name, j.state, j.error, j.db_host_id, j.created_at, j.spec_toml, j.seed,
  j.kind, j.workload, j.headline_metric, j.waiting, j.build_progress, j.rerun_of,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id) AS runs_total,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id AND r.state = 'done') AS runs_done,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id AND r.state = 'failed') AS runs_failed
  FROM jobs j ORDER BY j.created_at";
pub(super) const JOB_SELECT_ONE: &str =
    "SELECT j.job_id, j.name, j.state, j.error, j.db_host_id, j.created_at, j.spec_toml, j.seed,
  j.kind, j.workload, j.headline_metric, j.waiting, j.build_progress, j.rerun_of,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id) AS runs_total,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id AND r.state = 'done') AS runs_done,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id AND r.state = 'failed') AS runs_failed
  FROM jobs j WHERE j.job_id = $1";
pub(super) const RUN_SELECT: &str =
    "SELECT r.run_id, r.cell_index, r.repetition, r.sequence, r.attempt, r.state, r.stage,
  r.error, r.log_tail, c.label, r.block_size, r.wal_block_size, r.build_key, r.build_reused, res.tps,
  m.name AS headline_name, m.value AS headline_value, m.unit AS headline_unit
  FROM runs r JOIN cells c ON c.job_id = r.job_id AND c.cell_index = r.cell_index
  LEFT JOIN results res ON res.run_id = r.run_id
  LEFT JOIN run_metrics m ON m.run_id = r.run_id AND m.position = 0
    AND m.name = (SELECT j.headline_metric FROM jobs j WHERE j.job_id = r.job_id)
  WHERE r.job_id = $1 ORDER BY r.sequence";

fn u32_of(row: &AnyRow, col: &str) -> Result<u32, CatalogError> {
    Ok(small(row.try_get::<Option<i64>, _>(col)?))
}

/// A stored flag (0/1 in an integer column on both backends; NULL = not known).
pub(super) fn flag_of(row: &AnyRow, col: &str) -> Result<Option<bool>, sqlx::Error> {
    Ok(row.try_get::<Option<i64>, _>(col)?.map(|v| v != 0))
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostRecord {
    pub host_id: String,
    pub role: HostRole,
    pub labels: Vec<String>,
    pub address: String,
    pub version: String,
    pub facts_json: String,
    pub last_seen: String,
}

impl HostRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        let labels: String = row.try_get("labels")?;
        Ok(Self {
            host_id: row.try_get("host_id")?,
            role: row
                .try_get::<String, _>("role")?
                .parse()
                .map_err(CatalogError::Corrupt)?,
            labels: serde_json::from_str(&labels).unwrap_or_default(),
            address: row.try_get("address")?,
            version: row.try_get("version")?,
            facts_json: row.try_get("facts_json")?,
            last_seen: row.try_get("last_seen")?,
        })
    }
}

/// A `jobs` row as stored.
struct JobRow {
    job_id: String,
    name: String,
    state: String,
    error: Option<String>,
    db_host_id: Option<String>,
    created_at: String,
    spec_toml: String,
    seed: Option<i64>,
    kind: String,
    workload: String,
    headline_metric: String,
    waiting: Option<String>,
    build_progress: Option<String>,
    rerun_of: Option<String>,
    runs_total: i64,
    runs_done: i64,
    runs_failed: i64,
}

impl FromRow<'_, AnyRow> for JobRow {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            job_id: row.try_get("job_id")?,
            name: row.try_get("name")?,
            state: row.try_get("state")?,
            error: row.try_get("error")?,
            db_host_id: row.try_get("db_host_id")?,
            created_at: row.try_get("created_at")?,
            spec_toml: row.try_get("spec_toml")?,
            seed: row.try_get("seed")?,
            kind: row.try_get("kind")?,
            workload: row.try_get("workload")?,
            headline_metric: row.try_get("headline_metric")?,
            waiting: row.try_get("waiting")?,
            build_progress: row.try_get("build_progress")?,
            rerun_of: row.try_get("rerun_of")?,
            runs_total: row.try_get("runs_total")?,
            runs_done: row.try_get("runs_done")?,
            runs_failed: row.try_get("runs_failed")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub job_id: String,
    pub name: String,
    pub state: JobState,
    pub error: Option<String>,
    pub db_host_id: Option<String>,
    pub created_at: String,
    pub spec_toml: String,
    pub seed: Option<u64>,
    pub kind: JobKind,
    /// What it runs: a workload kind's name, or "probe".
    pub workload: String,
    pub headline_metric: String,
    /// Why the job waits (for its database host, for client workers); `None` while it does not.
    pub waiting: Option<String>,
    /// The latest progress of the build the job is making; `None` while it builds nothing.
    pub build_progress: Option<blocklab_spec::BuildProgress>,
    /// The job this one reruns (`blocklab rerun`).
    pub rerun_of: Option<String>,
    pub runs_total: u32,
    pub runs_done: u32,
    pub runs_failed: u32,
}

/// A stored name that is not one of its enum's: the catalog was written by something else.
fn named<T: std::str::FromStr<Err = UnknownName>>(v: &str) -> Result<T, CatalogError> {
    v.parse().map_err(CatalogError::Corrupt)
}

impl TryFrom<JobRow> for JobRecord {
    type Error = CatalogError;

    fn try_from(r: JobRow) -> Result<Self, CatalogError> {
        Ok(Self {
            state: named(&r.state)?,
            kind: named(&r.kind)?,
            job_id: r.job_id,
            name: r.name,
            error: r.error,
            db_host_id: r.db_host_id,
            created_at: r.created_at,
            spec_toml: r.spec_toml,
            seed: r.seed.map(|s| s as u64),
            workload: r.workload,
            headline_metric: r.headline_metric,
            waiting: r.waiting,
            build_progress: match r.build_progress {
                Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                    CatalogError::Corrupt(UnknownName {
                        what: "build progress",
                        value: format!("{text} ({e})"),
                        allowed: "the JSON of a build progress report".into(),
                    })
                })?),
                None => None,
            },
            rerun_of: r.rerun_of,
            runs_total: small(r.runs_total),
            runs_done: small(r.runs_done),
            runs_failed: small(r.runs_failed),
        })
    }
}

impl JobRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        JobRow::from_row(row)?.try_into()
    }

    pub fn is_finished(&self) -> bool {
        self.state.is_finished()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    pub cell_index: u32,
    pub repetition: u32,
    pub sequence: u32,
    pub attempt: u32,
    pub state: RunState,
    pub stage: Stage,
    pub error: Option<String>,
    pub log_tail: Option<String>,
    pub cell_label: String,
    pub block_size: u32,
    pub wal_block_size: u32,
    pub build_key: Option<String>,
    pub build_reused: bool,
    pub tps: Option<f64>,
    /// The run's headline workload metric (name, value, unit), for kinds other than pgbench
    /// (a pgbench run's metrics, WAL per transaction and the like, are not its headline).
    pub headline: Option<(String, f64, String)>,
}

/// The columns of `runs` that every read of a run uses: its place in the job, its attempt,
/// where it is and what it ran on. The run listing and the export both read them through this.
pub(super) struct RunRow {
    pub run_id: String,
    pub cell_index: i64,
    pub repetition: i64,
    pub sequence: i64,
    pub attempt: i64,
    pub state: String,
    pub stage: String,
    pub error: Option<String>,
    pub block_size: Option<i64>,
    pub wal_block_size: Option<i64>,
    pub build_key: Option<String>,
    pub build_reused: Option<i64>,
}

impl FromRow<'_, AnyRow> for RunRow {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            run_id: row.try_get("run_id")?,
            cell_index: row.try_get("cell_index")?,
            repetition: row.try_get("repetition")?,
            sequence: row.try_get("sequence")?,
            attempt: row.try_get("attempt")?,
            state: row.try_get("state")?,
            stage: row.try_get("stage")?,
            error: row.try_get("error")?,
            block_size: row.try_get("block_size")?,
            wal_block_size: row.try_get("wal_block_size")?,
            build_key: row.try_get("build_key")?,
            build_reused: row.try_get("build_reused")?,
        })
    }
}

impl RunRow {
    pub(super) fn state(&self) -> Result<RunState, CatalogError> {
        named(&self.state)
    }

    pub(super) fn stage(&self) -> Result<Stage, CatalogError> {
        named(&self.stage)
    }
}

/// A stored count or size as u32 (NULL and out-of-range read as 0).
pub(super) fn small(v: impl Into<Option<i64>>) -> u32 {
    v.into().and_then(|v| u32::try_from(v).ok()).unwrap_or(0)
}

impl RunRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        let r = RunRow::from_row(row)?;
        Ok(Self {
            state: r.state()?,
            stage: r.stage()?,
            run_id: r.run_id,
            cell_index: small(r.cell_index),
            repetition: small(r.repetition),
            sequence: small(r.sequence),
            attempt: small(r.attempt),
            error: r.error,
            log_tail: row.try_get("log_tail")?,
            cell_label: row.try_get("label")?,
            block_size: small(r.block_size),
            wal_block_size: small(r.wal_block_size),
            build_key: r.build_key,
            build_reused: r.build_reused.is_some_and(|b| b != 0),
            tps: row.try_get("tps")?,
            headline: match (
                row.try_get::<Option<String>, _>("headline_name")?,
                row.try_get::<Option<f64>, _>("headline_value")?,
                row.try_get::<Option<String>, _>("headline_unit")?,
            ) {
                (Some(n), Some(v), Some(u)) => Some((n, v, u)),
                _ => None,
            },
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CellRecord {
    pub cell_index: u32,
    pub label: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub clients: u32,
    pub is_baseline: bool,
}

impl CellRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        Ok(Self {
            cell_index: u32_of(row, "cell_index")?,
            label: row.try_get("label")?,
            block_size_kb: u32_of(row, "block_size_kb")?,
            wal_block_size_kb: u32_of(row, "wal_block_size_kb")?,
            clients: u32_of(row, "clients")?,
            is_baseline: flag_of(row, "is_baseline")?.unwrap_or(false),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BuildRecord {
    pub build_key: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub source_sha256: String,
    pub pg_version: String,
    pub reused: bool,
    pub build_seconds: f64,
}

impl BuildRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        Ok(Self {
            build_key: row.try_get("build_key")?,
            block_size_kb: u32_of(row, "block_size_kb")?,
            wal_block_size_kb: u32_of(row, "wal_block_size_kb")?,
            source_sha256: row.try_get("source_sha256")?,
            pg_version: row.try_get("pg_version")?,
            reused: flag_of(row, "reused")?.unwrap_or(false),
            build_seconds: row.try_get("build_seconds")?,
        })
    }
}

/// What the agent proved about a run's live server.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerRecord {
    pub build_key: String,
    pub build_reused: bool,
    pub server_version: String,
    pub block_size: u32,
    pub wal_block_size: u32,
    pub server_address: String,
    /// (name, setting, unit, source) from pg_settings.
    pub settings: Vec<(String, String, String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResultRecord {
    pub tps: f64,
    pub tps_incl_conn: f64,
    pub transactions: i64,
    pub failures: i64,
    pub latency_avg_ms: f64,
    pub latency_p99_ms: f64,
}

impl ResultRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        Ok(Self {
            tps: row.try_get("tps")?,
            tps_incl_conn: row.try_get("tps_incl_conn")?,
            transactions: row.try_get("transactions")?,
            failures: row.try_get("failures")?,
            latency_avg_ms: row.try_get("latency_avg_ms")?,
            latency_p99_ms: row.try_get("latency_p99_ms")?,
        })
    }
}

/// Everything written when a run finishes.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    /// The merged result over all of the run's workers.
    pub result: blocklab_measure::LoadResult,
    /// (worker host, clients, that worker's result) for each worker.
    pub shares: Vec<(String, u32, blocklab_measure::LoadResult)>,
    /// Server-statistics deltas over the measured window.
    pub stats: Vec<(String, f64)>,
    /// Why the measurement is suspect (empty = not suspect).
    pub suspect: Vec<String>,
    /// Measurements of the workload kind beyond the pgbench columns, in display order.
    pub metrics: Vec<blocklab_measure::Metric>,
}

/// One line of a probe job's summary, averaged over repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSummaryRow {
    pub target: String,
    pub mode: String,
    pub chunk_bytes: u32,
    pub mb_per_s: f64,
    pub system_cpu_s: f64,
    pub latency_avg_us: f64,
    pub latency_p99_us: f64,
    pub runs: u32,
}

impl ProbeSummaryRow {
    pub(super) fn from_row(row: &AnyRow) -> Result<Self, CatalogError> {
        Ok(Self {
            target: row.try_get("target")?,
            mode: row.try_get("mode")?,
            chunk_bytes: u32_of(row, "chunk_bytes")?,
            mb_per_s: row.try_get("mb_per_s")?,
            system_cpu_s: row.try_get("system_cpu_s")?,
            latency_avg_us: row.try_get("latency_avg_us")?,
            latency_p99_us: row.try_get("latency_p99_us")?,
            runs: u32_of(row, "runs")?,
        })
    }
}

/// The details of one run (`blocklab job ID --run N`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunDetailRecord {
    pub stats: Vec<(String, f64)>,
    pub settings: Vec<(String, String, String, String)>,
    pub suspect: Vec<String>,
    /// (worker, clients, transactions, tps, cpu user s, cpu system s)
    pub shares: Vec<(String, u32, u64, f64, f64, f64)>,
    pub db_host_id: String,
    pub server_version: String,
    pub started_at: String,
    pub finished_at: String,
    /// (name, value, unit, higher is better) of the workload metrics, in order.
    pub metrics: Vec<(String, f64, String, bool)>,
    /// What the run's layout choices did (the fpi source as stored).
    pub choices: StoredChoices,
}

/// A run's choices as the catalog holds them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredChoices {
    pub os_cache_dropped: Option<bool>,
    pub server_restarted: Option<bool>,
    pub checkpoint_before: Option<bool>,
    pub wal_dir: String,
    pub stats_start_at: String,
    pub stats_end_at: String,
    pub fpi_source: String,
}

/// A run's cache-control choices as carried out (None = not known yet).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunChoices {
    pub os_cache_dropped: Option<bool>,
    /// Whether the server was restarted after the data load (layout `cold`).
    pub server_restarted: Option<bool>,
    pub checkpoint_before: Option<bool>,
    pub wal_dir: Option<String>,
    /// The postmaster start time the window's restart check compares against (after the
    /// reset, when there was one).
    pub postmaster_start_time: Option<String>,
    /// When the agent took the statistics at the window's start and end.
    pub stats_start_at: Option<String>,
    pub stats_end_at: Option<String>,
    /// Where the window's full-page-image bytes came from.
    pub fpi_source: Option<FpiSource>,
}

/// Where a run's `fpi_bytes_per_txn` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FpiSource {
    /// `pg_waldump --stats` over the window's LSN range: exact.
    Waldump,
    /// pg_stat_wal's `wal_fpi` delta x the block size (the window's WAL was already
    /// recycled): an upper bound, since a page image leaves out the page's hole.
    StatWal,
}

impl FpiSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FpiSource::Waldump => "pg_waldump",
            FpiSource::StatWal => "pg_stat_wal",
        }
    }
}

/// A run's load figures beyond the pgbench columns, for `blocklab job ID --run N`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadDetail {
    pub schedule_lag_avg_ms: f64,
    pub schedule_lag_max_ms: f64,
    pub late: u64,
    pub skipped: u64,
    pub random_seed: u64,
    /// (script, position, command, count, average latency ms, failures), in script order.
    pub statements: Vec<(String, u32, String, u64, f64, u64)>,
}

/// One mode and chunk size of a probe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeRow {
    /// read-buffered | read-direct | write-fdatasync
    pub mode: String,
    pub chunk_bytes: u32,
    pub mb_per_s: f64,
    pub user_cpu_s: f64,
    pub system_cpu_s: f64,
    pub latency_avg_us: f64,
    pub latency_p99_us: f64,
    pub cache_dropped: bool,
    pub bytes: u64,
}

/// What a probe measured, and on which device and file system.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probed {
    pub rows: Vec<ProbeRow>,
    pub device: String,
    pub filesystem: String,
}
