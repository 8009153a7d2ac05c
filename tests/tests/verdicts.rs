//! Verdicts about the page size alone: four data page sizes built from source, memory held at
//! the baseline's bytes for every memory setting (defaults and automatic values included),
//! all of them stored per run, the held-constant line in `results`; and an A/A cell (the
//! baseline build measured again as its own cell) that must not come out faster or slower.

use std::collections::BTreeMap;
use std::time::Duration;

use blocklab_tests::{Lab, binary, pg_tarball, run_job};
use sqlx::Row;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_page_sizes_hold_every_memory_setting_and_an_aa_cell_is_not_a_difference() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "held-constant"
repetitions = 3
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [4, 8, 16, 32]
clients = [2]
replicate_baseline = true
[settings]
shared_buffers = "64MB"
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "2s"
"#,
        pg_tarball().display()
    );
    let (job, state) = run_job(&mut client, &spec, Duration::from_secs(45 * 60)).await;
    assert_eq!(state, "done", "job {job}");

    // Every memory setting (a byte or page unit) the live servers reported, in bytes, per
    // cell: equal across the four page sizes, including the ones the spec left at their
    // defaults and wal_buffers' automatic size.
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let rows = sqlx::query(
        "SELECT c.block_size_kb, r.block_size, s.name, s.setting, s.unit FROM run_settings s \
         JOIN runs r USING (run_id) JOIN cells c ON c.job_id = r.job_id AND c.cell_index = r.cell_index \
         WHERE r.job_id = ? AND r.state = 'done' AND s.unit LIKE '%B'",
    )
    .bind(&job)
    .fetch_all(&db)
    .await
    .expect("settings");
    let mut by_size: BTreeMap<i64, BTreeMap<String, i128>> = BTreeMap::new();
    for r in &rows {
        let bs: i64 = r.get("block_size_kb");
        assert_eq!(r.get::<i64, _>("block_size"), bs * 1024, "proven page size");
        let (name, setting, unit): (String, String, String) =
            (r.get("name"), r.get("setting"), r.get("unit"));
        let bytes = blocklab_spec::setting_bytes(&setting, &unit).expect("memory value");
        let prev = by_size.entry(bs).or_default().insert(name.clone(), bytes);
        assert!(
            prev.is_none_or(|p| p == bytes),
            "{name} differs between runs of {bs}K"
        );
    }
    assert_eq!(
        by_size.keys().copied().collect::<Vec<_>>(),
        vec![4, 8, 16, 32]
    );
    let base = &by_size[&8];
    for name in [
        "shared_buffers",
        "effective_cache_size",
        "temp_buffers",
        "wal_buffers",
        "bgwriter_flush_after",
        "checkpoint_flush_after",
        "backend_flush_after",
        "wal_writer_flush_after",
        "min_parallel_table_scan_size",
        "min_parallel_index_scan_size",
        "work_mem",
        "maintenance_work_mem",
        "max_wal_size",
    ] {
        assert!(base.contains_key(name), "{name} stored: {base:?}");
    }
    assert_eq!(base["shared_buffers"], 64 << 20);
    assert_eq!(
        base["effective_cache_size"],
        4 << 30,
        "8K default: 524288 pages"
    );
    assert_eq!(
        base["wal_buffers"],
        2 << 20,
        "auto: 1/32 of 64MB of 8K pages"
    );
    for (bs, settings) in &by_size {
        assert_eq!(settings, base, "memory at {bs}K equals the 8K baseline's");
    }

    // The results: a held-constant line per compared cell, and the A/A cell compared with
    // its twin.
    let r = blocklab_tests::query_results(&mut client, &job).await;
    assert_eq!(r.cells.len(), 5, "four page sizes and the A/A twin");
    let n = base.len();
    for c in r.cells.iter().filter(|c| !c.is_baseline) {
        assert_eq!(
            c.held_constant,
            format!("all {n} memory settings equal to the baseline's"),
            "{c:?}"
        );
    }
    let aa = r
        .cells
        .iter()
        .find(|c| c.label.ends_with("A/A"))
        .expect("A/A cell");
    assert_eq!(aa.block_size_kb, 8);
    assert_eq!(aa.verdict, blocklab_tests::implied_verdict(aa), "{aa:?}");
    assert!(
        ["equivalent", "inconclusive"].contains(&aa.verdict.as_str()),
        "the same build measured twice is not a difference: {aa:?}"
    );
    let out = std::process::Command::new(binary("blocklab"))
        .args(["--coordinator", &lab.addr, "results", &job])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("blocklab results");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains(&format!("all {n} memory settings equal to the baseline's")),
        "{table}"
    );
    lab.shutdown().await;
}

