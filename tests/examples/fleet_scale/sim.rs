//! A simulated host: a real Fleet session (`blocklab_daemon::fleet::run_session`: dial,
//! hello, heartbeats) whose task handler answers every task at once with a well-formed result,
//! and the probe all simulated hosts of the process share, which times the coordinator's
//! dispatch from the host side.
//!
//! Dispatch latency is the time from a host sending what the coordinator waits for (a task's
//! result, or a load's `ready` / `measuring` report) to a host receiving the next task (or
//! go) of the same run; between runs, from the agent's result of the previous run's last task
//! (stop) to its next run's first task (prepare). Both ends are stamped in this process, on one
//! clock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use blocklab_daemon::fleet::{ProgressSink, TaskHandler, task_error};
use blocklab_proto::v1::{
    BuildResult, CheckSettingsResult, ConnInfo, InitDataResult, PrepareServerResult,
    ResetCachesResult, RunLoadResult, SnapshotStatsResult, StopServerResult, Task, WalStatsResult,
    task, task_result::Outcome,
};
use blocklab_spec::Stage;
use hdrhistogram::Histogram;
use tokio::sync::{oneshot, watch};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn histogram() -> Mutex<Histogram<u64>> {
    Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram bounds"))
}

/// Timings shared by every simulated host of the process (microseconds).
pub struct Probe {
    /// run id, or `host:<agent>` → when the coordinator was last handed what it waits for.
    marks: Mutex<HashMap<String, Instant>>,
    /// Within a run: a result or report → the run's next task or go.
    pub within: Mutex<Histogram<u64>>,
    /// Between runs: the previous run's stop result → the next run's prepare, same agent.
    pub between: Mutex<Histogram<u64>>,
    /// Job submit called → the job's first task (its build) at the agent.
    pub first_task: Mutex<Histogram<u64>>,
    /// Job source tarball (unique per job) → when its submit was called.
    submitted: Mutex<HashMap<String, Instant>>,
    /// Go for a load task: task id → the waiting load.
    gos: Mutex<HashMap<String, oneshot::Sender<()>>>,
    /// (run, attempt) → snapshots answered; the second is the window's "before" one.
    snapshots: Mutex<HashMap<(String, u32), u32>>,
    /// (run, attempt) → turns true once the "before" snapshot was answered.
    opened: Mutex<HashMap<(String, u32), watch::Sender<bool>>>,
    /// Only timings taken while this is set are kept.
    pub recording: AtomicBool,
    pub tasks: std::sync::atomic::AtomicU64,
}

impl Probe {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            marks: Mutex::default(),
            within: histogram(),
            between: histogram(),
            first_task: histogram(),
            submitted: Mutex::default(),
            gos: Mutex::default(),
            snapshots: Mutex::default(),
            opened: Mutex::default(),
            recording: AtomicBool::new(false),
            tasks: Default::default(),
        })
    }

    /// A job whose source is `tarball` is being submitted now.
    pub fn submitting(&self, tarball: &str) {
        lock(&self.submitted).insert(tarball.to_string(), Instant::now());
    }

    fn record(&self, into: &Mutex<Histogram<u64>>, since: Instant) {
        if self.recording.load(Ordering::Relaxed) {
            let us = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
            let _ = lock(into).record(us.max(1));
        }
    }

    fn mark(&self, key: String) {
        lock(&self.marks).insert(key, Instant::now());
    }

    /// A task or go for `run_id` arrived at `host` (an agent when `agent`).
    fn arrived(&self, run_id: &str, host: &str, agent: bool) {
        let mut marks = lock(&self.marks);
        let host_key = format!("host:{host}");
        if let Some(t) = marks.remove(run_id) {
            drop(marks);
            self.record(&self.within, t);
        } else if agent && let Some(t) = marks.remove(&host_key) {
            drop(marks);
            self.record(&self.between, t);
        }
    }

    fn build_arrived(&self, task: &Task, host: &str) {
        lock(&self.marks).remove(&format!("host:{host}"));
        let Some(task::Kind::Build(b)) = &task.kind else {
            return;
        };
        let tarball = b
            .options
            .as_ref()
            .and_then(|o| o.source.as_ref())
            .map(|s| s.tarball.clone())
            .unwrap_or_default();
        if let Some(t) = lock(&self.submitted).remove(&tarball) {
            self.record(&self.first_task, t);
        }
    }

    fn opened(&self, key: (String, u32)) -> watch::Receiver<bool> {
        lock(&self.opened)
            .entry(key)
            .or_insert_with(|| watch::channel(false).0)
            .subscribe()
    }

    /// Counts a snapshot of `key`; the second opens the window for the loads.
    fn snapshot_taken(&self, key: (String, u32)) {
        let n = {
            let mut s = lock(&self.snapshots);
            let n = s.entry(key.clone()).or_default();
            *n += 1;
            *n
        };
        if n == 2 {
            lock(&self.opened)
                .entry(key)
                .or_insert_with(|| watch::channel(false).0)
                .send_replace(true);
        }
    }

    fn forget(&self, key: &(String, u32)) {
        lock(&self.snapshots).remove(key);
        lock(&self.opened).remove(key);
        lock(&self.marks).remove(&key.0);
    }
}

/// One simulated agent or worker.
pub struct SimHost {
    pub host_id: String,
    pub agent: bool,
    pub probe: Arc<Probe>,
}

/// How long a simulated measured window lasts after the coordinator took its "before"
/// snapshot: a result sent at once could overtake that snapshot's answer.
const WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

const STARTED: &str = "2026-12-01 00:00:00+00";

