//! The standalone `blocklab-worker tpcc ...` and `as3ap ...` commands against a real
//! PostgreSQL: what they print, their JSON, and their exit codes (0 ok, 1 bad options or
//! setup errors, 2 failed checks).

mod support;

use std::process::{Command, Output};

use support::TestServer;

fn worker(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blocklab-worker"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

/// Runs the binary, asserts its exit code and returns its stdout and stderr.
fn expect(code: i32, args: &[&str]) -> (String, String) {
    let o = worker(args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    (out, err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpcc_init_run_and_check() {
    let server = TestServer::start();
    server.create_db("tpcc").await;
    let conn = server.conninfo("tpcc");

    let (out, _) = expect(0, &["tpcc", "init", "-w", "1", &conn]);
    eprintln!("{out}");
    for want in [
        "schema: ",
        "item: 100000 rows",
        "load: ",
        "(1 loaders)",
        "part 0 of 1: warehouses [1]",
        "warehouse: 1 rows",
        "district: 10 rows",
        "stock: 100000 rows",
        "finish: ",
        "done in ",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }

    let (out, _) = expect(
        0,
        &[
            "tpcc",
            "run",
            "-w",
            "1",
            "-c",
            "2",
            "-T",
            "2",
            "--random-seed",
            "7",
            &conn,
        ],
    );
    eprintln!("{out}");
    assert!(out.contains("NOTPM: "), "{out}");
    assert!(out.contains("total tpm: "), "{out}");
    assert!(out.contains("random seed: 7"), "{out}");
    for name in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "no {name} row in:\n{out}"
        );
    }
    let new_order = out.lines().find(|l| l.starts_with("new_order")).unwrap();
    let count: u64 = new_order
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(count > 0, "{new_order}");

    let (out, _) = expect(
        0,
        &[
            "tpcc",
            "run",
            "-w",
            "1",
            "-c",
            "2",
            "-T",
            "1",
            "--keying-thinking",
            "--time-scale",
            "0.01",
            "--json",
            &conn,
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["workload"]["kind"], "tpcc");
    assert_eq!(v["clients"], 2);
    assert!(v["metrics"]["notpm"].as_f64().unwrap() > 0.0, "{v}");
    let types = v["txn_types"].as_array().unwrap();
    assert_eq!(types.len(), 5, "{v}");
    assert_eq!(types[0]["name"], "new_order");
    assert!(types[0]["count"].as_u64().unwrap() > 0, "{v}");
    assert!(types[0]["p90_ms"].as_f64().unwrap() > 0.0, "{v}");
    let mix: f64 = types.iter().map(|t| t["mix_pct"].as_f64().unwrap()).sum();
    assert!((mix - 100.0).abs() < 1e-6, "{mix}");

    let (out, _) = expect(0, &["tpcc", "check", "-w", "1", &conn]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("condition ")).count(),
        11,
        "{out}"
    );
    assert!(out.contains("all conditions hold"), "{out}");

    // A broken invariant: exit code 2, the condition named.
    server
        .client("tpcc")
        .await
        .batch_execute("update warehouse set w_ytd = w_ytd + 1")
        .await
        .unwrap();
    let (out, err) = expect(2, &["tpcc", "check", "-w", "1", &conn]);
    assert!(
        out.contains("condition 1 (W_YTD = sum(D_YTD)): 1 violations"),
        "{out}"
    );
    assert!(out.contains("condition 8 "), "{out}");
    assert!(err.contains("2 consistency conditions failed"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpcc_init_splits_the_load_over_loaders() {
    let server = TestServer::start();
    server.create_db("tpcc2").await;
    let conn = server.conninfo("tpcc2");
    let (out, _) = expect(0, &["tpcc", "init", "-w", "2", "--loaders", "3", &conn]);
    for want in [
        "(2 loaders)",
        "part 0 of 2: warehouses [1] in ",
        "part 1 of 2: warehouses [2] in ",
        "warehouse: 2 rows",
        "customer: 60000 rows",
        "stock: 200000 rows",
        "done in ",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    let (out, _) = expect(0, &["tpcc", "check", "-w", "2", &conn]);
    assert!(
        out.contains("condition 1 (W_YTD = sum(D_YTD)): ok (2 warehouses)"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as3ap_load_single_user_and_mixes() {
    let server = TestServer::start();
    server.create_db("as3ap").await;
    let conn = server.conninfo("as3ap");

    let (out, _) = expect(0, &["as3ap", "load", "--rows", "1000", &conn]);
    assert!(out.starts_with("load: "), "{out}");
    assert!(out.contains("uniques: 1000 rows"), "{out}");

    let (out, _) = expect(0, &["as3ap", "single-user", "--rows", "1000", &conn]);
    eprintln!("{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
            .to_string()
    };
    assert!(line("sel_1_cl").contains(" s "), "{out}");
    assert!(line("join_2").contains("10 rows returned"), "{out}");
    let total: f64 = line("total")
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(total > 0.0, "{out}");
    assert!(out.lines().count() > 40, "{out}");

    let (out, _) = expect(
        0,
        &[
            "as3ap", "mix", "--mix", "mixed-ir", "--rows", "1000", "-c", "2", "-T", "1", &conn,
        ],
    );
    eprintln!("{out}");
    for want in [
        "tuples/s",
        "queries/s",
        "latency p50 = ",
        "p99 = ",
        "failures: 0",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }

    let (out, _) = expect(
        0,
        &[
            "as3ap",
            "mix",
            "--mix",
            "mixed-oltp",
            "--rows",
            "1000",
            "-c",
            "2",
            "-T",
            "1",
            "-M",
            "prepared",
            "--json",
            &conn,
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["workload"]["mix"], "mixed-oltp");
    assert!(
        v["metrics"]["mixed_oltp.tup_per_s"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    assert!(v["txn_types"][0]["rows"].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn bad_options_exit_1_naming_the_option() {
    let conn = "host=127.0.0.1 port=1 user=u dbname=d";
    for (args, want) in [
        (vec!["tpcc", "init", "-w", "0", conn], "--warehouses"),
        (
            vec!["tpcc", "init", "-w", "2", "--loaders", "0", conn],
            "--loaders",
        ),
        (
            vec!["tpcc", "run", "-w", "1", "-c", "0", conn],
            "--terminals",
        ),
        (vec!["tpcc", "run", "-w", "1", "-T", "0", conn], "--time"),
        (
            vec!["tpcc", "run", "-w", "1", "--time-scale=-1", conn],
            "--time-scale",
        ),
        (
            vec!["tpcc", "run", "-w", "1", "--random-seed", "nope", conn],
            "random seed",
        ),
        (vec!["tpcc", "check", conn], "--warehouses"),
        (vec!["as3ap", "load", "--rows", "999", conn], "--rows"),
        (
            vec!["as3ap", "mix", "--mix", "nope", "--rows", "1000", conn],
            "--mix",
        ),
        (
            vec![
                "as3ap", "mix", "--mix", "mixed-ir", "--rows", "1000", "-M", "x", conn,
            ],
            "--protocol",
        ),
        (
            vec!["tpcc", "check", "-w", "1", "host=/tmp user=u dbname=d"],
            "unix-socket",
        ),
        (
            vec!["tpcc", "check", "-w", "1", "user=u dbname=d"],
            "no host",
        ),
        (
            vec!["tpcc", "check", "-w", "1", "host=127.0.0.1"],
            "no user",
        ),
        (
            vec!["as3ap", "load", "--rows", "1000", "nonsense"],
            "connection string",
        ),
        // Setup errors: nothing listens on port 1.
        (vec!["tpcc", "check", "-w", "1", conn], "cannot connect"),
        (
            vec!["as3ap", "load", "--rows", "1000", conn],
            "cannot connect",
        ),
    ] {
        let (_, err) = expect(1, &args);
        assert!(err.contains(want), "{args:?}: no {want:?} in: {err}");
    }
}
