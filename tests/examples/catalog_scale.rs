//! How the catalog answers at lab scale: jobs submitted through the real Control API (their
//! plans, cells and runs stored by the coordinator), then every run given a result and
//! per-second samples (10,000 runs and 1,000,000 samples by default), then the coordinator
//! started afresh on that catalog for each of `results`, `compare`, `export` (with and without
//! samples) and the dashboard's pages (index, job page, the history of tps), timed cold (the
//! first call after the start, nothing in memory; the finished jobs' results and the job
//! page's first view kept in the catalog, as the scheduler and a first view leave them) and
//! warm (the median of the next calls): once
//! with the catalog in a SQLite file, once in a PostgreSQL database (a throwaway server, as
//! the tests use).
//!
//!   cargo run --release -p blocklab-tests --example catalog_scale -- [JOBS] [SAMPLES_PER_RUN]
//!
//! JOBS (10) jobs of 1,000 runs each (4 page sizes x 5 client counts x 50 repetitions).

use std::time::{Duration, Instant};

use blocklab_coordinator::catalog::{Location, series};
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{
    CompareJobsRequest, ExportJobRequest, QueryResultsRequest, SubmitJobRequest,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

const SPEC: &str = r#"
name = "scale"
repetitions = 50
[source]
tarball = "/nonexistent/postgresql.tar.bz2"
[matrix]
block_size_kb = [4, 8, 16, 32]
clients = [1, 2, 4, 8, 16]
[workload]
builtin = "select-only"
scale = 1
duration = "100s"
"#;

struct Running {
    stop: watch::Sender<bool>,
    handle: tokio::task::JoinHandle<()>,
    addr: String,
    dashboard: std::net::SocketAddr,
}

async fn start(catalog: &Location) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = format!("http://{}", listener.local_addr().expect("addr"));
    let dashboard = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("dashboard port");
    let mut config = blocklab_coordinator::CoordinatorConfig::new(catalog.clone());
    config.dashboard = Some(dashboard);
    let (stop, mut rx) = watch::channel(false);
    let handle = tokio::spawn(async move {
        blocklab_coordinator::serve(config, listener, async move {
            let _ = rx.wait_for(|s| *s).await;
        })
        .await
        .expect("coordinator");
    });
    Running {
        stop,
        handle,
        addr,
        dashboard,
    }
}

