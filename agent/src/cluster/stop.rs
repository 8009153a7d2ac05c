//! Stopping clusters: fast shutdown, SIGKILL as the last resort, removal of the run's
//! directories; and whether a postmaster still lives.

use std::path::Path;
use std::time::{Duration, Instant};

use super::types::{Cluster, pg_ctl};
use crate::error::AgentError;
use crate::process::log_tail;

/// Stops the server (fast, then SIGKILL of the postmaster if that fails) and removes the
/// run directory.
pub async fn stop(c: &Cluster) -> Result<(), AgentError> {
    let pid = postmaster_pid(&c.data_dir);
    if let Some(pid) = pid {
        let res = pg_ctl(c)
            .args(["-m", "fast", "-w", "-t", "60", "stop"])
            .run_logged(&c.run_dir.join("pg_ctl.log"))
            .await;
        if let Err(e) = res {
            tracing::warn!(run_id = %c.run_id, pid, error = %e, "pg_ctl stop failed; killing postmaster");
            kill_postmaster(pid, Duration::ZERO)
                .await
                .map_err(|k| AgentError::Process {
                    what: "stop".into(),
                    reason: format!("{e}; then {k}"),
                    log_tail: log_tail(&[
                        &c.run_dir.join("pg_ctl.log"),
                        &c.run_dir.join("postgres.log"),
                    ]),
                })?;
        }
    }
    keep_server_log(c);
    if let Some(w) = &c.wal_dir {
        remove_run_dir(w).await?;
    }
    remove_run_dir(&c.run_dir).await
}

/// The agent's directory of kept server logs, below its work directory.
pub const SERVER_LOGS_DIR: &str = "server-logs";
/// Kept server logs: the newest this many stay.
const SERVER_LOGS_KEPT: usize = 200;
/// A larger log is not kept.
const SERVER_LOG_MAX_BYTES: u64 = 64 << 20;

/// Moves the run's `postgres.log` to `<server_logs>/<run_id>.log` (the link itself, never
/// what a link points to) and removes the oldest kept logs beyond [`SERVER_LOGS_KEPT`].
/// Failures are logged: a log not kept never fails a stop.
fn keep_server_log(c: &Cluster) {
    let Some(dir) = &c.server_logs else {
        return;
    };
    let from = c.run_dir.join("postgres.log");
    let kept = || -> std::io::Result<()> {
        let meta = std::fs::symlink_metadata(&from)?;
        if !meta.is_file() || meta.len() > SERVER_LOG_MAX_BYTES {
            return Err(std::io::Error::other(format!(
                "not a regular file of at most {SERVER_LOG_MAX_BYTES} bytes"
            )));
        }
        std::fs::create_dir_all(dir)?;
        let to = dir.join(format!("{}.log", c.run_id));
        if std::fs::rename(&from, &to).is_err() {
            // Another file system: copy what the name holds, never through a link.
            let mut src = crate::fsutil::open_nofollow(&from)?;
            std::io::copy(&mut src, &mut std::fs::File::create(&to)?)?;
        }
        let mut logs: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(dir)?
            .flatten()
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if logs.len() > SERVER_LOGS_KEPT {
            logs.sort();
            for (_, old) in &logs[..logs.len() - SERVER_LOGS_KEPT] {
                std::fs::remove_file(old)?;
            }
        }
        Ok(())
    };
    if let Err(e) = kept() {
        tracing::warn!(run_id = %c.run_id, error = %e, "server log not kept");
    }
}

/// Stops whatever postmaster a run directory we no longer track still has (e.g. after an
/// agent restart) and removes the directory.
pub async fn stop_untracked(run_dir: &Path, wal_dir: &Path) -> Result<(), AgentError> {
    if let Some(pid) = postmaster_pid(&run_dir.join("data")) {
        kill_postmaster(pid, Duration::from_secs(30))
            .await
            .map_err(|e| AgentError::Other(format!("stop postmaster {pid}: {e}")))?;
    }
    remove_run_dir(wal_dir).await?;
    remove_run_dir(run_dir).await
}

/// Whether the cluster's postmaster is still the live process it was at start.
pub fn is_running(c: &Cluster) -> bool {
    c.pid > 0 && postmaster_pid(&c.data_dir) == Some(c.pid)
}

/// Removes a run's directory off the async threads: thousands of unlinks on a busy disk take
/// seconds, and the session's heartbeats must not wait for them.
async fn remove_run_dir(dir: &Path) -> Result<(), AgentError> {
    let owned = dir.to_path_buf();
    let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(owned))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AgentError::io(format!("remove {}", dir.display()), e)),
    }
}

/// The postmaster pid from `postmaster.pid`, if that process is alive and is a postgres.
pub fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    let pid: i32 = text.lines().next()?.trim().parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    (pid > 1 && String::from_utf8_lossy(argv0).contains("postgres")).then_some(pid)
}

/// SIGINT (fast shutdown) and wait up to `grace`, then SIGKILL and wait for it to go.
async fn kill_postmaster(pid: i32, grace: Duration) -> Result<(), String> {
    use nix::sys::signal::{Signal, kill};
    let p = nix::unistd::Pid::from_raw(pid);
    let alive = || kill(p, None).is_ok();
    if !grace.is_zero() {
        let _ = kill(p, Signal::SIGINT);
        let deadline = Instant::now() + grace;
        while alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    if alive() {
        kill(p, Signal::SIGKILL).map_err(|e| format!("SIGKILL {pid}: {e}"))?;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if alive() {
        return Err(format!("postmaster {pid} still alive after SIGKILL"));
    }
    Ok(())
}
