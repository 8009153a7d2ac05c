//! The TPC-C-like workload against a real PostgreSQL: the parallel load and its
//! cardinalities, a short run with the standard mix, keying/thinking times, the consistency
//! check passing and failing, argument validation.

mod support;

use std::time::Instant;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    RunLoadResult, RunLoadTask, TpccParams, WorkloadKind, WorkloadStepName, WorkloadStepResult,
    WorkloadStepTask,
};
use blocklab_worker::serve::{self, Workload};
use blocklab_worker::{LoadControl, WorkerError, tpcc};
use support::TestServer;

/// The wire value of a step by its name (`single-user` → `WORKLOAD_STEP_SINGLE_USER`).
fn wire_step(name: &str) -> i32 {
    let wire = format!("WORKLOAD_STEP_{}", name.to_uppercase().replace('-', "_"));
    WorkloadStepName::from_str_name(&wire)
        .expect("a step")
        .into()
}

fn kind(warehouses: u32, keying_thinking: bool, time_scale: f64) -> WorkloadKind {
    WorkloadKind {
        kind: "tpcc".into(),
        tpcc: Some(TpccParams {
            warehouses,
            keying_thinking,
            time_scale,
        }),
        as3ap: None,
    }
}

async fn step(
    server: &TestServer,
    db: &str,
    warehouses: u32,
    name: &str,
    part: u32,
    parts: u32,
) -> Result<WorkloadStepResult, WorkerError> {
    let t = WorkloadStepTask {
        conninfo: Some(server.conn(db)),
        workload: Some(kind(warehouses, false, 0.0)),
        step: wire_step(name),
        part,
        parts,
    };
    serve::workload_step(
        Workload::Tpcc,
        &t,
        &ProgressSink::detached(),
        &LoadControl::default(),
    )
    .await
}

/// schema, `parts` concurrent loads, finish.
async fn load(server: &TestServer, db: &str, warehouses: u32, parts: u32) -> f64 {
    let started = Instant::now();
    let r = step(server, db, warehouses, "schema", 0, 1).await.unwrap();
    assert!(r.notes.iter().any(|n| n == "item: 100000 rows"), "{r:?}");
    eprintln!("schema + item: {:.2} s", r.seconds);
    let loads = (0..parts).map(|p| step(server, db, warehouses, "load", p, parts));
    for r in futures::future::join_all(loads).await {
        let r = r.unwrap();
        assert!(
            r.metrics
                .iter()
                .any(|m| m.name == "tpcc.load_s" && m.unit == "s")
        );
        eprintln!("load: {:.2} s {:?}", r.seconds, r.notes);
    }
    let r = step(server, db, warehouses, "finish", 0, 1).await.unwrap();
    eprintln!("finish: {:.2} s", r.seconds);
    started.elapsed().as_secs_f64()
}

async fn run(
    server: &TestServer,
    db: &str,
    warehouses: u32,
    clients: u32,
    duration_ms: u64,
    keying_thinking: bool,
    time_scale: f64,
) -> Result<RunLoadResult, WorkerError> {
    let t = RunLoadTask {
        conninfo: Some(server.conn(db)),
        clients,
        threads: 1,
        duration_ms,
        warmup_ms: 300,
        random_seed: Some(42),
        workload: Some(kind(warehouses, keying_thinking, time_scale)),
        ..RunLoadTask::default()
    };
    serve::run_workload(
        Workload::Tpcc,
        &t,
        &ProgressSink::detached(),
        &LoadControl::default(),
        None,
    )
    .await
}

