//! `blocklab-worker as3ap load | single-user | mix`.

use std::process::ExitCode;

use blocklab_daemon::fleet::ProgressSink;
use std::time::Duration;

use blocklab_worker::as3ap::{self, As3apStep, Mix, Rows};
use blocklab_worker::engine::window::WindowParams;
use clap::{Args, Subcommand};
use serde_json::json;

use super::common::{
    Failure, conn_info, control, done, failures_exit, print_step, result_json, seed, setup,
    step_params, type_rows,
};

#[derive(Subcommand, Debug)]
pub enum As3apCommand {
    /// Create, load and index the five tables.
    Load(As3apStepArgs),
    /// Run the single-user query list, one timing per query.
    SingleUser(As3apStepArgs),
    /// Run a multi-user mix; print tuples/s, queries/s and latencies.
    Mix(As3apMixArgs),
}

#[derive(Args, Debug)]
pub struct As3apStepArgs {
    /// Rows in each of uniques, hundred, tenpct and updates (1000 to 100000000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(as3ap::MIN_ROWS..=as3ap::MAX_ROWS))]
    rows: u64,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
}

#[derive(Args, Debug)]
pub struct As3apMixArgs {
    /// The multi-user mix.
    #[arg(long, value_parser = ["mixed-ir", "mixed-oltp"])]
    mix: String,
    /// Rows the tables were loaded with (1000 to 100000000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(as3ap::MIN_ROWS..=as3ap::MAX_ROWS))]
    rows: u64,
    /// Concurrent users, one connection each.
    #[arg(short = 'c', long = "users", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    users: u32,
    /// Measured window in seconds.
    #[arg(short = 'T', long = "time", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Seconds run before the measured window, not counted.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    #[arg(short = 'M', long = "protocol", default_value = "simple", value_parser = ["simple", "extended", "prepared"])]
    protocol: String,
    /// Random seed: an unsigned integer, "time" or "rand".
    #[arg(long = "random-seed")]
    random_seed: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// libpq-style connection string, e.g. "host=127.0.0.1 port=5432 user=u dbname=d"
    conninfo: String,
}

pub async fn as3ap_main(c: As3apCommand) -> ExitCode {
    done(match c {
        As3apCommand::Load(a) => as3ap_step(As3apStep::Load, a).await,
        As3apCommand::SingleUser(a) => as3ap_step(As3apStep::SingleUser, a).await,
        As3apCommand::Mix(a) => as3ap_mix(a).await,
    })
}

async fn as3ap_step(step: As3apStep, a: As3apStepArgs) -> Result<ExitCode, Failure> {
    let t = step_params(&conn_info(&a.conninfo)?, 0, 1);
    let rows = Rows::new(a.rows).map_err(setup)?;
    let r = as3ap::step(step, rows, &t, &ProgressSink::detached(), &control())
        .await
        .map_err(setup)?;
    if step == As3apStep::Load {
        print_step("load", &r);
        return Ok(ExitCode::SUCCESS);
    }
    // Notes "q.NAME: SECONDS s, ROWS ..." (one per query), then the total and remarks.
    for n in &r.notes {
        let Some(q) = n.strip_prefix("q.") else {
            eprintln!("{n}");
            continue;
        };
        match q
            .split_once(": ")
            .and_then(|(name, rest)| Some((name, rest.split_once(" s, ")?)))
        {
            Some((name, (secs, detail))) => println!("{name:<32} {secs:>12} s  {detail}"),
            None => println!("{q}"),
        }
    }
    let total = r.metrics.iter().find(|m| m.name == "as3ap.single_user_s");
    println!("{:<32} {:>12.6} s", "total", total.map_or(0.0, |m| m.value));
    Ok(ExitCode::SUCCESS)
}

async fn as3ap_mix(a: As3apMixArgs) -> Result<ExitCode, Failure> {
    let random_seed = seed(a.random_seed.as_deref())?;
    let conninfo = Some(conn_info(&a.conninfo)?);
    let rows = Rows::new(a.rows).map_err(setup)?;
    let mix = Mix::parse(&a.mix).map_err(setup)?;
    let t = WindowParams {
        random_seed,
        conninfo,
        clients: a.users,
        duration: Duration::from_secs(a.seconds),
        warmup: Duration::from_secs(a.warmup),
        client_id_offset: 0,
        threads: 0,
        protocol: as3ap::protocol(&a.protocol).map_err(setup)?,
    };
    let o = as3ap::run(&t, rows, mix, &ProgressSink::detached(), &control(), None)
        .await
        .map_err(setup)?;
    let types = type_rows(&o.txn_types);
    if a.json {
        let what = json!({"kind": "as3ap", "mix": a.mix, "rows": a.rows, "protocol": a.protocol});
        println!("{}", result_json(&o, what, &types)?);
        return failures_exit(&o);
    }
    let tuples: u64 = o.txn_types.iter().map(|t| t.rows).sum();
    let r = &o;
    println!(
        "workload: as3ap-like {}, {} rows, {} users, protocol {}",
        a.mix, a.rows, r.clients, a.protocol
    );
    println!(
        "measured: {:.2} s (warm-up {} s), random seed: {}",
        r.measured_seconds, a.warmup, r.random_seed
    );
    println!("tuples: {tuples} ({:.1} tuples/s)", o.metric("tup/s"));
    println!(
        "queries: {} ({:.1} queries/s), failures: {}",
        r.transactions, r.tps_excluding_connections, r.failures
    );
    println!(
        "latency average = {:.3} ms, stddev = {:.3} ms",
        r.latency_avg_ms, r.latency_stddev_ms
    );
    println!(
        "latency p50 = {:.3} ms, p90 = {:.3} ms, p99 = {:.3} ms, p99.9 = {:.3} ms, max = {:.3} ms",
        r.latency_p50_ms, r.latency_p90_ms, r.latency_p99_ms, r.latency_p999_ms, r.latency_max_ms
    );
    failures_exit(&o)
}
