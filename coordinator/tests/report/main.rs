//! Results, compare, plot, report and the SQL views on a catalog with a job of 3 page sizes x
//! 3 repetitions (one run flagged suspect) and a second job to compare it with.

mod copy;
mod dashboard;
mod fixture;
mod grpc;
mod kept;
mod ladder;
mod live;
mod views;

use blocklab_coordinator::results;
use blocklab_measure::Sample;
use blocklab_measure::job::*;
use blocklab_report::{self as report, render::Format, stats};
use fixture::*;

pub async fn results(f: &Fixture, metric: &str) -> QueryResults {
    results::query_results(&f.catalog, "catalog.db", &f.job_a, metric)
        .await
        .expect("query_results")
}

pub async fn export(f: &Fixture) -> JobExport {
    results::export_job(&f.catalog, "catalog.db", &f.job_a, "tps", true)
        .await
        .expect("export")
}

/// With BLOCKLAB_TEST_OUT=DIR set, the charts and the report are also written there to look at.
fn keep(name: &str, text: &str) {
    if let Ok(dir) = std::env::var("BLOCKLAB_TEST_OUT") {
        std::fs::create_dir_all(&dir).expect("BLOCKLAB_TEST_OUT");
        std::fs::write(std::path::Path::new(&dir).join(name), text).expect("write");
    }
}

#[track_caller]
fn close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-7 * want.abs().max(1.0),
        "got {got}, want {want}"
    );
}

/// The per-cell statistics the coordinator returns for job A.
pub fn check_job_a(r: &QueryResults) {
    let c = &r.cells;
    assert_eq!(c.len(), 3);
    assert_eq!(
        (
            c[0].proven_block_size,
            c[1].proven_block_size,
            c[2].proven_block_size
        ),
        (8192, 16384, 32768)
    );
    assert_eq!(c[0].verdict, "baseline");
    // Reference values: stats_tests.rs (SciPy) for A = 8K, B = 16K; the change within rounds
    // (job A is interleaved): report/tests/reference/stats_reference.py, `ols fixture 16K`
    // (statsmodels' ols("log(y) ~ C(cell) + C(round)")).
    assert_eq!((c[1].n, c[1].runs_ok, c[1].runs_total), (3, 3, 3));
    close(c[1].mean, 1_303.533_333_333_333_3);
    close(c[1].cv, 0.012_173_307_604_661_695);
    assert_eq!(c[1].model, "rounds");
    assert_eq!(c[1].welch_df, Some(2.0));
    close(
        c[1].pct_change_vs_baseline.expect("pct"),
        5.796_912_321_433_406,
    );
    close(
        c[1].pct_change_ci95_low.expect("low"),
        4.291_188_399_412_793_5,
    );
    close(
        c[1].pct_change_ci95_high.expect("high"),
        7.324_375_419_736_699_5,
    );
    close(c[1].p_value.expect("p"), 0.003_477_080_880_517_882);
    assert!(c[1].mde_pct.is_some());
    // The q-value counts the job's other comparisons (2 cells x the varying columns).
    assert!(c[1].q_value.expect("q") > c[1].p_value.expect("p"));
    assert!(c[1].q_value.expect("q") < 0.05);
    assert_eq!(c[1].verdict, "faster");
    assert_eq!(c[1].baseline_label, "bs=8K wal=8K c=4");
    assert_eq!(c[1].compared_on, "page size");
    assert_eq!(c[1].equivalence_pct, 2.0);
    // 32K: the suspect outlier enters the statistics (every completed run does by default),
    // and is counted and named.
    assert_eq!(
        (c[2].n, c[2].runs_ok, c[2].runs_suspect, c[2].runs_excluded),
        (3, 3, 1, 0)
    );
    assert!(!c[2].suspect_included);
    assert_eq!(c[2].suspect_reasons, vec![SUSPECT.to_string()]);
    let want = stats::summarize(&A_32K).expect("three");
    close(c[2].mean, want.mean);
    close(c[2].ci95_low, want.ci95.expect("ci").0);
    assert_eq!(c[2].verdict, "inconclusive");
    assert_eq!(c[2].all_runs, None);
}

#[tokio::test]
async fn results_per_cell_with_ci_change_and_verdict() {
    for f in both().await {
        let r = results(&f, "").await;
        check_job_a(&r);
        assert!(
            r.cells
                .iter()
                .all(|c| c.metric == "tps" && c.higher_is_better)
        );

        // Latency: lower is better, so 16K (higher tps, lower latency here) is still "faster".
        let r = results(&f, "latency_p99_ms").await;
        assert_eq!(r.cells[1].verdict, "faster");
        assert!(r.cells[1].pct_change_vs_baseline.expect("pct") < 0.0);
        assert!(!r.cells[1].higher_is_better);

        let e = results::query_results(&f.catalog, "", &f.job_a, "qps")
            .await
            .expect_err("unknown metric")
            .to_string();
        assert!(e.contains("metric") && e.contains("latency_p999_ms"), "{e}");
    }
}

