//! Support for blocklab's end-to-end tests: start the real coordinator, agent and worker
//! in-process on loopback, and wait for things to happen.

pub mod netns;

use std::path::PathBuf;
use std::time::Duration;

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{ListHostsRequest, ListJobsRequest};
use tokio::sync::watch;
use tonic::transport::Channel;

/// Where the PostgreSQL source tarball is (set by deploy/setup.sh).
pub fn pg_tarball() -> PathBuf {
    let p = PathBuf::from(
        std::env::var("BLOCKLAB_PG_TARBALL")
            .unwrap_or_else(|_| "/var/cache/blocklab/src/postgresql-15.tar.bz2".into()),
    );
    assert!(
        p.is_file(),
        "PostgreSQL source tarball {} is missing: run the tests through deploy/test.sh, which fetches it",
        p.display()
    );
    p
}

/// The PostgreSQL `major` release tarball `deploy/setup.sh` fetched from Debian's source
/// packages (`BLOCKLAB_PG17_TARBALL`, ..., else `/var/cache/blocklab/src/postgresql-MAJOR.tar.*`).
pub fn pg_tarball_of(major: u32) -> PathBuf {
    if let Ok(p) = std::env::var(format!("BLOCKLAB_PG{major}_TARBALL")) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "BLOCKLAB_PG{major}_TARBALL={} is not a file: run deploy/setup.sh, which fetches it",
            p.display()
        );
        return p;
    }
    let dir = std::path::Path::new("/var/cache/blocklab/src");
    ["bz2", "xz", "gz"]
        .iter()
        .map(|ext| dir.join(format!("postgresql-{major}.tar.{ext}")))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no PostgreSQL {major} source tarball in {}: run deploy/setup.sh, which fetches it \
                 from Debian's postgresql-{major} source package",
                dir.display()
            )
        })
}

/// The shared build cache, so builds are reused across tests and test runs.
pub fn build_cache() -> PathBuf {
    PathBuf::from(
        std::env::var("BLOCKLAB_BUILD_CACHE")
            .unwrap_or_else(|_| "/var/cache/blocklab/builds".into()),
    )
}

/// The unprivileged OS user that runs initdb and postgres.
pub fn pg_user() -> String {
    std::env::var("BLOCKLAB_PG_USER").unwrap_or_else(|_| "blocklab".into())
}

/// The unprivileged OS user that builds PostgreSQL (not the servers' user).
pub fn build_user() -> String {
    std::env::var("BLOCKLAB_BUILD_USER").unwrap_or_else(|_| "blocklab-build".into())
}

/// A coordinator, one agent and one worker running in this process.
pub struct Lab {
    pub dir: tempfile::TempDir,
    pub addr: String,
    stop: watch::Sender<bool>,
    handles: Vec<tokio::task::JoinHandle<()>>,
    children: Vec<std::process::Child>,
    catalog: blocklab_coordinator::catalog::Location,
    /// The PostgreSQL server of a lab whose catalog is on PostgreSQL.
    _pg: Option<std::sync::Arc<blocklab_testpg::PgServer>>,
}

/// What a lab runs besides the coordinator and the agent.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Workers started in this process.
    pub workers_in_process: usize,
    /// Workers started as `blocklab-worker serve` processes.
    pub worker_processes: usize,
    /// Agents started in this process (labels `e2e`): `e2e-db`, then `e2e-db-1`, ...
    pub agents: usize,
    /// Keep the catalog in a fresh database on a throwaway PostgreSQL server instead of a
    /// SQLite file in the lab's directory.
    pub postgres_catalog: bool,
    /// The agents' dump directory (`--dumps-dir`); default each agent's own.
    pub dumps_dir: Option<PathBuf>,
    /// Serve the coordinator's dashboard on a free loopback port.
    pub dashboard: bool,
}

impl Default for LabOptions {
    fn default() -> Self {
        Self {
            workers_in_process: 1,
            worker_processes: 0,
            agents: 1,
            postgres_catalog: false,
            dumps_dir: None,
            dashboard: false,
        }
    }
}

