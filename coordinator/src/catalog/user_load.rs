//! What the user's own workload adds to the catalog: the files a job's spec names (scripts,
//! init SQL) with their sha256, and per run the per-statement latencies and the schedule
//! figures of a rate and a latency limit.

use blocklab_spec::JobPlan;
use sqlx::{Any, Row, Transaction};

use super::{Catalog, CatalogError, LoadDetail};
use blocklab_measure::Statement;

/// The job's files, in the transaction that stores the job.
pub(super) async fn insert_job_files(
    tx: &mut Transaction<'static, Any>,
    job_id: &str,
    job: &JobPlan,
) -> Result<(), CatalogError> {
    for (role, f) in job.user_files() {
        sqlx::query("INSERT INTO job_scripts (job_id, role, name, sha256, bytes, text) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(job_id)
            .bind(role)
            .bind(&f.name)
            .bind(&f.sha256)
            .bind(i64::try_from(f.text.len()).unwrap_or(i64::MAX))
            .bind(&f.text)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// A run's per-statement latencies, in the transaction that writes its result.
pub(super) async fn insert_statements(
    tx: &mut Transaction<'static, Any>,
    run_id: &str,
    statements: &[Statement],
) -> Result<(), CatalogError> {
    for chunk in statements.chunks(super::backend::ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO run_statements (run_id, script_index, script, position, command, count, latency_avg_ms, failures) VALUES {}",
            super::backend::values_placeholders(chunk.len(), 8)
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for s in chunk {
            q = q
                .bind(run_id)
                .bind(i64::from(s.script_index))
                .bind(&s.script)
                .bind(i64::from(s.position))
                .bind(&s.command)
                .bind(i64::try_from(s.count).unwrap_or(i64::MAX))
                .bind(s.latency_avg_ms())
                .bind(i64::try_from(s.failures).unwrap_or(i64::MAX));
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

impl Catalog {
    /// The schedule figures and per-statement latencies of a done run (defaults otherwise).
    pub async fn run_load_detail(&self, run_id: &str) -> Result<LoadDetail, CatalogError> {
        let mut d = LoadDetail::default();
        if let Some(r) = sqlx::query(
            "SELECT schedule_lag_avg_ms, schedule_lag_max_ms, late, skipped, random_seed FROM results WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_optional(&self.reader)
        .await?
        {
            d.schedule_lag_avg_ms = r.try_get::<Option<f64>, _>(0)?.unwrap_or(0.0);
            d.schedule_lag_max_ms = r.try_get::<Option<f64>, _>(1)?.unwrap_or(0.0);
            d.late = u64::try_from(r.try_get::<i64, _>(2)?).unwrap_or(0);
            d.skipped = u64::try_from(r.try_get::<i64, _>(3)?).unwrap_or(0);
            d.random_seed = r.try_get::<Option<i64>, _>(4)?.map_or(0, |s| s as u64);
        }
        let rows: Vec<(String, i64, String, i64, f64, i64)> = sqlx::query_as(
            "SELECT script, position, command, count, latency_avg_ms, failures FROM run_statements WHERE run_id = $1 ORDER BY script_index, position",
        )
        .bind(run_id)
        .fetch_all(&self.reader)
        .await?;
        d.statements = rows
            .into_iter()
            .map(|(script, pos, command, count, avg, failures)| {
                (
                    script,
                    u32::try_from(pos).unwrap_or(0),
                    command,
                    u64::try_from(count).unwrap_or(0),
                    avg,
                    u64::try_from(failures).unwrap_or(0),
                )
            })
            .collect();
        Ok(d)
    }
}
