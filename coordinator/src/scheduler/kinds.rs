//! What a run measures, per workload kind: pgbench scripts, the TPC-C-like mix (parallel
//! load, terminals, consistency checks), the AS3AP-like suite (single-user queries, then the
//! multi-user mixes) and the maintenance timings (done by the agent on its own server). After
//! each kind's data load the caches are reset as the layout asks (`reset.rs`).

use blocklab_spec::Stage;
use std::time::{Duration, Instant};

use futures::future::try_join_all;

use blocklab_measure::{LoadResult, Metric};

use super::Scheduler;
use super::reset::{check_reset, reset_choices, reset_task};
use super::run::{Failure, INIT_TIMEOUT, RunCtx, fail, task_failed, unrecorded};
use super::window::{Window, add_deltas, deltas};
use super::workload_metrics as wm;
use crate::catalog::RunOutcome;
use crate::fleet::tasks::{ConnInfo, Load, RunOf, StepDone};
use blocklab_spec::{Workload, WorkloadKind, WorkloadStep};

const MAINTENANCE_TIMEOUT: Duration = Duration::from_secs(6 * 60 * 60);

fn outcome(w: Window, metrics: Vec<Metric>, headline: &str) -> RunOutcome {
    RunOutcome {
        result: w.merged,
        shares: w.shares,
        stats: w.stats,
        suspect: w.suspect,
        metrics: wm::headline_first(wm::dedup(metrics), headline),
    }
}

impl Scheduler {
    pub(crate) async fn measure(&self, ctx: &RunCtx<'_>) -> Result<RunOutcome, Failure> {
        let server = self.prepare(ctx).await?;
        let conninfo = server.conninfo.clone();
        let workload = ctx.spec.cell_workload(ctx.cell);
        match &workload.kind {
            WorkloadKind::Pgbench => self.measure_pgbench(ctx, workload, conninfo).await,
            WorkloadKind::Tpcc { check, .. } => {
                self.measure_tpcc(ctx, workload, conninfo, *check).await
            }
            WorkloadKind::As3ap { single_user, mixes } => {
                self.measure_as3ap(ctx, workload, conninfo, *single_user, mixes)
                    .await
            }
            WorkloadKind::Maintenance { steps } => self.measure_maintenance(ctx, steps).await,
        }
    }

    async fn measure_pgbench(
        &self,
        ctx: &RunCtx<'_>,
        workload: &Workload,
        conninfo: ConnInfo,
    ) -> Result<RunOutcome, Failure> {
        let loaded = self.load_data(ctx, workload, &conninfo).await?;
        self.reset_caches(ctx).await?;
        let w = self
            .window(
                ctx,
                super::pgbench::window_length(workload),
                Load::Pgbench {
                    workload,
                    cell: ctx.cell,
                },
                &conninfo,
            )
            .await?;
        let mut metrics = self.wal_metrics(ctx, &w, w.merged.transactions).await?;
        metrics.extend(loaded);
        Ok(outcome(w, metrics, ""))
    }

    /// One step on each of `workers` (all in parallel, as parts of one job).
    async fn steps(
        &self,
        ctx: &RunCtx<'_>,
        workers: usize,
        workload: &Workload,
        conninfo: &ConnInfo,
        step: WorkloadStep,
    ) -> Result<Vec<StepDone>, Failure> {
        let stage = if step == WorkloadStep::Check {
            Stage::Checking
        } else {
            Stage::LoadingData
        };
        let parts = u32::try_from(workers).unwrap_or(1);
        let run = RunOf {
            run_id: ctx.run_id,
            attempt: ctx.attempt,
        };
        let scale = ctx.cell.scale;
        let calls = ctx.workers[..workers].iter().enumerate().map(|(i, w)| {
            let part = (u32::try_from(i).unwrap_or(0), parts);
            async move {
                w.workload_step(run, conninfo, workload, scale, step, part, INIT_TIMEOUT)
                    .await
                    .map_err(task_failed(stage))
            }
        });
        // The first part that fails fails the step at once.
        try_join_all(calls).await
    }

