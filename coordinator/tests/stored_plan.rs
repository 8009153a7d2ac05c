//! A job is parsed once, at submit: the scheduler, the listings, `watch` and `results` work
//! from the plan stored in the catalog, so a stored spec text that no longer parses (edited,
//! or written by an older version) breaks none of them.

use std::path::Path;
use std::time::Duration;

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{
    GetJobRequest, ListHostsRequest, ListJobsRequest, QueryResultsRequest, RerunJobRequest,
    SubmitJobRequest, WatchJobRequest,
};
use tokio_stream::StreamExt;
use tonic::Code;

const SPEC: &str = r#"
name = "stored-plan"
repetitions = 3
order = "shuffled"
[source]
tarball = "/nonexistent/postgresql.tar.bz2"
[matrix]
block_size_kb = [8, 16]
clients = [2]
[workload]
duration = "1s"
"#;

struct Running {
    client: ControlClient<tonic::transport::Channel>,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Submits `SPEC`; returns the job id.
    async fn submit(&mut self) -> String {
        self.client
            .submit_job(SubmitJobRequest {
                spec_toml: SPEC.into(),
                ..Default::default()
            })
            .await
            .expect("submit")
            .into_inner()
            .job_id
    }
}

async fn start(db: &Path) -> Running {
    start_with(blocklab_coordinator::CoordinatorConfig::new(db)).await
}

