//! Task `RunMaintenance`: the wire task becomes a checked [`crate::maintenance`] plan, which
//! runs on the run's cluster; the report goes back as the wire result.

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{RunMaintenanceResult, RunMaintenanceTask};

use super::convert;
use super::state::AgentHandler;
use crate::cluster::Cluster;
use crate::error::AgentError;

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
}
