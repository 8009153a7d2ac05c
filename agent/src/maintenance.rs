//! Maintenance timings on a run's server: bulk load (COPY), CREATE INDEX, VACUUM ANALYZE,
//! CHECKPOINT, `count(*)` with a warm and a cold cache, dump and restore with the build's
//! own pg_dump / pg_restore. Each step is timed and reported as `maint.<step>` seconds.

use blocklab_proto::fleet::ProgressSink;
use blocklab_proto::{RunMaintenanceResult, RunMaintenanceTask};

use super::AgentHandler;
use crate::error::AgentError;

impl AgentHandler {
    /// Runs the task's steps in order on the run's cluster (task `RunMaintenance`).
    pub async fn run_maintenance(
        &self,
        run_id: &str,
        task: &RunMaintenanceTask,
        progress: &ProgressSink,
    ) -> Result<RunMaintenanceResult, AgentError> {
        let _ = (run_id, task, progress);
        Err(AgentError::Invalid {
            field: "run_maintenance".into(),
            reason: "not implemented yet".into(),
        })
    }
}
