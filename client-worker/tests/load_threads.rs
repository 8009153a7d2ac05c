//! The TPC-C-like terminals and the AS3AP-like users on load threads of their own, more
//! sessions than threads: every session runs (each is seen by the server inside its work
//! while the window runs), the threads are the ones asked for, and cancellation ends
//! terminals that are keying or thinking at once.

mod support;

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{As3apParams, TpccParams, WorkloadKind, WorkloadStepName, WorkloadStepTask};
use blocklab_worker::engine::window::WindowParams;
use blocklab_worker::serve::{self, Workload};
use blocklab_worker::{LoadControl, Protocol, as3ap, tpcc};
use support::TestServer;

fn tpcc_kind() -> WorkloadKind {
    WorkloadKind {
        kind: "tpcc".into(),
        tpcc: Some(TpccParams {
            warehouses: 1,
            keying_thinking: false,
            time_scale: 0.0,
        }),
        as3ap: None,
    }
}

fn as3ap_kind() -> WorkloadKind {
    WorkloadKind {
        kind: "as3ap".into(),
        tpcc: None,
        as3ap: Some(As3apParams {
            rows: 1000,
            mix: String::new(),
        }),
    }
}

async fn step(server: &TestServer, db: &str, kind: Workload, name: WorkloadStepName) {
    let t = WorkloadStepTask {
        conninfo: Some(server.conn(db)),
        workload: Some(match kind {
            Workload::Tpcc => tpcc_kind(),
            _ => as3ap_kind(),
        }),
        step: name.into(),
        part: 0,
        parts: 1,
    };
    serve::workload_step(kind, &t, &ProgressSink::detached(), &LoadControl::default())
        .await
        .unwrap_or_else(|e| panic!("{name:?}: {e}"));
}

fn window(server: &TestServer, db: &str, clients: u32, duration: Duration) -> WindowParams {
    WindowParams {
        conninfo: Some(server.conninfo(db)),
        clients,
        duration,
        warmup: Duration::from_millis(200),
        random_seed: Some(7),
        client_id_offset: 3,
        protocol: Protocol::Simple,
        threads: 2,
    }
}

/// The names of this process's threads that start with `prefix`.
fn threads_named(prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// What the server and this process show while a window runs: the sessions of `db` (other
/// than the watcher's), those of them seen at their work (`working`, a condition on
/// pg_stat_activity), and the load threads named `prefix`.
#[derive(Default)]
struct Seen {
    sessions: HashSet<i32>,
    working: HashSet<i32>,
    threads: BTreeSet<String>,
}

async fn watch(
    server: &TestServer,
    db: &str,
    working: &str,
    prefix: &str,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Seen>) {
    let done = Arc::new(AtomicBool::new(false));
    let sql = format!(
        "select pid, ({working}) from pg_stat_activity
         where datname = '{db}' and backend_type = 'client backend' and pid <> pg_backend_pid()"
    );
    let (stop, prefix) = (done.clone(), prefix.to_string());
    let client = server.client(db).await;
    let h = tokio::spawn(async move {
        let mut seen = Seen::default();
        while !stop.load(Ordering::Relaxed) {
            for row in client.query(&sql, &[]).await.unwrap() {
                let pid: i32 = row.get(0);
                seen.sessions.insert(pid);
                if row.get::<_, Option<bool>>(1) == Some(true) {
                    seen.working.insert(pid);
                }
            }
            seen.threads.extend(threads_named(&prefix));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        seen
    });
    (done, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_terminals_over_two_threads_all_run_and_stop_while_keying() {
    let server = TestServer::start();
    server.create_db("tpcc").await;
    for s in [
        WorkloadStepName::WorkloadStepSchema,
        WorkloadStepName::WorkloadStepLoad,
        WorkloadStepName::WorkloadStepFinish,
    ] {
        step(&server, "tpcc", Workload::Tpcc, s).await;
    }
    let opts = tpcc::TpccOptions::new(1, false, 0.0).unwrap();
    let (done, watcher) = watch(&server, "tpcc", "xact_start is not null", "tpcc-load-").await;
    let r = tpcc::run(
        &window(&server, "tpcc", 8, Duration::from_secs(3)),
        &opts,
        &ProgressSink::detached(),
        &LoadControl::default(),
        None,
    )
    .await
    .unwrap();
    done.store(true, Ordering::Relaxed);
    let seen = watcher.await.unwrap();
    assert_eq!(r.clients, 8);
    assert!(r.transactions > 0, "{r:?}");
    assert!(
        (r.measured_seconds - 3.0).abs() < 0.3,
        "{}",
        r.measured_seconds
    );
    let sum: u64 = r.txn_types.iter().map(|t| t.count).sum();
    assert_eq!(sum, r.transactions);
    assert_eq!(
        seen.working.len(),
        8,
        "terminals seen inside a transaction: {:?} of {:?}",
        seen.working,
        seen.sessions
    );
    let want: BTreeSet<String> = ["tpcc-load-0", "tpcc-load-1"].map(String::from).into();
    assert_eq!(seen.threads, want);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !threads_named("tpcc-load-").is_empty() {
        assert!(Instant::now() < deadline, "the load threads did not end");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Keying times of 2 to 18 s: a stop finds every terminal keying, and ends the run at
    // once.
    let opts = tpcc::TpccOptions::new(1, true, 1.0).unwrap();
    let ctl = LoadControl::default();
    let stopper = ctl.clone();
    let stopped = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stopper.stop();
        Instant::now()
    });
    let e = tokio::time::timeout(
        Duration::from_secs(30),
        tpcc::run(
            &window(&server, "tpcc", 8, Duration::from_secs(60)),
            &opts,
            &ProgressSink::detached(),
            &ctl,
            None,
        ),
    )
    .await
    .expect("a stopped run ends")
    .unwrap_err();
    let took = stopped.await.unwrap().elapsed();
    assert!(e.to_string().contains("cancelled"), "{e}");
    assert!(took < Duration::from_secs(1), "{took:?} after the stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_users_over_two_threads_all_run() {
    let server = TestServer::start();
    server.create_db("asap").await;
    step(
        &server,
        "asap",
        Workload::As3ap,
        WorkloadStepName::WorkloadStepLoad,
    )
    .await;
    let (done, watcher) = watch(
        &server,
        "asap",
        "query like 'update updates set col_signed = col_signed + 1 where col_key = %'",
        "as3ap-load-",
    )
    .await;
    let rows = as3ap::Rows::new(1000).unwrap();
    let r = as3ap::run(
        &window(&server, "asap", 6, Duration::from_secs(2)),
        rows,
        as3ap::Mix::Oltp,
        &ProgressSink::detached(),
        &LoadControl::default(),
        None,
    )
    .await
    .unwrap();
    done.store(true, Ordering::Relaxed);
    let seen = watcher.await.unwrap();
    assert_eq!(r.clients, 6);
    assert!(r.transactions > 0 && r.failures == 0, "{r:?}");
    assert_eq!(r.txn_types[0].rows, r.transactions);
    assert_eq!(
        seen.working.len(),
        6,
        "users seen running the mix: {:?} of {:?}",
        seen.working,
        seen.sessions
    );
    let want: BTreeSet<String> = ["as3ap-load-0", "as3ap-load-1"].map(String::from).into();
    assert_eq!(seen.threads, want);
}
