//! `blocklab-worker tpcc init | run | check`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_worker::engine::window::WindowParams;
use blocklab_worker::tpcc::{TpccOptions, TpccStep};
use blocklab_worker::{Protocol, WorkerError, tpcc};
use clap::{Args, Subcommand};
use futures::StreamExt;
use serde_json::json;

use super::common::{
    Failure, conn_info, control, done, failures_exit, print_step, result_json, seed, setup,
    step_params, type_rows,
};

#[derive(Subcommand, Debug)]
pub enum TpccCommand {
    /// Create the tables and load N warehouses (schema, parallel load, finish).
    Init(TpccInitArgs),
    /// Run terminals with the standard mix; print NOTPM and per-transaction latencies.
    Run(TpccRunArgs),
    /// Check consistency conditions 1 to 9 (exit code 2 when one fails).
    Check(TpccCheckArgs),
}

#[derive(Args, Debug)]
pub struct TpccInitArgs {
    /// Number of warehouses (1 to 100000).
    #[arg(short = 'w', long = "warehouses", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    warehouses: u32,
    /// Loaders run concurrently, each loading every K-th warehouse (default min(N, 4), at
    /// most N).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    loaders: Option<u32>,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
}

#[derive(Args, Debug)]
pub struct TpccRunArgs {
    /// Number of warehouses loaded (1 to 100000).
    #[arg(short = 'w', long = "warehouses", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    warehouses: u32,
    /// Terminals, each with its own connection, home warehouse and district.
    #[arg(short = 'c', long = "terminals", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    terminals: u32,
    /// Measured window in seconds.
    #[arg(short = 'T', long = "time", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Seconds run before the measured window, not counted.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Apply the standard keying and thinking times.
    #[arg(long = "keying-thinking")]
    keying_thinking: bool,
    /// Multiply keying and thinking times by X.
    #[arg(long = "time-scale", default_value_t = 1.0)]
    time_scale: f64,
    /// Random seed: an unsigned integer, "time" or "rand".
    #[arg(long = "random-seed")]
    random_seed: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
}

#[derive(Args, Debug)]
pub struct TpccCheckArgs {
    /// Number of warehouses loaded (1 to 100000).
    #[arg(short = 'w', long = "warehouses", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    warehouses: u32,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
}

pub async fn tpcc_main(c: TpccCommand) -> ExitCode {
    done(match c {
        TpccCommand::Init(a) => tpcc_init(a).await,
        TpccCommand::Run(a) => tpcc_run(a).await,
        TpccCommand::Check(a) => tpcc_check(a).await,
    })
}

fn tpcc_options(
    warehouses: u32,
    keying_thinking: bool,
    time_scale: f64,
) -> Result<TpccOptions, Failure> {
    TpccOptions::new(warehouses, keying_thinking, time_scale).map_err(setup)
}

/// Adds the "TABLE: N rows" notes of a load part to `totals`, in first-seen order.
fn add_rows(totals: &mut Vec<(String, u64)>, notes: &[String]) {
    for n in notes {
        let Some((table, rest)) = n.split_once(": ") else {
            continue;
        };
        let Some(Ok(rows)) = rest.strip_suffix(" rows").map(str::parse::<u64>) else {
            continue;
        };
        match totals.iter_mut().find(|(t, _)| t == table) {
            Some((_, total)) => *total += rows,
            None => totals.push((table.to_string(), rows)),
        }
    }
}

async fn tpcc_init(a: TpccInitArgs) -> Result<ExitCode, Failure> {
    let conn = conn_info(&a.conninfo)?;
    let loaders = a.loaders.unwrap_or(4).min(a.warehouses);
    let o = tpcc_options(a.warehouses, false, 0.0)?;
    let ctl = control();
    let started = Instant::now();
    let schema = step_params(&conn, 0, 1);
    let r = tpcc::step(
        TpccStep::Schema,
        &o,
        &schema,
        &ProgressSink::detached(),
        &ctl,
    )
    .await
    .map_err(setup)?;
    print_step("schema", &r);

    let t0 = Instant::now();
    let mut pending: futures::stream::FuturesUnordered<_> = (0..loaders)
        .map(|part| {
            let t = step_params(&conn, part, loaders);
            let ctl = ctl.clone();
            let h = tokio::spawn(async move {
                tpcc::step(TpccStep::Load, &o, &t, &ProgressSink::detached(), &ctl).await
            });
            async move { (part, h.await) }
        })
        .collect();
    let mut parts = Vec::new();
    let mut first_err = None;
    while let Some((part, joined)) = pending.next().await {
        let err = match joined {
            Ok(Ok(r)) => {
                parts.push((part, r));
                continue;
            }
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("loader {part} panicked: {e}"),
        };
        // One loader failing stops the others; the first error is the one to show.
        ctl.stop();
        first_err.get_or_insert(err);
    }
    if let Some(e) = first_err {
        return Err((1, e));
    }
    parts.sort_by_key(|(p, _)| *p);
    println!(
        "load: {:.2} s ({loaders} loaders)",
        t0.elapsed().as_secs_f64()
    );
    let mut totals = Vec::new();
    for (_, r) in &parts {
        if let Some(first) = r.notes.first() {
            println!("  {first} in {:.2} s", r.seconds);
        }
        add_rows(&mut totals, &r.notes);
    }
    for (table, rows) in &totals {
        println!("  {table}: {rows} rows");
    }
    let finish = step_params(&conn, 0, 1);
    let r = tpcc::step(
        TpccStep::Finish,
        &o,
        &finish,
        &ProgressSink::detached(),
        &ctl,
    )
    .await
    .map_err(setup)?;
    print_step("finish", &r);
    println!(
        "done in {:.2} s ({} warehouses).",
        started.elapsed().as_secs_f64(),
        a.warehouses
    );
    Ok(ExitCode::SUCCESS)
}

