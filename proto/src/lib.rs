//! The blocklab wire contract (`blocklab.v1`) and small helpers shared by every side.

pub mod v1 {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("blocklab.v1");
}

pub use v1::*;

pub mod config;
pub mod fleet;
pub mod metrics;
pub mod security;

/// Default coordinator address used by the CLI and the daemons when none is configured.
pub const DEFAULT_COORDINATOR: &str = "http://127.0.0.1:7400";

/// Turns `host:port` or a full URL into the URL form tonic expects.
pub fn endpoint_url(addr: &str) -> String {
    if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

impl ConnInfo {
    /// A libpq-style key/value connection string (password included).
    pub fn to_conninfo_string(&self) -> String {
        format!(
            "host={} port={} user={} password={} dbname={}",
            self.host,
            self.port,
            quote(&self.user),
            quote(&self.password),
            quote(&self.dbname)
        )
    }
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

/// Resolves when the process gets SIGTERM or SIGINT: every daemon's shutdown trigger.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; running until killed");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!(signal = "SIGTERM", "shutdown requested"),
        _ = int.recv() => tracing::info!(signal = "SIGINT", "shutdown requested"),
    }
}

/// The agent's maintenance steps (`RunMaintenanceTask.steps`), in the order an empty list
/// runs them; specs name them the same way.
pub const MAINTENANCE_STEPS: [&str; 8] = [
    "copy",
    "create-index",
    "vacuum-analyze",
    "checkpoint",
    "count-warm",
    "count-cold",
    "dump",
    "restore",
];

/// Settings a spec may not give: those the agent owns (where the server listens, its files),
/// and those that run shell commands or load code as the PostgreSQL user.
pub const RESERVED_SETTINGS: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "unix_socket_group",
    "unix_socket_permissions",
    "data_directory",
    "hba_file",
    "ident_file",
    "config_file",
    "include",
    "include_if_exists",
    "include_dir",
    "external_pid_file",
    "archive_command",
    "archive_library",
    "restore_command",
    "archive_cleanup_command",
    "recovery_end_command",
    "ssl_passphrase_command",
    "shared_preload_libraries",
    "session_preload_libraries",
    "local_preload_libraries",
    "dynamic_library_path",
    "jit_provider",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_url_adds_scheme_once() {
        assert_eq!(endpoint_url("127.0.0.1:7400"), "http://127.0.0.1:7400");
        assert_eq!(endpoint_url("https://c:1"), "https://c:1");
    }

    #[test]
    fn conninfo_quotes_odd_values() {
        let c = ConnInfo {
            host: "10.0.0.1".into(),
            port: 5432,
            user: "blocklab".into(),
            password: "a b'c".into(),
            dbname: "bench".into(),
        };
        assert_eq!(
            c.to_conninfo_string(),
            "host=10.0.0.1 port=5432 user=blocklab password='a b\\'c' dbname=bench"
        );
    }
}
