//! A clean restart of a run's server with the same data directory, port and settings: fast
//! stop (a shutdown checkpoint writes every dirty buffer), optionally `sync` and an OS page
//! cache drop while it is down, start. Used by the cache reset before a measured window and by
//! the maintenance `count-cold` step.

use std::time::Duration;

use super::{Cluster, agent_config, pg_ctl, postmaster_pid, start};
use crate::error::AgentError;

/// What a restart did about the OS page cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheDrop {
    /// Not asked for.
    Skipped,
    Dropped,
    /// Asked for and not possible; the reason.
    Refused(String),
}

impl CacheDrop {
    pub fn of(asked: bool, outcome: Option<Result<(), String>>) -> Self {
        match (asked, outcome) {
            (false, _) | (true, None) => CacheDrop::Skipped,
            (true, Some(Ok(()))) => CacheDrop::Dropped,
            (true, Some(Err(reason))) => CacheDrop::Refused(reason),
        }
    }

    pub fn dropped(&self) -> bool {
        matches!(self, CacheDrop::Dropped)
    }

    /// Why it was not dropped when asked (empty otherwise).
    pub fn reason(&self) -> &str {
        match self {
            CacheDrop::Refused(r) => r,
            _ => "",
        }
    }
}

/// Stops the server cleanly within `limit`, drops the OS page cache if `drop_os_cache`,
/// starts it again; `c` gets the new postmaster's pid.
pub async fn restart(
    c: &mut Cluster,
    limit: Duration,
    drop_os_cache: bool,
) -> Result<CacheDrop, AgentError> {
    tracing::info!(run_id = %c.run_id, drop_os_cache, "restarting postgres");
    let mut stop = pg_ctl(c)
        .args(["-m", "fast", "-w", "-t"])
        .arg(limit.as_secs().to_string())
        .arg("stop");
    stop.what = "pg_ctl stop".into();
    stop.timeout = limit + Duration::from_secs(30);
    stop.run_logged(&c.run_dir.join("pg_ctl.log")).await?;
    let dropped = if drop_os_cache {
        Some(crate::fsutil::drop_os_cache().await)
    } else {
        None
    };
    start(c).await?;
    c.pid = postmaster_pid(&c.data_dir).ok_or_else(|| {
        AgentError::Other("postgres started but postmaster.pid names no live postmaster".into())
    })?;
    Ok(CacheDrop::of(drop_os_cache, dropped))
}

/// `pg_postmaster_start_time()` of the live server (waiting for it to accept connections).
pub async fn postmaster_start_time(c: &Cluster) -> Result<String, AgentError> {
    let client = super::connect_ready(&agent_config(c, "postgres")).await?;
    client
        .query_one("SELECT pg_postmaster_start_time()::text", &[])
        .await
        .and_then(|r| r.try_get(0))
        .map_err(|e| AgentError::postgres("read pg_postmaster_start_time()", &e))
}

/// CHECKPOINT (so the data load's dirty buffers reach the files), then the OS page cache
/// drop, with the server running.
pub async fn checkpoint_and_drop(c: &Cluster, limit: Duration) -> Result<CacheDrop, AgentError> {
    let client = super::connect_ready(&agent_config(c, "postgres")).await?;
    tokio::time::timeout(limit, client.batch_execute("CHECKPOINT"))
        .await
        .map_err(|_| AgentError::Other(format!("CHECKPOINT took longer than {limit:?}")))?
        .map_err(|e| AgentError::postgres("CHECKPOINT", &e))?;
    drop(client);
    Ok(CacheDrop::of(
        true,
        Some(crate::fsutil::drop_os_cache().await),
    ))
}

/// What a cache reset is asked to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResetPlan {
    pub restart_server: bool,
    pub drop_os_cache: bool,
}

impl ResetPlan {
    pub fn is_noop(self) -> bool {
        !self.restart_server && !self.drop_os_cache
    }
}

/// What a cache reset did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResetDone {
    pub server_restarted: bool,
    pub os_cache: CacheDrop,
    pub postmaster_start_time: String,
}

/// Empties the caches `plan` names: a restart (with the OS cache drop while the server is
/// down), or a CHECKPOINT and the drop with the server up. `c` follows a restart's pid.
pub async fn reset(
    c: &mut Cluster,
    plan: ResetPlan,
    limit: Duration,
) -> Result<ResetDone, AgentError> {
    let os_cache = if plan.restart_server {
        restart(c, limit, plan.drop_os_cache).await?
    } else if plan.drop_os_cache {
        checkpoint_and_drop(c, limit).await?
    } else {
        CacheDrop::Skipped
    };
    Ok(ResetDone {
        server_restarted: plan.restart_server,
        os_cache,
        postmaster_start_time: postmaster_start_time(c).await?,
    })
}
