//! A job's page: its results, charts and verdicts rendered from its export, with its runs'
//! traces downsampled in the catalog. A finished job's page never changes (a rerun is a job of
//! its own), so it is rendered once and kept in the catalog (`job_pages`, by this binary and
//! for this catalog path, which the page names): when the job finishes, by a coordinator that
//! serves a dashboard (the scheduler calls [`job_page`] then), else at its first view. Every
//! later view, also after a restart, reads that one row instead of every run.

use crate::catalog::{Catalog, CatalogError};
use crate::results::ResultsError;

/// A job's page, and whether the job is finished (then its page is final).
pub async fn job_page(
    catalog: &Catalog,
    catalog_path: &str,
    job_id: &str,
) -> Result<(String, bool), ResultsError> {
    // A job's state only moves forward: one read finished stays finished.
    let finished = catalog.job(job_id).await?.state.is_finished();
    if finished && let Some(page) = catalog.stored_page(job_id, catalog_path).await? {
        return Ok((page, true));
    }
    let page = render(catalog, catalog_path, job_id).await?;
    if finished {
        match catalog.store_page(job_id, catalog_path, &page).await {
            Ok(()) => {}
            // A standby coordinator reads; the leader keeps it.
            Err(e @ CatalogError::Fenced { .. }) => {
                tracing::debug!(job_id, error = %e, "job page not kept: not the leader");
            }
            Err(e) => tracing::warn!(job_id, error = %e, "job page not kept in the catalog"),
        }
    }
    Ok((page, finished))
}

async fn render(
    catalog: &Catalog,
    catalog_path: &str,
    job_id: &str,
) -> Result<String, ResultsError> {
    let metric = blocklab_report::stats::Metric::Tps;
    let mut export =
        crate::results::export_job(catalog, catalog_path, job_id, metric.name(), false).await?;
    let mut series = catalog
        .sample_series(job_id, trace_points(export.runs.len()))
        .await?;
    for r in &mut export.runs {
        r.samples = series.remove(&r.run_id).unwrap_or_default();
    }
    Ok(super::pages::job(&export))
}

/// The most points a run's trace has on the job page (as many as a run's stored series holds),
/// and the fewest the budget below gives.
pub const TRACE_POINTS: u32 = crate::catalog::series::MAX_POINTS;
const TRACE_POINTS_MIN: u32 = 12;
/// Points of all a job's traces together, shared among its runs.
const TRACE_BUDGET: usize = 12_000;

/// The points per run of a job with `runs` runs: the budget shared, within the bounds.
pub fn trace_points(runs: usize) -> u32 {
    let share = TRACE_BUDGET / runs.max(1);
    u32::try_from(share)
        .unwrap_or(TRACE_POINTS)
        .clamp(TRACE_POINTS_MIN, TRACE_POINTS)
}

#[cfg(test)]
mod tests {
    use super::trace_points;

    #[test]
    fn traces_share_the_points_budget_within_the_bounds() {
        assert_eq!(trace_points(0), 300);
        assert_eq!(trace_points(40), 300);
        assert_eq!(trace_points(100), 120);
        assert_eq!(trace_points(1000), 12);
        assert_eq!(trace_points(10_000), 12);
    }
}
