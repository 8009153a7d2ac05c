//! `blocklab-coordinator`: the gRPC coordinator daemon.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use blocklab_coordinator::catalog::Location;
use blocklab_coordinator::listen::{ListenDecision, Protection, decide_listen};
use blocklab_daemon::security::{FLEET_TOKEN_ENV, ServerTls, read_api_tokens, resolve_token};
use blocklab_spec::HostRole;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "blocklab-coordinator",
    version,
    about = "blocklab coordinator: schedules experiments, keeps the catalog"
)]
struct Args {
    /// Address to listen on for the CLI, agents and workers.
    #[arg(long, env = "BLOCKLAB_LISTEN", default_value = "127.0.0.1:7400")]
    listen: String,
    /// The catalog: a SQLite file path (or sqlite://PATH), or a PostgreSQL database as
    /// postgres://USER@HOST:PORT/DB (or postgresql://...).
    #[arg(
        long,
        env = "BLOCKLAB_CATALOG",
        default_value = "/var/lib/blocklab/catalog.db",
        value_parser = blocklab_coordinator::catalog::parse_location
    )]
    catalog: Location,
    /// How often hosts heartbeat.
    #[arg(long, env = "BLOCKLAB_HEARTBEAT_INTERVAL", default_value = "2s", value_parser = humantime::parse_duration)]
    heartbeat_interval: Duration,
    /// A host silent this long is down.
    #[arg(long, env = "BLOCKLAB_HEARTBEAT_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    heartbeat_timeout: Duration,
    /// TLS certificate chain (PEM) to serve with; needs --tls-key.
    #[arg(long, env = "BLOCKLAB_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for --tls-cert.
    #[arg(long, env = "BLOCKLAB_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// File holding the fleet join token agents and workers must present (else the
    /// BLOCKLAB_FLEET_TOKEN variable, if set).
    #[arg(long, env = "BLOCKLAB_FLEET_TOKEN_FILE")]
    fleet_token_file: Option<PathBuf>,
    /// File of API tokens for the CLI, one per line: `read TOKEN`, `submit TOKEN` or
    /// `admin TOKEN` (a line with only a token is a submit token; blank lines and # comments
    /// are ignored).
    #[arg(long, env = "BLOCKLAB_API_TOKEN_FILE")]
    api_token_file: Option<PathBuf>,
    /// Serve off loopback even without TLS and tokens (anyone who can reach the port can
    /// submit jobs and attach hosts).
    #[arg(long, env = "BLOCKLAB_INSECURE")]
    insecure: bool,
    /// Serve the read-only web dashboard and /metrics on this address (e.g. 127.0.0.1:7401);
    /// off unless set. HTTPS with --tls-cert; off loopback it needs --tls-cert and
    /// --api-token-file (or --insecure).
    #[arg(long, env = "BLOCKLAB_DASHBOARD_LISTEN")]
    dashboard_listen: Option<std::net::SocketAddr>,
    /// The address hosts and the CLI reach this coordinator at, as the leader lease names it
    /// to the others (PostgreSQL catalogs); the listening address if unset.
    #[arg(long, env = "BLOCKLAB_ADVERTISE_ADDR")]
    advertise_addr: Option<String>,
    /// How long a leader's lease lasts unless renewed (PostgreSQL catalogs, where several
    /// coordinators may share the catalog): a standby takes over at most this long after the
    /// leader stopped.
    #[arg(long, env = "BLOCKLAB_LEASE_TTL", default_value = "10s", value_parser = humantime::parse_duration)]
    lease_ttl: Duration,
    /// TOML configuration file: keys are the long flags in snake_case (see
    /// --print-default-config); flags and environment variables override it.
    #[arg(long, env = "BLOCKLAB_COORDINATOR_CONFIG")]
    config: Option<PathBuf>,
    /// Print a commented configuration file with every default, and exit.
    #[arg(long)]
    print_default_config: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Per-host credentials in the catalog (--catalog): each host attaches only with its own
    /// token, as the host id and role it was enrolled for.
    #[command(subcommand)]
    Hosts(HostsCommand),
    /// Work on whole catalogs.
    #[command(subcommand)]
    Catalog(CatalogCommand),
}

#[derive(clap::Subcommand, Debug)]
enum CatalogCommand {
    /// Copy a lab's history (every table) from one catalog into another, empty one, in one
    /// transaction on the target: e.g. from the SQLite file to a PostgreSQL database.
    Copy {
        /// The catalog to read: a SQLite file or a postgres:// URL (migrated first).
        #[arg(long, value_parser = blocklab_coordinator::catalog::parse_location)]
        from: Location,
        /// The catalog to fill: a postgres:// URL or a SQLite file; it must hold no rows.
        #[arg(long, value_parser = blocklab_coordinator::catalog::parse_location)]
        to: Location,
    },
}

