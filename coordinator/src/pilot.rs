//! `duration = "auto"` with a `budget`: at submit the coordinator reads the last done jobs
//! like the new one from its catalog and gives each auto window the length that buys the
//! narrowest interval of the change within the budget ([`blocklab_report::pilot`]); without
//! history the pilot window stays.

use blocklab_report::pilot;
use blocklab_spec::{JobKind, JobPlan, JobState, Spec};

use crate::catalog::{Catalog, CatalogError, export::export_job};

/// The most recent jobs looked at for ones like the new job.
const LOOK_BACK: usize = 30;

/// The done benchmark jobs like `spec`'s, newest first, with their samples.
async fn earlier_like(
    catalog: &Catalog,
    spec: &Spec,
) -> Result<Vec<blocklab_measure::job::JobExport>, CatalogError> {
    let mut jobs = catalog.jobs().await?;
    jobs.retain(|j| j.state == JobState::Done && j.kind == JobKind::Benchmark);
    jobs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    let mut out = Vec::new();
    for j in jobs.iter().take(LOOK_BACK) {
        if !pilot::is_like(spec, &j.spec_toml) {
            continue;
        }
        out.push(export_job(catalog, &j.job_id, true).await?);
        if out.len() >= pilot::MAX_JOBS {
            break;
        }
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
    let Some(history) = pilot::history(&spec, &earlier) else {
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
