//! `blocklab-worker bench`: pgbench's benchmarking options, run by the engine, printed in
//! pgbench's layout; exit 1 for bad options or scripts found before running, 2 when a
//! client aborted or transactions failed.

use std::process::ExitCode;
use std::time::Duration;

use blocklab_worker::engine::plan::split_weight;
use blocklab_worker::engine::txlog::TxLogOptions;
use blocklab_worker::{Builtin, LoadOptions, Protocol, ScriptSpec, WorkerError};
use clap::Args;

use super::connect::ConnArgs;
use super::seed::parse_seed;

#[derive(Args, Debug)]
pub struct BenchArgs {
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
    /// Seconds run before the measured window, not counted (not in pgbench).
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    #[arg(short = 'M', long = "protocol", default_value = "simple")]
    protocol: String,
    /// Built-in script NAME[@WEIGHT] (repeatable); "list" lists them.
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
    /// Show a built-in script's code, then exit.
    #[arg(long = "show-script", value_name = "NAME")]
    show_script: Option<String>,
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
    /// Progress lines carry the Unix time.
    #[arg(long = "progress-timestamp")]
    progress_timestamp: bool,
    /// Per-statement latencies.
    #[arg(short = 'r', long = "report-per-command")]
    per_command: bool,
    /// Tries for serialization/deadlock failures (0 = unlimited within -T/-L).
    #[arg(long = "max-tries", default_value_t = 1)]
    max_tries: u32,
    /// Failures by kind (serialization, deadlock) in the summary and the logs.
    #[arg(long = "failures-detailed")]
    failures_detailed: bool,
    /// Print every failed or retried try.
    #[arg(long = "verbose-errors")]
    verbose_errors: bool,
    /// Count other SQL errors as failed transactions and go on (else the client aborts).
    #[arg(long = "continue-on-error")]
    continue_on_error: bool,
    /// Stop every client as soon as one aborts.
    #[arg(long = "exit-on-abort")]
    exit_on_abort: bool,
    /// Write each transaction (or each interval) to PREFIX.PID[.THREAD].
    #[arg(short = 'l', long = "log")]
    log: bool,
    #[arg(long = "log-prefix", value_name = "PREFIX")]
    log_prefix: Option<String>,
    /// Fraction of transactions to log, e.g. 0.01.
    #[arg(long = "sampling-rate", value_name = "NUM")]
    sampling_rate: Option<f64>,
    /// Aggregate the log over intervals of this many seconds.
    #[arg(long = "aggregate-interval", value_name = "NUM")]
    aggregate_interval: Option<u32>,
    /// Random seed: an unsigned integer, "time" or "rand".
    #[arg(long = "random-seed")]
    random_seed: Option<String>,
    /// Scale for :scale in script files (built-in scripts read pgbench_branches).
    #[arg(short = 's', long)]
    scale: Option<u32>,
    /// Do not vacuum before the run.
    #[arg(short = 'n', long = "no-vacuum")]
    no_vacuum: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    conn: ConnArgs,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

fn fail(code: u8, e: &WorkerError) -> ExitCode {
    eprintln!("blocklab-worker: error: {e}");
    ExitCode::from(code)
}

fn list_builtins() -> String {
    let mut s = String::from("Available builtin scripts:\n");
    for b in Builtin::ALL {
        s.push_str(&format!("  {:>13}: {}\n", b.name(), b.description()));
    }
    s
}

fn log_options(a: &BenchArgs) -> Result<Option<TxLogOptions>, String> {
    if !a.log {
        if a.sampling_rate.is_some() {
            return Err(
                "log sampling (--sampling-rate) is allowed only when logging transactions (-l)"
                    .into(),
            );
        }
        if a.aggregate_interval.is_some() {
            return Err(
                "log aggregation is allowed only when actually logging transactions".into(),
            );
        }
        if a.log_prefix.is_some() {
            return Err(
                "log file prefix (--log-prefix) is allowed only when logging transactions (-l)"
                    .into(),
            );
        }
        return Ok(None);
    }
    let mut o = TxLogOptions::new(a.log_prefix.clone());
    if let Some(r) = a.sampling_rate {
        if !(r > 0.0 && r <= 1.0) {
            return Err(format!("invalid sampling rate: \"{r}\""));
        }
        o.sampling_rate = r;
    }
    if let Some(i) = a.aggregate_interval {
        if i == 0 {
            return Err("--aggregate-interval must be in range 1..2147483647".into());
        }
        if o.sampling_rate > 0.0 {
            return Err("log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time".into());
        }
        if let Some(t) = a.seconds {
            if u64::from(i) > t {
                return Err(format!(
                    "number of seconds for aggregation ({i}) must not be higher than test duration ({t})"
                ));
            }
            if t % u64::from(i) != 0 {
                return Err(format!(
                    "duration ({t}) must be a multiple of aggregation interval ({i})"
                ));
            }
        }
        o.aggregate_interval_s = i;
    }
    Ok(Some(o))
}

pub(super) fn bench_options(a: &BenchArgs, conninfo: String) -> Result<LoadOptions, String> {
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
    let mut opts = LoadOptions::new(conninfo, Duration::from_secs(a.seconds.unwrap_or(10)));
    let builtin_used = specs.is_empty() || specs.iter().any(|s| s.builtin);
    opts.script_specs = specs;
    opts.protocol = a.protocol.parse::<Protocol>()?;
    opts.clients = a.clients;
    opts.threads = a.threads;
    opts.warmup = Duration::from_secs(a.warmup);
    // pgbench reads the scale of its built-in scripts from pgbench_branches.
    opts.scale = if builtin_used {
        0
    } else {
        a.scale.unwrap_or(1)
    };
    if builtin_used && a.scale.is_some() {
        eprintln!("scale option ignored, using count from pgbench_branches table");
    }
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
    if a.progress_timestamp && opts.progress_interval.is_none() {
        return Err("--progress-timestamp is allowed only under --progress".into());
    }
    opts.progress_timestamp = a.progress_timestamp;
    opts.allow_shell = true;
    opts.continue_on_error = a.continue_on_error;
    opts.failures_detailed = a.failures_detailed;
    opts.verbose_errors = a.verbose_errors;
    opts.exit_on_abort = a.exit_on_abort;
    opts.log = log_options(a)?;
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

pub async fn bench(a: BenchArgs) -> ExitCode {
    if a.builtin.iter().any(|b| b == "list") {
        eprintln!("{}", list_builtins());
        return ExitCode::SUCCESS;
    }
    if let Some(name) = &a.show_script {
        return match name.parse::<Builtin>() {
            Ok(b) => {
                eprintln!("-- {}: {}\n{}", b.name(), b.description(), b.script_text());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprint!("{}", list_builtins());
                fail(1, &WorkerError::InvalidArgument(e))
            }
        };
    }
    let conninfo = match a.conn.conninfo(&|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => return fail(1, &WorkerError::Conninfo(e)),
    };
    let opts = match bench_options(&a, conninfo.clone()) {
        Ok(o) => o,
        Err(e) => return fail(1, &WorkerError::InvalidArgument(e)),
    };
    if !a.no_vacuum {
        eprint!("starting vacuum...");
        if let Err(e) = blocklab_worker::init::prerun_vacuum(&conninfo).await {
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
    if report.measured.failures > 0 || report.aborted_clients > 0 {
        if let Some(err) = &report.first_error {
            eprintln!(
                "blocklab-worker: {} transactions failed, {} clients aborted; first error: {err}",
                report.measured.failures, report.aborted_clients
            );
        }
        if report.aborted_clients > 0 {
            eprintln!("blocklab-worker: error: Run was aborted; the above results are incomplete.");
            return ExitCode::from(2);
        }
    }
    // pgbench exits 2 only for aborted clients; failed transactions (serialization,
    // deadlock, or other errors under --continue-on-error) are reported, not fatal.
    ExitCode::SUCCESS
}
