//! Against a real PostgreSQL server: data loading compared with the real `pgbench -i`,
//! load runs under every protocol, consistency, failures and clear errors.

mod support;

use std::process::Command;
use std::time::Duration;

use blocklab_daemon::fleet::{ProgressSink, TaskHandler};
use blocklab_proto::{RunLoadTask, Task, task, task_result};
use blocklab_worker::{
    Builtin, LoadOptions, Protocol, WorkerError, WorkerHandler, init_data, run_load,
};
use support::{PASSWORD, SUPERUSER, TestServer};

const TABLES: [&str; 4] = [
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_history",
    "pgbench_tellers",
];

/// Everything about the pgbench tables that must not differ between two loads.
async fn schema_and_data(server: &TestServer, db: &str) -> Vec<String> {
    let c = server.client(db).await;
    let mut out = Vec::new();
    let cols = c
        .query(
            "select table_name, ordinal_position, column_name, data_type, character_maximum_length, is_nullable
             from information_schema.columns where table_name like 'pgbench_%' order by 1, 2",
            &[],
        )
        .await
        .unwrap();
    for r in cols {
        out.push(format!(
            "col {} {} {} {} {:?} {}",
            r.get::<_, String>(0),
            r.get::<_, i32>(1),
            r.get::<_, String>(2),
            r.get::<_, String>(3),
            r.get::<_, Option<i32>>(4),
            r.get::<_, String>(5)
        ));
    }
    let rels = c
        .query(
            "select relname, relkind::text, coalesce(array_to_string(reloptions, ','), '')
             from pg_class where relname like 'pgbench_%' order by 1",
            &[],
        )
        .await
        .unwrap();
    for r in rels {
        out.push(format!(
            "rel {} {} {}",
            r.get::<_, String>(0),
            r.get::<_, String>(1),
            r.get::<_, String>(2)
        ));
    }
    for r in c
        .query(
            "select indexdef from pg_indexes where tablename like 'pgbench_%' order by 1",
            &[],
        )
        .await
        .unwrap()
    {
        out.push(format!("idx {}", r.get::<_, String>(0)));
    }
    for t in TABLES {
        let r = c
            .query_one(&format!("select count(*), coalesce(md5(string_agg(t::text, '|' order by t::text)), '') from {t} t"), &[])
            .await
            .unwrap();
        out.push(format!(
            "data {t} {} {}",
            r.get::<_, i64>(0),
            r.get::<_, String>(1)
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_data_matches_real_pgbench() {
    let server = TestServer::start();
    server.create_db("ours").await;
    server.create_db("theirs").await;

    let r = init_data(&server.conn("ours"), 1).await.expect("init_data");
    assert_eq!(r.accounts_rows, 100_000);
    assert!(r.seconds > 0.0);

    let pgbench =
        std::env::var("BLOCKLAB_TEST_PGBENCH").unwrap_or_else(|_| "/usr/bin/pgbench".into());
    let out = Command::new(&pgbench)
        .args([
            "-i",
            "-s",
            "1",
            "-q",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            SUPERUSER,
            "theirs",
        ])
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap_or_else(|e| panic!("run {pgbench}: {e}"));
    assert!(
        out.status.success(),
        "pgbench -i failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let ours = schema_and_data(&server, "ours").await;
    let theirs = schema_and_data(&server, "theirs").await;
    assert!(
        ours.iter()
            .any(|l| l.starts_with("data pgbench_accounts 100000 ")),
        "{ours:#?}"
    );
    assert!(
        ours.iter()
            .any(|l| l.starts_with("data pgbench_tellers 10 ")),
        "{ours:#?}"
    );
    assert!(
        ours.iter()
            .any(|l| l.starts_with("data pgbench_branches 1 ")),
        "{ours:#?}"
    );
    assert!(
        ours.iter()
            .any(|l| l == "rel pgbench_accounts r fillfactor=100"),
        "{ours:#?}"
    );
    assert_eq!(ours, theirs, "our load differs from pgbench -i");

    // Loading again replaces the tables (the "d" step).
    let again = init_data(&server.conn("ours"), 2)
        .await
        .expect("second init_data");
    assert_eq!(again.accounts_rows, 200_000);
}

fn opts(server: &TestServer, builtin: Builtin, protocol: Protocol) -> LoadOptions {
    let mut o =
        LoadOptions::new(server.conninfo("bench"), Duration::from_secs(2)).with_builtin(builtin);
    o.protocol = protocol;
    o.clients = 4;
    o.threads = 2;
    o
}

async fn balances(server: &TestServer) -> [i64; 4] {
    let c = server.client("bench").await;
    let r = c
        .query_one(
            "select (select coalesce(sum(bbalance),0)::int8 from pgbench_branches),
                    (select coalesce(sum(tbalance),0)::int8 from pgbench_tellers),
                    (select coalesce(sum(abalance),0)::int8 from pgbench_accounts),
                    (select coalesce(sum(delta),0)::int8 from pgbench_history)",
            &[],
        )
        .await
        .unwrap();
    [r.get(0), r.get(1), r.get(2), r.get(3)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_runs_under_every_protocol() {
    let server = TestServer::start();
    server.create_db("bench").await;
    init_data(&server.conn("bench"), 1)
        .await
        .expect("init_data");

    for protocol in [Protocol::Simple, Protocol::Extended, Protocol::Prepared] {
        for builtin in [Builtin::TpcbLike, Builtin::SelectOnly] {
            let mut o = opts(&server, builtin, protocol);
            if protocol == Protocol::Prepared {
                o.warmup = Duration::from_millis(500);
                o.scale = 1;
            }
            let r = run_load(&o)
                .await
                .unwrap_or_else(|e| panic!("{builtin:?}/{protocol:?}: {e}"));
            let what = format!("{builtin:?}/{protocol:?}: {r:#?}");
            assert!(r.measured.transactions > 0, "{what}");
            assert_eq!(r.measured.failures, 0, "{what}");
            assert_eq!(r.scale, 1);
            assert!(r.measured.latency_p50_ms > 0.0, "{what}");
            assert!(
                r.measured.latency_p50_ms <= r.measured.latency_p90_ms,
                "{what}"
            );
            assert!(
                r.measured.latency_p90_ms <= r.measured.latency_p99_ms,
                "{what}"
            );
            assert!(
                r.measured.latency_p99_ms <= r.measured.latency_p999_ms,
                "{what}"
            );
            assert!(
                r.measured.latency_p999_ms <= r.measured.latency_max_ms,
                "{what}"
            );
            assert!(
                r.measured.measured_seconds >= 2.0 && r.measured.measured_seconds < 3.0,
                "{what}"
            );
            assert!(
                r.measured.tps_including_connections <= r.measured.tps_excluding_connections,
                "{what}"
            );
            assert!(
                r.measured.client_cpu_user_s + r.measured.client_cpu_system_s > 0.0,
                "{what}"
            );
            assert_eq!(r.measured.samples.len(), 2, "{what}");
            assert_eq!(
                r.measured
                    .samples
                    .iter()
                    .map(|s| s.transactions)
                    .sum::<u64>(),
                r.measured.transactions,
                "{what}"
            );
            assert_eq!(r.histogram.len(), r.measured.transactions, "{what}");
            let p = blocklab_worker::serve::convert::load_result(&r);
            let h = blocklab_worker::engine::stats::deserialize_histogram(&p.latency_histogram)
                .unwrap();
            assert_eq!(h.len(), r.measured.transactions);
            if builtin == Builtin::TpcbLike {
                let [b, t, a, h] = balances(&server).await;
                assert_eq!(b, h, "branch balances vs history after {protocol:?}");
                assert_eq!(t, h, "teller balances vs history after {protocol:?}");
                assert_eq!(a, h, "account balances vs history after {protocol:?}");
            }
        }
    }
    // The same through the daemon's task handler, as the coordinator would send it.
    let task = Task {
        task_id: "t1".into(),
        run_id: "r1".into(),
        attempt: 1,
        kind: Some(task::Kind::RunLoad(RunLoadTask {
            conninfo: Some(server.conn("bench")),
            builtin: "select-only".into(),
            clients: 2,
            threads: 1,
            duration_ms: 1000,
            warmup_ms: 200,
            protocol: "prepared".into(),
            scale: 0,
            ..Default::default()
        })),
    };
    match WorkerHandler::default()
        .handle(task, ProgressSink::detached())
        .await
    {
        task_result::Outcome::RunLoad(r) => {
            assert!(r.transactions > 0 && r.failures == 0, "{r:?}");
            assert_eq!(r.samples.len(), 1);
            assert!(!r.latency_histogram.is_empty());
            assert!(
                r.measured_seconds >= 1.0 && r.measured_seconds < 1.5,
                "{r:?}"
            );
        }
        other => panic!("unexpected outcome {other:?}"),
    }

    let c = server.client("bench").await;
    let hist: i64 = c
        .query_one("select count(*) from pgbench_history", &[])
        .await
        .unwrap()
        .get(0);
    assert!(hist > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_counted_and_connections_recover() {
    let server = TestServer::start();
    server.create_db("bench").await;
    server.create_db("empty").await;

    // No tables: as pgbench, each client aborts at its first error.
    let mut o = LoadOptions::new(server.conninfo("empty"), Duration::from_secs(1));
    o.scale = 1;
    o.clients = 2;
    o.protocol = Protocol::Extended;
    let r = run_load(&o)
        .await
        .expect("a run whose clients abort still reports");
    assert_eq!(
        (
            r.measured.transactions,
            r.measured.failures,
            r.aborted_clients
        ),
        (0, 0, 2),
        "{r:#?}"
    );
    assert!(
        r.first_error
            .as_deref()
            .unwrap()
            .contains("aborted in command 5 query 0"),
        "{r:#?}"
    );
    // Continuing on errors: every transaction fails, the clients keep going.
    o.continue_on_error = true;
    let r = run_load(&o)
        .await
        .expect("a run whose transactions fail still reports");
    assert_eq!(r.measured.transactions, 0);
    assert!(r.measured.failures > 10, "{r:#?}");
    assert!(
        r.first_error
            .as_deref()
            .unwrap()
            .contains("pgbench_accounts"),
        "{r:#?}"
    );

    let task = Task {
        kind: Some(task::Kind::RunLoad(RunLoadTask {
            conninfo: Some(server.conn("empty")),
            builtin: "tpcb-like".into(),
            clients: 1,
            threads: 1,
            duration_ms: 300,
            protocol: "simple".into(),
            scale: 1,
            ..Default::default()
        })),
        ..Default::default()
    };
    match WorkerHandler::default()
        .handle(task, ProgressSink::detached())
        .await
    {
        task_result::Outcome::Error(e) => {
            assert_eq!(e.stage, blocklab_spec::Stage::Measuring.as_str());
            assert!(
                e.reason.contains("no transaction succeeded")
                    && e.reason.contains("pgbench_accounts"),
                "{e:?}"
            );
        }
        other => panic!("unexpected outcome {other:?}"),
    }

    // Without a scale and without tables, the run cannot start.
    o.scale = 0;
    let e = run_load(&o).await.unwrap_err().to_string();
    assert!(e.contains("pgbench_branches"), "{e}");

    // Backends killed mid-run, continuing on errors (as fleet runs do): failures are
    // counted, clients reconnect and go on.
    init_data(&server.conn("bench"), 1).await.unwrap();
    let mut o = opts(&server, Builtin::TpcbLike, Protocol::Prepared);
    o.duration = Duration::from_secs(3);
    o.continue_on_error = true;
    let killer = server.client("postgres").await;
    let run = tokio::spawn(async move { run_load(&o).await });
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let killed: i64 = killer
        .query_one(
            "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity
             where application_name = 'blocklab-worker' and datname = 'bench') k",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 4);
    let r = run.await.unwrap().expect("run survives killed backends");
    assert!(
        r.measured.failures >= 1 && r.measured.failures <= 4,
        "{r:#?}"
    );
    let late: u64 = r
        .measured
        .samples
        .iter()
        .skip(2)
        .map(|s| s.transactions)
        .sum();
    assert!(late > 0, "clients reconnected: {r:#?}");
    let [b, _, _, h] = balances(&server).await;
    assert_eq!(b, h);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_and_dead_hosts_are_clear_errors() {
    let server = TestServer::start();
    let mut conn = server.conn("postgres");
    conn.password = "wrong".into();
    let err = init_data(&conn, 1).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, WorkerError::Connect { .. }), "{msg}");
    assert!(msg.contains("password authentication failed"), "{msg}");
    assert!(msg.contains(&format!("127.0.0.1:{}", server.port)), "{msg}");

    let mut o = LoadOptions::new(conn.to_conninfo_string(), Duration::from_secs(1));
    o.clients = 3;
    o.threads = 2;
    let msg = run_load(&o).await.unwrap_err().to_string();
    assert!(msg.contains("password authentication failed"), "{msg}");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    o.conninfo = format!("host=127.0.0.1 port={port} user=x password=y dbname=z");
    let msg = run_load(&o).await.unwrap_err().to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")) && msg.to_lowercase().contains("refused"),
        "{msg}"
    );
}