/// Adaptive repetitions: rounds are added while a cell's 95% CI is wider than the target, up
/// to the maximum; a target met by the minimum rounds adds none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adaptive_repetitions_add_rounds_until_the_target_or_the_maximum() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let spec = |target: &str| {
        format!(
            r#"
name = "adaptive"
repetitions = {{ min = 3, max = 4, target_ci_pct = {target} }}
order = "randomized-block"
seed = 5
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [1]
[workload]
builtin = "select-only"
scale = 1
duration = "1s"
"#,
            pg_tarball().display()
        )
    };
    let db = || async {
        sqlx::SqlitePool::connect(&format!(
            "sqlite://{}?mode=ro",
            lab.catalog_path().display()
        ))
        .await
        .expect("catalog")
    };
    // Unreachable: 4 rounds, then "max repetitions reached".
    let (job, state) = run_job(&mut client, &spec("0.0001"), Duration::from_secs(20 * 60)).await;
    assert_eq!(state, "done", "job {job}");
    let pool = db().await;
    let reps: Vec<(i64, i64, String)> = sqlx::query_as(
        "SELECT repetition, sequence, state FROM runs WHERE job_id = ? ORDER BY sequence",
    )
    .bind(&job)
    .fetch_all(&pool)
    .await
    .expect("runs");
    assert_eq!(
        reps,
        (0..4)
            .map(|i| (i, i, "done".to_string()))
            .collect::<Vec<_>>()
    );
    let r = blocklab_tests::query_results(&mut client, &job).await;
    assert_eq!(r.cells[0].n, 4);
    assert_eq!(
        r.cells[0].target_status, "max repetitions reached",
        "{:?}",
        r.cells[0]
    );
    // Met by the first three rounds: none added.
    let (job, state) = run_job(&mut client, &spec("100"), Duration::from_secs(20 * 60)).await;
    assert_eq!(state, "done", "job {job}");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE job_id = ?")
        .bind(&job)
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(n, 3);
    lab.shutdown().await;
}

/// `until = "decided"` and `budget`, end to end on A/A jobs (the 8K build against a
/// replicate of itself): the job must stop at the first look (from the minimum) where its
/// compared cell is decided, at the maximum, or where another round would pass the budget,
/// and say which. Each look is replayed from the exported runs through the same analysis, so
/// the one stop the data imply is the one required.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn until_decided_stops_at_the_first_decided_look_or_the_budget() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let spec = |name: &str, band: &str, max: u32, budget: &str| {
        format!(
            r#"
name = "{name}"
repetitions = {{ min = 3, max = {max}, until = "decided" }}
{budget}
equivalence_pct = {band}
order = "randomized-block"
seed = 11
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
replicate_baseline = true
clients = [1]
[workload]
builtin = "select-only"
scale = 1
warmup = "1s"
duration = "2s"
"#,
            pg_tarball().display()
        )
    };
    // A ±50% band: an A/A pair is usually shown equivalent after 3 or 4 rounds.
    let (job, state) = run_job(
        &mut client,
        &spec("decided", "50", 5, ""),
        Duration::from_secs(20 * 60),
    )
    .await;
    assert_eq!(state, "done", "job {job}");
    let first = job.clone();
    let stop = replay_looks(&mut client, &job, 3, 5).await;
    assert!(
        matches!(stop, Stop::Decided(_) | Stop::Max),
        "no budget: {stop:?}"
    );
    // A ±0.01% band no run can meet and a 10 s budget: three rounds of runs with a 2 s
    // window take longer than 10 s with the mean round added, so the job stops at its
    // minimum, decided only by a false positive.
    let (job, state) = run_job(
        &mut client,
        &spec("budget", "0.01", 20, "budget = \"10s\""),
        Duration::from_secs(20 * 60),
    )
    .await;
    assert_eq!(state, "done", "job {job}");
    let stop = replay_looks(&mut client, &job, 3, 20).await;
    assert!(
        matches!(stop, Stop::Budget | Stop::Decided(3)),
        "a 10 s budget: {stop:?}"
    );
    // `duration = "auto"`: the window the two jobs above (like this one) imply for a 60 s
    // budget, as report::pilot computes it from their exports; stored in the job's plan.
    let mut earlier = Vec::new();
    for id in [&job, &first] {
        earlier.push(blocklab_tests::export_job(&mut client, id, true).await);
    }
    let auto = spec("auto", "0.01", 20, "budget = \"60s\"")
        .replace("duration = \"2s\"", "duration = \"auto\"");
    let parsed = blocklab_spec::Spec::parse(&auto).expect("spec");
    let want = blocklab_report::pilot::history(&parsed, &earlier)
        .and_then(|h| {
            blocklab_report::pilot::choices(&h, 2, 1.0, (3, 20), 60.0)
                .first()
                .map(|c| c.window_secs)
        })
        .unwrap_or(blocklab_spec::AUTO_PILOT_WINDOW.as_secs());
    let submitted = client
        .submit_job(blocklab_proto::v1::SubmitJobRequest {
            spec_toml: auto,
            files: Default::default(),
        })
        .await
        .expect("submit")
        .into_inner();
    client
        .cancel_job(blocklab_proto::v1::CancelJobRequest {
            job_id: submitted.job_id.clone(),
        })
        .await
        .expect("cancel");
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let plan: String = sqlx::query_scalar("SELECT plan_json FROM jobs WHERE job_id = ?")
        .bind(&submitted.job_id)
        .fetch_one(&pool)
        .await
        .expect("plan");
    let plan: serde_json::Value = serde_json::from_str(&plan).expect("json");
    let workload = plan
        .pointer("/Benchmark/spec/workload")
        .unwrap_or_else(|| panic!("no workload in {plan}"));
    assert_eq!(workload["auto_window"], true, "{workload}");
    assert_eq!(workload["duration"]["secs"], want, "{workload}");
    lab.shutdown().await;
}

