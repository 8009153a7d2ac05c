//! `blocklab watch` off a terminal: one plain line per change of the job.

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{JobEvent, JobSummary, RunInfo};

use crate::client::{CliError, Transport};
use crate::follow::JobWatch;
use crate::runs::{build_line, is_done, run_result};

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
    let waiting: String = [Some(j.waiting.clone()), build_line(j)]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .map(|s| format!(" | {s}"))
        .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_proto::v1::BuildProgress;

    #[test]
    fn a_building_job_names_its_build_progress() {
        let ev = JobEvent {
            job: Some(JobSummary {
                job_id: "j1".into(),
                state: "building".into(),
                runs_total: 4,
                build: Some(BuildProgress {
                    block_size_kb: 16,
                    wal_block_size_kb: 8,
                    step: "make".into(),
                    percent: Some(43.2),
                    estimated: false,
                    eta_seconds: Some(70),
                }),
                ..Default::default()
            }),
            run: None,
            finished: false,
        };
        assert_eq!(
            event_line(&ev).unwrap(),
            "j1 building: 0/4 runs done, 0 failed | building 16K/8K: make 43%, ~1m10s left"
        );
    }
}