#[tokio::test]
async fn results_render_in_every_format() {
    for f in both().await {
        let r = results(&f, "tps").await;
        let table = report::render::render_results(&r, Format::Table);
        for want in [
            "bs=16K wal=8K c=4",
            "16384",
            "faster",
            "+5.8%",
            "[+4.3%, +7.3%]",
            "0.003",
            "rounds",
            "1.80%",
            "cannot",
            "in the statistics",
            "q-value",
            "TOST q (±2.0%)",
            "(baseline)",
            SUSPECT,
        ] {
            assert!(table.contains(want), "table lacks {want:?}:\n{table}");
        }
        // Every run began while its database host reported swap in use (its facts' warnings).
        assert_eq!(
            r.host_warnings,
            vec![HostWarning {
                warning: "swap in use: 2048 kB: pages come back from disk".into(),
                runs: 9,
            }]
        );
        assert_eq!(r.runs_done, 9);
        assert!(
        table.contains(
            "warnings on the database host during the runs (blocklab-agent doctor):\n  swap in use: 2048 kB: pages come back from disk (9 of 9 runs)\n"
        ),
        "{table}"
    );
        let md = report::render::render_results(&r, Format::Markdown);
        keep("results.md", &md);
        keep("results.txt", &table);
        let lines: Vec<&str> = md.lines().collect();
        assert!(
            lines[0].starts_with("| cell | block_size | wal_block_size |"),
            "{md}"
        );
        assert!(lines[1].starts_with("|---|"), "{md}");
        assert!(
            lines[3].contains("| +5.8% |") && lines[3].contains("| faster |"),
            "{md}"
        );
        let text = report::render::render_results(&r, Format::Csv);
        // The cells, then (after a blank line) the own-workload table: a header and 3 cells.
        let (csv, own) = text.split_once("\n\n").expect("two tables");
        assert_eq!(own.lines().count(), 4, "{own}");
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 4, "{csv}");
        let head: Vec<&str> = rows[0].split(',').collect();
        let col = |name: &str| {
            head.iter()
                .position(|h| *h == name)
                .unwrap_or_else(|| panic!("no {name} in {csv}"))
        };
        let row1: Vec<&str> = rows[2].split(',').collect();
        assert_eq!(row1[col("verdict")], "faster");
        close(
            row1[col("p_value")].parse().expect("p"),
            0.003_477_080_880_517_882,
        );
        assert_eq!(row1[col("job_id")], f.job_a);
        let json: serde_json::Value =
            serde_json::from_str(&report::render::render_results(&r, Format::Json)).expect("json");
        assert_eq!(json["metric"], "tps");
        assert_eq!(json["cells"][1]["verdict"], "faster");
        assert_eq!(json["cells"][0]["pct_change"], serde_json::Value::Null);
        assert_eq!(json["cells"][2]["suspect_reasons"][0], SUSPECT);
        assert!(
            matches!(Format::parse("xml"), Err(e) if e.to_string().contains("table, csv, json, markdown"))
        );
    }
}

#[tokio::test]
async fn compare_like_cells_of_two_jobs() {
    for f in both().await {
        let r = results::compare_jobs(&f.catalog, &f.job_a, &f.job_b, "")
            .await
            .expect("compare");
        assert_eq!(r.cells.len(), 3);
        // B's 4K has no 4K cell in A.
        assert_eq!(
            (r.cells[0].block_size_kb, r.cells[0].verdict.as_str()),
            (4, "no like cell")
        );
        // B's 8K against A's 8K: higher tps.
        let c = &r.cells[1];
        assert_eq!(
            (
                c.block_size_kb,
                c.baseline_label.as_str(),
                c.verdict.as_str()
            ),
            (8, "bs=8K wal=8K c=4", "faster")
        );
        let (a, b) = (
            stats::summarize(&A_8K).expect("a"),
            stats::summarize(&B_8K).expect("b"),
        );
        // Two jobs' rounds are not blocks: Welch with the delta method.
        let w = stats::delta(&a, &b).expect("welch");
        assert_eq!(c.model, "welch");
        close(c.p_value.expect("p"), w.p_value);
        close(
            c.pct_change_vs_baseline.expect("pct"),
            w.pct().expect("pct"),
        );
        // Identical 16K samples, 3 runs each: no difference, but not shown within ±2% either.
        assert_eq!(r.cells[2].verdict, "inconclusive");
        close(r.cells[2].p_value.expect("p"), 1.0);
        let text = report::render::render_compare(&r, Format::Table);
        assert!(
            text.contains("A (baseline):")
                && text.contains("like cell (A)")
                && text.contains("no like cell"),
            "{text}"
        );
        let csv = report::render::render_compare(&r, Format::Csv);
        assert!(csv.starts_with("job_a,job_b,cell,"), "{csv}");
    }
}

