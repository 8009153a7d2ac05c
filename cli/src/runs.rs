//! A run as the CLI shows it, shared by the detail renderings and both kinds of `watch`.

use blocklab_proto::v1::RunInfo;
use blocklab_spec::RunState;

/// The run's state, parsed from the wire once; `None` for a name this CLI does not know.
pub fn run_state(r: &RunInfo) -> Option<RunState> {
    r.state.parse().ok()
}

/// Whether the run is done (and so has a result to show).
pub fn is_done(r: &RunInfo) -> bool {
    run_state(r) == Some(RunState::Done)
}

/// A done run's result in a few words: its headline workload metric with the unit (NOTPM,
/// tup/s, seconds), or its tps for pgbench runs.
pub fn run_result(r: &RunInfo) -> String {
    if r.headline_metric.is_empty() {
        return format!("{:.1} tps", r.tps);
    }
    let metric = blocklab_report::stats::Metric::Workload {
        name: r.headline_metric.clone(),
        unit: r.headline_unit.clone(),
        higher_is_better: true,
    };
    let value = blocklab_report::format::num(&metric, r.headline_value);
    match r.headline_unit.as_str() {
        "NOTPM" | "tup/s" => format!("{value} {}", r.headline_unit),
        unit => format!("{} {value} {unit}", r.headline_metric),
    }
}

/// The line of the build a job is making now ("building 16K/8K: make 43%, ~1m10s left");
/// `None` while it builds nothing or the report names a step this CLI does not know.
pub fn build_line(j: &blocklab_proto::v1::JobSummary) -> Option<String> {
    let b = j.build.as_ref()?;
    let progress = blocklab_spec::BuildProgress {
        block_size_kb: b.block_size_kb,
        wal_block_size_kb: b.wal_block_size_kb,
        step: b.step.parse().ok()?,
        percent: b.percent,
        estimated: b.estimated,
        eta_seconds: b.eta_seconds.map(u64::from),
    };
    Some(progress.to_string())
}

/// A job's state line once it has finished: "job ID: done, 4/4 runs done, 0 failed", with
/// the job's error if it has one.
pub fn final_line(j: &blocklab_proto::v1::JobSummary) -> String {
    let mut line = format!(
        "job {}: {}, {}/{} runs done, {} failed",
        j.job_id, j.state, j.runs_done, j.runs_total, j.runs_failed
    );
    if !j.error.is_empty() {
        line.push_str(": ");
        line.push_str(&j.error);
    }
    line
}

/// The run's build as the runs tables show it: its key, "(cached)" when an earlier build
/// served it, "-" before it has one.
pub fn build_cell(r: &RunInfo) -> String {
    if r.build_key.is_empty() {
        "-".into()
    } else if r.build_reused {
        format!("{} (cached)", r.build_key)
    } else {
        r.build_key.clone()
    }
}

/// A done run's result, "-" for any other.
pub fn result_cell(r: &RunInfo) -> String {
    if is_done(r) {
        run_result(r)
    } else {
        "-".into()
    }
}
