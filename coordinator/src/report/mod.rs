//! Results, comparisons, charts and reports.
//!
//! The coordinator computes every statistic: [`query::export_job`] reads one job from the
//! catalog (read-only) into a [`JobExport`], and the pure functions of [`analysis`] turn exports
//! into per-cell [`CellResult`]s (one job against its baseline cell, or two jobs' like cells).
//! The Control RPCs `QueryResults`, `ExportJob` and `CompareJobs` call [`query_results`],
//! [`export_job`] and [`compare_jobs`]; the CLI only renders what they return ([`render`],
//! [`plot`], [`html`]), so a table, a chart and a report always agree.

use blocklab_proto::v1::*;

use crate::catalog::{Catalog, CatalogError};
use crate::stats::{Metric, StatsError};

pub mod analysis;
pub mod html;
pub mod plot;
pub mod probe_plot;
pub mod query;
pub mod render;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error("format: unknown format {0:?}; allowed: table, csv, json, markdown")]
    UnknownFormat(String),
}

impl From<sqlx::Error> for ReportError {
    fn from(e: sqlx::Error) -> Self {
        ReportError::Catalog(CatalogError::Sql(e))
    }
}

/// `QueryResults`: per-cell statistics of `req.metric` against the job's baseline cell.
pub async fn query_results(
    catalog: &Catalog,
    catalog_path: &str,
    req: &QueryResultsRequest,
) -> Result<QueryResultsResponse, ReportError> {
    let metric = Metric::parse(&req.metric)?;
    let export = query::export_job(catalog, &req.job_id, false).await?;
    Ok(QueryResultsResponse {
        job_id: req.job_id.clone(),
        cells: analysis::cell_results(&export, metric),
        catalog_path: catalog_path.to_string(),
    })
}

/// `ExportJob`: everything about a job plus its per-cell statistics.
pub async fn export_job(
    catalog: &Catalog,
    catalog_path: &str,
    req: &ExportJobRequest,
) -> Result<JobExport, ReportError> {
    let metric = Metric::parse(&req.metric)?;
    let mut export = query::export_job(catalog, &req.job_id, req.include_samples).await?;
    export.results = analysis::cell_results(&export, metric);
    export.metric = metric.name().to_string();
    export.catalog_path = catalog_path.to_string();
    Ok(export)
}

/// `CompareJobs`: each cell of job B against the like cell of job A.
pub async fn compare_jobs(
    catalog: &Catalog,
    req: &CompareJobsRequest,
) -> Result<CompareJobsResponse, ReportError> {
    let metric = Metric::parse(&req.metric)?;
    let a = query::export_job(catalog, &req.job_a, false).await?;
    let b = query::export_job(catalog, &req.job_b, false).await?;
    Ok(CompareJobsResponse {
        cells: analysis::compare(&a, &b, metric),
        job_a: a.job,
        job_b: b.job,
        metric: metric.name().to_string(),
    })
}
