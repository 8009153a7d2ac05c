//! The wire types (blocklab_proto) to the worker's own and back: the only place the
//! worker converts between them.

use blocklab_spec::{WorkloadName, WorkloadStep};
use std::time::Duration;

use blocklab_proto::{
    ConnInfo, InitDataResult, InitDataTask, RunLoadResult, RunLoadTask, WorkloadKind,
    WorkloadStepName, WorkloadStepResult, WorkloadStepTask,
};
use blocklab_script::Protocol;
use blocklab_spec::Stage;

use crate::as3ap::{self, Mix, Rows};
use crate::engine::options::LoadOptions;
use crate::engine::plan::{ScriptSpec, split_weight};
use crate::engine::report::LoadReport;
use crate::engine::window::{StepOutcome, StepParams, WindowParams};
use crate::error::WorkerError;
use crate::init::{InitOptions, InitReport, PartitionMethod};
use crate::tpcc::TpccOptions;

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

/// The step a workload-step task names; unspecified or unknown is refused.
pub fn workload_step(t: &WorkloadStepTask) -> Result<WorkloadStep, WorkerError> {
    match WorkloadStepName::try_from(t.step) {
        Ok(WorkloadStepName::WorkloadStepSchema) => Ok(WorkloadStep::Schema),
        Ok(WorkloadStepName::WorkloadStepLoad) => Ok(WorkloadStep::Load),
        Ok(WorkloadStepName::WorkloadStepFinish) => Ok(WorkloadStep::Finish),
        Ok(WorkloadStepName::WorkloadStepCheck) => Ok(WorkloadStep::Check),
        Ok(WorkloadStepName::WorkloadStepSingleUser) => Ok(WorkloadStep::SingleUser),
        Ok(WorkloadStepName::WorkloadStepUnspecified) => Err(WorkerError::InvalidArgument(
            "workload_step.step is unspecified".into(),
        )),
        Err(_) => Err(WorkerError::InvalidArgument(format!(
            "workload_step.step {} is unknown",
            t.step
        ))),
    }
}

/// The stage a workload step runs in: checking for TPC-C's check, loading data otherwise.
pub fn step_stage(kind: Option<Workload>, step: Option<WorkloadStep>) -> Stage {
    match (kind, step) {
        (Some(Workload::Tpcc), Some(WorkloadStep::Check)) => Stage::Checking,
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
    }
    // Built-ins of the mix come after its files.
    if task.builtin.is_empty() {
        for b in &task.builtins {
            specs.push(ScriptSpec::builtin(
                b.name.parse().map_err(bad)?,
                b.weight.max(1),
            ));
        }
    }
    if task.rate < 0.0 {
        return Err(bad("rate must not be negative".into()));
    }
    let latency_limit = match task.latency_limit_ms {
        Some(l) if !(l.is_finite() && l > 0.0) => {
            return Err(bad(format!(
                "latency_limit_ms {l} must be positive when set"
            )));
        }
        l => l.map(|l| Duration::from_secs_f64(l / 1e3)),
    };
    let retry_time_limit = match task.retry_time_limit_ms {
        Some(0) => {
            return Err(bad("retry_time_limit_ms must be positive when set".into()));
        }
        l => l.map(Duration::from_millis),
    };
    let mut o = LoadOptions::new(
        conn.to_conninfo_string(),
        Duration::from_millis(task.duration_ms),
    );
    o.script_specs = specs;
    o.clients = task.clients;
    o.threads = task.threads.max(1);
    o.warmup = Duration::from_millis(task.warmup_ms);
    o.protocol = task.protocol.parse().map_err(bad)?;
    o.scale = task.scale;
    o.transactions_per_client = task.transactions_per_client;
    o.rate = task.rate;
    o.latency_limit = latency_limit;
    // 0 = unlimited, bounded by the latency limit, the window's end or the retry time limit.
    o.max_tries = task.max_tries;
    o.retry_time_limit = retry_time_limit;
    o.random_seed = task.random_seed;
    o.client_id_offset = task.client_id_offset;
    o.variables = task
        .variables
        .iter()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect();
    o.reconnect = task.reconnect;
    o.per_statement = task.per_statement_latencies;
    o.report_live = true;
    o.continue_on_error = task.continue_on_error;
    o.run_clients = task.run_clients;
    o.thread_id_offset = task.thread_id_offset;
    Ok(o)
}

