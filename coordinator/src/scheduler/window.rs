//! The measured window of a run: every worker connects its share of the clients and reports
//! ready, the agent runs the CHECKPOINT before the window (layout `checkpoint_before`), the
//! coordinator says go, the workers warm up; when every worker has reported that its measured
//! window started the agent takes the "before" snapshot of the server's statistics, and when
//! every worker's result has arrived (their sessions closed) the "after" one. The workers'
//! results are merged and checked for what makes them suspect.

use blocklab_spec::Stage;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::try_join_all;

use blocklab_measure::LoadResult;

use super::Scheduler;
use super::run::{Failure, RunCtx, fail, task_failed, unrecorded};
use crate::catalog::RunChoices;
use crate::fleet::tasks::{ConnInfo, Load, RunOf, Share, Snapshot};
use crate::fleet::{HostSession, Progress, ProgressEvent};

/// Client CPU above this share of the workers' threads marks a run suspect.
const CPU_SATURATED: f64 = 0.9;
/// How long after its warm-up should end a worker may take to report its window's start.
const START_GRACE: Duration = Duration::from_secs(120);

/// One measured window, merged over the run's workers.
pub(crate) struct Window {
    pub merged: LoadResult,
    /// (worker host, clients, that worker's result) for each worker.
    pub shares: Vec<(String, u32, LoadResult)>,
    pub stats: Vec<(String, f64)>,
    pub suspect: Vec<String>,
    /// The WAL insert position (bytes) at the window's start and end snapshots.
    pub lsn: (u64, u64),
}

impl Scheduler {
    /// Runs one window of `load` on the run's workers, each its share of the cell's clients.
    pub(crate) async fn window(
        &self,
        ctx: &RunCtx<'_>,
        length: Duration,
        load: Load<'_>,
        conninfo: &ConnInfo,
    ) -> Result<Window, Failure> {
        // How many threads a worker's clients run on (pgbench's `-j`); `None`: as many as
        // the worker has cores (the TPC-C-like and AS3AP-like drivers).
        let threads = match load {
            Load::Pgbench { workload, .. } => Some(workload.threads),
            Load::Kind { .. } => None,
        };
        let RunCtx {
            run_id,
            attempt,
            agent,
            workers,
            cell,
            ..
        } = *ctx;
        let mut progress = self.registry.progress.subscribe();
        let shares = super::merge::split_clients(cell.clients, workers.len() as u32);
        let timeout = length + Duration::from_secs(600);
        let task_ids: Vec<String> = workers
            .iter()
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let mut first_thread = 0;
        let parts: Vec<Share> = shares
            .iter()
            .map(|&(clients, first_client)| {
                let share = Share {
                    clients,
                    first_client,
                    first_thread,
                };
                first_thread += load.threads(clients);
                share
            })
            .collect();
        let load = &load;
        let calls = workers.iter().zip(parts).zip(&task_ids).map(
            |((w, share), id): ((&Arc<HostSession>, _), _)| async move {
                w.run_load(
                    id,
                    RunOf { run_id, attempt },
                    conninfo,
                    load,
                    share,
                    timeout,
                )
                .await
                .map_err(task_failed(Stage::Measuring))
            },
        );
        // The first worker that fails ends the window at once (the run's failure then cancels
        // what the others still run).
        let all = try_join_all(calls);
        tokio::pin!(all);
        let opened = self.open_window(ctx, &mut progress, &task_ids);
        let (baseline, before) = tokio::select! {
            o = opened => o?,
            results = &mut all => return Err(results.err().unwrap_or_else(ended_early)),
        };
        let parts = all.await?;
        let results_at = Instant::now();
        let after = self
            .snapshot_task(agent, run_id, attempt, false, true)
            .await?;
        tracing::info!(
            run_id,
            end_lag_ms = results_at.elapsed().as_millis() as u64,
            "window end snapshot taken"
        );
        let choices = RunChoices {
            checkpoint_before: Some(baseline.checkpoint_done),
            stats_start_at: Some(before.taken_at.clone()),
            stats_end_at: Some(after.taken_at.clone()),
            ..RunChoices::default()
        };
        self.catalog
            .record_run_choices(run_id, attempt, &choices)
            .await
            .map_err(unrecorded(Stage::Measuring))?;
        check_no_restart(&baseline, &before)?;
        check_no_restart(&baseline, &after)?;
        self.catalog
            .set_stage(run_id, attempt, Stage::Collecting)
            .await
            .map_err(unrecorded(Stage::Collecting))?;
        let merged =
            super::merge::merge(&parts).map_err(|e| fail(Stage::Collecting, e.to_string(), ""))?;
        let stats = deltas(&before, &after);
        let mut worker_threads = Vec::with_capacity(workers.len());
        for w in workers {
            let n = match threads {
                Some(t) => t,
                None => self
                    .catalog
                    .host_cores(&w.host_id)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or(1),
            };
            worker_threads.push(n);
        }
        let suspect = suspect_reasons(&merged, &parts, &worker_threads, &stats);
        let shares = workers
            .iter()
            .zip(&shares)
            .zip(parts)
            .map(|((w, &(clients, _)), r)| (w.host_id.clone(), clients, r))
            .collect();
        Ok(Window {
            merged,
            shares,
            stats,
            suspect,
            lsn: (lsn_of(&before), lsn_of(&after)),
        })
    }