    async fn measure_tpcc(
        &self,
        ctx: &RunCtx<'_>,
        workload: &Workload,
        conninfo: ConnInfo,
        check: bool,
    ) -> Result<RunOutcome, Failure> {
        let loading = Instant::now();
        self.steps(ctx, 1, workload, &conninfo, WorkloadStep::Schema)
            .await?;
        let loaders = ctx.workers.len().min(ctx.cell.scale as usize).max(1);
        self.steps(ctx, loaders, workload, &conninfo, WorkloadStep::Load)
            .await?;
        self.steps(ctx, 1, workload, &conninfo, WorkloadStep::Finish)
            .await?;
        let load_s = loading.elapsed().as_secs_f64();
        self.reset_caches(ctx).await?;
        let w = self
            .window(
                ctx,
                workload.duration + workload.warmup,
                Load::Kind {
                    workload,
                    scale: ctx.cell.scale,
                    mix: "",
                },
                &conninfo,
            )
            .await?;
        let mut metrics = wm::tpcc(&w.merged);
        metrics.extend(self.wal_metrics(ctx, &w, w.merged.transactions).await?);
        if check {
            let _ = self
                .catalog
                .set_stage(ctx.run_id, ctx.attempt, Stage::Checking)
                .await;
            let checked = self
                .steps(ctx, 1, workload, &conninfo, WorkloadStep::Check)
                .await?;
            let passed = checked.first().map_or(0, |c| c.notes.len());
            tracing::info!(
                run_id = ctx.run_id,
                conditions = passed,
                "tpc-c consistency checks passed"
            );
            metrics.push(wm::metric(
                "tpcc.consistency_checks",
                passed as f64,
                "count",
                true,
            ));
        }
        metrics.push(wm::metric("tpcc.load_s", load_s, "s", false));
        Ok(outcome(w, metrics, workload.kind.headline_metric()))
    }

    async fn measure_as3ap(
        &self,
        ctx: &RunCtx<'_>,
        workload: &Workload,
        conninfo: ConnInfo,
        single_user: bool,
        mixes: &[String],
    ) -> Result<RunOutcome, Failure> {
        let mut metrics = Vec::new();
        for s in self
            .steps(ctx, 1, workload, &conninfo, WorkloadStep::Load)
            .await?
        {
            metrics.extend(s.metrics);
        }
        // Every measured phase (the single-user queries, each mix) starts from the caches
        // the layout asks for.
        if single_user {
            self.reset_caches(ctx).await?;
            let _ = self
                .catalog
                .set_stage(ctx.run_id, ctx.attempt, Stage::SingleUser)
                .await;
            self.changed(ctx.job_id);
            for s in self
                .steps(ctx, 1, workload, &conninfo, WorkloadStep::SingleUser)
                .await?
            {
                metrics.extend(s.metrics);
            }
        }
        let mut first: Option<Window> = None;
        for mix in mixes {
            self.reset_caches(ctx).await?;
            let w = self
                .window(
                    ctx,
                    workload.duration + workload.warmup,
                    Load::Kind {
                        workload,
                        scale: ctx.cell.scale,
                        mix,
                    },
                    &conninfo,
                )
                .await?;
            metrics.extend(wm::as3ap_mix(mix, &w.merged));
            match first.as_mut() {
                None => first = Some(w),
                Some(f) => {
                    add_deltas(&mut f.stats, &w.stats);
                    for s in w.suspect {
                        if !f.suspect.contains(&s) {
                            f.suspect.push(s);
                        }
                    }
                }
            }
        }
        let w = first.unwrap_or_else(|| Window {
            merged: LoadResult::default(),
            shares: Vec::new(),
            stats: Vec::new(),
            suspect: Vec::new(),
            lsn: (0, 0),
        });
        Ok(outcome(w, metrics, workload.kind.headline_metric()))
    }

    async fn measure_maintenance(
        &self,
        ctx: &RunCtx<'_>,
        steps: &[String],
    ) -> Result<RunOutcome, Failure> {
        let _ = self
            .catalog
            .set_stage(ctx.run_id, ctx.attempt, Stage::Maintenance)
            .await;
        self.changed(ctx.job_id);
        let before = self
            .snapshot(ctx.agent, ctx.run_id, ctx.attempt, false)
            .await?;
        let run = RunOf {
            run_id: ctx.run_id,
            attempt: ctx.attempt,
        };
        let reset = reset_task(&ctx.spec.layout);
        let result = ctx
            .agent
            .run_maintenance(run, ctx.cell.scale, steps, reset, MAINTENANCE_TIMEOUT)
            .await
            .map_err(task_failed(Stage::Maintenance))?;
        let after = self
            .snapshot(ctx.agent, ctx.run_id, ctx.attempt, false)
            .await?;
        self.catalog
            .record_run_choices(
                ctx.run_id,
                ctx.attempt,
                &reset_choices(result.reset.as_ref()),
            )
            .await
            .map_err(unrecorded(Stage::Maintenance))?;
        if let Some(r) = &result.reset {
            check_reset(&ctx.spec.layout, r)?;
        }
        let metrics = wm::maintenance(&result.metrics);
        let total = metrics
            .iter()
            .find(|m| m.name == "maint.total_s")
            .map_or(0.0, |m| m.value);
        if metrics.len() <= 1 {
            return Err(fail(
                Stage::Maintenance,
                "the agent reported no step timings",
                "",
            ));
        }
        let mut suspect = Vec::new();
        if steps.iter().any(|s| s == "count-cold") && !result.os_cache_dropped {
            suspect.push("OS cache not dropped for the cold count".to_string());
        }
        Ok(RunOutcome {
            result: LoadResult {
                measured_seconds: total,
                ..Default::default()
            },
            shares: Vec::new(),
            stats: deltas(&before, &after),
            suspect,
            metrics,
        })
    }
}
