//! The host side of the `Fleet` service: one long-lived session from an agent or a worker
//! to the coordinator. It dials out, says hello, heartbeats, runs each assigned task
//! through a [`TaskHandler`] and sends the outcome back, reconnecting with backoff.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use crate::v1::fleet_client::FleetClient;
use crate::v1::{
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
    fn on_go(&self, _go: crate::v1::Go) {}

    /// The coordinator cancelled a task: stop its work promptly.
    fn on_cancel(&self, _cancel: crate::v1::CancelTask) {}

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
    /// Reports that the task entered `stage` (e.g. `building`, `starting`).
    pub async fn stage(&self, stage: &str, message: &str) {
        let msg = HostMessage {
            kind: Some(host_message::Kind::Progress(TaskProgress {
                task_id: self.task_id.clone(),
                run_id: self.run_id.clone(),
                attempt: self.attempt,
                stage: stage.to_string(),
                message: message.to_string(),
            })),
        };
        // A closed session only means the coordinator will not see this report.
        let _ = self.tx.send(msg).await;
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
    pub coordinator: String,
    pub hello: Hello,
    /// Used until the coordinator's welcome says otherwise.
    pub heartbeat_interval: Duration,
    pub max_backoff: Duration,
}

/// Runs the session until `shutdown` resolves; then calls the handler's `on_shutdown`.
pub async fn run_session<H: TaskHandler>(
    config: SessionConfig,
    handler: Arc<H>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(200);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            outcome = one_connection(&config, handler.clone()) => {
                match outcome {
                    Ok(()) => {
                        tracing::warn!(coordinator = %config.coordinator, "session closed by coordinator");
                        backoff = Duration::from_millis(200);
                    }
                    Err(e) => tracing::warn!(coordinator = %config.coordinator, error = %e, "session failed"),
                }
            }
        }
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(config.max_backoff);
    }
    tracing::info!("shutting down session");
    handler.on_shutdown().await;
}

async fn one_connection<H: TaskHandler>(
    config: &SessionConfig,
    handler: Arc<H>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut client = FleetClient::connect(crate::endpoint_url(&config.coordinator)).await?;
    let (tx, rx) = mpsc::channel::<HostMessage>(256);
    tx.send(HostMessage {
        kind: Some(host_message::Kind::Hello(config.hello.clone())),
    })
    .await?;
    let mut inbound = client.attach(ReceiverStream::new(rx)).await?.into_inner();
    tracing::info!(coordinator = %config.coordinator, host_id = %config.hello.host_id, "attached");

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
                kind: Some(host_message::Kind::Heartbeat(Heartbeat { sequence: seq })),
            };
            if hb_tx.send(msg).await.is_err() {
                return;
            }
        }
    });

    let result = async {
        while let Some(msg) = inbound.next().await {
            let CoordinatorMessage { kind } = msg?;
            match kind {
                Some(coordinator_message::Kind::Welcome(w)) if w.heartbeat_interval_ms > 0 => {
                    let _ =
                        interval_tx.send(Duration::from_millis(u64::from(w.heartbeat_interval_ms)));
                }
                Some(coordinator_message::Kind::Welcome(_)) => {}
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
        if let task_result::Outcome::Error(e) = &outcome {
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

/// Shorthand for a task error outcome.
pub fn task_error(
    stage: impl Into<String>,
    reason: impl Into<String>,
    log_tail: impl Into<String>,
) -> task_result::Outcome {
    task_result::Outcome::Error(crate::v1::TaskError {
        stage: stage.into(),
        reason: reason.into(),
        log_tail: log_tail.into(),
    })
}