/// The `blocklab-worker` binary of this workspace (built if it is not there yet).
pub fn worker_binary() -> PathBuf {
    binary("blocklab-worker")
}

/// A binary of this workspace, built if it is not there yet.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let target = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .to_path_buf();
    let bin = target.join(name);
    if !bin.is_file() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--bin", name])
            .stdin(std::process::Stdio::null())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building {name} failed");
    }
    bin
}

async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

impl Lab {
    /// Starts the three daemons and waits until both hosts are attached.
    pub async fn start() -> Self {
        Self::start_with(LabOptions::default()).await
    }

    /// Starts a coordinator, an agent and the workers `opts` asks for, and waits until all
    /// of them are attached.
    pub async fn start_with(opts: LabOptions) -> Self {
        Self::start_with_cache(opts, build_cache()).await
    }

    /// Like [`Lab::start_with`], with the agents building into `cache` instead of the shared
    /// build cache (a fresh one makes every build a cold build).
    pub async fn start_with_cache(opts: LabOptions, cache: PathBuf) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()))
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().expect("tempdir");
        // The agent's run directories must be reachable by the PostgreSQL user.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stop_rx) = watch::channel(false);
        let mut handles = Vec::new();

        let (pg, catalog) = if opts.postgres_catalog {
            let pg = blocklab_testpg::PgServer::shared();
            let url = pg.database();
            (
                Some(pg),
                blocklab_coordinator::catalog::Location::Postgres(url),
            )
        } else {
            let path = dir.path().join("catalog.db");
            (None, blocklab_coordinator::catalog::Location::Sqlite(path))
        };
        let mut config = blocklab_coordinator::CoordinatorConfig::new(catalog.clone());
        config.heartbeat_interval = Duration::from_millis(500);
        config.heartbeat_timeout = Duration::from_secs(5);
        let dashboard = opts.dashboard.then(|| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
        });
        config.dashboard = dashboard;
        let rx = stop_rx.clone();
        handles.push(tokio::spawn(async move {
            blocklab_coordinator::serve(config, listener, stopped(rx))
                .await
                .expect("coordinator");
        }));

        for i in 0..opts.agents {
            let mut agent = blocklab_agent::AgentConfig::default_for(&addr);
            agent.host_id = if i == 0 {
                "e2e-db".into()
            } else {
                format!("e2e-db-{i}")
            };
            agent.labels = vec!["e2e".into()];
            agent.advertise_addr = "127.0.0.1".into();
            agent.work_dir = dir.path().join(if i == 0 {
                "agent".to_string()
            } else {
                format!("agent-{i}")
            });
            agent.build_cache = cache.clone();
            agent.dumps_dir = opts.dumps_dir.clone();
            agent.pg_user = Some(pg_user());
            agent.build_user = Some(build_user());
            if i > 0 {
                // Agents on one address pick their servers' ports from ranges of their own.
                let base = agent.port_range.0 + 100 * i as u16;
                agent.port_range = (base, base + 99);
            }
            let rx = stop_rx.clone();
            handles.push(tokio::spawn(async move {
                blocklab_agent::serve(agent, stopped(rx))
                    .await
                    .expect("agent");
            }));
        }

        for i in 0..opts.workers_in_process {
            let mut worker = blocklab_worker::WorkerConfig::default_for(&addr);
            worker.host_id = if i == 0 {
                "e2e-client".into()
            } else {
                format!("e2e-client-{i}")
            };
            worker.advertise_addr = "127.0.0.1".into();
            let rx = stop_rx.clone();
            handles.push(tokio::spawn(async move {
                blocklab_worker::serve(worker, stopped(rx))
                    .await
                    .expect("worker");
            }));
        }
        let mut children = Vec::new();
        for i in 0..opts.worker_processes {
            let log = std::fs::File::create(dir.path().join(format!("worker-process-{i}.log")))
                .expect("log file");
            let child = std::process::Command::new(worker_binary())
                .args([
                    "serve",
                    "--coordinator",
                    &addr,
                    "--host-id",
                    &format!("e2e-process-{i}"),
                    "--advertise-addr",
                    "127.0.0.1",
                ])
                .env("RUST_LOG", "info")
                .stdin(std::process::Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("start blocklab-worker");
            children.push(child);
        }
        let expected_hosts = opts.agents + opts.workers_in_process + opts.worker_processes;

        let lab = Self {
            dir,
            addr,
            stop,
            handles,
            children,
            catalog,
            _pg: pg,
        };
        let mut client = lab.client().await;
        wait_until(Duration::from_secs(30), "agent and worker attach", || {
            let mut c = client.clone();
            async move {
                c.list_hosts(ListHostsRequest {})
                    .await
                    .map(|r| r.into_inner().hosts.iter().filter(|h| h.up).count() == expected_hosts)
                    .unwrap_or(false)
            }
        })
        .await;
        let _ = client.list_jobs(ListJobsRequest {}).await;
        lab
    }

    pub async fn client(&self) -> ControlClient<Channel> {
        for _ in 0..100 {
            if let Ok(mut c) = ControlClient::connect(self.addr.clone()).await
                && c.list_jobs(ListJobsRequest {}).await.is_ok()
            {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("coordinator at {} did not answer", self.addr);
    }

    /// The SQLite catalog file (a lab with a PostgreSQL catalog has none: see
    /// [`Lab::catalog_sql`]).
    pub fn catalog_path(&self) -> PathBuf {
        self.dir.path().join("catalog.db")
    }

    /// Where the (first) agent keeps the server logs of the runs it removed.
    pub fn server_logs(&self) -> PathBuf {
        self.dir.path().join("agent").join("server-logs")
    }

    /// Where the lab's catalog is.
    pub fn catalog(&self) -> &blocklab_coordinator::catalog::Location {
        &self.catalog
    }

    /// A connection pool on the lab's catalog, whichever backend it is on, for reading its
    /// rows directly (queries with `$N` placeholders run on both).
    pub async fn catalog_sql(&self) -> sqlx::AnyPool {
        sqlx::any::install_default_drivers();
        let url = match &self.catalog {
            blocklab_coordinator::catalog::Location::Sqlite(p) => {
                format!("sqlite://{}?mode=ro", p.display())
            }
            blocklab_coordinator::catalog::Location::Postgres(url) => url.clone(),
        };
        sqlx::AnyPool::connect(&url)
            .await
            .expect("open the catalog")
    }

    /// Stops the daemons (the agent stops and removes any cluster it still runs).
    pub async fn shutdown(mut self) {
        for c in &mut self.children {
            let _ = std::process::Command::new("kill")
                .arg(c.id().to_string())
                .status();
            let _ = c.wait();
        }
        let _ = self.stop.send(true);
        for h in self.handles {
            let _ = tokio::time::timeout(Duration::from_secs(60), h).await;
        }
    }
}

/// A job's results of its headline metric through the QueryResults RPC, as the wire gives
/// them.
pub async fn query_results(
    client: &mut ControlClient<Channel>,
    job_id: &str,
) -> blocklab_proto::v1::QueryResultsResponse {
    client
        .query_results(blocklab_proto::v1::QueryResultsRequest {
            job_id: job_id.to_string(),
            ..Default::default()
        })
        .await
        .expect("results")
        .into_inner()
}

/// The job id `blocklab submit` prints: its first line of stdout, the id alone.
/// A job's export through the ExportJob RPC, as the domain type (with the runs' per-second
/// samples when asked).
pub async fn export_job(
    client: &mut ControlClient<Channel>,
    job_id: &str,
    samples: bool,
) -> blocklab_measure::job::JobExport {
    client
        .export_job(blocklab_proto::v1::ExportJobRequest {
            job_id: job_id.to_string(),
            metric: String::new(),
            include_samples: samples,
        })
        .await
        .expect("export")
        .into_inner()
        .into()
}

pub fn submitted_job_id(stdout: &str) -> String {
    let id = stdout.lines().next().unwrap_or_default().trim();
    assert!(
        id.len() == 36 && !id.contains(char::is_whitespace),
        "submit printed {stdout:?}, not a job id"
    );
    id.to_string()
}

/// Polls `check` until it returns true or `timeout` passes (then panics naming `what`).
pub async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out after {timeout:?} waiting for: {what}");
}

