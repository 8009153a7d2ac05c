//! One run of a job: start the cell's server, load the data, take server statistics, run the
//! load on the run's workers (all connected, then started together on the coordinator's go),
//! merge their results, flag what makes the measurement suspect, and write it all at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use blocklab_proto::v1::{
    Go, InitDataTask, PrepareServerResult, PrepareServerTask, RunLoadResult, RunLoadTask, Setting,
    SnapshotStatsResult, SnapshotStatsTask, StopServerTask, coordinator_message, task,
    task_result::Outcome,
};
use futures::future::join_all;

use crate::catalog::{RunChoices, RunOutcome, RunRecord, ServerRecord};
use crate::fleet::{CallError, HostSession};
use crate::scheduler::{Scheduler, SchedulerError, build_options};
use crate::spec::{Cell, Spec};

const PREPARE_TIMEOUT: Duration = Duration::from_secs(60 * 60);
const INIT_TIMEOUT: Duration = Duration::from_secs(60 * 60);
const STOP_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const STATS_TIMEOUT: Duration = Duration::from_secs(10 * 60);
const READY_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Client CPU above this share of the workers' threads marks a run suspect.
const CPU_SATURATED: f64 = 0.9;

/// Why a run did not finish. `lost` means a host vanished (disconnected or silent), so the
/// run may be retried; otherwise the run failed.
#[derive(Debug)]
struct Failure {
    stage: String,
    reason: String,
    tail: String,
    lost: bool,
}

fn fail(stage: &str, reason: impl Into<String>, tail: impl Into<String>) -> Failure {
    Failure {
        stage: stage.to_string(),
        reason: reason.into(),
        tail: tail.into(),
        lost: false,
    }
}

fn unexpected(stage: &str, outcome: Result<Outcome, CallError>) -> Failure {
    match outcome {
        Ok(Outcome::Error(e)) => fail(
            if e.stage.is_empty() { stage } else { &e.stage },
            e.reason,
            e.log_tail,
        ),
        Ok(_) => fail(stage, "host answered with the wrong result kind", ""),
        Err(e) => Failure {
            lost: true,
            ..fail(stage, e.to_string(), "")
        },
    }
}

