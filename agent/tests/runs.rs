//! Run-time behaviour with the real (cached) 8K/8K PostgreSQL 15.18 build: WAL in its own
//! directory with a non-default segment size, server statistics that move, a postmaster
//! crash reported with stage and log tail (and the next run proceeding), the I/O probe.

mod common;

use std::path::Path;
use std::time::Duration;

use blocklab_agent::AgentHandler;
use blocklab_daemon::fleet::{ProgressSink, TaskHandler};
use blocklab_proto::{
    PrepareServerTask, ResetCachesTask, RunProbeTask, SnapshotStatsTask, Task, WalStatsTask, task,
    task_result,
};
use common::*;

fn prepare_task(separate_wal: bool, wal_segsize_mb: u32) -> PrepareServerTask {
    let mut build = options_8k(source_tarball(&tarball()));
    build.wal_segsize_mb = wal_segsize_mb;
    PrepareServerTask {
        build: Some(build),
        allowed_client_addresses: vec!["127.0.0.1".into()],
        separate_wal,
        ..Default::default()
    }
}

fn stats(json: &str) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::from_str(json).unwrap() {
        serde_json::Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn num(m: &serde_json::Map<String, serde_json::Value>, k: &str) -> f64 {
    m.get(k)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("{k} missing in {m:?}"))
}