/// Finds the `postmaster.pid` files under `dir` (the agent's running clusters).
pub fn postmaster_pids(dir: &std::path::Path) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(postmaster_pids(&p));
        } else if p.file_name().is_some_and(|n| n == "postmaster.pid")
            && let Some(pid) = std::fs::read_to_string(&p)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.trim().parse().ok()))
        {
            out.push(pid);
        }
    }
    out
}

/// Submits a spec and follows the job until it finishes; returns the job id and its final state.
pub async fn run_job(
    client: &mut ControlClient<Channel>,
    spec: &str,
    timeout: Duration,
) -> (String, String) {
    run_job_with_files(client, spec, &[], timeout).await
}

/// Like [`run_job`], sending `files` (path as the spec names it, text) with the spec.
pub async fn run_job_with_files(
    client: &mut ControlClient<Channel>,
    spec: &str,
    files: &[(&str, &str)],
    timeout: Duration,
) -> (String, String) {
    let submitted = client
        .submit_job(blocklab_proto::v1::SubmitJobRequest {
            spec_toml: spec.to_string(),
            files: files
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
        .await
        .expect("submit")
        .into_inner();
    let state = follow_job(client, &submitted.job_id, timeout).await;
    (submitted.job_id, state)
}

/// Follows a job (as `blocklab watch` does) until it finishes; returns its final state.
pub async fn follow_job(
    client: &mut ControlClient<Channel>,
    job_id: &str,
    timeout: Duration,
) -> String {
    let mut out = Vec::new();
    let last = tokio::time::timeout(timeout, blocklab_cli::watch(client, job_id, &mut out))
        .await
        .expect("job finished in time")
        .expect("watch");
    last.map(|j| j.state).unwrap_or_default()
}

/// The verdict a cell's own figures imply, by the documented rule (README, statistics):
/// equivalent when the TOST q-value is below 0.05 (its 90% CI of the change inside the band);
/// faster or slower when the q-value is below 0.05 and the 95% CI of the change excludes 0,
/// by the sign of the change and the metric's direction; otherwise inconclusive; with fewer than
/// 3 runs in the cell, too few runs.
pub fn implied_verdict(c: &blocklab_proto::v1::CellResult) -> &'static str {
    implied_verdict_at(c, 0.05)
}

/// [`implied_verdict`] with the q-values compared with `alpha`: a job under `until =
/// "decided"` judges at 0.05 over its planned looks.
pub fn implied_verdict_at(c: &blocklab_proto::v1::CellResult, alpha: f64) -> &'static str {
    if c.is_baseline {
        return "baseline";
    }
    if c.zero_variance {
        return if c.pct_change_vs_baseline == Some(0.0) {
            "identical, zero variance"
        } else {
            "differs, zero variance"
        };
    }
    if c.n < 3 {
        // Below the calibrated n (blocklab_report::stats::MIN_RUNS_TO_DECIDE): not judged.
        return if c.q_value.is_some() {
            "too few runs"
        } else {
            "insufficient data"
        };
    }
    let (Some(q), Some(tost_q), Some(lo), Some(hi)) = (
        c.q_value,
        c.tost_q_value,
        c.pct_change_ci95_low,
        c.pct_change_ci95_high,
    ) else {
        return "insufficient data";
    };
    if tost_q < alpha {
        let (l90, h90) = (
            c.pct_change_ci90_low.unwrap_or(f64::NAN),
            c.pct_change_ci90_high.unwrap_or(f64::NAN),
        );
        assert!(
            l90 > -c.equivalence_pct && h90 < c.equivalence_pct,
            "equivalent needs the 90% CI inside the band: {c:?}"
        );
        return "equivalent";
    }
    if q < alpha && (lo > 0.0 || hi < 0.0) {
        let up = lo > 0.0;
        return if up == c.higher_is_better {
            "faster"
        } else {
            "slower"
        };
    }
    "inconclusive"
}