impl Scheduler {
    pub(crate) async fn execute_run(
        &self,
        job_id: &str,
        spec: &Spec,
        cell: &Cell,
        run: &RunRecord,
        db_host: &str,
    ) -> Result<(), SchedulerError> {
        let Some(agent) = self.wait_for(|| self.registry.get(db_host)).await else {
            let reason = format!("database host {db_host} is down");
            self.catalog
                .fail_queued_runs(job_id, "starting", &reason, Some(&[cell.index]))
                .await?;
            return Ok(());
        };
        let agent_busy = agent.busy.clone();
        let _agent_guard = agent_busy.lock().await;
        let wanted = spec.client_workers as usize;
        let Some(workers) = self.wait_for(|| self.free_workers(wanted)).await else {
            let reason = format!("fewer than {wanted} client workers attached and free");
            self.catalog
                .fail_queued_runs(job_id, "starting", &reason, Some(&[cell.index]))
                .await?;
            return Ok(());
        };
        let sessions: Vec<Arc<HostSession>> = workers.iter().map(|(s, _)| s.clone()).collect();
        let run_id = run.run_id.as_str();
        let attempt = self
            .catalog
            .begin_attempt(run_id, &agent.host_id, &sessions[0].host_id)
            .await?;
        self.changed(job_id);
        tracing::info!(job_id, run_id, attempt, cell = %cell.label_in(spec), repetition = run.repetition, "run started");
        let mut cancelled = self.cancelled(job_id);
        let hosts: Vec<String> = sessions
            .iter()
            .chain(std::iter::once(&agent))
            .map(|h| h.host_id.clone())
            .collect();
        let outcome = tokio::select! {
            o = self.measure(spec, cell, run_id, attempt, &agent, &sessions, job_id) => Some(o),
            gone = self.host_down(&hosts) => Some(Err(Failure {
                lost: true,
                ..fail("measuring", format!("host {gone} went down during the run"), "")
            })),
            _ = cancelled.wait_for(|c| *c) => None,
        };
        let cancel = blocklab_proto::v1::CancelTask {
            task_id: String::new(),
            run_id: run_id.to_string(),
            attempt,
        };
        if matches!(&outcome, Some(Err(f)) if f.lost) {
            // Whatever still runs for this attempt on the hosts that remain is stale: stop it.
            for host in &sessions {
                let _ = host
                    .notify(coordinator_message::Kind::Cancel(cancel.clone()))
                    .await;
            }
        }
        let Some(outcome) = outcome else {
            // Stop the load and the server of the cancelled attempt promptly.
            for host in sessions.iter().chain(std::iter::once(&agent)) {
                let _ = host
                    .notify(coordinator_message::Kind::Cancel(cancel.clone()))
                    .await;
            }
            let _ = agent
                .call(
                    run_id,
                    attempt,
                    task::Kind::StopServer(StopServerTask {}),
                    STOP_TIMEOUT,
                )
                .await;
            self.catalog.cancel_run(run_id, attempt).await?;
            tracing::info!(run_id, attempt, "run cancelled");
            return Ok(());
        };
        self.clear_live(run_id);
        match agent
            .call(
                run_id,
                attempt,
                task::Kind::StopServer(StopServerTask {}),
                STOP_TIMEOUT,
            )
            .await
        {
            Ok(Outcome::StopServer(_)) => {}
            other => {
                tracing::warn!(run_id, outcome = ?other.map(|_| ()), "stopping the server failed")
            }
        }
        match outcome {
            Ok(o) => {
                if !self.catalog.finish_run_with(run_id, attempt, &o).await? {
                    tracing::warn!(run_id, attempt, "result of a stale attempt discarded");
                }
                tracing::info!(run_id, tps = o.result.tps_excluding_connections, suspect = ?o.suspect, "run done");
            }
            Err(f) if f.lost => {
                tracing::warn!(run_id, attempt, stage = %f.stage, reason = %f.reason, "run lost");
                self.catalog
                    .lose_run(run_id, attempt, &f.stage, &f.reason)
                    .await?;
            }
            Err(f) => {
                tracing::warn!(run_id, stage = %f.stage, reason = %f.reason, "run failed");
                self.catalog
                    .fail_run(run_id, attempt, &f.stage, &f.reason, &f.tail)
                    .await?;
            }
        }
        Ok(())
    }

    /// Resolves with the id of the first of `hosts` that the registry no longer holds (it
    /// detached or missed its heartbeat timeout).
    async fn host_down(&self, hosts: &[String]) -> String {
        loop {
            if let Some(gone) = hosts.iter().find(|h| self.registry.get(h).is_none()) {
                return gone.clone();
            }
            let _ =
                tokio::time::timeout(Duration::from_millis(500), self.registry.changed.notified())
                    .await;
        }
    }

