//! The spine, end to end with real parts: a coordinator, an agent and a worker; PostgreSQL
//! built from the release tarball at 8K and 16K data pages; a short TPC-B-like job; the
//! catalog rows; the block sizes proven by the live servers; and a second job that reuses
//! the cached builds without rebuilding.

use std::time::{Duration, SystemTime};

use blocklab_proto::v1::{GetJobRequest, ListHostsRequest, SubmitJobRequest};
use blocklab_tests::{Lab, LabOptions, build_cache, pg_tarball};
use sqlx::Row;

fn spec(name: &str) -> String {
    format!(
        r#"
name = "{name}"
repetitions = 1
[source]
tarball = "{tarball}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8, 16]
wal_block_size_kb = [8]
clients = [2]
[settings]
shared_buffers = "32MB"
[workload]
builtin = "tpcb-like"
scale = 1
duration = "3s"
warmup = "1s"
protocol = "prepared"
"#,
        tarball = pg_tarball().display()
    )
}

async fn run_job(
    client: &mut blocklab_proto::v1::control_client::ControlClient<tonic::transport::Channel>,
    name: &str,
) -> String {
    let submitted = client
        .submit_job(SubmitJobRequest {
            spec_toml: spec(name),
            ..Default::default()
        })
        .await
        .expect("submit")
        .into_inner();
    assert_eq!((submitted.cells, submitted.runs), (2, 2));
    let mut out = Vec::new();
    let last = blocklab_cli::watch(client, &submitted.job_id, &mut out)
        .await
        .expect("watch");
    let log = String::from_utf8_lossy(&out).to_string();
    let job = client
        .get_job(GetJobRequest {
            job_id: submitted.job_id.clone(),
            ..Default::default()
        })
        .await
        .expect("job")
        .into_inner();
    assert_eq!(
        last.map(|j| j.state),
        Some("done".to_string()),
        "job should finish: {log}\n{}",
        blocklab_cli::render_job(&job)
    );
    // While a run measured, watch showed its live tps (reported by the worker every second).
    assert!(
        log.contains("tps live"),
        "live tps in the watch output:\n{log}"
    );
    submitted.job_id
}

/// `path` (and with `walk` everything under it) belongs to `uid`, and neither group nor others
/// may write it.
fn assert_agents(path: &std::path::Path, uid: u32, walk: bool) {
    use std::os::unix::fs::MetadataExt;
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).expect("stat");
        assert_eq!(m.uid(), uid, "{} belongs to the agent", p.display());
        if !m.file_type().is_symlink() {
            assert_eq!(m.mode() & 0o7022, 0, "{} mode {:o}", p.display(), m.mode());
        }
        if walk && m.is_dir() {
            stack.extend(
                std::fs::read_dir(&p)
                    .expect("read")
                    .flatten()
                    .map(|e| e.path()),
            );
        }
    }
}

fn marker_mtimes() -> Vec<(String, SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(build_cache())
        .expect("build cache exists")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let m = e.path().join(".blocklab-complete");
            std::fs::metadata(&m)
                .ok()
                .and_then(|md| md.modified().ok())
                .map(|t| (e.file_name().to_string_lossy().to_string(), t))
        })
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_k_versus_sixteen_k_end_to_end_with_cached_rebuild() {
    spine(LabOptions {
        dashboard: true,
        ..LabOptions::default()
    })
    .await;
}

/// The same, with the catalog on a PostgreSQL server.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_spine_with_the_catalog_on_postgresql() {
    spine(LabOptions {
        postgres_catalog: true,
        dashboard: true,
        ..LabOptions::default()
    })
    .await;
}