#[derive(clap::Subcommand, Debug)]
enum HostsCommand {
    /// Enroll a host: prints its new token once on stdout (only its sha256 is stored); put
    /// it in the host's --token-file. Once a host is enrolled the shared fleet token no longer
    /// attaches hosts.
    Add {
        /// The host's --host-id.
        host_id: String,
        /// What the host runs: agent (database host) or worker (client host).
        #[arg(long, value_parser = parse_role)]
        role: HostRole,
        /// A label the host is placed by (repeat for several); its hello cannot add others.
        #[arg(long = "label")]
        labels: Vec<String>,
        /// The address the host is bound to (pg_hba entries, where its servers are reached);
        /// without it, the address its connection comes from.
        #[arg(long)]
        address: Option<std::net::IpAddr>,
    },
    /// Change what an enrolled host is bound to: its labels (the --label flags given replace
    /// them all) and its address. Its next hello takes them.
    Set {
        /// The host's id.
        host_id: String,
        /// A label (repeat for several): replaces the host's labels.
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Remove every label.
        #[arg(long, conflicts_with = "labels")]
        clear_labels: bool,
        /// The address it is bound to.
        #[arg(long)]
        address: Option<std::net::IpAddr>,
        /// Bind it to the address its connection comes from.
        #[arg(long, conflicts_with = "address")]
        connection_address: bool,
    },
    /// List enrolled hosts: id, role, labels, address, when enrolled, and whether revoked.
    List,
    /// Revoke a host's credential: the coordinator refuses its next hello and ends its live
    /// session within one heartbeat interval.
    Revoke {
        /// The host's id.
        host_id: String,
    },
}

fn parse_role(s: &str) -> Result<HostRole, String> {
    s.parse()
        .map_err(|e: blocklab_spec::state::UnknownName| e.to_string())
}

