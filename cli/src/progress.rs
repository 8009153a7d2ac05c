//! `blocklab watch` on a terminal: a progress bar of runs finished out of the job's total
//! with the ETA, the current run's cell and stage, and one line per finished run above the
//! bar. Off a terminal the CLI prints [`crate::commands::watch`]'s plain lines instead; both
//! read the stream through [`crate::follow::JobWatch`].

use std::time::Duration;

use blocklab_proto::v1::{JobEvent, JobSummary, RunInfo};
use blocklab_spec::RunState;
use indicatif::{ProgressBar, ProgressStyle};

use crate::client::CliError;
use crate::follow::JobWatch;
use crate::runs::{final_line, run_result, run_state};

const TEMPLATE: &str =
    "{spinner} [{elapsed_precise}] {bar:40.cyan/blue} {pos}/{len} runs  ETA {eta}  {msg}";

/// One finished run as a line above the bar.
pub fn run_line(r: &RunInfo) -> String {
    let tail = match run_state(r) {
        Some(RunState::Done) => run_result(r),
        _ if !r.error.is_empty() => format!("{} at {}: {}", r.state, r.stage, r.error),
        _ => format!("{} at {}", r.state, r.stage),
    };
    format!(
        "run {} {} rep {}: {tail}",
        r.sequence + 1,
        r.cell_label,
        r.repetition + 1
    )
}

/// The bar's message: the run in progress, its stage, and the live tps while it measures.
pub fn stage_message(r: &RunInfo) -> String {
    let live = if r.live_tps > 0.0 {
        format!(", {:.1} tps now", r.live_tps)
    } else {
        String::new()
    };
    format!(
        "run {} {} rep {}: {}{live}",
        r.sequence + 1,
        r.cell_label,
        r.repetition + 1,
        r.stage
    )
}

/// Whether the run has stopped on its host (a lost run is retried, but this attempt ended).
fn finished(state: Option<RunState>) -> bool {
    matches!(
        state,
        Some(RunState::Done | RunState::Failed | RunState::Cancelled | RunState::Lost)
    )
}

/// A bar for the job as it stands: its runs so far already counted, so it starts at, say,
/// 7/12 (not 0/0), and its ETA is the pace from here on.
pub fn job_bar(job: Option<&JobSummary>) -> ProgressBar {
    let (total, finished) = job.map_or((0, 0), |j| (j.runs_total, j.runs_done + j.runs_failed));
    let bar = ProgressBar::new(u64::from(total)).with_position(u64::from(finished));
    if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
        bar.set_style(style.progress_chars("=> "));
    }
    // The runs finished before the watch are not pace: record them, then start the estimate.
    bar.tick();
    bar.reset_eta();
    bar
}

/// Follows a job with a progress bar from its first event until it finishes; returns its
/// last summary.
pub async fn follow_with_bar(
    watch: JobWatch,
    first: &JobEvent,
) -> Result<Option<JobSummary>, CliError> {
    let bar = job_bar(first.job.as_ref());
    bar.enable_steady_tick(Duration::from_millis(200));
    show(&bar, first);
    let last = watch
        .follow(|ev| show(&bar, ev))
        .await?
        .or(first.job.clone());
    match &last {
        Some(j) => bar.finish_with_message(final_line(j)),
        None => bar.finish_and_clear(),
    }
    Ok(last)
}

/// One event on the bar: the job's progress, and a finished run above it or the current
/// run's stage as its message.
fn show(bar: &ProgressBar, ev: &JobEvent) {
    if let Some(j) = &ev.job {
        bar.set_length(u64::from(j.runs_total));
        bar.set_position(u64::from(j.runs_done + j.runs_failed));
        if !j.waiting.is_empty() {
            bar.set_message(j.waiting.clone());
        } else if let Some(line) = crate::runs::build_line(j) {
            bar.set_message(line);
        }
    }
    if let Some(r) = &ev.run {
        if finished(run_state(r)) {
            bar.println(run_line(r));
        } else if ev
            .job
            .as_ref()
            .is_none_or(|j| j.waiting.is_empty() && j.build.is_none())
        {
            bar.set_message(stage_message(r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_run_and_its_stage() {
        let mut r = RunInfo {
            sequence: 2,
            cell_label: "bs=16K wal=8K c=4".into(),
            repetition: 0,
            state: "running".into(),
            stage: "measuring".into(),
            ..Default::default()
        };
        assert_eq!(
            stage_message(&r),
            "run 3 bs=16K wal=8K c=4 rep 1: measuring"
        );
        r.live_tps = 2345.67;
        assert_eq!(
            stage_message(&r),
            "run 3 bs=16K wal=8K c=4 rep 1: measuring, 2345.7 tps now"
        );
        r.state = "done".into();
        r.tps = 1234.56;
        assert_eq!(run_line(&r), "run 3 bs=16K wal=8K c=4 rep 1: 1234.6 tps");
        r.state = "failed".into();
        r.error = "initdb failed".into();
        assert_eq!(
            run_line(&r),
            "run 3 bs=16K wal=8K c=4 rep 1: failed at measuring: initdb failed"
        );
    }

    #[test]
    fn a_bar_starts_from_the_runs_finished_so_far() {
        let j = JobSummary {
            job_id: "j1".into(),
            state: "running".into(),
            runs_total: 12,
            runs_done: 6,
            runs_failed: 1,
            ..Default::default()
        };
        let bar = job_bar(Some(&j));
        assert_eq!((bar.position(), bar.length()), (7, Some(12)));
    }
}
