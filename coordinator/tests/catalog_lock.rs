//! One coordinator per SQLite catalog: a second one started on the same file stops at once,
//! naming the first, which keeps serving; once the first stops, the file is free again.

use std::time::Duration;

use blocklab_proto::v1::ListJobsRequest;
use blocklab_proto::v1::control_client::ControlClient;

async fn serve(
    db: &std::path::Path,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), blocklab_coordinator::CoordinatorError>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = blocklab_coordinator::CoordinatorConfig::new(db.to_path_buf());
    let handle = tokio::spawn(blocklab_coordinator::serve(config, listener, async {
        let _ = stopped.await;
    }));
    (addr, stop, handle)
}

async fn answers(addr: std::net::SocketAddr) -> bool {
    for _ in 0..50 {
        if let Ok(mut c) = ControlClient::connect(format!("http://{addr}")).await
            && c.list_jobs(ListJobsRequest {}).await.is_ok()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_second_coordinator_on_one_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("catalog.db");
    let (first, stop_first, first_done) = serve(&db).await;
    assert!(answers(first).await, "the first coordinator serves");

    let (_, _stop_second, second_done) = serve(&db).await;
    let refused = tokio::time::timeout(Duration::from_secs(10), second_done)
        .await
        .expect("the second coordinator stops at once")
        .expect("join");
    let message = refused.expect_err("refused").to_string();
    assert!(
        message.contains(&format!(
            "another coordinator (pid {}) serves the catalog {}",
            std::process::id(),
            db.display()
        )),
        "{message}"
    );
    assert!(answers(first).await, "the first one still serves");

    stop_first.send(()).expect("stop");
    first_done.await.expect("join").expect("clean stop");
    let (third, _stop_third, _third_done) = serve(&db).await;
    assert!(
        answers(third).await,
        "the file is free once the first stopped"
    );
}
