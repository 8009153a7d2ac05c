//! Placement on a lab of real processes, each host in its own network namespace: a
//! coordinator, three agents and two client workers. Three jobs run at once, each pinned to
//! its own database host (the third waiting for a worker the first two hold); a fourth,
//! pinned by the rule (fewest unfinished jobs, then the host pinned longest ago) to the first
//! job's host, needs both workers: it waits for its host, then for the workers, says why, and
//! completes. No run fails for waiting.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blocklab_tests::netns::Topology;
use blocklab_tests::{binary, build_cache, build_user, pg_tarball, pg_user};
use sqlx::SqlitePool;

const AGENTS: [(&str, &str); 3] = [("d", "db-1"), ("e", "db-2"), ("f", "db-3")];
const WORKERS: [(&str, &str); 2] = [("w", "client-1"), ("x", "client-2")];

struct Lab {
    topo: Topology,
    db: Option<SqlitePool>,
    catalog: PathBuf,
    cli: PathBuf,
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

impl Lab {
    fn start(dir: &Path) -> Self {
        let topo = Topology::with_hosts(dir, &["c", "d", "e", "f", "w", "x"]);
        let mut lab = Lab {
            catalog: dir.join("catalog.db"),
            cli: binary("blocklab"),
            topo,
            db: None,
        };
        let coordinator = format!("{}:7400", lab.topo.coordinator_addr());
        let catalog = lab.catalog.display().to_string();
        let args = strings(&[
            "--listen",
            &coordinator,
            "--catalog",
            &catalog,
            "--heartbeat-interval",
            "500ms",
            "--heartbeat-timeout",
            "3s",
            "--insecure",
        ]);
        lab.topo
            .spawn("coordinator", "c", &binary("blocklab-coordinator"), &args);
        let cache = build_cache().display().to_string();
        for (role, id) in AGENTS {
            let work = dir.join(id).display().to_string();
            let args = strings(&[
                "--coordinator",
                &coordinator,
                "--host-id",
                id,
                "--labels",
                "lab",
                "--advertise-addr",
                &lab.topo.addr(role),
                "--work-dir",
                &work,
                "--build-cache",
                &cache,
                "--pg-user",
                &pg_user(),
                "--build-user",
                &build_user(),
            ]);
            lab.topo.spawn(id, role, &binary("blocklab-agent"), &args);
        }
        for (role, id) in WORKERS {
            let args = strings(&[
                "serve",
                "--coordinator",
                &coordinator,
                "--host-id",
                id,
                "--advertise-addr",
                &lab.topo.addr(role),
            ]);
            lab.topo.spawn(id, role, &binary("blocklab-worker"), &args);
        }
        lab
    }

    async fn db(&mut self) -> &SqlitePool {
        if self.db.is_none() {
            let start = Instant::now();
            while !self.catalog.exists() {
                assert!(start.elapsed() < Duration::from_secs(60), "no catalog");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let url = format!("sqlite://{}?mode=ro", self.catalog.display());
            self.db = Some(SqlitePool::connect(&url).await.expect("catalog"));
        }
        self.db.as_ref().expect("db")
    }

    fn submit(&self, name: &str, workers: u32, duration: &str) -> String {
        let spec = format!(
            r#"
name = "{name}"
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
duration = "{duration}"
[placement]
db_host_labels = ["lab"]
client_workers = {workers}
"#,
            pg_tarball().display()
        );
        self.topo.submit(&self.cli, name, &spec)
    }

    /// (state, pinned host, waiting reason) of a job.
    async fn job(&mut self, job: &str) -> (String, String, String) {
        sqlx::query_as(
            "SELECT state, COALESCE(db_host_id, ''), COALESCE(waiting, '') FROM jobs WHERE job_id = ?",
        )
        .bind(job)
        .fetch_optional(self.db().await)
        .await
        .expect("job")
        .unwrap_or_default()
    }

    async fn wait_until<F>(&mut self, what: &str, mut done: F)
    where
        F: AsyncFnMut(&mut Lab) -> bool,
    {
        let start = Instant::now();
        while !done(self).await {
            assert!(
                start.elapsed() < Duration::from_secs(15 * 60),
                "timed out waiting for {what}; logs in {}",
                self.topo.dir.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn measuring(&mut self, job: &str) {
        let job = job.to_string();
        self.wait_until("a run to measure", async |lab| {
            let stages: Vec<String> = sqlx::query_scalar("SELECT stage FROM runs WHERE job_id = ?")
                .bind(&job)
                .fetch_all(lab.db().await)
                .await
                .expect("runs");
            stages.iter().any(|s| s == "measuring")
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_spread_over_namespaced_hosts_and_share_the_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let mut lab = Lab::start(dir.path());
    let hosts_up = async |lab: &mut Lab| {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM hosts")
            .fetch_one(lab.db().await)
            .await
            .unwrap_or(0);
        n == 5
    };
    lab.wait_until("five hosts to attach", hosts_up).await;

    // The first job holds its host and one worker, the second the other worker; the third
    // waits for a worker, first come, first served. The first measures long enough for the
    // second to prepare and for the fourth to be pinned while it still holds its host.
    let first = lab.submit("first", 1, "30s");
    lab.measuring(&first).await;
    let second = lab.submit("second", 1, "30s");
    lab.measuring(&second).await;
    let third = lab.submit("third", 1, "10s");
    let jobs = [first.clone(), second.clone(), third.clone()];
    lab.wait_until("three jobs pinned", async |lab| {
        for j in &jobs {
            if lab.job(j).await.1.is_empty() {
                return false;
            }
        }
        true
    })
    .await;
    let mut hosts = BTreeSet::new();
    for j in &jobs {
        hosts.insert(lab.job(j).await.1);
    }
    assert_eq!(
        hosts,
        BTreeSet::from(["db-1".into(), "db-2".into(), "db-3".into()]),
        "three jobs on three hosts at once"
    );
    let fourth = lab.submit("fourth", 2, "3s");

    // Follow every job to its end, collecting the reasons the fourth waited for.
    let mut reasons: Vec<String> = Vec::new();
    let all = [first.clone(), second, third, fourth.clone()];
    let start = Instant::now();
    loop {
        let (_, _, waiting) = lab.job(&fourth).await;
        if !waiting.is_empty() && reasons.last() != Some(&waiting) {
            reasons.push(waiting);
        }
        let mut finished = 0;
        for j in &all {
            if matches!(lab.job(j).await.0.as_str(), "done" | "failed" | "cancelled") {
                finished += 1;
            }
        }
        if finished == all.len() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15 * 60),
            "jobs did not finish; logs in {}",
            lab.topo.dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for j in &all {
        let (done, failed): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'failed')
             FROM runs WHERE job_id = ?",
        )
        .bind(j)
        .fetch_one(lab.db().await)
        .await
        .expect("runs");
        assert_eq!(lab.job(j).await.0, "done", "job {j}");
        assert_eq!((done, failed), (1, 0), "job {j}: no run fails for waiting");
        assert_eq!(lab.job(j).await.2, "", "a finished job waits for nothing");
    }
    let host = lab.job(&first).await.1;
    assert_eq!(
        lab.job(&fourth).await.1,
        host,
        "the fourth goes to the host pinned longest ago"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r == &format!("waiting for database host {host}: busy with another job's run")),
        "the fourth job said it waited for its host: {reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("waiting for 2 client workers: ") && !r.contains(": 2 free")),
        "the fourth job said it waited for both workers: {reasons:?}"
    );
}
