//! A page-size experiment the way users run it: 3 data page sizes x 3 repetitions, end to end
//! with real builds. The results show means, 95% CIs, % change vs 8K and a verdict per cell;
//! the runs are interleaved in time; `blocklab plot` and `blocklab report` write files that open.

use std::time::Duration;

use blocklab_tests::{Lab, binary, implied_verdict, pg_tarball, run_job};
use sqlx::Row;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_page_sizes_three_repetitions_with_verdicts_plots_and_report() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "three-by-three"
repetitions = 3
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [4, 8, 16]
clients = [2]
[settings]
shared_buffers = "32MB"
[workload]
builtin = "select-only"
protocol = "prepared"
scale = 1
duration = "2s"
"#,
        pg_tarball().display()
    );
    let (job, state) = run_job(&mut client, &spec, Duration::from_secs(30 * 60)).await;
    assert_eq!(state, "done", "job {job}");

    let r = blocklab_tests::query_results(&mut client, &job).await;
    assert_eq!(r.cells.len(), 3);
    let proven: Vec<u32> = r.cells.iter().map(|c| c.proven_block_size).collect();
    assert_eq!(proven, vec![4096, 8192, 16384]);
    for c in &r.cells {
        assert_eq!(c.runs_ok, 3, "{c:?}");
        assert!(
            c.mean > 0.0 && c.ci95_low < c.mean && c.mean < c.ci95_high,
            "{c:?}"
        );
        if c.is_baseline {
            assert_eq!(c.block_size_kb, 8);
        } else {
            assert!(
                c.pct_change_vs_baseline.is_some() && c.p_value.is_some(),
                "{c:?}"
            );
            assert_eq!(c.verdict, implied_verdict(c), "{c:?}");
        }
    }

    // Interleaved: the start times follow the order 4K 8K 16K 4K 8K 16K ...
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    let rows = sqlx::query("SELECT c.block_size_kb FROM runs r JOIN cells c USING (job_id, cell_index) WHERE r.job_id = ? ORDER BY r.started_at")
        .bind(&job)
        .fetch_all(&db)
        .await
        .expect("runs");
    let by_time: Vec<i64> = rows.iter().map(|r| r.get("block_size_kb")).collect();
    assert_eq!(by_time, vec![4, 8, 16, 4, 8, 16, 4, 8, 16]);

    // The CLI's results, plot and report against this coordinator.
    let cli = binary("blocklab");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&cli)
            .args(["--coordinator", &lab.addr])
            .args(args)
            .env_remove("COLUMNS")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run blocklab");
        assert!(
            out.status.success(),
            "blocklab {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    // Piped: the compact table within 100 columns; --wide: every column, the proven sizes too.
    let table = run(&["results", &job]);
    assert!(
        table.contains("bs=16K") && table.contains("baseline"),
        "{table}"
    );
    assert!(table.lines().all(|l| l.chars().count() <= 100), "{table}");
    let wide = run(&["results", &job, "--wide"]);
    assert!(wide.contains("16384") && wide.contains("p-value"), "{wide}");
    // `job` likewise: its runs with their proven page sizes within 100 columns when piped;
    // --wide: every column, the sizes in bytes.
    let runs = run(&["job", &job]);
    assert_eq!(runs.matches(" 16K/8K ").count(), 3, "{runs}");
    assert!(runs.lines().all(|l| l.chars().count() <= 100), "{runs}");
    let runs_wide = run(&["job", &job, "--wide"]);
    assert!(
        runs_wide.contains("| 16384 ") && runs_wide.contains("wal_block_size"),
        "{runs_wide}"
    );
    let csv = run(&[
        "results",
        &job,
        "--format",
        "csv",
        "--metric",
        "latency_p99_ms",
    ]);
    // The asked metric's three cells, then the workload metrics' (WAL, FPI and checkpoints
    // per transaction) after them.
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    let p99 = rows
        .iter()
        .filter(|l| l.contains(",latency_p99_ms,ms,"))
        .count();
    assert_eq!(p99, 3, "{csv}");
    assert!(
        rows[..3].iter().all(|l| l.contains(",latency_p99_ms,ms,")),
        "{csv}"
    );
    let plots = lab.dir.path().join("plots");
    run(&["plot", &job, "--out", plots.to_str().expect("path")]);
    let svgs: Vec<_> = std::fs::read_dir(&plots)
        .expect("plots")
        .filter_map(Result::ok)
        .collect();
    assert!(svgs.len() >= 2, "a metric chart and traces: {svgs:?}");
    for f in &svgs {
        let text = std::fs::read_to_string(f.path()).expect("svg");
        assert!(text.contains("<svg"), "{:?}", f.path());
    }
    let html_path = lab.dir.path().join("report.html");
    run(&["report", &job, "--out", html_path.to_str().expect("path")]);
    let html = std::fs::read_to_string(&html_path).expect("report");
    assert!(
        html.contains("<table") && html.contains("<svg"),
        "tables and embedded charts"
    );
    assert!(
        html.contains("16384") && html.contains("shared_buffers"),
        "proof and settings"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
    lab.shutdown().await;
}
