//! A failed step ends its run at once. Two workers share a run; one of them advertises an
//! address it does not connect from, so the database host's pg_hba.conf refuses its clients
//! while the other worker's clients connect and wait for the go. The run fails within
//! seconds naming the refusal (not after the ready timeout), the waiting worker's load is
//! cancelled, and every host is free again. Each host is a network namespace.

use std::time::{Duration, Instant};

use blocklab_tests::netns::Topology;
use blocklab_tests::{binary, build_cache, build_user, pg_tarball, pg_user};
use sqlx::SqlitePool;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_worker_fails_the_run_at_once() {
    let dir = tempfile::tempdir().expect("tempdir").keep();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut topo = Topology::new(&dir);
    let coordinator = format!("{}:7400", topo.coordinator_addr());
    let catalog = dir.join("catalog.db");
    topo.spawn(
        "coordinator",
        "c",
        &binary("blocklab-coordinator"),
        &args(&[
            "--listen",
            &coordinator,
            "--catalog",
            catalog.to_str().expect("path"),
            "--heartbeat-interval",
            "500ms",
            "--heartbeat-timeout",
            "20s",
            "--insecure",
        ]),
    );
    let work = dir.join("agent");
    topo.spawn(
        "agent",
        "d",
        &binary("blocklab-agent"),
        &args(&[
            "--coordinator",
            &coordinator,
            "--host-id",
            "db",
            "--advertise-addr",
            &topo.db_addr(),
            "--work-dir",
            work.to_str().expect("path"),
            "--build-cache",
            build_cache().to_str().expect("path"),
            "--pg-user",
            &pg_user(),
            "--build-user",
            &build_user(),
        ]),
    );
    // "a-good" loads the data (workers are taken in host id order) and connects its client;
    // "b-refused" says it is at an address of the subnet that no namespace holds.
    let good_addr = topo.coordinator_addr();
    topo.spawn(
        "worker-good",
        "c",
        &binary("blocklab-worker"),
        &args(&[
            "serve",
            "--coordinator",
            &coordinator,
            "--host-id",
            "a-good",
            "--advertise-addr",
            &good_addr,
        ]),
    );
    let wrong_addr = format!(
        "{}.99",
        topo.worker_addr().rsplit_once('.').expect("ipv4").0
    );
    topo.spawn(
        "worker-refused",
        "w",
        &binary("blocklab-worker"),
        &args(&[
            "serve",
            "--coordinator",
            &coordinator,
            "--host-id",
            "b-refused",
            "--advertise-addr",
            &wrong_addr,
        ]),
    );
    let cli = binary("blocklab");
    let deadline = Instant::now() + Duration::from_secs(60);
    let coordinator_flag = format!("--coordinator={coordinator}");
    // The coordinator may not listen yet: ask until it answers and all three hosts are up.
    let up = |topo: &Topology| {
        let out = topo.exec("c", &cli, &[&coordinator_flag, "hosts"]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).matches(" up ").count() >= 3
    };
    while !up(&topo) {
        assert!(
            Instant::now() < deadline,
            "hosts did not attach; logs in {}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let spec = format!(
        r#"
name = "refused-worker"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [2]
[workload]
builtin = "select-only"
scale = 1
duration = "5s"
[placement]
client_workers = 2
"#,
        pg_tarball().display()
    );
    let job = topo.submit(&cli, "spec", &spec);

    let db = loop {
        if let Ok(db) =
            SqlitePool::connect(&format!("sqlite://{}?mode=ro", catalog.display())).await
        {
            break db;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Builds are cached: the run starts within minutes at worst; from its start, the failure
    // must come within seconds (the ready timeout is 5 minutes).
    let started = loop {
        let state: Option<String> =
            sqlx::query_scalar("SELECT state FROM runs WHERE job_id = ? AND attempt >= 1")
                .bind(&job)
                .fetch_optional(&db)
                .await
                .expect("runs");
        if state.is_some() {
            break Instant::now();
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(15 * 60),
            "the run did not start; logs in {}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (state, error, run_id) = loop {
        let row: (String, Option<String>, String) =
            sqlx::query_as("SELECT state, error, run_id FROM runs WHERE job_id = ?")
                .bind(&job)
                .fetch_one(&db)
                .await
                .expect("run");
        if matches!(row.0.as_str(), "done" | "failed" | "lost") {
            break row;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run did not end within 120 s of its start; logs in {}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let took = started.elapsed();
    println!("run failed {took:?} after it started: {error:?}");
    assert_eq!(state, "failed");
    let error = error.unwrap_or_default();
    assert!(
        error.contains("pg_hba.conf"),
        "the run's error names the refusal: {error}"
    );
    assert!(
        took < Duration::from_secs(60),
        "the run ended {took:?} after its start"
    );

    // Every host is free again within seconds, and the connected worker's load was cancelled.
    let freed = Instant::now();
    loop {
        let hosts = topo.cli(&cli, &["hosts"]);
        if !hosts.contains("busy") {
            break;
        }
        assert!(
            freed.elapsed() < Duration::from_secs(10),
            "hosts still busy with the run: {hosts}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let good_log = std::fs::read_to_string(dir.join("worker-good.log")).expect("log");
    assert!(
        good_log
            .lines()
            .any(|l| l.contains("cancel requested") && l.contains(&run_id)),
        "the waiting worker was told to stop"
    );
    let job_state: String = sqlx::query_scalar("SELECT state FROM jobs WHERE job_id = ?")
        .bind(&job)
        .fetch_one(&db)
        .await
        .expect("job");
    assert_eq!(job_state, "failed");
    drop(topo);
    let _ = std::fs::remove_dir_all(&dir);
}
