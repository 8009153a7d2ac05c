//! Tasks around a measured window: the cache reset after the data load (`ResetCaches`) and
//! the WAL statistics of the window's LSN range (`WalStats`).

use blocklab_proto::{ResetCachesResult, ResetCachesTask, WalStatsResult, WalStatsTask};
use std::time::Duration;

use super::convert;
use super::state::AgentHandler;
use crate::cluster;
use crate::error::AgentError;

/// How long the clean stop (its shutdown checkpoint) or the CHECKPOINT of a reset may take.
const RESET_LIMIT: Duration = Duration::from_secs(15 * 60);

impl AgentHandler {
    /// Empties the caches the task names on the run's server (task `ResetCaches`).
    pub async fn reset_caches(
        &self,
        run_id: &str,
        task: &ResetCachesTask,
    ) -> Result<ResetCachesResult, AgentError> {
        let mut c = self.cluster_of(run_id)?;
        if !cluster::is_running(&c) {
            return Err(crate::stats::server_gone(&c));
        }
        let plan = convert::reset_plan(task);
        let done = cluster::reset(&mut c, plan, RESET_LIMIT).await?;
        if plan.restart_server && !self.restarted(&c) {
            // The run was stopped meanwhile: do not leave a server behind.
            let _ = cluster::stop(&c).await;
            return Err(AgentError::UnknownRun(run_id.to_string()));
        }
        tracing::info!(
            run_id,
            server_restarted = done.server_restarted,
            os_cache_dropped = done.os_cache.dropped(),
            "caches reset"
        );
        Ok(convert::reset_result(done))
    }

    /// `pg_waldump --stats` over the task's LSN range of the run's WAL (task `WalStats`).
    pub async fn wal_stats(
        &self,
        run_id: &str,
        task: &WalStatsTask,
    ) -> Result<WalStatsResult, AgentError> {
        let c = self.cluster_of(run_id)?;
        let range =
            crate::waldump::read_range(&c, task.start_lsn_bytes, task.end_lsn_bytes).await?;
        Ok(convert::wal_stats_result(range))
    }
}