async fn client(addr: &str) -> ControlClient<tonic::transport::Channel> {
    for _ in 0..100 {
        if let Ok(c) = ControlClient::connect(addr.to_string()).await {
            return c.max_decoding_message_size(1 << 30);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("coordinator at {addr} did not answer");
}

/// Waits until the dashboard accepts connections (it binds after the coordinator starts).
async fn wait_dashboard(addr: std::net::SocketAddr) {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("dashboard at {addr} did not answer");
}

/// Median wall time of `n` calls of `f`.
async fn median<F, Fut>(n: usize, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        times.push(t.elapsed());
    }
    times.sort();
    times[n / 2]
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> usize {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .expect("dashboard");
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut body = Vec::new();
    s.read_to_end(&mut body).await.expect("read");
    assert!(
        body.starts_with(b"HTTP/1.1 200"),
        "dashboard answered {:?}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    body.len()
}

/// The calls timed after the catalog is filled.
#[derive(Clone, Copy)]
enum Call {
    Results,
    Compare,
    Export,
    ExportSamples,
    Page,
    Index,
    History,
}

const CALLS: [Call; 7] = [
    Call::Results,
    Call::Compare,
    Call::Export,
    Call::ExportSamples,
    Call::Page,
    Call::Index,
    Call::History,
];

/// A call's time: the first after a coordinator start (nothing cached), then the median of
/// the next [`N`] calls.
#[derive(Clone, Copy, Default)]
struct Timing {
    cold: Duration,
    warm: Duration,
}

/// How many warm calls make each median.
const N: usize = 5;

/// The times of one backend.
struct Figures {
    submit: Duration,
    fill: Duration,
    /// The job pages' first views ever, which render them and keep them in the catalog: the
    /// median over the jobs, and the slowest.
    first_page: (Duration, Duration),
    runs: usize,
    calls: Vec<Timing>,
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let jobs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let per_run: i64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = measure(
        &Location::Sqlite(dir.path().join("catalog.db")),
        jobs,
        per_run,
    )
    .await;
    let pg = blocklab_testpg::PgServer::shared();
    let postgres = measure(&Location::Postgres(pg.database()), jobs, per_run).await;
    let samples = sqlite.runs as i64 * per_run;
    println!(
        "catalog: {jobs} jobs, {} runs, {samples} per-second samples; cold = the first call \
         after a coordinator start, warm = the median of the next {N}",
        sqlite.runs
    );
    println!(
        "| call | SQLite cold | SQLite warm | PostgreSQL cold | PostgreSQL warm |\n|---|---|---|---|---|"
    );
    println!(
        "| submit (all jobs, once) | {:.1?} | | {:.1?} | |",
        sqlite.submit, postgres.submit
    );
    println!(
        "| fill runs and samples (once) | {:.1?} | | {:.1?} | |",
        sqlite.fill, postgres.fill
    );
    println!(
        "| dashboard job page, first view ever (renders and keeps it): median of the {jobs} jobs' | {:.1?} | | {:.1?} | |",
        sqlite.first_page.0, postgres.first_page.0
    );
    println!(
        "| dashboard job page, first view ever: the slowest of the {jobs} | {:.1?} | | {:.1?} | |",
        sqlite.first_page.1, postgres.first_page.1
    );
    for (i, call) in CALLS.iter().enumerate() {
        let what = match call {
            Call::Results => "results (one job, 1,000 runs)".to_string(),
            Call::Compare => "compare (two jobs)".to_string(),
            Call::Export => "export (one job)".to_string(),
            Call::ExportSamples => {
                format!("export with samples (one job, {} samples)", 1000 * per_run)
            }
            Call::Page => "dashboard job page (viewed before)".to_string(),
            Call::Index => format!("dashboard index ({jobs} jobs)"),
            Call::History => format!("dashboard history of tps ({jobs} jobs)"),
        };
        let (s, p) = (sqlite.calls[i], postgres.calls[i]);
        println!(
            "| {what} | {:.1?} | {:.1?} | {:.1?} | {:.1?} |",
            s.cold, s.warm, p.cold, p.warm
        );
    }
}

/// One call of `call` through the running coordinator (`a` and `b`: the first and the last job).
async fn call(
    lab: &Running,
    c: &ControlClient<tonic::transport::Channel>,
    call: Call,
    a: &str,
    b: &str,
) {
    let mut c = c.clone();
    match call {
        Call::Results => {
            let r = c
                .query_results(QueryResultsRequest {
                    job_id: b.to_string(),
                    ..Default::default()
                })
                .await
                .expect("results");
            assert_eq!(r.into_inner().cells.len(), 20);
        }
        Call::Compare => {
            c.compare_jobs(CompareJobsRequest {
                job_a: a.to_string(),
                job_b: b.to_string(),
                metric: String::new(),
            })
            .await
            .expect("compare");
        }
        Call::Export => {
            c.export_job(ExportJobRequest {
                job_id: b.to_string(),
                ..Default::default()
            })
            .await
            .expect("export");
        }
        Call::ExportSamples => {
            let e = c
                .export_job(ExportJobRequest {
                    job_id: b.to_string(),
                    include_samples: true,
                    ..Default::default()
                })
                .await
                .expect("export with samples")
                .into_inner();
            assert!(!e.runs.is_empty());
        }
        Call::Page => {
            http_get(lab.dashboard, &format!("/jobs/{b}")).await;
        }
        Call::Index => {
            http_get(lab.dashboard, "/").await;
        }
        Call::History => {
            http_get(lab.dashboard, "/history/tps").await;
        }
    }
}

async fn measure(catalog: &Location, jobs: usize, per_run: i64) -> Figures {
    // 1. Jobs stored by the coordinator itself (no host attaches: they stay queued).
    let t = Instant::now();
    let lab = start(catalog).await;
    let mut c = client(&lab.addr).await;
    let mut ids = Vec::new();
    for _ in 0..jobs {
        // A coordinator takes the catalog's lease before it writes: until then it answers as
        // a standby.
        let mut tries = 0;
        let r = loop {
            match c
                .submit_job(SubmitJobRequest {
                    spec_toml: SPEC.to_string(),
                    files: Default::default(),
                })
                .await
            {
                Ok(r) => break r.into_inner(),
                Err(e) if e.code() == tonic::Code::Unavailable && tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("submit: {e}"),
            }
        };
        ids.push(r.job_id);
    }
    let _ = lab.stop.send(true);
    let _ = lab.handle.await;
    let submit = t.elapsed();

    // 2. Every run done with a result and its per-second samples, as the writer stores them.
    let t = Instant::now();
    sqlx::any::install_default_drivers();
    let url = match catalog {
        Location::Sqlite(p) => format!("sqlite://{}", p.display()),
        Location::Postgres(url) => url.clone(),
    };
    let db = sqlx::AnyPool::connect(&url).await.expect("catalog");
    let mut tx = db.begin().await.expect("tx");
    sqlx::query("INSERT INTO hosts (host_id, role, labels, address, version, facts_json, first_seen, last_seen) VALUES ('db', 'agent', '[]', '127.0.0.1', '', '{}', '', '')")
        .execute(&mut *tx).await.expect("host");
    let runs: Vec<(String, i64)> = sqlx::query_as("SELECT run_id, cell_index FROM runs")
        .fetch_all(&mut *tx)
        .await
        .expect("runs");
    for (i, (run_id, cell)) in runs.iter().enumerate() {
        let tps = 1000.0 + 10.0 * *cell as f64 + (i % 7) as f64;
        let bs = [4, 8, 16, 32][(*cell as usize) / 5] * 1024;
        sqlx::query("UPDATE runs SET state = 'done', stage = 'done', attempt = 1, db_host_id = 'db', block_size = $1, wal_block_size = 8192, started_at = '2026-12-01T00:00:00Z', finished_at = '2026-12-01T00:02:00Z' WHERE run_id = $2")
            .bind(i64::from(bs)).bind(run_id).execute(&mut *tx).await.expect("run");
        sqlx::query("INSERT INTO results (run_id, transactions, failures, tps, tps_incl_conn, latency_avg_ms, latency_stddev_ms, latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_p999_ms, latency_max_ms, connection_time_ms, measured_seconds, client_cpu_user_s, client_cpu_system_s) VALUES ($1, $2, 0, $3, $4, 1.0, 0.1, 1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 100.0, 1.0, 2.0)")
            .bind(run_id).bind((tps * 100.0) as i64).bind(tps).bind(tps * 0.99)
            .execute(&mut *tx).await.expect("result");
        // One statement per run for its samples (placeholders numbered $1, $2, ...).
        if per_run > 0 {
            let values: Vec<String> = (0..per_run)
                .map(|s| format!("(${}, ${}, ${}, 1.0, 0)", 3 * s + 1, 3 * s + 2, 3 * s + 3))
                .collect();
            let sql = format!(
                "INSERT INTO run_samples (run_id, second, transactions, latency_avg_ms, failures) VALUES {}",
                values.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for s in 0..per_run {
                q = q.bind(run_id).bind(s).bind(tps as i64);
            }
            q.execute(&mut *tx).await.expect("samples");
            // And the run's downsampled series, as the coordinator stores it with them.
            let samples: Vec<blocklab_measure::Sample> = (0..per_run)
                .map(|s| blocklab_measure::Sample {
                    second: s as u32,
                    transactions: tps as u64,
                    latency_avg_ms: 1.0,
                    failures: 0,
                })
                .collect();
            let (points, last) = series::downsample(&samples);
            sqlx::query("INSERT INTO run_series (run_id, last_second, point_count, points) VALUES ($1, $2, $3, $4)")
                .bind(run_id)
                .bind(i64::from(last.unwrap_or(0)))
                .bind(points.len() as i64)
                .bind(series::encode(&points))
                .execute(&mut *tx)
                .await
                .expect("series");
        }
    }
    sqlx::query("UPDATE jobs SET state = 'done', finished_at = '2026-12-01T01:00:00Z'")
        .execute(&mut *tx)
        .await
        .expect("jobs");
    tx.commit().await.expect("commit");
    db.close().await;
    let fill = t.elapsed();

    // As the scheduler does when a job finishes: its headline results are computed once and
    // kept in the catalog (`job_results`).
    let kept = blocklab_coordinator::catalog::Catalog::connect(catalog)
        .await
        .expect("catalog");
    for id in &ids {
        blocklab_coordinator::results::query_results(&kept, "", id, "")
            .await
            .expect("results kept");
    }
    // Every job's page viewed once, as a user's first view would (it renders the page and
    // keeps it), each timed: the median and the slowest of these first views. The page timed
    // below is then one viewed before.
    let mut first_pages = Vec::new();
    for id in &ids {
        let t = Instant::now();
        blocklab_coordinator::dashboard::job_page::job_page(&kept, &catalog.to_string(), id)
            .await
            .expect("job page kept");
        first_pages.push(t.elapsed());
    }
    first_pages.sort();
    let first_page = (
        first_pages[first_pages.len() / 2],
        *first_pages.last().expect("a job"),
    );
    drop(kept);

    // 3. Each call timed on a coordinator started afresh on that catalog: the first call
    // (cold), then the median of the next ones (warm).
    let (a, b) = (ids[0].clone(), ids[ids.len() - 1].clone());
    let mut calls = Vec::new();
    for which in CALLS {
        let lab = start(catalog).await;
        let c = client(&lab.addr).await;
        wait_dashboard(lab.dashboard).await;
        let t = Instant::now();
        call(&lab, &c, which, &a, &b).await;
        let cold = t.elapsed();
        let warm = median(N, || call(&lab, &c, which, &a, &b)).await;
        calls.push(Timing { cold, warm });
        drop(c);
        let _ = lab.stop.send(true);
        let _ = lab.handle.await;
    }
    Figures {
        submit,
        fill,
        first_page,
        runs: runs.len(),
        calls,
    }
}
