//! The worker daemon: a fleet session whose tasks are data loads and load runs.

use std::collections::HashSet;
use std::future::Future;
use std::net::{ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blocklab_daemon::fleet::{ProgressSink, SessionConfig, TaskHandler, run_session, task_error};
use blocklab_proto::{CancelTask, Go, Hello, Role, Task, task, task_result};
use tokio::sync::oneshot;

use blocklab_spec::Stage;

use crate::engine::control::LoadControl;
use crate::engine::load::run_load_controlled;
use crate::error::WorkerError;
use crate::facts;

pub mod convert;
mod workload;

pub use convert::Workload;
pub use workload::{init_data, init_task, run_workload, workload_step};

/// How the daemon dials and identifies itself.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub coordinator: String,
    pub host_id: String,
    pub labels: Vec<String>,
    /// The address this host's connections to PostgreSQL come from.
    pub advertise_addr: String,
    pub heartbeat_interval: Duration,
    /// CA to verify the coordinator's certificate (`--ca-cert`); `None` = plain http.
    pub tls: Option<blocklab_daemon::security::ClientTls>,
    /// Fleet join token (`--token-file` / `BLOCKLAB_FLEET_TOKEN`); `Debug` redacts it.
    pub token: Option<blocklab_daemon::security::Secret>,
}

impl WorkerConfig {
    /// Host id from the hostname; advertised address = the local address used to reach
    /// the coordinator.
    pub fn default_for(coordinator: &str) -> Self {
        WorkerConfig {
            coordinator: coordinator.to_string(),
            host_id: facts::hostname(),
            labels: Vec::new(),
            advertise_addr: local_addr_towards(coordinator)
                .unwrap_or_else(|| "127.0.0.1".to_string()),
            heartbeat_interval: Duration::from_secs(5),
            tls: None,
            token: None,
        }
    }
}

/// The local IP the kernel would use to reach `url`'s host (no packet is sent).
fn local_addr_towards(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let remote = with_port.to_socket_addrs().ok()?.next()?;
    let bind = if remote.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let sock = UdpSocket::bind(bind).ok()?;
    sock.connect(remote).ok()?;
    Some(sock.local_addr().ok()?.ip().to_string())
}

/// Runs the worker until `shutdown` resolves.
pub async fn serve(
    config: WorkerConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), WorkerError> {
    serve_boxed(config, Box::pin(shutdown)).await
}

async fn serve_boxed(
    config: WorkerConfig,
    shutdown: blocklab_daemon::Shutdown<'_>,
) -> Result<(), WorkerError> {
    if config.coordinator.trim().is_empty() {
        return Err(WorkerError::InvalidArgument(
            "coordinator address is empty".into(),
        ));
    }
    if config.host_id.trim().is_empty() {
        return Err(WorkerError::InvalidArgument("host id is empty".into()));
    }
    let hello = Hello {
        host_id: config.host_id.clone(),
        role: Role::Worker as i32,
        labels: config.labels.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        address: config.advertise_addr.clone(),
        facts_json: facts::facts_json(),
    };
    tracing::info!(coordinator = %config.coordinator, host_id = %config.host_id, address = %config.advertise_addr, "worker starting");
    let session = SessionConfig {
        coordinator: config.coordinator,
        hello,
        heartbeat_interval: config.heartbeat_interval,
        max_backoff: Duration::from_secs(10),
        fence_after: Duration::from_secs(10),
        tls: config.tls,
        token: config.token,
    };
    session.check().map_err(WorkerError::InvalidArgument)?;
    run_session(session, Arc::new(WorkerHandler::default()), shutdown).await;
    Ok(())
}

/// The load task in progress: how to stop it and how to start it on the go.
struct Running {
    task_id: String,
    run_id: String,
    ctl: LoadControl,
    go: Option<oneshot::Sender<()>>,
}

/// Runs one task at a time: a worker's measurements must not overlap.
#[derive(Default)]
pub struct WorkerHandler {
    busy: tokio::sync::Mutex<()>,
    running: Mutex<Option<Running>>,
    /// Tasks cancelled before they started, and gos that arrived before their task.
    cancelled: Mutex<HashSet<String>>,
    early_go: Mutex<HashSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl WorkerHandler {
    async fn run_load(
        &self,
        task_id: &str,
        run_id: &str,
        t: &blocklab_proto::RunLoadTask,
        progress: &ProgressSink,
    ) -> task_result::Outcome {
        crate::metrics::LOADS_RUN.inc();
        let measuring = Stage::Measuring.as_str();
        let Some(kind) = Workload::of(t.workload.as_ref()) else {
            let other = t.workload.as_ref().map_or("", |w| w.kind.as_str());
            return task_error(
                measuring,
                format!("workload kind {other:?} is unknown; allowed: pgbench, tpcc, as3ap"),
                "",
            );
        };
        let opts = match kind {
            Workload::Pgbench => match convert::load_options(t) {
                Ok(o) => Some(o),
                Err(e) => return task_error(measuring, e.to_string(), ""),
            },
            Workload::Tpcc | Workload::As3ap => None,
        };
        if lock(&self.cancelled).remove(task_id) {
            return task_error(measuring, "cancelled", "");
        }
        let ctl = LoadControl::default();
        let (go_tx, go_rx) = oneshot::channel();
        let go = if t.wait_for_go {
            if lock(&self.early_go).remove(task_id) {
                let _ = go_tx.send(());
                Some(go_rx)
            } else {
                *lock(&self.running) = Some(Running {
                    task_id: task_id.into(),
                    run_id: run_id.into(),
                    ctl: ctl.clone(),
                    go: Some(go_tx),
                });
                Some(go_rx)
            }
        } else {
            None
        };
        if lock(&self.running).is_none() {
            *lock(&self.running) = Some(Running {
                task_id: task_id.into(),
                run_id: run_id.into(),
                ctl: ctl.clone(),
                go: None,
            });
        }
        let res = match (&opts, kind) {
            (Some(opts), _) => run_load_controlled(opts, progress, &ctl, go)
                .await
                .and_then(|r| {
                    if r.measured.transactions == 0 {
                        Err(WorkerError::Run(format!(
                            "no transaction succeeded ({} failed): {}",
                            r.measured.failures,
                            r.first_error.as_deref().unwrap_or("no error recorded")
                        )))
                    } else {
                        Ok(convert::load_result(&r))
                    }
                }),
            (None, kind) => run_workload(kind, t, progress, &ctl, go).await,
        };
        *lock(&self.running) = None;
        if ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return task_error(measuring, "cancelled", "");
        }
        match res {
            Ok(r) => task_result::Outcome::RunLoad(r),
            Err(e) => task_error(measuring, e.to_string(), ""),
        }
    }