async fn tpcc_run(a: TpccRunArgs) -> Result<ExitCode, Failure> {
    if !a.time_scale.is_finite() || a.time_scale < 0.0 {
        return Err((
            1,
            format!(
                "--time-scale must be a non-negative number, got {}",
                a.time_scale
            ),
        ));
    }
    let t = WindowParams {
        random_seed: seed(a.random_seed.as_deref())?,
        conninfo: Some(conn_info(&a.conninfo)?),
        clients: a.terminals,
        duration: Duration::from_secs(a.seconds),
        warmup: Duration::from_secs(a.warmup),
        client_id_offset: 0,
        threads: 0,
        protocol: Protocol::Simple,
    };
    let opts = tpcc_options(a.warehouses, a.keying_thinking, a.time_scale)?;
    let o = tpcc::run(&t, &opts, &ProgressSink::detached(), &control(), None)
        .await
        .map_err(setup)?;
    let types = type_rows(&o.txn_types);
    if a.json {
        let what = json!({"kind": "tpcc", "warehouses": a.warehouses, "keying_thinking": a.keying_thinking, "time_scale": a.time_scale});
        println!("{}", result_json(&o, what, &types)?);
        return failures_exit(&o);
    }
    let r = &o;
    let kt = if a.keying_thinking {
        format!("on (x{})", a.time_scale)
    } else {
        "off".into()
    };
    println!(
        "workload: tpcc-like, {} warehouses, {} terminals, keying/thinking {kt}",
        a.warehouses, r.clients
    );
    println!(
        "measured: {:.2} s (warm-up {} s), random seed: {}",
        r.measured_seconds, a.warmup, r.random_seed
    );
    println!("NOTPM: {:.1}", o.metric("NOTPM"));
    println!(
        "total tpm: {:.1} ({} transactions, {} failures)",
        r.tps_excluding_connections * 60.0,
        r.transactions,
        r.failures
    );
    println!("connection time: {:.3} ms", r.connection_time_ms);
    println!(
        "{:<14} {:>9} {:>7} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "type", "count", "mix %", "rollbacks", "failures", "avg ms", "p90 ms", "p99 ms", "max ms"
    );
    for t in &types {
        println!(
            "{:<14} {:>9} {:>7.2} {:>9} {:>8} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            t.name,
            t.count,
            t.mix_pct,
            t.rollbacks,
            t.failures,
            t.avg_ms,
            t.p90_ms,
            t.p99_ms,
            t.max_ms
        );
    }
    failures_exit(&o)
}

/// How `tpcc::step` words a failed check: the failing conditions joined by "; ".
const CHECK_FAILED: &str = "tpcc consistency check failed: ";

async fn tpcc_check(a: TpccCheckArgs) -> Result<ExitCode, Failure> {
    let t = step_params(&conn_info(&a.conninfo)?, 0, 1);
    let o = tpcc_options(a.warehouses, false, 0.0)?;
    match tpcc::step(
        TpccStep::Check,
        &o,
        &t,
        &ProgressSink::detached(),
        &control(),
    )
    .await
    {
        Ok(r) => {
            for n in &r.notes {
                println!("{n}");
            }
            println!("all conditions hold ({:.2} s)", r.seconds);
            Ok(ExitCode::SUCCESS)
        }
        Err(WorkerError::Run(m)) if m.starts_with(CHECK_FAILED) => {
            let failed: Vec<&str> = m[CHECK_FAILED.len()..].split("; ").collect();
            for line in &failed {
                println!("{line}");
            }
            println!("the other conditions hold");
            Err((2, format!("{} consistency conditions failed", failed.len())))
        }
        Err(e) => Err(setup(e)),
    }
}
