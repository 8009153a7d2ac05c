//! `blocklab-worker init` options against the real `pgbench -i`: for several option
//! combinations, schema (tables, columns, persistence, partitions, options, indexes,
//! constraints) and data must be identical.

mod support;

use std::process::Command;

use blocklab_worker::init::{InitOptions, PartitionMethod, init_with};
use support::{PASSWORD, SUPERUSER, TestServer};

async fn describe(server: &TestServer, db: &str) -> Vec<String> {
    let c = server.client(db).await;
    let queries = [
        "select 'col ' || table_name || ' ' || ordinal_position || ' ' || column_name || ' ' || data_type || ' ' || coalesce(character_maximum_length, 0) || ' ' || is_nullable
         from information_schema.columns where table_name like 'pgbench_%' order by table_name, ordinal_position",
        "select 'rel ' || relname || ' ' || relkind::text || ' ' || relpersistence::text || ' ' || coalesce(array_to_string(reloptions, ','), '') || ' ' || coalesce(pg_get_expr(relpartbound, oid), '')
         from pg_class where relname like 'pgbench_%' order by relname",
        "select 'part ' || c.relname || ' ' || pg_get_partkeydef(c.oid) from pg_class c where c.relkind = 'p' and c.relname like 'pgbench_%' order by 1",
        "select 'idx ' || indexdef from pg_indexes where tablename like 'pgbench_%' order by 1",
        "select 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where conrelid::regclass::text like 'pgbench_%' order by 1",
    ];
    let mut out = Vec::new();
    for q in queries {
        for r in c.query(q, &[]).await.unwrap() {
            out.push(r.get::<_, String>(0));
        }
    }
    for t in [
        "pgbench_accounts",
        "pgbench_branches",
        "pgbench_history",
        "pgbench_tellers",
    ] {
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

fn pgbench_init(server: &TestServer, db: &str, args: &[&str]) {
    let pgbench =
        std::env::var("BLOCKLAB_TEST_PGBENCH").unwrap_or_else(|_| "/usr/bin/pgbench".into());
    let out = Command::new(&pgbench)
        .args([
            "-i",
            "-q",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            SUPERUSER,
        ])
        .args(args)
        .arg(db)
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap_or_else(|e| panic!("run {pgbench}: {e}"));
    assert!(
        out.status.success(),
        "pgbench -i {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_options_match_real_pgbench() {
    let server = TestServer::start();
    let cases: Vec<(Vec<&str>, InitOptions)> = vec![
        (
            vec!["-I", "dtGvpf", "-F", "80", "--unlogged-tables"],
            InitOptions {
                steps: "dtGvpf".into(),
                fillfactor: 80,
                unlogged: true,
                ..InitOptions::new(1)
            },
        ),
        (
            vec![
                "--partitions",
                "3",
                "--partition-method",
                "range",
                "-s",
                "2",
            ],
            InitOptions {
                partitions: 3,
                partition_method: Some(PartitionMethod::Range),
                ..InitOptions::new(2)
            },
        ),
        (
            vec![
                "--partitions",
                "4",
                "--partition-method",
                "hash",
                "-F",
                "90",
                "-I",
                "dtgvpf",
            ],
            InitOptions {
                partitions: 4,
                partition_method: Some(PartitionMethod::Hash),
                fillfactor: 90,
                steps: "dtgvpf".into(),
                ..InitOptions::new(1)
            },
        ),
        (
            vec!["--partitions", "2"],
            InitOptions {
                partitions: 2,
                ..InitOptions::new(1)
            },
        ),
        (
            vec!["-I", "dt"],
            InitOptions {
                steps: "dt".into(),
                ..InitOptions::new(1)
            },
        ),
    ];
    for (i, (args, opts)) in cases.iter().enumerate() {
        let (ours, theirs) = (format!("ours{i}"), format!("theirs{i}"));
        server.create_db(&ours).await;
        server.create_db(&theirs).await;
        init_with(&server.conninfo(&ours), opts)
            .await
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        pgbench_init(&server, &theirs, args);
        let (a, b) = (
            describe(&server, &ours).await,
            describe(&server, &theirs).await,
        );
        assert!(a.len() > 10, "{a:#?}");
        assert_eq!(a, b, "pgbench -i {args:?}");
    }
    // The cases really differ: partitions, persistence and foreign keys show up.
    let d = describe(&server, "ours2").await;
    assert!(
        d.iter().any(|l| l.starts_with(
            "rel pgbench_accounts_4 r p fillfactor=90 FOR VALUES WITH (modulus 4, remainder 3)"
        )),
        "{d:#?}"
    );
    assert!(
        d.iter().any(|l| l.contains("pgbench_history_aid_fkey")),
        "{d:#?}"
    );
    let d = describe(&server, "ours0").await;
    assert!(
        d.iter()
            .any(|l| l.starts_with("rel pgbench_tellers r u fillfactor=80")),
        "{d:#?}"
    );

    let conninfo = server.conninfo("postgres");
    for (o, want) in [
        (
            InitOptions {
                steps: "dtx".into(),
                ..InitOptions::new(1)
            },
            "unrecognized initialization step \"x\"",
        ),
        (
            InitOptions {
                fillfactor: 5,
                ..InitOptions::new(1)
            },
            "invalid fillfactor",
        ),
        (
            InitOptions {
                partition_method: Some(PartitionMethod::Hash),
                ..InitOptions::new(1)
            },
            "--partition-method requires",
        ),
    ] {
        let e = init_with(&conninfo, &o).await.unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}

/// The progress lines of an init on stderr: (rows done, rows, percent), each line checked
/// against pgbench's shape.
fn progress_lines(stderr: &[u8]) -> Vec<(u64, u64, u64)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains(" tuples ("))
        .map(|l| {
            let (head, rest) = l.split_once(" tuples (").expect("tuples");
            let (done, total) = head.split_once(" of ").expect("of");
            let (pct, times) = rest.split_once("%) done (elapsed ").expect("done");
            let (elapsed, remaining) = times.split_once(" s, remaining ").expect("remaining");
            let remaining = remaining.strip_suffix(" s)").expect("end").trim_end();
            for t in [elapsed, remaining] {
                let (_, decimals) = t.split_once('.').expect("decimals");
                assert_eq!(decimals.len(), 2, "{l:?}");
                t.parse::<f64>().unwrap_or_else(|_| panic!("{l:?}"));
            }
            let n = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{l:?}"));
            (n(done), n(total), n(pct))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_progress_lines_match_real_pgbench() {
    let server = TestServer::start();
    server.create_db("theirs").await;
    server.create_db("ours").await;
    for quiet in [false, true] {
        let mut args = vec!["-s", "2"];
        if quiet {
            args.push("-q");
        }
        let conn = [
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            SUPERUSER,
        ]
        .map(String::from);
        let pgbench =
            std::env::var("BLOCKLAB_TEST_PGBENCH").unwrap_or_else(|_| "/usr/bin/pgbench".into());
        let theirs = Command::new(&pgbench)
            .arg("-i")
            .args(&args)
            .args(&conn)
            .arg("theirs")
            .env("PGPASSWORD", PASSWORD)
            .output()
            .unwrap();
        let ours = Command::new(env!("CARGO_BIN_EXE_blocklab-worker"))
            .arg("init")
            .args(&args)
            .args(&conn)
            .arg("ours")
            .env("PGPASSWORD", PASSWORD)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        for o in [&theirs, &ours] {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let (t, o) = (progress_lines(&theirs.stderr), progress_lines(&ours.stderr));
        if quiet {
            // At most one line per 5 seconds, and the last row's.
            for lines in [&t, &o] {
                assert_eq!(lines.last(), Some(&(200_000, 200_000, 100)), "{lines:?}");
                assert!(lines.iter().all(|l| l.0 % 100 == 0), "{lines:?}");
            }
        } else {
            // One line per 100000 rows.
            let want = vec![(100_000, 200_000, 50), (200_000, 200_000, 100)];
            assert_eq!(t, want, "pgbench");
            assert_eq!(o, want, "ours");
        }
    }
}
