//! Task `RunMaintenance`: the wire task becomes a checked [`crate::maintenance`] plan, which
//! runs on the run's cluster; the report goes back as the wire result. Task `RestoreDump`:
//! the user's dump restored into the run's database before its first window.

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    RestoreDumpResult, RestoreDumpTask, RunMaintenanceResult, RunMaintenanceTask,
};
use blocklab_spec::Stage;

use super::convert;
use super::state::AgentHandler;
use crate::cluster::Cluster;
use crate::error::AgentError;

/// The longest a user's dump may take to restore.
const RESTORE_LIMIT: std::time::Duration = std::time::Duration::from_secs(6 * 60 * 60);

impl AgentHandler {
    /// Runs the task's steps in order on the run's cluster (task `RunMaintenance`).
    pub async fn run_maintenance(
        &self,
        run_id: &str,
        task: &RunMaintenanceTask,
        progress: &ProgressSink,
    ) -> Result<RunMaintenanceResult, AgentError> {
        let plan = convert::maint_plan(task)?;
        let c = self.cluster_of(run_id)?;
        let on_restart = |restarted: &Cluster| self.restarted(restarted);
        let report = crate::maintenance::run(c, &plan, progress, &on_restart).await?;
        Ok(convert::maint_result(report))
    }

    /// Restores the user's dump into the run's database (task `RestoreDump`).
    pub async fn restore_dump(
        &self,
        run_id: &str,
        task: &RestoreDumpTask,
        progress: &ProgressSink,
    ) -> Result<RestoreDumpResult, AgentError> {
        let c = self.cluster_of(run_id)?;
        progress
            .stage(Stage::LoadingData, &format!("pg_restore {}", task.path))
            .await;
        let path = std::path::Path::new(&task.path);
        let forbidden = [
            self.config.data_root(),
            self.config.wal_root(),
            self.config.build_cache.clone(),
        ];
        let dumps_dir = self.config.dumps_dir();
        let roots = crate::maintenance::DumpRoots {
            dumps_dir: &dumps_dir,
            forbidden: &forbidden,
        };
        let r = crate::maintenance::restore_dump(&c, RESTORE_LIMIT, path, &roots).await?;
        tracing::info!(run_id, dump = %task.path, seconds = r.seconds, bytes = r.bytes, "dump restored");
        Ok(convert::restore_result(r))
    }
}
