//! The AS3AP-like suite against a real PostgreSQL: the load's tables, counts and
//! selectivities; the single-user list's metrics, order and restored row counts; both
//! multi-user mixes (argument validation is in `as3ap_protocols.rs`).

mod support;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    As3apParams, RunLoadResult, RunLoadTask, WorkloadKind, WorkloadStepName, WorkloadStepResult,
    WorkloadStepTask,
};
use blocklab_worker::engine::control::LoadControl;
use blocklab_worker::engine::stats::deserialize_histogram;
use blocklab_worker::error::WorkerError;
use blocklab_worker::serve::{self, Workload};
use support::TestServer;

const SINGLE_USER_ORDER: [&str; 46] = [
    "sel_1_cl",
    "join_3_cl",
    "sel_100_ncl",
    "table_scan",
    "agg_func",
    "agg_scal",
    "sel_100_cl",
    "join_3_ncl",
    "sel_10pct_ncl",
    "agg_simple_report",
    "agg_info_retrieval",
    "agg_create_view",
    "agg_subtotal_report",
    "agg_total_report",
    "join_2_cl",
    "join_2",
    "sel_variable_select_low",
    "sel_variable_select_high",
    "join_4_cl",
    "proj_100",
    "join_4_ncl",
    "proj_10pct",
    "sel_1_ncl",
    "join_2_ncl",
    "integrity_test",
    "drop_updates_keys",
    "bulk_save",
    "bulk_modify",
    "upd_append_duplicate",
    "upd_remove_duplicate",
    "upd_app_t_mid",
    "upd_mod_t_mid",
    "upd_del_t_mid",
    "upd_app_t_end",
    "upd_mod_t_end",
    "upd_del_t_end",
    "create_idx_updates_code_h",
    "upd_app_t_mid_2",
    "upd_mod_t_cod",
    "upd_del_t_mid_2",
    "create_idx_updates_int_bt",
    "upd_app_t_mid_3",
    "upd_mod_t_int",
    "upd_del_t_mid_3",
    "bulk_append",
    "bulk_delete",
];

/// OSDB's cross-section tests in order, then its checks, with the rows each returns or
/// changes (the checks: rows found restored).
const CROSS_SECTION: [(&str, u64); 10] = [
    ("xs.sel_1_ncl", 1),
    ("xs.agg_simple_report", 1),
    ("xs.mu_sel_100_seq", 100),
    ("xs.mu_sel_100_rand", 100),
    ("xs.mu_mod_100_seq_abort", 100),
    ("xs.mu_mod_100_rand", 100),
    ("xs.mu_unmod_100_seq", 100),
    ("xs.mu_unmod_100_rand", 100),
    ("xs.mu_checkmod_100_seq", 100),
    ("xs.mu_checkmod_100_rand", 100),
];

fn workload(rows: u64, mix: &str) -> Option<WorkloadKind> {
    Some(WorkloadKind {
        kind: "as3ap".into(),
        tpcc: None,
        as3ap: Some(As3apParams {
            rows,
            mix: mix.into(),
        }),
    })
}

/// The wire value of a step by its name (`single-user` → `WORKLOAD_STEP_SINGLE_USER`).
fn wire_step(name: &str) -> i32 {
    let wire = format!("WORKLOAD_STEP_{}", name.to_uppercase().replace('-', "_"));
    WorkloadStepName::from_str_name(&wire)
        .expect("a step")
        .into()
}

async fn step(
    server: &TestServer,
    db: &str,
    rows: u64,
    step: &str,
    part: u32,
) -> Result<WorkloadStepResult, WorkerError> {
    let t = WorkloadStepTask {
        conninfo: Some(server.conn(db)),
        workload: workload(rows, ""),
        step: wire_step(step),
        part,
        parts: 2,
    };
    serve::workload_step(
        Workload::As3ap,
        &t,
        &ProgressSink::detached(),
        &LoadControl::default(),
    )
    .await
}

async fn mix(
    server: &TestServer,
    db: &str,
    rows: u64,
    mix: &str,
    go: bool,
    client_id_offset: u32,
) -> Result<RunLoadResult, WorkerError> {
    let t = RunLoadTask {
        conninfo: Some(server.conn(db)),
        clients: 3,
        duration_ms: 2000,
        warmup_ms: 200,
        client_id_offset,
        random_seed: Some(42),
        wait_for_go: go,
        workload: workload(rows, mix),
        ..Default::default()
    };
    let rx = go.then(|| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        tx.send(()).unwrap();
        rx
    });
    serve::run_workload(
        Workload::As3ap,
        &t,
        &ProgressSink::detached(),
        &LoadControl::default(),
        rx,
    )
    .await
}

