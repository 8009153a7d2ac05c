//! Opening connections from a libpq-style conninfo string.

use std::str::FromStr;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

use crate::error::{WorkerError, describe};

/// Used when the conninfo names no `connect_timeout`, so a dead host fails instead of hanging.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A parsed conninfo plus the `host:port` it names, for error messages.
#[derive(Clone, Debug)]
pub struct Target {
    pub config: Config,
    pub display: String,
}

impl Target {
    pub fn parse(conninfo: &str) -> Result<Target, WorkerError> {
        let mut config =
            Config::from_str(conninfo).map_err(|e| WorkerError::Conninfo(describe(&e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("blocklab-worker");
        }
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config.get_user().unwrap_or("(none)").to_string();
        let display = format!("{host}:{port} (user {user})");
        Ok(Target { config, display })
    }

    /// Connects and spawns the connection task on the current runtime.
    pub async fn connect(&self) -> Result<(Client, JoinHandle<()>), WorkerError> {
        let (client, connection) =
            self.config
                .connect(NoTls)
                .await
                .map_err(|e| WorkerError::Connect {
                    target: self.display.clone(),
                    reason: describe(&e),
                })?;
        let handle = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %describe(&e), "connection ended with error");
            }
        });
        Ok((client, handle))
    }
}

/// A libpq-style `key=value` string of exactly host, port, user, password and dbname
/// (values quoted unless plain words), as the coordinator sends them.
pub fn key_value_string(host: &str, port: u32, user: &str, password: &str, dbname: &str) -> String {
    format!(
        "host={host} port={port} user={} password={} dbname={}",
        quote(user),
        quote(password),
        quote(dbname)
    )
}

fn quote(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}
