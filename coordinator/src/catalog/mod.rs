//! The catalog: a SQLite file (the default) or a PostgreSQL database (`backend.rs`), with
//! embedded migrations, one writer connection (every write is one transaction; on SQLite a
//! `BEGIN IMMEDIATE`) and a small read pool. Queries are written once, with `$N` placeholders,
//! for sqlx's `Any` driver.

use std::path::Path;

use sqlx::{Any, AnyPool, Row, Transaction};

use blocklab_spec::JobState;

pub use backend::{Backend, Location, READERS, parse_location};
pub use error::CatalogError;
pub use fence::Leader;
pub use rows::*;

mod backend;
pub mod copy;
pub mod credentials;
mod error;
pub mod export;
mod fence;
pub mod history;
pub mod job_results;
mod jobs;
mod lease;
pub mod lock;
mod migrations;
mod probes;
mod rows;
mod runs;
pub mod series;
mod user_load;

pub(crate) use backend::{flag, opt_flag};

/// Changes of a host's facts kept (a row is written only when the facts differ from the
/// last row); older ones are removed.
pub const FACTS_KEPT_PER_HOST: usize = 100;

/// Handle to the catalog; cheap to clone.
#[derive(Clone)]
pub struct Catalog {
    backend: Backend,
    writer: AnyPool,
    reader: AnyPool,
    /// The lease's own connection (renewals never queue behind scheduling writes).
    lease_pool: AnyPool,
    /// Set when coordinators share the catalog: writes only while this one leads.
    fence: Option<std::sync::Arc<fence::Fence>>,
}

pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

impl Catalog {
    /// Opens (creating if missing) the SQLite catalog file and applies migrations.
    pub async fn open(path: &Path) -> Result<Self, CatalogError> {
        Self::connect(&Location::Sqlite(path.to_path_buf())).await
    }

    /// Opens the catalog at `location` (a SQLite file is created if missing) and applies the
    /// backend's migrations.
    pub async fn connect(location: &Location) -> Result<Self, CatalogError> {
        let pools = backend::connect(location).await?;
        let catalog = Self {
            backend: location.backend(),
            writer: pools.writer,
            reader: pools.reader,
            lease_pool: pools.lease,
            fence: None,
        };
        catalog.store_missing_plans().await?;
        Ok(catalog)
    }

    /// Ends this coordinator's use of the catalog. On SQLite the write-ahead log is first
    /// checkpointed into the file and truncated, so the file alone holds everything (a copy of
    /// `catalog.db` without its `-wal` is whole); then the connections close, waiting at most
    /// `grace` for ones still in use.
    pub async fn close(&self, grace: std::time::Duration) {
        if self.backend == Backend::Sqlite {
            match sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_optional(&self.writer)
                .await
            {
                Ok(_) => tracing::info!("catalog checkpointed"),
                Err(e) => tracing::warn!(error = %e, "cannot checkpoint the catalog at shutdown"),
            }
        }
        let closed = async {
            self.reader.close().await;
            self.lease_pool.close().await;
            self.writer.close().await;
        };
        if tokio::time::timeout(grace, closed).await.is_err() {
            tracing::warn!(?grace, "catalog connections still in use at shutdown");
        }
    }

