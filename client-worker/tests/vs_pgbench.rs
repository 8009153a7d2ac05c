//! Semantics pinned against the real pgbench on the same server: exit statuses of bad
//! scripts and SQL errors, aborted clients, scripts without pgbench tables, the `-R` lag
//! distribution, `-C` latency and connection time, and the transaction log files field
//! for field. Both tools get pgbench's connection options (`-h -p -U dbname`, PGPASSWORD).

mod support;

use std::path::Path;

use support::TestServer;
use support::compare::{Tool, has_line, logs, median, summary_number, text};

fn script(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_statuses_and_aborts_match_pgbench() {
    let server = TestServer::start();
    // No pgbench tables in this database: scripts given with -f run anyway.
    server.create_db("plain").await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let many = vec!["x"; 256].join(" ");
    let cases: Vec<(&str, String, Vec<&str>, i32)> = vec![
        (
            "custom script without pgbench tables",
            script(d, "ok.sql", "select :scale;\n"),
            vec![],
            0,
        ),
        (
            "empty script",
            script(d, "empty.sql", "-- nothing here\n"),
            vec![],
            1,
        ),
        (
            "\\shell with 256 arguments",
            script(d, "shell.sql", &format!("\\shell echo {many}\n")),
            vec![],
            1,
        ),
        (
            "bad expression",
            script(d, "expr.sql", "\\set x 1 +\n"),
            vec![],
            1,
        ),
        (
            "syntax error under -M prepared",
            script(d, "prep.sql", "selec 1;\n"),
            vec!["-M", "prepared"],
            2,
        ),
        (
            "\\set of an invalid variable name",
            script(d, "var.sql", "\\set 1x 5\nselect 1;\n"),
            vec![],
            2,
        ),
        (
            "non-retryable SQL error",
            script(d, "div.sql", "select 1;\nselect 1/0;\n"),
            vec![],
            2,
        ),
    ];
    for (what, file, extra, want) in &cases {
        let mut args = vec!["-n", "-c", "2", "-t", "3", "-f", file.as_str()];
        args.extend(extra);
        let ours = Tool::Ours.run(&server, "plain", &args, d);
        let theirs = Tool::Pgbench.run(&server, "plain", &args, d);
        assert_eq!(
            theirs.status.code(),
            Some(*want),
            "pgbench, {what}: {}",
            text(&theirs)
        );
        assert_eq!(
            ours.status.code(),
            Some(*want),
            "ours, {what}: {}",
            text(&ours)
        );
        if *want == 2 {
            // Every client aborted at its first transaction: nothing processed.
            for o in [&ours, &theirs] {
                assert_eq!(
                    summary_number(o, "number of transactions actually processed:"),
                    Some(0.0),
                    "{what}: {}",
                    text(o)
                );
            }
            assert!(
                String::from_utf8_lossy(&ours.stderr).contains("Run was aborted"),
                "{}",
                text(&ours)
            );
        }
    }
    // An SQL error in some transactions only: those clients abort, the others finish.
    let half = script(d, "half.sql", "select 1 / (:client_id % 2);\n");
    let args = ["-n", "-c", "4", "-t", "5", "-f", half.as_str()];
    for tool in [Tool::Ours, Tool::Pgbench] {
        let o = tool.run(&server, "plain", &args, d);
        assert_eq!(o.status.code(), Some(2), "{tool:?}: {}", text(&o));
        assert_eq!(
            summary_number(&o, "number of transactions actually processed:"),
            Some(10.0),
            "{tool:?}: two clients of four finish their 5: {}",
            text(&o)
        );
    }
    // --continue-on-error: the errors are failed transactions, every client finishes.
    let mut args = args.to_vec();
    args.push("--continue-on-error");
    let o = Tool::Ours.run(&server, "plain", &args, d);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        summary_number(&o, "number of failed transactions:"),
        Some(10.0),
        "{}",
        text(&o)
    );
}

