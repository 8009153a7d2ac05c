//! `blocklab watch` off a terminal: one plain line per change of the job.

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{JobEvent, JobSummary, RunInfo};

use crate::client::{CliError, Transport};
use crate::follow::JobWatch;
use crate::runs::{build_line, final_line, is_done, run_result};

/// How a watch ended.
#[derive(Debug)]
pub enum Watched {
    /// The job had finished before the watch began: its final state line was printed.
    AlreadyFinished(JobSummary),
    /// The job was followed until it finished or the stream ended: its last summary.
    Followed(Option<JobSummary>),
}

impl Watched {
    /// The job's last summary.
    pub fn last(self) -> Option<JobSummary> {
        match self {
            Watched::AlreadyFinished(j) => Some(j),
            Watched::Followed(j) => j,
        }
    }
}

/// Follows a job until it finishes: with a progress bar ([`crate::progress`]) or one plain
/// line per change to `out`. A job that has already finished gets its final state line.
pub async fn watch_job<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    bar: bool,
    mut out: impl std::io::Write,
) -> Result<Watched, CliError> {
    let mut watch = JobWatch::open(client, job_id).await?;
    let Some(first) = watch.next().await? else {
        return Ok(Watched::Followed(None));
    };
    if first.finished
        && let Some(j) = first.job
    {
        let _ = writeln!(out, "{}", final_line(&j));
        return Ok(Watched::AlreadyFinished(j));
    }
    let last = if bar {
        crate::progress::follow_with_bar(watch, &first).await?
    } else {
        let mut print = |ev: &JobEvent| {
            if let Some(line) = event_line(ev) {
                let _ = writeln!(out, "{line}");
            }
        };
        print(&first);
        watch.follow(print).await?
    };
    Ok(Watched::Followed(last.or(first.job)))
}

/// Follows a job until it finishes, printing one line per change; returns its last summary.
pub async fn watch<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    out: impl std::io::Write,
) -> Result<Option<JobSummary>, CliError> {
    Ok(watch_job(client, job_id, false, out).await?.last())
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
