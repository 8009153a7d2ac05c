//! A run's life in the catalog: attempts, stages, proof of the server, outcomes (done,
//! failed, lost, cancelled) and requeueing. Every write checks that the attempt is current.

use sqlx::{Any, Transaction};

use blocklab_spec::{JobState, Stage};

use super::{
    Catalog, CatalogError, FpiSource, RunChoices, RunOutcome, ServerRecord, flag, now, opt_flag,
};

impl Catalog {
    /// Starts a new attempt of a run on the given hosts; returns the attempt number.
    pub async fn begin_attempt(
        &self,
        run_id: &str,
        db_host: &str,
        worker: &str,
    ) -> Result<u32, CatalogError> {
        let mut tx = self.write().await?;
        let facts: Option<String> =
            sqlx::query_scalar("SELECT facts_json FROM hosts WHERE host_id = $1")
                .bind(db_host)
                .fetch_optional(&mut *tx)
                .await?;
        let warnings = facts
            .and_then(|f| serde_json::from_str::<serde_json::Value>(&f).ok())
            .and_then(|f| f.get("warnings").cloned())
            .filter(|w| !w.is_null())
            .map(|w| w.to_string());
        let attempt: i64 = sqlx::query_scalar(
            "UPDATE runs SET attempt = attempt + 1, state = 'running', stage = 'starting', error = NULL, log_tail = NULL,
               db_host_id = $1, worker_host_id = $2, started_at = $3, finished_at = NULL, host_warnings = $4
             WHERE run_id = $5 RETURNING attempt",
        )
        .bind(db_host)
        .bind((!worker.is_empty()).then_some(worker))
        .bind(now())
        .bind(warnings)
        .bind(run_id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(u32::try_from(attempt).unwrap_or(u32::MAX))
    }

    /// The warnings in force on the database host of a job's done runs, each with the number
    /// of runs it held for (in the order they first appeared), and the number of done runs.
    pub async fn run_host_warnings(
        &self,
        job_id: &str,
    ) -> Result<(Vec<(String, u32)>, u32), CatalogError> {
        let stored: Vec<(Option<String>,)> = sqlx::query_as(
            "SELECT host_warnings FROM runs WHERE job_id = $1 AND state = 'done' ORDER BY sequence",
        )
        .bind(job_id)
        .fetch_all(&self.reader)
        .await?;
        let mut warnings: Vec<(String, u32)> = Vec::new();
        for (text,) in stored {
            let Some(serde_json::Value::Array(items)) =
                text.and_then(|t| serde_json::from_str(&t).ok())
            else {
                continue;
            };
            for item in items {
                let w = match item {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                match warnings.iter_mut().find(|(seen, _)| *seen == w) {
                    Some((_, n)) => *n = n.saturating_add(1),
                    None => warnings.push((w, 1)),
                }
            }
        }
        let done: i64 =
            sqlx::query_scalar("SELECT count(*) FROM runs WHERE job_id = $1 AND state = 'done'")
                .bind(job_id)
                .fetch_one(&self.reader)
                .await?;
        Ok((warnings, u32::try_from(done).unwrap_or(u32::MAX)))
    }

    /// Moves a running attempt to a new stage; ignored if the attempt is no longer current.
    pub async fn set_stage(
        &self,
        run_id: &str,
        attempt: u32,
        stage: Stage,
    ) -> Result<bool, CatalogError> {
        let mut tx = self.write().await?;
        let n = sqlx::query(
            "UPDATE runs SET stage = $1 WHERE run_id = $2 AND attempt = $3 AND state = 'running'",
        )
        .bind(stage.as_str())
        .bind(run_id)
        .bind(i64::from(attempt))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(n == 1)
    }

    /// Stores what the agent proved about the live server, then moves to `loading-data`.
    pub async fn record_server(
        &self,
        run_id: &str,
        attempt: u32,
        s: &ServerRecord,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query(
            "UPDATE runs SET build_key = $1, build_reused = $2, server_version = $3, block_size = $4, wal_block_size = $5,
               server_address = $6, stage = 'loading-data'
             WHERE run_id = $7 AND attempt = $8 AND state = 'running'",
        )
        .bind(&s.build_key)
        .bind(flag(s.build_reused))
        .bind(&s.server_version)
        .bind(i64::from(s.block_size))
        .bind(i64::from(s.wal_block_size))
        .bind(&s.server_address)
        .bind(run_id)
        .bind(i64::from(attempt))
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM run_settings WHERE run_id = $1")
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        for (name, setting, unit, source) in &s.settings {
            sqlx::query("INSERT INTO run_settings (run_id, name, setting, unit, source) VALUES ($1, $2, $3, $4, $5)")
                .bind(run_id)
                .bind(name)
                .bind(setting)
                .bind(unit)
                .bind(source)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Records what the run's cache-control choices did and where its server kept WAL.
    pub async fn record_run_choices(
        &self,
        run_id: &str,
        attempt: u32,
        c: &RunChoices,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query(
            "UPDATE runs SET os_cache_dropped = coalesce($1, os_cache_dropped), checkpoint_before = coalesce($2, checkpoint_before),
               wal_dir = coalesce($3, wal_dir), postmaster_start_time = coalesce($4, postmaster_start_time),
               server_restarted = coalesce($5, server_restarted), stats_start_at = coalesce($6, stats_start_at),
               stats_end_at = coalesce($7, stats_end_at), fpi_source = coalesce($8, fpi_source)
             WHERE run_id = $9 AND attempt = $10 AND state = 'running'",
        )
        .bind(opt_flag(c.os_cache_dropped))
        .bind(opt_flag(c.checkpoint_before))
        .bind(c.wal_dir.as_deref())
        .bind(c.postmaster_start_time.as_deref())
        .bind(opt_flag(c.server_restarted))
        .bind(c.stats_start_at.as_deref())
        .bind(c.stats_end_at.as_deref())
        .bind(c.fpi_source.map(FpiSource::as_str))
        .bind(run_id)
        .bind(i64::from(attempt))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Writes the result and marks the run done, in one transaction. Returns false (and
    /// writes nothing) if the attempt is no longer current.
    pub async fn finish_run(
        &self,
        run_id: &str,
        attempt: u32,
        r: &blocklab_measure::LoadResult,
    ) -> Result<bool, CatalogError> {
        let outcome = RunOutcome {
            result: r.clone(),
            ..RunOutcome::default()
        };
        self.finish_run_with(run_id, attempt, &outcome).await
    }

    /// Writes a run's merged result, each worker's share, the server-statistics deltas and
    /// the suspect reasons, and marks the run done, all in one transaction. Returns false
    /// (and writes nothing) if the attempt is no longer current.
    pub async fn finish_run_with(
        &self,
        run_id: &str,
        attempt: u32,
        o: &RunOutcome,
    ) -> Result<bool, CatalogError> {
        let mut tx = self.write().await?;
        let suspect = (!o.suspect.is_empty())
            .then(|| serde_json::to_string(&o.suspect).unwrap_or_else(|_| "[]".into()));
        let n = sqlx::query("UPDATE runs SET state = 'done', stage = 'done', finished_at = $1, suspect_json = $2 WHERE run_id = $3 AND attempt = $4 AND state = 'running'")
            .bind(now())
            .bind(suspect)
            .bind(run_id)
            .bind(i64::from(attempt))
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        insert_result(&mut tx, run_id, &o.result).await?;
        for (host, clients, r) in &o.shares {
            sqlx::query(
                "INSERT INTO result_shares (run_id, worker_host_id, clients, transactions, failures, tps, latency_avg_ms, latency_p99_ms, client_cpu_user_s, client_cpu_system_s)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(run_id)
            .bind(host)
            .bind(i64::from(*clients))
            .bind(i64::try_from(r.transactions).unwrap_or(i64::MAX))
            .bind(i64::try_from(r.failures).unwrap_or(i64::MAX))
            .bind(r.tps_excluding_connections)
            .bind(r.latency_avg_ms)
            .bind(r.latency_p99_ms)
            .bind(r.client_cpu_user_s)
            .bind(r.client_cpu_system_s)
            .execute(&mut *tx)
            .await?;
        }
        for (name, delta) in &o.stats {
            sqlx::query("INSERT INTO run_stats (run_id, name, delta) VALUES ($1, $2, $3)")
                .bind(run_id)
                .bind(name)
                .bind(delta)
                .execute(&mut *tx)
                .await?;
        }
        for (position, m) in o.metrics.iter().enumerate() {
            sqlx::query("INSERT INTO run_metrics (run_id, name, value, unit, higher_is_better, position) VALUES ($1, $2, $3, $4, $5, $6)")
                .bind(run_id)
                .bind(&m.name)
                .bind(if m.value.is_finite() { m.value } else { 0.0 })
                .bind(&m.unit)
                .bind(flag(m.higher_is_better))
                .bind(i64::try_from(position).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Marks an attempt failed at `stage`; ignored if the attempt is no longer current.
    pub async fn fail_run(
        &self,
        run_id: &str,
        attempt: u32,
        stage: Stage,
        reason: &str,
        log_tail: &str,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE runs SET state = 'failed', stage = $1, error = $2, log_tail = $3, finished_at = $4 WHERE run_id = $5 AND attempt = $6 AND state = 'running'")
            .bind(stage.as_str())
            .bind(reason)
            .bind(log_tail)
            .bind(now())
            .bind(run_id)
            .bind(i64::from(attempt))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks an attempt lost (a host vanished during it); ignored if no longer current.
    pub async fn lose_run(
        &self,
        run_id: &str,
        attempt: u32,
        stage: Stage,
        reason: &str,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE runs SET state = 'lost', stage = $1, error = $2, finished_at = $3 WHERE run_id = $4 AND attempt = $5 AND state = 'running'")
            .bind(stage.as_str())
            .bind(reason)
            .bind(now())
            .bind(run_id)
            .bind(i64::from(attempt))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Lost runs of a job go back to the queue while they have attempts left; the others
    /// fail. Returns how many were requeued.
    pub async fn requeue_lost(&self, job_id: &str, max_attempts: u32) -> Result<u64, CatalogError> {
        let mut tx = self.write().await?;
        let requeued = sqlx::query(
            "UPDATE runs SET state = 'queued' WHERE job_id = $1 AND state = 'lost' AND attempt < $2",
        )
        .bind(job_id)
        .bind(i64::from(max_attempts))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query("UPDATE runs SET state = 'failed', error = 'lost ' || attempt || ' times, last: ' || coalesce(error, '') WHERE job_id = $1 AND state = 'lost'")
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(requeued)
    }

    /// Fails every queued run of a job (used when it cannot proceed at all).
    pub async fn fail_queued_runs(
        &self,
        job_id: &str,
        stage: Stage,
        reason: &str,
        cell_filter: Option<&[u32]>,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        let runs: Vec<(String, i64)> = sqlx::query_as(
            "SELECT run_id, cell_index FROM runs WHERE job_id = $1 AND state = 'queued'",
        )
        .bind(job_id)
        .fetch_all(&mut *tx)
        .await?;
        for (run_id, cell) in runs {
            let hit = cell_filter.is_none_or(|f| f.iter().any(|&c| i64::from(c) == cell));
            if hit {
                sqlx::query("UPDATE runs SET state = 'failed', stage = $1, error = $2, finished_at = $3 WHERE run_id = $4")
                    .bind(stage.as_str())
                    .bind(reason)
                    .bind(now())
                    .bind(&run_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Cancels a job that has not finished: the job and its queued runs become cancelled
    /// (a running run is cancelled by its driver). Returns the job's state and how many runs
    /// were cancelled here.
    pub async fn cancel_job(&self, job_id: &str) -> Result<(String, u64), CatalogError> {
        let mut tx = self.write().await?;
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM jobs WHERE job_id = $1")
            .bind(job_id)
            .fetch_optional(&mut *tx)
            .await?;
        let state = state.ok_or_else(|| CatalogError::JobNotFound(job_id.to_string()))?;
        if state.parse::<JobState>().is_ok_and(JobState::is_finished) {
            tx.rollback().await?;
            return Ok((state, 0));
        }
        let n = sqlx::query("UPDATE runs SET state = 'cancelled', stage = 'cancelled', finished_at = $1 WHERE job_id = $2 AND state = 'queued'")
            .bind(now())
            .bind(job_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("UPDATE jobs SET state = 'cancelled', error = 'cancelled by request', finished_at = $1, waiting = NULL WHERE job_id = $2")
            .bind(now())
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(("cancelled".into(), n))
    }

    /// Marks a running attempt cancelled.
    pub async fn cancel_run(&self, run_id: &str, attempt: u32) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        sqlx::query("UPDATE runs SET state = 'cancelled', error = 'cancelled by request', finished_at = $1 WHERE run_id = $2 AND attempt = $3 AND state = 'running'")
            .bind(now())
            .bind(run_id)
            .bind(i64::from(attempt))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Runs left `running` by a coordinator that stopped are marked lost and requeued.
    pub async fn requeue_interrupted(&self) -> Result<u64, CatalogError> {
        let mut tx = self.write().await?;
        let n = sqlx::query("UPDATE runs SET state = 'queued', stage = 'queued', error = 'interrupted by coordinator restart' WHERE state = 'running'")
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(n)
    }
}

async fn insert_result(
    tx: &mut Transaction<'static, Any>,
    run_id: &str,
    r: &blocklab_measure::LoadResult,
) -> Result<(), CatalogError> {
    sqlx::query(
        "INSERT INTO results (run_id, transactions, failures, tps, tps_incl_conn, latency_avg_ms, latency_stddev_ms,
           latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_p999_ms, latency_max_ms, connection_time_ms,
           measured_seconds, client_cpu_user_s, client_cpu_system_s, latency_histogram)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
    .bind(run_id)
    .bind(i64::try_from(r.transactions).unwrap_or(i64::MAX))
    .bind(i64::try_from(r.failures).unwrap_or(i64::MAX))
    .bind(r.tps_excluding_connections)
    .bind(r.tps_including_connections)
    .bind(r.latency_avg_ms)
    .bind(r.latency_stddev_ms)
    .bind(r.latency_p50_ms)
    .bind(r.latency_p90_ms)
    .bind(r.latency_p99_ms)
    .bind(r.latency_p999_ms)
    .bind(r.latency_max_ms)
    .bind(r.connection_time_ms)
    .bind(r.measured_seconds)
    .bind(r.client_cpu_user_s)
    .bind(r.client_cpu_system_s)
    .bind(&r.latency_histogram)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE results SET retries = $1, skipped = $2, late = $3, random_seed = $4, schedule_lag_avg_ms = $5, schedule_lag_max_ms = $6 WHERE run_id = $7",
    )
    .bind(i64::try_from(r.retries).unwrap_or(i64::MAX))
    .bind(i64::try_from(r.skipped).unwrap_or(i64::MAX))
    .bind(i64::try_from(r.late).unwrap_or(i64::MAX))
    .bind((r.random_seed != 0).then_some(r.random_seed as i64))
    .bind(r.schedule_lag_avg_ms)
    .bind(r.schedule_lag_max_ms)
    .bind(run_id)
    .execute(&mut **tx)
    .await?;
    super::user_load::insert_statements(tx, run_id, &r.statements).await?;
    // Many rows per statement: a run of hours has thousands of samples.
    for chunk in r.samples.chunks(super::backend::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO run_samples (run_id, second, transactions, latency_avg_ms, failures) VALUES {}",
            super::backend::values_placeholders(chunk.len(), 5)
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for s in chunk {
            q = q
                .bind(run_id)
                .bind(i64::from(s.second))
                .bind(i64::try_from(s.transactions).unwrap_or(i64::MAX))
                .bind(s.latency_avg_ms)
                .bind(i64::try_from(s.failures).unwrap_or(i64::MAX));
        }
        q.execute(&mut **tx).await?;
    }
    super::series::insert(tx, run_id, &r.samples).await?;
    Ok(())
}
