//! The coordinator side of `Fleet`: attached hosts, their heartbeats, and request/response
//! calls over each host's stream (`HostSession::call`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blocklab_proto::v1::fleet_server::Fleet;
use blocklab_proto::v1::{
    CoordinatorMessage, HostMessage, Role, Task, TaskProgress, TaskResult, Welcome,
    coordinator_message, host_message, task, task_result,
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use blocklab_daemon::metrics::Counter;
use blocklab_spec::Stage;

use crate::catalog::{Catalog, HostRecord};
use crate::load::{LoadResult, Metric, Sample, Statement, TxnType};

/// Heartbeat settings handed to hosts and used to judge them down.
#[derive(Debug, Clone, Copy)]
pub struct Liveness {
    pub heartbeat_interval: Duration,
    pub heartbeat_timeout: Duration,
}

/// Why a call to a host did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("host {0} disconnected before answering")]
    Disconnected(String),
    #[error("host {host} did not answer within {timeout:?}")]
    Timeout { host: String, timeout: Duration },
}

type Pending = (String, u32, oneshot::Sender<TaskResult>);

/// How long a message may wait for room on a host's stream before the host counts as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// One attached host.
pub struct HostSession {
    pub host_id: String,
    pub role: Role,
    pub labels: Vec<String>,
    pub address: String,
    generation: u64,
    tx: mpsc::Sender<Result<CoordinatorMessage, Status>>,
    /// task id -> (run id, attempt, waiter): a result is delivered only if it echoes both.
    pending: Mutex<HashMap<String, Pending>>,
    last_seen: Mutex<Instant>,
    /// Held by whoever runs work on this host: one run at a time per host.
    pub busy: Arc<tokio::sync::Mutex<()>>,
    /// Set when the session detached or missed its heartbeat timeout: calls fail at once
    /// instead of queueing behind a connection that no longer drains.
    closed: std::sync::atomic::AtomicBool,
}

impl HostSession {
    /// Sends a task and waits for its result.
    pub async fn call(
        &self,
        run_id: &str,
        attempt: u32,
        kind: task::Kind,
        timeout: Duration,
    ) -> Result<task_result::Outcome, CallError> {
        let task_id = uuid::Uuid::new_v4().to_string();
        self.call_with_id(&task_id, run_id, attempt, kind, timeout)
            .await
    }

    /// Like `call`, with a task id chosen by the caller (so it can send `Go` for it).
    pub async fn call_with_id(
        &self,
        task_id: &str,
        run_id: &str,
        attempt: u32,
        kind: task::Kind,
        timeout: Duration,
    ) -> Result<task_result::Outcome, CallError> {
        if self.is_closed() {
            return Err(CallError::Disconnected(self.host_id.clone()));
        }
        let (done_tx, done_rx) = oneshot::channel();
        self.lock_pending()
            .insert(task_id.to_string(), (run_id.to_string(), attempt, done_tx));
        let msg = CoordinatorMessage {
            kind: Some(coordinator_message::Kind::Task(Task {
                task_id: task_id.to_string(),
                run_id: run_id.to_string(),
                attempt,
                kind: Some(kind),
            })),
        };
        let sent = tokio::time::timeout(SEND_TIMEOUT, self.tx.send(Ok(msg))).await;
        if !matches!(sent, Ok(Ok(()))) {
            self.lock_pending().remove(task_id);
            return Err(CallError::Disconnected(self.host_id.clone()));
        }
        match tokio::time::timeout(timeout, done_rx).await {
            Ok(Ok(result)) => Ok(result.outcome.unwrap_or_else(|| {
                blocklab_daemon::fleet::task_error("unknown", "host sent an empty result", "")
            })),
            Ok(Err(_)) => Err(CallError::Disconnected(self.host_id.clone())),
            Err(_) => {
                self.lock_pending().remove(task_id);
                Err(CallError::Timeout {
                    host: self.host_id.clone(),
                    timeout,
                })
            }
        }
    }

