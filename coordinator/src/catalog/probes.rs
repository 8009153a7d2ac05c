//! I/O probe results: a probe run's rows, written with its `done`, and a probe job's summary.

use super::{Catalog, CatalogError, ProbeSummaryRow, Probed, flag, now};

impl Catalog {
    /// Writes a probe run's rows and marks it done in one transaction.
    pub async fn finish_probe_run(
        &self,
        job_id: &str,
        run_id: &str,
        attempt: u32,
        host_id: &str,
        target: &str,
        r: &Probed,
    ) -> Result<bool, CatalogError> {
        let mut tx = self.write().await?;
        let n = sqlx::query("UPDATE runs SET state = 'done', stage = 'done', finished_at = $1 WHERE run_id = $2 AND attempt = $3 AND state = 'running'")
            .bind(now())
            .bind(run_id)
            .bind(i64::from(attempt))
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
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            )
            .bind(run_id)
            .bind(job_id)
            .bind(host_id)
            .bind(target)
            .bind(&row.mode)
            .bind(i64::from(row.chunk_bytes))
            .bind(row.mb_per_s)
            .bind(row.user_cpu_s)
            .bind(row.system_cpu_s)
            .bind(row.latency_avg_us)
            .bind(row.latency_p99_us)
            .bind(flag(row.cache_dropped))
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
             FROM probe_results WHERE job_id = $1 GROUP BY target, mode, chunk_bytes ORDER BY target, mode, chunk_bytes",
        )
        .bind(job_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(ProbeSummaryRow::from_row).collect()
    }
}
