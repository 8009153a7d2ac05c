//! The wire types (blocklab_proto) to the worker's own and back: the only place the
//! worker converts between them.

use blocklab_spec::WorkloadName;
use std::time::Duration;

use blocklab_proto::{
    ConnInfo, InitDataResult, PerSecondSample, RunLoadResult, RunLoadTask, TxnTypeStats,
    WorkloadKind, WorkloadMetric, WorkloadStepResult, WorkloadStepTask,
};
use blocklab_script::Protocol;
use blocklab_spec::Stage;

use crate::as3ap::{self, Mix, Rows};
use crate::engine::plan::{ScriptSpec, split_weight};
use crate::engine::report::{LoadOptions, LoadReport};
use crate::engine::stats::{self, Sample};
use crate::engine::window::{Metric, StepOutcome, StepParams, WindowOutcome, WindowParams};
use crate::error::WorkerError;
use crate::init::InitReport;
use crate::tpcc::{TpccOptions, TpccStep};

/// The workload kind of a task, parsed once from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// pgbench's scripts (an empty kind too).
    Pgbench,
    /// TPC-C-like.
    Tpcc,
    /// AS3AP-like.
    As3ap,
}

impl Workload {
    /// The kind a task names (no `workload` or an empty name: pgbench); None when unknown.
    pub fn of(w: Option<&WorkloadKind>) -> Option<Workload> {
        let name = w.map_or("", |w| w.kind.as_str());
        if name.is_empty() {
            return Some(Workload::Pgbench);
        }
        match name.parse::<WorkloadName>().ok()? {
            WorkloadName::Pgbench => Some(Workload::Pgbench),
            WorkloadName::Tpcc => Some(Workload::Tpcc),
            WorkloadName::As3ap => Some(Workload::As3ap),
            // Maintenance runs on the agent, never on a worker.
            WorkloadName::Maintenance => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Workload::Pgbench => WorkloadName::Pgbench,
            Workload::Tpcc => WorkloadName::Tpcc,
            Workload::As3ap => WorkloadName::As3ap,
        }
        .as_str()
    }
}

/// The stage a workload step runs in: checking for TPC-C's check, loading data otherwise.
pub fn step_stage(kind: Option<Workload>, step: &str) -> Stage {
    match (kind, step.parse::<TpccStep>()) {
        (Some(Workload::Tpcc), Ok(TpccStep::Check)) => Stage::Checking,
        _ => Stage::LoadingData,
    }
}

fn conninfo(c: Option<&ConnInfo>) -> Option<String> {
    c.map(ConnInfo::to_conninfo_string)
}

pub fn load_options(task: &RunLoadTask) -> Result<LoadOptions, WorkerError> {
    let conn = task
        .conninfo
        .as_ref()
        .ok_or_else(|| WorkerError::InvalidArgument("run-load task without conninfo".into()))?;
    let bad = WorkerError::InvalidArgument;
    let mut specs = Vec::new();
    if !task.scripts.is_empty() {
        for s in &task.scripts {
            specs.push(ScriptSpec::file(&s.name, s.text.clone(), s.weight.max(1)));
        }
    } else if !task.builtin.is_empty() {
        let (name, w) = split_weight(&task.builtin).map_err(bad)?;
        specs.push(ScriptSpec::builtin(name.parse().map_err(bad)?, w));
    } else {
        for b in &task.builtins {
            specs.push(ScriptSpec::builtin(
                b.name.parse().map_err(bad)?,
                b.weight.max(1),
            ));
        }
    }
    if task.rate < 0.0 || task.latency_limit_ms < 0.0 {
        return Err(bad("rate and latency_limit_ms must not be negative".into()));
    }
    Ok(LoadOptions {
        conninfo: conn.to_conninfo_string(),
        script_specs: specs,
        clients: task.clients,
        threads: task.threads.max(1),
        duration: Duration::from_millis(task.duration_ms),
        warmup: Duration::from_millis(task.warmup_ms),
        protocol: task.protocol.parse().map_err(bad)?,
        scale: task.scale,
        transactions_per_client: task.transactions_per_client,
        rate: task.rate,
        latency_limit: (task.latency_limit_ms > 0.0)
            .then(|| Duration::from_secs_f64(task.latency_limit_ms / 1e3)),
        max_tries: task.max_tries.max(1),
        random_seed: (task.random_seed != 0).then_some(task.random_seed),
        client_id_offset: task.client_id_offset,
        variables: task
            .variables
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect(),
        reconnect: task.reconnect,
        per_statement: false,
        progress_interval: None,
        allow_shell: false,
        report_live: true,
        // Until the task carries it, fleet runs keep counting SQL errors and going on.
        continue_on_error: true,
        failures_detailed: false,
        verbose_errors: false,
        exit_on_abort: false,
        log: None,
        progress_timestamp: false,
        run_clients: 0,
        thread_id_offset: 0,
    })
}

/// The TPC-C parameters of a task's workload, validated.
pub fn tpcc_options(w: Option<&WorkloadKind>) -> Result<TpccOptions, WorkerError> {
    let p = w.and_then(|k| k.tpcc).unwrap_or_default();
    TpccOptions::new(p.warehouses, p.keying_thinking, p.time_scale)
}

