//! Least privilege, end to end: settings judged by the build before any run.

use std::time::Duration;

use blocklab_proto::v1::GetJobRequest;
use blocklab_tests::{Lab, pg_tarball, run_job};

fn spec(name: &str, setting: &str) -> String {
    format!(
        r#"
name = "{name}"
repetitions = 2
[source]
tarball = "{tarball}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
wal_block_size_kb = [8]
clients = [1]
[settings]
{setting}
[workload]
builtin = "select-only"
scale = 1
duration = "2s"
warmup = "0s"
"#,
        tarball = pg_tarball().display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settings_the_build_refuses_fail_the_job_before_any_run() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    // Judged at submit against the embedded PostgreSQL 15 catalog and the allowed groups:
    // refused with the field named, and no job is stored.
    let at_submit = [
        (
            r#"shared_buffers = "64MB' ; listen_addresses = '*""#,
            r#"settings.shared_buffers: "MB' ; listen_addresses = '*" is not a unit (memory: B, kB, MB, GB, TB; time: us, ms, s, min, h, d) (as PostgreSQL 18 reads shared_buffers)"#,
        ),
        (
            r#"work_mem = "-1""#,
            r#"settings.work_mem: -1 is outside the valid range (64 .. 2147483647) (as PostgreSQL 18 reads work_mem)"#,
        ),
        (
            r#"max_connections = "lots""#,
            r#"settings.max_connections: "lots" is not an integer (as PostgreSQL 18 reads max_connections)"#,
        ),
        (
            r#"logging_collector = "on""#,
            r#"settings.logging_collector: is in the group "Reporting and Logging / Where to Log", which no spec may set"#,
        ),
        (
            r#"log_filename = "postgresql.conf""#,
            r#"settings.log_filename: names a file, a directory, a library or a command, which no spec may choose"#,
        ),
    ];
    for (i, (setting, expected)) in at_submit.into_iter().enumerate() {
        let refused = client
            .submit_job(blocklab_proto::v1::SubmitJobRequest {
                spec_toml: spec(&format!("refused-setting-{i}"), setting),
                files: Default::default(),
            })
            .await
            .expect_err(setting);
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{setting}");
        assert!(
            refused.message().contains(expected),
            "{setting}: {}",
            refused.message()
        );
    }
    let jobs = client
        .list_jobs(blocklab_proto::v1::ListJobsRequest {})
        .await
        .expect("jobs")
        .into_inner()
        .jobs;
    assert!(jobs.is_empty(), "{jobs:?}");

    // Enum values are not in the catalog: the build's configuration parser names them.
    let cases = [(
        r#"wal_level = "bogus""#,
        r#"settings.wal_level = "bogus": invalid value for parameter "wal_level": "bogus" (Available values: minimal, replica, logical.)"#,
    )];
    for (i, (setting, expected)) in cases.into_iter().enumerate() {
        let (job_id, state) = run_job(
            &mut client,
            &spec(&format!("bad-setting-{i}"), setting),
            Duration::from_secs(900),
        )
        .await;
        let job = client
            .get_job(GetJobRequest {
                job_id,
                ..Default::default()
            })
            .await
            .expect("job")
            .into_inner();
        let summary = job.job.clone().unwrap_or_default();
        assert_eq!(state, "failed", "{setting}: {summary:?}");
        assert_eq!(
            summary.error,
            format!("the build refuses settings: {expected}"),
            "{setting}"
        );
        assert_eq!(job.runs.len(), 2);
        for r in &job.runs {
            // Failed before any attempt: no server was started for it.
            assert_eq!(
                (r.state.as_str(), r.stage.as_str(), r.attempt),
                ("failed", "building", 0),
                "{setting}: {r:?}"
            );
            assert_eq!(r.error, summary.error);
        }
    }

    // Accepted by the checks, refused by the server at start: the run's reason says why.
    let (job_id, state) = run_job(
        &mut client,
        &spec("minimal-wal", r#"wal_level = "minimal""#),
        Duration::from_secs(900),
    )
    .await;
    assert_eq!(state, "failed");
    let job = client
        .get_job(GetJobRequest {
            job_id,
            ..Default::default()
        })
        .await
        .expect("job")
        .into_inner();
    let first = &job.runs[0];
    assert_eq!(
        (first.stage.as_str(), first.attempt),
        ("starting", 1),
        "{first:?}"
    );
    // The first start is the one reading the cell's memory reference.
    assert_eq!(
        first.error,
        r#"memory reference (bs=8K wal=8K c=1): pg_ctl failed: exited with exit status: 1: WAL streaming (max_wal_senders > 0) requires wal_level "replica" or "logical""#,
    );
    lab.shutdown().await;
}
