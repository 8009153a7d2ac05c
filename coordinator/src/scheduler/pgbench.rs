//! A pgbench run's data load (the user's dump restored by the agent, pgbench's tables and the
//! user's SQL by a worker) and its window's length. Each worker's share of the load, with the
//! user's scripts, variables, rate (split by clients), limits, retries and the job's random
//! seed, is built in `fleet::tasks`.

use std::time::{Duration, Instant};

use blocklab_spec::{Stage, Workload};

use super::Scheduler;
use super::run::{INIT_TIMEOUT, RunCtx, task_failed};
use super::workload_metrics as wm;
use crate::fleet::tasks::{ConnInfo, RunOf};
use blocklab_measure::Metric;

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
        let run = RunOf {
            run_id: ctx.run_id,
            attempt: ctx.attempt,
        };
        if let Some(path) = &init.dump {
            let r = ctx
                .agent
                .restore_dump(run, path, INIT_TIMEOUT)
                .await
                .map_err(task_failed(Stage::LoadingData))?;
            tracing::info!(run_id = ctx.run_id, dump = %path, seconds = r.seconds, bytes = r.bytes, "dump restored");
            metrics.push(wm::metric("init.restore_s", r.seconds, "s", false));
        }
        if init.pgbench || init.sql.is_some() {
            let r = ctx.workers[0]
                .init_data(run, conninfo, w, ctx.cell.scale, INIT_TIMEOUT)
                .await
                .map_err(task_failed(Stage::LoadingData))?;
            if own && init.pgbench {
                metrics.push(wm::metric("init.pgbench_s", r.pgbench_seconds, "s", false));
            }
            if let Some(f) = &init.sql {
                tracing::info!(run_id = ctx.run_id, file = %f.name, seconds = r.sql_seconds, "init sql done");
                metrics.push(wm::metric("init.sql_s", r.sql_seconds, "s", false));
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