/// The AS3AP row count of a task's workload, validated.
pub fn as3ap_rows(w: Option<&WorkloadKind>) -> Result<Rows, WorkerError> {
    Rows::new(w.and_then(|w| w.as3ap.as_ref()).map_or(0, |a| a.rows))
}

/// The AS3AP mix of a task's workload.
pub fn as3ap_mix(w: Option<&WorkloadKind>) -> Result<Mix, WorkerError> {
    Mix::parse(
        w.and_then(|w| w.as3ap.as_ref())
            .map_or("", |a| a.mix.as_str()),
    )
}

/// The measured window of a run-load task for a workload kind that uses `protocol`.
pub fn window_params(t: &RunLoadTask, protocol: Protocol) -> WindowParams {
    WindowParams {
        conninfo: conninfo(t.conninfo.as_ref()),
        clients: t.clients,
        duration: Duration::from_millis(t.duration_ms),
        warmup: Duration::from_millis(t.warmup_ms),
        random_seed: (t.random_seed != 0).then_some(t.random_seed),
        client_id_offset: t.client_id_offset,
        protocol,
    }
}

/// This worker's share of a workload step.
pub fn step_params(t: &WorkloadStepTask) -> StepParams {
    StepParams {
        conninfo: conninfo(t.conninfo.as_ref()),
        part: t.part,
        parts: t.parts,
    }
}

/// The protocol of an AS3AP-like run.
pub fn as3ap_protocol(t: &RunLoadTask) -> Result<Protocol, WorkerError> {
    as3ap::protocol(&t.protocol)
}

fn samples(s: &[Sample]) -> Vec<PerSecondSample> {
    s.iter()
        .map(|s| PerSecondSample {
            second: s.second,
            transactions: s.transactions,
            latency_avg_ms: s.latency_avg_ms,
            failures: s.failures,
        })
        .collect()
}

fn metric(m: &Metric) -> WorkloadMetric {
    WorkloadMetric {
        name: m.name.clone(),
        value: m.value,
        unit: m.unit.clone(),
        higher_is_better: m.higher_is_better,
    }
}

/// A pgbench run's report in the wire form sent to the coordinator.
pub fn load_result(r: &LoadReport) -> RunLoadResult {
    RunLoadResult {
        transactions: r.transactions,
        failures: r.failures,
        tps_including_connections: r.tps_including_connections,
        tps_excluding_connections: r.tps_excluding_connections,
        latency_avg_ms: r.latency_avg_ms,
        latency_stddev_ms: r.latency_stddev_ms,
        latency_p50_ms: r.latency_p50_ms,
        latency_p90_ms: r.latency_p90_ms,
        latency_p99_ms: r.latency_p99_ms,
        latency_max_ms: r.latency_max_ms,
        connection_time_ms: r.connection_time_ms,
        measured_seconds: r.measured_seconds,
        client_cpu_user_s: r.client_cpu_user_s,
        client_cpu_system_s: r.client_cpu_system_s,
        samples: samples(&r.samples),
        latency_histogram: stats::serialize_histogram(&r.histogram),
        latency_p999_ms: r.latency_p999_ms,
        retries: r.retries,
        skipped: r.skipped,
        late: r.late,
        schedule_lag_avg_ms: r.schedule_lag_avg_ms,
        random_seed: r.random_seed,
        clients: r.clients,
        metrics: Vec::new(),
        txn_types: Vec::new(),
    }
}

/// A window of a workload kind in the wire form.
pub fn window_result(o: &WindowOutcome) -> RunLoadResult {
    let s = &o.summary;
    RunLoadResult {
        transactions: s.transactions,
        failures: s.failures,
        tps_including_connections: s.tps_including_connections,
        tps_excluding_connections: s.tps_excluding_connections,
        latency_avg_ms: s.latency_avg_ms,
        latency_stddev_ms: s.latency_stddev_ms,
        latency_p50_ms: s.latency_p50_ms,
        latency_p90_ms: s.latency_p90_ms,
        latency_p99_ms: s.latency_p99_ms,
        latency_p999_ms: s.latency_p999_ms,
        latency_max_ms: s.latency_max_ms,
        connection_time_ms: s.connection_time_ms,
        measured_seconds: s.measured_seconds,
        client_cpu_user_s: s.cpu.user_s,
        client_cpu_system_s: s.cpu.system_s,
        samples: samples(&s.samples),
        latency_histogram: stats::serialize_histogram(&s.histogram),
        random_seed: s.random_seed,
        clients: s.clients,
        metrics: o.metrics.iter().map(metric).collect(),
        txn_types: o
            .txn_types
            .iter()
            .map(|t| TxnTypeStats {
                name: t.name.clone(),
                count: t.count,
                rollbacks: t.rollbacks,
                failures: t.failures,
                latency_histogram: stats::serialize_histogram(&t.histogram),
                rows: t.rows,
            })
            .collect(),
        ..Default::default()
    }
}

/// A workload step's outcome in the wire form.
pub fn step_result(o: StepOutcome) -> WorkloadStepResult {
    WorkloadStepResult {
        seconds: o.seconds,
        metrics: o.metrics.iter().map(metric).collect(),
        notes: o.notes,
    }
}

/// A data load's outcome in the wire form.
pub fn init_result(r: InitReport) -> InitDataResult {
    InitDataResult {
        seconds: r.seconds,
        accounts_rows: r.accounts_rows,
    }
}
