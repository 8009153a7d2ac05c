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
pub mod metrics_plot;
pub mod plot;
pub mod probe_plot;
pub mod query;
pub mod render;
pub mod render_metrics;

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

/// The metric `name` names for this job: a pgbench column or one of the job's workload
/// metrics; empty = the job's headline metric.
fn resolve(name: &str, export: &JobExport) -> Result<Metric, ReportError> {
    let known = query::workload_metrics(export);
    let name = if name.is_empty() {
        let headline = query::headline_metric(export);
        if headline != "tps" && !known.iter().any(|(n, _, _)| *n == headline) {
            // No run has the headline metric yet.
            return Ok(Metric::Workload {
                name: headline,
                unit: String::new(),
                higher_is_better: true,
            });
        }
        headline
    } else {
        name.to_string()
    };
    Ok(Metric::resolve(&name, &known)?)
}

/// Every workload metric of a job with its per-cell statistics against the baseline.
pub fn metric_results(export: &JobExport) -> Vec<MetricResults> {
    per_metric(export, |m| analysis::cell_results(export, m))
}

/// For each workload metric of `export`, the cells `cells_of` gives for it.
fn per_metric(
    export: &JobExport,
    cells_of: impl Fn(&Metric) -> Vec<CellResult>,
) -> Vec<MetricResults> {
    query::workload_metrics(export)
        .into_iter()
        .map(|(name, unit, higher_is_better)| {
            let m = Metric::Workload {
                name: name.clone(),
                unit: unit.clone(),
                higher_is_better,
            };
            MetricResults {
                cells: cells_of(&m),
                name,
                unit,
                higher_is_better,
            }
        })
        .collect()
}

/// `QueryResults`: per-cell statistics of `req.metric` against the job's baseline cell.
pub async fn query_results(
    catalog: &Catalog,
    catalog_path: &str,
    req: &QueryResultsRequest,
) -> Result<QueryResultsResponse, ReportError> {
    let export = query::export_job(catalog, &req.job_id, false).await?;
    let metric = resolve(&req.metric, &export)?;
    let by_metric = metric_results(&export);
    Ok(QueryResultsResponse {
        job_id: req.job_id.clone(),
        cells: analysis::cell_results(&export, &metric),
        catalog_path: catalog_path.to_string(),
        by_metric,
    })
}

/// `ExportJob`: everything about a job plus its per-cell statistics.
pub async fn export_job(
    catalog: &Catalog,
    catalog_path: &str,
    req: &ExportJobRequest,
) -> Result<JobExport, ReportError> {
    let mut export = query::export_job(catalog, &req.job_id, req.include_samples).await?;
    let metric = resolve(&req.metric, &export)?;
    export.results = analysis::cell_results(&export, &metric);
    export.metric = metric.name().to_string();
    export.catalog_path = catalog_path.to_string();
    Ok(export)
}

/// `CompareJobs`: each cell of job B against the like cell of job A.
pub async fn compare_jobs(
    catalog: &Catalog,
    req: &CompareJobsRequest,
) -> Result<CompareJobsResponse, ReportError> {
    let a = query::export_job(catalog, &req.job_a, false).await?;
    let b = query::export_job(catalog, &req.job_b, false).await?;
    let metric = resolve(&req.metric, &b)?;
    let by_metric = per_metric(&b, |m| analysis::compare(&a, &b, m));
    Ok(CompareJobsResponse {
        by_metric,
        cells: analysis::compare(&a, &b, &metric),
        job_a: a.job,
        job_b: b.job,
        metric: metric.name().to_string(),
    })
}