async fn start_with(config: blocklab_coordinator::CoordinatorConfig) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        blocklab_coordinator::serve(config, listener, async {
            let _ = stop_rx.await;
        })
        .await
        .expect("serve");
    });
    for _ in 0..50 {
        if let Ok(mut client) = ControlClient::connect(url.clone()).await
            && client.list_hosts(ListHostsRequest {}).await.is_ok()
        {
            return Running {
                client,
                stop,
                served,
            };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("coordinator did not come up");
}

fn sql(db: &Path, statement: &str) -> String {
    let out = std::process::Command::new("sqlite3")
        .arg(db)
        .arg(statement)
        .output()
        .expect("sqlite3 is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn an_unparsable_stored_spec_breaks_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("catalog.db");
    let mut c = start(&db).await;
    let job_id = c.submit().await;
    let order_before = sql(
        &db,
        &format!(
            "SELECT group_concat(cell_index, ',') FROM (SELECT cell_index FROM runs WHERE job_id = '{job_id}' ORDER BY sequence)"
        ),
    );
    c.stop.send(()).expect("stop");
    c.served.await.expect("stopped");

    sql(&db, "UPDATE jobs SET spec_toml = 'this is [[ not a spec'");
    // The scheduler resumes the job from its stored plan: it waits for a database host, it
    // does not fail on the text.
    let mut c = start(&db).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let jobs = c
        .client
        .list_jobs(ListJobsRequest {})
        .await
        .expect("jobs")
        .into_inner()
        .jobs;
    assert_eq!(jobs.len(), 1);
    let j = &jobs[0];
    assert_eq!(
        (
            j.state.as_str(),
            j.error.as_str(),
            j.kind.as_str(),
            j.workload.as_str(),
            j.headline_metric.as_str(),
            j.runs_total,
        ),
        ("queued", "", "benchmark", "pgbench", "tps", 6)
    );

    let job = c
        .client
        .get_job(GetJobRequest {
            job_id: job_id.clone(),
            ..Default::default()
        })
        .await
        .expect("job")
        .into_inner();
    let labels: Vec<&str> = job.runs.iter().map(|r| r.cell_label.as_str()).collect();
    assert_eq!(labels.len(), 6);
    assert!(
        labels
            .iter()
            .all(|l| l.contains("bs=8K") || l.contains("bs=16K")),
        "{labels:?}"
    );
    assert_eq!(
        sql(
            &db,
            &format!(
                "SELECT group_concat(cell_index, ',') FROM (SELECT cell_index FROM runs WHERE job_id = '{job_id}' ORDER BY sequence)"
            ),
        ),
        order_before,
        "the run order is the stored one"
    );

    let mut events = c
        .client
        .watch_job(WatchJobRequest {
            job_id: job_id.clone(),
        })
        .await
        .expect("watch")
        .into_inner();
    let first = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("an event")
        .expect("stream open")
        .expect("event");
    let summary = first.job.expect("summary");
    assert_eq!(
        (summary.name.as_str(), summary.workload.as_str()),
        ("stored-plan", "pgbench")
    );

    let results = c
        .client
        .query_results(QueryResultsRequest {
            job_id: job_id.clone(),
            metric: String::new(),
        })
        .await
        .expect("results")
        .into_inner();
    assert_eq!(results.cells.len(), 2);
    assert!(
        results
            .cells
            .iter()
            .all(|cell| cell.metric == "tps" && cell.n == 0)
    );
    c.stop.send(()).expect("stop");
    c.served.await.expect("stopped");
}

/// The status line of `GET path` on the dashboard at `addr`.
async fn http_status(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    for _ in 0..50 {
        if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
            let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            s.write_all(request.as_bytes()).await.expect("send");
            let mut answer = String::new();
            s.read_to_string(&mut answer).await.expect("read");
            return answer.lines().next().unwrap_or_default().to_string();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("dashboard did not come up");
}

#[tokio::test]
async fn a_corrupt_row_answers_internal_not_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("catalog.db");
    let mut c = start(&db).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(c.submit().await);
    }
    c.stop.send(()).expect("stop");
    c.served.await.expect("stopped");

    // Finished jobs (nothing resumes them): one whose plan is not JSON, one whose build
    // progress is not.
    let (plan_job, progress_job) = (&ids[0], &ids[1]);
    sql(&db, "UPDATE jobs SET state = 'done'");
    sql(
        &db,
        &format!("UPDATE jobs SET plan_json = 'not [ json' WHERE job_id = '{plan_job}'"),
    );
    sql(
        &db,
        &format!("UPDATE jobs SET build_progress = 'not [ json' WHERE job_id = '{progress_job}'"),
    );
    let dashboard = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let mut config = blocklab_coordinator::CoordinatorConfig::new(&db);
    config.dashboard = Some(dashboard);
    let mut c = start_with(config).await;
    let client = &mut c.client;
    let rerun = |job_id: &str| RerunJobRequest {
        job_id: job_id.into(),
        ..Default::default()
    };
    let get = |job_id: &str| GetJobRequest {
        job_id: job_id.into(),
        ..Default::default()
    };
    let answers = [
        (
            client.rerun_job(rerun(plan_job)).await.map(drop),
            Code::Internal,
            "stored plan",
        ),
        (
            client.list_jobs(ListJobsRequest {}).await.map(drop),
            Code::Internal,
            "build progress",
        ),
        (
            client.get_job(get(progress_job)).await.map(drop),
            Code::Internal,
            "build progress",
        ),
        // A wrong id is still the caller's input, not a broken catalog.
        (
            client.get_job(get("no such job")).await.map(drop),
            Code::InvalidArgument,
            "job id",
        ),
    ];
    for (answer, code, names) in answers {
        let e = answer.expect_err("refused");
        assert_eq!(e.code(), code, "{e:?}");
        assert!(e.message().contains(names), "{}", e.message());
    }
    assert!(
        http_status(dashboard, "/").await.contains(" 500 "),
        "the dashboard answers 500"
    );
    c.stop.send(()).expect("stop");
    c.served.await.expect("stopped");
}

/// After a stop the SQLite file alone is the whole catalog: the coordinator checkpoints its
/// write-ahead log into it, so a copy of `catalog.db` without `catalog.db-wal` holds the job.
#[tokio::test]
async fn after_a_stop_the_catalog_file_alone_holds_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("catalog.db");
    let mut c = start(&db).await;
    let job_id = c.submit().await;
    c.stop.send(()).expect("stop");
    c.served.await.expect("stopped");

    let wal = dir.path().join("catalog.db-wal");
    let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(wal_bytes, 0, "the write-ahead log still holds pages");
    let copy_dir = tempfile::tempdir().expect("tempdir");
    let copy = copy_dir.path().join("catalog.db");
    std::fs::copy(&db, &copy).expect("copy the file alone");
    assert_eq!(
        sql(
            &copy,
            &format!("SELECT count(*) FROM runs WHERE job_id = '{job_id}'")
        ),
        "6",
        "the copied file holds the job's runs"
    );
}
