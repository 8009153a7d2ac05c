//! Running a load: clients spread over OS threads (one executor each), all
//! connected before a common start (or the coordinator's go), an optional warm-up, then
//! the measured window or a number of transactions per client.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use tokio::sync::{Notify, oneshot};

use crate::conn::Target;
use crate::cpu::CpuTimes;
use crate::engine::control::{LoadControl, Timeline, effective_seed};
use crate::engine::exec::{ClientState, StepStat};
use crate::engine::options::LoadOptions;
use crate::engine::plan::{Live, Plan, ScriptSet};
use crate::engine::report::{LoadReport, Timings};
use crate::engine::shared::ThreadRngs;
use crate::engine::spread::{self, Halt};
use crate::engine::stats::ClientStats;
use crate::engine::thread::{KIND, ThreadOutcome, ThreadPart, run_thread};
use crate::engine::txlog::LogFields;
use crate::error::{WorkerError, describe};
use blocklab_script::expr::Value;
use blocklab_script::prng::PgPrng;
use blocklab_script::vars::Variables;

/// Runs a load as `opts` describe, with no progress reports.
pub async fn run_load(opts: &LoadOptions) -> Result<LoadReport, WorkerError> {
    run_load_observed(
        opts,
        &ProgressSink::detached(),
        Arc::new(AtomicBool::new(false)),
    )
    .await
}

/// Runs a load, reporting stages to `progress`; setting `stop` ends it early.
pub async fn run_load_observed(
    opts: &LoadOptions,
    progress: &ProgressSink,
    stop: Arc<AtomicBool>,
) -> Result<LoadReport, WorkerError> {
    let ctl = LoadControl {
        stop,
        stopped: Arc::new(Notify::new()),
    };
    run_load_controlled(opts, progress, &ctl, None).await
}

/// The clients' states and the threads' random streams, drawn from the run's seed in
/// pgbench's order: one draw per client of the run seeds its script functions, the next is
/// `default_seed`, then three per thread (script choice, rate-limit schedule, log
/// sampling). Clients and threads of other workers take the draws before ours.
fn client_states(
    plan: &Plan,
    opts: &LoadOptions,
    threads: u32,
) -> (Vec<ClientState>, Vec<ThreadRngs>) {
    let mut base = PgPrng::seed(plan.random_seed);
    for _ in 0..plan.client_id_offset {
        base.next_u64();
    }
    let rngs: Vec<PgPrng> = (0..plan.clients)
        .map(|_| PgPrng::seed(base.next_u64()))
        .collect();
    let run_clients = if opts.run_clients == 0 {
        opts.client_id_offset + opts.clients
    } else {
        opts.run_clients.max(opts.client_id_offset + opts.clients)
    };
    for _ in (opts.client_id_offset + opts.clients)..run_clients {
        base.next_u64();
    }
    let default_seed = base.next_u64() as i64;
    for _ in 0..u64::from(opts.thread_id_offset) * 3 {
        base.next_u64();
    }
    let thread_rngs = (0..threads)
        .map(|_| ThreadRngs {
            choose: PgPrng::seed(base.next_u64()),
            throttle: PgPrng::seed(base.next_u64()),
            sample: PgPrng::seed(base.next_u64()),
        })
        .collect();
    let sy = &plan.scripts.symbols;
    let id = |n: &str| sy.get(n).expect("automatic variables are interned");
    let states = rngs
        .into_iter()
        .enumerate()
        .map(|(i, rng)| {
            let mut vars = Variables::new(sy.clone());
            let client_id = i64::from(plan.client_id_offset) + i as i64;
            for (name, value) in &opts.variables {
                let _ = vars.set_text_by_name(name, value.clone());
            }
            if !vars.is_set(id("client_id")) {
                vars.set_value(id("client_id"), Value::Int(client_id));
            }
            for (name, v) in [
                ("scale", plan.scale),
                ("random_seed", plan.random_seed as i64),
                ("default_seed", default_seed),
            ] {
                if !vars.is_set(id(name)) {
                    vars.set_value(id(name), Value::Int(v));
                }
            }
            ClientState {
                id: client_id,
                vars,
                rng,
                cnt: 0,
                steps: if plan.per_statement {
                    plan.scripts
                        .scripts
                        .iter()
                        .map(|s| vec![StepStat::default(); s.script.steps.len()])
                        .collect()
                } else {
                    Vec::new()
                },
                debug_out: None,
            }
        })
        .collect();
    (states, thread_rngs)
}