async fn count(server: &TestServer, db: &str, table: &str) -> i64 {
    server
        .client(db)
        .await
        .query_one(&format!("select count(*) from {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

fn txn<'a>(r: &'a RunLoadResult, name: &str) -> &'a blocklab_proto::TxnTypeStats {
    r.txn_types
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", r.txn_types))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_load_has_tpcc_cardinalities_and_passes_check() {
    let server = TestServer::start();
    server.create_db("tpcc2").await;
    let secs = load(&server, "tpcc2", 2, 2).await;
    eprintln!("W=2 load in two parts: {secs:.1} s");
    let w = 2;
    for (table, n) in [
        ("warehouse", w),
        ("district", 10 * w),
        ("customer", 30_000 * w),
        ("history", 30_000 * w),
        ("orders", 30_000 * w),
        ("new_order", 9_000 * w),
        ("item", 100_000),
        ("stock", 100_000 * w),
    ] {
        assert_eq!(count(&server, "tpcc2", table).await, n, "{table}");
    }
    let lines = count(&server, "tpcc2", "order_line").await;
    assert!(
        (5 * 30_000 * w..=15 * 30_000 * w).contains(&lines),
        "{lines}"
    );
    let c = server.client("tpcc2").await;
    let row = c
        .query_one(
            "select count(*) filter (where c_credit = 'BC'), count(distinct c_last),
                    (select count(*) from item where i_data like '%ORIGINAL%'),
                    (select count(*) from pg_indexes where tablename in ('customer', 'orders'))
             from customer",
            &[],
        )
        .await
        .unwrap();
    let (bc, names, original, indexes): (i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert!((4_000..8_000).contains(&bc), "BC customers: {bc}");
    assert_eq!(names, 1000, "every last name occurs");
    assert!(
        (8_000..12_000).contains(&original),
        "ORIGINAL items: {original}"
    );
    assert_eq!(indexes, 4, "primary keys and DBT-2's secondary indexes");

    let r = step(&server, "tpcc2", 2, "check", 0, 1).await.unwrap();
    assert_eq!(r.notes.len(), 11, "{:?}", r.notes);
    assert_eq!(
        r.notes[0],
        "condition 1 (W_YTD = sum(D_YTD)): ok (2 warehouses)"
    );
    assert!(
        r.notes.iter().all(|n| n.contains(": ok (")),
        "{:?}",
        r.notes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_mix_keying_and_broken_check() {
    let server = TestServer::start();
    server.create_db("tpcc1").await;
    let secs = load(&server, "tpcc1", 1, 1).await;
    eprintln!("W=1 load (schema + load + finish): {secs:.1} s");

    // (b) 3 s, 4 terminals, no keying or thinking.
    let r = run(&server, "tpcc1", 1, 4, 3_000, false, 0.0)
        .await
        .unwrap();
    eprintln!(
        "{} transactions, {} failures, notpm {:.0}, p90 {:.2} ms, {:?}",
        r.transactions,
        r.failures,
        r.metrics[0].value,
        r.latency_p90_ms,
        r.txn_types
            .iter()
            .map(|t| (&t.name, t.count, t.rollbacks, t.failures))
            .collect::<Vec<_>>()
    );
    assert_eq!(r.metrics[0].name, "notpm");
    assert_eq!(r.metrics[0].unit, "NOTPM");
    assert!(r.metrics[0].value > 0.0);
    assert_eq!(r.txn_types.len(), 5);
    let names = [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ];
    for name in names {
        let t = txn(&r, name);
        assert!(t.count > 0, "{name}: {t:?}");
        assert!(!t.latency_histogram.is_empty());
    }
    let sum: u64 = r.txn_types.iter().map(|t| t.count).sum();
    assert_eq!(sum, r.transactions);
    let no = txn(&r, "new_order");
    assert!(no.rollbacks > 0, "1% of New-Orders roll back: {no:?}");
    assert!(no.rollbacks < no.count / 10 + 5, "{no:?}");
    let share = no.count as f64 / r.transactions as f64;
    assert!((0.35..=0.55).contains(&share), "new_order share {share}");
    let notpm = no.count as f64 * 60.0 / r.measured_seconds;
    assert!((r.metrics[0].value - notpm).abs() < 1e-6);
    assert!(
        (r.measured_seconds - 3.0).abs() < 0.2,
        "{}",
        r.measured_seconds
    );
    assert_eq!(r.clients, 4);
    assert_eq!(r.random_seed, 42);
    assert_eq!(r.samples.len(), 3);
    assert!(r.latency_p50_ms > 0.0 && r.latency_p50_ms <= r.latency_max_ms);
    let h = blocklab_worker::engine::stats::deserialize_histogram(&r.latency_histogram).unwrap();
    assert_eq!(h.len(), r.transactions);
    step(&server, "tpcc1", 1, "check", 0, 1).await.unwrap();

    // (e) keying and thinking times, scaled down 1000x (NO keys 18 ms, thinks ~12 ms).
    let r = run(&server, "tpcc1", 1, 4, 2_000, true, 0.001)
        .await
        .unwrap();
    eprintln!("keying/thinking: {} transactions", r.transactions);
    assert!(r.transactions > 10, "{r:?}");
    // Each terminal spends at least ~15 ms per transaction keying and thinking.
    assert!(r.transactions < 4 * 2_000 / 10, "{}", r.transactions);
    step(&server, "tpcc1", 1, "check", 0, 1).await.unwrap();

    // Cancellation ends a long run early with an error.
    let ctl = LoadControl::default();
    let stopper = ctl.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        stopper.stop();
    });
    let t = RunLoadTask {
        conninfo: Some(server.conn("tpcc1")),
        clients: 2,
        duration_ms: 60_000,
        workload: Some(kind(1, true, 1.0)),
        ..RunLoadTask::default()
    };
    let started = Instant::now();
    let e = serve::run_workload(Workload::Tpcc, &t, &ProgressSink::detached(), &ctl, None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("cancelled"), "{e}");
    assert!(started.elapsed().as_secs_f64() < 5.0);
    step(&server, "tpcc1", 1, "check", 0, 1).await.unwrap();

    // (c) break condition 1 and 8.
    server
        .client("tpcc1")
        .await
        .batch_execute("update warehouse set w_ytd = w_ytd + 1 where w_id = 1")
        .await
        .unwrap();
    let err = step(&server, "tpcc1", 1, "check", 0, 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("condition 1 (W_YTD = sum(D_YTD))"), "{err}");
    assert!(err.contains("w_id=1"), "{err}");
    assert!(!err.contains("condition 2 "), "{err}");
    assert!(!err.contains("condition 10 "), "{err}");

    // A customer's balance that payments and deliveries do not explain: 10 and 12.
    server
        .client("tpcc1")
        .await
        .batch_execute(
            "update customer set c_balance = c_balance + 1 where c_w_id = 1 and c_d_id = 3 and c_id = 7",
        )
        .await
        .unwrap();
    let err = step(&server, "tpcc1", 1, "check", 0, 1)
        .await
        .unwrap_err()
        .to_string();
    for n in ["condition 10 ", "condition 12 "] {
        assert!(err.contains(n), "{n}: {err}");
    }
    assert!(err.contains("c_id=7"), "{err}");
}

#[test]
fn warehouses_are_split_round_robin() {
    assert_eq!(tpcc::warehouses_of_part(5, 0, 2), vec![1, 3, 5]);
    assert_eq!(tpcc::warehouses_of_part(5, 1, 2), vec![2, 4]);
    assert_eq!(tpcc::warehouses_of_part(2, 0, 0), vec![1, 2]);
    assert!(tpcc::warehouses_of_part(1, 2, 3).is_empty());
}

#[tokio::test]
async fn zero_warehouses_is_refused() {
    let conn = blocklab_proto::ConnInfo {
        host: "127.0.0.1".into(),
        port: 1,
        ..Default::default()
    };
    let t = WorkloadStepTask {
        conninfo: Some(conn.clone()),
        workload: Some(kind(0, false, 0.0)),
        step: WorkloadStepName::WorkloadStepLoad.into(),
        part: 0,
        parts: 1,
    };
    let e = serve::workload_step(
        Workload::Tpcc,
        &t,
        &ProgressSink::detached(),
        &LoadControl::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, WorkerError::InvalidArgument(m) if m.contains("warehouses")),
        "{e:?}"
    );
    let t = RunLoadTask {
        conninfo: Some(conn),
        clients: 1,
        duration_ms: 1000,
        workload: Some(kind(0, false, 0.0)),
        ..RunLoadTask::default()
    };
    let e = serve::run_workload(
        Workload::Tpcc,
        &t,
        &ProgressSink::detached(),
        &LoadControl::default(),
        None,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, WorkerError::InvalidArgument(m) if m.contains("warehouses")),
        "{e:?}"
    );
}
