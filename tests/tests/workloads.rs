//! The workload kinds beyond pgbench's scripts, end to end at a tiny size against real
//! servers built at a non-default page size (16K): a TPC-C-like job (loaded in parallel by
//! two workers, terminals split across them, consistency checks after each window), an
//! AS3AP-like job (single-user queries, both multi-user mixes) and a maintenance job. Each
//! stores its metrics in the catalog, and `blocklab results` shows them with their units.

use std::time::Duration;

use blocklab_cli::{Format, render_results};
use blocklab_proto::v1::QueryResultsRequest;
use blocklab_tests::{Lab, LabOptions, pg_tarball, run_job};
use sqlx::Row;

fn spec(name: &str, blocks: &str, workload: &str, workers: u32) -> String {
    format!(
        r#"
name = "{name}"
repetitions = 1
baseline = {{ block_size_kb = 16, wal_block_size_kb = 8 }}
[source]
tarball = "{tarball}"
configure = ["--without-icu"]
[matrix]
block_size_kb = {blocks}
wal_block_size_kb = [8]
clients = [4]
[settings]
shared_buffers = "32MB"
[workload]
{workload}
[placement]
client_workers = {workers}
"#,
        tarball = pg_tarball().display()
    )
}

/// (name, value, unit, higher is better) of every stored metric of the job's runs, in order.
async fn metrics(lab: &Lab, job: &str) -> Vec<(String, f64, String, bool)> {
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let rows = sqlx::query(
        "SELECT metric, value, unit, higher_is_better, block_size FROM run_metrics_v WHERE job_id = ? ORDER BY sequence, position",
    )
    .bind(job)
    .fetch_all(&db)
    .await
    .expect("run_metrics_v");
    for r in &rows {
        let bs: i64 = r.get("block_size");
        assert!(bs == 16384 || bs == 8192, "proven block size {bs}");
    }
    rows.iter()
        .map(|r| {
            (
                r.get("metric"),
                r.get("value"),
                r.get("unit"),
                r.get("higher_is_better"),
            )
        })
        .collect()
}

fn find<'a>(m: &'a [(String, f64, String, bool)], name: &str) -> &'a (String, f64, String, bool) {
    m.iter()
        .find(|x| x.0 == name)
        .unwrap_or_else(|| panic!("metric {name} missing from {m:?}"))
}

/// Asserts the job finished, showing its runs (stage, error) when it did not.
async fn assert_done(lab: &Lab, job: &str, state: &str) {
    if state != "done" {
        let detail = lab
            .client()
            .await
            .get_job(blocklab_proto::v1::GetJobRequest {
                job_id: job.to_string(),
                ..Default::default()
            })
            .await
            .expect("job")
            .into_inner();
        panic!(
            "job {job} ended {state}:\n{}",
            blocklab_cli::render_job(&detail)
        );
    }
}

