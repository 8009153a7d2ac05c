//! `blocklab job ID`: the job with its runs table, or one run in detail (`--run N`).

use std::fmt::Write as _;

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetJobRequest, GetJobResponse, RunChoices, RunDetail};
pub use blocklab_report::format::RUN_KEY_COLUMNS;
use blocklab_report::format::size;
use blocklab_report::render::wrap;

use super::job_table::runs_table;
use super::table::table;
use crate::client::{CliError, Transport, answer};
use crate::runs::{build_cell, is_done, result_cell, run_result};

/// The columns of `blocklab job`'s runs table after [`RUN_KEY_COLUMNS`].
const RUN_DETAIL_COLUMNS: [&str; 5] = ["block_size", "wal_block_size", "result", "build", "error"];

/// The header of `blocklab job`'s runs table.
pub fn runs_table_header() -> Vec<&'static str> {
    RUN_KEY_COLUMNS
        .iter()
        .chain(&RUN_DETAIL_COLUMNS)
        .copied()
        .collect()
}

/// `blocklab job ID [--run N]`: the job and its runs, or run N (numbered from 1, as the runs
/// table lists them) in detail. Run 0 is refused with the job's range, as the coordinator
/// refuses one past the last. The runs table fits `width` ([`render_job_fit`]), or has every
/// column when it is `None` (`--wide`).
pub async fn show_job<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    run: Option<u32>,
    width: Option<usize>,
) -> Result<String, CliError> {
    let request = GetJobRequest {
        job_id: job_id.to_string(),
        run: run.unwrap_or(0),
    };
    let r = answer(client.get_job(request).await)?;
    if run == Some(0) {
        return Err(CliError::NoSuchRun {
            runs: u32::try_from(r.runs.len()).unwrap_or(u32::MAX),
            given: 0,
        });
    }
    Ok(match &r.run_detail {
        Some(d) => render_run_detail(d),
        None => match width {
            // Printed with a newline of its own, as the other two.
            Some(w) => render_job_fit(&r, w).trim_end_matches('\n').to_string(),
            None => render_job(&r),
        },
    })
}

