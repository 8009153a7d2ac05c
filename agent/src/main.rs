//! `blocklab-agent`: the database-host daemon.

use std::path::PathBuf;

use anyhow::{Context, bail};
use blocklab_agent::{AgentConfig, serve};
use blocklab_daemon::security::{ClientTls, FLEET_TOKEN_ENV, resolve_token};

#[derive(clap::Parser, Debug)]
#[command(
    name = "blocklab-agent",
    version,
    about = "blocklab database-host agent"
)]
struct Args {
    /// Coordinator address (host:port or URL); several separated by commas when coordinators
    /// share a catalog (the leader is found among them).
    #[arg(long, env = "BLOCKLAB_COORDINATOR", default_value = blocklab_daemon::DEFAULT_COORDINATOR)]
    coordinator: String,
    /// Host id reported to the coordinator (default: hostname).
    #[arg(long, env = "BLOCKLAB_HOST_ID")]
    host_id: Option<String>,
    /// Comma-separated labels, e.g. nvme,lab1.
    #[arg(long, env = "BLOCKLAB_LABELS", value_delimiter = ',')]
    labels: Vec<String>,
    /// IP address PostgreSQL listens on and clients connect to.
    #[arg(long, env = "BLOCKLAB_ADVERTISE_ADDR", default_value = "127.0.0.1")]
    advertise_addr: String,
    /// Agent state directory (default for the data, WAL and build roots).
    #[arg(long, env = "BLOCKLAB_WORK_DIR", default_value = blocklab_agent::DEFAULT_WORK_DIR)]
    work_dir: PathBuf,
    /// Where run directories (data directory, server log) go (default WORK_DIR/runs).
    #[arg(long, env = "BLOCKLAB_DATA_ROOT")]
    data_root: Option<PathBuf>,
    /// Where WAL goes for runs with separate_wal, e.g. another disk (default WORK_DIR/wal).
    #[arg(long, env = "BLOCKLAB_WAL_ROOT")]
    wal_root: Option<PathBuf>,
    /// The only directory user dumps (`[workload.init] dump`) are restored from (default
    /// WORK_DIR/dumps).
    #[arg(long, env = "BLOCKLAB_DUMPS_DIR")]
    dumps_dir: Option<PathBuf>,
    /// Size cap of the build cache in bytes; least recently used builds not in use are
    /// removed after a new build (default: no cap).
    #[arg(long, env = "BLOCKLAB_BUILD_CACHE_MAX_BYTES")]
    build_cache_max_bytes: Option<u64>,
    /// A source this agent builds (repeat for several): an absolute tarball path or a
    /// directory of tarballs, an http(s) URL, or git:REPOSITORY. Without any, every source a
    /// task names is built; with some, a task naming another is refused.
    #[arg(
        long = "allow-source",
        env = "BLOCKLAB_ALLOW_SOURCES",
        value_delimiter = ','
    )]
    allow_sources: Vec<String>,
    /// PostgreSQL build cache directory.
    #[arg(long, env = "BLOCKLAB_BUILD_CACHE", default_value = blocklab_agent::DEFAULT_BUILD_CACHE)]
    build_cache: PathBuf,
    /// OS user that runs initdb/postgres (default: blocklab as root, else the current user).
    #[arg(long, env = "BLOCKLAB_PG_USER")]
    pg_user: Option<String>,
    /// OS user that unpacks, configures, makes and installs sources, in a directory of each
    /// build's own (default: blocklab-build as root, else the current user). As root it must
    /// be neither root nor the --pg-user.
    #[arg(long, env = "BLOCKLAB_BUILD_USER")]
    build_user: Option<String>,
    /// Inclusive port range for clusters, e.g. 54320-54399.
    #[arg(long, env = "BLOCKLAB_PORT_RANGE", default_value = "54320-54399")]
    port_range: String,
    /// Parallel make jobs (default: number of cores).
    #[arg(long, env = "BLOCKLAB_MAKE_JOBS")]
    make_jobs: Option<usize>,
    /// CA certificate (PEM) to verify the coordinator's TLS certificate; turns on https.
    #[arg(long, env = "BLOCKLAB_CA_CERT")]
    ca_cert: Option<PathBuf>,
    /// File holding the fleet join token (else the BLOCKLAB_FLEET_TOKEN variable, if set).
    #[arg(long, env = "BLOCKLAB_FLEET_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// Serve Prometheus-style metrics at http://ADDR/metrics (e.g. 127.0.0.1:7402); off
    /// unless set.
    #[arg(long, env = "BLOCKLAB_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// TOML configuration file: keys are the long flags in snake_case (see
    /// --print-default-config); flags and environment variables override it.
    #[arg(long, env = "BLOCKLAB_AGENT_CONFIG")]
    config: Option<PathBuf>,
    /// Print a commented configuration file with every default, and exit.
    #[arg(long)]
    print_default_config: bool,
}

