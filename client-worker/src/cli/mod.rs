//! The command line of `blocklab-worker`: the daemon (`serve`), the standalone
//! pgbench-compatible `init` / `bench`, and the TPC-C-like and AS3AP-like workloads by hand
//! (`tpcc`, `as3ap`, in `kinds/`).

use std::process::ExitCode;

use blocklab_daemon::config::{ConfigError, parse_with_config};
use blocklab_worker::init::{InitOptions, InitProgress, PartitionMethod};
use blocklab_worker::{WorkerConfig, WorkerError};
use clap::{Args, Parser, Subcommand};

mod bench;
mod connect;
mod kinds;
mod seed;

#[derive(Parser, Debug)]
#[command(name = "blocklab-worker", version, about = "blocklab load generator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Attach to the coordinator and run the tasks it assigns.
    Serve(ServeArgs),
    /// Create and load the pgbench tables (like `pgbench -i`).
    #[command(disable_help_flag = true)]
    Init(InitArgs),
    /// Run pgbench scripts (built-in or files) like pgbench and print its summary.
    #[command(disable_help_flag = true)]
    Bench(Box<bench::BenchArgs>),
    /// TPC-C-like workload by hand: init, run, check.
    #[command(subcommand)]
    Tpcc(kinds::TpccCommand),
    /// AS3AP-like workload by hand: load, single-user, mix.
    #[command(subcommand)]
    As3ap(kinds::As3apCommand),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Coordinator address (host:port or URL); several separated by commas when coordinators
    /// share a catalog (the leader is found among them).
    #[arg(long, env = "BLOCKLAB_COORDINATOR", default_value = blocklab_daemon::DEFAULT_COORDINATOR)]
    coordinator: String,
    /// Host id reported to the coordinator (default: hostname).
    #[arg(long, env = "BLOCKLAB_HOST_ID")]
    host_id: Option<String>,
    /// Comma-separated labels.
    #[arg(long, env = "BLOCKLAB_LABELS", value_delimiter = ',')]
    labels: Vec<String>,
    /// Address the coordinator and the database hosts know this worker by.
    #[arg(long, env = "BLOCKLAB_ADVERTISE_ADDR")]
    advertise_addr: Option<String>,
    /// CA certificate (PEM) to verify the coordinator's TLS certificate; turns on https.
    #[arg(long, env = "BLOCKLAB_CA_CERT")]
    ca_cert: Option<std::path::PathBuf>,
    /// File holding the fleet join token (else the BLOCKLAB_FLEET_TOKEN variable, if set).
    #[arg(long, env = "BLOCKLAB_FLEET_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,
    /// Serve Prometheus-style metrics at http://ADDR/metrics (e.g. 127.0.0.1:7403); off
    /// unless set.
    #[arg(long, env = "BLOCKLAB_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// TOML configuration file: keys are the long flags in snake_case (see
    /// --print-default-config); flags and environment variables override it.
    #[arg(long, env = "BLOCKLAB_WORKER_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Print a commented configuration file with every default, and exit.
    #[arg(long)]
    print_default_config: bool,
}

#[derive(Args, Debug)]
struct InitArgs {
    #[arg(short = 's', long, default_value_t = 1)]
    scale: u32,
    /// Initialization steps, any of "dtgGvpf".
    #[arg(short = 'I', long = "init-steps", default_value = "dtgvp")]
    steps: String,
    #[arg(short = 'F', long = "fillfactor", default_value_t = 100)]
    fillfactor: u32,
    #[arg(long, default_value_t = 0)]
    partitions: u32,
    /// range or hash
    #[arg(long = "partition-method")]
    partition_method: Option<String>,
    #[arg(long = "unlogged-tables")]
    unlogged_tables: bool,
    /// Quiet logging: a progress line every 5 seconds instead of every 100000 rows.
    #[arg(short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    conn: connect::ConnArgs,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

pub fn main() -> ExitCode {
    // `serve` reads --config FILE; flags and environment variables override it.
    let cli = match parse_with_config::<Cli>(std::env::args_os().collect(), Some("serve")) {
        Ok(c) => c,
        Err(ConfigError::Clap(e)) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
        Err(e) => {
            eprintln!("blocklab-worker: error: {e}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("blocklab-worker: cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    rt.block_on(async move {
        match cli.command {
            Command::Serve(a) => serve(a).await,
            Command::Init(a) => init(a).await,
            Command::Bench(a) => bench::bench(*a).await,
            Command::Tpcc(c) => kinds::tpcc_main(c).await,
            Command::As3ap(c) => kinds::as3ap_main(c).await,
        }
    })
}

fn fail(code: u8, e: &WorkerError) -> ExitCode {
    eprintln!("blocklab-worker: error: {e}");
    ExitCode::from(code)
}

async fn serve(a: ServeArgs) -> ExitCode {
    if let Some(addr) = &a.metrics_listen {
        let render = std::sync::Arc::new(blocklab_worker::metrics::render);
        if let Err(e) = blocklab_daemon::metrics::spawn(addr, render).await {
            eprintln!("blocklab-worker: error: --metrics-listen {addr}: {e}");
            return ExitCode::from(1);
        }
    }
    let mut config = WorkerConfig::default_for(&a.coordinator);
    if let Some(h) = a.host_id {
        config.host_id = h;
    }
    config.labels = a.labels.into_iter().filter(|l| !l.is_empty()).collect();
    if let Some(addr) = a.advertise_addr {
        config.advertise_addr = addr;
    }
    if let Err(e) = fleet_auth(&mut config, a.ca_cert.as_deref(), a.token_file.as_deref()) {
        eprintln!("blocklab-worker: error: {e}");
        return ExitCode::from(1);
    }
    match blocklab_worker::serve(config, blocklab_daemon::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(1, &e),
    }
}

/// `--ca-cert` and the fleet token (`--token-file` or `BLOCKLAB_FLEET_TOKEN`).
fn fleet_auth(
    config: &mut WorkerConfig,
    ca_cert: Option<&std::path::Path>,
    token_file: Option<&std::path::Path>,
) -> Result<(), blocklab_daemon::security::SecurityError> {
    use blocklab_daemon::security::{ClientTls, FLEET_TOKEN_ENV, resolve_token};
    if let Some(ca) = ca_cert {
        config.tls = Some(ClientTls::from_ca_file("--ca-cert", ca)?);
    }
    config.token = resolve_token("--token-file", token_file, FLEET_TOKEN_ENV)?;
    Ok(())
}

async fn init(a: InitArgs) -> ExitCode {
    let method = match a.partition_method.as_deref() {
        None => None,
        Some("range") => Some(PartitionMethod::Range),
        Some("hash") => Some(PartitionMethod::Hash),
        Some(m) => {
            let e =
                format!("invalid partition method, expecting \"range\" or \"hash\", got: \"{m}\"");
            return fail(1, &WorkerError::InvalidArgument(e));
        }
    };
    let opts = InitOptions {
        scale: a.scale,
        steps: a.steps,
        fillfactor: a.fillfactor,
        partitions: a.partitions,
        partition_method: method,
        unlogged: a.unlogged_tables,
        progress: if a.quiet {
            InitProgress::Quiet
        } else {
            InitProgress::Rows
        },
    };
    let conninfo = match a.conn.conninfo(&|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => return fail(1, &WorkerError::Conninfo(e)),
    };
    match blocklab_worker::init::init_with(&conninfo, &opts).await {
        Ok(r) => {
            println!(
                "done in {:.2} s ({} accounts rows).",
                r.seconds, r.accounts_rows
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(1, &e),
    }
}

#[cfg(test)]
mod tests;
