//! Faults on a lab of real processes, each host in its own network namespace: an agent
//! SIGKILLed while measuring, the coordinator SIGKILLed mid-job, an agent cut off longer than
//! the heartbeat timeout, a worker SIGKILLed, postgres SIGKILLed. Each time the affected run
//! is lost (or failed) and retried as the rules say, the job completes with exactly one
//! result per finished run, and `PRAGMA integrity_check` is ok. Times to detection and
//! recovery are printed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blocklab_tests::netns::Topology;
use blocklab_tests::{binary, build_cache, build_user, pg_tarball, pg_user, postmaster_pids};
use sqlx::{Row, SqlitePool};

struct Lab {
    topo: Topology,
    catalog: PathBuf,
    db: SqlitePool,
    cli: PathBuf,
}

impl Lab {
    fn coordinator_args(&self) -> Vec<String> {
        let listen = format!("{}:7400", self.topo.coordinator_addr());
        let catalog = self.catalog.display().to_string();
        [
            "--listen",
            &listen,
            "--catalog",
            &catalog,
            "--heartbeat-interval",
            "500ms",
            "--heartbeat-timeout",
            "3s",
            "--insecure",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn start_coordinator(&mut self) {
        let args = self.coordinator_args();
        self.topo
            .spawn("coordinator", "c", &binary("blocklab-coordinator"), &args);
    }

    fn start_agent(&mut self) {
        let coordinator = format!("{}:7400", self.topo.coordinator_addr());
        let work = self.topo.dir.join("agent").display().to_string();
        let cache = build_cache().display().to_string();
        let args: Vec<String> = [
            "--coordinator",
            &coordinator,
            "--host-id",
            "db",
            "--advertise-addr",
            &self.topo.db_addr(),
            "--work-dir",
            &work,
            "--build-cache",
            &cache,
            "--pg-user",
            &pg_user(),
            "--build-user",
            &build_user(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        self.topo
            .spawn("agent", "d", &binary("blocklab-agent"), &args);
    }

    fn start_worker(&mut self) {
        let coordinator = format!("{}:7400", self.topo.coordinator_addr());
        let args: Vec<String> = [
            "serve",
            "--coordinator",
            &coordinator,
            "--host-id",
            "client",
            "--advertise-addr",
            &self.topo.worker_addr(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        self.topo
            .spawn("worker", "w", &binary("blocklab-worker"), &args);
    }

    fn submit(&self, name: &str) -> String {
        let spec = format!(
            r#"
name = "{name}"
repetitions = 2
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [2]
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "5s"
"#,
            pg_tarball().display()
        );
        self.topo.submit(&self.cli, name, &spec)
    }

    /// (sequence, state, stage, attempt) of each run.
    async fn runs(&self, job: &str) -> Vec<(i64, String, String, i64)> {
        sqlx::query(
            "SELECT sequence, state, stage, attempt FROM runs WHERE job_id = ? ORDER BY sequence",
        )
        .bind(job)
        .fetch_all(&self.db)
        .await
        .map(|rows| {
            rows.iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect()
        })
        .unwrap_or_default()
    }

    async fn job_state(&self, job: &str) -> String {
        sqlx::query_scalar("SELECT state FROM jobs WHERE job_id = ?")
            .bind(job)
            .fetch_one(&self.db)
            .await
            .unwrap_or_default()
    }

    async fn wait<F, Fut>(&self, what: &str, timeout: Duration, mut check: F) -> Duration
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if check().await {
                return start.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "timed out after {timeout:?} waiting for {what}; logs in {}",
            self.topo.dir.display()
        );
    }

    async fn first_run_measuring(&self, job: &str) {
        self.wait(
            "the first run to measure",
            Duration::from_secs(15 * 60),
            || async {
                self.runs(job)
                    .await
                    .first()
                    .is_some_and(|r| r.2 == "measuring")
            },
        )
        .await;
    }

    async fn wait_finished(&self, job: &str) -> Duration {
        self.wait(
            "the job to finish",
            Duration::from_secs(10 * 60),
            || async {
                matches!(
                    self.job_state(job).await.as_str(),
                    "done" | "failed" | "cancelled"
                )
            },
        )
        .await
    }

    /// Every run done with exactly one result; the catalog intact.
    async fn assert_complete(&self, job: &str) {
        assert_eq!(
            self.job_state(job).await,
            "done",
            "job {job}: {:?}",
            self.runs(job).await
        );
        let (runs, results): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM runs WHERE job_id = ?1 AND state = 'done'),
                    (SELECT count(*) FROM results JOIN runs USING (run_id) WHERE job_id = ?1)",
        )
        .bind(job)
        .fetch_one(&self.db)
        .await
        .expect("counts");
        assert_eq!((runs, results), (2, 2), "exactly one result per run");
        assert_integrity(&self.catalog);
    }
}

fn assert_integrity(catalog: &Path) {
    let out = std::process::Command::new("sqlite3")
        .arg(catalog)
        .arg("PRAGMA integrity_check;")
        .output()
        .expect("sqlite3");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_in_a_namespaced_lab() {
    // Kept on failure for its logs; removed at the end of a passing run.
    let dir = tempfile::tempdir().expect("tempdir").keep();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let topo = Topology::new(&dir);
    let catalog = dir.join("catalog.db");
    let mut lab = Lab {
        topo,
        catalog: catalog.clone(),
        db: SqlitePool::connect_lazy("sqlite::memory:").expect("pool"),
        cli: binary("blocklab"),
    };
    lab.start_coordinator();
    lab.start_agent();
    lab.start_worker();
    lab.wait("the catalog", Duration::from_secs(30), || async {
        catalog.exists()
    })
    .await;
    lab.db = SqlitePool::connect(&format!("sqlite://{}?mode=ro", catalog.display()))
        .await
        .expect("catalog");
    lab.wait(
        "agent and worker to attach",
        Duration::from_secs(60),
        || async { lab.topo.cli(&lab.cli, &["hosts"]).matches(" up ").count() == 2 },
    )
    .await;
    let mut report = Vec::new();

    // 1. The agent is SIGKILLed while measuring: the run is lost, retried when it is back.
    let job = lab.submit("agent-killed");
    lab.first_run_measuring(&job).await;
    lab.topo.kill("agent");
    let detected = lab
        .wait("the run to be lost", Duration::from_secs(60), || async {
            lab.runs(&job)
                .await
                .first()
                .is_some_and(|r| r.1 == "lost" || r.3 >= 2)
        })
        .await;
    lab.start_agent();
    let recovered = lab.wait_finished(&job).await;
    lab.assert_complete(&job).await;
    assert_eq!(
        lab.runs(&job).await[0].3,
        2,
        "the lost run was retried once"
    );
    report.push(format!(
        "agent SIGKILL: lost after {detected:?}, job done {recovered:?} later"
    ));

    // 2. The coordinator is SIGKILLed mid-job and restarted on the same catalog.
    let job = lab.submit("coordinator-killed");
    lab.first_run_measuring(&job).await;
    lab.topo.kill("coordinator");
    let t = Instant::now();
    lab.start_coordinator();
    lab.wait_finished(&job).await;
    let recovered = t.elapsed();
    lab.assert_complete(&job).await;
    report.push(format!(
        "coordinator SIGKILL + restart: job done {recovered:?} after the kill"
    ));

    // 3. The agent's link is cut longer than the heartbeat timeout: it fences itself (stops
    //    its postgres), the coordinator declares the run lost; the link comes back and the
    //    run is retried.
    let job = lab.submit("link-cut");
    lab.first_run_measuring(&job).await;
    let agent_dir = lab.topo.dir.join("agent");
    assert_eq!(postmaster_pids(&agent_dir).len(), 1);
    lab.topo.link("d", false);
    let detected = lab
        .wait("the run to be lost", Duration::from_secs(60), || async {
            lab.runs(&job)
                .await
                .first()
                .is_some_and(|r| r.1 == "lost" || r.3 >= 2)
        })
        .await;
    let fenced = lab
        .wait(
            "the agent to fence itself",
            Duration::from_secs(60),
            || async { postmaster_pids(&agent_dir).is_empty() },
        )
        .await;
    lab.topo.link("d", true);
    let t = Instant::now();
    lab.wait_finished(&job).await;
    let recovered = t.elapsed();
    lab.assert_complete(&job).await;
    report.push(format!("agent link cut: run lost after {detected:?}, agent fenced after {fenced:?}, job done {recovered:?} after the link returned"));

    // 4. The worker is SIGKILLed while measuring: the run is lost, retried when it is back.
    let job = lab.submit("worker-killed");
    lab.first_run_measuring(&job).await;
    lab.topo.kill("worker");
    let detected = lab
        .wait("the run to be lost", Duration::from_secs(60), || async {
            lab.runs(&job)
                .await
                .first()
                .is_some_and(|r| r.1 == "lost" || r.3 >= 2)
        })
        .await;
    lab.start_worker();
    let recovered = lab.wait_finished(&job).await;
    lab.assert_complete(&job).await;
    report.push(format!(
        "worker SIGKILL: lost after {detected:?}, job done {recovered:?} later"
    ));

    // 5. Postgres is SIGKILLed while measuring: that run fails with its stage, the next proceeds.
    let job = lab.submit("postgres-killed");
    lab.first_run_measuring(&job).await;
    let pids = postmaster_pids(&agent_dir);
    assert_eq!(pids.len(), 1);
    let t = Instant::now();
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pids[0].to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let detected = lab
        .wait("the run to fail", Duration::from_secs(120), || async {
            lab.runs(&job)
                .await
                .first()
                .is_some_and(|r| r.1 == "failed")
        })
        .await;
    lab.wait_finished(&job).await;
    let runs = lab.runs(&job).await;
    assert_eq!(
        (runs[0].1.as_str(), runs[0].2.as_str()),
        ("failed", "measuring"),
        "{runs:?}"
    );
    assert_eq!(runs[1].1, "done", "the next run proceeded");
    assert_integrity(&catalog);
    report.push(format!(
        "postgres SIGKILL: run failed at measuring after {detected:?} ({:?} after the kill)",
        t.elapsed()
    ));

    for line in &report {
        eprintln!("fault: {line}");
    }
    std::fs::write(
        std::env::temp_dir().join("blocklab-fault-report.txt"),
        report.join("\n"),
    )
    .expect("report");
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}
