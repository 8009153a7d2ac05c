//! Maintenance timings with the real (cached) 16K/8K PostgreSQL 15.18 build: every step at
//! scale 1 through the task handler, the server still answering after the cold restart;
//! and the task's validation.

mod common;

use blocklab_agent::{AgentError, AgentHandler};
use blocklab_daemon::fleet::{ProgressSink, TaskHandler};
use blocklab_proto::{
    BuildOptions, PrepareServerTask, RunMaintenanceTask, SnapshotStatsTask, Task, task, task_result,
};
use common::*;

const STEP_METRICS: [&str; 8] = [
    "maint.copy",
    "maint.create_index",
    "maint.vacuum_analyze",
    "maint.checkpoint",
    "maint.count_warm",
    "maint.count_cold",
    "maint.dump",
    "maint.restore",
];

fn options_16k() -> BuildOptions {
    BuildOptions {
        block_size_kb: 16,
        ..options_8k(source_tarball(&tarball()))
    }
}

fn maintenance(scale: u32, steps: &[&str]) -> RunMaintenanceTask {
    RunMaintenanceTask {
        scale,
        steps: steps.iter().map(|s| s.to_string()).collect(),
        reset_after_load: None,
    }
}

#[tokio::test]
async fn every_step_at_scale_1_on_a_16k_build() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), shared_cache(), 55470)).unwrap();
    let prepare = PrepareServerTask {
        build: Some(options_16k()),
        allowed_client_addresses: vec!["127.0.0.1".into()],
        ..Default::default()
    };
    let p = handler
        .prepare_server("maint16k", &prepare, &ProgressSink::detached())
        .await
        .unwrap_or_else(|f| panic!("{f}\n{}", f.error.log_tail()));
    assert_eq!(p.block_size, 16384);
    let pid_before = handler.postmaster_pid("maint16k").expect("running");

    // Through the task dispatch, as the coordinator sends it.
    let t = Task {
        run_id: "maint16k".into(),
        kind: Some(task::Kind::RunMaintenance(maintenance(1, &[]))),
        ..Default::default()
    };
    let r = match handler.handle(t, ProgressSink::detached()).await {
        task_result::Outcome::RunMaintenance(r) => r,
        task_result::Outcome::Error(e) => panic!("{} {}\n{}", e.stage, e.reason, e.log_tail),
        other => panic!("unexpected {other:?}"),
    };
    for m in &r.metrics {
        eprintln!("{:<22} {:>14.4} {}", m.name, m.value, m.unit);
    }
    for n in &r.notes {
        eprintln!("note: {n}");
    }
    let metric = |name: &str| {
        let found: Vec<_> = r.metrics.iter().filter(|m| m.name == name).collect();
        assert_eq!(found.len(), 1, "{name} once in {:?}", r.metrics);
        found[0].clone()
    };
    for name in STEP_METRICS {
        let m = metric(name);
        assert!(m.value.is_finite() && m.value > 0.0, "{m:?}");
        assert_eq!(m.unit, "s");
        assert!(!m.higher_is_better);
    }
    // In task order.
    let order: Vec<&str> = r
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| STEP_METRICS.contains(n))
        .collect();
    assert_eq!(order, STEP_METRICS);
    let table = metric("maint.table_bytes");
    assert_eq!(table.unit, "bytes");
    // 100000 rows of ~121 bytes each need more than 10 MB of 16K pages.
    assert!(table.value > 10e6 && table.value.is_finite(), "{table:?}");
    let dump = metric("maint.dump_bytes");
    assert_eq!(dump.unit, "bytes");
    assert!(dump.value > 0.0 && dump.value.is_finite(), "{dump:?}");
    // The coordinator sums the timings into maint.total_s; the agent does not send it.
    assert!(r.metrics.iter().all(|m| m.name != "maint.total_s"));
    assert_eq!(r.metrics.len(), STEP_METRICS.len() + 2);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("restored row count 100000")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes.iter().any(|n| n.starts_with("count-cold:")),
        "{:?}",
        r.notes
    );

    // The cold count restarted the postmaster; the run's cluster is still registered,
    // running and answering, and the dump and restore database are gone.
    let pid_after = handler.postmaster_pid("maint16k").expect("still running");
    assert_ne!(pid_before, pid_after);
    assert_eq!(handler.running(), ["maint16k"]);
    let ci = p.conninfo.clone().unwrap();
    let (client, conn) = tokio_postgres::connect(&ci.to_conninfo_string(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let n: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_database WHERE datname = 'blocklab_restore'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "the restore database is dropped");
    let bs: String = client
        .query_one("SHOW block_size", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(bs, "16384");
    drop(client);
    let run_dir = std::path::Path::new(&p.data_dir)
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(!run_dir.join("maint.dump").exists());
    assert!(!run_dir.join("maint.pgpass").exists());
    let snap = handler
        .snapshot_stats("maint16k", &SnapshotStatsTask::default())
        .await
        .unwrap();
    assert!(!snap.postmaster_start_time.is_empty());

    // A subset: the data is loaded untimed when the task does not start with copy.
    let r = handler
        .run_maintenance(
            "maint16k",
            &maintenance(1, &["count-warm", "checkpoint"]),
            &ProgressSink::detached(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", e.log_tail()));
    let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["maint.table_bytes", "maint.count_warm", "maint.checkpoint"]
    );
    assert!(
        r.notes.iter().any(|n| n.contains("loaded untimed")),
        "{:?}",
        r.notes
    );

    // A failing step is named, with the tool's log tail: pg_dump cannot write its file
    // where a directory stands.
    std::fs::create_dir(run_dir.join("maint.dump")).unwrap();
    let t = Task {
        run_id: "maint16k".into(),
        kind: Some(task::Kind::RunMaintenance(maintenance(
            1,
            &["copy", "dump"],
        ))),
        ..Default::default()
    };
    match handler.handle(t, ProgressSink::detached()).await {
        task_result::Outcome::Error(e) => {
            assert_eq!(e.stage, "maintenance");
            assert!(
                e.reason.contains("maintenance step dump: pg_dump"),
                "{}",
                e.reason
            );
            assert!(e.log_tail.contains("maint.dump"), "{}", e.log_tail);
        }
        other => panic!("unexpected {other:?}"),
    }
    std::fs::remove_dir(run_dir.join("maint.dump")).unwrap();
    assert!(handler.postmaster_pid("maint16k").is_some());

    handler.stop_server("maint16k").await.unwrap();
    assert!(handler.running().is_empty());
    assert!(!run_dir.exists());
}

#[tokio::test]
async fn steps_and_scale_are_validated_and_a_server_is_required() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), work.path().join("cache"), 55475)).unwrap();
    let run = |t: RunMaintenanceTask| {
        let handler = &handler;
        async move {
            handler
                .run_maintenance("nosuchrun", &t, &ProgressSink::detached())
                .await
                .unwrap_err()
        }
    };
    match run(maintenance(1, &["copy", "reindex"])).await {
        AgentError::Invalid { field, reason } => {
            assert_eq!(field, "steps");
            assert!(reason.contains("\"reindex\""), "{reason}");
            assert!(
                reason.contains(
                    "copy, create-index, vacuum-analyze, checkpoint, count-warm, count-cold, \
                     dump, restore"
                ),
                "{reason}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    match run(maintenance(1, &["dump", "dump"])).await {
        AgentError::Invalid { field, .. } => assert_eq!(field, "steps"),
        other => panic!("unexpected {other:?}"),
    }
    for scale in [0, 10_001] {
        match run(maintenance(scale, &[])).await {
            AgentError::Invalid { field, reason } => {
                assert_eq!(field, "scale");
                assert!(reason.contains("1..=10000"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // Valid input, but no server for the run.
    match run(maintenance(10_000, &["count-warm"])).await {
        AgentError::UnknownRun(id) => assert_eq!(id, "nosuchrun"),
        other => panic!("unexpected {other:?}"),
    }
    // Through the dispatch: stage "maintenance".
    let t = Task {
        run_id: "nosuchrun".into(),
        kind: Some(task::Kind::RunMaintenance(maintenance(0, &[]))),
        ..Default::default()
    };
    match handler.handle(t, ProgressSink::detached()).await {
        task_result::Outcome::Error(e) => {
            assert_eq!(e.stage, "maintenance");
            assert!(e.reason.contains("scale"), "{}", e.reason);
        }
        other => panic!("unexpected {other:?}"),
    }
}