/// The `pgbench -i` options of a data-load task, validated.
pub fn init_options(t: &InitDataTask) -> Result<InitOptions, WorkerError> {
    let mut o = InitOptions::new(t.scale);
    if !t.init_steps.is_empty() {
        o.steps = t.init_steps.clone();
    }
    if t.foreign_keys && !o.steps.contains('f') {
        o.steps.push('f');
    }
    if t.fillfactor != 0 {
        o.fillfactor = t.fillfactor;
    }
    o.partitions = t.partitions;
    o.partition_method = match t.partition_method.as_str() {
        "" => None,
        "range" => Some(PartitionMethod::Range),
        "hash" => Some(PartitionMethod::Hash),
        other => {
            return Err(WorkerError::InvalidArgument(format!(
                "partition_method {other:?} is not range or hash"
            )));
        }
    };
    o.unlogged = t.unlogged;
    o.validate()?;
    Ok(o)
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
        random_seed: t.random_seed,
        client_id_offset: t.client_id_offset,
        protocol,
        // The task's `threads` is pgbench's `-j`: for these kinds the coordinator sends one
        // a client, so the worker takes as many as it has cores.
        threads: 0,
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

/// A pgbench run's report in the wire form sent to the coordinator.
pub fn load_result(r: &LoadReport) -> RunLoadResult {
    r.measured.clone().into()
}

/// A workload step's outcome in the wire form.
pub fn step_result(o: StepOutcome) -> WorkloadStepResult {
    WorkloadStepResult {
        seconds: o.seconds,
        metrics: o.metrics.into_iter().map(Into::into).collect(),
        notes: o.notes,
    }
}

/// A data load's outcome in the wire form.
pub fn init_result(r: InitReport) -> InitDataResult {
    InitDataResult {
        seconds: r.seconds,
        accounts_rows: r.accounts_rows,
        pgbench_seconds: r.seconds,
        sql_seconds: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> RunLoadTask {
        RunLoadTask {
            conninfo: Some(ConnInfo::default()),
            builtin: "select-only".into(),
            protocol: "simple".into(),
            clients: 1,
            ..Default::default()
        }
    }

    #[test]
    fn unset_seed_and_limits_stay_none_and_set_ones_carry_over() {
        let o = load_options(&task()).expect("valid");
        assert_eq!(
            (o.random_seed, o.latency_limit, o.retry_time_limit),
            (None, None, None)
        );
        let t = RunLoadTask {
            random_seed: Some(0),
            latency_limit_ms: Some(250.0),
            retry_time_limit_ms: Some(3000),
            ..task()
        };
        let o = load_options(&t).expect("valid");
        assert_eq!(o.random_seed, Some(0));
        assert_eq!(o.latency_limit, Some(Duration::from_millis(250)));
        assert_eq!(o.retry_time_limit, Some(Duration::from_secs(3)));
    }

    #[test]
    fn set_limits_must_be_positive() {
        for (t, field) in [
            (
                RunLoadTask {
                    latency_limit_ms: Some(0.0),
                    ..task()
                },
                "latency_limit_ms",
            ),
            (
                RunLoadTask {
                    latency_limit_ms: Some(f64::NAN),
                    ..task()
                },
                "latency_limit_ms",
            ),
            (
                RunLoadTask {
                    retry_time_limit_ms: Some(0),
                    ..task()
                },
                "retry_time_limit_ms",
            ),
        ] {
            let e = load_options(&t).expect_err(field);
            assert!(
                matches!(&e, WorkerError::InvalidArgument(m) if m.contains(field)),
                "{e}"
            );
        }
    }

    #[test]
    fn every_wire_step_converts_and_unspecified_or_unknown_is_refused() {
        let of = |step: i32| {
            workload_step(&WorkloadStepTask {
                step,
                ..Default::default()
            })
        };
        let all = [
            (WorkloadStepName::WorkloadStepSchema, WorkloadStep::Schema),
            (WorkloadStepName::WorkloadStepLoad, WorkloadStep::Load),
            (WorkloadStepName::WorkloadStepFinish, WorkloadStep::Finish),
            (WorkloadStepName::WorkloadStepCheck, WorkloadStep::Check),
            (
                WorkloadStepName::WorkloadStepSingleUser,
                WorkloadStep::SingleUser,
            ),
        ];
        for (wire, step) in all {
            assert_eq!(of(wire.into()).expect("known"), step);
        }
        for bad in [0, 99] {
            let e = of(bad).expect_err("refused");
            assert!(
                matches!(&e, WorkerError::InvalidArgument(m) if m.contains("workload_step.step")),
                "{e}"
            );
        }
        assert_eq!(
            step_stage(Some(Workload::Tpcc), Some(WorkloadStep::Check)),
            Stage::Checking
        );
        assert_eq!(
            step_stage(Some(Workload::Tpcc), Some(WorkloadStep::Load)),
            Stage::LoadingData
        );
    }
}