    /// Sends a coordinator message that expects no answer (go, cancel).
    pub async fn notify(&self, kind: coordinator_message::Kind) -> Result<(), CallError> {
        if self.is_closed() {
            return Err(CallError::Disconnected(self.host_id.clone()));
        }
        let msg = Ok(CoordinatorMessage { kind: Some(kind) });
        match tokio::time::timeout(SEND_TIMEOUT, self.tx.send(msg)).await {
            Ok(Ok(())) => Ok(()),
            _ => Err(CallError::Disconnected(self.host_id.clone())),
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Fails every pending call and refuses new ones.
    fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.lock_pending().clear();
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn seen(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    pub fn since_seen(&self) -> Duration {
        self.last_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }

    fn deliver(&self, result: TaskResult) {
        if matches!(result.outcome, Some(task_result::Outcome::Error(_))) {
            TASK_ERRORS.inc();
        }
        let mut pending = self.lock_pending();
        let current = pending
            .get(&result.task_id)
            .is_some_and(|(run, attempt, _)| *run == result.run_id && *attempt == result.attempt);
        if current {
            if let Some((_, _, tx)) = pending.remove(&result.task_id) {
                let _ = tx.send(result);
            }
        } else if pending.contains_key(&result.task_id) {
            tracing::warn!(host_id = %self.host_id, task_id = %result.task_id, run_id = %result.run_id, attempt = result.attempt, "result from a stale attempt rejected");
        } else {
            tracing::warn!(host_id = %self.host_id, task_id = %result.task_id, run_id = %result.run_id, attempt = result.attempt, "result for an unknown or abandoned task ignored");
        }
    }
}

/// Heartbeats received from agents and workers.
pub static HEARTBEATS_RECEIVED: Counter = Counter::new();
/// Task results that carried an error outcome.
pub static TASK_ERRORS: Counter = Counter::new();

/// Progress a host reported for a run attempt.
#[derive(Debug, Clone)]
pub struct ProgressEvent {
    pub host_id: String,
    pub task_id: String,
    pub run_id: String,
    pub attempt: u32,
    pub report: Progress,
}

/// What a progress report says.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// The task entered a stage.
    Stage(Stage),
    /// Transactions per second over the last second of a measured window.
    Live(f64),
    /// How far a build task has got.
    Build(blocklab_spec::BuildProgress),
}

impl ProgressEvent {
    /// The domain form of a host's report; `None` (logged) for a stage this coordinator
    /// does not know.
    fn from_wire(host_id: &str, p: TaskProgress) -> Option<Self> {
        let report = if let Some(tps) = p.live_tps {
            Progress::Live(tps)
        } else if let Some(b) = p.build {
            match b.step.parse() {
                Ok(step) => Progress::Build(blocklab_spec::BuildProgress {
                    block_size_kb: b.block_size_kb,
                    wal_block_size_kb: b.wal_block_size_kb,
                    step,
                    percent: b.percent.filter(|v| v.is_finite()),
                    estimated: b.estimated,
                    eta_seconds: b.eta_seconds.map(u64::from),
                }),
                Err(e) => {
                    tracing::warn!(host_id, task_id = %p.task_id, error = %e, "build progress ignored");
                    return None;
                }
            }
        } else {
            match p.stage.parse::<Stage>() {
                Ok(stage) => Progress::Stage(stage),
                Err(e) => {
                    tracing::warn!(host_id, run_id = %p.run_id, error = %e, "progress report ignored");
                    return None;
                }
            }
        };
        Some(Self {
            host_id: host_id.to_string(),
            task_id: p.task_id,
            run_id: p.run_id,
            attempt: p.attempt,
            report,
        })
    }
}

/// Every attached host, shared by the Fleet service, the scheduler and Control.
pub struct Registry {
    sessions: Mutex<HashMap<String, Arc<HostSession>>>,
    next_generation: Mutex<u64>,
    pub liveness: Liveness,
    pub changed: tokio::sync::Notify,
    pub progress: tokio::sync::broadcast::Sender<ProgressEvent>,
    /// Turns true when the coordinator shuts down: every host stream ends.
    closing: tokio::sync::watch::Sender<bool>,
}

impl Registry {
    pub fn new(liveness: Liveness) -> Arc<Self> {
        Arc::new(Self {
            sessions: Mutex::new(HashMap::new()),
            next_generation: Mutex::new(0),
            liveness,
            changed: tokio::sync::Notify::new(),
            closing: tokio::sync::watch::channel(false).0,
            progress: tokio::sync::broadcast::channel(256).0,
        })
    }

    /// Ends every host's stream (at shutdown) so connections can close.
    pub fn close_all(&self) {
        let _ = self.closing.send(true);
        for s in self.lock().values() {
            s.close();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HostSession>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hosts that are attached and heartbeating.
    pub fn up(&self) -> Vec<Arc<HostSession>> {
        let timeout = self.liveness.heartbeat_timeout;
        let mut v: Vec<_> = self
            .lock()
            .values()
            .filter(|s| s.since_seen() <= timeout)
            .cloned()
            .collect();
        v.sort_by(|a, b| a.host_id.cmp(&b.host_id));
        v
    }

    pub fn get(&self, host_id: &str) -> Option<Arc<HostSession>> {
        let timeout = self.liveness.heartbeat_timeout;
        self.lock()
            .get(host_id)
            .filter(|s| s.since_seen() <= timeout)
            .cloned()
    }

    fn insert(&self, s: Arc<HostSession>) {
        if let Some(old) = self.lock().insert(s.host_id.clone(), s) {
            old.close();
        }
        self.changed.notify_waiters();
    }

    fn remove(&self, host_id: &str, generation: u64) {
        let mut map = self.lock();
        if map.get(host_id).is_some_and(|s| s.generation == generation)
            && let Some(s) = map.remove(host_id)
        {
            s.close();
        }
        drop(map);
        self.changed.notify_waiters();
    }

    /// Drops sessions that stopped heartbeating; their pending calls fail at once.
    pub fn reap(&self) {
        let timeout = self.liveness.heartbeat_timeout;
        let mut map = self.lock();
        let dead: Vec<String> = map
            .iter()
            .filter(|(_, s)| s.since_seen() > timeout)
            .map(|(k, _)| k.clone())
            .collect();
        for id in dead {
            tracing::warn!(host_id = %id, "host missed its heartbeat timeout; marked down");
            if let Some(s) = map.remove(&id) {
                s.close();
            }
        }
    }
}

/// The `Fleet` gRPC service.
pub struct FleetService {
    pub registry: Arc<Registry>,
    pub catalog: Catalog,
}

type OutStream = Pin<Box<dyn Stream<Item = Result<CoordinatorMessage, Status>> + Send>>;

#[tonic::async_trait]
impl Fleet for FleetService {
    type AttachStream = OutStream;

    async fn attach(
        &self,
        request: Request<Streaming<HostMessage>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let peer: Option<SocketAddr> = request.remote_addr();
        let mut inbound = request.into_inner();
        let first = inbound
            .next()
            .await
            .ok_or_else(|| Status::invalid_argument("stream closed before hello"))??;
        let Some(host_message::Kind::Hello(hello)) = first.kind else {
            return Err(Status::invalid_argument("the first message must be hello"));
        };
        let role = Role::try_from(hello.role).unwrap_or(Role::Unspecified);
        let role_name = match role {
            Role::Agent => "agent",
            Role::Worker => "worker",
            Role::Unspecified => {
                return Err(Status::invalid_argument(
                    "hello.role: must be agent or worker",
                ));
            }
        };
        if hello.host_id.is_empty() || hello.host_id.len() > 128 {
            return Err(Status::invalid_argument(
                "hello.host_id: must be 1 to 128 characters",
            ));
        }
        let address = if hello.address.is_empty() {
            peer.map(|p| p.ip().to_string()).unwrap_or_default()
        } else {
            hello.address.clone()
        };
        if address.parse::<std::net::IpAddr>().is_err() {
            return Err(Status::invalid_argument(format!(
                "hello.address: {address:?} is not an IP address"
            )));
        }
        let facts = if serde_json::from_str::<serde_json::Value>(&hello.facts_json).is_ok() {
            hello.facts_json.clone()
        } else {
            "{}".into()
        };
        self.catalog
            .upsert_host(&HostRecord {
                host_id: hello.host_id.clone(),
                role: role_name.into(),
                labels: hello.labels.clone(),
                address: address.clone(),
                version: hello.version.clone(),
                facts_json: facts,
                last_seen: String::new(),
            })
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;

        let (tx, rx) = mpsc::channel(64);
        let generation = {
            let mut g = self
                .registry
                .next_generation
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *g += 1;
            *g
        };
        let session = Arc::new(HostSession {
            host_id: hello.host_id.clone(),
            role,
            labels: hello.labels.clone(),
            address,
            generation,
            tx: tx.clone(),
            pending: Mutex::new(HashMap::new()),
            last_seen: Mutex::new(Instant::now()),
            busy: Arc::new(tokio::sync::Mutex::new(())),
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        let interval_ms = u32::try_from(self.registry.liveness.heartbeat_interval.as_millis())
            .unwrap_or(u32::MAX);
        let timeout_ms =
            u32::try_from(self.registry.liveness.heartbeat_timeout.as_millis()).unwrap_or(u32::MAX);
        let welcome = CoordinatorMessage {
            kind: Some(coordinator_message::Kind::Welcome(Welcome {
                heartbeat_interval_ms: interval_ms,
                heartbeat_timeout_ms: timeout_ms,
            })),
        };
        tx.send(Ok(welcome.clone()))
            .await
            .map_err(|_| Status::unavailable("host went away"))?;
        // The welcome again every interval: the host knows it is still heard.
        let keepalive_tx = tx.clone();
        let every = self.registry.liveness.heartbeat_interval;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                // A full stream means the host is not reading; the reaper decides about it.
                if let Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) =
                    keepalive_tx.try_send(Ok(welcome.clone()))
                {
                    return;
                }
            }
        });
        self.registry.insert(session.clone());
        tracing::info!(host_id = %session.host_id, role = role_name, address = %session.address, "host attached");

        let registry = self.registry.clone();
        let catalog = self.catalog.clone();
        tokio::spawn(async move {
            // Liveness stays in memory (`seen`); the catalog's `last_seen` is flushed for all
            // hosts at once by the coordinator's reaper, so no message here waits on a write.
            while let Some(msg) = inbound.next().await {
                let Ok(msg) = msg else { break };
                session.seen();
                match msg.kind {
                    Some(host_message::Kind::Heartbeat(_)) => {
                        HEARTBEATS_RECEIVED.inc();
                    }
                    Some(host_message::Kind::Progress(p)) => {
                        if let Some(event) = ProgressEvent::from_wire(&session.host_id, p) {
                            // No subscriber only means nobody is following progress now.
                            let _ = registry.progress.send(event);
                        }
                    }
                    Some(host_message::Kind::Result(r)) => session.deliver(r),
                    Some(host_message::Kind::Hello(_)) | None => {}
                }
            }
            tracing::warn!(host_id = %session.host_id, "host detached");
            let _ = catalog.touch_host(&session.host_id).await;
            registry.remove(&session.host_id, session.generation);
        });
        let mut closing = self.registry.closing.subscribe();
        let stream = futures::StreamExt::take_until(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            Box::pin(async move {
                let _ = closing.wait_for(|c| *c).await;
            }),
        );
        Ok(Response::new(Box::pin(stream)))
    }
}

impl From<blocklab_proto::RunLoadResult> for LoadResult {
    fn from(r: blocklab_proto::RunLoadResult) -> Self {
        LoadResult {
            transactions: r.transactions,
            failures: r.failures,
            retries: r.retries,
            skipped: r.skipped,
            late: r.late,
            tps_including_connections: r.tps_including_connections,
            tps_excluding_connections: r.tps_excluding_connections,
            latency_avg_ms: r.latency_avg_ms,
            latency_stddev_ms: r.latency_stddev_ms,
            latency_p50_ms: r.latency_p50_ms,
            latency_p90_ms: r.latency_p90_ms,
            latency_p99_ms: r.latency_p99_ms,
            latency_p999_ms: r.latency_p999_ms,
            latency_max_ms: r.latency_max_ms,
            connection_time_ms: r.connection_time_ms,
            measured_seconds: r.measured_seconds,
            client_cpu_user_s: r.client_cpu_user_s,
            client_cpu_system_s: r.client_cpu_system_s,
            schedule_lag_avg_ms: r.schedule_lag_avg_ms,
            schedule_lag_max_ms: r.schedule_lag_max_ms,
            statements: r
                .statements
                .into_iter()
                .map(|s| Statement {
                    script_index: s.script_index,
                    script: s.script,
                    position: s.position,
                    command: s.command,
                    count: s.count,
                    latency_sum_ms: s.latency_sum_ms,
                    failures: s.failures,
                })
                .collect(),
            samples: r
                .samples
                .into_iter()
                .map(|s| Sample {
                    second: s.second,
                    transactions: s.transactions,
                    latency_avg_ms: s.latency_avg_ms,
                    failures: s.failures,
                })
                .collect(),
            latency_histogram: r.latency_histogram,
            random_seed: r.random_seed,
            clients: r.clients,
            txn_types: r
                .txn_types
                .into_iter()
                .map(|t| TxnType {
                    name: t.name,
                    count: t.count,
                    rollbacks: t.rollbacks,
                    failures: t.failures,
                    latency_histogram: t.latency_histogram,
                    rows: t.rows,
                })
                .collect(),
        }
    }
}

impl From<blocklab_proto::WorkloadMetric> for Metric {
    fn from(m: blocklab_proto::WorkloadMetric) -> Self {
        Metric {
            name: m.name,
            value: m.value,
            unit: m.unit,
            higher_is_better: m.higher_is_better,
        }
    }
}