async fn count(c: &tokio_postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .get(0)
}

async fn counts(c: &tokio_postgres::Client) -> Vec<i64> {
    let mut out = Vec::new();
    for t in ["uniques", "hundred", "tenpct", "updates", "tiny"] {
        out.push(count(c, &format!("select count(*) from {t}")).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_has_the_as3ap_counts_and_selectivities() {
    let server = TestServer::start();
    server.create_db("asap").await;
    let r = step(&server, "asap", 1000, "load", 0).await.unwrap();
    let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["as3ap.load_s", "as3ap.index_s"]);
    assert!(
        r.metrics
            .iter()
            .all(|m| m.value > 0.0 && m.unit == "s" && !m.higher_is_better)
    );
    assert!(
        r.notes.iter().any(|n| n == "uniques: 1000 rows"),
        "{:?}",
        r.notes
    );

    let c = server.client("asap").await;
    assert_eq!(counts(&c).await, [1000, 1000, 1000, 1000, 1]);
    let checks = [
        // sel_1: one row by clustered key and by code.
        ("select count(*) from updates where col_key = 1000", 1),
        (
            "select count(*) from updates where col_code = 'BENCHMARKS'",
            1,
        ),
        (
            "select count(*) from uniques where col_code = 'BENCHMARKS'",
            1,
        ),
        (
            "select count(*) from hundred where col_code = 'BENCHMARKS'",
            1,
        ),
        (
            "select count(*) from tenpct where col_code = 'BENCHMARKS'",
            1,
        ),
        // sel_100: 100 rows by key and by int.
        ("select count(*) from updates where col_key <= 100", 100),
        ("select count(*) from updates where col_int <= 100", 100),
        ("select count(*) from updates where col_key = 1", 0),
        // sel_10pct: 10% by name, and uniques' sparse key (1000 + r * 10^9 / R).
        (
            "select count(*) from tenpct where col_name = 'THE+ASAP+BENCHMARKS+'",
            100,
        ),
        (
            "select count(*) from uniques where col_key <= 100000000",
            100,
        ),
        ("select count(distinct col_name) from tenpct", 10),
        (
            "select count(*) from tenpct where col_signed < -250000000",
            250,
        ),
        (
            "select count(*) from tenpct where col_signed < -500000000",
            0,
        ),
        // hundred: 100 values, correlated.
        ("select count(distinct col_signed) from hundred", 100),
        ("select count(distinct col_name) from hundred", 100),
        (
            "select count(distinct (col_address, col_signed)) from hundred",
            100,
        ),
        ("select count(*) from hundred where col_int = 0", 1),
        // uniques: unique codes and names, key 1000 for the clustered joins.
        ("select count(distinct col_code) from uniques", 1000),
        ("select count(distinct col_name) from uniques", 1000),
        ("select count(distinct col_signed) from tenpct", 1000),
        ("select count(*) from uniques where col_int = 1", 0),
        (
            "select count(*) from uniques, hundred, tenpct, updates where uniques.col_key = hundred.col_key and uniques.col_key = tenpct.col_key and uniques.col_key = updates.col_key and uniques.col_key = 1000",
            1,
        ),
        (
            "select count(*) from uniques, hundred where uniques.col_address = hundred.col_address and uniques.col_address = 'SILICON VALLEY'",
            10,
        ),
        ("select count(distinct col_float) from uniques", 10),
        (
            "select count(*) from hundred h where not exists (select 1 from updates u where u.col_key = h.col_signed)",
            0,
        ),
        // OSDB's indexes and hundred's foreign key.
        (
            "select count(*) from pg_indexes where tablename in ('uniques', 'hundred', 'tenpct', 'updates', 'tiny')",
            19,
        ),
        (
            "select count(*) from pg_indexes where indexdef like '%USING hash%'",
            5,
        ),
        (
            "select count(*) from pg_constraint where conname = 'fk_hundred_updates'",
            1,
        ),
        ("select count(*) from pg_index where indisclustered", 4),
    ];
    for (sql, want) in checks {
        assert_eq!(count(&c, sql).await, want, "{sql}");
    }
    let avg_len: f64 = c
        .query_one("select avg(length(col_address))::float8 from updates", &[])
        .await
        .unwrap()
        .get(0);
    assert!((17.0..23.0).contains(&avg_len), "address length {avg_len}");

    // Only part 0 loads; other parts say so and touch nothing.
    let other = step(&server, "asap", 1000, "load", 1).await.unwrap();
    assert!(other.metrics.is_empty());
    assert!(other.notes[0].contains("part 0 only"), "{:?}", other.notes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_user_times_the_list_in_order_and_restores_the_tables() {
    let server = TestServer::start();
    server.create_db("asap").await;
    step(&server, "asap", 2000, "load", 0).await.unwrap();
    let c = server.client("asap").await;
    let before = counts(&c).await;
    let r = step(&server, "asap", 2000, "single-user", 0).await.unwrap();
    let names: Vec<String> = r.metrics.iter().map(|m| m.name.clone()).collect();
    let mut want: Vec<String> = SINGLE_USER_ORDER.iter().map(|n| format!("q.{n}")).collect();
    want.push("as3ap.single_user_s".into());
    assert_eq!(names, want);
    for m in &r.metrics {
        assert!(
            m.value > 0.0 && m.unit == "s" && !m.higher_is_better,
            "{m:?}"
        );
    }
    let note = |q: &str| {
        r.notes
            .iter()
            .find(|n| n.starts_with(&format!("q.{q}:")))
            .unwrap_or_else(|| panic!("no note for {q}: {:?}", r.notes))
            .clone()
    };
    assert!(
        note("sel_1_cl").ends_with(" 1 row returned"),
        "{}",
        note("sel_1_cl")
    );
    assert!(note("sel_1_ncl").ends_with(" 1 row returned"));
    assert!(note("sel_100_cl").ends_with(" 100 rows returned"));
    assert!(note("sel_10pct_ncl").ends_with(" 200 rows returned"));
    assert!(note("agg_func").ends_with(" 100 rows returned"));
    assert!(note("join_2").ends_with(" 20 rows returned"));
    assert!(note("join_4_ncl").ends_with(" 1 row returned"));
    assert!(note("integrity_test").contains("refused as expected (SQLSTATE 23503)"));
    assert!(note("upd_append_duplicate").contains("refused as expected (SQLSTATE 23505)"));
    assert!(note("bulk_modify").ends_with(" 200 rows affected"));
    assert!(note("bulk_delete").ends_with(" 200 rows affected"));
    assert_eq!(counts(&c).await, before);
    assert!(!r.notes.iter().any(|n| n.starts_with("row counts changed")));
    // The indexes are back and the database runs the list again.
    assert_eq!(
        count(
            &c,
            "select count(*) from pg_indexes where tablename = 'updates'"
        )
        .await,
        5
    );
    assert_eq!(
        count(&c, "select count(*) from updates where col_key < 0").await,
        0
    );
    let again = step(&server, "asap", 2000, "single-user", 0).await.unwrap();
    assert_eq!(again.metrics.len(), want.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_mixes_report_tuples_per_second() {
    let server = TestServer::start();
    server.create_db("asap").await;
    step(&server, "asap", 1000, "load", 0).await.unwrap();
    let c = server.client("asap").await;
    let signed_sum = "select sum(col_signed)::int8 from updates";
    let doubles = "select md5(string_agg(col_double::text, ',' order by col_key)) from updates";
    let doubles_before: String = c.query_one(doubles, &[]).await.unwrap().get(0);
    // The worker with the first client ids runs the cross section; another does not.
    for (name, class, go, offset) in [
        ("mixed-ir", "mixed_ir", false, 3),
        ("mixed-oltp", "mixed_oltp", true, 0),
    ] {
        let sum_before = count(&c, signed_sum).await;
        let r = mix(&server, "asap", 1000, name, go, offset).await.unwrap();
        assert_eq!(r.clients, 3);
        assert!(r.transactions > 0 && r.failures == 0, "{name}: {r:?}");
        assert!(r.tps_excluding_connections > 0.0);
        assert!(
            r.measured_seconds > 1.5 && r.measured_seconds < 3.0,
            "{}",
            r.measured_seconds
        );
        assert!(r.latency_p50_ms > 0.0 && r.latency_max_ms >= r.latency_p99_ms);
        assert_eq!(r.random_seed, 42);
        assert!(!r.samples.is_empty());
        let h = deserialize_histogram(&r.latency_histogram).unwrap();
        assert_eq!(h.len(), r.transactions);
        let tt = &r.txn_types[0];
        assert_eq!(tt.name, class);
        assert_eq!(tt.count, r.transactions);
        // Every key exists: one tuple per query.
        assert_eq!(tt.rows, r.transactions, "{name}");
        let m = &r.metrics[0];
        let cross: Vec<(&str, u64)> = r.txn_types[1..]
            .iter()
            .map(|t| (t.name.as_str(), t.rows))
            .collect();
        if offset == 0 {
            assert_eq!(cross, CROSS_SECTION, "{name}");
            assert!(r.txn_types[1..].iter().all(|t| t.count == 1));
            // Each class's one response time is the statement's seconds.
            for (t, m) in r.txn_types[1..].iter().zip(&r.metrics[1..]) {
                let h = deserialize_histogram(&t.latency_histogram).unwrap();
                let us = m.value * 1e6;
                assert!(
                    (h.mean() - us).abs() <= us * 0.01 + 1.0,
                    "{}: histogram {} us, metric {us} us",
                    t.name,
                    h.mean()
                );
            }
            let names: Vec<String> = r.metrics[1..].iter().map(|m| m.name.clone()).collect();
            let mut want: Vec<String> = CROSS_SECTION
                .iter()
                .map(|(q, _)| format!("{class}.{q}"))
                .collect();
            want.push(format!("{class}.cross_section_s"));
            assert_eq!(names, want);
            assert!(
                r.metrics[1..]
                    .iter()
                    .all(|m| m.unit == "s" && !m.higher_is_better && m.value > 0.0)
            );
        } else {
            assert!(cross.is_empty(), "{cross:?}");
            assert_eq!(r.metrics.len(), 1);
        }
        assert_eq!(m.name, format!("{class}.tup_per_s"));
        assert_eq!(m.unit, "tup/s");
        assert!(m.higher_is_better && m.value > 0.0);
        let changed = count(&c, signed_sum).await - sum_before;
        if name == "mixed-oltp" {
            // Updates in the warm-up are not counted, so at least as many changed.
            assert!(
                changed >= tt.rows as i64,
                "changed {changed}, counted {}",
                tt.rows
            );
        } else {
            assert_eq!(changed, 0);
        }
    }
    // The rolled-back and the undone modifications left col_double as it was.
    let doubles_after: String = c.query_one(doubles, &[]).await.unwrap().get(0);
    assert_eq!(doubles_after, doubles_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_section_row_changed_behind_its_back_fails_the_check() {
    let server = TestServer::start();
    server.create_db("asap").await;
    step(&server, "asap", 1000, "load", 0).await.unwrap();
    let c = server.client("asap").await;
    // At 1000 rows the sequential set is keys 250..=349. The change comes once the cross
    // section's session sits idle after its last test (the undo of the spread set), before
    // its checks at the end of the window.
    let changer = tokio::spawn(async move {
        let done = "select count(*) from pg_stat_activity where state = 'idle' and query like 'update updates u set col_double = s.col_double%col_key in (%'";
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while count(&c, done).await == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "no cross section seen"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        c.execute(
            "update updates set col_double = col_double + 1 where col_key = 300",
            &[],
        )
        .await
        .unwrap()
    });
    let e = mix(&server, "asap", 1000, "mixed-ir", false, 0)
        .await
        .unwrap_err();
    assert_eq!(changer.await.unwrap(), 1);
    assert!(
        e.to_string().contains(
            "mu_checkmod_100_seq found 99 of 100 rows of updates holding their value from before the mix"
        ),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_a_mix_early() {
    let server = TestServer::start();
    server.create_db("asap").await;
    step(&server, "asap", 1000, "load", 0).await.unwrap();
    let t = RunLoadTask {
        conninfo: Some(server.conn("asap")),
        clients: 3,
        duration_ms: 60_000,
        workload: workload(1000, "mixed-oltp"),
        ..Default::default()
    };
    let ctl = LoadControl::default();
    let stopper = ctl.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        stopper.stop();
    });
    let started = std::time::Instant::now();
    let r = serve::run_workload(Workload::As3ap, &t, &ProgressSink::detached(), &ctl, None)
        .await
        .unwrap();
    assert!(
        started.elapsed().as_secs_f64() < 5.0,
        "{:?}",
        started.elapsed()
    );
    assert!(r.measured_seconds < 5.0);
}

/// Prints the load and single-user timings and a 5 s run of each mix at
/// `BLOCKLAB_AS3AP_ROWS` rows (default 10000): `cargo test --test as3ap -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "prints timings; run by hand"]
async fn print_timings() {
    let rows = std::env::var("BLOCKLAB_AS3AP_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let server = TestServer::start();
    server.create_db("asap").await;
    for s in ["load", "single-user"] {
        let r = step(&server, "asap", rows, s, 0).await.unwrap();
        println!("{s} at {rows} rows: {:.3} s", r.seconds);
        for n in &r.notes {
            println!("  {n}");
        }
    }
    for m in ["mixed-ir", "mixed-oltp"] {
        let r = mix(&server, "asap", rows, m, false, 0).await.unwrap();
        println!(
            "{m}: {} queries, {:.0} q/s, {:?}, p50 {:.3} ms",
            r.transactions, r.tps_excluding_connections, r.metrics[0], r.latency_p50_ms
        );
    }
}
