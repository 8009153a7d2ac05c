//! Unlimited retries bounded by time, live: clients updating one row under REPEATABLE READ
//! get serialization failures. The fleet's `max_tries = 0` with `retry_time_limit` (a run of
//! transactions per client, cut at the bound) is compared with the real pgbench's
//! `--max-tries 0 -T` on the same server: both retry, and none fails, since a transaction
//! still retrying when the time is up just ends its client (pgbench.c: "If time is over,
//! we're done"), so neither serialization nor deadlock failures are counted.

mod support;

use std::time::{Duration, Instant};

use blocklab_worker::{LoadOptions, ScriptSpec, run_load};
use support::TestServer;
use support::compare::{Tool, summary_number, text};

/// Reads the row, waits so that another client can update it, then updates it: the later
/// of two such transactions cannot serialize.
const SCRIPT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT v FROM hot WHERE id = 1;
SELECT pg_sleep(0.002);
UPDATE hot SET v = v + 1 WHERE id = 1;
END;
";

const CLIENTS: u32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlimited_retries_bounded_by_time_match_pgbench() {
    let server = TestServer::start();
    server.create_db("plain").await;
    let c = server.client("plain").await;
    c.batch_execute(
        "CREATE TABLE hot (id int PRIMARY KEY, v int NOT NULL); INSERT INTO hot VALUES (1, 0);",
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hot.sql");
    std::fs::write(&file, SCRIPT).unwrap();

    // pgbench: -T bounds the unlimited retries.
    let clients = CLIENTS.to_string();
    let args = [
        "-n",
        "-c",
        clients.as_str(),
        "-j",
        "1",
        "-T",
        "3",
        "--max-tries",
        "0",
        "--failures-detailed",
        "-f",
        file.to_str().unwrap(),
    ];
    let o = Tool::Pgbench.run(&server, "plain", &args, dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let n = |prefix: &str| {
        summary_number(&o, prefix).unwrap_or_else(|| panic!("{prefix} in {}", text(&o))) as u64
    };
    let theirs = (
        n("number of transactions actually processed:"),
        n("number of failed transactions:"),
        n("number of serialization failures:"),
        n("number of deadlock failures:"),
        n("number of transactions retried:"),
        n("total number of retries:"),
    );

    // Ours, as the fleet gives it: far more transactions per client than fit in the bound.
    let mut opts = LoadOptions::new(server.conninfo("plain"), Duration::from_secs(3));
    opts.script_specs = vec![ScriptSpec::file("hot.sql", SCRIPT.into(), 1)];
    opts.clients = CLIENTS;
    opts.threads = 1;
    opts.transactions_per_client = 1_000_000;
    opts.max_tries = 0;
    opts.retry_time_limit = Some(Duration::from_secs(3));
    opts.failures_detailed = true;
    let started = Instant::now();
    let r = run_load(&opts).await.expect("run");
    let took = started.elapsed();
    let ours = (
        r.measured.transactions,
        r.measured.failures,
        r.serialization_failures,
        r.deadlock_failures,
        r.retried,
        r.measured.retries,
    );
    eprintln!(
        "processed, failed, serialization, deadlock, retried, retries: pgbench {theirs:?}, ours {ours:?} (ours ended after {took:?})"
    );
    // A million transactions per client would take hours: the bound ended the run (the
    // rest is connecting, and the transactions in flight at the bound).
    assert!(
        took < Duration::from_secs(15),
        "the bound ended the run: {took:?}"
    );
    for (who, (done, failed, serialization, deadlock, retried, retries)) in
        [("pgbench", theirs), ("ours", ours)]
    {
        assert!(done > 100, "{who}: {done} transactions");
        assert!(
            retried > 0 && retries >= retried,
            "{who}: retried {retried}, retries {retries}"
        );
        // The same failure class, and only the clients caught retrying at the end fail.
        assert_eq!(deadlock, 0, "{who}");
        assert_eq!(
            failed, serialization,
            "{who}: every failure a serialization one"
        );
        assert!(failed <= u64::from(CLIENTS), "{who}: {failed} failed");
        // Contention on one row: a good share of transactions needed a retry.
        assert!(retried * 20 > done, "{who}: {retried} retried of {done}");
    }
    assert_eq!(r.other_failures, 0);
    assert_eq!(r.aborted_clients, 0);
}

/// The `--verbose-errors` lines of a run's stderr with the client ids as `N` and a leading
/// `pgbench: ` (pgbench's program name) taken off, distinct and sorted.
fn verbose_shapes(stderr: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| l.strip_prefix("pgbench: ").unwrap_or(l))
        .filter_map(|l| {
            let rest = l.strip_prefix("client ")?;
            let (id, tail) = rest.split_once(' ')?;
            id.parse::<u32>().ok()?;
            Some(format!("client N {tail}"))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_errors_read_as_pgbenchs() {
    let server = TestServer::start();
    server.create_db("plain").await;
    let c = server.client("plain").await;
    c.batch_execute(
        "CREATE TABLE hot (id int PRIMARY KEY, v int NOT NULL); INSERT INTO hot VALUES (1, 0);",
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hot.sql");
    std::fs::write(&file, SCRIPT).unwrap();
    let args = [
        "-n",
        "-c",
        "4",
        "-t",
        "20",
        "--max-tries",
        "2",
        "--verbose-errors",
        "-f",
        file.to_str().unwrap(),
    ];
    let mut shapes = Vec::new();
    for tool in [Tool::Pgbench, Tool::Ours] {
        let o = tool.run(&server, "plain", &args, dir.path());
        assert_eq!(o.status.code(), Some(0), "{tool:?}: {}", text(&o));
        shapes.push(verbose_shapes(&o.stderr));
    }
    let want = [
        "client N ends the failed transaction (try 2/2)",
        "client N got an error in command 3 (SQL) of script 0; ERROR:  could not serialize access due to concurrent update",
        "client N repeats the transaction after the error (try 1/2)",
    ];
    assert_eq!(shapes[0], want, "pgbench");
    assert_eq!(shapes[1], want, "ours");
}
