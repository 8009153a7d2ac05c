//! The measured window is the window, cold means cold, and a window's WAL cost is measured:
//! end to end with a coordinator, an agent, a worker and real PostgreSQL 8K builds.
//!
//! - A 4 s warm-up before a 4 s window: the stored pg_stat_database `xact_commit` delta is
//!   the window's transactions (not warm-up + window).
//! - `layout.cold`: a restart after the load empties shared buffers, so a select-only window
//!   reads far more blocks than the same window on the warm server.
//! - A cell whose `max_wal_size` forces checkpoints inside the window: flagged, counted, and
//!   it costs more WAL and full-page-image bytes per transaction than the default cell.
//! - `layout.archive_wal`: the segments archived in the window, per transaction, are the WAL
//!   it made, to within a segment at each end.

use std::time::Duration;

use blocklab_tests::{Lab, pg_tarball, run_job};
use sqlx::{Row, SqlitePool};

/// The tests share the machine's two cores and its page cache: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn spec(name: &str, settings: &str, workload: &str, layout: &str) -> String {
    format!(
        r#"
name = "{name}"
[source]
tarball = "{tarball}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [2]
[settings]
{settings}
[workload]
scale = 1
protocol = "prepared"
{workload}
[layout]
{layout}
"#,
        tarball = pg_tarball().display()
    )
}

async fn catalog(lab: &Lab) -> SqlitePool {
    SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("open catalog")
}

/// A run's stored statistics delta (0 when absent).
async fn stat(db: &SqlitePool, run_id: &str, name: &str) -> f64 {
    sqlx::query_scalar("SELECT delta FROM run_stats WHERE run_id = ? AND name = ?")
        .bind(run_id)
        .bind(name)
        .fetch_optional(db)
        .await
        .expect("run_stats")
        .unwrap_or(0.0)
}

async fn metric(db: &SqlitePool, run_id: &str, name: &str) -> f64 {
    sqlx::query_scalar("SELECT value FROM run_metrics WHERE run_id = ? AND name = ?")
        .bind(run_id)
        .bind(name)
        .fetch_optional(db)
        .await
        .expect("run_metrics")
        .unwrap_or_else(|| panic!("run {run_id} has no metric {name}"))
}

async fn done_job(lab: &Lab, spec: &str) -> String {
    let mut client = lab.client().await;
    let (job, state) = run_job(&mut client, spec, Duration::from_secs(30 * 60)).await;
    let detail = client
        .get_job(blocklab_proto::v1::GetJobRequest {
            job_id: job.clone(),
            run: 1,
        })
        .await
        .expect("job")
        .into_inner();
    assert_eq!(
        state,
        "done",
        "job {job}:\n{}",
        detail
            .run_detail
            .as_ref()
            .map(blocklab_cli::render_run_detail)
            .unwrap_or_default()
    );
    job
}

