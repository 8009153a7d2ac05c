//! The SQLite catalog: embedded migrations, WAL mode, foreign keys, one writer connection
//! (every write is a `BEGIN IMMEDIATE` transaction) and a small read pool.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};

use blocklab_spec::JobState;

pub use error::CatalogError;
pub use rows::*;

pub mod credentials;
mod error;
pub mod export;
pub mod history;
mod jobs;
mod rows;
mod runs;
mod user_load;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Handle to the catalog; cheap to clone.
/// The catalog a `--catalog` argument names: a file path, or `sqlite://PATH`. Anything else
/// with a scheme (`postgres://...`, a typo) is refused naming the schemes supported, instead
/// of becoming a file under a directory named after the scheme.
pub fn parse_location(arg: &str) -> Result<std::path::PathBuf, String> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Err("the catalog is a file path or sqlite://PATH; got an empty value".into());
    }
    match arg.split_once("://") {
        None => Ok(arg.into()),
        Some(("sqlite", path)) if !path.is_empty() => Ok(path.into()),
        Some((scheme, _)) => Err(format!(
            "{arg:?}: catalogs of scheme {scheme:?} are not supported; the catalog is a SQLite \
             file, given as a path or as sqlite://PATH"
        )),
    }
}

#[derive(Clone)]
pub struct Catalog {
    writer: SqlitePool,
    reader: SqlitePool,
}

pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

