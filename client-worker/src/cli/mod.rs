//! The command line of `blocklab-worker`: the daemon (`serve`), the standalone
//! pgbench-compatible `init` / `bench`, and the TPC-C-like and AS3AP-like workloads by hand
//! (`tpcc`, `as3ap`, in `kinds/`).

use std::process::ExitCode;
use std::time::Duration;

use blocklab_daemon::config::{ConfigError, parse_with_config};
use blocklab_worker::engine::plan::split_weight;
use blocklab_worker::init::{InitOptions, PartitionMethod};
use blocklab_worker::{Builtin, LoadOptions, Protocol, ScriptSpec, WorkerConfig, WorkerError};
use clap::{Args, Parser, Subcommand};

mod kinds;
mod seed;

use seed::parse_seed;

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
    Init(InitArgs),
    /// Run a built-in pgbench script and print a pgbench-like summary.
    Bench(BenchArgs),
    /// TPC-C-like workload by hand: init, run, check.
    #[command(subcommand)]
    Tpcc(kinds::TpccCommand),
    /// AS3AP-like workload by hand: load, single-user, mix.
    #[command(subcommand)]
    As3ap(kinds::As3apCommand),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Coordinator address (URL or host:port).
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
    /// Quiet logging (accepted for pgbench compatibility).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
}

#[derive(Args, Debug)]
struct BenchArgs {
    #[arg(short = 'c', long = "client", default_value_t = 1)]
    clients: u32,
    #[arg(short = 'j', long = "jobs", default_value_t = 1)]
    threads: u32,
    /// Duration in seconds.
    #[arg(short = 'T', long = "time", conflicts_with = "transactions")]
    seconds: Option<u64>,
    /// Transactions per client.
    #[arg(short = 't', long = "transactions")]
    transactions: Option<u64>,
    /// Seconds run before the measured window, not counted.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    #[arg(short = 'M', long = "protocol", default_value = "simple")]
    protocol: String,
    /// Built-in script NAME[@WEIGHT] (repeatable).
    #[arg(short = 'b', long = "builtin")]
    builtin: Vec<String>,
    /// Script file FILENAME[@WEIGHT] (repeatable).
    #[arg(short = 'f', long = "file")]
    file: Vec<String>,
    /// select-only (same as -b select-only)
    #[arg(short = 'S', long = "select-only")]
    select_only: bool,
    /// simple-update (same as -b simple-update)
    #[arg(short = 'N', long = "skip-some-updates")]
    simple_update: bool,
    /// Variable NAME=VALUE for the scripts (repeatable).
    #[arg(short = 'D', long = "define")]
    define: Vec<String>,
    /// Establish a new connection for each transaction.
    #[arg(short = 'C', long = "connect")]
    connect: bool,
    /// Target rate in transactions per second.
    #[arg(short = 'R', long = "rate")]
    rate: Option<f64>,
    /// Count transactions slower than this many ms as late (skip them with -R).
    #[arg(short = 'L', long = "latency-limit")]
    latency_limit: Option<f64>,
    /// Progress report every N seconds.
    #[arg(short = 'P', long = "progress")]
    progress: Option<u64>,
    /// Per-statement latencies.
    #[arg(short = 'r', long = "report-per-command")]
    per_command: bool,
    /// Tries for serialization/deadlock failures (0 = unlimited within -T/-L).
    #[arg(long = "max-tries", default_value_t = 1)]
    max_tries: u32,
    /// Random seed: an unsigned integer, "time" or "rand".
    #[arg(long = "random-seed")]
    random_seed: Option<String>,
    /// Scale; 0 reads it from pgbench_branches.
    #[arg(short = 's', long, default_value_t = 0)]
    scale: u32,
    /// Do not vacuum before the run.
    #[arg(short = 'n', long = "no-vacuum")]
    no_vacuum: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
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
            Command::Bench(a) => bench(a).await,
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
    };
    let _ = a.quiet;
    match blocklab_worker::init::init_with(&a.conninfo, &opts).await {
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

fn bench_options(a: &BenchArgs) -> Result<LoadOptions, String> {
    let mut specs = Vec::new();
    for b in &a.builtin {
        let (name, w) = split_weight(b)?;
        specs.push(ScriptSpec::builtin(name.parse::<Builtin>()?, w));
    }
    if a.select_only {
        specs.push(ScriptSpec::builtin(Builtin::SelectOnly, 1));
    }
    if a.simple_update {
        specs.push(ScriptSpec::builtin(Builtin::SimpleUpdate, 1));
    }
    for f in &a.file {
        let (name, w) = split_weight(f)?;
        let text = std::fs::read_to_string(name)
            .map_err(|e| format!("could not read file \"{name}\": {e}"))?;
        specs.push(ScriptSpec::file(name, text, w));
    }
    let mut opts = LoadOptions::new(
        a.conninfo.clone(),
        Duration::from_secs(a.seconds.unwrap_or(10)),
    );
    opts.script_specs = specs;
    opts.protocol = a.protocol.parse::<Protocol>()?;
    opts.clients = a.clients;
    opts.threads = a.threads;
    opts.warmup = Duration::from_secs(a.warmup);
    opts.scale = a.scale;
    opts.transactions_per_client = a.transactions.unwrap_or(0);
    if a.seconds.is_none() && a.transactions.is_none() {
        opts.transactions_per_client = 10;
    }
    opts.rate = a.rate.unwrap_or(0.0);
    opts.latency_limit = a.latency_limit.map(|ms| Duration::from_secs_f64(ms / 1e3));
    opts.max_tries = a.max_tries;
    opts.random_seed = a
        .random_seed
        .as_deref()
        .map(parse_seed)
        .transpose()?
        .flatten();
    opts.reconnect = a.connect;
    opts.per_statement = a.per_command;
    opts.progress_interval = a.progress.filter(|&p| p > 0).map(Duration::from_secs);
    opts.allow_shell = true;
    for d in &a.define {
        let (k, v) = d
            .split_once('=')
            .ok_or_else(|| format!("invalid variable definition: \"{d}\""))?;
        opts.variables.push((k.to_string(), v.to_string()));
    }
    if a.max_tries == 0 && a.seconds.is_none() && a.latency_limit.is_none() {
        return Err("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)".into());
    }
    opts.validate().map_err(|e| e.to_string())?;
    Ok(opts)
}

async fn bench(a: BenchArgs) -> ExitCode {
    let opts = match bench_options(&a) {
        Ok(o) => o,
        Err(e) => return fail(1, &WorkerError::InvalidArgument(e)),
    };
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
    if report.failures > 0 || report.aborted_clients > 0 {
        if let Some(err) = &report.first_error {
            eprintln!(
                "blocklab-worker: {} transactions failed, {} clients aborted; first error: {err}",
                report.failures, report.aborted_clients
            );
        }
        if report.aborted_clients > 0 {
            eprintln!("blocklab-worker: error: Run was aborted; the above results are incomplete.");
        }
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests;
