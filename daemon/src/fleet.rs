//! The host side of the `Fleet` service: one long-lived session from an agent or a worker
//! to the coordinator. It dials out, says hello, heartbeats, runs each assigned task
//! through a [`TaskHandler`] and sends the outcome back, reconnecting with backoff.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blocklab_spec::Stage;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use blocklab_proto::v1::fleet_client::FleetClient;
use blocklab_proto::v1::{
    CoordinatorMessage, Heartbeat, Hello, HostMessage, Task, TaskProgress, TaskResult,
    coordinator_message, host_message, task_result,
};

/// What a daemon does with the tasks the coordinator assigns to it.
pub trait TaskHandler: Send + Sync + 'static {
    /// Runs one task to its outcome. Errors are reported as `task_result::Outcome::Error`.
    fn handle(
        &self,
        task: Task,
        progress: ProgressSink,
    ) -> impl Future<Output = task_result::Outcome> + Send;

    /// The coordinator's go for a task assigned with `wait_for_go` (distributed load).
    fn on_go(&self, _go: blocklab_proto::v1::Go) {}

    /// The coordinator cancelled a task: stop its work promptly.
    fn on_cancel(&self, _cancel: blocklab_proto::v1::CancelTask) {}

    /// Called once when the coordinator has been unreachable for longer than the heartbeat
    /// timeout: the coordinator has declared this host's work lost, so stop it (fencing).
    fn on_fence(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Called once when the daemon shuts down: stop servers, abort load.
    fn on_shutdown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Sends progress reports for one task.
#[derive(Clone)]
pub struct ProgressSink {
    tx: mpsc::Sender<HostMessage>,
    task_id: String,
    run_id: String,
    attempt: u32,
}

impl ProgressSink {
    /// Reports that the task entered `stage`.
    pub async fn stage(&self, stage: Stage, message: &str) {
        self.send(stage, message, None).await;
    }

    /// Reports the throughput of the last second of a measured window.
    pub async fn live(&self, live_tps: f64) {
        self.send(Stage::Measuring, "", Some(live_tps)).await;
    }

    /// Reports how far a build has got (stage `building`).
    pub async fn build(&self, progress: &blocklab_spec::BuildProgress) {
        let build = blocklab_proto::v1::BuildProgress {
            block_size_kb: progress.block_size_kb,
            wal_block_size_kb: progress.wal_block_size_kb,
            step: progress.step.as_str().to_string(),
            percent: progress.percent,
            estimated: progress.estimated,
            eta_seconds: progress
                .eta_seconds
                .map(|s| u32::try_from(s).unwrap_or(u32::MAX)),
        };
        self.send_report(Stage::Building, "", None, Some(build))
            .await;
    }

    async fn send(&self, stage: Stage, message: &str, live_tps: Option<f64>) {
        self.send_report(stage, message, live_tps, None).await;
    }

    async fn send_report(
        &self,
        stage: Stage,
        message: &str,
        live_tps: Option<f64>,
        build: Option<blocklab_proto::v1::BuildProgress>,
    ) {
        let msg = HostMessage {
            kind: Some(host_message::Kind::Progress(TaskProgress {
                task_id: self.task_id.clone(),
                run_id: self.run_id.clone(),
                attempt: self.attempt,
                stage: stage.as_str().to_string(),
                message: message.to_string(),
                live_tps,
                build,
            })),
        };
        // A closed session only means the coordinator will not see this report.
        let _ = self.tx.send(msg).await;
    }

    /// A sink whose reports arrive on the returned receiver, for running a handler outside
    /// a session and looking at what it reported.
    pub fn channel(capacity: usize) -> (Self, mpsc::Receiver<HostMessage>) {
        let (tx, rx) = mpsc::channel(capacity);
        let sink = Self {
            tx,
            task_id: String::new(),
            run_id: String::new(),
            attempt: 0,
        };
        (sink, rx)
    }

    /// A sink that goes nowhere, for running handlers outside a session (tests, standalone).
    pub fn detached() -> Self {
        let (tx, _rx) = mpsc::channel(1);
        Self {
            tx,
            task_id: String::new(),
            run_id: String::new(),
            attempt: 0,
        }
    }
}

/// How the session dials and identifies itself.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The coordinator's address, or several separated by commas (coordinators sharing a
    /// catalog): the session tries them in turn until the leader accepts it.
    pub coordinator: String,
    pub hello: Hello,
    /// Used until the coordinator's welcome says otherwise.
    pub heartbeat_interval: Duration,
    pub max_backoff: Duration,
    /// Fence (stop all work) after hearing nothing from the coordinator this long; the
    /// coordinator's welcome overrides it with its heartbeat timeout.
    pub fence_after: Duration,
    /// The CA to verify the coordinator with; `None` = plain http (loopback, `--insecure`).
    pub tls: Option<crate::security::ClientTls>,
    /// The fleet join token sent as `authorization: Bearer`; `Debug` redacts it.
    pub token: Option<crate::security::Secret>,
}

