//! A run split across two worker processes: both connect their share of the clients, start on
//! the coordinator's go, and the coordinator merges their results: transactions add up, each
//! worker's share is kept, and percentiles come from the merged latency histogram.

use std::time::Duration;

use blocklab_tests::{Lab, LabOptions, pg_tarball, run_job};
use hdrhistogram::serialization::Deserializer;
use sqlx::Row;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_worker_processes_share_a_run_and_merge() {
    let lab = Lab::start_with(LabOptions {
        workers_in_process: 0,
        worker_processes: 2,
        ..LabOptions::default()
    })
    .await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "two-workers"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [5]
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "3s"
[placement]
client_workers = 2
"#,
        pg_tarball().display()
    );
    let (job, state) = run_job(&mut client, &spec, Duration::from_secs(20 * 60)).await;
    assert_eq!(state, "done", "job {job}");

    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let run_id: String = sqlx::query_scalar("SELECT run_id FROM runs WHERE job_id = ?")
        .bind(&job)
        .fetch_one(&db)
        .await
        .expect("run");
    let shares = sqlx::query("SELECT worker_host_id, clients, transactions, client_cpu_user_s + client_cpu_system_s AS cpu FROM result_shares WHERE run_id = ? ORDER BY worker_host_id")
        .bind(&run_id)
        .fetch_all(&db)
        .await
        .expect("shares");
    assert_eq!(shares.len(), 2, "one share per worker");
    let hosts: Vec<String> = shares.iter().map(|r| r.get("worker_host_id")).collect();
    assert_eq!(hosts, vec!["e2e-process-0", "e2e-process-1"]);
    let clients: Vec<i64> = shares.iter().map(|r| r.get("clients")).collect();
    assert_eq!(clients, vec![3, 2], "5 clients split 3 + 2");
    let share_txns: i64 = shares.iter().map(|r| r.get::<i64, _>("transactions")).sum();
    assert!(
        shares
            .iter()
            .all(|r| r.get::<i64, _>("transactions") > 0 && r.get::<f64, _>("cpu") > 0.0)
    );

    let merged = sqlx::query("SELECT transactions, latency_p50_ms, latency_p99_ms, latency_max_ms, latency_histogram FROM results WHERE run_id = ?")
        .bind(&run_id)
        .fetch_one(&db)
        .await
        .expect("result");
    assert_eq!(
        merged.get::<i64, _>("transactions"),
        share_txns,
        "merged transactions are the sum of the shares"
    );
    let blob: Vec<u8> = merged.get("latency_histogram");
    let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(&blob))
        .expect("histogram");
    assert_eq!(
        hist.len() as i64,
        share_txns,
        "the merged histogram holds every transaction"
    );
    let p99 = hist.value_at_quantile(0.99) as f64 / 1000.0;
    assert!(
        (merged.get::<f64, _>("latency_p99_ms") - p99).abs() < 1e-9,
        "p99 comes from the merged histogram"
    );
    let p50 = hist.value_at_quantile(0.5) as f64 / 1000.0;
    assert!((merged.get::<f64, _>("latency_p50_ms") - p50).abs() < 1e-9);
    let samples: i64 =
        sqlx::query_scalar("SELECT sum(transactions) FROM run_samples WHERE run_id = ?")
            .bind(&run_id)
            .fetch_one(&db)
            .await
            .expect("samples");
    assert_eq!(
        samples, share_txns,
        "per-second series summed across workers"
    );
    lab.shutdown().await;
}
