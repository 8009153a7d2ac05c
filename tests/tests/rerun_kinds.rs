//! `blocklab rerun` of TPC-C-like and AS3AP-like jobs: their runs draw from the job's random
//! seed as pgbench runs do, so a rerun with the same seed replays the same streams (the
//! seed each run used is stored with its result) and one without draws new ones.

use std::time::Duration;

use blocklab_proto::v1::RerunJobRequest;
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_tests::{Lab, follow_job, pg_tarball, run_job};

const TIMEOUT: Duration = Duration::from_secs(20 * 60);
use sqlx::Row;
use tonic::transport::Channel;

fn spec(name: &str, workload: &str) -> String {
    format!(
        r#"
name = "{name}"
repetitions = 1
[source]
tarball = "{tarball}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
wal_block_size_kb = [8]
clients = [2]
[settings]
shared_buffers = "32MB"
[workload]
{workload}
"#,
        tarball = pg_tarball().display()
    )
}

async fn rerun(client: &mut ControlClient<Channel>, job_id: &str, same_seed: bool) -> String {
    let id = client
        .rerun_job(RerunJobRequest {
            job_id: job_id.to_string(),
            same_seed,
        })
        .await
        .expect("rerun")
        .into_inner()
        .job_id;
    assert_eq!(follow_job(client, &id, TIMEOUT).await, "done", "rerun {id}");
    id
}

/// The job's random seed and the seed each of its runs used, in run order.
async fn seeds(pool: &sqlx::SqlitePool, job_id: &str) -> (Option<i64>, Vec<Option<i64>>) {
    let job: Option<i64> = sqlx::query_scalar("SELECT random_seed FROM jobs WHERE job_id = ?")
        .bind(job_id)
        .fetch_one(pool)
        .await
        .expect("job row");
    let runs = sqlx::query(
        "SELECT res.random_seed FROM results res JOIN runs USING (run_id) WHERE job_id = ? ORDER BY runs.sequence",
    )
    .bind(job_id)
    .fetch_all(pool)
    .await
    .expect("results")
    .iter()
    .map(|r| r.get::<Option<i64>, _>("random_seed"))
    .collect();
    (job, runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpcc_and_as3ap_reruns_replay_the_job_seed_only_when_asked() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let kinds = [
        (
            "tpcc-seeded",
            "kind = \"tpcc\"\nscale = 1\nduration = \"1s\"\ncheck = false",
        ),
        (
            "as3ap-seeded",
            "kind = \"as3ap\"\nscale = 1\nduration = \"1s\"\nsingle_user = false\nmixes = [\"mixed-oltp\"]",
        ),
    ];
    for (name, workload) in kinds {
        let started = std::time::Instant::now();
        let (first, state) = run_job(
            &mut client,
            &spec(name, workload),
            Duration::from_secs(20 * 60),
        )
        .await;
        assert_eq!(state, "done", "{name}: job {first}");
        let other = rerun(&mut client, &first, false).await;
        let same = rerun(&mut client, &first, true).await;

        let (job_seed, run_seeds) = seeds(&pool, &first).await;
        let job_seed = job_seed.unwrap_or_else(|| panic!("{name}: the job has a random seed"));
        assert_eq!(
            run_seeds,
            vec![Some(job_seed)],
            "{name}: runs draw from the job's seed"
        );
        assert_eq!(
            seeds(&pool, &same).await,
            (Some(job_seed), vec![Some(job_seed)]),
            "{name}: --same-seed replays the seed"
        );
        let (other_seed, other_runs) = seeds(&pool, &other).await;
        let other_seed = other_seed.unwrap_or_else(|| panic!("{name}: the rerun has a seed"));
        assert_ne!(other_seed, job_seed, "{name}: a rerun draws a new seed");
        assert_eq!(other_runs, vec![Some(other_seed)], "{name}");
        eprintln!("{name}: three jobs in {:.1?}", started.elapsed());
    }
    lab.shutdown().await;
}