impl SessionConfig {
    /// Refuses a configuration that would send the host token over plain http to a
    /// coordinator off loopback (as the CLI refuses to send an API token), naming the address.
    pub fn check(&self) -> Result<(), String> {
        if self.token.is_none() || self.tls.is_some() {
            return Ok(());
        }
        match coordinator_addresses(&self.coordinator)
            .into_iter()
            .find(|a| !crate::security::is_loopback_target(a))
        {
            Some(addr) => Err(format!(
                "refusing to send the host token to {addr} over plain http: it is not a \
                 loopback address; give the coordinator's CA with --ca-cert FILE to connect with \
                 https, or run without a token on a loopback lab"
            )),
            None => Ok(()),
        }
    }
}

/// When the coordinator was last heard from, and how long silence may last.
struct Contact {
    last: std::sync::Mutex<Instant>,
    fence_after_ms: std::sync::atomic::AtomicU64,
}

impl Contact {
    fn heard(&self) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }
    fn silence(&self) -> Duration {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }
    fn limit(&self) -> Duration {
        Duration::from_millis(
            self.fence_after_ms
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }
}

/// Runs the session until `shutdown` resolves; then calls the handler's `on_shutdown`.
pub async fn run_session<H: TaskHandler>(
    config: SessionConfig,
    handler: Arc<H>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let contact = Arc::new(Contact {
        last: std::sync::Mutex::new(Instant::now()),
        fence_after_ms: std::sync::atomic::AtomicU64::new(
            u64::try_from(config.fence_after.as_millis()).unwrap_or(u64::MAX),
        ),
    });
    let watchdog = tokio::spawn(fence_watchdog(contact.clone(), handler.clone()));
    let addresses = coordinator_addresses(&config.coordinator);
    let mut backoff = Duration::from_millis(200);
    for turn in 1usize.. {
        let coordinator = addresses[(turn - 1) % addresses.len()].as_str();
        tokio::select! {
            _ = &mut shutdown => break,
            outcome = one_connection(&config, coordinator, handler.clone(), contact.clone()) => {
                match outcome {
                    Ok(()) => {
                        tracing::warn!(coordinator, "session closed by coordinator");
                        backoff = Duration::from_millis(200);
                    }
                    Err(e) => tracing::warn!(coordinator, error = %e, "session failed"),
                }
            }
        }
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep(backoff) => {}
        }
        // The backoff grows once per round over every address.
        if turn % addresses.len() == 0 {
            backoff = (backoff * 2).min(config.max_backoff);
        }
    }
    tracing::info!("shutting down session");
    watchdog.abort();
    handler.on_shutdown().await;
}

/// Fences the host once per outage: when the coordinator has been silent past the limit.
async fn fence_watchdog<H: TaskHandler>(contact: Arc<Contact>, handler: Arc<H>) {
    let mut fenced = false;
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let silent = contact.silence() > contact.limit();
        if silent && !fenced {
            tracing::warn!(
                silence_ms = contact.silence().as_millis() as u64,
                "coordinator unreachable past the heartbeat timeout; fencing"
            );
            handler.on_fence().await;
            fenced = true;
        } else if !silent {
            fenced = false;
        }
    }
}

/// The addresses of a `--coordinator` value: one, or several separated by commas.
pub fn coordinator_addresses(value: &str) -> Vec<String> {
    let list: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect();
    if list.is_empty() {
        vec![value.to_string()]
    } else {
        list
    }
}

