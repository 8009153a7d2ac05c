//! `blocklab-coordinator`: the gRPC coordinator daemon.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "blocklab-coordinator",
    version,
    about = "blocklab coordinator: schedules experiments, keeps the catalog"
)]
struct Args {
    /// Address to listen on for the CLI, agents and workers.
    #[arg(long, env = "BLOCKLAB_LISTEN", default_value = "127.0.0.1:7400")]
    listen: String,
    /// SQLite catalog file.
    #[arg(
        long,
        env = "BLOCKLAB_CATALOG",
        default_value = "/var/lib/blocklab/catalog.db"
    )]
    catalog: PathBuf,
    /// How often hosts heartbeat.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    heartbeat_interval: Duration,
    /// A host silent this long is down.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    heartbeat_timeout: Duration,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    if args.heartbeat_timeout <= args.heartbeat_interval {
        anyhow::bail!("--heartbeat-timeout must be longer than --heartbeat-interval");
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let config = blocklab_coordinator::CoordinatorConfig {
        catalog_path: args.catalog,
        heartbeat_interval: args.heartbeat_interval,
        heartbeat_timeout: args.heartbeat_timeout,
    };
    blocklab_coordinator::serve(config, listener, shutdown_signal()).await?;
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
    tracing::info!("shutdown requested");
}
