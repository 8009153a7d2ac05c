//! The AS3AP-like mixes under each protocol against a real PostgreSQL: one tuple counted
//! per query (every key exists), and the OLTP mix changing at least the rows it counts; and
//! the arguments a worker refuses before connecting.

mod support;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{As3apParams, RunLoadTask, WorkloadKind, WorkloadStepName, WorkloadStepTask};
use blocklab_worker::LoadControl;
use blocklab_worker::error::WorkerError;
use blocklab_worker::serve::{self, Workload};
use support::TestServer;

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

async fn signed_sum(c: &tokio_postgres::Client) -> i64 {
    c.query_one("select sum(col_signed)::int8 from updates", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protocol_counts_the_tuples_of_both_mixes() {
    let server = TestServer::start();
    server.create_db("asproto").await;
    let load = WorkloadStepTask {
        conninfo: Some(server.conn("asproto")),
        workload: workload(1000, ""),
        step: WorkloadStepName::WorkloadStepLoad.into(),
        part: 0,
        parts: 1,
    };
    let ctl = LoadControl::default();
    serve::workload_step(Workload::As3ap, &load, &ProgressSink::detached(), &ctl)
        .await
        .unwrap();
    let c = server.client("asproto").await;
    for protocol in ["simple", "extended", "prepared"] {
        for (name, class) in [("mixed-ir", "mixed_ir"), ("mixed-oltp", "mixed_oltp")] {
            let before = signed_sum(&c).await;
            let t = RunLoadTask {
                conninfo: Some(server.conn("asproto")),
                clients: 2,
                duration_ms: 700,
                // Not the first client ids: no cross section, only the users.
                client_id_offset: 2,
                random_seed: Some(42),
                protocol: protocol.into(),
                workload: workload(1000, name),
                ..Default::default()
            };
            let r = serve::run_workload(Workload::As3ap, &t, &ProgressSink::detached(), &ctl, None)
                .await
                .unwrap_or_else(|e| panic!("{protocol} {name}: {e}"));
            let tt = &r.txn_types[0];
            assert_eq!(tt.name, class);
            assert!(
                r.transactions > 0 && r.failures == 0,
                "{protocol} {name}: {r:?}"
            );
            assert_eq!(tt.rows, r.transactions, "{protocol} {name}");
            let changed = signed_sum(&c).await - before;
            if name == "mixed-oltp" {
                assert!(
                    changed >= tt.rows as i64,
                    "{protocol}: changed {changed}, counted {}",
                    tt.rows
                );
            } else {
                assert_eq!(changed, 0, "{protocol}");
            }
        }
    }
}

#[tokio::test]
async fn invalid_rows_mix_and_step_are_refused() {
    let nowhere = blocklab_proto::ConnInfo {
        host: "127.0.0.1".into(),
        port: 1,
        user: "nobody".into(),
        password: String::new(),
        dbname: "none".into(),
    };
    for rows in [0, 999, 100_000_001] {
        let t = WorkloadStepTask {
            conninfo: Some(nowhere.clone()),
            workload: workload(rows, ""),
            step: WorkloadStepName::WorkloadStepLoad.into(),
            part: 0,
            parts: 1,
        };
        let e = serve::workload_step(
            Workload::As3ap,
            &t,
            &ProgressSink::detached(),
            &LoadControl::default(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&e, WorkerError::InvalidArgument(m) if m.contains("rows")),
            "{e}"
        );
    }
    // A TPC-C-like step, no step and a value this worker does not know.
    for (step, says) in [
        (
            WorkloadStepName::WorkloadStepSchema.into(),
            "load, single-user",
        ),
        (
            WorkloadStepName::WorkloadStepUnspecified.into(),
            "workload_step.step is unspecified",
        ),
        (99, "workload_step.step 99 is unknown"),
    ] {
        let t = WorkloadStepTask {
            conninfo: Some(nowhere.clone()),
            workload: workload(1000, ""),
            step,
            part: 0,
            parts: 1,
        };
        let e = serve::workload_step(
            Workload::As3ap,
            &t,
            &ProgressSink::detached(),
            &LoadControl::default(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&e, WorkerError::InvalidArgument(m) if m.contains(says)),
            "{e}"
        );
    }
    for (rows, m, field) in [
        (1000, "mixed-dss", "mixed-ir, mixed-oltp"),
        (1000, "", "mix"),
        (10, "mixed-ir", "rows"),
    ] {
        let t = RunLoadTask {
            conninfo: Some(nowhere.clone()),
            clients: 1,
            duration_ms: 1000,
            workload: workload(rows, m),
            ..Default::default()
        };
        let e = serve::run_workload(
            Workload::As3ap,
            &t,
            &ProgressSink::detached(),
            &LoadControl::default(),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&e, WorkerError::InvalidArgument(msg) if msg.contains(field)),
            "{e}"
        );
    }
}
