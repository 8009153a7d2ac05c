//! The tasks of a run's data load and measured window, built from the workload and the cell:
//! each worker's share of a load (pgbench scripts with their rate, limits, retries and seed;
//! TPC-C-like terminals; AS3AP-like mix users), pgbench's data load, a dump's restore and the
//! steps of the TPC-C-like and AS3AP-like loads.

use std::time::Duration;

use blocklab_measure::{LoadResult, Metric};
use blocklab_proto::v1 as pb;
use blocklab_proto::v1::{task, task_result::Outcome};
use blocklab_spec::{Cell, ScriptSource, Workload, WorkloadKind, WorkloadName, WorkloadStep};

use super::outcome::{RunOf, TaskError, failure};
use super::types::ConnInfo;
use crate::fleet::HostSession;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What a run's workers load.
#[derive(Debug, Clone, Copy)]
pub enum Load<'a> {
    /// pgbench scripts at a cell (its clients, scale and rate split over the workers).
    Pgbench {
        workload: &'a Workload,
        cell: &'a Cell,
    },
    /// The TPC-C-like or AS3AP-like driver at `scale`; `mix` names an AS3AP-like mix.
    Kind {
        workload: &'a Workload,
        scale: u32,
        mix: &'a str,
    },
}

/// One worker's part of a load: its clients, its first global client id and thread index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub clients: u32,
    pub first_client: u32,
    pub first_thread: u32,
}

impl Load<'_> {
    /// The threads a share of `clients` runs on (pgbench's `-j`, at most one a client).
    pub fn threads(&self, clients: u32) -> u32 {
        match self {
            Load::Pgbench { workload, .. } => workload.threads.min(clients).max(1),
            Load::Kind { .. } => clients.max(1),
        }
    }

    fn task(&self, conninfo: &ConnInfo, share: Share) -> pb::RunLoadTask {
        let Share {
            clients,
            first_client,
            first_thread,
        } = share;
        match *self {
            Load::Pgbench { workload: w, cell } => {
                let o = &w.pgbench;
                let wire = |s: &blocklab_spec::WeightedScript| pb::WeightedScript {
                    name: s.source.name().to_string(),
                    text: match &s.source {
                        ScriptSource::File(f) => f.text.clone(),
                        ScriptSource::Builtin(_) => String::new(),
                    },
                    weight: s.weight,
                };
                let (files, builtins): (Vec<_>, Vec<_>) = o
                    .scripts
                    .iter()
                    .partition(|s| matches!(s.source, ScriptSource::File(_)));
                pb::RunLoadTask {
                    conninfo: Some(conninfo.clone().into()),
                    builtin: if o.scripts.is_empty() {
                        w.builtin.clone()
                    } else {
                        String::new()
                    },
                    scripts: files.into_iter().map(wire).collect(),
                    builtins: builtins.into_iter().map(wire).collect(),
                    clients,
                    threads: self.threads(clients),
                    duration_ms: millis(w.duration),
                    warmup_ms: millis(w.warmup),
                    protocol: w.protocol.clone(),
                    scale: cell.scale,
                    client_id_offset: first_client,
                    // The whole run's rate, this worker's share by its clients.
                    rate: if cell.clients == 0 {
                        0.0
                    } else {
                        o.rate * f64::from(clients) / f64::from(cell.clients)
                    },
                    latency_limit_ms: o.latency_limit.map(|l| l.as_secs_f64() * 1e3),
                    max_tries: o.max_tries,
                    retry_time_limit_ms: o.retry_time_limit.map(millis),
                    random_seed: o.random_seed,
                    transactions_per_client: o.transactions,
                    variables: super::types::settings(&o.variables),
                    reconnect: o.connect_per_transaction,
                    continue_on_error: o.continue_on_error,
                    per_statement_latencies: o.statement_latencies,
                    run_clients: cell.clients,
                    thread_id_offset: first_thread,
                    wait_for_go: true,
                    ..Default::default()
                }
            }
            Load::Kind {
                workload,
                scale,
                mix,
            } => pb::RunLoadTask {
                conninfo: Some(conninfo.clone().into()),
                clients,
                threads: self.threads(clients),
                duration_ms: millis(workload.duration),
                warmup_ms: millis(workload.warmup),
                scale,
                client_id_offset: first_client,
                workload: Some(kind(workload, scale, mix)),
                // The job's seed, as pgbench runs have it: all workers of a run share the
                // workload's constants, and a rerun with the same seed replays the streams.
                random_seed: workload.pgbench.random_seed,
                wait_for_go: true,
                ..Default::default()
            },
        }
    }
}

