//! One PostgreSQL cluster per run: initdb as the unprivileged user, configuration, start,
//! the proof queries, and stop + removal.

use std::collections::HashSet;
use std::net::{IpAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blocklab_proto::{ConnInfo, EffectiveSetting, Setting};
use rand::Rng;

use crate::build::Build;
use crate::conf::{DB_USER, parse_client_addresses, render_pg_hba, render_settings};
use crate::error::AgentError;
use crate::process::{Cmd, RunAs, log_tail};
use crate::users::chown_to;

const INITDB_TIMEOUT: Duration = Duration::from_secs(120);
const PG_CTL_TIMEOUT: Duration = Duration::from_secs(120);
const READY_TIMEOUT: Duration = Duration::from_secs(30);
pub const BENCH_DB: &str = "bench";

/// A cluster this agent started.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub data_dir: PathBuf,
    pub port: u16,
    pub install: PathBuf,
    pub run_as: RunAs,
}

/// What a start proved about the live server.
#[derive(Clone, Debug)]
pub struct Started {
    pub conninfo: ConnInfo,
    pub server_version: String,
    pub block_size: u32,
    pub wal_block_size: u32,
    pub effective_settings: Vec<EffectiveSetting>,
}

/// Where and as whom a cluster is created.
pub struct ClusterPlan<'a> {
    pub run_id: &'a str,
    pub run_dir: PathBuf,
    pub listen: IpAddr,
    pub port: u16,
    pub run_as: &'a RunAs,
    pub settings: &'a [Setting],
    pub allowed_clients: &'a [String],
}

/// Run ids become directory names: `[A-Za-z0-9_.-]`, not `.`/`..`, at most 128 chars.
pub fn validate_run_id(run_id: &str) -> Result<(), AgentError> {
    let ok = !run_id.is_empty()
        && run_id.len() <= 128
        && run_id != "."
        && run_id != ".."
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(AgentError::invalid(
            format!("run_id {run_id:?}"),
            "must be 1-128 characters of A-Z a-z 0-9 _ . -",
        ))
    }
}

/// The first port in `range` that no cluster of ours holds and that can be bound on `addr`.
pub fn pick_port(range: (u16, u16), addr: IpAddr, taken: &HashSet<u16>) -> Option<u16> {
    (range.0..=range.1)
        .filter(|p| !taken.contains(p))
        .find(|p| TcpListener::bind((addr, *p)).is_ok())
}

/// A per-run password: 32 alphanumeric characters.
pub fn generate_password() -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(32)
        .map(char::from)
        .collect()
}

/// Creates, configures and starts the cluster, and reads back what it runs with. On failure
/// the server (if started) is stopped and the run directory removed; the error carries the
/// relevant log tail.
pub async fn create(
    plan: &ClusterPlan<'_>,
    build: &Build,
) -> Result<(Cluster, Started), AgentError> {
    let clients = parse_client_addresses(plan.allowed_clients)?;
    // Validate everything before touching the disk.
    render_settings(
        plan.settings,
        &plan.listen.to_string(),
        plan.port,
        &plan.run_dir,
    )?;
    let cluster = Cluster {
        run_id: plan.run_id.to_string(),
        run_dir: plan.run_dir.clone(),
        data_dir: plan.run_dir.join("data"),
        port: plan.port,
        install: build.prefix.clone(),
        run_as: plan.run_as.clone(),
    };
    let password = generate_password();
    let result = async {
        init(&cluster, &password).await?;
        configure(&cluster, plan, &clients)?;
        start(&cluster).await?;
        prove(&cluster, plan.listen, &password).await
    }
    .await;
    match result {
        Ok(started) => Ok((cluster, started)),
        Err(e) => {
            let e = e.with_extra_log(log_tail(&[&cluster.run_dir.join("postgres.log")]));
            if let Err(stop_err) = stop(&cluster).await {
                tracing::warn!(run_id = %cluster.run_id, error = %stop_err, "cleanup after failed start failed");
            }
            Err(e)
        }
    }
}