/// The job's summary line, with its error, what it waits for, what it reruns and the build
/// it is making.
fn job_lines(job: &GetJobResponse) -> String {
    let mut out = String::new();
    if let Some(j) = &job.job {
        let _ = writeln!(
            out,
            "job {} ({}): {}, {}/{} runs done, {} failed, db host {}",
            j.job_id,
            j.name,
            j.state,
            j.runs_done,
            j.runs_total,
            j.runs_failed,
            if j.db_host_id.is_empty() {
                "-"
            } else {
                &j.db_host_id
            }
        );
        if !j.error.is_empty() {
            let _ = writeln!(out, "error: {}", j.error);
        }
        if !j.waiting.is_empty() {
            let _ = writeln!(out, "{}", j.waiting);
        }
        if !j.rerun_of.is_empty() {
            let _ = writeln!(out, "rerun of: {}", j.rerun_of);
        }
        if let Some(line) = crate::runs::build_line(j) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// `blocklab job ID`: the job's summary lines wrapped at `width`, and its runs in a table that
/// fits it ([`runs_table`]).
pub fn render_job_fit(job: &GetJobResponse, width: usize) -> String {
    wrap(&job_lines(job), width) + &runs_table(&job.runs, width)
}

/// `blocklab job ID --wide`: the job's summary lines and its runs with every column.
pub fn render_job(job: &GetJobResponse) -> String {
    let mut out = job_lines(job);
    let mut t = table(&runs_table_header());
    for r in &job.runs {
        t.add_row(vec![
            (r.sequence + 1).to_string(),
            r.cell_label.clone(),
            (r.repetition + 1).to_string(),
            r.attempt.to_string(),
            r.state.clone(),
            r.stage.clone(),
            size(r.block_size),
            size(r.wal_block_size),
            result_cell(r),
            build_cell(r),
            r.error.lines().next().unwrap_or("").to_string(),
        ]);
    }
    let _ = write!(out, "{t}");
    out
}

/// What the run's layout choices did: the cache reset after the load, the CHECKPOINT
/// before the window, when the window's statistics were taken, where the FPI bytes came from.
fn render_choices(c: &RunChoices) -> String {
    let yes_no = |b: Option<bool>| match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    };
    let mut out = format!(
        "caches after the load: server restarted {}, OS page cache dropped {}; checkpoint before the window {}\n",
        yes_no(c.server_restarted),
        yes_no(c.os_cache_dropped),
        yes_no(c.checkpoint_before)
    );
    if !c.stats_start_at.is_empty() {
        let _ = writeln!(
            out,
            "window statistics taken at {} and {}",
            c.stats_start_at, c.stats_end_at
        );
    }
    if !c.fpi_source.is_empty() {
        let _ = writeln!(out, "full-page-image bytes from {}", c.fpi_source);
    }
    if !c.wal_dir.is_empty() {
        let _ = writeln!(out, "WAL directory {}", c.wal_dir);
    }
    out
}

/// `blocklab job ID --run N`: one run with its proof, statistics and settings.
pub fn render_run_detail(d: &RunDetail) -> String {
    let mut out = String::new();
    if let Some(r) = &d.run {
        let _ = writeln!(
            out,
            "run {} ({}, repetition {}, attempt {}): {} at {}{}",
            r.sequence + 1,
            r.cell_label,
            r.repetition + 1,
            r.attempt,
            r.state,
            r.stage,
            if is_done(r) {
                format!(", {}", run_result(r))
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "server {} on {}: block_size {} wal_block_size {}, build {}",
            d.server_version,
            d.db_host_id,
            size(r.block_size),
            size(r.wal_block_size),
            r.build_key
        );
        if !r.error.is_empty() {
            let _ = writeln!(out, "error: {}", r.error);
        }
    }
    let _ = writeln!(out, "started {} finished {}", d.started_at, d.finished_at);
    if let Some(c) = &d.choices {
        out.push_str(&render_choices(c));
    }
    if !d.suspect.is_empty() {
        let _ = writeln!(out, "suspect: {}", d.suspect.join("; "));
    }
    if !d.metrics.is_empty() {
        let mut t = table(&["metric", "value", "unit"]);
        for m in &d.metrics {
            let metric = blocklab_report::stats::Metric::Workload {
                name: m.name.clone(),
                unit: m.unit.clone(),
                higher_is_better: m.higher_is_better,
            };
            t.add_row(vec![
                m.name.clone(),
                blocklab_report::format::num(&metric, m.value),
                m.unit.clone(),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if d.random_seed != 0 || d.late + d.skipped > 0 || d.schedule_lag_max_ms > 0.0 {
        let _ = writeln!(
            out,
            "schedule lag avg {:.3} ms, max {:.3} ms; late {}, skipped {}; random seed {}",
            d.schedule_lag_avg_ms, d.schedule_lag_max_ms, d.late, d.skipped, d.random_seed
        );
    }
    if !d.statements.is_empty() {
        let mut t = table(&[
            "script",
            "#",
            "command",
            "count",
            "latency avg ms",
            "failures",
        ]);
        for s in &d.statements {
            t.add_row(vec![
                s.script.clone(),
                (s.position + 1).to_string(),
                s.command.clone(),
                s.count.to_string(),
                format!("{:.3}", s.latency_avg_ms),
                s.failures.to_string(),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.shares.is_empty() {
        let mut t = table(&[
            "worker",
            "clients",
            "transactions",
            "tps",
            "cpu user s",
            "cpu system s",
        ]);
        for s in &d.shares {
            t.add_row(vec![
                s.worker_host_id.clone(),
                s.clients.to_string(),
                s.transactions.to_string(),
                format!("{:.1}", s.tps),
                format!("{:.2}", s.client_cpu_user_s),
                format!("{:.2}", s.client_cpu_system_s),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.stats.is_empty() {
        let mut t = table(&["server statistic (delta over the window)", "value"]);
        for s in d.stats.iter().filter(|s| s.delta != 0.0) {
            t.add_row(vec![s.name.clone(), format!("{}", s.delta)]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.settings.is_empty() {
        let mut t = table(&["setting", "value", "unit", "source"]);
        for s in &d.settings {
            t.add_row(vec![
                s.name.clone(),
                s.setting.clone(),
                s.unit.clone(),
                s.source.clone(),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.log_tail.is_empty() {
        let _ = writeln!(out, "--- log tail ---\n{}", d.log_tail);
    }
    out
}