#[tokio::test]
async fn wal_lives_in_the_wal_directory_with_the_requested_segment_size() {
    let work = tempfile::tempdir().unwrap();
    let mut c = config(work.path(), shared_cache(), 55440);
    c.data_root = Some(work.path().join("disk-a/data"));
    c.wal_root = Some(work.path().join("disk-b/wal"));
    let handler = AgentHandler::new(c).unwrap();
    let p = handler
        .prepare_server("walrun", &prepare_task(true, 32), &ProgressSink::detached())
        .await
        .unwrap_or_else(|f| panic!("{f}\n{}", f.error.log_tail()));
    assert!(
        p.build_reused,
        "the WAL segment size is initdb's, not a new build"
    );
    let wal_dir = work.path().join("disk-b/wal/walrun");
    assert_eq!(p.wal_dir, wal_dir.display().to_string());
    let data = Path::new(&p.data_dir);
    assert!(
        data.starts_with(work.path().join("disk-a/data/walrun")),
        "{}",
        p.data_dir
    );
    let link = std::fs::read_link(data.join("pg_wal")).expect("pg_wal is a symlink");
    assert_eq!(link, wal_dir);
    let segments: Vec<_> = std::fs::read_dir(&wal_dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.len() == 24 && n.chars().all(|c| c.is_ascii_hexdigit())
        })
        .collect();
    assert!(
        !segments.is_empty(),
        "no WAL segment in {}",
        wal_dir.display()
    );
    assert_eq!(segments[0].metadata().unwrap().len(), 32 << 20);
    let ci = p.conninfo.clone().unwrap();
    let (client, conn) = tokio_postgres::connect(&ci.to_conninfo_string(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let seg: String = client
        .query_one("SHOW wal_segment_size", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(seg, "32MB");
    assert!(!p.postmaster_start_time.is_empty());

    // The WAL of a range: an UPDATE after a CHECKPOINT writes full-page images.
    client
        .batch_execute("CREATE TABLE t AS SELECT g AS id, 0 AS v FROM generate_series(1, 20000) g")
        .await
        .unwrap();
    let lsn = |s: &blocklab_proto::SnapshotStatsResult| {
        stats(&s.stats_json)["wal_lsn_bytes"].as_u64().unwrap()
    };
    let start = lsn(&snapshot(&handler, "walrun", true).await);
    client.batch_execute("UPDATE t SET v = 1").await.unwrap();
    let end = lsn(&snapshot(&handler, "walrun", false).await);
    let w = handler
        .wal_stats(
            "walrun",
            &WalStatsTask {
                start_lsn_bytes: start,
                end_lsn_bytes: end,
            },
        )
        .await
        .unwrap();
    assert!(w.complete, "{w:?}");
    assert!(w.records >= 20000 && w.fpi_bytes > 8192, "{w:?}");
    assert!(
        w.record_bytes + w.fpi_bytes <= end - start,
        "{w:?} in {}",
        end - start
    );
    // WAL that is gone (a segment before the cluster's first) is not readable, with a reason.
    let gone = handler
        .wal_stats(
            "walrun",
            &WalStatsTask {
                start_lsn_bytes: 0x100,
                end_lsn_bytes: 0x200,
            },
        )
        .await
        .unwrap();
    assert!(!gone.complete && !gone.reason.is_empty(), "{gone:?}");
    drop(client);

    // The cache reset: a clean restart with the OS cache drop; a new postmaster, still serving.
    let pid = handler.postmaster_pid("walrun").unwrap();
    let r = handler
        .reset_caches(
            "walrun",
            &ResetCachesTask {
                restart_server: true,
                drop_os_cache: true,
            },
        )
        .await
        .unwrap();
    assert!(r.server_restarted, "{r:?}");
    assert_eq!(r.os_cache_dropped, r.os_cache_error.is_empty(), "{r:?}");
    assert_ne!(r.postmaster_start_time, p.postmaster_start_time);
    assert_ne!(handler.postmaster_pid("walrun"), Some(pid));
    let after = snapshot(&handler, "walrun", false).await;
    assert_eq!(after.postmaster_start_time, r.postmaster_start_time);
    handler.stop_server("walrun").await.unwrap();
    assert!(!wal_dir.exists() && !data.exists());
}

async fn snapshot(
    h: &AgentHandler,
    run: &str,
    checkpoint: bool,
) -> blocklab_proto::SnapshotStatsResult {
    h.snapshot_stats(
        run,
        &SnapshotStatsTask {
            checkpoint_first: checkpoint,
            settle_sessions: false,
        },
    )
    .await
    .unwrap_or_else(|e| panic!("snapshot: {e}\n{}", e.log_tail()))
}

#[tokio::test]
async fn statistics_move_and_a_killed_postmaster_fails_the_snapshot_with_its_log() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), shared_cache(), 55445)).unwrap();
    let p = handler
        .prepare_server("r1", &prepare_task(false, 0), &ProgressSink::detached())
        .await
        .unwrap_or_else(|f| panic!("{f}\n{}", f.error.log_tail()));
    assert!(p.wal_dir.is_empty());
    let before = snapshot(&handler, "r1", true).await;
    assert!(before.checkpoint_done);
    assert_eq!(before.postmaster_start_time, p.postmaster_start_time);
    assert!(!before.taken_at.is_empty());
    let b = stats(&before.stats_json);
    for k in [
        "db.xact_commit",
        "db.xact_rollback",
        "db.blks_read",
        "db.blks_hit",
        "db.tup_inserted",
        "db.temp_files",
        "db.deadlocks",
        "bgwriter.checkpoints_timed",
        "bgwriter.checkpoints_req",
        "bgwriter.buffers_checkpoint",
        "bgwriter.buffers_alloc",
        "wal.wal_records",
        "wal.wal_bytes",
        "wal_lsn_bytes",
        "database_size_bytes",
    ] {
        num(&b, k);
    }
    assert!(b.values().all(|v| v.is_number()), "{b:?}");

    let ci = p.conninfo.clone().unwrap();
    let (client, conn) = tokio_postgres::connect(&ci.to_conninfo_string(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE t AS SELECT g AS id, repeat('x', 100) AS pad FROM generate_series(1, 20000) g",
        )
        .await
        .unwrap();
    drop(client);
    let _ = conn.await;
    // Backends flush their counters when they exit; poll briefly.
    let mut after = stats(&snapshot(&handler, "r1", true).await.stats_json);
    // The checkpointer publishes its counters shortly after the CHECKPOINT returns.
    for _ in 0..50 {
        if num(&after, "db.tup_inserted") >= num(&b, "db.tup_inserted") + 20000.0
            && num(&after, "bgwriter.checkpoints_req") > num(&b, "bgwriter.checkpoints_req")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        after = stats(&snapshot(&handler, "r1", false).await.stats_json);
    }
    assert!(num(&after, "db.tup_inserted") >= num(&b, "db.tup_inserted") + 20000.0);
    assert!(num(&after, "db.xact_commit") > num(&b, "db.xact_commit"));
    assert!(num(&after, "wal_lsn_bytes") > num(&b, "wal_lsn_bytes") + 2e6);
    assert!(num(&after, "wal.wal_records") > num(&b, "wal.wal_records"));
    assert!(num(&after, "database_size_bytes") > num(&b, "database_size_bytes") + 1e6);
    assert!(num(&after, "bgwriter.checkpoints_req") > num(&b, "bgwriter.checkpoints_req"));

    // Crash: SIGKILL the postmaster.
    let pid = handler.postmaster_pid("r1").expect("postmaster pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    for _ in 0..50 {
        if handler.postmaster_pid("r1").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(handler.postmaster_pid("r1"), None);
    let outcome = handler
        .handle(
            Task {
                task_id: "snap".into(),
                run_id: "r1".into(),
                attempt: 1,
                kind: Some(task::Kind::SnapshotStats(SnapshotStatsTask {
                    checkpoint_first: true,
                    settle_sessions: true,
                })),
            },
            ProgressSink::detached(),
        )
        .await;
    match outcome {
        task_result::Outcome::Error(e) => {
            assert_eq!(e.stage, "measuring");
            assert_eq!(
                e.reason,
                format!("postgres is not running (postmaster pid {pid} gone)")
            );
            assert!(
                e.log_tail.contains("database system is ready"),
                "{}",
                e.log_tail
            );
        }
        other => panic!("expected an error, got {other:?}"),
    }
    // The crashed run is cleaned up and the next run proceeds.
    assert!(handler.stop_server("r1").await.unwrap().removed);
    let next = handler
        .prepare_server("r2", &prepare_task(false, 0), &ProgressSink::detached())
        .await
        .unwrap_or_else(|f| panic!("{f}\n{}", f.error.log_tail()));
    assert_ne!(next.postmaster_start_time, "");
    snapshot(&handler, "r2", false).await;
    handler.stop_all().await;
}

#[tokio::test]
async fn io_probe_returns_a_row_per_chunk_size_and_mode_and_cleans_up() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let mut c = config(work.path(), cache, 55450);
    let data_root = work.path().join("data");
    c.data_root = Some(data_root.clone());
    let handler = AgentHandler::new(c).unwrap();
    let task = RunProbeTask {
        target: "data".into(),
        file_size_bytes: 8 << 20,
        chunk_sizes: vec![4096, 65536, 1 << 20],
        buffered: true,
        direct: true,
        fsync_block_sizes: vec![8192],
        fsync_writes: 30,
    };
    let outcome = handler
        .handle(
            Task {
                task_id: "probe".into(),
                kind: Some(task::Kind::RunProbe(task.clone())),
                ..Default::default()
            },
            ProgressSink::detached(),
        )
        .await;
    let r = match outcome {
        task_result::Outcome::RunProbe(r) => r,
        other => panic!("{other:?}"),
    };
    assert!(!r.filesystem.is_empty());
    let modes: Vec<(&str, u32)> = r
        .rows
        .iter()
        .map(|x| (x.mode.as_str(), x.chunk_bytes))
        .collect();
    assert_eq!(
        modes,
        [
            ("read-buffered", 4096),
            ("read-direct", 4096),
            ("read-buffered", 65536),
            ("read-direct", 65536),
            ("read-buffered", 1 << 20),
            ("read-direct", 1 << 20),
            ("write-fdatasync", 8192),
        ]
    );
    for row in &r.rows[..6] {
        assert_eq!(row.bytes, 8 << 20, "{row:?}");
        assert!(row.mb_per_s > 0.0 && row.cache_dropped, "{row:?}");
    }
    let fs = &r.rows[6];
    assert_eq!(fs.bytes, 30 * 8192);
    assert!(fs.latency_avg_us > 0.0 && fs.latency_p99_us > 0.0, "{fs:?}");
    let left: Vec<_> = std::fs::read_dir(&data_root).unwrap().flatten().collect();
    assert!(left.is_empty(), "probe files left: {left:?}");

    // A bad target is a clear error.
    let err = handler
        .run_probe(
            &RunProbeTask {
                target: "tmp".into(),
                ..task.clone()
            },
            None,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("target"), "{err}");

    // On a filesystem refusing O_DIRECT the direct rows are skipped, not the probe.
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let dir = tempfile::tempdir_in(shm).unwrap();
        let mut c = config(work.path(), work.path().join("cache"), 55455);
        c.data_root = Some(dir.path().to_path_buf());
        let h = AgentHandler::new(c).unwrap();
        let rep = h.run_probe(&task, None).await.unwrap();
        let direct: Vec<_> = rep
            .result
            .rows
            .iter()
            .filter(|x| x.mode == "read-direct")
            .collect();
        assert_eq!(direct.len(), 3);
        if direct[0].bytes == 0 {
            assert!(
                rep.skipped[0].contains("O_DIRECT refused"),
                "{:?}",
                rep.skipped
            );
        }
        eprintln!("tmpfs probe: skipped={:?}", rep.skipped);
    }
}

#[tokio::test]
async fn clean_up_after_a_restart_removes_only_what_the_agent_made() {
    let work = tempfile::tempdir().unwrap();
    let mut c = config(work.path(), work.path().join("cache"), 55460);
    let (data, wal) = (work.path().join("data"), work.path().join("wal"));
    c.data_root = Some(data.clone());
    c.wal_root = Some(wal.clone());
    for d in ["old-run/data", "not-ours/stuff"] {
        std::fs::create_dir_all(data.join(d)).unwrap();
    }
    std::fs::write(data.join("old-run/.blocklab-run"), b"old-run").unwrap();
    std::fs::create_dir_all(wal.join("old-run/archive_status")).unwrap();
    std::fs::create_dir_all(wal.join("other-thing")).unwrap();
    let handler = AgentHandler::new(c).unwrap();
    handler.cleanup_stale().await;
    assert!(!data.join("old-run").exists() && !wal.join("old-run").exists());
    assert!(data.join("not-ours/stuff").is_dir());
    assert!(wal.join("other-thing").is_dir());
}