async fn init(c: &Cluster, password: &str) -> Result<(), AgentError> {
    if c.run_dir.exists() {
        std::fs::remove_dir_all(&c.run_dir)
            .map_err(|e| AgentError::io(format!("remove stale {}", c.run_dir.display()), e))?;
    }
    std::fs::create_dir_all(&c.run_dir)
        .map_err(|e| AgentError::io(format!("create {}", c.run_dir.display()), e))?;
    set_mode(&c.run_dir, 0o700)?;
    chown_to(&c.run_dir, &c.run_as)?;
    let pwfile = c.run_dir.join("pwfile");
    std::fs::write(&pwfile, format!("{password}\n"))
        .map_err(|e| AgentError::io("write password file", e))?;
    set_mode(&pwfile, 0o600)?;
    chown_to(&pwfile, &c.run_as)?;
    let mut pw_arg = std::ffi::OsString::from("--pwfile=");
    pw_arg.push(&pwfile);
    let res = Cmd::new("initdb", c.install.join("bin/initdb"), INITDB_TIMEOUT)
        .arg("-D")
        .arg(&c.data_dir)
        .args(["-U", DB_USER])
        .arg(pw_arg)
        .args([
            "--auth-local=scram-sha-256",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
        ])
        .cwd(&c.run_dir)
        .env("HOME", &c.run_dir.to_string_lossy())
        .run_as(Some(&c.run_as))
        .run_logged(&c.run_dir.join("initdb.log"))
        .await;
    let _ = std::fs::remove_file(&pwfile);
    res
}

fn configure(c: &Cluster, plan: &ClusterPlan<'_>, clients: &[IpAddr]) -> Result<(), AgentError> {
    use std::io::Write;
    let conf = render_settings(plan.settings, &plan.listen.to_string(), c.port, &c.run_dir)?;
    let conf_path = c.data_dir.join("postgresql.conf");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&conf_path)
        .map_err(|e| AgentError::io(format!("open {}", conf_path.display()), e))?;
    f.write_all(conf.as_bytes())
        .map_err(|e| AgentError::io(format!("write {}", conf_path.display()), e))?;
    let hba_path = c.data_dir.join("pg_hba.conf");
    std::fs::write(&hba_path, render_pg_hba(clients, plan.listen))
        .map_err(|e| AgentError::io(format!("write {}", hba_path.display()), e))
}

fn pg_ctl(c: &Cluster) -> Cmd {
    Cmd::new("pg_ctl", c.install.join("bin/pg_ctl"), PG_CTL_TIMEOUT)
        .arg("-D")
        .arg(&c.data_dir)
        .cwd(&c.run_dir)
        .env("HOME", &c.run_dir.to_string_lossy())
        .run_as(Some(&c.run_as))
}

async fn start(c: &Cluster) -> Result<(), AgentError> {
    tracing::info!(run_id = %c.run_id, port = c.port, "starting postgres");
    pg_ctl(c)
        .arg("-l")
        .arg(c.run_dir.join("postgres.log"))
        .args(["-w", "-t", "60", "start"])
        .run_logged(&c.run_dir.join("pg_ctl.log"))
        .await
}

