//! `serve` against a minimal in-process Fleet server: hello with facts, heartbeats at the
//! welcome's interval, tasks answered with results that echo run_id/attempt, clean shutdown.

use std::time::Duration;

use blocklab_agent::AgentConfig;
use blocklab_proto::fleet_server::{Fleet, FleetServer};
use blocklab_proto::{
    BuildOptions, BuildTask, CoordinatorMessage, HostMessage, SourceSpec, StopServerTask, Task,
    Welcome, coordinator_message, host_message, task, task_result,
};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status, Streaming};

struct FakeCoordinator {
    seen: mpsc::Sender<HostMessage>,
}

fn task(id: &str, run_id: &str, kind: task::Kind) -> CoordinatorMessage {
    CoordinatorMessage {
        kind: Some(coordinator_message::Kind::Task(Task {
            task_id: id.into(),
            run_id: run_id.into(),
            attempt: 3,
            kind: Some(kind),
        })),
    }
}

#[tonic::async_trait]
impl Fleet for FakeCoordinator {
    type AttachStream = ReceiverStream<Result<CoordinatorMessage, Status>>;

    async fn attach(
        &self,
        request: Request<Streaming<HostMessage>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(16);
        let seen = self.seen.clone();
        tokio::spawn(async move {
            let _ = tx
                .send(Ok(CoordinatorMessage {
                    kind: Some(coordinator_message::Kind::Welcome(Welcome {
                        heartbeat_interval_ms: 100,
                        ..Default::default()
                    })),
                }))
                .await;
            let bad = BuildOptions {
                source: Some(SourceSpec {
                    tarball: "/nonexistent/postgresql-15.18.tar.bz2".into(),
                    ..Default::default()
                }),
                block_size_kb: 8,
                wal_block_size_kb: 8,
                configure_flags: vec!["--prefix=/etc".into()],
                ..Default::default()
            };
            let _ = tx
                .send(Ok(task(
                    "t1",
                    "",
                    task::Kind::Build(BuildTask { options: Some(bad) }),
                )))
                .await;
            let _ = tx
                .send(Ok(task(
                    "t2",
                    "never-started",
                    task::Kind::StopServer(StopServerTask {}),
                )))
                .await;
            while let Some(Ok(msg)) = inbound.next().await {
                if seen.send(msg).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

#[tokio::test]
async fn serve_says_hello_heartbeats_and_answers_tasks() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (seen_tx, mut seen) = mpsc::channel(64);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(FleetServer::new(FakeCoordinator { seen: seen_tx }))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );

    let work = tempfile::tempdir().unwrap();
    let mut config = AgentConfig::default_for(&format!("http://{addr}"));
    config.host_id = "agent-test".into();
    config.labels = vec!["nvme".into()];
    config.work_dir = work.path().join("agent");
    config.build_cache = work.path().join("cache");
    config.pg_user = std::env::var("BLOCKLAB_PG_USER")
        .ok()
        .or_else(blocklab_agent::default_pg_user);
    config.build_user = std::env::var("BLOCKLAB_BUILD_USER")
        .ok()
        .or_else(blocklab_agent::default_build_user);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let agent = tokio::spawn(blocklab_agent::serve(config, async {
        let _ = stop_rx.await;
    }));

    let mut hello = None;
    let mut results = Vec::new();
    let mut heartbeats = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while (hello.is_none() || results.len() < 2 || heartbeats < 2)
        && tokio::time::Instant::now() < deadline
    {
        let Ok(Some(msg)) = tokio::time::timeout(Duration::from_secs(30), seen.recv()).await else {
            break;
        };
        match msg.kind {
            Some(host_message::Kind::Hello(h)) => hello = Some(h),
            Some(host_message::Kind::Heartbeat(_)) => heartbeats += 1,
            Some(host_message::Kind::Result(r)) => results.push(r),
            _ => {}
        }
    }
    let hello = hello.expect("no hello");
    assert_eq!(hello.host_id, "agent-test");
    assert_eq!(hello.role, blocklab_proto::Role::Agent as i32);
    assert_eq!(hello.labels, ["nvme"]);
    assert_eq!(hello.address, "127.0.0.1");
    assert_eq!(hello.version, env!("CARGO_PKG_VERSION"));
    let facts: serde_json::Value = serde_json::from_str(&hello.facts_json).unwrap();
    assert!(facts["memory_bytes"].as_u64().unwrap() > 0, "{facts}");
    assert!(facts["work_dir"]["fs_type"].is_string(), "{facts}");
    // The doctor's warnings ride along: this machine's load alone is not pinned, only the shape.
    assert!(facts["warnings"].is_array(), "{facts}");
    assert!(heartbeats >= 2, "heartbeats: {heartbeats}");

    results.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].attempt, 3);
    match &results[0].outcome {
        Some(task_result::Outcome::Error(e)) => {
            assert_eq!(e.stage, "building");
            assert!(e.reason.contains("--prefix=/etc"), "{}", e.reason);
        }
        other => panic!("unexpected build outcome {other:?}"),
    }
    assert_eq!(results[1].run_id, "never-started");
    match &results[1].outcome {
        Some(task_result::Outcome::StopServer(r)) => assert!(r.removed),
        other => panic!("unexpected stop outcome {other:?}"),
    }

    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("serve did not return after shutdown")
        .unwrap()
        .unwrap();
    server.abort();
}
