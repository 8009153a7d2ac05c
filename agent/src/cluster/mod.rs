//! One PostgreSQL cluster per run: initdb as the unprivileged user, configuration, start,
//! the proof queries, and stop + removal.

use std::collections::HashSet;
use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::Rng;

use crate::build::Build;
pub use crate::conf::BENCH_DB;
use crate::conf::{
    DB_USER, PgSetting, RUN_ROLE, parse_client_addresses, render_pg_hba, render_settings,
};
use crate::error::AgentError;
use crate::process::{Cmd, RunAs, log_tail};

mod restart;
mod stop;
#[cfg(test)]
mod tests;
mod types;

use crate::users::chown_to;
pub use restart::{
    CacheDrop, ResetDone, ResetPlan, checkpoint_and_drop, postmaster_start_time, reset, restart,
};
pub use stop::{SERVER_LOGS_DIR, is_running, postmaster_pid, stop, stop_untracked};
pub(crate) use types::pg_ctl;
pub use types::{Cluster, ConnParams, ServerSetting};

const INITDB_TIMEOUT: Duration = Duration::from_secs(120);
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// File in every run directory the agent created.
pub const RUN_MARKER: &str = ".blocklab-run";

/// What a start proved about the live server.
#[derive(Clone, Debug)]
pub struct Started {
    pub conninfo: ConnParams,
    pub server_version: String,
    pub block_size: u32,
    pub wal_block_size: u32,
    pub effective_settings: Vec<ServerSetting>,
    pub postmaster_start_time: String,
}

/// Where and as whom a cluster is created.
pub struct ClusterPlan<'a> {
    pub run_id: &'a str,
    pub run_dir: PathBuf,
    pub listen: IpAddr,
    pub port: u16,
    pub run_as: &'a RunAs,
    pub settings: &'a [PgSetting],
    pub allowed_clients: &'a [String],
    /// initdb `--waldir` (must not exist or be empty).
    pub wal_dir: Option<PathBuf>,
    /// Where the server's log goes when the cluster is removed (see [`Cluster::server_logs`]).
    pub server_logs: Option<PathBuf>,
    /// Archive the WAL through `basic_archive` into [`ARCHIVE_DIR`] of the run's directory.
    pub archive_wal: bool,
}

/// The directory of a run's archived WAL (with `archive_wal`), in its run directory.
pub const ARCHIVE_DIR: &str = "archive";

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
    let mut cluster = Cluster {
        run_id: plan.run_id.to_string(),
        run_dir: plan.run_dir.clone(),
        data_dir: plan.run_dir.join("data"),
        wal_dir: plan.wal_dir.clone(),
        port: plan.port,
        install: build.prefix.clone(),
        run_as: plan.run_as.clone(),
        listen: plan.listen,
        password: generate_password(),
        client_password: generate_password(),
        pid: 0,
        build_in_use: Some(build.in_use.clone()),
        conf_text: String::new(),
        hba_text: render_pg_hba(&clients, plan.listen),
        server_logs: plan.server_logs.clone(),
    };
    let result = async {
        init(&cluster, build.initdb_wal_segsize_mb).await?;
        if plan.archive_wal {
            let dir = cluster.run_dir.join(ARCHIVE_DIR);
            std::fs::create_dir(&dir)
                .map_err(|e| AgentError::io(format!("create {}", dir.display()), e))?;
            set_mode(&dir, 0o700)?;
            chown_to(&dir, &cluster.run_as)?;
        }
        cluster.conf_text = configuration(&cluster, plan)?;
        start(&cluster).await?;
        cluster.pid = postmaster_pid(&cluster.data_dir).ok_or_else(|| {
            AgentError::Other("postgres started but postmaster.pid names no live postmaster".into())
        })?;
        prove(&cluster).await
    }
    .await;
    match result {
        Ok(started) => Ok((cluster, started)),
        Err(e) => {
            let server_log = cluster.run_dir.join("postgres.log");
            let cause = std::fs::read_to_string(&server_log)
                .ok()
                .and_then(|t| crate::guc::start_failure_cause(&t));
            let e = e.with_cause(cause).with_extra_log(log_tail(&[&server_log]));
            if let Err(stop_err) = stop(&cluster).await {
                tracing::warn!(run_id = %cluster.run_id, error = %stop_err, "cleanup after failed start failed");
            }
            Err(e)
        }
    }
}