async fn prove(c: &Cluster, listen: IpAddr, password: &str) -> Result<Started, AgentError> {
    let mut cfg = tokio_postgres::Config::new();
    cfg.host(listen.to_string())
        .port(c.port)
        .user(DB_USER)
        .password(password)
        .dbname("postgres")
        .application_name("blocklab-agent")
        .connect_timeout(Duration::from_secs(5));
    let client = connect_ready(&cfg).await?;
    let show = |name: &'static str| {
        let client = &client;
        async move {
            let row = client
                .query_one(&format!("SHOW {name}"), &[])
                .await
                .map_err(|e| AgentError::postgres(format!("SHOW {name}"), &e))?;
            row.try_get::<_, String>(0)
                .map_err(|e| AgentError::postgres(format!("SHOW {name}"), &e))
        }
    };
    let parse = |name: &str, v: String| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| AgentError::Other(format!("SHOW {name} returned {v:?}")))
    };
    let block_size = parse("block_size", show("block_size").await?)?;
    let wal_block_size = parse("wal_block_size", show("wal_block_size").await?)?;
    let server_version = show("server_version").await?;
    let rows = client
        .query(
            "SELECT name, setting, coalesce(unit, ''), source FROM pg_settings \
             WHERE source NOT IN ('default', 'override') ORDER BY name",
            &[],
        )
        .await
        .map_err(|e| AgentError::postgres("read pg_settings", &e))?;
    let mut effective_settings = Vec::with_capacity(rows.len());
    for r in rows {
        let get = |i| {
            r.try_get::<_, String>(i)
                .map_err(|e| AgentError::postgres("read pg_settings", &e))
        };
        effective_settings.push(EffectiveSetting {
            name: get(0)?,
            setting: get(1)?,
            unit: get(2)?,
            source: get(3)?,
        });
    }
    client
        .batch_execute(&format!("CREATE DATABASE {BENCH_DB} OWNER {DB_USER}"))
        .await
        .map_err(|e| AgentError::postgres("create database bench", &e))?;
    tracing::info!(run_id = %c.run_id, port = c.port, block_size, wal_block_size, "postgres ready");
    Ok(Started {
        conninfo: ConnInfo {
            host: listen.to_string(),
            port: u32::from(c.port),
            user: DB_USER.into(),
            password: password.into(),
            dbname: BENCH_DB.into(),
        },
        server_version,
        block_size,
        wal_block_size,
        effective_settings,
    })
}

/// Polls until a connection succeeds (the server may still be in recovery/startup).
async fn connect_ready(cfg: &tokio_postgres::Config) -> Result<tokio_postgres::Client, AgentError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match cfg.connect(tokio_postgres::NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "agent connection closed");
                    }
                });
                return Ok(client);
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(AgentError::postgres("connect to the new server", &e));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

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
    remove_run_dir(&c.run_dir)
}

/// Stops whatever postmaster a run directory we no longer track still has (e.g. after an
/// agent restart) and removes the directory.
pub async fn stop_untracked(run_dir: &Path) -> Result<(), AgentError> {
    if let Some(pid) = postmaster_pid(&run_dir.join("data")) {
        kill_postmaster(pid, Duration::from_secs(30))
            .await
            .map_err(|e| AgentError::Other(format!("stop postmaster {pid}: {e}")))?;
    }
    remove_run_dir(run_dir)
}

fn remove_run_dir(dir: &Path) -> Result<(), AgentError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AgentError::io(format!("remove {}", dir.display()), e)),
    }
}

/// The postmaster pid from `postmaster.pid`, if that process is alive and is a postgres.
fn postmaster_pid(data_dir: &Path) -> Option<i32> {
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

fn set_mode(path: &Path, mode: u32) -> Result<(), AgentError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| AgentError::io(format!("chmod {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_checked() {
        for ok in ["r1", "job-3.run_7", "0f8fad5b-d9cb-469f-a165-70867728950e"] {
            validate_run_id(ok).unwrap();
        }
        for bad in ["", ".", "..", "a/b", "../x", "a b", &"x".repeat(129)] {
            assert!(validate_run_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn password_is_32_alphanumerics_and_random() {
        let a = generate_password();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, generate_password());
    }

    #[test]
    fn pick_port_skips_taken_and_bound_ports() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let held = TcpListener::bind((lo, 0)).unwrap();
        let p = held.local_addr().unwrap().port();
        // The bound port is skipped, and so is one we say is taken.
        let got = pick_port((p, p), lo, &HashSet::new());
        assert_eq!(got, None);
        drop(held);
        assert_eq!(pick_port((p, p), lo, &HashSet::new()), Some(p));
        assert_eq!(pick_port((p, p), lo, &HashSet::from([p])), None);
    }
}
