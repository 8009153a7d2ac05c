//! The coordinator side of `Fleet`: attached hosts, their heartbeats, and request/response
//! calls over each host's stream (`HostSession::call`). Who a host is (its credential, bound
//! to its host id and role) is decided in `identity.rs`, at hello and again for every live
//! session each time the credentials are re-read (`Registry::enforce`).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blocklab_proto::v1::fleet_server::Fleet;
use blocklab_proto::v1::{
    CoordinatorMessage, HostMessage, Task, TaskResult, Welcome, coordinator_message, host_message,
    task, task_result,
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use blocklab_daemon::metrics::{Counter, Histogram};
use blocklab_spec::Stage;

use blocklab_daemon::security::TokenCheck;
use blocklab_spec::HostRole;

use crate::catalog::credentials::CredentialRecord;
use crate::catalog::{Catalog, HostRecord};
use crate::error::status;

pub(crate) mod convert;
/// The Fleet fuzz target's body (`fuzz/`), built only with the `fuzzing` feature.
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod hello;
pub mod limits;

pub mod identity;
pub mod tasks;

use identity::Credential;

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
    pub role: HostRole,
    pub labels: Vec<String>,
    pub address: String,
    /// The host facts it sent at hello (JSON object).
    pub facts_json: String,
    /// How the host proved who it is.
    pub credential: Credential,
    generation: u64,
    tx: mpsc::Sender<Result<CoordinatorMessage, Status>>,
    /// Set when the coordinator ends the session itself and could not say why on the stream.
    ended: tokio::sync::watch::Sender<bool>,
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
        self.since_seen_at(Instant::now())
    }

    fn since_seen_at(&self, now: Instant) -> Duration {
        now.saturating_duration_since(
            *self
                .last_seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Whether `task_id` is pending on this session for exactly this run and attempt: what a
    /// host may report progress for.
    fn expects(&self, task_id: &str, run_id: &str, attempt: u32) -> bool {
        self.lock_pending()
            .get(task_id)
            .is_some_and(|(run, a, _)| run == run_id && *a == attempt)
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
/// How late each heartbeat was taken in: its receipt here minus the host's send time (on
/// the hosts' clocks, so meaningful as far as those agree with the coordinator's).
pub static HEARTBEAT_LAG: Histogram = Histogram::new();
/// Progress reports refused: for a task, run or attempt not pending on the sending session.
pub static PROGRESS_REFUSED: Counter = Counter::new();
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

/// Every attached host, shared by the Fleet service, the scheduler and Control.
pub struct Registry {
    /// By host id, so `up()` lists them in order without sorting.
    sessions: Mutex<BTreeMap<String, Arc<HostSession>>>,
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
            sessions: Mutex::new(BTreeMap::new()),
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

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<HostSession>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hosts that are attached and heartbeating.
    /// The sessions heard from within the heartbeat timeout, by host id.
    pub fn up(&self) -> Vec<Arc<HostSession>> {
        let timeout = self.liveness.heartbeat_timeout;
        let now = Instant::now();
        self.lock()
            .values()
            .filter(|s| s.since_seen_at(now) <= timeout)
            .cloned()
            .collect()
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

    /// Ends one session (if it is still the host's current one): its calls fail at once, its
    /// stream ends with `reason`.
    pub fn end(&self, session: &Arc<HostSession>, reason: Status) {
        let mut map = self.lock();
        if map
            .get(&session.host_id)
            .is_some_and(|s| s.generation == session.generation)
        {
            map.remove(&session.host_id);
        }
        drop(map);
        session.close();
        if session.tx.try_send(Err(reason)).is_err() {
            let _ = session.ended.send(true);
        }
        self.changed.notify_waiters();
    }

    /// Ends every live session whose credential no longer allows it (a revoked credential, the
    /// shared token once a host is enrolled), by the rules of `identity.rs`.
    pub fn enforce(&self, credentials: &[CredentialRecord]) {
        let sessions: Vec<Arc<HostSession>> = self.lock().values().cloned().collect();
        for s in sessions {
            if let Err(e) = identity::authorize(&s.credential, &s.host_id, s.role, credentials) {
                tracing::warn!(host_id = %s.host_id, reason = %e, "ending the session of a host whose credential no longer admits it");
                self.end(&s, status(&e));
            }
        }
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

/// Re-reads the credentials every `every` and ends the sessions they no longer admit (a
/// revocation reaches a live session within one interval).
pub async fn enforce_credentials(registry: Arc<Registry>, catalog: Catalog, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        match catalog.host_credentials().await {
            Ok(credentials) => registry.enforce(&credentials),
            Err(e) => tracing::warn!(error = %e, "cannot re-read host credentials"),
        }
    }
}

/// The `Fleet` gRPC service.
pub struct FleetService {
    pub registry: Arc<Registry>,
    pub catalog: Catalog,
    /// The shared fleet join token (`--fleet-token-file`); open when empty.
    pub shared: TokenCheck,
    /// Hosts attach only to the leader (`leader.rs`).
    pub role: tokio::sync::watch::Receiver<crate::leader::Role>,
}

type OutStream = Pin<Box<dyn Stream<Item = Result<CoordinatorMessage, Status>> + Send>>;

impl FleetService {
    /// The tonic service, with Fleet's message limit.
    pub fn into_server(self) -> blocklab_proto::v1::fleet_server::FleetServer<Self> {
        blocklab_proto::v1::fleet_server::FleetServer::new(self)
            .max_decoding_message_size(blocklab_daemon::security::FLEET_MAX_MESSAGE_BYTES)
    }
}

#[tonic::async_trait]
impl Fleet for FleetService {
    type AttachStream = OutStream;

    async fn attach(
        &self,
        request: Request<Streaming<HostMessage>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let peer: Option<SocketAddr> = request.remote_addr();
        if let Some(refusal) = self.role.borrow().refusal() {
            return Err(Status::unavailable(refusal));
        }
        let credentials = self
            .catalog
            .host_credentials()
            .await
            .map_err(Status::from)?;
        let authorization = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes().to_vec());
        let credential = identity::identify(&self.shared, &credentials, authorization.as_deref())
            .map_err(|e| {
            tracing::warn!(peer = ?peer, reason = %e, "host refused");
            status(&e)
        })?;
        let mut inbound = request.into_inner();
        let first = inbound
            .next()
            .await
            .ok_or_else(|| Status::invalid_argument("stream closed before hello"))??;
        let Some(host_message::Kind::Hello(hello)) = first.kind else {
            return Err(Status::invalid_argument("the first message must be hello"));
        };
        let host_role = hello::role_and_id(&hello)?;
        let role_name = host_role.as_str();
        identity::authorize(&credential, &hello.host_id, host_role, &credentials).map_err(|e| {
            tracing::warn!(peer = ?peer, host_id = %hello.host_id, role = role_name, reason = %e, "host refused");
            status(&e)
        })?;
        let hello::Checked {
            address,
            facts_json: facts,
            ..
        } = hello::check(&hello, host_role, peer)?;
        let (labels, address) = identity::bound(&credential, &credentials, &hello, address, peer);
        self.catalog
            .upsert_host(&HostRecord {
                host_id: hello.host_id.clone(),
                role: host_role,
                labels: labels.clone(),
                address: address.clone(),
                version: hello.version.clone(),
                facts_json: facts.clone(),
                last_seen: String::new(),
            })
            .await
            .map_err(Status::from)?;

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
            role: host_role,
            labels,
            address,
            facts_json: facts,
            credential,
            generation,
            tx: tx.clone(),
            ended: tokio::sync::watch::channel(false).0,
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
        let session_ended = session.ended.subscribe();
        self.registry.insert(session.clone());
        let enrolled = matches!(session.credential, Credential::Enrolled { .. });
        if matches!(session.credential, Credential::Shared) {
            tracing::warn!(host_id = %session.host_id, "host attached with the shared fleet token: enroll hosts (blocklab-coordinator hosts add) to bind each to its id and role");
        }
        tracing::info!(host_id = %session.host_id, role = role_name, address = %session.address, enrolled, "host attached");

        let registry = self.registry.clone();
        let catalog = self.catalog.clone();
        tokio::spawn(async move {
            // Liveness stays in memory (`seen`); the catalog's `last_seen` is flushed for all
            // hosts at once by a coordinator task, so no message here waits on a write.
            while let Some(msg) = inbound.next().await {
                let Ok(msg) = msg else { break };
                if session.is_closed() {
                    // Ended by the coordinator (revoked, replaced): nothing more is heard.
                    break;
                }
                session.seen();
                match msg.kind {
                    Some(host_message::Kind::Heartbeat(hb)) => {
                        HEARTBEATS_RECEIVED.inc();
                        if hb.sent_unix_ms > 0 {
                            let now = blocklab_daemon::fleet::unix_ms();
                            HEARTBEAT_LAG.observe_ms(now.saturating_sub(hb.sent_unix_ms));
                        }
                    }
                    Some(host_message::Kind::Progress(p)) => {
                        // Only for a task this session was given: nobody else's run, and no
                        // invented ids for the live map.
                        if !session.expects(&p.task_id, &p.run_id, p.attempt) {
                            PROGRESS_REFUSED.inc();
                            tracing::debug!(host_id = %session.host_id, task_id = %p.task_id, run_id = %p.run_id, attempt = p.attempt, "progress for a task not pending on this session ignored");
                            continue;
                        }
                        if let Some(event) = ProgressEvent::from_wire(&session.host_id, p) {
                            // No subscriber only means nobody is following progress now.
                            let _ = registry.progress.send(event);
                        }
                    }
                    Some(host_message::Kind::Result(r)) => session.deliver(r),
                    Some(host_message::Kind::Hello(_)) => {
                        tracing::warn!(host_id = %session.host_id, "a second hello on one session; ending it");
                        registry.end(
                            &session,
                            Status::invalid_argument(
                                "hello: a session says hello once, as its first message",
                            ),
                        );
                        break;
                    }
                    None => {}
                }
            }
            tracing::warn!(host_id = %session.host_id, "host detached");
            let _ = catalog.touch_host(&session.host_id).await;
            registry.remove(&session.host_id, session.generation);
        });
        let mut closing = self.registry.closing.subscribe();
        let mut ended = session_ended;
        let stream = futures::StreamExt::take_until(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            Box::pin(async move {
                // A session dropped without being ended (its host went away) leaves the
                // stream to close on its own: only `ended` set to true cuts it.
                let ended = async {
                    if ended.wait_for(|e| *e).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    _ = closing.wait_for(|c| *c) => {}
                    _ = ended => {}
                }
            }),
        );
        Ok(Response::new(Box::pin(stream)))
    }
}
