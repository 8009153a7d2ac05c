//! `blocklab watch` off a terminal: one plain line per change of the job.

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{JobEvent, JobSummary, RunInfo};

use crate::client::{CliError, Transport};
use crate::follow::JobWatch;
use crate::runs::{is_done, run_result};

/// Follows a job until it finishes, printing one line per change.
pub async fn watch<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    mut out: impl std::io::Write,
) -> Result<Option<JobSummary>, CliError> {
    JobWatch::open(client, job_id)
        .await?
        .follow(|ev| {
            if let Some(line) = event_line(ev) {
                let _ = writeln!(out, "{line}");
            }
        })
        .await
}

/// The line for one event: the job's progress, and the run that changed.
fn event_line(ev: &JobEvent) -> Option<String> {
    let j = ev.job.as_ref()?;
    let run = ev.run.as_ref().map(run_part).unwrap_or_default();
    let waiting = if j.waiting.is_empty() {
        String::new()
    } else {
        format!(" | {}", j.waiting)
    };
    Some(format!(
        "{} {}: {}/{} runs done, {} failed{}{}",
        j.job_id, j.state, j.runs_done, j.runs_total, j.runs_failed, waiting, run
    ))
}

fn run_part(r: &RunInfo) -> String {
    format!(
        " | run {} {} rep {}: {} ({}){}",
        r.sequence + 1,
        r.cell_label,
        r.repetition + 1,
        r.state,
        r.stage,
        if is_done(r) {
            format!(" {}", run_result(r))
        } else if r.live_tps > 0.0 {
            format!(" {:.1} tps live", r.live_tps)
        } else {
            String::new()
        }
    )
}