#[tokio::test]
async fn plot_writes_svg_with_error_bars_and_traces() {
    for f in both().await {
        let e = export(&f).await;
        let charts = report::plot::charts(&e);
        assert_eq!(charts.len(), 4, "one metric chart and a trace per cell");
        let dir = tempfile::tempdir().expect("dir");
        for c in &charts {
            std::fs::write(dir.path().join(&c.file_name), &c.svg).expect("write");
            keep(&c.file_name, &c.svg);
            let text = std::fs::read_to_string(dir.path().join(&c.file_name)).expect("read");
            roxmltree::Document::parse(&text)
                .unwrap_or_else(|err| panic!("{} is not XML: {err}", c.file_name));
        }
        assert_eq!(charts[0].file_name, "tps-vs-page-size.svg");
        let doc = roxmltree::Document::parse(&charts[0].svg).expect("xml");
        let class = |n: &roxmltree::Node, c: &str| n.attribute("class") == Some(c);
        let series: Vec<_> = doc.descendants().filter(|n| class(n, "series")).collect();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].attribute("data-series"), Some("wal=8K c=4"));
        let bars: Vec<_> = doc.descendants().filter(|n| class(n, "errorbar")).collect();
        assert_eq!(bars.len(), 3);
        assert_eq!(
            bars.iter()
                .map(|b| b.children().filter(|l| l.has_tag_name("line")).count())
                .sum::<usize>(),
            9
        );
        let b16 = bars
            .iter()
            .find(|b| b.attribute("data-cell") == Some("bs=16K wal=8K c=4"))
            .expect("16K bar");
        let low: f64 = b16
            .attribute("data-low")
            .expect("low")
            .parse()
            .expect("f64");
        close(low, 1_264.114_260_477_122);
        let ticks: Vec<&str> = doc
            .descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .collect();
        assert!(
            ["8K", "16K", "32K"].iter().all(|t| ticks.contains(t)),
            "{ticks:?}"
        );
        let trace = roxmltree::Document::parse(&charts[3].svg).expect("xml");
        let lines: Vec<_> = trace.descendants().filter(|n| class(n, "trace")).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.attribute("stroke-dasharray").is_some())
                .count(),
            1,
            "the suspect run is dashed"
        );
        assert_eq!(
            lines[0]
                .attribute("points")
                .expect("points")
                .split(' ')
                .count(),
            5
        );
    }
}

#[tokio::test]
async fn report_is_one_self_contained_html_file() {
    for f in both().await {
        let html = report::html::report(&export(&f).await);
        keep("report.html", &html);
        for want in [
            "<table class=\"results\"",
            "<table class=\"runs\"",
            "<table class=\"settings\"",
            "<table class=\"builds\"",
            "<table class=\"host-facts\"",
            "Test CPU 9000",
            "6.1.0-test",
            "the job's database host",
            "shared_buffers",
            "16384",
            "16kB",
            "pg15-bs16-wal8",
            "15.18",
            "interleaved",
            SUSPECT,
            "buffers_backend",
            "faster",
            "+5.8%",
            "page-sizes-a",
            "fewer than 2 runs",
        ] {
            assert!(html.contains(want), "report lacks {want:?}");
        }
        assert_eq!(html.matches("<svg ").count(), 4);
        assert_eq!(html.matches("class=\"errorbar\"").count(), 3);
        assert!(
            !html.contains(" src=") && !html.contains("<link"),
            "external asset"
        );
        // Links only within the page (the contents at the top).
        assert_eq!(
            html.matches(" href=").count(),
            html.matches(" href=\"#").count(),
            "a link out of the page"
        );
        assert!(html.contains("<a href=\"#charts\">charts</a>"));
        // The database host's warnings, listed near the top.
        let warning = html
            .find("<li><b>db1</b> (the job&#39;s database host): swap in use: 2048 kB")
            .expect("the host's warning listed");
        assert!(warning < html.find("<table class=\"results\"").expect("results"));
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        // Well-formed enough for an XML parser once the doctype is dropped.
        let body = html
            .trim_start_matches("<!DOCTYPE html>\n")
            .replace("<meta charset=\"utf-8\">", "");
        roxmltree::Document::parse(&body).expect("report parses as XML");
    }
}

