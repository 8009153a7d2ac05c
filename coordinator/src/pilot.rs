//! `duration = "auto"` with a `budget`: at submit the coordinator reads the last done jobs
//! like the new one from its catalog and gives each auto window the length that buys the
//! narrowest interval of the change within the budget ([`blocklab_report::pilot`]); without
//! history the pilot window stays.

use blocklab_report::pilot;
use blocklab_spec::{JobKind, JobPlan, JobState, Spec};

use crate::catalog::{Catalog, CatalogError, export::export_job};

/// The done benchmark jobs like `spec`'s, newest first, with their samples. Parsing the
/// earlier specs runs off the async threads, as planning does.
async fn earlier_like(
    catalog: &Catalog,
    spec: &Spec,
) -> Result<Vec<blocklab_measure::job::JobExport>, CatalogError> {
    let mut jobs = catalog.jobs().await?;
    jobs.retain(|j| j.state == JobState::Done && j.kind == JobKind::Benchmark);
    jobs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    jobs.truncate(pilot::LOOK_BACK);
    let candidates: Vec<(String, String)> =
        jobs.into_iter().map(|j| (j.job_id, j.spec_toml)).collect();
    let mine = spec.clone();
    let like = tokio::task::spawn_blocking(move || {
        candidates
            .into_iter()
            .filter(|(_, toml)| pilot::is_like(&mine, toml))
            .map(|(id, _)| id)
            .take(pilot::MAX_JOBS)
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_else(|e| {
        tracing::error!(error = %e, "reading earlier jobs' specs failed: no history");
        Vec::new()
    });
    let mut out = Vec::with_capacity(like.len());
    for id in &like {
        out.push(export_job(catalog, id, true).await?);
    }
    Ok(out)
}

/// The plan with every `duration = "auto"` window chosen; unchanged without one.
pub async fn choose_windows(catalog: &Catalog, job: JobPlan) -> Result<JobPlan, CatalogError> {
    let JobPlan::Benchmark { mut spec, plan } = job else {
        return Ok(job);
    };
    let Some(budget) = spec.adaptive.and_then(|a| a.budget) else {
        return Ok(JobPlan::Benchmark { spec, plan });
    };
    let autos = std::iter::once(&spec.workload)
        .chain(spec.workload_variants.iter().map(|(_, w)| w))
        .any(|w| w.auto_window);
    if !autos {
        return Ok(JobPlan::Benchmark { spec, plan });
    }
    let earlier = earlier_like(catalog, &spec).await?;
    let mine = spec.clone();
    let history = tokio::task::spawn_blocking(move || pilot::history(&mine, &earlier))
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "summing up earlier jobs failed: no history");
            None
        });
    let Some(history) = history else {
        tracing::info!(
            job = %spec.name,
            window_s = spec.workload.duration.as_secs(),
            "no earlier like job: the auto window is the pilot's"
        );
        return Ok(JobPlan::Benchmark { spec, plan });
    };
    let cells = u32::try_from(plan.cells.len()).unwrap_or(u32::MAX);
    let rounds = (
        spec.repetitions,
        spec.adaptive.map_or(spec.repetitions, |a| a.max),
    );
    let warmup = spec.workload.warmup.as_secs_f64();
    let best = pilot::choices(&history, cells, warmup, rounds, budget.as_secs_f64())
        .into_iter()
        .next();
    if let Some(best) = best {
        let window = std::time::Duration::from_secs(best.window_secs);
        let s = spec.as_mut();
        for w in std::iter::once(&mut s.workload)
            .chain(s.workload_variants.iter_mut().map(|(_, w)| w))
            .filter(|w| w.auto_window)
        {
            w.duration = window;
        }
        tracing::info!(
            job = %spec.name,
            window_s = best.window_secs,
            rounds = best.rounds,
            half_width_pct = best.half_width_pct,
            runs = history.runs,
            jobs = history.jobs,
            "auto window chosen from earlier like jobs"
        );
    }
    Ok(JobPlan::Benchmark { spec, plan })
}