impl Catalog {
    /// Opens (creating if missing) the catalog file and applies migrations.
    pub async fn open(path: &Path) -> Result<Self, CatalogError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| CatalogError::Sql(sqlx::Error::Io(e)))?;
        }
        let opts = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts.clone())
            .await?;
        MIGRATOR.run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts.read_only(true))
            .await?;
        let catalog = Self { writer, reader };
        catalog.store_missing_plans().await?;
        Ok(catalog)
    }

    pub(crate) async fn write(&self) -> Result<Transaction<'static, Sqlite>, CatalogError> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }

    pub fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    /// Records a host's hello: upserts the host and keeps its facts' history.
    pub async fn upsert_host(&self, h: &HostRecord) -> Result<(), CatalogError> {
        let now = now();
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT INTO hosts (host_id, role, labels, address, version, facts_json, first_seen, last_seen)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(host_id) DO UPDATE SET role = excluded.role, labels = excluded.labels,
               address = excluded.address, version = excluded.version,
               facts_json = excluded.facts_json, last_seen = excluded.last_seen",
        )
        .bind(&h.host_id)
        .bind(&h.role)
        .bind(serde_json::to_string(&h.labels).unwrap_or_else(|_| "[]".into()))
        .bind(&h.address)
        .bind(&h.version)
        .bind(&h.facts_json)
        .bind(&now)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        let last: Option<String> = sqlx::query_scalar(
            "SELECT facts_json FROM host_facts WHERE host_id = ? ORDER BY seen_at DESC LIMIT 1",
        )
        .bind(&h.host_id)
        .fetch_optional(&mut *tx)
        .await?;
        if last.as_deref() != Some(h.facts_json.as_str()) {
            sqlx::query(
                "INSERT OR IGNORE INTO host_facts (host_id, seen_at, facts_json) VALUES (?, ?, ?)",
            )
            .bind(&h.host_id)
            .bind(&now)
            .bind(&h.facts_json)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn touch_host(&self, host_id: &str) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE hosts SET last_seen = ? WHERE host_id = ?")
            .bind(now())
            .bind(host_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records `last_seen` = now for every host in `host_ids`, in one transaction.
    pub async fn touch_hosts(&self, host_ids: &[String]) -> Result<(), CatalogError> {
        if host_ids.is_empty() {
            return Ok(());
        }
        let mut tx = self.write().await?;
        let now = now();
        for id in host_ids {
            sqlx::query("UPDATE hosts SET last_seen = ? WHERE host_id = ?")
                .bind(&now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The CPU cores a host reported in its facts (`cpu_cores`), if it did.
    pub async fn host_cores(&self, host_id: &str) -> Result<Option<u32>, CatalogError> {
        let cores: Option<i64> = sqlx::query_scalar(
            "SELECT json_extract(facts_json, '$.cpu_cores') FROM hosts WHERE host_id = ?",
        )
        .bind(host_id)
        .fetch_optional(&self.reader)
        .await?
        .flatten();
        Ok(cores.and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0))
    }

    pub async fn hosts(&self) -> Result<Vec<HostRecord>, CatalogError> {
        let rows = sqlx::query("SELECT host_id, role, labels, address, version, facts_json, last_seen FROM hosts ORDER BY role, host_id")
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(HostRecord::from_row).collect()
    }

    /// Writes a probe run's rows and marks it done in one transaction.
    pub async fn finish_probe_run(
        &self,
        job_id: &str,
        run_id: &str,
        attempt: u32,
        host_id: &str,
        target: &str,
        r: &blocklab_proto::RunProbeResult,
    ) -> Result<bool, CatalogError> {
        let mut tx = self.write().await?;
        let n = sqlx::query("UPDATE runs SET state = 'done', stage = 'done', finished_at = ? WHERE run_id = ? AND attempt = ? AND state = 'running'")
            .bind(now())
            .bind(run_id)
            .bind(attempt)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        for row in &r.rows {
            sqlx::query(
                "INSERT INTO probe_results (run_id, job_id, host_id, target, mode, chunk_bytes, mb_per_s, user_cpu_s, system_cpu_s,
                   latency_avg_us, latency_p99_us, cache_dropped, bytes, device, filesystem)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(run_id)
            .bind(job_id)
            .bind(host_id)
            .bind(target)
            .bind(&row.mode)
            .bind(row.chunk_bytes)
            .bind(row.mb_per_s)
            .bind(row.user_cpu_s)
            .bind(row.system_cpu_s)
            .bind(row.latency_avg_us)
            .bind(row.latency_p99_us)
            .bind(row.cache_dropped)
            .bind(i64::try_from(row.bytes).unwrap_or(i64::MAX))
            .bind(&r.device)
            .bind(&r.filesystem)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// A probe job's rows: (target, mode, chunk bytes, mean MB/s, mean system CPU s, mean latency avg µs, mean p99 µs, runs).
    pub async fn probe_summary(&self, job_id: &str) -> Result<Vec<ProbeSummaryRow>, CatalogError> {
        let rows = sqlx::query(
            "SELECT target, mode, chunk_bytes, avg(mb_per_s) AS mb_per_s, avg(system_cpu_s) AS system_cpu_s,
               avg(latency_avg_us) AS latency_avg_us, avg(latency_p99_us) AS latency_p99_us, count(*) AS runs
             FROM probe_results WHERE job_id = ? GROUP BY target, mode, chunk_bytes ORDER BY target, mode, chunk_bytes",
        )
        .bind(job_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(ProbeSummaryRow::from_row).collect()
    }

    /// Records why a job waits (`None`: it no longer does).
    pub async fn set_job_waiting(
        &self,
        job_id: &str,
        waiting: Option<&str>,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE jobs SET waiting = ? WHERE job_id = ?")
            .bind(waiting)
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records the latest progress of the build a job is making (`None`: none now). Only a
    /// building job keeps one.
    pub async fn set_build_progress(
        &self,
        job_id: &str,
        build: Option<&blocklab_spec::BuildProgress>,
    ) -> Result<(), CatalogError> {
        let text = build.map(|b| serde_json::to_string(b).unwrap_or_default());
        let mut tx = self.write().await?;
        sqlx::query(
            "UPDATE jobs SET build_progress = ? WHERE job_id = ? AND (state = 'building' OR ? IS NULL)",
        )
        .bind(&text)
        .bind(job_id)
        .bind(&text)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn set_job_state(
        &self,
        job_id: &str,
        state: JobState,
        error: Option<&str>,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        let finished = state.is_finished();
        let state = state.as_str();
        sqlx::query(
            "UPDATE jobs SET state = ?, error = coalesce(?, error),
               started_at = CASE WHEN started_at IS NULL AND ? NOT IN ('queued') THEN ? ELSE started_at END,
               finished_at = CASE WHEN ? THEN ? ELSE finished_at END,
               waiting = CASE WHEN ? THEN NULL ELSE waiting END,
               build_progress = CASE WHEN ? = 'building' THEN build_progress ELSE NULL END
             WHERE job_id = ? AND state <> 'cancelled'",
        )
        .bind(state)
        .bind(error)
        .bind(state)
        .bind(now())
        .bind(finished)
        .bind(now())
        .bind(finished)
        .bind(state)
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn pin_job_host(&self, job_id: &str, host_id: &str) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE jobs SET db_host_id = ? WHERE job_id = ?")
            .bind(host_id)
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Pins slot `slot` of a job over several database hosts to `host_id` (slot 0 is also
    /// the job's `db_host_id`).
    pub async fn pin_job_slot(
        &self,
        job_id: &str,
        slot: u32,
        host_id: &str,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("INSERT INTO job_hosts (job_id, slot, host_id) VALUES (?, ?, ?)")
            .bind(job_id)
            .bind(i64::from(slot))
            .bind(host_id)
            .execute(&mut *tx)
            .await?;
        if slot == 0 {
            sqlx::query("UPDATE jobs SET db_host_id = ? WHERE job_id = ?")
                .bind(host_id)
                .bind(job_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The hosts a job's slots are pinned to, by slot.
    pub async fn job_slots(&self, job_id: &str) -> Result<Vec<(u32, String)>, CatalogError> {
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT slot, host_id FROM job_hosts WHERE job_id = ? ORDER BY slot")
                .bind(job_id)
                .fetch_all(&self.reader)
                .await?;
        Ok(rows
            .into_iter()
            .map(|(s, h)| (u32::try_from(s).unwrap_or(0), h))
            .collect())
    }

    pub async fn jobs(&self) -> Result<Vec<JobRecord>, CatalogError> {
        let rows = sqlx::query(JOB_SELECT_ALL).fetch_all(&self.reader).await?;
        rows.iter().map(JobRecord::from_row).collect()
    }

    /// Jobs not yet finished, oldest first (resumed after a coordinator restart).
    pub async fn unfinished_jobs(&self) -> Result<Vec<String>, CatalogError> {
        Ok(sqlx::query_scalar("SELECT job_id FROM jobs WHERE state IN ('queued', 'building', 'running') ORDER BY created_at")
            .fetch_all(&self.reader)
            .await?)
    }

    pub async fn job(&self, job_id: &str) -> Result<JobRecord, CatalogError> {
        let row = sqlx::query(JOB_SELECT_ONE)
            .bind(job_id)
            .fetch_optional(&self.reader)
            .await?
            .ok_or_else(|| CatalogError::JobNotFound(job_id.to_string()))?;
        JobRecord::from_row(&row)
    }

    pub async fn runs(&self, job_id: &str) -> Result<Vec<RunRecord>, CatalogError> {
        let rows = sqlx::query(RUN_SELECT)
            .bind(job_id)
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(RunRecord::from_row).collect()
    }

    pub async fn cells(&self, job_id: &str) -> Result<Vec<CellRecord>, CatalogError> {
        let rows = sqlx::query("SELECT cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline FROM cells WHERE job_id = ? ORDER BY cell_index")
            .bind(job_id)
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(CellRecord::from_row).collect()
    }

    pub async fn record_build(
        &self,
        job_id: &str,
        host_id: &str,
        b: &BuildRecord,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT OR REPLACE INTO builds (job_id, host_id, build_key, block_size_kb, wal_block_size_kb, source_sha256, pg_version, reused, build_seconds, recorded_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(job_id)
        .bind(host_id)
        .bind(&b.build_key)
        .bind(b.block_size_kb)
        .bind(b.wal_block_size_kb)
        .bind(&b.source_sha256)
        .bind(&b.pg_version)
        .bind(b.reused)
        .bind(b.build_seconds)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn builds(&self, job_id: &str) -> Result<Vec<BuildRecord>, CatalogError> {
        let rows = sqlx::query("SELECT build_key, block_size_kb, wal_block_size_kb, source_sha256, pg_version, reused, build_seconds FROM builds WHERE job_id = ? ORDER BY block_size_kb, wal_block_size_kb")
            .bind(job_id)
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(BuildRecord::from_row).collect()
    }

    /// Server-statistics deltas, effective settings, suspect reasons and worker shares of a run.
    pub async fn run_detail(&self, run_id: &str) -> Result<RunDetailRecord, CatalogError> {
        let stats =
            sqlx::query_as("SELECT name, delta FROM run_stats WHERE run_id = ? ORDER BY name")
                .bind(run_id)
                .fetch_all(&self.reader)
                .await?;
        let settings = sqlx::query_as(
            "SELECT name, setting, unit, source FROM run_settings WHERE run_id = ? ORDER BY name",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        let shares: Vec<(String, i64, i64, f64, f64, f64)> = sqlx::query_as(
            "SELECT worker_host_id, clients, transactions, tps, client_cpu_user_s, client_cpu_system_s FROM result_shares WHERE run_id = ? ORDER BY worker_host_id",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        let metrics = sqlx::query_as(
            "SELECT name, value, unit, higher_is_better FROM run_metrics WHERE run_id = ? ORDER BY position",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        let run = sqlx::query("SELECT suspect_json, db_host_id, server_version, started_at, finished_at, os_cache_dropped, server_restarted, checkpoint_before, wal_dir, stats_start_at, stats_end_at, fpi_source FROM runs WHERE run_id = ?")
            .bind(run_id)
            .fetch_one(&self.reader)
            .await?;
        let text = |col: &str| -> Result<String, CatalogError> {
            Ok(run.try_get::<Option<String>, _>(col)?.unwrap_or_default())
        };
        let suspect = text("suspect_json")?;
        let flag = |col: &str| -> Result<Option<bool>, CatalogError> { Ok(run.try_get(col)?) };
        let choices = StoredChoices {
            os_cache_dropped: flag("os_cache_dropped")?,
            server_restarted: flag("server_restarted")?,
            checkpoint_before: flag("checkpoint_before")?,
            wal_dir: text("wal_dir")?,
            stats_start_at: text("stats_start_at")?,
            stats_end_at: text("stats_end_at")?,
            fpi_source: text("fpi_source")?,
        };
        Ok(RunDetailRecord {
            stats,
            settings,
            suspect: serde_json::from_str(&suspect).unwrap_or_default(),
            shares: shares
                .into_iter()
                .map(|s| {
                    (
                        s.0,
                        u32::try_from(s.1).unwrap_or(0),
                        u64::try_from(s.2).unwrap_or(0),
                        s.3,
                        s.4,
                        s.5,
                    )
                })
                .collect(),
            db_host_id: text("db_host_id")?,
            server_version: text("server_version")?,
            started_at: text("started_at")?,
            finished_at: text("finished_at")?,
            metrics,
            choices,
        })
    }

    pub async fn result(&self, run_id: &str) -> Result<Option<ResultRecord>, CatalogError> {
        let row = sqlx::query("SELECT tps, tps_incl_conn, transactions, failures, latency_avg_ms, latency_p99_ms FROM results WHERE run_id = ?")
            .bind(run_id)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(ResultRecord::from_row).transpose()
    }
}

#[cfg(test)]
mod location_tests {
    use super::parse_location;

    #[test]
    fn catalog_locations_are_paths_or_sqlite_urls() {
        assert_eq!(
            parse_location("/var/lib/x.db").unwrap(),
            std::path::Path::new("/var/lib/x.db")
        );
        assert_eq!(
            parse_location("rel/x.db").unwrap(),
            std::path::Path::new("rel/x.db")
        );
        assert_eq!(
            parse_location("sqlite:///tmp/x.db").unwrap(),
            std::path::Path::new("/tmp/x.db")
        );
        let e = parse_location("postgres://postgres@127.0.0.1:5494/postgres").unwrap_err();
        assert_eq!(
            e,
            "\"postgres://postgres@127.0.0.1:5494/postgres\": catalogs of scheme \"postgres\" are \
             not supported; the catalog is a SQLite file, given as a path or as sqlite://PATH"
        );
        assert!(parse_location("sqlite://").is_err());
        assert!(parse_location("  ").is_err());
    }
}