#[tokio::test]
async fn own_workload_figures_go_from_the_catalog_into_the_export_and_the_results() {
    for f in both().await {
        // The export carries each run's stored figures.
        let e = export(&f).await;
        let first = e.runs[0].result.as_ref().expect("result");
        assert_eq!(
            (
                first.schedule_lag_avg_ms,
                first.schedule_lag_max_ms,
                first.late,
                first.skipped
            ),
            (0.5, 10.0, 0, 1)
        );
        assert_eq!(
            first.statements,
            [StatementLatency {
                script: "mine.sql".into(),
                position: 0,
                command: "SELECT 1".into(),
                count: 100,
                latency_avg_ms: 0.1,
                failures: 0,
            }]
        );
        // The results: per cell over its 3 runs, the median of the mean lags (0.5, 1, 1.5 ms),
        // the largest lag, the sums, and the median of the statement's averages (0.1, 0.2, 0.3).
        let r = results(&f, "").await;
        assert_eq!(r.own_workload.len(), 3);
        for (c, label) in r.own_workload.iter().zip(["8K", "16K", "32K"]) {
            assert_eq!(c.cell, format!("bs={label} wal=8K c=4"));
            assert_eq!(c.runs, 3);
            close(c.schedule_lag_median_ms, 1.0);
            close(c.schedule_lag_max_ms, 30.0);
            assert_eq!((c.late, c.skipped), (3, 3));
            assert_eq!(c.statements.len(), 1);
            assert_eq!(c.statements[0].count, 600);
            close(c.statements[0].latency_median_ms, 0.2);
        }
        let csv = report::render::render_results(&r, Format::Csv);
        let (_, own) = csv.split_once("\n\n").expect("two tables");
        assert_eq!(
            own.lines().nth(1),
            Some(
                format!(
                    "{},bs=8K wal=8K c=4,0,3,1,30,3,3,mine.sql,0,SELECT 1,600,0,0.2",
                    f.job_a
                )
                .as_str()
            ),
            "{own}"
        );
        let md = report::render::render_results(&r, Format::Markdown);
        assert!(
            md.contains("| bs=8K wal=8K c=4 | 3 | 1.000 | 30.000 | 3 | 3 |"),
            "{md}"
        );
    }
}

/// The job page's traces: at most `points` points a run, each the mean of its seconds.
#[tokio::test]
async fn sample_series_are_downsampled_in_the_catalog() {
    let f = build().await;
    let full = export(&f).await;
    let series = f.catalog.sample_series(&f.job_a, 2).await.expect("series");
    assert_eq!(series.len(), full.runs.len());
    for run in &full.runs {
        // Seconds 1..=5 in two buckets: {1, 2} and {3, 4, 5}.
        let got = &series[&run.run_id];
        let all = &run.samples;
        assert_eq!(all.len(), 5);
        let mean = |xs: &[Sample]| xs.iter().map(|s| s.transactions).sum::<u64>() / xs.len() as u64;
        let seconds: Vec<u32> = got.iter().map(|s| s.second).collect();
        assert_eq!(seconds, [1, 3]);
        assert_eq!(got[0].transactions, mean(&all[..2]));
        assert_eq!(got[1].transactions, mean(&all[2..]));
    }
    // Enough points: every second as stored.
    let series = f
        .catalog
        .sample_series(&f.job_a, 300)
        .await
        .expect("series");
    for run in &full.runs {
        assert_eq!(series[&run.run_id], run.samples);
    }
}

/// Each run's series is stored with its samples; runs stored before series were kept (no
/// `run_series` row) are read from their raw samples, with the same buckets.
#[tokio::test]
async fn runs_without_a_stored_series_read_their_raw_samples() {
    for f in both().await {
        let full = export(&f).await;
        let stored: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM run_series s JOIN runs r ON r.run_id = s.run_id WHERE r.job_id = $1",
        )
        .bind(&f.job_a)
        .fetch_one(&f.sql)
        .await
        .expect("count");
        assert_eq!(stored as usize, full.runs.len());
        let before = [
            f.catalog.sample_series(&f.job_a, 2).await.expect("series"),
            f.catalog
                .sample_series(&f.job_a, 300)
                .await
                .expect("series"),
        ];
        // Half the runs lose their series, then all of them.
        let half: Vec<&str> = full
            .runs
            .iter()
            .step_by(2)
            .map(|r| r.run_id.as_str())
            .collect();
        for run_id in &half {
            sqlx::query("DELETE FROM run_series WHERE run_id = $1")
                .bind(*run_id)
                .execute(&f.sql)
                .await
                .expect("delete");
        }
        for _ in 0..2 {
            let after = [
                f.catalog.sample_series(&f.job_a, 2).await.expect("series"),
                f.catalog
                    .sample_series(&f.job_a, 300)
                    .await
                    .expect("series"),
            ];
            assert_eq!(after, before);
            sqlx::query("DELETE FROM run_series")
                .execute(&f.sql)
                .await
                .expect("delete");
        }
    }
}
