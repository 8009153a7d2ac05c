//! Spawning external programs the one way the agent does it: argv only (never a shell),
//! a cleared environment, stdin from /dev/null, stdout and stderr into a log file, a
//! timeout that kills the child's whole process group, and optionally another OS user.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::error::AgentError;

/// The `PATH` every child gets.
pub const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How many log lines an error report carries.
pub const LOG_TAIL_LINES: usize = 40;

/// An OS identity to run a child as (only possible when the agent is root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Whether the agent must switch identity (it is root and the user is someone else).
    pub switch: bool,
}

/// One program invocation.
#[derive(Clone, Debug)]
pub struct Cmd {
    /// Short name used in errors and traces (e.g. `configure`).
    pub what: String,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
    pub run_as: Option<RunAs>,
}

impl Cmd {
    pub fn new(what: &str, program: impl Into<PathBuf>, timeout: Duration) -> Self {
        Self {
            what: what.to_string(),
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            timeout,
            run_as: None,
        }
    }

    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.args.push(a.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    pub fn run_as(mut self, who: Option<&RunAs>) -> Self {
        self.run_as = who.cloned();
        self
    }

    fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.program);
        c.args(&self.args)
            .env_clear()
            .env("PATH", CHILD_PATH)
            .env("LANG", "C")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(who) = &self.run_as {
            c.env("USER", &who.name).env("LOGNAME", &who.name);
            if who.switch {
                c.uid(who.uid).gid(who.gid);
            }
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        if let Some(dir) = &self.cwd {
            c.current_dir(dir);
        }
        c
    }

    /// Runs to completion with stdout+stderr appended to `log`. Fails on a non-zero exit,
    /// a spawn error or the timeout; the error carries the log's tail.
    pub async fn run_logged(&self, log: &Path) -> Result<(), AgentError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| AgentError::io(format!("open log {}", log.display()), e))?;
        let err_file = file
            .try_clone()
            .map_err(|e| AgentError::io(format!("open log {}", log.display()), e))?;
        let mut c = self.command();
        c.stdout(Stdio::from(file)).stderr(Stdio::from(err_file));
        let started = Instant::now();
        tracing::debug!(what = %self.what, program = %self.program.display(), args = ?self.args, "spawning");
        let status = self.wait(c).await;
        let elapsed = started.elapsed().as_secs_f64();
        match status {
            Ok(()) => {
                tracing::debug!(what = %self.what, seconds = elapsed, "process finished");
                Ok(())
            }
            Err(reason) => Err(AgentError::Process {
                what: self.what.clone(),
                reason,
                log_tail: log_tail(&[log]),
            }),
        }
    }

    /// Runs to completion and returns stdout (stderr discarded); for short queries such
    /// as `gcc --version`.
    pub async fn output(&self) -> Result<String, AgentError> {
        let mut c = self.command();
        c.stdout(Stdio::piped()).stderr(Stdio::null());
        let child = c.spawn().map_err(|e| self.spawn_error(&e))?;
        let pgid = child.id();
        match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Ok(Ok(out)) if out.status.success() => {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            }
            Ok(Ok(out)) => Err(self.failure(format!("exited with {}", out.status))),
            Ok(Err(e)) => Err(self.failure(format!("wait failed: {e}"))),
            Err(_) => {
                kill_group(pgid);
                Err(self.failure(format!("timed out after {:?}", self.timeout)))
            }
        }
    }

    async fn wait(&self, mut c: tokio::process::Command) -> Result<(), String> {
        let mut child = c
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", self.program.display()))?;
        let pgid = child.id();
        match tokio::time::timeout(self.timeout, child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(format!("exited with {status}")),
            Ok(Err(e)) => Err(format!("wait failed: {e}")),
            Err(_) => {
                kill_group(pgid);
                let _ = child.kill().await;
                Err(format!("timed out after {:?} and was killed", self.timeout))
            }
        }
    }

    fn spawn_error(&self, e: &std::io::Error) -> AgentError {
        self.failure(format!("could not start {}: {e}", self.program.display()))
    }

    fn failure(&self, reason: String) -> AgentError {
        AgentError::Process {
            what: self.what.clone(),
            reason,
            log_tail: String::new(),
        }
    }
}

/// Kills every process in the group led by `pgid` (children were spawned as group leaders).
fn kill_group(pgid: Option<u32>) {
    if let Some(pid) = pgid.and_then(|p| i32::try_from(p).ok())
        && let Err(e) = killpg(Pid::from_raw(pid), Signal::SIGKILL)
    {
        tracing::warn!(pgid = pid, error = %e, "could not kill process group");
    }
}

/// The last [`LOG_TAIL_LINES`] lines of the given logs (each headed by its name when
/// there are several); missing files are skipped.
pub fn log_tail(paths: &[&Path]) -> String {
    let mut parts = Vec::new();
    for p in paths {
        if let Some(t) = tail_of(p, LOG_TAIL_LINES) {
            if paths.len() > 1 {
                parts.push(format!("==> {} <==\n{t}", p.display()));
            } else {
                parts.push(t);
            }
        }
    }
    parts.join("\n")
}

fn tail_of(path: &Path, lines: usize) -> Option<String> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    // 40 lines of compiler output fit in 64 KiB with room to spare.
    let start = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    Some(all[from..].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn logs_output_and_reports_failure_with_tail() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        let ok = Cmd::new("echo", "/bin/echo", Duration::from_secs(5)).arg("hello");
        ok.run_logged(&log).await.unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "hello\n");
        let bad = Cmd::new("ls", "/bin/ls", Duration::from_secs(5)).arg("/definitely/missing");
        let err = bad.run_logged(&log).await.unwrap_err();
        match err {
            AgentError::Process { what, log_tail, .. } => {
                assert_eq!(what, "ls");
                assert!(log_tail.contains("hello"), "{log_tail}");
                assert!(log_tail.contains("/definitely/missing"), "{log_tail}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn environment_is_cleared_and_timeout_kills() {
        let out = Cmd::new("env", "/usr/bin/env", Duration::from_secs(5))
            .env("EXTRA", "1")
            .output()
            .await
            .unwrap();
        let mut keys: Vec<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
        keys.sort();
        assert_eq!(keys, ["EXTRA", "LANG", "LC_ALL", "PATH"]);

        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let err = Cmd::new("sleep", "/bin/sleep", Duration::from_millis(300))
            .arg("30")
            .run_logged(&dir.path().join("s.log"))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(err.to_string().contains("timed out"), "{err}");
    }

    #[test]
    fn tail_keeps_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.log");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let t = log_tail(&[&p]);
        assert_eq!(t.lines().count(), LOG_TAIL_LINES);
        assert!(t.ends_with("line 99"));
        assert!(t.starts_with("line 60"));
    }
}
