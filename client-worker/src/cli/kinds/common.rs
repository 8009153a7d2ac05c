//! The standalone `tpcc` and `as3ap` subcommands: the TPC-C-like and AS3AP-like workloads
//! run by hand against one server, as `bench` runs pgbench's scripts. Exit codes as `bench`:
//! 0 success, 1 bad options or setup errors, 2 failed transactions or failed checks.
//!
//! This file holds what both share (the conninfo, the result's table and JSON); the
//! commands are in `tpcc_cmd.rs` and `as3ap_cmd.rs` beside it.

use std::process::ExitCode;

use blocklab_measure::{LoadResult, TxnType};
use blocklab_worker::conn::{Target, key_value_string};
use blocklab_worker::engine::stats::{deserialize_histogram, new_histogram, quantile_ms};
use blocklab_worker::engine::window::{StepOutcome, StepParams};
use blocklab_worker::{LoadControl, WorkerError};
use serde_json::json;
use tokio_postgres::config::Host;

/// An exit code and the message printed before exiting with it.
pub(super) type Failure = (u8, String);

pub(super) fn done(r: Result<ExitCode, Failure>) -> ExitCode {
    r.unwrap_or_else(|(code, msg)| {
        eprintln!("blocklab-worker: error: {msg}");
        ExitCode::from(code)
    })
}

pub(super) fn setup(e: WorkerError) -> Failure {
    (1, e.to_string())
}

/// A libpq-style string reduced to what the coordinator would send (host, port, user,
/// password, dbname); TCP hosts only.
pub(super) fn conn_info(conninfo: &str) -> Result<String, Failure> {
    let target = Target::parse(conninfo).map_err(setup)?;
    let c = &target.config;
    let host = match (c.get_hostaddrs().first(), c.get_hosts().first()) {
        (Some(ip), _) => ip.to_string(),
        (None, Some(Host::Tcp(h))) => h.clone(),
        #[cfg(unix)]
        (None, Some(Host::Unix(p))) => {
            return Err((
                1,
                format!(
                    "unix-socket host {:?} is not supported by the tpcc and as3ap commands; give a TCP host, e.g. host=127.0.0.1",
                    p.display().to_string()
                ),
            ));
        }
        (None, None) => {
            return Err((
                1,
                "the connection string names no host; give host=NAME or hostaddr=IP".into(),
            ));
        }
    };
    if c.get_hosts().len() > 1 {
        eprintln!("blocklab-worker: several hosts given; using the first, {host}");
    }
    let user = c
        .get_user()
        .ok_or((
            1,
            "the connection string names no user; give user=NAME".to_string(),
        ))?
        .to_string();
    let password = String::from_utf8(c.get_password().unwrap_or_default().to_vec())
        .map_err(|_| (1, "the password is not valid UTF-8".to_string()))?;
    let port = u32::from(c.get_ports().first().copied().unwrap_or(5432));
    let dbname = c.get_dbname().unwrap_or(&user).to_string();
    Ok(key_value_string(&host, port, &user, &password, &dbname))
}

/// A load control whose `stop` the first Ctrl-C sets; a second one exits at once.
pub(super) fn control() -> LoadControl {
    let ctl = LoadControl::default();
    let c = ctl.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("blocklab-worker: interrupted, stopping (press Ctrl-C again to quit now)");
            c.stop();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    ctl
}

/// `--random-seed` (None: from the clock; 0 too, as the coordinator's tasks).
pub(super) fn seed(s: Option<&str>) -> Result<Option<u64>, Failure> {
    let s = s
        .map(super::super::seed::parse_seed)
        .transpose()
        .map_err(|e| (1, e))?;
    Ok(s.flatten().filter(|&s| s != 0))
}

pub(super) fn step_params(conninfo: &str, part: u32, parts: u32) -> StepParams {
    StepParams {
        conninfo: Some(conninfo.to_string()),
        part,
        parts,
    }
}

pub(super) fn print_step(name: &str, r: &StepOutcome) {
    println!("{name}: {:.2} s", r.seconds);
    for n in &r.notes {
        println!("  {n}");
    }
}

/// One transaction type's line: the counts and its latencies from the histogram.
#[derive(serde::Serialize)]
pub(super) struct TypeRow {
    pub(super) name: String,
    pub(super) count: u64,
    pub(super) mix_pct: f64,
    pub(super) rollbacks: u64,
    pub(super) failures: u64,
    pub(super) rows: u64,
    pub(super) avg_ms: f64,
    pub(super) p90_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) max_ms: f64,
}

pub(super) fn type_rows(types: &[TxnType]) -> Vec<TypeRow> {
    let total: u64 = types.iter().map(|t| t.count).sum();
    let mut out = Vec::with_capacity(types.len());
    for t in types {
        let mut row = TypeRow {
            name: t.name.clone(),
            count: t.count,
            mix_pct: if total == 0 {
                0.0
            } else {
                t.count as f64 * 100.0 / total as f64
            },
            rollbacks: t.rollbacks,
            failures: t.failures,
            rows: t.rows,
            avg_ms: 0.0,
            p90_ms: 0.0,
            p99_ms: 0.0,
            max_ms: 0.0,
        };
        // The histogram the worker serialized: read back, it is the one it recorded.
        let h = deserialize_histogram(&t.latency_histogram).unwrap_or_else(|_| new_histogram());
        if !h.is_empty() {
            row.avg_ms = h.mean() / 1e3;
            row.p90_ms = quantile_ms(&h, 0.9);
            row.p99_ms = quantile_ms(&h, 0.99);
            row.max_ms = h.max() as f64 / 1e3;
        }
        out.push(row);
    }
    out
}

/// The result as JSON: the run's figures, its metrics by name, and the per-type rows.
pub(super) fn result_json(
    o: &LoadResult,
    what: serde_json::Value,
    types: &[TypeRow],
) -> Result<String, Failure> {
    let r = o;
    let metrics: serde_json::Map<String, serde_json::Value> = o
        .metrics
        .iter()
        .map(|m| (m.name.clone(), json!(m.value)))
        .collect();
    let v = json!({
        "workload": what,
        "clients": r.clients,
        "random_seed": r.random_seed,
        "measured_seconds": r.measured_seconds,
        "transactions": r.transactions,
        "failures": r.failures,
        "tps": r.tps_excluding_connections,
        "tpm_total": r.tps_excluding_connections * 60.0,
        "latency_avg_ms": r.latency_avg_ms,
        "latency_stddev_ms": r.latency_stddev_ms,
        "latency_p50_ms": r.latency_p50_ms,
        "latency_p90_ms": r.latency_p90_ms,
        "latency_p99_ms": r.latency_p99_ms,
        "latency_p999_ms": r.latency_p999_ms,
        "latency_max_ms": r.latency_max_ms,
        "connection_time_ms": r.connection_time_ms,
        "client_cpu_user_s": r.client_cpu_user_s,
        "client_cpu_system_s": r.client_cpu_system_s,
        "metrics": metrics,
        "txn_types": types,
    });
    serde_json::to_string_pretty(&v).map_err(|e| (1, e.to_string()))
}

/// Exit code 2 when transactions failed.
pub(super) fn failures_exit(o: &LoadResult) -> Result<ExitCode, Failure> {
    let failures = o.failures;
    if failures > 0 {
        return Err((2, format!("{failures} transactions failed")));
    }
    Ok(ExitCode::SUCCESS)
}
