//! Coordinator failover on a shared PostgreSQL catalog, with real processes on loopback: two
//! coordinators on one catalog (a real postgresql-15 server), an agent, a worker and the CLI
//! each given both addresses. The first coordinator leads; the standby answers reads and
//! refuses writes and hosts. The leader is SIGKILLed while a run measures: the standby leads
//! within the lease's time to live plus its poll, in the next epoch; the hosts follow it;
//! the job completes with exactly one result per run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetLeaderRequest, GetLeaderResponse, ListJobsRequest, SubmitJobRequest};
use blocklab_tests::{binary, build_cache, build_user, pg_tarball, pg_user, submitted_job_id};
use sqlx::{AnyPool, Row};

const LEASE_TTL: Duration = Duration::from_secs(3);

/// Child processes, SIGKILLed on drop; their logs in the lab's directory.
struct Procs {
    dir: PathBuf,
    children: Vec<(String, Child)>,
}

impl Procs {
    fn spawn(&mut self, name: &str, bin: &Path, args: &[String]) {
        use std::os::unix::process::CommandExt as _;
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).expect("log");
        let child = Command::new(bin)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("spawn");
        self.children.push((name.to_string(), child));
    }

    fn signal(&self, name: &str, signal: &str) {
        let (_, child) = self
            .children
            .iter()
            .find(|(n, _)| n == name)
            .expect("child");
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill -{signal} {name}");
    }

    /// Waits up to `limit` for the child to exit on its own.
    fn exit_within(&mut self, name: &str, limit: Duration) -> std::process::ExitStatus {
        let i = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .expect("child");
        let start = Instant::now();
        loop {
            if let Some(status) = self.children[i].1.try_wait().expect("wait") {
                self.children.remove(i);
                return status;
            }
            assert!(start.elapsed() < limit, "{name} still runs after {limit:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill(&mut self, name: &str) {
        let i = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .expect("child");
        let (_, mut child) = self.children.remove(i);
        child.kill().expect("SIGKILL");
        let _ = child.wait();
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

async fn leader(addr: &str) -> Option<GetLeaderResponse> {
    let mut c = ControlClient::connect(format!("http://{addr}"))
        .await
        .ok()?;
    c.get_leader(GetLeaderRequest {})
        .await
        .ok()
        .map(|r| r.into_inner())
}

async fn wait<F, Fut>(what: &str, timeout: Duration, dir: &Path, mut check: F) -> Duration
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
        dir.display()
    );
}

/// (sequence, state, stage, attempt) of each run of `job`.
async fn runs(db: &AnyPool, job: &str) -> Vec<(i64, String, String, i64)> {
    sqlx::query(
        "SELECT sequence, state, stage, attempt FROM runs WHERE job_id = $1 ORDER BY sequence",
    )
    .bind(job)
    .fetch_all(db)
    .await
    .map(|rows| {
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    })
    .unwrap_or_default()
}

async fn job_state(db: &AnyPool, job: &str) -> String {
    sqlx::query_scalar("SELECT state FROM jobs WHERE job_id = $1")
        .bind(job)
        .fetch_one(db)
        .await
        .unwrap_or_default()
}

/// Submits the spec through the CLI given every coordinator's address (it finds the leader).
fn submit(coordinators: &str, spec: &Path) -> String {
    let out = Command::new(binary("blocklab"))
        .args(["--coordinator", coordinators, "submit"])
        .arg(spec)
        .stdin(Stdio::null())
        .output()
        .expect("blocklab submit");
    assert!(
        out.status.success(),
        "submit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    submitted_job_id(&String::from_utf8_lossy(&out.stdout))
}

async fn first_run_measuring(db: &AnyPool, job: &str, dir: &Path) {
    wait(
        "the first run to measure",
        Duration::from_secs(15 * 60),
        dir,
        || async {
            runs(db, job)
                .await
                .first()
                .is_some_and(|r| r.2 == "measuring")
        },
    )
    .await;
}

/// Waits for the job to end; it must be done with exactly one result per run, one of them
/// retried (the run the failover interrupted). Returns how long it took.
async fn completes_once(db: &AnyPool, job: &str, dir: &Path) -> Duration {
    let finished = wait(
        "the job to finish",
        Duration::from_secs(10 * 60),
        dir,
        || async {
            matches!(
                job_state(db, job).await.as_str(),
                "done" | "failed" | "cancelled"
            )
        },
    )
    .await;
    let all = runs(db, job).await;
    assert_eq!(
        job_state(db, job).await,
        "done",
        "job {job}: {all:?}; logs in {}",
        dir.display()
    );
    let (done, results): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM runs WHERE job_id = $1 AND state = 'done'),
                (SELECT count(*) FROM results JOIN runs USING (run_id) WHERE job_id = $1)",
    )
    .bind(job)
    .fetch_one(db)
    .await
    .expect("counts");
    assert_eq!(
        (done, results),
        (2, 2),
        "exactly one result per run: {all:?}"
    );
    assert!(
        all.iter().any(|r| r.3 > 1),
        "the interrupted run was retried: {all:?}"
    );
    finished
}

