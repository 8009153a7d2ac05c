//! Custom scripts and run options against a real PostgreSQL server: variables, \gset,
//! conditionals, pipelines, -t, -R/-L, retries, seeds, aborts, and the daemon's go and
//! cancel.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::{ProgressSink, TaskHandler};
use blocklab_proto::{
    CancelTask, Go, RunLoadTask, Setting, Task, WeightedScript, task, task_result,
};
use blocklab_worker::{LoadOptions, Protocol, ScriptSpec, WorkerHandler, init_data, run_load};
use support::TestServer;

fn script_opts(server: &TestServer, text: &str, protocol: Protocol) -> LoadOptions {
    let mut o = LoadOptions::new(server.conninfo("bench"), Duration::from_secs(1));
    o.script_specs = vec![ScriptSpec::file("test.sql", text.into(), 1)];
    o.protocol = protocol;
    o.scale = 1;
    o
}

async fn rows(server: &TestServer, sql: &str) -> Vec<String> {
    let c = server.client("bench").await;
    c.query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect()
}

const FEATURES: &str = r"
\set h hash(10, 5432)
\set p permute(7, 10, 5432)
select :h::text || ',' || :p as hp, 2.5::numeric as n \gset
\if :n > 2 and :client_id >= 0
  \set branch 1
\elif true
  \set branch 2
\else
  \set branch 3
