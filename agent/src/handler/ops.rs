//! The agent's tasks beyond the cluster life cycle: statistics snapshots (with crash
//! detection), the I/O probe, listing and evicting builds.

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    ListBuildsResult, RunProbeResult, RunProbeTask, SnapshotStatsResult, SnapshotStatsTask,
};

use super::convert;
use super::state::AgentHandler;
use crate::error::AgentError;
use crate::probe;

/// A probe's result plus the reasons for rows it had to skip (the wire row has no field for
/// them; they also go out as progress messages).
#[derive(Clone, Debug)]
pub struct ProbeReport {
    pub result: RunProbeResult,
    pub skipped: Vec<String>,
}

impl AgentHandler {
    /// Server statistics of the run's cluster (task `SnapshotStats`). A postmaster that is
    /// gone is an error naming its pid, with the server log's tail.
    pub async fn snapshot_stats(
        &self,
        run_id: &str,
        task: &SnapshotStatsTask,
    ) -> Result<SnapshotStatsResult, AgentError> {
        let c = self.cluster_of(run_id)?;
        let snap = crate::stats::snapshot(&c, task.checkpoint_first, task.settle_sessions).await?;
        let taken_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        Ok(SnapshotStatsResult {
            stats_json: serde_json::Value::Object(snap.stats).to_string(),
            postmaster_start_time: snap.postmaster_start_time,
            checkpoint_done: snap.checkpoint_done,
            taken_at,
        })
    }

    /// The I/O probe in the data or WAL root (task `RunProbe`), on a blocking thread.
    pub async fn run_probe(
        &self,
        task: &RunProbeTask,
        progress: Option<&ProgressSink>,
    ) -> Result<ProbeReport, AgentError> {
        let dir = match task.target.as_str() {
            "" | "data" => self.config.data_root(),
            "wal" => self.config.wal_root(),
            other => {
                return Err(AgentError::invalid(
                    "target",
                    format!("{other:?} is not \"data\" or \"wal\""),
                ));
            }
        };
        let params = probe::params(&convert::probe_request(task))?;
        check_space(&dir, params.file_size)?;
        if let Some(p) = progress {
            p.stage(
                blocklab_spec::Stage::Probing,
                &format!("I/O probe in {}", dir.display()),
            )
            .await;
        }
        let (d, pp) = (dir.clone(), params.clone());
        let outcome = tokio::task::spawn_blocking(move || probe::run(&d, &pp))
            .await
            .map_err(|e| AgentError::Other(format!("probe thread panicked: {e}")))??;
        if let Some(p) = progress {
            for s in &outcome.skipped {
                p.stage(blocklab_spec::Stage::Probing, s).await;
            }
        }
        let fs = fs_of(&dir);
        Ok(ProbeReport {
            result: RunProbeResult {
                rows: outcome.rows.into_iter().map(convert::probe_row).collect(),
                device: fs.as_ref().map(|f| f.device.clone()).unwrap_or_default(),
                filesystem: fs.map(|f| f.fs_type).unwrap_or_default(),
            },
            skipped: outcome.skipped,
        })
    }

    /// The complete builds in the cache, most recently used first (task `ListBuilds`).
    pub async fn list_builds(&self) -> ListBuildsResult {
        let root = self.config.build_cache.clone();
        let builds = tokio::task::spawn_blocking(move || crate::cache::list(&root))
            .await
            .unwrap_or_default();
        ListBuildsResult {
            builds: builds.iter().map(convert::build_info).collect(),
        }
    }

    /// Applies `build_cache_max_bytes` (no-op without a cap). Failures are logged only.
    pub async fn evict_builds(&self) {
        let Some(max) = self.config.build_cache_max_bytes else {
            return;
        };
        let root = self.config.build_cache.clone();
        let trim = move || {
            let removed = crate::cache::evict_lru(&root, max)?;
            let stores = crate::cache::evict_stores(&root)?;
            Ok::<_, AgentError>((removed, stores))
        };
        match tokio::task::spawn_blocking(trim).await {
            Ok(Ok((removed, stores))) if !removed.is_empty() || !stores.is_empty() => {
                tracing::info!(?removed, ?stores, max_bytes = max, "build cache trimmed");
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "build cache clean-up failed"),
            Err(e) => tracing::warn!(error = %e, "build cache clean-up panicked"),
        }
    }
}

fn fs_of(dir: &std::path::Path) -> Option<crate::facts::FsFacts> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| crate::facts::parse_mountinfo(&t))
        .unwrap_or_default();
    crate::facts::fs_facts(dir, &mounts)
}

/// Refuses a probe file that would leave less than 1 GiB (or 5% of a small filesystem) free:
/// the probe must not fill the disk PostgreSQL lives on.
fn check_space(dir: &std::path::Path, size: u64) -> Result<(), AgentError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| AgentError::io(format!("create {}", dir.display()), e))?;
    let st = nix::sys::statvfs::statvfs(dir)
        .map_err(|e| AgentError::io(format!("statvfs {}", dir.display()), e.into()))?;
    let avail = st.blocks_available() * st.fragment_size();
    let total = st.blocks() * st.fragment_size();
    let reserve = (total / 20).min(1 << 30);
    if size.saturating_add(reserve) > avail {
        return Err(AgentError::invalid(
            "file_size_bytes",
            format!(
                "{size} bytes would leave less than {reserve} bytes free in {} ({avail} bytes available)",
                dir.display()
            ),
        ));
    }
    Ok(())
}