impl TaskHandler for SimHost {
    async fn handle(&self, task: Task, progress: ProgressSink) -> Outcome {
        let probe = &self.probe;
        probe.tasks.fetch_add(1, Ordering::Relaxed);
        if matches!(task.kind, Some(task::Kind::Build(_))) {
            probe.build_arrived(&task, &self.host_id);
        } else {
            probe.arrived(&task.run_id, &self.host_id, self.agent);
        }
        let key = (task.run_id.clone(), task.attempt);
        let outcome = self.answer(task, progress).await;
        let stopped = matches!(outcome, Outcome::StopServer(_));
        if stopped {
            probe.forget(&key);
        } else if !key.0.is_empty() {
            probe.mark(key.0.clone());
        }
        if self.agent {
            probe.mark(format!("host:{}", self.host_id));
        }
        outcome
    }

    fn on_go(&self, go: blocklab_proto::v1::Go) {
        self.probe.arrived(&go.run_id, &self.host_id, false);
        if let Some(tx) = lock(&self.probe.gos).remove(&go.task_id) {
            let _ = tx.send(());
        }
    }
}

impl SimHost {
    async fn answer(&self, task: Task, progress: ProgressSink) -> Outcome {
        let key = (task.run_id.clone(), task.attempt);
        match task.kind {
            Some(task::Kind::Build(b)) => {
                let o = b.options.unwrap_or_default();
                Outcome::Build(BuildResult {
                    build_key: format!("sim-{}-{}", o.block_size_kb, o.wal_block_size_kb),
                    source_sha256: "0".repeat(64),
                    reused: true,
                    pg_version: "15.0".into(),
                    install_dir: "/nonexistent/sim".into(),
                    compiler: "sim".into(),
                    ..Default::default()
                })
            }
            Some(task::Kind::CheckSettings(_)) => {
                Outcome::CheckSettings(CheckSettingsResult::default())
            }
            Some(task::Kind::PrepareServer(p)) => {
                let b = p.build.unwrap_or_default();
                Outcome::PrepareServer(PrepareServerResult {
                    conninfo: Some(ConnInfo {
                        host: "127.0.0.1".into(),
                        port: 5432,
                        user: "bench".into(),
                        password: "sim".into(),
                        dbname: "bench".into(),
                    }),
                    build_key: format!("sim-{}-{}", b.block_size_kb, b.wal_block_size_kb),
                    build_reused: true,
                    server_version: "15.0".into(),
                    block_size: b.block_size_kb * 1024,
                    wal_block_size: b.wal_block_size_kb * 1024,
                    data_dir: "/nonexistent/sim/data".into(),
                    postmaster_start_time: STARTED.into(),
                    ..Default::default()
                })
            }
            Some(task::Kind::InitData(t)) => Outcome::InitData(InitDataResult {
                accounts_rows: u64::from(t.scale) * 100_000,
                ..Default::default()
            }),
            Some(task::Kind::ResetCaches(t)) => Outcome::ResetCaches(ResetCachesResult {
                server_restarted: t.restart_server,
                os_cache_dropped: t.drop_os_cache,
                postmaster_start_time: STARTED.into(),
                ..Default::default()
            }),
            Some(task::Kind::SnapshotStats(t)) => {
                self.probe.snapshot_taken(key);
                Outcome::SnapshotStats(SnapshotStatsResult {
                    stats_json: r#"{"wal_lsn_bytes": 1000000, "xact_commit": 0}"#.into(),
                    postmaster_start_time: STARTED.into(),
                    checkpoint_done: t.checkpoint_first,
                    taken_at: "2026-12-01T00:00:00Z".into(),
                })
            }
            Some(task::Kind::RunLoad(t)) => self.load(&task.task_id, key, &t, &progress).await,
            Some(task::Kind::WalStats(_)) => Outcome::WalStats(WalStatsResult {
                complete: true,
                ..Default::default()
            }),
            Some(task::Kind::StopServer(_)) => {
                Outcome::StopServer(StopServerResult { removed: true })
            }
            _ => task_error("unknown", "the simulated host does not do this task", ""),
        }
    }

    /// A load share: connected (`ready`), go, window started (`measuring`), then its result
    /// a `WINDOW` after the coordinator took the window's "before" snapshot.
    async fn load(
        &self,
        task_id: &str,
        key: (String, u32),
        t: &blocklab_proto::v1::RunLoadTask,
        progress: &ProgressSink,
    ) -> Outcome {
        let probe = &self.probe;
        if t.wait_for_go {
            let (tx, rx) = oneshot::channel();
            lock(&probe.gos).insert(task_id.to_string(), tx);
            probe.mark(key.0.clone());
            progress.stage(Stage::Ready, "").await;
            if rx.await.is_err() {
                return task_error("measuring", "no go", "");
            }
        }
        let mut opened = probe.opened(key.clone());
        probe.mark(key.0.clone());
        progress.stage(Stage::Measuring, "").await;
        if opened.wait_for(|o| *o).await.is_err() {
            return task_error("measuring", "window never opened", "");
        }
        tokio::time::sleep(WINDOW).await;
        let seconds = t.duration_ms as f64 / 1000.0;
        let transactions = 1000 * u64::from(t.clients.max(1));
        Outcome::RunLoad(RunLoadResult {
            transactions,
            tps_including_connections: transactions as f64 / seconds.max(1.0),
            tps_excluding_connections: transactions as f64 / seconds.max(1.0),
            latency_avg_ms: 1.0,
            latency_stddev_ms: 0.1,
            latency_p50_ms: 1.0,
            latency_p90_ms: 1.2,
            latency_p99_ms: 1.5,
            latency_p999_ms: 2.0,
            latency_max_ms: 3.0,
            measured_seconds: seconds,
            clients: t.clients,
            random_seed: 1,
            ..Default::default()
        })
    }
}