async fn lease_row(db: &AnyPool) -> (i64, String) {
    sqlx::query_as("SELECT epoch, address FROM leader_lease WHERE id = 1")
        .fetch_one(db)
        .await
        .expect("lease")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standby_leads_when_the_leader_is_killed_and_the_job_completes() {
    sqlx::any::install_default_drivers();
    let pg = blocklab_testpg::PgServer::shared();
    let url = pg.database();
    let dir = tempfile::tempdir().expect("tempdir");
    let keep = dir.path().to_path_buf();
    std::fs::set_permissions(&keep, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut procs = Procs {
        dir: keep.clone(),
        children: Vec::new(),
    };
    let (a, b) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let both = format!("{a},{b}");
    let coordinator = |listen: &str| {
        strings(&[
            "--listen",
            listen,
            "--catalog",
            &url,
            "--lease-ttl",
            "3s",
            "--heartbeat-interval",
            "500ms",
            "--heartbeat-timeout",
            "3s",
        ])
    };
    procs.spawn(
        "coordinator-a",
        &binary("blocklab-coordinator"),
        &coordinator(&a),
    );
    let led = wait(
        "coordinator a to lead",
        Duration::from_secs(60),
        &keep,
        || async { leader(&a).await.is_some_and(|l| l.leading) },
    )
    .await;
    procs.spawn(
        "coordinator-b",
        &binary("blocklab-coordinator"),
        &coordinator(&b),
    );
    wait(
        "coordinator b to answer",
        Duration::from_secs(60),
        &keep,
        || async { leader(&b).await.is_some() },
    )
    .await;
    let a_lead = leader(&a).await.expect("a");
    let b_view = leader(&b).await.expect("b");
    assert!(a_lead.epoch >= 1, "{a_lead:?}");
    assert_eq!(
        (b_view.leading, b_view.epoch, b_view.leader_address.as_str()),
        (false, a_lead.epoch, a.as_str()),
        "the standby names the leader (a led after {led:?})"
    );

    let spec = format!(
        r#"
name = "failover"
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
    let spec_path = keep.join("failover.toml");
    std::fs::write(&spec_path, spec).expect("spec");
    // The standby answers reads and refuses writes, naming why.
    let mut standby = ControlClient::connect(format!("http://{b}"))
        .await
        .expect("b");
    standby
        .list_jobs(ListJobsRequest::default())
        .await
        .expect("a standby answers reads");
    let refused = standby
        .submit_job(SubmitJobRequest {
            spec_toml: std::fs::read_to_string(&spec_path).expect("spec"),
            ..Default::default()
        })
        .await
        .expect_err("a standby refuses writes");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(refused.message().contains("standby"), "{refused:?}");

    let work = keep.join("agent");
    let cache = build_cache();
    let agent_args = strings(&[
        "--coordinator",
        &both,
        "--host-id",
        "db",
        "--advertise-addr",
        "127.0.0.1",
        "--work-dir",
        &work.display().to_string(),
        "--build-cache",
        &cache.display().to_string(),
        "--pg-user",
        &pg_user(),
        "--build-user",
        &build_user(),
    ]);
    procs.spawn("agent", &binary("blocklab-agent"), &agent_args);
    let worker_args = strings(&[
        "serve",
        "--coordinator",
        &both,
        "--host-id",
        "client",
        "--advertise-addr",
        "127.0.0.1",
    ]);
    procs.spawn("worker", &binary("blocklab-worker"), &worker_args);

    // Submitted through the CLI with both addresses: it finds the leader.
    let job = submit(&both, &spec_path);
    let db = AnyPool::connect(&url).await.expect("catalog");
    first_run_measuring(&db, &job, &keep).await;

    // SIGKILL the leader mid-measurement.
    procs.kill("coordinator-a");
    let killed = Instant::now();
    wait("coordinator b to lead", 4 * LEASE_TTL, &keep, || async {
        leader(&b).await.is_some_and(|l| l.leading)
    })
    .await;
    let took_over = killed.elapsed();
    let b_lead = leader(&b).await.expect("b");
    assert_eq!(b_lead.epoch, a_lead.epoch + 1, "the next epoch: {b_lead:?}");
    assert!(
        took_over <= LEASE_TTL + LEASE_TTL / 4 + Duration::from_secs(1),
        "the standby led {took_over:?} after the kill (lease {LEASE_TTL:?})"
    );
    assert_eq!(lease_row(&db).await, (b_lead.epoch, b.clone()));
    let finished = completes_once(&db, &job, &keep).await;
    eprintln!(
        "failover: b led {took_over:?} after the SIGKILL (lease {LEASE_TTL:?}), job done {finished:?} later"
    );

    // A leader paused past its lease (SIGSTOP) loses it; resumed, it writes nothing more and
    // stops, while the job completes on the coordinator that took over.
    procs.spawn(
        "coordinator-a2",
        &binary("blocklab-coordinator"),
        &coordinator(&a),
    );
    wait(
        "the restarted a to stand by",
        Duration::from_secs(60),
        &keep,
        || async {
            leader(&a)
                .await
                .is_some_and(|l| !l.leading && l.leader_address == b)
        },
    )
    .await;
    let job = submit(&both, &spec_path);
    first_run_measuring(&db, &job, &keep).await;
    procs.signal("coordinator-b", "STOP");
    wait("a to lead again", 4 * LEASE_TTL, &keep, || async {
        leader(&a).await.is_some_and(|l| l.leading)
    })
    .await;
    let a_again = leader(&a).await.expect("a");
    assert_eq!(a_again.epoch, b_lead.epoch + 1, "{a_again:?}");
    procs.signal("coordinator-b", "CONT");
    let status = procs.exit_within("coordinator-b", 4 * LEASE_TTL);
    assert!(!status.success(), "the paused leader stops: {status}");
    let log = std::fs::read_to_string(keep.join("coordinator-b.log")).expect("log");
    assert!(
        log.contains("stopped leading"),
        "coordinator b's log: {log}"
    );
    let finished = completes_once(&db, &job, &keep).await;
    assert_eq!(lease_row(&db).await, (a_again.epoch, a.clone()));
    eprintln!(
        "failover: a paused leader was fenced and stopped; the job was done {finished:?} later"
    );
    drop(procs);
    drop(dir);
}