/// (run id, transactions, tps) of each run of a job, by cell.
async fn runs(db: &SqlitePool, job: &str) -> Vec<(String, i64, f64, i64)> {
    sqlx::query("SELECT r.run_id, res.transactions, res.tps, r.cell_index FROM runs r JOIN results res USING (run_id) WHERE r.job_id = ? ORDER BY r.cell_index, r.repetition")
        .bind(job)
        .fetch_all(db)
        .await
        .expect("runs")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_statistics_delta_covers_the_window_not_the_warm_up() {
    let _one = ONE_AT_A_TIME.lock().await;
    let lab = Lab::start().await;
    let job = done_job(
        &lab,
        &spec(
            "window-only",
            r#"shared_buffers = "32MB""#,
            "builtin = \"tpcb-like\"\nwarmup = \"4s\"\nduration = \"4s\"",
            "",
        ),
    )
    .await;
    let db = catalog(&lab).await;
    let runs = runs(&db, &job).await;
    assert_eq!(runs.len(), 1);
    let (run, txns, tps, _) = &runs[0];
    let commits = stat(&db, run, "db.xact_commit").await;
    let window = *txns as f64;
    eprintln!("xact_commit delta {commits}, window transactions {txns}, {tps:.0} tps");
    // The tolerance: a busy backend publishes its counters at most once a second, so the
    // start snapshot may miss up to a second of warm-up commits (which then land in the
    // delta); plus one in-flight transaction per client at the window's end and the agent's
    // own statistics queries. Warm-up + window would be about twice the window.
    let slack = tps * 1.0 + 2.0 + 50.0;
    assert!(
        commits >= window - 0.02 * window && commits <= window + slack,
        "xact_commit delta {commits} is not the window's {txns} transactions (+{slack:.0} allowed)"
    );
    let (start, end): (String, String) =
        sqlx::query_as("SELECT stats_start_at, stats_end_at FROM runs WHERE run_id = ?")
            .bind(run)
            .fetch_one(&db)
            .await
            .expect("snapshot times");
    let at = |t: &str| humantime::parse_rfc3339(t).expect("rfc3339");
    let span = at(&end)
        .duration_since(at(&start))
        .expect("end after start");
    eprintln!("statistics span {span:?} for a 4 s window");
    assert!(
        span >= Duration::from_millis(3900) && span < Duration::from_millis(5500),
        "the snapshots span {span:?}, not the 4 s window"
    );
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cold_window_reads_what_a_warm_one_finds_in_shared_buffers() {
    let _one = ONE_AT_A_TIME.lock().await;
    let lab = Lab::start().await;
    // Scale 1 (about 16 MB) fits in 128 MB of shared buffers; a 1 s select-only window.
    let workload = "builtin = \"select-only\"\nduration = \"1s\"";
    let settings = r#"shared_buffers = "128MB""#;
    let warm = done_job(&lab, &spec("warm", settings, workload, "")).await;
    let cold = done_job(
        &lab,
        &spec(
            "cold",
            settings,
            workload,
            "cold = true\ndrop_os_cache = true",
        ),
    )
    .await;
    let db = catalog(&lab).await;
    let (warm_run, cold_run) = (&runs(&db, &warm).await[0].0, &runs(&db, &cold).await[0].0);
    let warm_reads = stat(&db, warm_run, "db.blks_read").await;
    let cold_reads = stat(&db, cold_run, "db.blks_read").await;
    eprintln!("blks_read in the window: warm {warm_reads}, cold {cold_reads}");
    assert!(
        cold_reads > 500.0 && cold_reads > 4.0 * warm_reads.max(1.0),
        "cold {cold_reads} vs warm {warm_reads} blocks read"
    );
    let choices = |run: &str| {
        let run = run.to_string();
        let db = db.clone();
        async move {
            let r =
                sqlx::query("SELECT server_restarted, os_cache_dropped FROM runs WHERE run_id = ?")
                    .bind(&run)
                    .fetch_one(&db)
                    .await
                    .expect("choices");
            (r.get::<bool, _>(0), r.get::<bool, _>(1))
        }
    };
    assert_eq!(choices(warm_run).await, (false, false));
    assert_eq!(choices(cold_run).await, (true, true));
    // The run detail says what was done.
    let mut client = lab.client().await;
    let d = client
        .get_job(blocklab_proto::v1::GetJobRequest {
            job_id: cold.clone(),
            run: 1,
        })
        .await
        .expect("job")
        .into_inner();
    let text = blocklab_cli::render_run_detail(d.run_detail.as_ref().expect("detail"));
    assert!(
        text.contains("server restarted yes, OS page cache dropped yes"),
        "{text}"
    );
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forced_checkpoints_show_in_the_window_and_cost_wal_per_transaction() {
    let _one = ONE_AT_A_TIME.lock().await;
    let lab = Lab::start().await;
    let settings = "shared_buffers = \"32MB\"\n\
        [settings_variants.default]\n\
        [settings_variants.forced]\n\
        max_wal_size = \"32MB\"\n\
        checkpoint_completion_target = 0.1";
    // With max_wal_size at two 16 MB segments every segment switch requests a checkpoint,
    // and at this completion target it ends within about 2 MB of WAL: a window writing
    // well over 16 MB (about 2 MB/s here) holds at least one complete checkpoint.
    let workload = "builtin = \"tpcb-like\"\nduration = \"12s\"\nwarmup = \"1s\"";
    let job = done_job(&lab, &spec("checkpoints", settings, workload, "")).await;
    let db = catalog(&lab).await;
    let runs = runs(&db, &job).await;
    assert_eq!(runs.len(), 2);
    let mut per_cell = Vec::new();
    for (run, txns, _, cell) in &runs {
        let label: String =
            sqlx::query_scalar("SELECT label FROM cells WHERE cell_index = ? AND job_id = ?")
                .bind(cell)
                .bind(&job)
                .fetch_one(&db)
                .await
                .expect("cell");
        let variant = if label.contains("forced") {
            "forced"
        } else {
            "default"
        };
        let suspect: String =
            sqlx::query_scalar("SELECT coalesce(suspect_json, '[]') FROM runs WHERE run_id = ?")
                .bind(run)
                .fetch_one(&db)
                .await
                .expect("suspect");
        let source: Option<String> =
            sqlx::query_scalar("SELECT fpi_source FROM runs WHERE run_id = ?")
                .bind(run)
                .fetch_one(&db)
                .await
                .expect("fpi source");
        let c = metric(&db, run, "checkpoints_in_window").await;
        let wal = metric(&db, run, "wal_bytes_per_txn").await;
        let fpi = metric(&db, run, "fpi_bytes_per_txn").await;
        // The kernel's count of bytes written to the data directory's disk: at least the WAL
        // the window's commits flushed (each fsync writes whole pages).
        let disk = metric(&db, run, "disk_write_bytes_per_txn").await;
        assert!(
            disk >= 0.9 * wal,
            "{variant}: {disk:.0} B/txn written to disk, {wal:.0} B/txn of WAL"
        );
        eprintln!(
            "{variant}: {txns} transactions, {c} checkpoints, {wal:.0} B/txn WAL, {fpi:.0} B/txn FPI ({source:?}), {disk:.0} B/txn to disk, suspect {suspect}"
        );
        per_cell.push((
            variant.to_string(),
            c,
            wal,
            fpi,
            suspect.contains("checkpoint in measured window"),
        ));
    }
    let find = |v: &str| per_cell.iter().find(|c| c.0 == v).expect(v).clone();
    let (default, forced) = (find("default"), find("forced"));
    assert!(forced.1 > 0.0 && forced.4, "forced cell: {forced:?}");
    assert!(default.1 == 0.0 && !default.4, "default cell: {default:?}");
    assert!(
        forced.2 > default.2,
        "WAL per transaction: {forced:?} vs {default:?}"
    );
    assert!(
        forced.3 > default.3,
        "FPI per transaction: {forced:?} vs {default:?}"
    );
    // The default statistics keep the flagged run: it is the cost under test.
    let mut client = lab.client().await;
    let r = client
        .query_results(blocklab_proto::v1::QueryResultsRequest {
            job_id: job.clone(),
            ..Default::default()
        })
        .await
        .expect("results")
        .into_inner();
    let forced_cell = r
        .cells
        .iter()
        .find(|c| c.label.contains("forced"))
        .expect("forced cell");
    assert_eq!(
        (
            forced_cell.n,
            forced_cell.runs_suspect,
            forced_cell.runs_excluded
        ),
        (1, 1, 0),
        "{forced_cell:?}"
    );
    assert!(
        forced_cell
            .suspect_reasons
            .iter()
            .any(|s| s.starts_with("checkpoint in measured window")),
        "{forced_cell:?}"
    );
    let per_txn: Vec<&str> = r.by_metric.iter().map(|m| m.name.as_str()).collect();
    for m in [
        "checkpoints_in_window",
        "wal_bytes_per_txn",
        "fpi_bytes_per_txn",
        "disk_write_bytes_per_txn",
        "disk_write_bytes",
    ] {
        assert!(per_txn.contains(&m), "{m} in {per_txn:?}");
    }
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn archived_wal_is_counted_per_transaction() {
    let _one = ONE_AT_A_TIME.lock().await;
    let lab = Lab::start().await;
    // 1 MB WAL segments, so a 4 s window fills several.
    let text = spec(
        "archive",
        "",
        "builtin = \"tpcb-like\"\nwarmup = \"1s\"\nduration = \"4s\"",
        "archive_wal = true",
    )
    .replace("clients = [2]", "clients = [2]\nwal_segsize_mb = [1]");
    let job = done_job(&lab, &text).await;
    let db = catalog(&lab).await;
    let runs = runs(&db, &job).await;
    let (run, txns, _, _) = &runs[0];
    let archived = metric(&db, run, "wal_archived_bytes_per_txn").await;
    let wal = metric(&db, run, "wal_bytes_per_txn").await;
    let count = stat(&db, run, "archiver.archived_count").await;
    let failed = stat(&db, run, "archiver.failed_count").await;
    eprintln!(
        "{count} segments archived, {archived:.0} B/txn archived, {wal:.0} B/txn of WAL, {txns} transactions"
    );
    assert_eq!(failed, 0.0, "the archiver failed");
    assert!(count >= 2.0, "{count} segments archived in the window");
    assert!((archived * *txns as f64 - count * 1_048_576.0).abs() < 1.0);
    // Whole segments: the bytes archived are the WAL the window made, give or take the
    // segment in progress at each end.
    let off = (archived - wal).abs() * *txns as f64;
    assert!(
        off <= 2.0 * 1_048_576.0,
        "archived {archived:.0} B/txn against {wal:.0} B/txn of WAL"
    );
    lab.shutdown().await;
}