/// `blocklab-coordinator hosts ...`: enrollment on the catalog file.
async fn hosts(location: &Location, command: HostsCommand) -> anyhow::Result<()> {
    use blocklab_coordinator::enrollment;
    let catalog = blocklab_coordinator::catalog::Catalog::connect(location)
        .await
        .with_context(|| format!("--catalog {location}"))?;
    match command {
        HostsCommand::Add {
            host_id,
            role,
            labels,
            address,
        } => {
            let binding = enrollment::Binding { labels, address };
            let token = enrollment::add(&catalog, &host_id, role, &binding).await?;
            eprintln!(
                "enrolled {host_id} as {role}; its token follows, shown only this once (the \
                 catalog keeps its sha256). Put it in the host's --token-file (chmod 600)."
            );
            println!("{}", token.expose());
        }
        HostsCommand::Set {
            host_id,
            labels,
            clear_labels,
            address,
            connection_address,
        } => {
            let labels = (clear_labels || !labels.is_empty()).then_some(labels);
            let address = if connection_address {
                Some(None)
            } else {
                address.map(Some)
            };
            if labels.is_none() && address.is_none() {
                anyhow::bail!(
                    "nothing to change: give --label, --clear-labels, --address or --connection-address"
                );
            }
            enrollment::bind(&catalog, &host_id, labels.as_deref(), address).await?;
            eprintln!("{host_id}: its next hello takes the new binding");
        }
        HostsCommand::List => {
            println!(
                "{:<32} {:<7} {:<24} {:<16} {:<26} state",
                "host", "role", "labels", "address", "enrolled"
            );
            for c in enrollment::list(&catalog).await? {
                let state = match &c.revoked_at {
                    Some(at) => format!("revoked {at}"),
                    None => "valid".to_string(),
                };
                let address = if c.address.is_empty() {
                    "(connection)"
                } else {
                    c.address.as_str()
                };
                println!(
                    "{:<32} {:<7} {:<24} {:<16} {:<26} {state}",
                    c.host_id,
                    c.role.as_str(),
                    c.labels.join(","),
                    address,
                    c.enrolled_at
                );
            }
        }
        HostsCommand::Revoke { host_id } => {
            enrollment::revoke(&catalog, &host_id).await?;
            eprintln!(
                "revoked {host_id}: a running coordinator ends its session within one heartbeat \
                 interval and refuses its next hello"
            );
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Args = blocklab_daemon::config::parse_or_exit(None);
    if let Some(Command::Hosts(command)) = args.command {
        return hosts(&args.catalog, command).await;
    }
    if let Some(Command::Catalog(CatalogCommand::Copy { from, to })) = args.command {
        let copied = blocklab_coordinator::catalog::copy::copy(&from, &to).await?;
        eprintln!(
            "copied {} rows in {} tables from {from} to {to}",
            copied.iter().map(|(_, n)| n).sum::<u64>(),
            copied.len()
        );
        return Ok(());
    }
    if args.lease_ttl < Duration::from_secs(1) {
        anyhow::bail!("--lease-ttl must be at least 1s");
    }
    if args.heartbeat_timeout <= args.heartbeat_interval {
        anyhow::bail!("--heartbeat-timeout must be longer than --heartbeat-interval");
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(ServerTls::from_files(cert, key)?),
        _ => None,
    };
    let fleet_token = resolve_token(
        "--fleet-token-file",
        args.fleet_token_file.as_deref(),
        FLEET_TOKEN_ENV,
    )?;
    let api_tokens = match &args.api_token_file {
        Some(path) => read_api_tokens("--api-token-file", path)?,
        None => Vec::new(),
    };
    // Enrolled hosts protect Fleet as the shared token does (read without touching the file).
    let enrolled = blocklab_coordinator::catalog::credentials::any_enrolled(&args.catalog)
        .await
        .with_context(|| format!("--catalog {}", args.catalog))?;
    let protection = Protection {
        tls: tls.is_some(),
        fleet_token: fleet_token.is_some() || enrolled,
        api_tokens: !api_tokens.is_empty(),
    };
    // Decide before binding, for every address the name resolves to.
    let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(&args.listen)
        .await
        .with_context(|| format!("--listen {}: cannot resolve", args.listen))?
        .collect();
    for addr in &addrs {
        if let ListenDecision::Insecure { missing } =
            decide_listen(*addr, protection, args.insecure)?
        {
            tracing::warn!(
                %addr,
                missing = %missing.join(", "),
                "--insecure: serving off loopback without full protection; anyone who can \
                 reach this port can submit jobs or attach hosts"
            );
        }
    }
    if let Some(addr) = args.dashboard_listen
        && !addr.ip().is_loopback()
    {
        let mut missing = Vec::new();
        if tls.is_none() {
            missing.push("--tls-cert/--tls-key");
        }
        if api_tokens.is_empty() {
            missing.push("--api-token-file");
        }
        if !missing.is_empty() {
            if !args.insecure {
                anyhow::bail!(
                    "--dashboard-listen {addr}: off loopback the dashboard needs {} (its sign-in \
                     cookie is Secure and its tokens must not cross the network in clear), or \
                     --insecure to serve it anyway",
                    missing.join(" and ")
                );
            }
            tracing::warn!(%addr, missing = %missing.join(", "), "--insecure: dashboard served off loopback without full protection");
        }
    }
    let listener = tokio::net::TcpListener::bind(addrs.as_slice())
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let config = blocklab_coordinator::CoordinatorConfig {
        catalog: args.catalog,
        heartbeat_interval: args.heartbeat_interval,
        heartbeat_timeout: args.heartbeat_timeout,
        tls,
        fleet_token,
        api_tokens,
        dashboard: args.dashboard_listen,
        advertise: args.advertise_addr,
        lease_ttl: args.lease_ttl,
    };
    blocklab_coordinator::serve(config, listener, blocklab_daemon::shutdown_signal()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_parses_back_to_the_defaults() {
        blocklab_daemon::config::check_default_config::<Args>(&["blocklab-coordinator"], None)
            .expect("config round trip");
    }

    #[test]
    fn the_config_file_applies_to_the_hosts_commands() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("coordinator.toml");
        std::fs::write(&file, "catalog = \"/srv/lab/catalog.db\"\n").expect("write");
        let argv = [
            "blocklab-coordinator",
            "--config",
            file.to_str().expect("path"),
        ]
        .iter()
        .chain(&["hosts", "add", "db1", "--role", "agent"])
        .map(std::ffi::OsString::from)
        .collect();
        let args: Args = blocklab_daemon::config::parse_with_config(argv, None).expect("parse");
        assert_eq!(
            args.catalog,
            Location::Sqlite(PathBuf::from("/srv/lab/catalog.db"))
        );
        match args.command {
            Some(Command::Hosts(HostsCommand::Add {
                host_id,
                role,
                labels,
                address,
            })) => {
                assert_eq!((host_id.as_str(), role), ("db1", HostRole::Agent));
                assert_eq!((labels, address), (vec![], None));
            }
            other => panic!("{other:?}"),
        }
    }
}