async fn spine(opts: LabOptions) {
    let lab = Lab::start_with(opts).await;
    let mut client = lab.client().await;

    // Host facts arrived with the agent's hello.
    let hosts = client
        .list_hosts(ListHostsRequest {})
        .await
        .expect("hosts")
        .into_inner()
        .hosts;
    let agent = hosts
        .iter()
        .find(|h| h.role() == blocklab_proto::v1::Role::Agent)
        .expect("agent listed");
    let facts: serde_json::Value = serde_json::from_str(&agent.facts_json).expect("facts are JSON");
    for key in ["cpu_model", "memory_bytes", "kernel", "os_name"] {
        assert!(
            !facts[key].is_null(),
            "facts lack {key}: {}",
            agent.facts_json
        );
    }

    let first = tokio::time::timeout(
        Duration::from_secs(30 * 60),
        run_job(&mut client, "e2e-first"),
    )
    .await
    .expect("first job in time");

    // Proven block sizes and tps, per cell.
    let results = blocklab_tests::query_results(&mut client, &first).await;
    assert_eq!(results.cells.len(), 2);
    let proven: Vec<(u32, u32)> = results
        .cells
        .iter()
        .map(|c| (c.proven_block_size, c.proven_wal_block_size))
        .collect();
    assert_eq!(proven, vec![(8192, 8192), (16384, 8192)]);
    for c in &results.cells {
        assert_eq!(c.runs_ok, 1, "{c:?}");
        assert!(c.tps_mean > 0.0, "{c:?}");
    }
    assert!(results.cells[0].is_baseline);
    assert!(results.cells[1].pct_change_vs_baseline.is_some());

    // The catalog rows, read straight from the catalog (the SQLite file or the database).
    let db = lab.catalog_sql().await;

    // The coordinator serves a dashboard: the finished job's page was rendered and kept when
    // the job finished, before anyone viewed it, for the catalog path the dashboard names.
    let page_kept = || {
        let (db, first) = (db.clone(), first.clone());
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM job_pages WHERE job_id = $1")
                .bind(&first)
                .fetch_one(&db)
                .await
                .expect("job_pages")
                == 1
        }
    };
    blocklab_tests::wait_until(Duration::from_secs(30), "the job's page kept", page_kept).await;
    let (path, page): (String, String) =
        sqlx::query_as("SELECT catalog_path, page_html FROM job_pages WHERE job_id = $1")
            .bind(&first)
            .fetch_one(&db)
            .await
            .expect("the kept page");
    assert_eq!(path, lab.catalog().to_string());
    assert!(
        page.contains(&first) && page.contains("<h2 id=\"results\">"),
        "{page}"
    );
    let rows = sqlx::query("SELECT block_size_kb, block_size, wal_block_size, tps, transactions, failures, latency_p50_ms, latency_p99_ms, latency_max_ms, server_version FROM results_v WHERE job_id = $1 ORDER BY cell_index")
        .bind(&first)
        .fetch_all(&db)
        .await
        .expect("results_v");
    assert_eq!(rows.len(), 2);
    for row in &rows {
        let kb: i64 = row.get("block_size_kb");
        assert_eq!(row.get::<i64, _>("block_size"), kb * 1024);
        assert_eq!(row.get::<i64, _>("wal_block_size"), 8192);
        assert!(row.get::<i64, _>("transactions") > 0);
        assert_eq!(row.get::<i64, _>("failures"), 0);
        let (p50, p99, max): (f64, f64, f64) = (
            row.get("latency_p50_ms"),
            row.get("latency_p99_ms"),
            row.get("latency_max_ms"),
        );
        assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{p50} {p99} {max}");
        assert!(row.get::<String, _>("server_version").starts_with("15."));
    }
    let settings: i64 = sqlx::query_scalar("SELECT count(*) FROM run_settings s JOIN runs r USING (run_id) WHERE r.job_id = $1 AND s.name = 'shared_buffers'")
        .bind(&first)
        .fetch_one(&db)
        .await
        .expect("settings");
    assert_eq!(settings, 2, "effective shared_buffers stored per run");
    let samples: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM run_samples s JOIN runs r USING (run_id) WHERE r.job_id = $1",
    )
    .bind(&first)
    .fetch_one(&db)
    .await
    .expect("samples");
    assert!(samples >= 4, "per-second samples stored: {samples}");

    // The builds entered the cache as the agent's files: owned by the agent's uid, writable by
    // nobody else, no set-id bits; the servers above ran from them.
    let keys: Vec<String> =
        sqlx::query_scalar("SELECT build_key FROM builds WHERE job_id = $1 ORDER BY block_size_kb")
            .bind(&first)
            .fetch_all(&db)
            .await
            .expect("build keys");
    assert_eq!(keys.len(), 2);
    let me = nix::unistd::geteuid().as_raw();
    assert_agents(&build_cache(), me, false);
    for key in &keys {
        assert_agents(&build_cache().join(key), me, true);
    }

    // Clusters were stopped and removed after each run.
    let runs_dir = lab.dir.path().join("agent").join("runs");
    let left: Vec<_> = std::fs::read_dir(&runs_dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "run directories left behind: {left:?}");

    // A second job with the same builds reuses them: reported reused, markers untouched.
    let markers = marker_mtimes();
    let second = tokio::time::timeout(
        Duration::from_secs(10 * 60),
        run_job(&mut client, "e2e-second"),
    )
    .await
    .expect("second job in time");
    let builds = sqlx::query(
        "SELECT build_key, reused FROM builds WHERE job_id = $1 ORDER BY block_size_kb",
    )
    .bind(&second)
    .fetch_all(&db)
    .await
    .expect("builds");
    assert_eq!(builds.len(), 2);
    assert!(
        builds.iter().all(|b| b.get::<i64, _>("reused") == 1),
        "second job reused both builds"
    );
    let second_keys: Vec<String> = builds.iter().map(|b| b.get("build_key")).collect();
    assert_eq!(keys, second_keys, "same cache keys");
    assert_eq!(marker_mtimes(), markers, "no build was redone");
    let reused_runs: i64 =
        sqlx::query_scalar("SELECT count(*) FROM runs WHERE job_id = $1 AND build_reused = 1")
            .bind(&second)
            .fetch_one(&db)
            .await
            .expect("runs");
    assert_eq!(reused_runs, 2);
    lab.shutdown().await;
}