async fn one_connection<H: TaskHandler>(
    config: &SessionConfig,
    coordinator: &str,
    handler: Arc<H>,
    contact: Arc<Contact>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let channel = crate::security::connect_channel(coordinator, config.tls.as_ref()).await?;
    let mut client =
        FleetClient::with_interceptor(channel, crate::security::Bearer::new(config.token.as_ref()))
            .max_decoding_message_size(crate::security::CLIENT_MAX_MESSAGE_BYTES);
    let (tx, rx) = mpsc::channel::<HostMessage>(256);
    tx.send(HostMessage {
        kind: Some(host_message::Kind::Hello(config.hello.clone())),
    })
    .await?;
    let mut inbound = client.attach(ReceiverStream::new(rx)).await?.into_inner();
    tracing::info!(coordinator, host_id = %config.hello.host_id, "attached");

    let hb_tx = tx.clone();
    let (interval_tx, mut interval_rx) = tokio::sync::watch::channel(config.heartbeat_interval);
    let heartbeat = tokio::spawn(async move {
        let mut seq = 0u64;
        loop {
            let wait = *interval_rx.borrow_and_update();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                changed = interval_rx.changed() => { if changed.is_err() { return; } continue; }
            }
            seq += 1;
            let msg = HostMessage {
                kind: Some(host_message::Kind::Heartbeat(Heartbeat {
                    sequence: seq,
                    sent_unix_ms: unix_ms(),
                })),
            };
            if hb_tx.send(msg).await.is_err() {
                return;
            }
            crate::metrics::HEARTBEATS_SENT.inc();
        }
    });

    let result = async {
        contact.heard();
        loop {
            let limit = contact.limit();
            let msg = match tokio::time::timeout(limit, inbound.next()).await {
                Ok(Some(msg)) => msg,
                Ok(None) => break,
                Err(_) => return Err(format!("no word from the coordinator for {limit:?}").into()),
            };
            let CoordinatorMessage { kind } = msg?;
            contact.heard();
            match kind {
                Some(coordinator_message::Kind::Welcome(w)) => {
                    if w.heartbeat_interval_ms > 0 {
                        let every = Duration::from_millis(u64::from(w.heartbeat_interval_ms));
                        interval_tx.send_if_modified(|v| std::mem::replace(v, every) != every);
                    }
                    if w.heartbeat_timeout_ms > 0 {
                        contact.fence_after_ms.store(
                            u64::from(w.heartbeat_timeout_ms),
                            std::sync::atomic::Ordering::Relaxed,
                        );
                    }
                }
                Some(coordinator_message::Kind::Task(task)) => {
                    spawn_task(task, handler.clone(), tx.clone());
                }
                Some(coordinator_message::Kind::Cancel(c)) => {
                    tracing::info!(task_id = %c.task_id, run_id = %c.run_id, "cancel requested");
                    handler.on_cancel(c);
                }
                Some(coordinator_message::Kind::Go(g)) => {
                    tracing::debug!(task_id = %g.task_id, run_id = %g.run_id, "go");
                    handler.on_go(g);
                }
                None => {}
            }
        }
        Ok(())
    }
    .await;
    heartbeat.abort();
    result
}

fn spawn_task<H: TaskHandler>(task: Task, handler: Arc<H>, tx: mpsc::Sender<HostMessage>) {
    tokio::spawn(async move {
        let (task_id, run_id, attempt) = (task.task_id.clone(), task.run_id.clone(), task.attempt);
        tracing::info!(task_id = %task_id, run_id = %run_id, attempt, "task started");
        let sink = ProgressSink {
            tx: tx.clone(),
            task_id: task_id.clone(),
            run_id: run_id.clone(),
            attempt,
        };
        let outcome = handler.handle(task, sink).await;
        crate::metrics::TASKS_RUN.inc();
        if let task_result::Outcome::Error(e) = &outcome {
            crate::metrics::TASKS_FAILED.inc();
            tracing::warn!(task_id = %task_id, stage = %e.stage, reason = %e.reason, "task failed");
        } else {
            tracing::info!(task_id = %task_id, "task finished");
        }
        let msg = HostMessage {
            kind: Some(host_message::Kind::Result(TaskResult {
                task_id,
                run_id,
                attempt,
                outcome: Some(outcome),
            })),
        };
        let _ = tx.send(msg).await;
    });
}

/// Now in Unix milliseconds (0 if the clock is before 1970).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Shorthand for a task error outcome.
pub fn task_error(
    stage: impl Into<String>,
    reason: impl Into<String>,
    log_tail: impl Into<String>,
) -> task_result::Outcome {
    task_result::Outcome::Error(blocklab_proto::v1::TaskError {
        stage: stage.into(),
        reason: reason.into(),
        log_tail: log_tail.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::{SessionConfig, coordinator_addresses};
    use crate::security::Secret;
    use std::time::Duration;

    fn session(coordinator: &str, token: bool) -> SessionConfig {
        SessionConfig {
            coordinator: coordinator.into(),
            hello: Default::default(),
            heartbeat_interval: Duration::from_secs(2),
            max_backoff: Duration::from_secs(10),
            fence_after: Duration::from_secs(10),
            tls: None,
            token: token.then(|| Secret::new("host-token-0123456789abcdef", "t").expect("token")),
        }
    }

    #[test]
    fn a_host_token_goes_over_plain_http_only_to_loopback() {
        assert_eq!(session("127.0.0.1:7400", true).check(), Ok(()));
        assert_eq!(session("localhost:7400,[::1]:7400", true).check(), Ok(()));
        assert_eq!(session("10.200.0.1:7400", false).check(), Ok(()));
        let e = session("127.0.0.1:7400, 10.200.0.1:7400", true)
            .check()
            .expect_err("off loopback");
        assert!(
            e.starts_with("refusing to send the host token to 10.200.0.1:7400 over plain http"),
            "{e}"
        );
        assert!(session("coordinator.lab:7400", true).check().is_err());
    }

    #[test]
    fn a_coordinator_value_is_one_address_or_a_comma_separated_list() {
        assert_eq!(coordinator_addresses("127.0.0.1:7400"), ["127.0.0.1:7400"]);
        assert_eq!(
            coordinator_addresses("https://a:7400, b:7400,,"),
            ["https://a:7400", "b:7400"]
        );
        // Nothing to split stays as given, so the dial names it in its error.
        assert_eq!(coordinator_addresses(""), [""]);
    }
}
