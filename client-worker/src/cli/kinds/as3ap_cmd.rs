//! `blocklab-worker as3ap load | single-user | mix`.

use std::process::ExitCode;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{As3apParams, RunLoadTask, WorkloadKind};
use blocklab_worker::as3ap;
use clap::{Args, Subcommand};
use serde_json::json;

use super::common::{
    Failure, conn_info, control, done, failures_exit, metric, print_step, result_json, seed, setup,
    step_task, type_rows,
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
        As3apCommand::Load(a) => as3ap_step("load", a).await,
        As3apCommand::SingleUser(a) => as3ap_step("single-user", a).await,
        As3apCommand::Mix(a) => as3ap_mix(a).await,
    })
}

fn as3ap_kind(rows: u64, mix: &str) -> WorkloadKind {
    let as3ap = As3apParams {
        rows,
        mix: mix.into(),
    };
    WorkloadKind {
        kind: "as3ap".into(),
        tpcc: None,
        as3ap: Some(as3ap),
    }
}

async fn as3ap_step(step: &str, a: As3apStepArgs) -> Result<ExitCode, Failure> {
    let t = step_task(
        &conn_info(&a.conninfo)?,
        &as3ap_kind(a.rows, ""),
        step,
        0,
        1,
    );
    let r = as3ap::step(&t, &ProgressSink::detached(), &control())
        .await
        .map_err(setup)?;
    if step == "load" {
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
    let t = RunLoadTask {
        random_seed: seed(a.random_seed.as_deref())?,
        conninfo: Some(conn_info(&a.conninfo)?),
        clients: a.users,
        duration_ms: a.seconds.saturating_mul(1000),
        warmup_ms: a.warmup.saturating_mul(1000),
        protocol: a.protocol.clone(),
        workload: Some(as3ap_kind(a.rows, &a.mix)),
        ..RunLoadTask::default()
    };
    let r = as3ap::run(&t, &ProgressSink::detached(), &control(), None)
        .await
        .map_err(setup)?;
    let types = type_rows(&r.txn_types)?;
    if a.json {
        let what = json!({"kind": "as3ap", "mix": a.mix, "rows": a.rows, "protocol": a.protocol});
        println!("{}", result_json(&r, what, &types)?);
        return failures_exit(&r);
    }
    let tuples: u64 = r.txn_types.iter().map(|t| t.rows).sum();
    println!(
        "workload: as3ap-like {}, {} rows, {} users, protocol {}",
        a.mix, a.rows, r.clients, a.protocol
    );
    println!(
        "measured: {:.2} s (warm-up {} s), random seed: {}",
        r.measured_seconds, a.warmup, r.random_seed
    );
    println!("tuples: {tuples} ({:.1} tuples/s)", metric(&r, "tup/s"));
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
    failures_exit(&r)
}