    /// Which backend the catalog is on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Begins a write: every write of the catalog is one transaction on the writer
    /// connection; on a fenced catalog only while this coordinator leads (`fence.rs`).
    pub(crate) async fn write(&self) -> Result<Transaction<'static, Any>, CatalogError> {
        // A coordinator that does not lead is refused before it touches the database.
        if let Some(fence) = &self.fence
            && fence.epoch.load(std::sync::atomic::Ordering::Acquire) == 0
        {
            return Err(CatalogError::Fenced { epoch: None });
        }
        let mut tx = backend::begin_write(self.backend, &self.writer).await?;
        if let Some(fence) = &self.fence {
            fence::check(fence, &mut tx).await?;
        }
        Ok(tx)
    }

    pub fn reader(&self) -> &AnyPool {
        &self.reader
    }

    /// Records a host's hello: upserts the host and keeps its facts' history.
    pub async fn upsert_host(&self, h: &HostRecord) -> Result<(), CatalogError> {
        let now = now();
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT INTO hosts (host_id, role, labels, address, version, facts_json, first_seen, last_seen)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT(host_id) DO UPDATE SET role = excluded.role, labels = excluded.labels,
               address = excluded.address, version = excluded.version,
               facts_json = excluded.facts_json, last_seen = excluded.last_seen",
        )
        .bind(&h.host_id)
        .bind(h.role.as_str())
        .bind(serde_json::to_string(&h.labels).unwrap_or_else(|_| "[]".into()))
        .bind(&h.address)
        .bind(&h.version)
        .bind(&h.facts_json)
        .bind(&now)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        let last: Option<String> = sqlx::query_scalar(
            "SELECT facts_json FROM host_facts WHERE host_id = $1 ORDER BY seen_at DESC LIMIT 1",
        )
        .bind(&h.host_id)
        .fetch_optional(&mut *tx)
        .await?;
        if last.as_deref() != Some(h.facts_json.as_str()) {
            sqlx::query(
                "INSERT INTO host_facts (host_id, seen_at, facts_json) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(&h.host_id)
            .bind(&now)
            .bind(&h.facts_json)
            .execute(&mut *tx)
            .await?;
            // A host's facts history is bounded: the newest changes are kept.
            sqlx::query(
                "DELETE FROM host_facts WHERE host_id = $1 AND seen_at NOT IN
                   (SELECT seen_at FROM host_facts WHERE host_id = $2 ORDER BY seen_at DESC LIMIT $3)",
            )
            .bind(&h.host_id)
            .bind(&h.host_id)
            .bind(i64::try_from(FACTS_KEPT_PER_HOST).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn touch_host(&self, host_id: &str) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE hosts SET last_seen = $1 WHERE host_id = $2")
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
            sqlx::query("UPDATE hosts SET last_seen = $1 WHERE host_id = $2")
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
        let facts: Option<String> =
            sqlx::query_scalar("SELECT facts_json FROM hosts WHERE host_id = $1")
                .bind(host_id)
                .fetch_optional(&self.reader)
                .await?;
        let cores = facts
            .and_then(|f| serde_json::from_str::<serde_json::Value>(&f).ok())
            .and_then(|f| f.get("cpu_cores").and_then(serde_json::Value::as_i64));
        Ok(cores.and_then(|c| u32::try_from(c).ok()).filter(|c| *c > 0))
    }

    pub async fn hosts(&self) -> Result<Vec<HostRecord>, CatalogError> {
        let rows = sqlx::query("SELECT host_id, role, labels, address, version, facts_json, last_seen FROM hosts ORDER BY role, host_id")
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(HostRecord::from_row).collect()
    }

    /// Records why a job waits (`None`: it no longer does).
    pub async fn set_job_waiting(
        &self,
        job_id: &str,
        waiting: Option<&str>,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE jobs SET waiting = $1 WHERE job_id = $2")
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
            "UPDATE jobs SET build_progress = $1 WHERE job_id = $2 AND (state = 'building' OR $3 IS NULL)",
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
            "UPDATE jobs SET state = $1, error = coalesce($2, error),
               started_at = CASE WHEN started_at IS NULL AND $3 NOT IN ('queued') THEN $4 ELSE started_at END,
               finished_at = CASE WHEN $5 THEN $6 ELSE finished_at END,
               waiting = CASE WHEN $7 THEN NULL ELSE waiting END,
               build_progress = CASE WHEN $8 = 'building' THEN build_progress ELSE NULL END
             WHERE job_id = $9 AND state <> 'cancelled'",
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
        sqlx::query("UPDATE jobs SET db_host_id = $1 WHERE job_id = $2")
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
        sqlx::query("INSERT INTO job_hosts (job_id, slot, host_id) VALUES ($1, $2, $3)")
            .bind(job_id)
            .bind(i64::from(slot))
            .bind(host_id)
            .execute(&mut *tx)
            .await?;
        if slot == 0 {
            sqlx::query("UPDATE jobs SET db_host_id = $1 WHERE job_id = $2")
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
            sqlx::query_as("SELECT slot, host_id FROM job_hosts WHERE job_id = $1 ORDER BY slot")
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
        let rows = sqlx::query("SELECT cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline FROM cells WHERE job_id = $1 ORDER BY cell_index")
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
            "INSERT INTO builds (job_id, host_id, build_key, block_size_kb, wal_block_size_kb, source_sha256, pg_version, reused, build_seconds, recorded_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (job_id, build_key) DO UPDATE SET host_id = excluded.host_id,
               block_size_kb = excluded.block_size_kb, wal_block_size_kb = excluded.wal_block_size_kb,
               source_sha256 = excluded.source_sha256, pg_version = excluded.pg_version,
               reused = excluded.reused, build_seconds = excluded.build_seconds,
               recorded_at = excluded.recorded_at",
        )
        .bind(job_id)
        .bind(host_id)
        .bind(&b.build_key)
        .bind(i64::from(b.block_size_kb))
        .bind(i64::from(b.wal_block_size_kb))
        .bind(&b.source_sha256)
        .bind(&b.pg_version)
        .bind(flag(b.reused))
        .bind(b.build_seconds)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn builds(&self, job_id: &str) -> Result<Vec<BuildRecord>, CatalogError> {
        let rows = sqlx::query("SELECT build_key, block_size_kb, wal_block_size_kb, source_sha256, pg_version, reused, build_seconds FROM builds WHERE job_id = $1 ORDER BY block_size_kb, wal_block_size_kb")
            .bind(job_id)
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(BuildRecord::from_row).collect()
    }

    /// Server-statistics deltas, effective settings, suspect reasons and worker shares of a run.
    pub async fn run_detail(&self, run_id: &str) -> Result<RunDetailRecord, CatalogError> {
        let stats =
            sqlx::query_as("SELECT name, delta FROM run_stats WHERE run_id = $1 ORDER BY name")
                .bind(run_id)
                .fetch_all(&self.reader)
                .await?;
        let settings = sqlx::query_as(
            "SELECT name, setting, unit, source FROM run_settings WHERE run_id = $1 ORDER BY name",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        let shares: Vec<(String, i64, i64, f64, f64, f64)> = sqlx::query_as(
            "SELECT worker_host_id, clients, transactions, tps, client_cpu_user_s, client_cpu_system_s FROM result_shares WHERE run_id = $1 ORDER BY worker_host_id",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        let metrics: Vec<(String, f64, String, i64)> = sqlx::query_as(
            "SELECT name, value, unit, higher_is_better FROM run_metrics WHERE run_id = $1 ORDER BY position",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        let metrics = metrics
            .into_iter()
            .map(|(n, v, u, h)| (n, v, u, h != 0))
            .collect();
        let run = sqlx::query("SELECT suspect_json, db_host_id, server_version, started_at, finished_at, os_cache_dropped, server_restarted, checkpoint_before, wal_dir, stats_start_at, stats_end_at, fpi_source FROM runs WHERE run_id = $1")
            .bind(run_id)
            .fetch_one(&self.reader)
            .await?;
        let text = |col: &str| -> Result<String, CatalogError> {
            Ok(run.try_get::<Option<String>, _>(col)?.unwrap_or_default())
        };
        let suspect = text("suspect_json")?;
        let flag =
            |col: &str| -> Result<Option<bool>, CatalogError> { Ok(rows::flag_of(&run, col)?) };
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
        let row = sqlx::query("SELECT tps, tps_incl_conn, transactions, failures, latency_avg_ms, latency_p99_ms FROM results WHERE run_id = $1")
            .bind(run_id)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(ResultRecord::from_row).transpose()
    }
}