async fn results_table(lab: &Lab, job: &str, metric: &str) -> String {
    let r = lab
        .client()
        .await
        .query_results(QueryResultsRequest {
            job_id: job.to_string(),
            metric: metric.to_string(),
        })
        .await
        .expect("results")
        .into_inner()
        .into();
    render_results(&r, Format::Table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpcc_like_job_reports_notpm_and_passes_its_consistency_checks() {
    let lab = Lab::start_with(LabOptions {
        workers_in_process: 2,
        worker_processes: 0,
        ..LabOptions::default()
    })
    .await;
    let mut client = lab.client().await;
    let workload = "kind = \"tpcc\"\nscale = 2\nduration = \"4s\"\nwarmup = \"1s\"";
    let (job, state) = run_job(
        &mut client,
        &spec("tpcc-tiny", "[8, 16]", workload, 2),
        Duration::from_secs(30 * 60),
    )
    .await;
    assert_done(&lab, &job, &state).await;
    let m = metrics(&lab, &job).await;
    let notpm = find(&m, "notpm");
    assert!(notpm.1 > 0.0 && notpm.2 == "NOTPM" && notpm.3, "{notpm:?}");
    for t in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        let p90 = find(&m, &format!("{t}.p90_ms"));
        assert!(p90.1 > 0.0 && p90.2 == "ms" && !p90.3, "{p90:?}");
        find(&m, &format!("{t}.rollbacks"));
    }
    // The consistency checks ran after each window and passed (a failure fails the run).
    let checks = m
        .iter()
        .filter(|x| x.0 == "tpcc.consistency_checks")
        .collect::<Vec<_>>();
    assert_eq!(checks.len(), 2, "one check per run: {m:?}");
    assert!(
        checks.iter().all(|c| c.1 == 11.0),
        "conditions 1-10 and 12: {checks:?}"
    );

    // `blocklab job JOB --run 2` lists the run's metrics.
    let detail = lab
        .client()
        .await
        .get_job(blocklab_proto::v1::GetJobRequest {
            job_id: job.clone(),
            run: 2,
        })
        .await
        .expect("job")
        .into_inner();
    let text = blocklab_cli::render_run_detail(detail.run_detail.as_ref().expect("detail"));
    assert!(text.contains("notpm") && text.contains("NOTPM"), "{text}");
    // `blocklab jobs` says what the job runs.
    let jobs = lab
        .client()
        .await
        .list_jobs(blocklab_proto::v1::ListJobsRequest {})
        .await
        .expect("jobs")
        .into_inner();
    assert_eq!(jobs.jobs[0].workload, "tpcc");
    assert!(blocklab_cli::render_jobs(&jobs.jobs).contains("| tpcc "));
    // `blocklab job JOB` gives each run's NOTPM as its result.
    let runs = blocklab_cli::render_job(&detail);
    assert_eq!(runs.matches(" NOTPM").count(), 2, "{runs}");

    // Plots: NOTPM against page size, the change by metric, the per-second traces.
    let export = blocklab_tests::export_job(&mut lab.client().await, &job, true).await;
    let charts = blocklab_report::plot::charts(&export);
    let names: Vec<&str> = charts.iter().map(|c| c.file_name.as_str()).collect();
    assert!(names.contains(&"notpm-vs-page-size.svg"), "{names:?}");
    let change = charts
        .iter()
        .find(|c| c.file_name == "change-by-metric.svg")
        .unwrap_or_else(|| panic!("no change chart in {names:?}"));
    assert!(change.svg.contains(r#"data-metric="new_order.p90_ms""#));
    let report = blocklab_report::html::report(&export);
    assert!(
        report.contains("Per metric"),
        "the HTML report has the per-metric table"
    );
    assert!(
        report.contains("headline metric") && report.contains("notpm "),
        "the report's runs lead with NOTPM"
    );

    let table = results_table(&lab, &job, "").await;
    assert!(table.contains("notpm mean"), "{table}");
    assert!(table.contains("NOTPM, higher is better"), "{table}");
    assert!(table.contains("new_order.p90_ms"), "{table}");
    assert!(table.contains("(baseline)"), "{table}");
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn as3ap_like_job_times_each_query_and_reports_tuples_per_second() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let workload = "kind = \"as3ap\"\nscale = 1\nduration = \"2s\"";
    let (job, state) = run_job(
        &mut client,
        &spec("as3ap-tiny", "[16]", workload, 1),
        Duration::from_secs(30 * 60),
    )
    .await;
    assert_done(&lab, &job, &state).await;
    let m = metrics(&lab, &job).await;
    let queries: Vec<_> = m.iter().filter(|x| x.0.starts_with("q.")).collect();
    assert!(queries.len() >= 10, "single-user queries: {queries:?}");
    assert!(
        queries.iter().all(|q| q.2 == "s" && !q.3 && q.1 >= 0.0),
        "{queries:?}"
    );
    for mix in ["mixed_ir", "mixed_oltp"] {
        let t = find(&m, &format!("{mix}.tup_per_s"));
        assert!(t.1 > 0.0 && t.2 == "tup/s" && t.3, "{t:?}");
        // OSDB's cross-section tests timed inside the mix, and its two checks after it.
        let xs: Vec<_> = m
            .iter()
            .filter(|x| x.0.starts_with(&format!("{mix}.xs.")))
            .collect();
        assert_eq!(xs.len(), 10, "{mix}: {xs:?}");
        assert!(xs.iter().all(|x| x.2 == "s" && !x.3 && x.1 > 0.0), "{xs:?}");
        let total = find(&m, &format!("{mix}.cross_section_s"));
        assert!(total.1 > 0.0 && total.2 == "s", "{total:?}");
    }
    let table = results_table(&lab, &job, "").await;
    assert!(table.contains("mixed_ir.tup_per_s mean"), "{table}");
    assert!(table.contains("tup/s, higher is better"), "{table}");
    assert!(table.contains("s, lower is better"), "{table}");
    let q = &queries[0].0;
    let one = results_table(&lab, &job, q).await;
    assert!(one.contains(&format!("{q} mean")), "{one}");
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn maintenance_job_times_every_step() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let (job, state) = run_job(
        &mut client,
        &spec(
            "maintenance-tiny",
            "[16]",
            "kind = \"maintenance\"\nscale = 1",
            1,
        ),
        Duration::from_secs(30 * 60),
    )
    .await;
    assert_done(&lab, &job, &state).await;
    let m = metrics(&lab, &job).await;
    for step in [
        "copy",
        "create_index",
        "vacuum_analyze",
        "checkpoint",
        "count_warm",
        "count_cold",
        "dump",
        "restore",
    ] {
        let s = find(&m, &format!("maint.{step}"));
        assert!(s.1 > 0.0 && s.2 == "s" && !s.3, "{s:?}");
    }
    let total = find(&m, "maint.total_s");
    assert!(total.1 > find(&m, "maint.copy").1, "{total:?}");
    let table = results_table(&lab, &job, "").await;
    assert!(table.contains("maint.total_s mean"), "{table}");
    assert!(table.contains("maint.restore"), "{table}");
    // Compared with itself, job by job and metric by metric.
    let cmp: blocklab_measure::job::Comparison = lab
        .client()
        .await
        .compare_jobs(blocklab_proto::v1::CompareJobsRequest {
            job_a: job.clone(),
            job_b: job.clone(),
            metric: String::new(),
        })
        .await
        .expect("compare")
        .into_inner()
        .into();
    assert_eq!(cmp.metric, "maint.total_s");
    let text = blocklab_cli::render_compare(&cmp, Format::Table);
    assert!(
        text.contains("A's like cell") && text.contains("maint.count_cold"),
        "{text}"
    );
    lab.shutdown().await;
}
