//! The measured window of a run: every worker connects its share of the clients and reports
//! ready, the agent snapshots the server's statistics (after a CHECKPOINT), the coordinator
//! says go, the workers measure, the agent snapshots again, and the workers' results are
//! merged and checked for what makes them suspect.

use blocklab_spec::Stage;
use std::sync::Arc;
use std::time::Duration;

use blocklab_proto::v1::{
    Go, RunLoadTask, SnapshotStatsResult, coordinator_message, task, task_result::Outcome,
};
use futures::future::join_all;

use crate::load::LoadResult;

use super::Scheduler;
use super::run::{Failure, RunCtx, fail, unexpected, unrecorded};
use crate::catalog::RunChoices;
use crate::fleet::HostSession;

/// Client CPU above this share of the workers' threads marks a run suspect.
const CPU_SATURATED: f64 = 0.9;

/// One measured window, merged over the run's workers.
pub(crate) struct Window {
    pub merged: LoadResult,
    /// (worker host, clients, that worker's result) for each worker.
    pub shares: Vec<(String, u32, LoadResult)>,
    pub stats: Vec<(String, f64)>,
    pub suspect: Vec<String>,
}

impl Scheduler {
    /// Runs one window: `task(clients, first_client_id)` is each worker's share of the load.
    /// `threads` is how many threads a worker's clients run on (pgbench's `-j`); `None`: as
    /// many as the worker has cores (the TPC-C-like and AS3AP-like drivers).
    pub(crate) async fn window(
        &self,
        ctx: &RunCtx<'_>,
        length: Duration,
        threads: Option<u32>,
        task: impl Fn(u32, u32) -> RunLoadTask,
    ) -> Result<Window, Failure> {
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
        let mut progress = self.registry.progress.subscribe();
        let shares = super::merge::split_clients(cell.clients, workers.len() as u32);
        let timeout = length + Duration::from_secs(600);
        let task_ids: Vec<String> = workers
            .iter()
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let calls = workers.iter().zip(&shares).zip(&task_ids).map(
            |((w, &(clients, offset)), id): ((&Arc<HostSession>, _), _)| {
                let mut load = task(clients, offset);
                load.wait_for_go = true;
                w.call_with_id(id, run_id, attempt, task::Kind::RunLoad(load), timeout)
            },
        );
        let all = join_all(calls);
        let start = async {
            self.wait_ready(&mut progress, &task_ids).await?;
            let before = self
                .snapshot(agent, run_id, attempt, spec.layout.checkpoint_before)
                .await?;
            for (w, id) in workers.iter().zip(&task_ids) {
                let go = Go {
                    task_id: id.clone(),
                    run_id: run_id.to_string(),
                    attempt,
                };
                w.notify(coordinator_message::Kind::Go(go))
                    .await
                    .map_err(|e| fail(Stage::Measuring, e.to_string(), ""))?;
            }
            let workload = spec.cell_workload(cell);
            let stage = if workload.warmup.is_zero() {
                Stage::Measuring
            } else {
                Stage::WarmingUp
            };
            self.catalog
                .set_stage(run_id, attempt, stage)
                .await
                .map_err(unrecorded(stage))?;
            self.changed(job_id);
            Ok::<_, Failure>(before)
        };
        let (results, before) = tokio::join!(all, start);
        let before = before?;
        let mut parts = Vec::new();
        for r in results {
            match r {
                Ok(Outcome::RunLoad(r)) => parts.push(LoadResult::from(r)),
                other => return Err(unexpected(Stage::Measuring, other)),
            }
        }
        let after = self.snapshot(agent, run_id, attempt, false).await?;
        let checkpoint = RunChoices {
            checkpoint_before: Some(before.checkpoint_done),
            ..RunChoices::default()
        };
        self.catalog
            .record_run_choices(run_id, attempt, &checkpoint)
            .await
            .map_err(unrecorded(Stage::Measuring))?;
        check_no_restart(&before, &after)?;
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
        })
    }
}

/// A changed postmaster start time means the server restarted inside the window.
pub(crate) fn check_no_restart(
    before: &SnapshotStatsResult,
    after: &SnapshotStatsResult,
) -> Result<(), Failure> {
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
pub(crate) fn deltas(
    before: &SnapshotStatsResult,
    after: &SnapshotStatsResult,
) -> Vec<(String, f64)> {
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
    let stat = |name: &str| {
        stats
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, v)| *v)
    };
    let checkpoints = stat("bgwriter.checkpoints_timed")
        + stat("bgwriter.checkpoints_req")
        + stat("checkpointer.num_timed")
        + stat("checkpointer.num_requested");
    if checkpoints > 0.0 {
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
