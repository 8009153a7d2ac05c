//! One async function per task a host runs: domain arguments in, domain results out. The
//! task messages are built, and their outcomes matched, only here; the scheduler speaks of
//! builds, servers and resets, not of `task::Kind` and `Outcome`.

mod load;
mod outcome;
mod types;

use std::time::Duration;

use blocklab_proto::v1 as pb;
use blocklab_proto::v1::{task, task_result::Outcome};

use super::{CallError, HostSession};
use crate::catalog::Probed;
pub use load::{Initialized, Load, Restored, Share, StepDone};
use outcome::failure;
pub use outcome::{RunOf, TaskError};
pub use types::{
    BuildOf, Built, CachesReset, ConnInfo, EffectiveSetting, Maintained, ProbeRequest, Reset,
    Server, ServerRequest, SettingProblem, Snapshot, WalStats,
};

impl HostSession {
    /// Makes a build (or finds it in the agent's cache). `task_id` is the caller's, so it can
    /// follow the build's progress.
    pub async fn build(
        &self,
        task_id: &str,
        build: BuildOf<'_>,
        timeout: Duration,
    ) -> Result<Built, TaskError> {
        let kind = task::Kind::Build(pb::BuildTask {
            options: Some(build.into()),
        });
        match self.call_with_id(task_id, "", 0, kind, timeout).await? {
            Outcome::Build(b) => Ok(b.into()),
            other => Err(failure("a build", other)),
        }
    }

    /// Starts a server of a build with the given settings (initdb, conf, start, proof).
    pub async fn prepare_server(
        &self,
        run: RunOf<'_>,
        request: ServerRequest<'_>,
        timeout: Duration,
    ) -> Result<Server, TaskError> {
        let kind = task::Kind::PrepareServer(request.into());
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::PrepareServer(p) => Ok(p.into()),
            other => Err(failure("a server start", other)),
        }
    }

    /// Stops the run's server and removes its cluster.
    pub async fn stop_server(&self, run: RunOf<'_>, timeout: Duration) -> Result<(), TaskError> {
        let kind = task::Kind::StopServer(pb::StopServerTask {});
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::StopServer(_) => Ok(()),
            other => Err(failure("a server stop", other)),
        }
    }

    /// Reads the server's statistics, after a CHECKPOINT (`checkpoint_first`) or once the
    /// run's client sessions have closed (`settle_sessions`).
    pub async fn snapshot_stats(
        &self,
        run: RunOf<'_>,
        checkpoint_first: bool,
        settle_sessions: bool,
        timeout: Duration,
    ) -> Result<Snapshot, TaskError> {
        let kind = task::Kind::SnapshotStats(pb::SnapshotStatsTask {
            checkpoint_first,
            settle_sessions,
        });
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::SnapshotStats(s) => Ok(s.into()),
            other => Err(failure("a statistics snapshot", other)),
        }
    }

    /// Starts the load of task `task_id`, parked until now after connecting its clients.
    pub async fn go(&self, task_id: &str, run: RunOf<'_>) -> Result<(), CallError> {
        self.notify(pb::coordinator_message::Kind::Go(pb::Go {
            task_id: task_id.to_string(),
            run_id: run.run_id.to_string(),
            attempt: run.attempt,
        }))
        .await
    }

    /// Stops whatever this host still runs for the run attempt.
    pub async fn cancel(&self, run: RunOf<'_>) -> Result<(), CallError> {
        self.notify(pb::coordinator_message::Kind::Cancel(pb::CancelTask {
            task_id: String::new(),
            run_id: run.run_id.to_string(),
            attempt: run.attempt,
        }))
        .await
    }

    /// Empties the caches the reset names.
    pub async fn reset_caches(
        &self,
        run: RunOf<'_>,
        reset: Reset,
        timeout: Duration,
    ) -> Result<CachesReset, TaskError> {
        let kind = task::Kind::ResetCaches(reset.into());
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::ResetCaches(r) => Ok(r.into()),
            other => Err(failure("a cache reset", other)),
        }
    }

    /// The full-page-image bytes between two LSNs (`pg_waldump --stats`).
    pub async fn wal_stats(
        &self,
        run: RunOf<'_>,
        start_lsn: u64,
        end_lsn: u64,
        timeout: Duration,
    ) -> Result<WalStats, TaskError> {
        let kind = task::Kind::WalStats(pb::WalStatsTask {
            start_lsn_bytes: start_lsn,
            end_lsn_bytes: end_lsn,
        });
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::WalStats(r) => Ok(r.into()),
            other => Err(failure("a WAL statistics task", other)),
        }
    }

    /// Times maintenance steps on a generated table of `scale` x 100,000 rows, resetting the
    /// caches once after the load when `reset` is given.
    pub async fn run_maintenance(
        &self,
        run: RunOf<'_>,
        scale: u32,
        steps: &[String],
        reset: Option<Reset>,
        timeout: Duration,
    ) -> Result<Maintained, TaskError> {
        let kind = task::Kind::RunMaintenance(pb::RunMaintenanceTask {
            scale,
            steps: steps.to_vec(),
            reset_after_load: reset.map(Into::into),
        });
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::RunMaintenance(r) => Ok(r.into()),
            other => Err(failure("a maintenance task", other)),
        }
    }

    /// Probes a target directory's I/O.
    pub async fn run_probe(
        &self,
        run: RunOf<'_>,
        probe: ProbeRequest,
        timeout: Duration,
    ) -> Result<Probed, TaskError> {
        let kind = task::Kind::RunProbe(probe.into());
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::RunProbe(r) => Ok(r.into()),
            other => Err(failure("a probe", other)),
        }
    }

    /// What a build says of settings (`postgres -C` on its GUC catalog): the refused ones.
    pub async fn check_settings(
        &self,
        build: BuildOf<'_>,
        settings: &[(String, String)],
        timeout: Duration,
    ) -> Result<Vec<SettingProblem>, TaskError> {
        let kind = task::Kind::CheckSettings(pb::CheckSettingsTask {
            build: Some(build.into()),
            settings: types::settings(settings),
        });
        match self.call("", 0, kind, timeout).await? {
            Outcome::CheckSettings(r) => Ok(r.problems.into_iter().map(Into::into).collect()),
            other => Err(failure("a settings check", other)),
        }
    }
}
