//! One job over two identical database hosts (`placement.db_hosts = 2`): each host runs a
//! full replicate of the cells at the same time (repetition r on slot r mod 2), and the
//! results show the cell on each host and the pooled change, estimated within rounds and
//! hosts on the log scale (each round ran on one host, so the host adds nothing to the
//! rounds): the mean of the per-host log ratios, with the additive model's degrees of freedom
//! (4 runs - rank 3 = 1).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use blocklab_tests::{Lab, LabOptions, pg_tarball, run_job};
use sqlx::Row;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_job_over_two_hosts_blocks_on_the_host() {
    let lab = Lab::start_with(LabOptions {
        agents: 2,
        workers_in_process: 2,
        ..LabOptions::default()
    })
    .await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "two-hosts"
repetitions = 2
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8, 16]
clients = [2]
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "3s"
[placement]
db_host_labels = ["e2e"]
db_hosts = 2
"#,
        pg_tarball().display()
    );
    let (job, state) = run_job(&mut client, &spec, Duration::from_secs(30 * 60)).await;
    assert_eq!(state, "done", "job {job}");

    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    // Every run on the host of its slot; each host ran both cells.
    let rows = sqlx::query(
        "SELECT r.repetition, r.cell_index, r.db_host_id, res.tps, r.started_at, r.finished_at
         FROM runs r JOIN results res USING (run_id) WHERE r.job_id = ? ORDER BY r.sequence",
    )
    .bind(&job)
    .fetch_all(&db)
    .await
    .expect("runs");
    assert_eq!(rows.len(), 4);
    let slots: BTreeMap<String, i64> =
        sqlx::query("SELECT slot, host_id FROM job_hosts WHERE job_id = ?")
            .bind(&job)
            .fetch_all(&db)
            .await
            .expect("slots")
            .iter()
            .map(|r| (r.get::<String, _>("host_id"), r.get::<i64, _>("slot")))
            .collect();
    assert_eq!(
        slots.keys().cloned().collect::<BTreeSet<_>>(),
        BTreeSet::from(["e2e-db".to_string(), "e2e-db-1".to_string()])
    );
    let mut tps: BTreeMap<(String, i64), f64> = BTreeMap::new();
    for r in &rows {
        let host: String = r.get("db_host_id");
        assert_eq!(
            slots[&host],
            r.get::<i64, _>("repetition") % 2,
            "repetition on the host of its slot"
        );
        tps.insert((host, r.get("cell_index")), r.get("tps"));
    }
    // The two hosts measured at the same time: their runs overlap.
    let span = |host: &str| {
        let mine: Vec<(String, String)> = rows
            .iter()
            .filter(|r| r.get::<String, _>("db_host_id") == host)
            .map(|r| (r.get("started_at"), r.get("finished_at")))
            .collect();
        (
            mine.iter().map(|m| m.0.clone()).min().unwrap(),
            mine.iter().map(|m| m.1.clone()).max().unwrap(),
        )
    };
    let (a, b) = (span("e2e-db"), span("e2e-db-1"));
    assert!(a.0 < b.1 && b.0 < a.1, "the hosts ran at once: {a:?} {b:?}");

    let r = blocklab_tests::query_results(&mut client, &job).await;
    let cell = r.cells.iter().find(|c| !c.is_baseline).expect("16K cell");
    let hosts: Vec<&str> = cell.hosts.iter().map(|h| h.host_id.as_str()).collect();
    assert_eq!(hosts, ["e2e-db", "e2e-db-1"], "the cell on each host");
    let mut logs = 0.0;
    for h in &cell.hosts {
        assert_eq!(h.n, 1);
        let (t, b) = (tps[&(h.host_id.clone(), 1)], tps[&(h.host_id.clone(), 0)]);
        assert!((h.mean - t).abs() < 1e-9);
        let within = 100.0 * (t - b) / b;
        assert!((h.pct_change_vs_baseline.unwrap() - within).abs() < 1e-9);
        logs += (t / b).ln() / 2.0;
    }
    // Pooled: the within-round change as a ratio, its CI centred on it on the log scale, the
    // model's df.
    assert_eq!(cell.model, "rounds+hosts");
    let pooled = 100.0 * logs.exp_m1();
    assert!(
        (cell.pct_change_vs_baseline.expect("pct") - pooled).abs() < 1e-9,
        "{cell:?} {pooled}"
    );
    let (lo, hi) = (
        cell.pct_change_ci95_low.expect("ci"),
        cell.pct_change_ci95_high.expect("ci"),
    );
    let centre = ((lo / 100.0).ln_1p() + (hi / 100.0).ln_1p()) / 2.0;
    assert!((centre - logs).abs() < 1e-9, "{lo} {hi} {logs}");
    assert_eq!(cell.welch_df, Some(1.0), "4 runs, rank 3");
    lab.shutdown().await;
}