\endif
select 1 as one, 'x' as two
\aset got_
\startpipeline
insert into out values (:client_id, 'pipe-' || :got_one);
select pg_sleep(0);
\endpipeline
\sleep 1 ms
insert into out values (:client_id, :hp || '|' || :branch || '|' || :n || '|' || :d_var || '|' || :got_two);
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_run_with_every_meta_command() {
    let server = TestServer::start();
    server.create_db("bench").await;
    let c = server.client("bench").await;
    for protocol in [Protocol::Extended, Protocol::Prepared] {
        c.batch_execute("drop table if exists out; create table out(c int, v text)")
            .await
            .unwrap();
        let text = FEATURES;
        let mut o = script_opts(&server, text, protocol);
        o.clients = 2;
        o.transactions_per_client = 3;
        o.variables = vec![("d_var".into(), "7".into())];
        let r = run_load(&o)
            .await
            .unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        assert_eq!(
            (
                r.measured.transactions,
                r.measured.failures,
                r.aborted_clients
            ),
            (6, 0, 0),
            "{protocol:?} {r:#?}"
        );
        let got = rows(&server, "select c || ':' || v from out order by 1").await;
        assert_eq!(got.len(), 12, "{got:?}");
        // Values from the real pgbench: hash(10, 5432) and permute(7, 10, 5432).
        assert!(
            got.contains(&"0:-5817877081768721676,4|1|2.5|7|x".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"1:-5817877081768721676,4|1|2.5|7|x".to_string()),
            "{got:?}"
        );
        assert!(got.contains(&"1:pipe-1".to_string()), "{got:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_reproduce_and_errors_abort_clients() {
    let server = TestServer::start();
    server.create_db("bench").await;
    let c = server.client("bench").await;
    c.batch_execute("create table r(c int, v bigint)")
        .await
        .unwrap();
    let text = "\\set v random(1, 1000000000) + random_zipfian(1, 100, 1.5) + random_gaussian(1, 10, 2.5) + random_exponential(1, 10, 2)\ninsert into r values (:client_id, :v);\n";
    let mut o = script_opts(&server, text, Protocol::Prepared);
    o.clients = 3;
    o.threads = 2;
    o.transactions_per_client = 20;
    o.random_seed = Some(42);
    let first = run_load(&o).await.unwrap();
    assert_eq!(first.measured.random_seed, 42);
    let a = rows(
        &server,
        "select string_agg(v::text, ',' order by c, v) from r",
    )
    .await;
    c.batch_execute("truncate r").await.unwrap();
    run_load(&o).await.unwrap();
    let b = rows(
        &server,
        "select string_agg(v::text, ',' order by c, v) from r",
    )
    .await;
    assert_eq!(a, b, "same seed, same values");
    c.batch_execute("truncate r").await.unwrap();
    o.random_seed = Some(43);
    run_load(&o).await.unwrap();
    let d = rows(
        &server,
        "select string_agg(v::text, ',' order by c, v) from r",
    )
    .await;
    assert_ne!(a, d);

    // Division by zero aborts each client, as in pgbench.
    let mut o = script_opts(
        &server,
        "\\set x 1 / (:client_id - :client_id)\nselect 1;\n",
        Protocol::Simple,
    );
    o.clients = 2;
    let r = run_load(&o).await.unwrap();
    assert_eq!(
        (r.measured.transactions, r.aborted_clients),
        (0, 2),
        "{r:#?}"
    );
    let e = r.first_error.unwrap();
    assert!(
        e.contains("aborted in command 0 (set) of script 0; division by zero"),
        "{e}"
    );

    // A script error names file, line and column.
    let o = script_opts(&server, "select 1;\n\\set x 1 +\n", Protocol::Simple);
    let e = run_load(&o).await.unwrap_err().to_string();
    assert!(
        e.starts_with("test.sql:2: syntax error in command \"set\""),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serialization_failures_are_retried() {
    let server = TestServer::start();
    server.create_db("bench").await;
    let c = server.client("bench").await;
    c.batch_execute(
        "create table counter(id int primary key, v int); insert into counter values (1, 0)",
    )
    .await
    .unwrap();
    let text = "begin isolation level repeatable read;\nselect v from counter where id = 1;\nselect pg_sleep(0.002);\nupdate counter set v = v + 1 where id = 1;\nend;\n";
    let mut o = script_opts(&server, text, Protocol::Extended);
    o.clients = 4;
    o.max_tries = 1;
    let r = run_load(&o).await.unwrap();
    assert!(
        r.measured.failures > 0 && r.measured.retries == 0,
        "without retries: {r:#?}"
    );
    let v: i32 = c
        .query_one("select v from counter", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(i64::from(v), r.measured.transactions as i64);

    c.batch_execute("update counter set v = 0").await.unwrap();
    o.max_tries = 1000;
    let r = run_load(&o).await.unwrap();
    assert!(
        r.measured.retries > 0 && r.retried > 0 && r.retried <= r.measured.retries,
        "{r:#?}"
    );
    assert!(
        r.measured.failures <= 4,
        "only transactions cut by the end may fail: {r:#?}"
    );
    let v: i32 = c
        .query_one("select v from counter", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(i64::from(v), r.measured.transactions as i64);
    assert_eq!(
        blocklab_worker::serve::convert::load_result(&r).retries,
        r.measured.retries
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_and_latency_limits() {
    let server = TestServer::start();
    server.create_db("bench").await;
    let mut o = script_opts(&server, "select 1;\n", Protocol::Prepared);
    o.clients = 2;
    o.duration = Duration::from_secs(2);
    o.rate = 200.0;
    let r = run_load(&o).await.unwrap();
    assert!(
        (280..=520).contains(&r.measured.transactions),
        "~400 at 200 tps: {r:#?}"
    );
    assert!(
        r.measured.schedule_lag_avg_ms >= 0.0 && r.measured.schedule_lag_avg_ms < 50.0,
        "{r:#?}"
    );
    assert!(
        blocklab_worker::serve::convert::load_result(&r).schedule_lag_avg_ms
            == r.measured.schedule_lag_avg_ms
    );

    // Every transaction sleeps 5 ms: all are late for a 1 ms limit; with a rate far
    // above capacity, transactions already late at their schedule are skipped.
    let mut o = script_opts(&server, "\\sleep 5 ms\nselect 1;\n", Protocol::Simple);
    o.duration = Duration::from_secs(1);
    o.latency_limit = Some(Duration::from_millis(1));
    let r = run_load(&o).await.unwrap();
    assert!(
        r.measured.transactions > 0 && r.measured.late == r.measured.transactions,
        "{r:#?}"
    );
    o.rate = 2000.0;
    let r = run_load(&o).await.unwrap();
    assert!(r.measured.skipped > 0, "{r:#?}");
    assert!(r.summary().contains("number of transactions skipped:"));
}

fn load_task(server: &TestServer, id: &str, duration_ms: u64, go: bool) -> Task {
    Task {
        task_id: id.into(),
        run_id: "run".into(),
        attempt: 1,
        kind: Some(task::Kind::RunLoad(RunLoadTask {
            conninfo: Some(server.conn("bench")),
            scripts: vec![WeightedScript {
                name: "d.sql".into(),
                text: "insert into seen values (:client_id, :k);\n".into(),
                weight: 1,
            }],
            clients: 2,
            threads: 1,
            duration_ms,
            protocol: "prepared".into(),
            scale: 1,
            client_id_offset: 10,
            wait_for_go: go,
            variables: vec![Setting {
                name: "k".into(),
                value: "5".into(),
            }],
            random_seed: Some(7),
            ..Default::default()
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_waits_for_go_and_stops_on_cancel() {
    let server = TestServer::start();
    server.create_db("bench").await;
    let c = server.client("bench").await;
    c.batch_execute("create table seen(c int, k int)")
        .await
        .unwrap();
    let h = Arc::new(WorkerHandler::default());
    let task = load_task(&server, "t-go", 1000, true);
    let h2 = h.clone();
    let run = tokio::spawn(async move { h2.handle(task, ProgressSink::detached()).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let n: i64 = c
        .query_one("select count(*) from seen", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "nothing runs before the go");
    let go_at = Instant::now();
    h.on_go(Go {
        task_id: "other".into(),
        run_id: "run".into(),
        attempt: 1,
    });
    h.on_go(Go {
        task_id: "t-go".into(),
        run_id: "run".into(),
        attempt: 1,
    });
    let out = run.await.unwrap();
    let task_result::Outcome::RunLoad(r) = out else {
        panic!("{out:?}")
    };
    assert!(
        go_at.elapsed() >= Duration::from_millis(950),
        "measured after the go"
    );
    assert!(
        r.transactions > 0 && r.clients == 2 && r.random_seed == 7,
        "{r:?}"
    );
    let ids = rows(
        &server,
        "select string_agg(distinct c::text, ',' order by c::text) || '/' || min(k) from seen",
    )
    .await;
    assert_eq!(
        ids,
        ["10,11/5"],
        "client ids start at the offset; -D variables reach scripts"
    );

    // Cancel: a 60 s load ends promptly.
    let h2 = h.clone();
    let task = load_task(&server, "t-cancel", 60_000, false);
    let run = tokio::spawn(async move { h2.handle(task, ProgressSink::detached()).await });
    tokio::time::sleep(Duration::from_millis(800)).await;
    let asked = Instant::now();
    h.on_cancel(CancelTask {
        task_id: "t-cancel".into(),
        run_id: "run".into(),
        attempt: 1,
    });
    let out = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("cancel is prompt")
        .unwrap();
    assert!(asked.elapsed() < Duration::from_secs(3));
    assert!(
        matches!(out, task_result::Outcome::Error(ref e) if e.reason.contains("cancelled")),
        "{out:?}"
    );

    // \shell is refused in daemon mode.
    let mut task = load_task(&server, "t-shell", 500, false);
    if let Some(task::Kind::RunLoad(t)) = task.kind.as_mut() {
        t.scripts[0].text = "\\shell true\nselect 1;\n".into();
    }
    let out = h.handle(task, ProgressSink::detached()).await;
    assert!(
        matches!(out, task_result::Outcome::Error(ref e) if e.reason.contains("refused in daemon mode")),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_builtins_and_transactions_per_client() {
    let server = TestServer::start();
    server.create_db("bench").await;
    init_data(&server.conn("bench"), 1).await.unwrap();
    let mut o = LoadOptions::new(server.conninfo("bench"), Duration::from_secs(1));
    o.script_specs = vec![
        ScriptSpec::builtin(blocklab_worker::Builtin::SelectOnly, 3),
        ScriptSpec::builtin(blocklab_worker::Builtin::SimpleUpdate, 1),
    ];
    o.clients = 2;
    o.transactions_per_client = 400;
    o.per_statement = true;
    o.protocol = Protocol::Prepared;
    let r = run_load(&o).await.unwrap();
    assert_eq!(r.measured.transactions, 800);
    let (sel, upd) = (r.scripts[0].transactions, r.scripts[1].transactions);
    assert_eq!(sel + upd, 800);
    assert!(sel > 2 * upd, "3:1 weights: {sel} vs {upd}");
    assert_eq!(r.scripts[0].statements.len(), 2);
    let s = r.summary();
    assert!(s.contains("transaction type: multiple scripts"), "{s}");
    assert!(
        s.contains("SQL script 1: <builtin: select only>\n - weight: 3 (targets 75.0% of total)"),
        "{s}"
    );
    assert!(
        s.contains("number of transactions actually processed: 800/800"),
        "{s}"
    );
}
