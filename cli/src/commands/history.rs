//! `submit --dry-run` with a `budget`: earlier jobs like the planned one, read from the
//! coordinator when one answers, and the window and rounds they suggest.

use std::fmt::Write as _;

use blocklab_measure::job::JobExport;
use blocklab_proto::v1::{ExportJobRequest, ListJobsRequest};
use blocklab_report::pilot::{self, History};
use blocklab_spec::Spec;

use crate::client::{CliError, Client};

/// The done benchmark jobs like `spec`'s, newest first (at most [`pilot::MAX_JOBS`]), with
/// their per-second samples.
pub async fn earlier_like(client: &mut Client, spec: &Spec) -> Result<Vec<JobExport>, CliError> {
    let mut jobs = client
        .list_jobs(ListJobsRequest {})
        .await?
        .into_inner()
        .jobs;
    jobs.retain(|j| j.state == "done" && j.kind == "benchmark");
    jobs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    let mut out = Vec::new();
    for j in jobs.into_iter().take(pilot::LOOK_BACK) {
        let export = |samples: bool| ExportJobRequest {
            job_id: j.job_id.clone(),
            metric: String::new(),
            include_samples: samples,
        };
        let brief: JobExport = client.export_job(export(false)).await?.into_inner().into();
        if !pilot::is_like(spec, &brief.spec_toml) {
            continue;
        }
        out.push(client.export_job(export(true)).await?.into_inner().into());
        if out.len() >= pilot::MAX_JOBS {
            break;
        }
    }
    Ok(out)
}

/// What the history says for a spec with a budget: the runs it rests on, the fixed cost and
/// noise, and the best windows; or that there is none (`why`).
pub fn render_history(spec: &Spec, history: Result<Option<History>, String>) -> String {
    let mut out = String::new();
    let Some(budget) = spec.adaptive.and_then(|a| a.budget) else {
        return out;
    };
    let h = match history {
        Ok(Some(h)) => h,
        Ok(None) => {
            let _ = writeln!(
                out,
                "history: no earlier job like this one (workload, builtin and scale, these clients) on the coordinator: the first round is the pilot"
            );
            return out;
        }
        Err(why) => {
            let _ = writeln!(
                out,
                "history: none read ({why}): the first round is the pilot"
            );
            return out;
        }
    };
    let _ = writeln!(
        out,
        "history: {} runs of {} earlier like job(s): a run takes {:.1}s besides its warm-up and window; per-run CV {:.2}% at a {:.0}s window; per-second CV {:.1}%, lag-1 autocorrelation {:.2}",
        h.runs,
        h.jobs,
        h.fixed_secs,
        100.0 * h.run_cv,
        h.window_secs,
        100.0 * h.second_cv,
        h.rho
    );
    let cells = u32::try_from(spec.plan().cells.len()).unwrap_or(u32::MAX);
    let max = spec.adaptive.map_or(spec.repetitions, |a| a.max);
    let options = pilot::choices(
        &h,
        cells,
        spec.workload.warmup.as_secs_f64(),
        (spec.repetitions, max),
        budget.as_secs_f64(),
    );
    let Some(best) = options.first() else {
        let _ = writeln!(
            out,
            "history: no window affords {} rounds of {cells} cells within {}",
            spec.repetitions.max(2),
            humantime::format_duration(budget)
        );
        return out;
    };
    let shown: Vec<String> = options
        .iter()
        .take(4)
        .map(|c| {
            format!(
                "{}s x {} rounds: CV {:.2}%, ±{:.2}%",
                c.window_secs,
                c.rounds,
                100.0 * c.cv,
                c.half_width_pct
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "history: the budget buys the narrowest 95% CI of the change with a {}s window and {} rounds (expected ±{:.2}%; this spec's window is {}); best windows: {}",
        best.window_secs,
        best.rounds,
        best.half_width_pct,
        humantime::format_duration(spec.workload.duration),
        shown.join("; ")
    );
    out
}
