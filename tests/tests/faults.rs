//! Agent-side faults and the probe job: a postgres killed during the measured window fails
//! that run with its stage while the next run proceeds; server statistics are stored per run;
//! the I/O probe stores a row per chunk size and mode.

use std::time::Duration;

use blocklab_proto::v1::GetJobRequest;
use blocklab_tests::{Lab, pg_tarball, postmaster_pids, run_job, wait_until};
use sqlx::Row;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_crash_fails_one_run_and_the_next_proceeds() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "crash"
repetitions = 2
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [2]
[workload]
scale = 1
duration = "6s"
[layout]
separate_wal = true
"#,
        pg_tarball().display()
    );
    let submitted = client
        .submit_job(blocklab_proto::v1::SubmitJobRequest {
            spec_toml: spec,
            ..Default::default()
        })
        .await
        .expect("submit")
        .into_inner();
    let job = submitted.job_id.clone();
    // Wait until the first run measures, then kill its postmaster.
    let c = client.clone();
    let j = job.clone();
    wait_until(
        Duration::from_secs(15 * 60),
        "first run measuring",
        move || {
            let mut c = c.clone();
            let j = j.clone();
            async move {
                let r = c
                    .get_job(GetJobRequest { job_id: j, run: 0 })
                    .await
                    .expect("job")
                    .into_inner();
                r.runs.first().is_some_and(|r| r.stage == "measuring")
            }
        },
    )
    .await;
    let pids = postmaster_pids(lab.dir.path());
    assert_eq!(pids.len(), 1, "one running cluster: {pids:?}");
    let status = std::process::Command::new("kill")
        .args(["-9", &pids[0].to_string()])
        .status()
        .expect("kill");
    assert!(status.success());

    let mut out = Vec::new();
    let last = tokio::time::timeout(
        Duration::from_secs(600),
        blocklab_cli::watch(&mut client, &job, &mut out),
    )
    .await
    .expect("job finished")
    .expect("watch")
    .expect("a final state");
    assert_eq!(
        last.state, "failed",
        "one run failed, so the job reports it"
    );
    assert_eq!((last.runs_done, last.runs_failed), (1, 1));
    let r = client
        .get_job(GetJobRequest {
            job_id: job.clone(),
            run: 1,
        })
        .await
        .expect("job")
        .into_inner();
    let first = &r.runs[0];
    assert_eq!(first.state, "failed");
    assert_eq!(
        first.stage, "measuring",
        "failed at the stage it was in: {first:?}"
    );
    assert!(!first.error.is_empty());
    assert_eq!(r.runs[1].state, "done", "the next run proceeded");

    // The good run has server-statistics deltas and its WAL dir was separate.
    let d = client
        .get_job(GetJobRequest {
            job_id: job.clone(),
            run: 2,
        })
        .await
        .expect("job")
        .into_inner()
        .run_detail
        .expect("detail");
    let stat = |n: &str| d.stats.iter().find(|s| s.name == n).map(|s| s.delta);
    assert!(
        stat("db.xact_commit").unwrap_or(0.0) > 0.0,
        "commits counted: {:?}",
        d.stats
    );
    assert!(stat("wal_lsn_bytes").unwrap_or(0.0) > 0.0, "WAL written");
    assert!(
        d.settings
            .iter()
            .any(|s| s.name == "shared_buffers" || s.name == "port")
    );

    // The I/O probe on the same agent.
    let probe = r#"
name = "probe"
kind = "probe"
[probe]
targets = ["data", "wal"]
file_size = "8MB"
chunk_sizes_kb = [4, 64, 1024]
fsync_block_sizes_kb = [8, 16]
fsync_writes = 20
"#;
    let (probe_job, state) = run_job(&mut client, probe, Duration::from_secs(600)).await;
    assert_eq!(state, "done");
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let rows = sqlx::query("SELECT target, mode, chunk_bytes, mb_per_s FROM probe_results WHERE job_id = ? ORDER BY target, mode, chunk_bytes")
        .bind(&probe_job)
        .fetch_all(&db)
        .await
        .expect("probe rows");
    for target in ["data", "wal"] {
        let mine: Vec<(String, i64)> = rows
            .iter()
            .filter(|r| r.get::<String, _>("target") == target)
            .map(|r| (r.get("mode"), r.get("chunk_bytes")))
            .collect();
        for chunk in [4096, 65536, 1048576] {
            assert!(
                mine.contains(&("read-buffered".to_string(), chunk)),
                "{target} buffered {chunk}: {mine:?}"
            );
        }
        assert!(
            mine.iter().any(|(m, _)| m == "write-fdatasync"),
            "{target}: {mine:?}"
        );
    }
    assert!(
        rows.iter()
            .filter(|r| r.get::<String, _>("mode") == "read-buffered")
            .all(|r| r.get::<f64, _>("mb_per_s") > 0.0)
    );
    // The probe's charts.
    let plots = lab.dir.path().join("probe-plots");
    let out = std::process::Command::new(blocklab_tests::binary("blocklab"))
        .args([
            "--coordinator",
            &lab.addr,
            "plot",
            &probe_job,
            "--out",
            plots.to_str().expect("path"),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("blocklab plot");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read =
        std::fs::read_to_string(plots.join("probe-read-throughput.svg")).expect("read chart");
    assert!(
        read.contains("data read-buffered") && read.contains("wal read-buffered"),
        "series per target and mode"
    );
    assert!(plots.join("probe-fdatasync-latency.svg").is_file());
    lab.shutdown().await;
}