/// Scheduled starts (end minus latency, µs) of a per-transaction log, sorted, as offsets
/// from the first.
fn schedule(files: &[(String, Vec<Vec<String>>)]) -> Vec<i64> {
    let mut v: Vec<i64> = files
        .iter()
        .flat_map(|(_, lines)| lines.iter())
        .map(|f| {
            let n = |i: usize| f[i].parse::<i64>().unwrap();
            n(4) * 1_000_000 + n(5) - n(2)
        })
        .collect();
    v.sort_unstable();
    let first = v[0];
    v.iter().map(|x| x - first).collect()
}

/// Latency and lag fields of a per-transaction log (ok transactions only), in ms.
fn field_ms(files: &[(String, Vec<Vec<String>>)], field: usize) -> Vec<f64> {
    files
        .iter()
        .flat_map(|(_, lines)| lines.iter())
        .filter_map(|f| f.get(field)?.parse::<f64>().ok())
        .map(|us| us / 1e3)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_lag_matches_pgbench() {
    let server = TestServer::start();
    server.create_db("plain").await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The lag is made by the schedule, not by the machine: a transaction takes the server's
    // 50 ms sleep (the same for both tools), and two clients on one thread get 30 tps, about
    // 75% of what they can do. With pgbench's one Poisson schedule per thread a slot waits
    // only while both clients are busy, so the lag is the queueing of that schedule, and the
    // same seed gives both tools the same schedule. The two tools run at the same time, so a
    // busy moment of the machine (which lengthens the sleeps) weighs on both alike.
    let f = script(d, "sleep.sql", "select pg_sleep(0.05);\n");
    // Three rounds, each with its own seed; the lags of each tool are pooled over them.
    let mut pooled = [Vec::new(), Vec::new()];
    let mut schedules: [Vec<Vec<i64>>; 2] = [Vec::new(), Vec::new()];
    for seed in ["11", "12", "13"] {
        let run = |tool: Tool, prefix: &str| {
            let args = [
                "-n",
                "-c",
                "2",
                "-j",
                "1",
                "-T",
                "10",
                "-R",
                "30",
                "--random-seed",
                seed,
                "-f",
                f.as_str(),
                "-l",
                "--log-prefix",
                prefix,
            ];
            tool.run(&server, "plain", &args, d)
        };
        let theirs = format!("theirs{seed}");
        let ours = format!("ours{seed}");
        let outputs = std::thread::scope(|s| {
            let t = s.spawn(|| run(Tool::Pgbench, &theirs));
            let o = s.spawn(|| run(Tool::Ours, &ours));
            [t.join().unwrap(), o.join().unwrap()]
        });
        for (k, (tool, prefix)) in [(Tool::Pgbench, &theirs), (Tool::Ours, &ours)]
            .into_iter()
            .enumerate()
        {
            let o = &outputs[k];
            assert_eq!(o.status.code(), Some(0), "{tool:?}: {}", text(o));
            let files = logs(d, prefix);
            assert_eq!(files.len(), 1, "{tool:?}: one thread, one log: {files:?}");
            let lags = field_ms(&files, 6);
            assert!(
                lags.len() > 240,
                "{tool:?}: {} transactions logged",
                lags.len()
            );
            pooled[k].extend(lags);
            schedules[k].push(schedule(&files));
        }
    }
    // The same seed, the same schedule: one Poisson stream per thread drawn as pgbench
    // draws it. The logs give end time minus latency, stamped when the line is written, so
    // nine in ten of the first 200 offsets (from the first scheduled start) must agree to
    // 2 ms; the slots are 33 ms apart on average.
    for (t, o) in schedules[0].iter().zip(&schedules[1]) {
        let n = 200;
        let close = t[..n]
            .iter()
            .zip(&o[..n])
            .filter(|(a, b)| (*a - *b).abs() < 2000)
            .count();
        assert!(
            close >= 180,
            "schedules differ ({close} of {n} agree): pgbench {:?} ours {:?}",
            &t[..10],
            &o[..10]
        );
    }
    let [theirs, ours] = pooled.map(median);
    eprintln!("median schedule lag: pgbench {theirs:.3} ms, ours {ours:.3} ms");
    // The queue is real: the median slot waits for a busy client.
    assert!(
        theirs > 5.0,
        "the load makes transactions wait: {theirs} ms"
    );
    // Within 20%. One schedule per client (each client its own stream at half the rate, as
    // pgbench -j 2 does) waits about twice as long here (49 ms against 23 ms).
    assert!(
        (ours - theirs).abs() <= 0.2 * theirs,
        "median lag: ours {ours:.3} ms vs pgbench {theirs:.3} ms"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_per_transaction_matches_pgbench() {
    let server = TestServer::start();
    server.create_db("plain").await;
    // Trust on loopback: the connection cost is the server's, not SCRAM's key derivation
    // (slow in unoptimized builds).
    server.trust_loopback().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = script(d, "one.sql", "select 1;\n");
    let mut got = Vec::new();
    // One client: pgbench connects synchronously, so with several clients on a thread
    // each one's latency takes in the others' connection times. Tolerance on the median
    // logged latency (a fresh backend's first query): 1 ms.
    for (tool, prefix) in [(Tool::Pgbench, "theirs"), (Tool::Ours, "ours")] {
        let args = [
            "-n",
            "-C",
            "-c",
            "1",
            "-t",
            "150",
            "-f",
            f.as_str(),
            "-l",
            "--log-prefix",
            prefix,
        ];
        let o = tool.run(&server, "plain", &args, d);
        assert_eq!(o.status.code(), Some(0), "{tool:?}: {}", text(&o));
        assert!(has_line(&o, "tps = "), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("(including reconnection times)"),
            "{}",
            text(&o)
        );
        let conn = summary_number(&o, "average connection time =").expect("connection time");
        let avg = summary_number(&o, "latency average =").expect("latency average");
        let lat = median(field_ms(&logs(d, prefix), 2));
        got.push((conn, avg, lat));
    }
    let [(t_conn, t_avg, t_lat), (o_conn, o_avg, o_lat)] = got[..] else {
        unreachable!()
    };
    eprintln!(
        "-C: connection ms pgbench {t_conn:.3} ours {o_conn:.3}; latency average pgbench {t_avg:.3} ours {o_avg:.3}; median logged latency pgbench {t_lat:.3} ours {o_lat:.3}"
    );
    for (conn, avg, lat) in [got[0], got[1]] {
        // The logged latency excludes the connection; "latency average" without -P/-R/-L
        // is run time x clients / transactions, so it includes it.
        assert!(lat < conn / 2.0, "latency {lat} vs connection {conn}");
        assert!(avg > conn, "latency average {avg} vs connection {conn}");
    }
    assert!(
        (o_lat - t_lat).abs() < 1.0,
        "median latency ours {o_lat} vs pgbench {t_lat}"
    );
    assert!(
        o_conn < 3.0 * t_conn && t_conn < 3.0 * o_conn,
        "connection time ours {o_conn} vs pgbench {t_conn}"
    );
    assert!(
        o_avg < 3.0 * t_avg && t_avg < 3.0 * o_avg,
        "latency average ours {o_avg} vs pgbench {t_avg}"
    );
}

/// Field kinds of one log line.
fn check_transaction_line(f: &[String], clients: i64, started: i64) {
    let int = |i: usize| {
        f[i].parse::<i64>()
            .unwrap_or_else(|_| panic!("field {i} of {f:?}"))
    };
    assert!((0..clients).contains(&int(0)), "client id {f:?}");
    assert!(int(1) >= 1, "transaction number {f:?}");
    assert!(
        f[2] == "skipped" || f[2] == "failed" || f[2].parse::<u64>().is_ok(),
        "time {f:?}"
    );
    assert_eq!(int(3), 0, "script number {f:?}");
    assert!(
        (started..started + 60).contains(&int(4)),
        "epoch seconds {f:?}"
    );
    assert!((0..1_000_000).contains(&int(5)), "microseconds {f:?}");
    assert!(int(6) >= 0, "schedule lag {f:?}");
    assert!((0..=2).contains(&int(7)), "retries {f:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_files_match_pgbench_field_for_field() {
    let server = TestServer::start();
    server.create_db("plain").await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = script(d, "one.sql", "select 1;\n");
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 1;
    let common = [
        "-n",
        "-c",
        "3",
        "-j",
        "2",
        "-T",
        "2",
        "-R",
        "200",
        "-L",
        "50",
        "--max-tries",
        "2",
        "-f",
        f.as_str(),
        "-l",
    ];
    let mut shapes = Vec::new();
    for (tool, prefix) in [(Tool::Pgbench, "theirs"), (Tool::Ours, "ours")] {
        let mut args = common.to_vec();
        args.extend(["--log-prefix", prefix]);
        let o = tool.run(&server, "plain", &args, d);
        assert_eq!(o.status.code(), Some(0), "{tool:?}: {}", text(&o));
        let files = logs(d, prefix);
        // PREFIX.PID for thread 0, PREFIX.PID.1 for thread 1.
        let names: Vec<usize> = files.iter().map(|(n, _)| n.split('.').count()).collect();
        assert_eq!(names, [2, 3], "{tool:?}: {files:?}");
        let pid = files[0].0.split('.').nth(1).unwrap().to_string();
        assert_eq!(files[1].0, format!("{prefix}.{pid}.1"));
        let mut per_client: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
        let mut n = 0;
        for (_, lines) in &files {
            for l in lines {
                assert_eq!(l.len(), 8, "{tool:?}: {l:?}");
                check_transaction_line(l, 3, started);
                per_client
                    .entry(l[0].parse().unwrap())
                    .or_default()
                    .push(l[1].parse().unwrap());
                n += 1;
            }
        }
        // Each client numbers its transactions 1, 2, 3, ... (counted before logging).
        for (c, nos) in &per_client {
            assert_eq!(
                *nos,
                (1..=nos.len() as i64).collect::<Vec<_>>(),
                "{tool:?} client {c}"
            );
        }
        let processed = summary_number(&o, "number of transactions actually processed:").unwrap();
        assert_eq!(n as f64, processed, "{tool:?}: one line per transaction");
        shapes.push(files.iter().map(|(_, l)| l[0].len()).collect::<Vec<_>>());

        // Aggregated: one line per second, 15 fields, counts adding up to the summary.
        let agg = format!("{prefix}_agg");
        let mut args = common.to_vec();
        args.extend(["--log-prefix", agg.as_str(), "--aggregate-interval", "1"]);
        let o = tool.run(&server, "plain", &args, d);
        assert_eq!(o.status.code(), Some(0), "{tool:?}: {}", text(&o));
        let files = logs(d, &agg);
        assert_eq!(files.len(), 2, "{tool:?}: {files:?}");
        let mut total = 0;
        for (_, lines) in &files {
            assert!(!lines.is_empty() && lines.len() <= 3, "{tool:?}: {lines:?}");
            let mut prev = None;
            for l in lines {
                assert_eq!(l.len(), 15, "{tool:?}: {l:?}");
                let v: Vec<i64> = l.iter().map(|x| x.parse().unwrap()).collect();
                assert!((started..started + 60).contains(&v[0]), "{l:?}");
                if let Some(p) = prev {
                    assert_eq!(v[0], p + 1, "consecutive intervals: {lines:?}");
                }
                prev = Some(v[0]);
                total += v[1];
                // min <= max for latency and lag when the interval has transactions;
                // sums at least count * min.
                if v[1] > 0 {
                    assert!(v[4] <= v[5] && v[2] >= v[1] * v[4] - v[1], "{l:?}");
                    assert!(v[8] <= v[9], "{l:?}");
                }
                assert_eq!(&v[13..], &[0, 0], "no --failures-detailed: {l:?}");
            }
        }
        let processed = summary_number(&o, "number of transactions actually processed:").unwrap();
        // The interval in progress at the end is not written, as pgbench does.
        assert!(
            total as f64 <= processed && total > 0,
            "{tool:?}: {total} of {processed}"
        );
    }
    assert_eq!(shapes[0], shapes[1]);
}