    /// A step of a TPC-C-like or AS3AP-like workload outside the measured window; it can be
    /// cancelled like a load.
    async fn workload_step(
        &self,
        task_id: &str,
        run_id: &str,
        t: &blocklab_proto::WorkloadStepTask,
        progress: &ProgressSink,
    ) -> task_result::Outcome {
        let kind = Workload::of(t.workload.as_ref());
        let step = convert::workload_step(t);
        let stage = convert::step_stage(kind, step.as_ref().ok().copied());
        if lock(&self.cancelled).remove(task_id) {
            return task_error(stage.as_str(), "cancelled", "");
        }
        let ctl = LoadControl::default();
        *lock(&self.running) = Some(Running {
            task_id: task_id.into(),
            run_id: run_id.into(),
            ctl: ctl.clone(),
            go: None,
        });
        let name = t.workload.as_ref().map_or("", |w| w.kind.as_str());
        let res = match step {
            Ok(step) => {
                progress.stage(stage, &format!("{name} {step}")).await;
                workload::run_step(kind.unwrap_or(Workload::Pgbench), step, t, progress, &ctl).await
            }
            Err(e) => Err(e),
        };
        *lock(&self.running) = None;
        if ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return task_error(stage.as_str(), "cancelled", "");
        }
        match res {
            Ok(r) => task_result::Outcome::WorkloadStep(r),
            Err(e) => task_error(stage.as_str(), e.to_string(), ""),
        }
    }
}

impl TaskHandler for WorkerHandler {
    async fn handle(&self, task: Task, progress: ProgressSink) -> task_result::Outcome {
        let _one_at_a_time = self.busy.lock().await;
        match task.kind {
            Some(task::Kind::InitData(t)) => match init_task(&t, &progress).await {
                Ok(r) => task_result::Outcome::InitData(r),
                Err(e) => task_error(Stage::LoadingData.as_str(), e.to_string(), ""),
            },
            Some(task::Kind::RunLoad(t)) => {
                self.run_load(&task.task_id, &task.run_id, &t, &progress)
                    .await
            }
            Some(task::Kind::WorkloadStep(t)) => {
                self.workload_step(&task.task_id, &task.run_id, &t, &progress)
                    .await
            }
            _ => task_error(
                "worker",
                "a worker only runs init-data, workload-step and run-load tasks",
                "",
            ),
        }
    }

    fn on_go(&self, go: Go) {
        let mut running = lock(&self.running);
        match running.as_mut() {
            Some(r) if r.task_id == go.task_id => {
                if let Some(tx) = r.go.take() {
                    tracing::info!(task_id = %go.task_id, run_id = %go.run_id, "go received");
                    let _ = tx.send(());
                }
            }
            _ => {
                tracing::debug!(task_id = %go.task_id, "go before its task; kept");
                lock(&self.early_go).insert(go.task_id);
            }
        }
    }

    fn on_cancel(&self, cancel: CancelTask) {
        let running = lock(&self.running);
        match running.as_ref() {
            // A cancel names the task, or (task id empty) every task of the run.
            Some(r)
                if r.task_id == cancel.task_id
                    || (cancel.task_id.is_empty() && r.run_id == cancel.run_id) =>
            {
                tracing::info!(task_id = %cancel.task_id, "stopping the load");
                r.ctl.stop();
            }
            _ => {
                lock(&self.cancelled).insert(cancel.task_id);
            }
        }
    }

    async fn on_fence(&self) {
        if let Some(r) = lock(&self.running).as_ref() {
            tracing::warn!(task_id = %r.task_id, "fenced: stopping the load");
            r.ctl.stop();
        }
    }

    async fn on_shutdown(&self) {
        if let Some(r) = lock(&self.running).as_ref() {
            r.ctl.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_advertises_loopback_for_local_coordinator() {
        let c = WorkerConfig::default_for("http://127.0.0.1:7400");
        assert_eq!(c.advertise_addr, "127.0.0.1");
        assert!(!c.host_id.is_empty());
    }

    #[tokio::test]
    async fn unsupported_task_is_an_error() {
        let h = WorkerHandler::default();
        let out = h.handle(Task::default(), ProgressSink::detached()).await;
        assert!(matches!(out, task_result::Outcome::Error(e) if e.stage == "worker"));
    }
}
