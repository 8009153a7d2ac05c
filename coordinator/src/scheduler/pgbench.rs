//! A pgbench run's tasks from its workload: the data load (the user's dump restored by the
//! agent, pgbench's tables and the user's SQL by a worker) and each worker's share of the
//! load, with the user's scripts, variables, rate (split by clients), limits, retries and the
//! job's random seed (each client's stream derives from it and its global client id).

use std::time::{Duration, Instant};

use blocklab_proto::v1::{
    ConnInfo, InitDataTask, RestoreDumpTask, RunLoadTask, Setting, SqlFile, WeightedScript, task,
    task_result::Outcome,
};
use blocklab_spec::{Cell, ScriptSource, Stage, Workload};

use super::Scheduler;
use super::merge::split_clients;
use super::run::{INIT_TIMEOUT, RunCtx, unexpected};
use super::workload_metrics as wm;
use blocklab_measure::Metric;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The longest a run of `transactions` per client may take (it has no duration).
const TRANSACTIONS_WINDOW: Duration = Duration::from_secs(6 * 60 * 60);

/// How long the window of `w` lasts at most.
pub(crate) fn window_length(w: &Workload) -> Duration {
    if w.pgbench.transactions > 0 {
        TRANSACTIONS_WINDOW
    } else {
        w.duration + w.warmup
    }
}

/// The worker's data load: pgbench's tables (with the init options) and the user's SQL.
pub(crate) fn init_task(conninfo: &ConnInfo, w: &Workload, scale: u32) -> InitDataTask {
    let o = &w.init.pgbench_options;
    InitDataTask {
        conninfo: Some(conninfo.clone()),
        scale,
        pgbench_tables: w.init.pgbench,
        init_steps: o.steps.clone(),
        fillfactor: o.fillfactor,
        partitions: o.partitions,
        partition_method: o.partition_method.clone().unwrap_or_default(),
        unlogged: o.unlogged,
        foreign_keys: o.foreign_keys,
        sql: w.init.sql.as_ref().map(|f| SqlFile {
            name: f.name.clone(),
            text: f.text.clone(),
        }),
    }
}

/// Each worker's share of a pgbench window: `(clients, first client id)` → its task.
pub(crate) fn load_task<'a>(
    conninfo: &'a ConnInfo,
    w: &'a Workload,
    cell: &'a Cell,
    workers: u32,
) -> impl Fn(u32, u32) -> RunLoadTask + 'a {
    let o = &w.pgbench;
    let threads = move |clients: u32| w.threads.min(clients).max(1);
    let shares = split_clients(cell.clients, workers);
    let (files, builtins): (Vec<_>, Vec<_>) = o
        .scripts
        .iter()
        .partition(|s| matches!(s.source, ScriptSource::File(_)));
    let wire = |s: &blocklab_spec::WeightedScript| WeightedScript {
        name: s.source.name().to_string(),
        text: match &s.source {
            ScriptSource::File(f) => f.text.clone(),
            ScriptSource::Builtin(_) => String::new(),
        },
        weight: s.weight,
    };
    let scripts: Vec<WeightedScript> = files.into_iter().map(wire).collect();
    let builtins: Vec<WeightedScript> = builtins.into_iter().map(wire).collect();
    move |clients, offset| RunLoadTask {
        conninfo: Some(conninfo.clone()),
        builtin: if o.scripts.is_empty() {
            w.builtin.clone()
        } else {
            String::new()
        },
        scripts: scripts.clone(),
        builtins: builtins.clone(),
        clients,
        threads: threads(clients),
        duration_ms: millis(w.duration),
        warmup_ms: millis(w.warmup),
        protocol: w.protocol.clone(),
        scale: cell.scale,
        client_id_offset: offset,
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
        variables: o
            .variables
            .iter()
            .map(|(name, value)| Setting {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        reconnect: o.connect_per_transaction,
        continue_on_error: o.continue_on_error,
        per_statement_latencies: o.statement_latencies,
        run_clients: cell.clients,
        thread_id_offset: shares
            .iter()
            .take_while(|&&(_, first)| first < offset)
            .map(|&(c, _)| threads(c))
            .sum(),
        ..Default::default()
    }
}

impl Scheduler {
    /// Loads a pgbench run's data: the user's dump (restored by the agent), then pgbench's
    /// tables and the user's SQL (by the first worker). The timings of a load other than
    /// pgbench's tables alone are returned as metrics.
    pub(crate) async fn load_data(
        &self,
        ctx: &RunCtx<'_>,
        w: &Workload,
        conninfo: &ConnInfo,
    ) -> Result<Vec<Metric>, crate::scheduler::run::Failure> {
        let init = &w.init;
        let own = init.dump.is_some() || init.sql.is_some();
        let mut metrics = Vec::new();
        let started = Instant::now();
        if let Some(path) = &init.dump {
            let t = RestoreDumpTask { path: path.clone() };
            match ctx
                .agent
                .call(
                    ctx.run_id,
                    ctx.attempt,
                    task::Kind::RestoreDump(t),
                    INIT_TIMEOUT,
                )
                .await
            {
                Ok(Outcome::RestoreDump(r)) => {
                    tracing::info!(run_id = ctx.run_id, dump = %path, seconds = r.seconds, bytes = r.bytes, "dump restored");
                    metrics.push(wm::metric("init.restore_s", r.seconds, "s", false));
                }
                other => return Err(unexpected(Stage::LoadingData, other)),
            }
        }
        if init.pgbench || init.sql.is_some() {
            let t = init_task(conninfo, w, ctx.cell.scale);
            match ctx.workers[0]
                .call(
                    ctx.run_id,
                    ctx.attempt,
                    task::Kind::InitData(t),
                    INIT_TIMEOUT,
                )
                .await
            {
                Ok(Outcome::InitData(r)) => {
                    if own && init.pgbench {
                        metrics.push(wm::metric("init.pgbench_s", r.pgbench_seconds, "s", false));
                    }
                    if let Some(f) = &init.sql {
                        tracing::info!(run_id = ctx.run_id, file = %f.name, seconds = r.sql_seconds, "init sql done");
                        metrics.push(wm::metric("init.sql_s", r.sql_seconds, "s", false));
                    }
                }
                other => return Err(unexpected(Stage::LoadingData, other)),
            }
        }
        if own {
            metrics.push(wm::metric(
                "init.total_s",
                started.elapsed().as_secs_f64(),
                "s",
                false,
            ));
        }
        Ok(metrics)
    }
}