/// The wire form of a TPC-C-like or AS3AP-like workload at a cell's scale.
fn kind(w: &Workload, scale: u32, mix: &str) -> pb::WorkloadKind {
    match &w.kind {
        WorkloadKind::Tpcc {
            keying_thinking,
            time_scale,
            ..
        } => pb::WorkloadKind {
            kind: WorkloadName::Tpcc.as_str().into(),
            tpcc: Some(pb::TpccParams {
                warehouses: scale,
                keying_thinking: *keying_thinking,
                time_scale: *time_scale,
            }),
            as3ap: None,
        },
        _ => pb::WorkloadKind {
            kind: WorkloadName::As3ap.as_str().into(),
            tpcc: None,
            as3ap: Some(pb::As3apParams {
                rows: u64::from(scale) * 1000,
                mix: mix.to_string(),
            }),
        },
    }
}

/// What pgbench's data load and the user's SQL took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Initialized {
    pub pgbench_seconds: f64,
    pub sql_seconds: f64,
}

/// What a restored dump took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Restored {
    pub seconds: f64,
    pub bytes: u64,
}

/// One part of a TPC-C-like or AS3AP-like step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepDone {
    pub seconds: f64,
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
}

impl HostSession {
    /// Runs this worker's share of a window; the load waits for [`HostSession::go`] after
    /// connecting its clients. `task_id` is the caller's, to follow its progress.
    pub async fn run_load(
        &self,
        task_id: &str,
        run: RunOf<'_>,
        conninfo: &ConnInfo,
        load: &Load<'_>,
        share: Share,
        timeout: Duration,
    ) -> Result<LoadResult, TaskError> {
        let kind = task::Kind::RunLoad(load.task(conninfo, share));
        match self
            .call_with_id(task_id, run.run_id, run.attempt, kind, timeout)
            .await?
        {
            Outcome::RunLoad(r) => {
                crate::fleet::limits::load_result(&r).map_err(|reason| TaskError::Failed {
                    stage: None,
                    reason,
                    log_tail: String::new(),
                })?;
                Ok(r.into())
            }
            other => Err(failure("a load", other)),
        }
    }

    /// Loads pgbench's tables (with the workload's init options) and runs the user's SQL.
    pub async fn init_data(
        &self,
        run: RunOf<'_>,
        conninfo: &ConnInfo,
        w: &Workload,
        scale: u32,
        timeout: Duration,
    ) -> Result<Initialized, TaskError> {
        let o = &w.init.pgbench_options;
        let kind = task::Kind::InitData(pb::InitDataTask {
            conninfo: Some(conninfo.clone().into()),
            scale,
            pgbench_tables: w.init.pgbench,
            init_steps: o.steps.clone(),
            fillfactor: o.fillfactor,
            partitions: o.partitions,
            partition_method: o.partition_method.clone().unwrap_or_default(),
            unlogged: o.unlogged,
            foreign_keys: o.foreign_keys,
            sql: w.init.sql.as_ref().map(|f| pb::SqlFile {
                name: f.name.clone(),
                text: f.text.clone(),
            }),
        });
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::InitData(r) => Ok(Initialized {
                pgbench_seconds: r.pgbench_seconds,
                sql_seconds: r.sql_seconds,
            }),
            other => Err(failure("a data load", other)),
        }
    }

    /// Restores the user's dump into the run's database.
    pub async fn restore_dump(
        &self,
        run: RunOf<'_>,
        path: &str,
        timeout: Duration,
    ) -> Result<Restored, TaskError> {
        let kind = task::Kind::RestoreDump(pb::RestoreDumpTask {
            path: path.to_string(),
        });
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::RestoreDump(r) => Ok(Restored {
                seconds: r.seconds,
                bytes: r.bytes,
            }),
            other => Err(failure("a dump restore", other)),
        }
    }

    /// Part `part` of `parts` of a TPC-C-like or AS3AP-like step at `scale`.
    #[allow(clippy::too_many_arguments)]
    pub async fn workload_step(
        &self,
        run: RunOf<'_>,
        conninfo: &ConnInfo,
        w: &Workload,
        scale: u32,
        step: WorkloadStep,
        (part, parts): (u32, u32),
        timeout: Duration,
    ) -> Result<StepDone, TaskError> {
        let kind = task::Kind::WorkloadStep(pb::WorkloadStepTask {
            conninfo: Some(conninfo.clone().into()),
            workload: Some(kind(w, scale, "")),
            step: crate::fleet::convert::step_name(step).into(),
            part,
            parts,
        });
        match self.call(run.run_id, run.attempt, kind, timeout).await? {
            Outcome::WorkloadStep(s) => Ok(StepDone {
                seconds: s.seconds,
                metrics: s.metrics.into_iter().map(Into::into).collect(),
                notes: s.notes,
            }),
            other => Err(failure("a workload step", other)),
        }
    }
}