    fn free_workers(
        &self,
        n: usize,
    ) -> Option<Vec<(Arc<HostSession>, tokio::sync::OwnedMutexGuard<()>)>> {
        let mut got = Vec::new();
        for s in self.registry.up() {
            if s.role != blocklab_proto::Role::Worker {
                continue;
            }
            if let Ok(g) = s.busy.clone().try_lock_owned() {
                got.push((s, g));
                if got.len() == n {
                    return Some(got);
                }
            }
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    async fn measure(
        &self,
        spec: &Spec,
        cell: &Cell,
        run_id: &str,
        attempt: u32,
        agent: &HostSession,
        workers: &[Arc<HostSession>],
        job_id: &str,
    ) -> Result<RunOutcome, Failure> {
        let server = self
            .prepare(spec, cell, run_id, attempt, agent, workers, job_id)
            .await?;
        let conninfo = server.conninfo.clone().unwrap_or_default();
        let workload = spec.cell_workload(cell);
        let init = InitDataTask {
            conninfo: Some(conninfo.clone()),
            scale: cell.scale,
        };
        match workers[0]
            .call(run_id, attempt, task::Kind::InitData(init), INIT_TIMEOUT)
            .await
        {
            Ok(Outcome::InitData(_)) => {}
            other => return Err(unexpected("loading-data", other)),
        }

        // Every worker connects its share of the clients and reports ready.
        let mut progress = self.registry.progress.subscribe();
        let shares = crate::merge::split_clients(cell.clients, workers.len() as u32);
        let timeout = workload.duration + workload.warmup + Duration::from_secs(600);
        let task_ids: Vec<String> = workers
            .iter()
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let (results, before) =
            {
                let calls = workers.iter().zip(&shares).zip(&task_ids).map(
                    |((w, &(clients, offset)), id)| {
                        let load = RunLoadTask {
                            conninfo: Some(conninfo.clone()),
                            builtin: workload.builtin.clone(),
                            clients,
                            threads: workload.threads.min(clients).max(1),
                            duration_ms: u64::try_from(workload.duration.as_millis())
                                .unwrap_or(u64::MAX),
                            warmup_ms: u64::try_from(workload.warmup.as_millis())
                                .unwrap_or(u64::MAX),
                            protocol: workload.protocol.clone(),
                            scale: cell.scale,
                            client_id_offset: offset,
                            wait_for_go: true,
                            ..Default::default()
                        };
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
                            .map_err(|e| fail("measuring", e.to_string(), ""))?;
                    }
                    let stage = if workload.warmup.is_zero() {
                        "measuring"
                    } else {
                        "warming-up"
                    };
                    let _ = self.catalog.set_stage(run_id, attempt, stage).await;
                    self.changed(job_id);
                    Ok::<_, Failure>(before)
                };
                tokio::join!(all, start)
            };
        let before = before?;
        let mut parts = Vec::new();
        for r in results {
            match r {
                Ok(Outcome::RunLoad(r)) => parts.push(r),
                other => return Err(unexpected("measuring", other)),
            }
        }
        let after = self.snapshot(agent, run_id, attempt, false).await?;
        let checkpoint = RunChoices {
            checkpoint_before: Some(before.checkpoint_done),
            ..RunChoices::default()
        };
        let _ = self
            .catalog
            .record_run_choices(run_id, attempt, &checkpoint)
            .await;
        if !before.postmaster_start_time.is_empty()
            && before.postmaster_start_time != after.postmaster_start_time
        {
            return Err(fail(
                "measuring",
                format!(
                    "the server restarted during the measured window (postmaster start time {} became {})",
                    before.postmaster_start_time, after.postmaster_start_time
                ),
                "",
            ));
        }
        let _ = self.catalog.set_stage(run_id, attempt, "collecting").await;
        let merged =
            crate::merge::merge(&parts).map_err(|e| fail("collecting", e.to_string(), ""))?;
        let stats = deltas(&before, &after);
        let suspect = suspect_reasons(&merged, &parts, workload.threads, &stats);
        let shares = workers
            .iter()
            .zip(&shares)
            .zip(parts)
            .map(|((w, &(clients, _)), r)| (w.host_id.clone(), clients, r))
            .collect();
        Ok(RunOutcome {
            result: merged,
            shares,
            stats,
            suspect,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn prepare(
        &self,
        spec: &Spec,
        cell: &Cell,
        run_id: &str,
        attempt: u32,
        agent: &HostSession,
        workers: &[Arc<HostSession>],
        job_id: &str,
    ) -> Result<PrepareServerResult, Failure> {
        let settings = spec
            .cell_settings(cell)
            .into_iter()
            .map(|(name, value)| Setting { name, value })
            .collect();
        let prepare = PrepareServerTask {
            build: Some(build_options(spec, &cell.build_point())),
            settings,
            allowed_client_addresses: workers.iter().map(|w| w.address.clone()).collect(),
            separate_wal: spec.layout.separate_wal,
            drop_os_cache: spec.layout.drop_os_cache,
        };
        let server = match agent
            .call(
                run_id,
                attempt,
                task::Kind::PrepareServer(prepare),
                PREPARE_TIMEOUT,
            )
            .await
        {
            Ok(Outcome::PrepareServer(p)) => p,
            other => return Err(unexpected("starting", other)),
        };
        let conninfo = server.conninfo.clone().unwrap_or_default();
        let record = ServerRecord {
            build_key: server.build_key.clone(),
            build_reused: server.build_reused,
            server_version: server.server_version.clone(),
            block_size: server.block_size,
            wal_block_size: server.wal_block_size,
            server_address: format!("{}:{}", conninfo.host, conninfo.port),
            settings: server
                .effective_settings
                .iter()
                .map(|s| {
                    (
                        s.name.clone(),
                        s.setting.clone(),
                        s.unit.clone(),
                        s.source.clone(),
                    )
                })
                .collect(),
        };
        self.catalog
            .record_server(run_id, attempt, &record)
            .await
            .map_err(|e| fail("starting", e.to_string(), ""))?;
        let choices = RunChoices {
            os_cache_dropped: Some(server.os_cache_dropped),
            wal_dir: Some(server.wal_dir.clone()).filter(|w| !w.is_empty()),
            postmaster_start_time: Some(server.postmaster_start_time.clone())
                .filter(|t| !t.is_empty()),
            ..RunChoices::default()
        };
        self.catalog
            .record_run_choices(run_id, attempt, &choices)
            .await
            .map_err(|e| fail("starting", e.to_string(), ""))?;
        self.changed(job_id);
        let (want_bs, want_wal) = (cell.block_size_kb * 1024, cell.wal_block_size_kb * 1024);
        if server.block_size != want_bs || server.wal_block_size != want_wal {
            return Err(fail(
                "starting",
                format!(
                    "live server reports block_size {} / wal_block_size {}, the cell asks for {want_bs} / {want_wal}",
                    server.block_size, server.wal_block_size
                ),
                "",
            ));
        }
        Ok(server)
    }

    async fn wait_ready(
        &self,
        progress: &mut tokio::sync::broadcast::Receiver<crate::fleet::ProgressEvent>,
        task_ids: &[String],
    ) -> Result<(), Failure> {
        let mut ready: HashMap<&str, bool> = task_ids.iter().map(|t| (t.as_str(), false)).collect();
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        while ready.values().any(|r| !r) {
            match tokio::time::timeout_at(deadline, progress.recv()).await {
                Ok(Ok(p)) if p.stage == "ready" => {
                    if let Some(r) = ready.get_mut(p.task_id.as_str()) {
                        *r = true;
                    }
                }
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(_)) => return Err(fail("measuring", "progress channel closed", "")),
                Err(_) => {
                    return Err(fail(
                        "measuring",
                        format!("workers did not connect their clients within {READY_TIMEOUT:?}"),
                        "",
                    ));
                }
            }
        }
        Ok(())
    }

    async fn snapshot(
        &self,
        agent: &HostSession,
        run_id: &str,
        attempt: u32,
        checkpoint: bool,
    ) -> Result<SnapshotStatsResult, Failure> {
        let task = SnapshotStatsTask {
            checkpoint_first: checkpoint,
        };
        match agent
            .call(
                run_id,
                attempt,
                task::Kind::SnapshotStats(task),
                STATS_TIMEOUT,
            )
            .await
        {
            Ok(Outcome::SnapshotStats(s)) => Ok(s),
            other => Err(unexpected("measuring", other)),
        }
    }
}

/// after - before for every numeric counter present in both snapshots.
fn deltas(before: &SnapshotStatsResult, after: &SnapshotStatsResult) -> Vec<(String, f64)> {
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

/// What makes a measurement suspect (see README: suspect runs).
fn suspect_reasons(
    merged: &RunLoadResult,
    parts: &[RunLoadResult],
    threads: u32,
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
    let saturated = parts.iter().any(|p| {
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
