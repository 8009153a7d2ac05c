//! `blocklab rerun`: a job's stored spec and files submitted again as a new job that records
//! which job it reruns, with new seeds unless the same are asked for; `compare` of the two
//! works cell by cell.

use std::time::Duration;

use blocklab_proto::v1::{CompareJobsRequest, GetJobRequest, RerunJobRequest};
use blocklab_tests::{Lab, follow_job, pg_tarball, run_job};

const TIMEOUT: Duration = Duration::from_secs(20 * 60);
use sqlx::Row;

fn spec() -> String {
    format!(
        r#"
name = "rerun-me"
order = "shuffled"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [1]
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "1s"
"#,
        pg_tarball().display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rerun_is_a_new_job_of_the_same_plan_that_compares_with_the_old() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let (first, state) = run_job(&mut client, &spec(), Duration::from_secs(20 * 60)).await;
    assert_eq!(state, "done", "job {first}");

    let rerun = client
        .rerun_job(RerunJobRequest {
            job_id: first.clone(),
            same_seed: false,
        })
        .await
        .expect("rerun")
        .into_inner();
    assert_ne!(rerun.job_id, first);
    assert_eq!((rerun.cells, rerun.runs), (1, 1));
    assert_eq!(
        follow_job(&mut client, &rerun.job_id, TIMEOUT).await,
        "done"
    );
    let same = client
        .rerun_job(RerunJobRequest {
            job_id: first.clone(),
            same_seed: true,
        })
        .await
        .expect("rerun --same-seed")
        .into_inner()
        .job_id;
    assert_eq!(follow_job(&mut client, &same, TIMEOUT).await, "done");

    // The new job records which job it reruns, and `job` shows it.
    let got = client
        .get_job(GetJobRequest {
            job_id: rerun.job_id.clone(),
            run: 0,
        })
        .await
        .expect("get job")
        .into_inner();
    let summary = got.job.clone().expect("summary");
    assert_eq!(summary.rerun_of, first);
    let first_spec = client
        .get_job(GetJobRequest {
            job_id: first.clone(),
            run: 0,
        })
        .await
        .expect("get first")
        .into_inner()
        .spec_toml;
    assert_eq!(got.spec_toml, first_spec);
    let text = blocklab_cli::render_job(&got);
    assert!(
        text.lines().any(|l| l == format!("rerun of: {first}")),
        "{text}"
    );

    // New seeds unless --same-seed.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", lab.catalog_path().display()))
        .await
        .expect("catalog");
    let seeds = |id: String| {
        let pool = pool.clone();
        async move {
            let row = sqlx::query("SELECT seed, random_seed, rerun_of FROM jobs WHERE job_id = ?")
                .bind(id)
                .fetch_one(&pool)
                .await
                .expect("job row");
            (
                row.get::<Option<i64>, _>("seed"),
                row.get::<Option<i64>, _>("random_seed"),
                row.get::<Option<String>, _>("rerun_of"),
            )
        }
    };
    let (a_order, a_random, a_of) = seeds(first.clone()).await;
    let (b_order, b_random, _) = seeds(rerun.job_id.clone()).await;
    let (c_order, c_random, c_of) = seeds(same.clone()).await;
    assert!(
        a_order.is_some() && a_random.is_some(),
        "{a_order:?} {a_random:?}"
    );
    assert_eq!(a_of, None);
    assert_ne!((b_order, b_random), (a_order, a_random));
    assert_eq!((c_order, c_random), (a_order, a_random));
    assert_eq!(c_of.as_deref(), Some(first.as_str()));

    let cmp = client
        .compare_jobs(CompareJobsRequest {
            job_a: first.clone(),
            job_b: rerun.job_id.clone(),
            metric: String::new(),
        })
        .await
        .expect("compare")
        .into_inner();
    assert_eq!(cmp.cells.len(), 1, "{cmp:?}");
    assert_eq!(cmp.cells[0].baseline_label, "bs=8K wal=8K c=1", "{cmp:?}");
    lab.shutdown().await;
}
