//! `blocklab watch` on a terminal: a progress bar of runs finished out of the job's total
//! with the ETA, the current run's cell and stage, and one line per finished run above the
//! bar. Off a terminal the CLI prints [`crate::commands::watch`]'s plain lines instead.

use std::time::Duration;

use blocklab_proto::v1::*;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_stream::StreamExt;

use crate::commands::{CliError, Transport};

const TEMPLATE: &str =
    "{spinner} [{elapsed_precise}] {bar:40.cyan/blue} {pos}/{len} runs  ETA {eta}  {msg}";

/// One finished run as a line above the bar.
pub fn run_line(r: &RunInfo) -> String {
    let tail = match r.state.as_str() {
        "done" => crate::commands::run_result(r),
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

fn finished(state: &str) -> bool {
    matches!(state, "done" | "failed" | "cancelled" | "lost")
}

/// Follows a job with a progress bar until it finishes; returns its last summary.
pub async fn watch_with_bar<T: Transport>(
    client: &mut blocklab_proto::v1::control_client::ControlClient<T>,
    job_id: &str,
) -> Result<Option<JobSummary>, CliError> {
    let mut stream = client
        .watch_job(WatchJobRequest {
            job_id: job_id.to_string(),
        })
        .await?
        .into_inner();
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut last = None;
    while let Some(ev) = stream.next().await {
        let ev = ev?;
        if let Some(j) = &ev.job {
            bar.set_length(u64::from(j.runs_total));
            bar.set_position(u64::from(j.runs_done + j.runs_failed));
            last = Some(j.clone());
        }
        if let Some(r) = &ev.run {
            if finished(&r.state) {
                bar.println(run_line(r));
            } else {
                bar.set_message(stage_message(r));
            }
        }
        if ev.finished {
            break;
        }
    }
    match &last {
        Some(j) => bar.finish_with_message(format!(
            "job {}: {} ({} runs done, {} failed)",
            j.job_id, j.state, j.runs_done, j.runs_failed
        )),
        None => bar.finish_and_clear(),
    }
    Ok(last)
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
}
