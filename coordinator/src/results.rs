//! The results RPCs over the catalog: a job's export read from the catalog, with the
//! statistics of [`blocklab_report`] computed on it. The Control service and the dashboard
//! both call these functions with plain arguments.

use blocklab_measure::job::*;
use blocklab_report::{ReportError, resolve};

use crate::catalog::{Catalog, CatalogError, export};

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// Per-cell statistics of `metric` (empty = the job's headline metric) against the job's
/// baseline cell. A finished job's are computed once by this binary and kept in the catalog
/// (`catalog::job_results`); later reads, also after a restart, read them back.
pub async fn query_results(
    catalog: &Catalog,
    catalog_path: &str,
    job_id: &str,
    metric: &str,
) -> Result<QueryResults, ResultsError> {
    let job = catalog.job(job_id).await?;
    let finished = job.state.is_finished();
    // The headline asked for by name or as "" is one kept row.
    let key = match metric {
        "" => job.headline_metric.as_str(),
        m => m,
    };
    if finished && let Some(json) = catalog.stored_results(job_id, key).await? {
        match serde_json::from_str::<QueryResults>(&json) {
            Ok(mut r) => {
                r.catalog_path = catalog_path.to_string();
                return Ok(r);
            }
            Err(e) => {
                tracing::warn!(job_id, metric, error = %e, "kept results do not parse; computing them again");
            }
        }
    }
    let r = compute_results(catalog, catalog_path, job_id, metric).await?;
    if finished {
        match serde_json::to_string(&r) {
            Ok(json) => {
                match catalog.store_results(job_id, key, &json).await {
                    Ok(()) => {}
                    // A standby coordinator reads; the leader keeps them.
                    Err(e @ crate::catalog::CatalogError::Fenced { .. }) => {
                        tracing::debug!(job_id, metric, error = %e, "results not kept: not the leader");
                    }
                    Err(e) => {
                        tracing::warn!(job_id, metric, error = %e, "results not kept in the catalog");
                    }
                }
            }
            Err(e) => tracing::warn!(job_id, metric, error = %e, "results not serialized"),
        }
    }
    Ok(r)
}

async fn compute_results(
    catalog: &Catalog,
    catalog_path: &str,
    job_id: &str,
    metric: &str,
) -> Result<QueryResults, ResultsError> {
    let export = export::export_job(catalog, job_id, false).await?;
    let metric = resolve(metric, &export)?;
    let r = blocklab_report::results(&export, &metric);
    let (warnings, runs_done) = catalog.run_host_warnings(job_id).await?;
    Ok(QueryResults {
        job_id: job_id.to_string(),
        cells: r.cells,
        catalog_path: catalog_path.to_string(),
        by_metric: r.by_metric,
        own_workload: blocklab_report::own_workload(&export),
        host_warnings: warnings
            .into_iter()
            .map(|(warning, runs)| HostWarning { warning, runs })
            .collect(),
        runs_done,
    })
}

/// Everything about a job plus its per-cell statistics of `metric`.
pub async fn export_job(
    catalog: &Catalog,
    catalog_path: &str,
    job_id: &str,
    metric: &str,
    include_samples: bool,
) -> Result<JobExport, ResultsError> {
    let mut export = export::export_job(catalog, job_id, include_samples).await?;
    let metric = resolve(metric, &export)?;
    export.results = blocklab_report::results(&export, &metric).cells;
    export.metric = metric.name().to_string();
    export.catalog_path = catalog_path.to_string();
    Ok(export)
}

/// Each cell of job `b` against the like cell of job `a`.
pub async fn compare_jobs(
    catalog: &Catalog,
    job_a: &str,
    job_b: &str,
    metric: &str,
) -> Result<Comparison, ResultsError> {
    let a = export::export_job(catalog, job_a, false).await?;
    let b = export::export_job(catalog, job_b, false).await?;
    let metric = resolve(metric, &b)?;
    let r = blocklab_report::compare_results(&a, &b, &metric);
    Ok(Comparison {
        by_metric: r.by_metric,
        cells: r.cells,
        job_a: a.job,
        job_b: b.job,
        metric: metric.name().to_string(),
    })
}