/// Where an `until = "decided"` job stopped.
#[derive(Debug, PartialEq)]
enum Stop {
    Decided(u32),
    Max,
    Budget,
}

/// Replays the looks of a finished `until = "decided"` job from `min` rounds: every look
/// before the last must have been undecided and within the budget, and the last must be
/// decided, at `max`, or past the budget; the results' status must say the same.
async fn replay_looks(
    client: &mut blocklab_proto::v1::control_client::ControlClient<tonic::transport::Channel>,
    job: &str,
    min: u32,
    max: u32,
) -> Stop {
    use blocklab_report::analysis;
    let export = blocklab_tests::export_job(client, job, false).await;
    let rounds = analysis::rounds_run(&export);
    assert!((min..=max).contains(&rounds), "{rounds} rounds");
    let metric = blocklab_report::stats::Metric::Tps;
    let mut stop = None;
    for look in min..=rounds {
        let mut first = export.clone();
        first.runs.retain(|r| r.repetition < look);
        let cells = analysis::cell_results(&first, &metric);
        let aa = cells.iter().find(|c| c.replicate).expect("the A/A cell");
        let decided = matches!(aa.verdict.as_str(), "faster" | "slower" | "equivalent");
        let over_budget = analysis::budget::look(&first).is_some_and(|b| !b.round_fits());
        let here = if decided {
            Some(Stop::Decided(look))
        } else if look >= max {
            Some(Stop::Max)
        } else if over_budget {
            Some(Stop::Budget)
        } else {
            None
        };
        if look < rounds {
            assert_eq!(
                here, None,
                "look {look} of {rounds} should have stopped: {aa:?}"
            );
        } else {
            stop = here;
        }
    }
    let stop = stop.unwrap_or_else(|| panic!("the last look ({rounds}) did not stop"));
    let r = blocklab_tests::query_results(client, job).await;
    let aa = r.cells.iter().find(|c| c.replicate).expect("the A/A cell");
    // The looks from `min` to `max` each judge at 0.05 over their number.
    let look_alpha = 0.05 / f64::from(max - min + 1);
    assert_eq!(
        aa.verdict,
        blocklab_tests::implied_verdict_at(aa, look_alpha),
        "{aa:?}"
    );
    let want = match stop {
        Stop::Decided(k) => format!("sequential: decided at round {k} "),
        Stop::Max => format!("sequential: undecided, max repetitions reached ({max}) "),
        Stop::Budget => format!("sequential: undecided, budget reached ({rounds} rounds, "),
    };
    assert!(aa.target_status.starts_with(&want), "{want}: {aa:?}");
    stop
}
