//! The AS3AP-like mixes under each protocol against a real PostgreSQL: one tuple counted
//! per query (every key exists), and the OLTP mix changing at least the rows it counts.

mod support;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{As3apParams, RunLoadTask, WorkloadKind, WorkloadStepName, WorkloadStepTask};
use blocklab_worker::LoadControl;
use blocklab_worker::serve::{self, Workload};
use support::TestServer;

fn workload(mix: &str) -> Option<WorkloadKind> {
    Some(WorkloadKind {
        kind: "as3ap".into(),
        tpcc: None,
        as3ap: Some(As3apParams {
            rows: 1000,
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
        workload: workload(""),
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
                workload: workload(name),
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
