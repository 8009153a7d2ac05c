//! The agent's task handler (Fleet tasks): builds, prepares and stops clusters, remembers
//! which clusters are running, and runs statistics, cache reset, WAL statistics, probe and
//! maintenance tasks on them.
//! This is the only part of the agent that speaks the wire types: `convert` turns tasks
//! into the domain modules' inputs and their results back into wire results.

use blocklab_daemon::fleet::{ProgressSink, TaskHandler, task_error};
use blocklab_proto::{Task, task, task_result};
use blocklab_spec::Stage;

mod convert;
mod lifecycle;
mod maintenance;
mod ops;
mod reset;
mod settings;
mod state;

pub use ops::ProbeReport;
pub use state::{AgentHandler, TaskFailure};

impl TaskHandler for AgentHandler {
    async fn handle(&self, task: Task, progress: ProgressSink) -> task_result::Outcome {
        match task.kind {
            Some(task::Kind::Build(b)) => {
                let options = b.options.unwrap_or_default();
                match self.ensure_build(&options, Some(&progress)).await {
                    Ok(r) => task_result::Outcome::Build(r),
                    Err(e) => TaskFailure::at(Stage::Building)(e).into_outcome(),
                }
            }
            Some(task::Kind::PrepareServer(p)) => {
                match self.prepare_server(&task.run_id, &p, &progress).await {
                    Ok(r) => task_result::Outcome::PrepareServer(r),
                    Err(f) => f.into_outcome(),
                }
            }
            Some(task::Kind::StopServer(_)) => match self.stop_server(&task.run_id).await {
                Ok(r) => task_result::Outcome::StopServer(r),
                Err(e) => TaskFailure::at(Stage::Stopping)(e).into_outcome(),
            },
            Some(task::Kind::SnapshotStats(s)) => match self.snapshot_stats(&task.run_id, &s).await
            {
                Ok(r) => task_result::Outcome::SnapshotStats(r),
                Err(e) => TaskFailure::at(Stage::Measuring)(e).into_outcome(),
            },
            Some(task::Kind::RunProbe(p)) => match self.run_probe(&p, Some(&progress)).await {
                Ok(r) => task_result::Outcome::RunProbe(r.result),
                Err(e) => TaskFailure::at(Stage::Probing)(e).into_outcome(),
            },
            Some(task::Kind::ListBuilds(_)) => {
                task_result::Outcome::ListBuilds(self.list_builds().await)
            }
            Some(task::Kind::RunMaintenance(m)) => {
                match self.run_maintenance(&task.run_id, &m, &progress).await {
                    Ok(r) => task_result::Outcome::RunMaintenance(r),
                    Err(e) => TaskFailure::at(Stage::Maintenance)(e).into_outcome(),
                }
            }
            Some(task::Kind::RestoreDump(r)) => {
                match self.restore_dump(&task.run_id, &r, &progress).await {
                    Ok(r) => task_result::Outcome::RestoreDump(r),
                    Err(e) => TaskFailure::at(Stage::LoadingData)(e).into_outcome(),
                }
            }
            Some(task::Kind::ResetCaches(r)) => match self.reset_caches(&task.run_id, &r).await {
                Ok(r) => task_result::Outcome::ResetCaches(r),
                Err(e) => TaskFailure::at(Stage::WarmingUp)(e).into_outcome(),
            },
            Some(task::Kind::WalStats(w)) => match self.wal_stats(&task.run_id, &w).await {
                Ok(r) => task_result::Outcome::WalStats(r),
                Err(e) => TaskFailure::at(Stage::Collecting)(e).into_outcome(),
            },
            Some(task::Kind::CheckSettings(c)) => match self.check_settings(&c).await {
                Ok(r) => task_result::Outcome::CheckSettings(r),
                Err(e) => TaskFailure::at(Stage::Building)(e).into_outcome(),
            },
            Some(other) => task_error(
                Stage::Starting.as_str(),
                format!("an agent does not run {} tasks", kind_name(&other)),
                "",
            ),
            None => task_error(Stage::Starting.as_str(), "task has no kind", ""),
        }
    }

    async fn on_fence(&self) {
        let running = self.running();
        if !running.is_empty() {
            tracing::warn!(runs = ?running, "fenced: stopping every cluster of this agent");
        }
        self.stop_all().await;
    }

    async fn on_shutdown(&self) {
        self.stop_all().await;
    }
}

fn kind_name(k: &task::Kind) -> &'static str {
    match k {
        task::Kind::Build(_) => "build",
        task::Kind::PrepareServer(_) => "prepare_server",
        task::Kind::StopServer(_) => "stop_server",
        task::Kind::InitData(_) => "init_data",
        task::Kind::RunLoad(_) => "run_load",
        task::Kind::SnapshotStats(_) => "snapshot_stats",
        task::Kind::RunProbe(_) => "run_probe",
        task::Kind::ListBuilds(_) => "list_builds",
        task::Kind::WorkloadStep(_) => "workload_step",
        task::Kind::RunMaintenance(_) => "run_maintenance",
        task::Kind::RestoreDump(_) => "restore_dump",
        task::Kind::ResetCaches(_) => "reset_caches",
        task::Kind::WalStats(_) => "wal_stats",
        task::Kind::CheckSettings(_) => "check_settings",
    }
}
