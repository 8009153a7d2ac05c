//! The cluster value the agent keeps per run, what it hands out about a started server,
//! and the `pg_ctl` command for it (shared by start, stop and the maintenance restart).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::process::{Cmd, RunAs};

const PG_CTL_TIMEOUT: Duration = Duration::from_secs(120);

/// A cluster this agent started.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub data_dir: PathBuf,
    /// Where WAL lives when it is not `data_dir/pg_wal` (that is then a symlink to it).
    pub wal_dir: Option<PathBuf>,
    pub port: u16,
    pub install: PathBuf,
    pub run_as: RunAs,
    pub listen: IpAddr,
    /// The superuser's password (the agent's own connections; never handed out).
    pub password: String,
    /// The password of the run's role, handed to the workers.
    pub client_password: String,
    /// The postmaster's pid once started (0 before).
    pub pid: i32,
    /// Keeps the build marked in use while the cluster exists.
    pub build_in_use: Option<Arc<std::fs::File>>,
    /// postgresql.conf and pg_hba.conf as the plan made them, written again before every
    /// start: nothing the server or the run's SQL appended survives a restart.
    pub conf_text: String,
    pub hba_text: String,
    /// Where the server's log is kept when the cluster is removed (`None`: not kept).
    pub server_logs: Option<PathBuf>,
}

/// How clients reach a started server (the run's non-superuser role and the `bench`
/// database).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnParams {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub dbname: String,
}

/// A setting the live server runs with (from `pg_settings`): every one not at its default,
/// and every memory setting (unit B, kB, MB, GB or a page), whatever its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSetting {
    pub name: String,
    pub setting: String,
    pub unit: String,
    pub source: String,
}

pub(crate) fn pg_ctl(c: &Cluster) -> Cmd {
    Cmd::new("pg_ctl", c.install.join("bin/pg_ctl"), PG_CTL_TIMEOUT)
        .arg("-D")
        .arg(&c.data_dir)
        .cwd(&c.run_dir)
        .env("HOME", &c.run_dir.to_string_lossy())
        .run_as(Some(&c.run_as))
}
