//! Placement over a lab of three agents and two client workers: three jobs run at once, each
//! pinned to its own database host; a fourth, pinned by the rule (fewest unfinished jobs,
//! then the host pinned longest ago) to the first job's host, waits for that host and then
//! for both workers, says why while it waits, and completes. No run fails for waiting.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetJobRequest, ListJobsRequest, SubmitJobRequest};
use blocklab_tests::{Lab, LabOptions, pg_tarball, wait_until};
use tonic::transport::Channel;

async fn submit(
    c: &mut ControlClient<Channel>,
    name: &str,
    workers: u32,
    duration: &str,
) -> String {
    c.submit_job(SubmitJobRequest {
        spec_toml: spec(name, workers, duration),
        files: HashMap::new(),
    })
    .await
    .expect("submit")
    .into_inner()
    .job_id
}

/// Waits until the job's (only) run measures: it holds its database host and its worker.
async fn measuring(c: &ControlClient<Channel>, job: &str) {
    wait_until(Duration::from_secs(600), "a run to measure", || {
        let (mut c, job) = (c.clone(), job.to_string());
        async move {
            c.get_job(GetJobRequest {
                job_id: job,
                run: 0,
            })
            .await
            .expect("job")
            .into_inner()
            .runs
            .iter()
            .any(|r| r.stage == "measuring")
        }
    })
    .await;
}

/// The database host a job is pinned to ("" until it is).
async fn pinned(c: &mut ControlClient<Channel>, job: &str) -> String {
    c.get_job(GetJobRequest {
        job_id: job.to_string(),
        run: 0,
    })
    .await
    .expect("job")
    .into_inner()
    .job
    .expect("summary")
    .db_host_id
}

fn spec(name: &str, workers: u32, duration: &str) -> String {
    format!(
        r#"
name = "{name}"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [2]
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "{duration}"
[placement]
db_host_labels = ["e2e"]
client_workers = {workers}
"#,
        pg_tarball().display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_spread_over_hosts_and_share_the_workers() {
    let lab = Lab::start_with(LabOptions {
        agents: 3,
        workers_in_process: 2,
        ..LabOptions::default()
    })
    .await;
    let mut c = lab.client().await;
    // The first job holds its host and one worker, the second the other worker; the third
    // waits for a worker (first come, first served: it gets the first's when that ends).
    let first = submit(&mut c, "first", 1, "15s").await;
    measuring(&c, &first).await;
    let second = submit(&mut c, "second", 1, "25s").await;
    measuring(&c, &second).await;
    let third = submit(&mut c, "third", 1, "20s").await;
    wait_until(Duration::from_secs(600), "three jobs pinned", || {
        let mut c = c.clone();
        let jobs = [first.clone(), second.clone(), third.clone()];
        async move {
            for j in &jobs {
                if pinned(&mut c, j).await.is_empty() {
                    return false;
                }
            }
            true
        }
    })
    .await;
    let mut hosts = BTreeSet::new();
    for j in [&first, &second, &third] {
        hosts.insert(pinned(&mut c, j).await);
    }
    assert_eq!(
        hosts,
        BTreeSet::from(["e2e-db".into(), "e2e-db-1".into(), "e2e-db-2".into()]),
        "three jobs on three hosts"
    );
    let fourth = submit(&mut c, "fourth", 2, "3s").await;

    // Follow every job to its end, collecting the reasons the fourth waited for.
    let mut reasons: Vec<String> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(900);
    loop {
        let jobs = c
            .list_jobs(ListJobsRequest {})
            .await
            .expect("jobs")
            .into_inner()
            .jobs;
        if let Some(j) = jobs.iter().find(|j| j.job_id == fourth)
            && !j.waiting.is_empty()
            && reasons.last() != Some(&j.waiting)
        {
            reasons.push(j.waiting.clone());
        }
        let finished = jobs
            .iter()
            .filter(|j| matches!(j.state.as_str(), "done" | "failed" | "cancelled"))
            .count();
        if finished == 4 {
            for j in &jobs {
                assert_eq!(
                    j.state, "done",
                    "job {} ({}): {}",
                    j.name, j.job_id, j.error
                );
                assert_eq!((j.runs_done, j.runs_failed), (1, 0), "job {}", j.name);
                assert!(j.waiting.is_empty(), "a finished job waits for nothing");
            }
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "jobs did not finish: {jobs:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        pinned(&mut c, &fourth).await,
        pinned(&mut c, &first).await,
        "the fourth job goes to the host pinned longest ago"
    );
    let host = pinned(&mut c, &first).await;
    assert!(
        reasons
            .iter()
            .any(|r| r == &format!("waiting for database host {host}: busy with another job's run")),
        "the fourth job said it waited for its host: {reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("waiting for 2 client workers: ") && !r.contains(": 2 free")),
        "the fourth job said it waited for both workers: {reasons:?}"
    );
    lab.shutdown().await;
}