    /// Up to the window's start: all clients connected, the CHECKPOINT before the window
    /// (its snapshot is the baseline of the restart check), go, the warm-up, and the "before"
    /// snapshot once every worker reported that its measured window started.
    async fn open_window(
        &self,
        ctx: &RunCtx<'_>,
        progress: &mut tokio::sync::broadcast::Receiver<ProgressEvent>,
        task_ids: &[String],
    ) -> Result<(Snapshot, Snapshot), Failure> {
        let RunCtx {
            spec,
            cell,
            run_id,
            attempt,
            agent,
            workers,
            job_id,
            ..
        } = *ctx;
        self.wait_ready(progress, task_ids).await?;
        let baseline = self
            .snapshot(agent, run_id, attempt, spec.layout.checkpoint_before)
            .await?;
        for (w, id) in workers.iter().zip(task_ids) {
            w.go(id, RunOf { run_id, attempt })
                .await
                .map_err(|e| fail(Stage::Measuring, e.to_string(), ""))?;
        }
        let warmup = spec.cell_workload(cell).warmup;
        if !warmup.is_zero() {
            self.catalog
                .set_stage(run_id, attempt, Stage::WarmingUp)
                .await
                .map_err(unrecorded(Stage::WarmingUp))?;
            self.changed(job_id);
        }
        wait_measuring(progress, task_ids, warmup + START_GRACE).await?;
        let started = Instant::now();
        let before = self.snapshot(agent, run_id, attempt, false).await?;
        tracing::info!(
            run_id,
            start_lag_ms = started.elapsed().as_millis() as u64,
            "window start snapshot taken"
        );
        self.catalog
            .set_stage(run_id, attempt, Stage::Measuring)
            .await
            .map_err(unrecorded(Stage::Measuring))?;
        self.changed(job_id);
        Ok((baseline, before))
    }
}

/// Waits until every task reported the stage `measuring` (its warm-up is over).
async fn wait_measuring(
    progress: &mut tokio::sync::broadcast::Receiver<ProgressEvent>,
    task_ids: &[String],
    limit: Duration,
) -> Result<(), Failure> {
    let mut waiting: HashSet<&str> = task_ids.iter().map(String::as_str).collect();
    let deadline = tokio::time::Instant::now() + limit;
    while !waiting.is_empty() {
        match tokio::time::timeout_at(deadline, progress.recv()).await {
            Ok(Ok(p)) if p.report == Progress::Stage(Stage::Measuring) => {
                waiting.remove(p.task_id.as_str());
            }
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(_)) => return Err(fail(Stage::Measuring, "progress channel closed", "")),
            Err(_) => {
                return Err(fail(
                    Stage::WarmingUp,
                    format!(
                        "{} of the workers did not report the start of the measured window within {limit:?}",
                        waiting.len()
                    ),
                    "",
                ));
            }
        }
    }
    Ok(())
}

/// Every worker's result arrived before all of them reported their window's start.
fn ended_early() -> Failure {
    fail(
        Stage::Measuring,
        "the workers finished before all of them reported the start of the measured window",
        "",
    )
}

/// `wal_lsn_bytes` of a snapshot (0 when absent).
fn lsn_of(s: &Snapshot) -> u64 {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&s.stats_json)
        .ok()
        .and_then(|m| m.get("wal_lsn_bytes").and_then(serde_json::Value::as_u64))
        .unwrap_or(0)
}

/// Checkpoints completed between two snapshots (pg_stat_bgwriter before 17,
/// pg_stat_checkpointer after).
pub(crate) fn checkpoints(stats: &[(String, f64)]) -> f64 {
    let stat = |name: &str| {
        stats
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, v)| *v)
    };
    stat("bgwriter.checkpoints_timed")
        + stat("bgwriter.checkpoints_req")
        + stat("checkpointer.num_timed")
        + stat("checkpointer.num_requested")
}

/// A changed postmaster start time means the server restarted inside the window.
pub(crate) fn check_no_restart(before: &Snapshot, after: &Snapshot) -> Result<(), Failure> {
    if !before.postmaster_start_time.is_empty()
        && before.postmaster_start_time != after.postmaster_start_time
    {
        return Err(fail(
            Stage::Measuring,
            format!(
                "the server restarted during the measured window (postmaster start time {} became {})",
                before.postmaster_start_time, after.postmaster_start_time
            ),
            "",
        ));
    }
    Ok(())
}

/// after - before for every numeric counter present in both snapshots.
pub(crate) fn deltas(before: &Snapshot, after: &Snapshot) -> Vec<(String, f64)> {
    let parse = |s: &str| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(s).unwrap_or_default()
    };
    let (b, a) = (parse(&before.stats_json), parse(&after.stats_json));
    let mut out: Vec<(String, f64)> = a
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()? - b.get(k)?.as_f64()?)))
        .collect();
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

/// Sums the deltas of several windows of one run.
pub(crate) fn add_deltas(acc: &mut Vec<(String, f64)>, more: &[(String, f64)]) {
    for (name, d) in more {
        match acc.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v += d,
            None => acc.push((name.clone(), *d)),
        }
    }
}

/// What makes a measurement suspect (see README: suspect runs).
fn suspect_reasons(
    merged: &LoadResult,
    parts: &[LoadResult],
    threads: &[u32],
    stats: &[(String, f64)],
) -> Vec<String> {
    let mut out = Vec::new();
    if checkpoints(stats) > 0.0 {
        out.push("checkpoint in measured window".to_string());
    }
    let saturated = parts.iter().zip(threads).any(|(p, &threads)| {
        let cpu = p.client_cpu_user_s + p.client_cpu_system_s;
        let threads = f64::from(threads.min(p.clients.max(1)).max(1));
        p.measured_seconds > 0.0 && cpu / p.measured_seconds / threads > CPU_SATURATED
    });
    if saturated {
        out.push("client CPU saturated".to_string());
    }
    if merged.failures > 0 {
        out.push(format!("errors ({} failed transactions)", merged.failures));
    }
    out
}
