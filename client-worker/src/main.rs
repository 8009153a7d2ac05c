//! `blocklab-worker`: the load-generator daemon (`serve`) and a standalone
//! pgbench-compatible `init` / `bench`.

use std::process::ExitCode;
use std::time::Duration;

use blocklab_worker::{Builtin, LoadOptions, Protocol, WorkerConfig, WorkerError};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "blocklab-worker", version, about = "blocklab load generator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Attach to the coordinator and run the tasks it assigns.
    Serve(ServeArgs),
    /// Create and load the pgbench tables (like `pgbench -i -s SCALE`).
    Init {
        #[arg(short = 's', long, default_value_t = 1)]
        scale: u32,
        /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
        conninfo: String,
    },
    /// Run a built-in pgbench script and print a pgbench-like summary.
    Bench(BenchArgs),
}

#[derive(Args)]
struct ServeArgs {
    #[arg(long, env = "BLOCKLAB_COORDINATOR", default_value = blocklab_proto::DEFAULT_COORDINATOR)]
    coordinator: String,
    #[arg(long, env = "BLOCKLAB_HOST_ID")]
    host_id: Option<String>,
    /// Comma-separated labels.
    #[arg(long, env = "BLOCKLAB_LABELS", value_delimiter = ',')]
    labels: Vec<String>,
    #[arg(long, env = "BLOCKLAB_ADVERTISE_ADDR")]
    advertise_addr: Option<String>,
}

#[derive(Args)]
struct BenchArgs {
    #[arg(short = 'c', long = "client", default_value_t = 1)]
    clients: u32,
    #[arg(short = 'j', long = "jobs", default_value_t = 1)]
    threads: u32,
    #[arg(short = 'T', long = "time", default_value_t = 10)]
    seconds: u64,
    /// Seconds run before the measured window, not counted.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    #[arg(short = 'M', long = "protocol", default_value = "simple")]
    protocol: String,
    #[arg(short = 'b', long = "builtin", default_value = "tpcb-like")]
    builtin: String,
    /// select-only (same as -b select-only)
    #[arg(short = 'S', long = "select-only")]
    select_only: bool,
    /// simple-update (same as -b simple-update)
    #[arg(short = 'N', long = "skip-some-updates")]
    simple_update: bool,
    /// Scale; 0 reads it from pgbench_branches.
    #[arg(short = 's', long, default_value_t = 0)]
    scale: u32,
    /// Do not vacuum before the run.
    #[arg(short = 'n', long = "no-vacuum")]
    no_vacuum: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    conninfo: String,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
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
            Command::Init { scale, conninfo } => {
                match blocklab_worker::init_data_conninfo(&conninfo, scale).await {
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
            Command::Bench(a) => bench(a).await,
        }
    })
}

fn fail(code: u8, e: &WorkerError) -> ExitCode {
    eprintln!("blocklab-worker: error: {e}");
    ExitCode::from(code)
}

async fn serve(a: ServeArgs) -> ExitCode {
    let mut config = WorkerConfig::default_for(&a.coordinator);
    if let Some(h) = a.host_id {
        config.host_id = h;
    }
    config.labels = a.labels.into_iter().filter(|l| !l.is_empty()).collect();
    if let Some(addr) = a.advertise_addr {
        config.advertise_addr = addr;
    }
    match blocklab_worker::serve(config, shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(1, &e),
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; running until killed");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!(signal = "SIGTERM", "shutting down"),
        _ = int.recv() => tracing::info!(signal = "SIGINT", "shutting down"),
    }
}

async fn bench(a: BenchArgs) -> ExitCode {
    let builtin = if a.select_only {
        Ok(Builtin::SelectOnly)
    } else if a.simple_update {
        Ok(Builtin::SimpleUpdate)
    } else {
        a.builtin.parse::<Builtin>()
    };
    let (builtin, protocol) = match (builtin, a.protocol.parse::<Protocol>()) {
        (Ok(b), Ok(p)) => (b, p),
        (Err(e), _) | (_, Err(e)) => return fail(1, &WorkerError::InvalidArgument(e)),
    };
    let mut opts = LoadOptions::new(a.conninfo.clone(), Duration::from_secs(a.seconds));
    opts.builtin = builtin;
    opts.protocol = protocol;
    opts.clients = a.clients;
    opts.threads = a.threads;
    opts.warmup = Duration::from_secs(a.warmup);
    opts.scale = a.scale;
    if let Err(e) = opts.validate() {
        return fail(1, &e);
    }
    if !a.no_vacuum {
        eprint!("starting vacuum...");
        if let Err(e) = blocklab_worker::init::prerun_vacuum(&a.conninfo).await {
            eprintln!();
            return fail(1, &e);
        }
        eprintln!("end.");
    }
    let report = match blocklab_worker::run_load(&opts).await {
        Ok(r) => r,
        Err(e) => return fail(1, &e),
    };
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => return fail(2, &WorkerError::Run(e.to_string())),
        }
    } else {
        print!("{}", report.summary());
    }
    if report.failures > 0 {
        if let Some(err) = &report.first_error {
            eprintln!(
                "blocklab-worker: {} transactions failed; first error: {err}",
                report.failures
            );
        }
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