async fn init(c: &Cluster, wal_segsize_mb: Option<u32>) -> Result<(), AgentError> {
    for dir in std::iter::once(&c.run_dir).chain(c.wal_dir.as_ref()) {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(|e| AgentError::io(format!("remove stale {}", dir.display()), e))?;
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| AgentError::io(format!("create {}", dir.display()), e))?;
        set_mode(dir, 0o700)?;
        chown_to(dir, &c.run_as)?;
    }
    // Marks the directory as ours: clean-up after a restart removes only marked ones.
    std::fs::write(c.run_dir.join(RUN_MARKER), c.run_id.as_bytes())
        .map_err(|e| AgentError::io("write run marker", e))?;
    let pwfile = c.run_dir.join("pwfile");
    std::fs::write(&pwfile, format!("{}\n", c.password))
        .map_err(|e| AgentError::io("write password file", e))?;
    set_mode(&pwfile, 0o600)?;
    chown_to(&pwfile, &c.run_as)?;
    let mut pw_arg = std::ffi::OsString::from("--pwfile=");
    pw_arg.push(&pwfile);
    let mut extra: Vec<std::ffi::OsString> = Vec::new();
    if let Some(w) = &c.wal_dir {
        let mut a = std::ffi::OsString::from("--waldir=");
        a.push(w);
        extra.push(a);
    }
    if let Some(mb) = wal_segsize_mb {
        extra.push(format!("--wal-segsize={mb}").into());
    }
    let res = Cmd::new("initdb", c.install.join("bin/initdb"), INITDB_TIMEOUT)
        .arg("-D")
        .arg(&c.data_dir)
        .args(extra)
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

/// postgresql.conf as initdb wrote it, then the plan's settings and ours.
fn configuration(c: &Cluster, plan: &ClusterPlan<'_>) -> Result<String, AgentError> {
    let conf_path = c.data_dir.join("postgresql.conf");
    let initdb_conf = std::fs::read_to_string(&conf_path)
        .map_err(|e| AgentError::io(format!("read {}", conf_path.display()), e))?;
    // A crashed backend ends the run: without a restart the postmaster exits and the next
    // statistics snapshot reports it (a task's settings may still override this).
    let mut conf = format!(
        "{initdb_conf}\nrestart_after_crash = off\n{}",
        render_settings(plan.settings, &plan.listen.to_string(), c.port, &c.run_dir)?
    );
    if plan.archive_wal {
        // The agent's own lines, last: no spec names an archive setting (they are refused).
        let dir = c.run_dir.join(ARCHIVE_DIR);
        let dir = dir.to_str().ok_or_else(|| {
            AgentError::Other(format!("archive directory {} is not UTF-8", dir.display()))
        })?;
        if dir.contains(['\'', '\\', '\n']) {
            return Err(AgentError::Other(format!(
                "archive directory {dir} cannot be written in postgresql.conf"
            )));
        }
        conf.push_str(&format!(
            "archive_mode = on\narchive_library = 'basic_archive'\nbasic_archive.archive_directory = '{dir}'\n"
        ));
    }
    Ok(conf)
}

/// Writes the cluster's configuration files as the plan made them, never through a link
/// (the data directory belongs to the PostgreSQL user).
fn write_configuration(c: &Cluster) -> Result<(), AgentError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    for (name, text) in [
        ("postgresql.conf", &c.conf_text),
        ("pg_hba.conf", &c.hba_text),
    ] {
        let path = c.data_dir.join(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| AgentError::io(format!("open {}", path.display()), e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| AgentError::io(format!("write {}", path.display()), e))?;
    }
    Ok(())
}

