//! Storing a job: its spec text, its plan, its cells and runs.

use blocklab_spec::{JobPlan, JobState, Plan, ProbeSpec, Spec};
use sqlx::{Any, Transaction};

use super::{Catalog, CatalogError, now};

impl Catalog {
    /// Stores a validated job (its spec text, its plan, its cells and runs) in one
    /// transaction.
    pub async fn insert_job(&self, spec_text: &str, job: &JobPlan) -> Result<String, CatalogError> {
        self.insert_job_rerun(spec_text, job, None).await
    }

    /// Like `insert_job`, recording the job it reruns.
    pub async fn insert_job_rerun(
        &self,
        spec_text: &str,
        job: &JobPlan,
        rerun_of: Option<&str>,
    ) -> Result<String, CatalogError> {
        let job_id = uuid::Uuid::new_v4().to_string();
        let mut tx = self.write().await?;
        let (order, seed) = match job {
            JobPlan::Benchmark { spec, .. } => (spec.order.to_string(), spec.order.seed()),
            JobPlan::Probe(_) => ("interleaved".to_string(), None),
        };
        sqlx::query("INSERT INTO jobs (job_id, name, spec_toml, state, run_order, seed, created_at, plan_json, kind, workload, headline_metric, random_seed, rerun_of) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)")
            .bind(&job_id)
            .bind(job.name())
            .bind(spec_text)
            .bind(JobState::Queued.as_str())
            .bind(order)
            .bind(seed.map(|s| s as i64))
            .bind(now())
            .bind(job.to_json())
            .bind(job.kind().as_str())
            .bind(job.workload())
            .bind(job.headline_metric())
            .bind(job.random_seed().map(|s| s as i64))
            .bind(rerun_of)
            .execute(&mut *tx)
            .await?;
        super::user_load::insert_job_files(&mut tx, &job_id, job).await?;
        match job {
            JobPlan::Benchmark { spec, plan } => insert_cells(&mut tx, &job_id, spec, plan).await?,
            JobPlan::Probe(p) => insert_probe_cells(&mut tx, &job_id, p).await?,
        }
        tx.commit().await?;
        Ok(job_id)
    }

    /// The stored plan of a job.
    pub async fn job_plan(&self, job_id: &str) -> Result<JobPlan, CatalogError> {
        let text: Option<Option<String>> =
            sqlx::query_scalar("SELECT plan_json FROM jobs WHERE job_id = $1")
                .bind(job_id)
                .fetch_optional(&self.reader)
                .await?;
        let text = text
            .ok_or_else(|| CatalogError::JobNotFound(job_id.to_string()))?
            .ok_or_else(|| CatalogError::Plan {
                job_id: job_id.to_string(),
                message: "no plan stored".into(),
            })?;
        JobPlan::from_json(&text).map_err(|e| CatalogError::Plan {
            job_id: job_id.to_string(),
            message: e.to_string(),
        })
    }

    /// Stores the plan of every job a catalog from before plans were stored holds: its spec
    /// text parsed once, here. A job whose text no longer parses keeps no plan (and fails
    /// when resumed, naming why).
    pub(super) async fn store_missing_plans(&self) -> Result<(), CatalogError> {
        let rows: Vec<(String, String, Option<i64>)> =
            sqlx::query_as("SELECT job_id, spec_toml, seed FROM jobs WHERE plan_json IS NULL")
                .fetch_all(&self.writer)
                .await?;
        for (job_id, text, seed) in rows {
            let job = match JobPlan::parse(&text, seed.map(|s| s as u64)) {
                Ok(job) => job,
                Err(e) => {
                    tracing::warn!(job_id, error = %e, "stored spec does not parse; job keeps no plan");
                    continue;
                }
            };
            let mut tx = self.write().await?;
            sqlx::query("UPDATE jobs SET plan_json = $1, kind = $2, workload = $3, headline_metric = $4 WHERE job_id = $5")
                .bind(job.to_json())
                .bind(job.kind().as_str())
                .bind(job.workload())
                .bind(job.headline_metric())
                .bind(job_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        }
        Ok(())
    }
}

/// A benchmark's cells and runs.
async fn insert_cells(
    tx: &mut Transaction<'static, Any>,
    job_id: &str,
    spec: &Spec,
    plan: &Plan,
) -> Result<(), CatalogError> {
    for c in &plan.cells {
        sqlx::query("INSERT INTO cells (job_id, cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline, dims_json) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
                .bind(job_id)
                .bind(i64::from(c.index))
                .bind(c.label_in(spec))
                .bind(i64::from(c.block_size_kb))
                .bind(i64::from(c.wal_block_size_kb))
                .bind(i64::from(c.clients))
                .bind(super::flag(c.is_baseline))
                .bind(c.dims_json())
                .execute(&mut **tx)
                .await?;
    }
    insert_runs(tx, job_id, &plan.runs).await
}

/// Queued runs of a job.
async fn insert_runs(
    tx: &mut Transaction<'static, Any>,
    job_id: &str,
    runs: &[blocklab_spec::PlannedRun],
) -> Result<(), CatalogError> {
    for r in runs {
        sqlx::query("INSERT INTO runs (run_id, job_id, cell_index, repetition, sequence, state, stage) VALUES ($1, $2, $3, $4, $5, 'queued', 'queued')")
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(job_id)
                .bind(i64::from(r.cell_index))
                .bind(i64::from(r.repetition))
                .bind(i64::from(r.sequence))
                .execute(&mut **tx)
                .await?;
    }
    Ok(())
}

/// A probe's cells (one per target) and runs (`repetitions` each, interleaved).
async fn insert_probe_cells(
    tx: &mut Transaction<'static, Any>,
    job_id: &str,
    p: &ProbeSpec,
) -> Result<(), CatalogError> {
    for (i, target) in p.targets.iter().enumerate() {
        sqlx::query("INSERT INTO cells (job_id, cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline, dims_json) VALUES ($1, $2, $3, 0, 0, 0, 0, $4)")
                .bind(job_id)
                .bind(i as i64)
                .bind(format!("probe {target}"))
                .bind(serde_json::json!({ "probe": target }).to_string())
                .execute(&mut **tx)
                .await?;
    }
    let mut sequence = 0i64;
    for rep in 0..p.repetitions {
        for i in 0..p.targets.len() {
            sqlx::query("INSERT INTO runs (run_id, job_id, cell_index, repetition, sequence, state, stage) VALUES ($1, $2, $3, $4, $5, 'queued', 'queued')")
                    .bind(uuid::Uuid::new_v4().to_string())
                    .bind(job_id)
                    .bind(i as i64)
                    .bind(i64::from(rep))
                    .bind(sequence)
                    .execute(&mut **tx)
                    .await?;
            sequence += 1;
        }
    }
    Ok(())
}

impl Catalog {
    /// Adds runs to a job (the rounds adaptive repetitions add), queued, in one transaction.
    pub async fn append_runs(
        &self,
        job_id: &str,
        runs: &[blocklab_spec::PlannedRun],
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        insert_runs(&mut tx, job_id, runs).await?;
        tx.commit().await?;
        Ok(())
    }
}
