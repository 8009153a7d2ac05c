//! The standalone `blocklab-worker bench` next to the real pgbench: same summary layout
//! (line for line, up to the numbers), JSON output, -C, -P and exit codes.

mod support;

use std::process::{Command, Output};

use support::{PASSWORD, SUPERUSER, TestServer};

fn ours(args: &[&str], conninfo: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blocklab-worker"))
        .arg("bench")
        .args(args)
        .arg(conninfo)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn theirs(server: &TestServer, args: &[&str]) -> Output {
    let pgbench =
        std::env::var("BLOCKLAB_TEST_PGBENCH").unwrap_or_else(|_| "/usr/bin/pgbench".into());
    Command::new(pgbench)
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            SUPERUSER,
        ])
        .args(args)
        .arg("bench")
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap()
}

/// A summary line without its numbers, e.g. "latency average = # ms".
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in line.chars() {
        if c.is_ascii_digit() || (in_num && c == '.') {
            if !in_num {
                out.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_prints_pgbench_layout() {
    let server = TestServer::start();
    server.create_db("bench").await;
    blocklab_worker::init_data(&server.conn("bench"), 1)
        .await
        .unwrap();
    let conninfo = server.conninfo("bench");
    for args in [
        vec!["-n", "-c", "2", "-t", "50", "-S", "-M", "prepared"],
        vec![
            "-n",
            "-c",
            "2",
            "-T",
            "1",
            "-b",
            "select-only@2",
            "-b",
            "simple-update",
            "--max-tries",
            "3",
            "-R",
            "300",
            "-L",
            "100",
        ],
        vec!["-n", "-c", "1", "-t", "20", "-r", "-N"],
    ] {
        let a = ours(&args, &conninfo);
        let b = theirs(&server, &args);
        assert!(
            a.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&a.stderr)
        );
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        let ours_lines: Vec<String> = String::from_utf8_lossy(&a.stdout)
            .lines()
            .map(shape)
            .collect();
        let theirs_lines: Vec<String> = String::from_utf8_lossy(&b.stdout)
            .lines()
            .filter(|l| !l.starts_with("pgbench ("))
            .map(shape)
            .filter(|l| {
                !l.starts_with(" - number of transactions retried")
                    && !l.starts_with(" - total number of retries")
                    && !l.starts_with(" - number of transactions skipped")
                    && !l.starts_with(" - latency stddev")
            })
            .collect();
        assert_eq!(
            &ours_lines[..theirs_lines.len()],
            &theirs_lines[..],
            "{args:?}"
        );
        assert!(
            ours_lines[theirs_lines.len()].starts_with("latency percentiles: p# = # ms"),
            "{ours_lines:#?}"
        );
    }

    // -C: a new connection for every transaction; --json; -P prints progress lines.
    let c = server.client("bench").await;
    c.batch_execute("create table pids(p int)").await.unwrap();
    let script = server.dir().join("pid.sql");
    std::fs::write(&script, "insert into pids select pg_backend_pid();\n").unwrap();
    let f = script.to_str().unwrap();
    let out = ours(
        &["-n", "-C", "-c", "2", "-t", "5", "-f", f, "--json"],
        &conninfo,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["transactions"], 10);
    assert_eq!(j["scripts"][0]["description"], f);
    let distinct: i64 = c
        .query_one("select count(distinct p) from pids", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(distinct, 10, "one backend per transaction with -C");
    let out = ours(&["-n", "-c", "1", "-T", "2", "-S", "-P", "1"], &conninfo);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("progress: 1.0 s, ") && err.contains(" tps, lat "),
        "{err}"
    );

    // Exit codes: 1 for a bad script, 2 when clients abort.
    std::fs::write(&script, "\\set x 1 +\n").unwrap();
    let out = ours(&["-n", "-t", "1", "-f", f], &conninfo);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pid.sql:1: syntax error in command \"set\"")
    );
    std::fs::write(&script, "\\set x 1 / 0\n").unwrap();
    let out = ours(&["-n", "-t", "1", "-f", f], &conninfo);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