/// Writes the configuration from the plan and starts the server.
pub(crate) async fn start(c: &Cluster) -> Result<(), AgentError> {
    write_configuration(c)?;
    tracing::info!(run_id = %c.run_id, port = c.port, "starting postgres");
    pg_ctl(c)
        .arg("-l")
        .arg(c.run_dir.join("postgres.log"))
        .args(["-w", "-t", "60", "start"])
        .run_logged(&c.run_dir.join("pg_ctl.log"))
        .await
}

/// Startup options of every agent session: names resolve in `pg_catalog` only, whatever the
/// run's settings, database or role say (the run's SQL can create functions that would
/// otherwise shadow the built-ins the agent calls as superuser).
pub const AGENT_SESSION_OPTIONS: &str = "-c search_path=pg_catalog";

/// The agent's own connection settings for the cluster.
pub fn agent_config(c: &Cluster, dbname: &str) -> tokio_postgres::Config {
    let mut cfg = tokio_postgres::Config::new();
    cfg.host(c.listen.to_string())
        .port(c.port)
        .user(DB_USER)
        .password(c.password.as_str())
        .dbname(dbname)
        .application_name("blocklab-agent")
        .options(AGENT_SESSION_OPTIONS)
        .connect_timeout(Duration::from_secs(5));
    cfg
}

async fn prove(c: &Cluster) -> Result<Started, AgentError> {
    let listen = c.listen;
    let client = connect_ready(&agent_config(c, "postgres")).await?;
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
    let postmaster_start_time: String = client
        .query_one("SELECT pg_postmaster_start_time()::text", &[])
        .await
        .and_then(|r| r.try_get(0))
        .map_err(|e| AgentError::postgres("read pg_postmaster_start_time()", &e))?;
    let rows = client
        .query(
            "SELECT name, setting, coalesce(unit, ''), source FROM pg_settings \
             WHERE source NOT IN ('default', 'override') \
                OR (unit LIKE '%B' AND context <> 'internal') ORDER BY name",
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
        effective_settings.push(ServerSetting {
            name: get(0)?,
            setting: get(1)?,
            unit: get(2)?,
            source: get(3)?,
        });
    }
    // The workers' role: owns the benchmark database's public schema and may create schemas
    // and temporary tables there, but does not own the database, so it cannot set the
    // database's settings for the agent's sessions (the password is alphanumeric, so it can
    // stand in the statement).
    client
        .batch_execute(&format!(
            "CREATE ROLE {RUN_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
             NOBYPASSRLS PASSWORD '{}'",
            c.client_password
        ))
        .await
        .map_err(|e| AgentError::postgres("create the run's role", &e))?;
    client
        .batch_execute(&format!("CREATE DATABASE {BENCH_DB}"))
        .await
        .map_err(|e| AgentError::postgres("create database bench", &e))?;
    let bench = connect_ready(&agent_config(c, BENCH_DB)).await?;
    bench
        .batch_execute(&format!(
            "ALTER SCHEMA public OWNER TO {RUN_ROLE}; \
             GRANT CREATE, TEMPORARY ON DATABASE {BENCH_DB} TO {RUN_ROLE}"
        ))
        .await
        .map_err(|e| AgentError::postgres("give the run's role its schema", &e))?;
    drop(bench);
    tracing::info!(run_id = %c.run_id, port = c.port, block_size, wal_block_size, "postgres ready");
    Ok(Started {
        conninfo: ConnParams {
            host: listen.to_string(),
            port: c.port,
            user: RUN_ROLE.into(),
            password: c.client_password.clone(),
            dbname: BENCH_DB.into(),
        },
        server_version,
        block_size,
        wal_block_size,
        effective_settings,
        postmaster_start_time,
    })
}

/// Polls until a connection succeeds (the server may still be in recovery/startup).
pub async fn connect_ready(
    cfg: &tokio_postgres::Config,
) -> Result<tokio_postgres::Client, AgentError> {
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

fn set_mode(path: &Path, mode: u32) -> Result<(), AgentError> {
    crate::fsutil::chmod_nofollow(path, mode)
        .map_err(|e| AgentError::io(format!("chmod {}", path.display()), e))
}