fn parse_port_range(s: &str) -> anyhow::Result<(u16, u16)> {
    let (a, b) = s
        .split_once('-')
        .with_context(|| format!("--port-range {s:?}: expected FIRST-LAST"))?;
    let a: u16 = a
        .trim()
        .parse()
        .with_context(|| format!("--port-range {s:?}"))?;
    let b: u16 = b
        .trim()
        .parse()
        .with_context(|| format!("--port-range {s:?}"))?;
    if a == 0 || a > b {
        bail!("--port-range {s:?}: must be FIRST-LAST with 0 < FIRST <= LAST");
    }
    Ok((a, b))
}

/// `blocklab-agent doctor`: the checks that make benchmarks noisy on this host.
#[derive(clap::Parser, Debug)]
#[command(
    name = "blocklab-agent doctor",
    about = "print what on this host makes benchmarks noisy (ok or warn per check); exits 0 with warnings"
)]
struct DoctorArgs {
    /// Agent state directory (default for the data and WAL roots).
    #[arg(long, env = "BLOCKLAB_WORK_DIR", default_value = blocklab_agent::DEFAULT_WORK_DIR)]
    work_dir: PathBuf,
    /// Where run directories go (default WORK_DIR/runs).
    #[arg(long, env = "BLOCKLAB_DATA_ROOT")]
    data_root: Option<PathBuf>,
    /// Where WAL goes for runs with separate_wal (default WORK_DIR/wal).
    #[arg(long, env = "BLOCKLAB_WAL_ROOT")]
    wal_root: Option<PathBuf>,
}

fn doctor(argv: impl Iterator<Item = std::ffi::OsString>) -> anyhow::Result<()> {
    let args = <DoctorArgs as clap::Parser>::parse_from(argv);
    let mut config = AgentConfig::default_for(blocklab_daemon::DEFAULT_COORDINATOR);
    config.work_dir = args.work_dir;
    config.data_root = args.data_root;
    config.wal_root = args.wal_root;
    let checks = blocklab_agent::doctor::checks(&config.data_root(), &config.wal_root());
    print!("{}", blocklab_agent::doctor::render(&checks));
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args_os().nth(1).is_some_and(|a| a == "doctor") {
        return doctor(std::env::args_os().skip(1));
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args: Args = blocklab_daemon::config::parse_or_exit(None);
    if let Some(addr) = &args.metrics_listen {
        blocklab_daemon::metrics::spawn(addr, std::sync::Arc::new(blocklab_agent::metrics::render))
            .await
            .with_context(|| format!("--metrics-listen {addr}"))?;
    }
    let mut config = AgentConfig::default_for(&args.coordinator);
    if let Some(h) = args.host_id {
        config.host_id = h;
    }
    config.labels = args
        .labels
        .into_iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    config.advertise_addr = args.advertise_addr;
    config.work_dir = args.work_dir;
    config.data_root = args.data_root;
    config.wal_root = args.wal_root;
    config.dumps_dir = args.dumps_dir;
    config.build_cache = args.build_cache;
    config.allowed_sources = args.allow_sources;
    config.build_cache_max_bytes = args.build_cache_max_bytes;
    if args.pg_user.is_some() {
        config.pg_user = args.pg_user;
    }
    if args.build_user.is_some() {
        config.build_user = args.build_user;
    }
    config.port_range = parse_port_range(&args.port_range)?;
    if let Some(j) = args.make_jobs {
        config.make_jobs = j.max(1);
    }
    if let Some(ca) = &args.ca_cert {
        config.tls = Some(ClientTls::from_ca_file("--ca-cert", ca)?);
    }
    if let Some(file) = &args.token_file {
        blocklab_agent::users::check_credential_file("--token-file", file)?;
    }
    config.token = resolve_token("--token-file", args.token_file.as_deref(), FLEET_TOKEN_ENV)?;
    serve(config, blocklab_daemon::shutdown_signal())
        .await
        .context("blocklab-agent failed")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_range_parses() {
        assert_eq!(parse_port_range("54320-54399").unwrap(), (54320, 54399));
        assert!(parse_port_range("5-1").is_err());
        assert!(parse_port_range("0-10").is_err());
        assert!(parse_port_range("54320").is_err());
    }

    #[test]
    fn default_config_parses_back_to_the_defaults() {
        blocklab_daemon::config::check_default_config::<Args>(&["blocklab-agent"], None)
            .expect("config round trip");
    }
}