/// Runs a load; with `go` (distributed runs) it reports "ready" once every client is
/// connected and starts when `go` fires.
pub async fn run_load_controlled(
    opts: &LoadOptions,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<LoadReport, WorkerError> {
    opts.validate()?;
    let scripts = ScriptSet::parse(&opts.scripts(), opts.protocol)
        .map_err(|e| WorkerError::Script(e.to_string()))?;
    if !opts.allow_shell {
        for s in &scripts.scripts {
            if let Some(line) = s.script.uses_shell() {
                return Err(WorkerError::InvalidArgument(format!(
                    "{}:{line}: \\shell and \\setshell are refused in daemon mode",
                    s.script.name
                )));
            }
        }
    }
    let target = Target::parse(&opts.conninfo)?;
    // As pgbench: only the built-in scripts read the scale from pgbench_branches; other
    // scripts get the given one, else 1.
    let builtin = opts.scripts().iter().any(|s| s.builtin);
    let scale = if builtin && opts.scale == 0 {
        detect_scale(&target).await?
    } else {
        opts.scale.max(1)
    };
    let threads = opts.threads.min(opts.clients).max(1);
    let random_seed = effective_seed(opts.random_seed);
    let plan = Arc::new(Plan {
        target,
        scripts,
        protocol: opts.protocol,
        scale: i64::from(scale),
        variables: opts.variables.clone(),
        allow_shell: opts.allow_shell,
        max_tries: opts.max_tries,
        // pgbench: the rate is split evenly over the threads.
        throttle_delay_us: (opts.rate > 0.0).then(|| 1e6 * f64::from(threads) / opts.rate),
        latency_limit_us: opts.latency_limit.map(|l| l.as_micros() as u64),
        reconnect: opts.reconnect,
        continue_on_error: opts.continue_on_error,
        verbose_errors: opts.verbose_errors,
        exit_on_abort: opts.exit_on_abort,
        abort_all: AtomicBool::new(false),
        log: opts.log.clone(),
        log_fields: LogFields {
            throttled: opts.rate > 0.0,
            latency_limit: opts.latency_limit.is_some(),
            retries: opts.max_tries != 1,
            failures_detailed: opts.failures_detailed,
        },
        progress_timestamp: opts.progress_timestamp,
        transactions_per_client: opts.transactions_per_client,
        per_statement: opts.per_statement,
        track_live: opts.progress_interval.is_some() || opts.report_live,
        live: Live::default(),
        random_seed,
        clients: opts.clients,
        client_id_offset: opts.client_id_offset,
    });
    tracing::info!(
        target = %plan.target.display, scripts = plan.scripts.scripts.len(), protocol = opts.protocol.name(),
        clients = opts.clients, threads, scale, random_seed, "starting load"
    );
    let (states, thread_rngs) = client_states(&plan, opts, threads);
    let mut states = states.into_iter();

    let begin = Instant::now();
    let mut parts = Vec::with_capacity(threads as usize);
    for t in 0..threads {
        // pgbench's split: the first (clients % threads) threads get one client more.
        let n = opts.clients / threads + u32::from(t < opts.clients % threads);
        parts.push(ThreadPart {
            tid: opts.thread_id_offset + t,
            clients: states.by_ref().take(n as usize).collect(),
            rngs: thread_rngs[t as usize],
        });
    }
    // A thread that panics stops the others; a load dropped before its threads finished
    // stops them too.
    let halt: Halt = {
        let stop = ctl.stop.clone();
        Arc::new(move || stop.store(true, Ordering::Relaxed))
    };
    let mut load_threads = spread::spawn(&KIND, parts, halt, {
        let (plan, stop) = (plan.clone(), ctl.stop.clone());
        move |part, hs| run_thread(&plan, part, hs, stop)
    })?;
    let (mut first_err, conn_total) = match load_threads.ready().await {
        Ok(total) => (None, total),
        Err(e) => (Some(e), Duration::ZERO),
    };
    let connection_elapsed = begin.elapsed();
    if first_err.is_none()
        && let Some(go) = go
    {
        progress.stage(blocklab_spec::Stage::Ready, "").await;
        tracing::info!(
            clients = opts.clients,
            "all clients connected, waiting for go"
        );
        tokio::select! {
            r = go => if r.is_err() { first_err = Some(WorkerError::Run("the go signal was dropped".into())) },
            _ = ctl.stopped.notified() => first_err = Some(WorkerError::Run("cancelled before the go".into())),
        }
    }
    if let Some(e) = first_err {
        load_threads.abort().await;
        return Err(e);
    }
    let start = Instant::now();
    let window_start = start + opts.warmup;
    let timed = opts.transactions_per_client == 0;
    let timeline = Timeline {
        start,
        window_start,
        end: if timed {
            Some(window_start + opts.duration)
        } else {
            opts.retry_time_limit.map(|t| window_start + t)
        },
        window_seconds: if timed {
            opts.duration.as_secs_f64().ceil().max(1.0) as usize
        } else {
            1
        },
    };
    load_threads.start(timeline);
    tracing::info!(
        connection_ms = connection_elapsed.as_secs_f64() * 1e3,
        "all clients connected"
    );
    if !opts.warmup.is_zero() {
        progress
            .stage(
                blocklab_spec::Stage::WarmingUp,
                &format!("{} s warm-up", opts.warmup.as_secs_f64()),
            )
            .await;
        tokio::time::sleep_until(tokio::time::Instant::from_std(window_start)).await;
    }
    let cpu_before = CpuTimes::now();
    progress
        .stage(
            blocklab_spec::Stage::Measuring,
            &format!("{} s measured", opts.duration.as_secs_f64()),
        )
        .await;
    let reporter = opts.progress_interval.map(|every| {
        let plan = plan.clone();
        tokio::spawn(crate::engine::progress::report_every(
            plan,
            window_start,
            every,
        ))
    });
    let live = opts.report_live.then(|| {
        let plan = plan.clone();
        let completed = move || plan.live.transactions.load(Ordering::Relaxed);
        tokio::spawn(crate::engine::live::report_live(
            completed,
            progress.clone(),
        ))
    });

    let mut total = ClientStats::new(timeline.window_seconds);
    total.grow = !timed;
    let mut last_finish = window_start;
    let mut log_error = None;
    for o in load_threads.finish().await? {
        let ThreadOutcome {
            stats,
            finished,
            log_error: e,
        } = o;
        total.merge(&stats);
        last_finish = last_finish.max(finished);
        log_error = log_error.or(e);
    }
    if let Some(e) = log_error {
        return Err(WorkerError::Run(e));
    }
    if let Some(r) = reporter {
        r.abort();
    }
    if let Some(r) = live {
        r.abort();
    }
    let cpu = CpuTimes::now().since(cpu_before);
    let timings = Timings {
        scale,
        threads,
        measured: last_finish.saturating_duration_since(window_start),
        connection_elapsed,
        connection_total: conn_total,
        cpu,
        random_seed,
    };
    let report = LoadReport::build(opts, &plan, &timings, &total);
    tracing::info!(
        transactions = report.measured.transactions,
        failures = report.measured.failures,
        tps = report.measured.tps_excluding_connections,
        latency_avg_ms = report.measured.latency_avg_ms,
        "load finished"
    );
    Ok(report)
}

/// The scale as pgbench finds it: the number of rows in pgbench_branches.
pub async fn detect_scale(target: &Target) -> Result<u32, WorkerError> {
    let (client, task) = target.connect().await?;
    let row = client
        .query_one("select count(*) from pgbench_branches", &[])
        .await
        .map_err(|e| WorkerError::Sql {
            context: "cannot read the scale from pgbench_branches (initialize the data first)"
                .into(),
            reason: describe(&e),
        })?;
    drop(client);
    let _ = task.await;
    let n: i64 = row.get(0);
    match u32::try_from(n) {
        Ok(s) if s > 0 => Ok(s),
        _ => Err(WorkerError::Run(format!(
            "invalid count(*) from pgbench_branches: {n}"
        ))),
    }
}
