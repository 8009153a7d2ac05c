use super::*;
use crate::format::{num, p_value, pct};

fn cell(label: &str, n: u32) -> CellResult {
    CellResult {
        label: label.into(),
        metric: "latency_p99_ms".into(),
        n,
        runs_total: 3,
        mean: 2.5,
        stddev: 0.25,
        cv: 0.1,
        ci95_low: 2.0,
        ci95_high: 3.0,
        verdict: "insufficient data".into(),
        ..Default::default()
    }
}

#[test]
fn numbers_for_people() {
    assert_eq!(num(&Metric::Tps, 1234.56), "1234.6");
    assert_eq!(num(&Metric::LatencyP99Ms, 2.34567), "2.346");
    assert_eq!(pct(5.7919), "+5.8%");
    assert_eq!(pct(-0.04), "-0.0%");
    assert_eq!(p_value(0.0109), "0.011");
    assert_eq!(p_value(0.00002), "<0.001");
}

#[test]
fn single_run_cells_show_no_spread() {
    let r = QueryResults {
        job_id: "j".into(),
        cells: vec![cell("a", 1)],
        catalog_path: String::new(),
        by_metric: Vec::new(),
        ..Default::default()
    };
    let (_, rows) = table_rows(&r.cells, false);
    // n/runs, mean, stddev, CV, CI
    assert_eq!(rows[0][4..9], ["1/3", "2.500", "-", "-", "-"]);
    let json: serde_json::Value =
        serde_json::from_str(&render_results(&r, Format::Json)).expect("json");
    assert_eq!(json["cells"][0]["mean"], 2.5);
    assert_eq!(json["cells"][0]["stddev"], serde_json::Value::Null);
    assert_eq!(json["cells"][0]["ci95_low"], serde_json::Value::Null);
    assert_eq!(json["metric"], "latency_p99_ms");
}

#[test]
fn csv_and_markdown_escape_their_separators() {
    let r = QueryResults {
        job_id: "j".into(),
        cells: vec![cell("a,b \"x\"", 2), cell("c|d", 2)],
        catalog_path: String::new(),
        by_metric: Vec::new(),
        ..Default::default()
    };
    let csv = render_results(&r, Format::Csv);
    assert!(
        csv.lines()
            .nth(1)
            .expect("row")
            .starts_with("j,\"a,b \"\"x\"\"\","),
        "{csv}"
    );
    let md = render_results(&r, Format::Markdown);
    assert!(md.contains("| c\\|d |"), "{md}");
    assert!(
        md.contains("metric: latency_p99_ms (lower is better)"),
        "{md}"
    );
    let table = render_results(&r, Format::Table);
    assert!(
        table.contains("latency_p99_ms mean") && table.contains("[2.000, 3.000]"),
        "{table}"
    );
}

#[test]
fn suspect_cells_are_marked() {
    let mut c = cell("a", 2);
    c.runs_suspect = 2;
    c.suspect_included = true;
    c.suspect_reasons = vec!["server restarted x2".into()];
    let r = QueryResults {
        cells: vec![c],
        ..Default::default()
    };
    let out = render_results(&r, Format::Table);
    assert!(out.contains("2 (included)"), "{out}");
    assert!(
        out.contains("suspect runs in a: server restarted x2 (kept: fewer than 2 clean runs)"),
        "{out}"
    );
}

#[test]
fn workload_metrics_travel_in_every_format() {
    let metric_cell = |name: &str, unit: &str, mean: f64| CellResult {
        label: "bs=16K".into(),
        metric: name.into(),
        unit: unit.into(),
        higher_is_better: unit == "NOTPM",
        n: 2,
        runs_total: 2,
        mean,
        ..Default::default()
    };
    let r = QueryResults {
        job_id: "j".into(),
        cells: vec![metric_cell("notpm", "NOTPM", 900.0)],
        catalog_path: String::new(),
        by_metric: vec![
            MetricResults {
                name: "notpm".into(),
                unit: "NOTPM".into(),
                higher_is_better: true,
                cells: vec![metric_cell("notpm", "NOTPM", 900.0)],
            },
            MetricResults {
                name: "new_order.p90_ms".into(),
                unit: "ms".into(),
                higher_is_better: false,
                cells: vec![metric_cell("new_order.p90_ms", "ms", 12.5)],
            },
        ],
        ..Default::default()
    };
    let json: serde_json::Value =
        serde_json::from_str(&render_results(&r, Format::Json)).expect("json");
    assert_eq!(json["metric"], "notpm");
    assert_eq!(json["cells"][0]["unit"], "NOTPM");
    assert_eq!(json["by_metric"][1]["metric"], "new_order.p90_ms");
    assert_eq!(json["by_metric"][1]["cells"][0]["mean"], 12.5);
    // CSV: the headline rows, then each other metric's rows, with its unit.
    let csv = render_results(&r, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[1].contains(",notpm,NOTPM,"), "{csv}");
    assert!(lines[2].contains(",new_order.p90_ms,ms,"), "{csv}");
    let table = render_results(&r, Format::Table);
    assert!(table.contains("notpm mean"), "{table}");
    assert!(table.contains("ms, lower is better"), "{table}");
    let md = render_results(&r, Format::Markdown);
    assert!(
        md.contains("| new_order.p90_ms | ms, lower is better | 12.500 |"),
        "{md}"
    );
}

/// A job's cells as the analysis returns them when it excludes suspect runs and has a target.
pub(super) fn judged_cells() -> Vec<CellResult> {
    let base = CellResult {
        label: "bs=8K".into(),
        metric: "tps".into(),
        unit: "tps".into(),
        higher_is_better: true,
        is_baseline: true,
        n: 3,
        runs_total: 3,
        mean: 1000.0,
        stddev: 10.0,
        cv: 0.01,
        ci95_low: 975.2,
        ci95_high: 1024.8,
        ci95_half_width_pct: Some(2.48),
        verdict: "baseline".into(),
        equivalence_pct: 2.0,
        target_ci_pct: Some(2.0),
        target_status: "max repetitions reached".into(),
        all_runs: Some(CellStats {
            n: 3,
            verdict: "baseline".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let aa = CellResult {
        label: "bs=8K replicate".into(),
        is_baseline: false,
        replicate: true,
        compared_on: "replicate".into(),
        baseline_label: "bs=8K".into(),
        baseline_cell_index: Some(0),
        pct_change_vs_baseline: Some(0.1),
        pct_change_ci95_low: Some(-0.4),
        pct_change_ci95_high: Some(0.6),
        pct_change_ci90_low: Some(-0.3),
        pct_change_ci90_high: Some(0.5),
        p_value: Some(0.7),
        q_value: Some(0.8),
        tost_p_value: Some(0.0004),
        tost_q_value: Some(0.0008),
        verdict: "equivalent".into(),
        target_status: "target reached".into(),
        runs_suspect: 1,
        runs_excluded: 1,
        n: 2,
        suspect_reasons: vec!["errors".into()],
        held_constant: "all 4 memory settings equal to the baseline's".into(),
        all_runs: Some(CellStats {
            n: 3,
            pct_change_vs_baseline: Some(3.5),
            q_value: Some(0.3),
            verdict: "inconclusive".into(),
            ..Default::default()
        }),
        ..base.clone()
    };
    vec![base, aa]
}

#[test]
fn q_values_band_verdicts_and_the_all_runs_statistics_are_shown() {
    let r = QueryResults {
        job_id: "j".into(),
        cells: judged_cells(),
        ..Default::default()
    };
    let (head, rows) = table_rows(&r.cells, false);
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name} in {head:?}"))
    };
    let aa = &rows[1];
    assert_eq!(aa[col("q-value")], "0.800");
    assert_eq!(aa[col("TOST q (±2.0%)")], "<0.001");
    assert_eq!(aa[col("verdict")], "equivalent");
    assert_eq!(aa[col("compared on")], "replicate");
    assert_eq!(aa[col("CI ±% of mean")], "±2.5%");
    assert_eq!(rows[0][col("repetitions")], "max repetitions reached");
    assert_eq!(aa[col("suspect")], "1 (excluded)");
    assert_eq!(aa[col("all runs: n/runs")], "3/3");
    assert_eq!(aa[col("all runs: % change")], "+3.5%");
    assert_eq!(aa[col("all runs: verdict")], "inconclusive");
    assert_eq!(rows[0][col("all runs: verdict")], "baseline");
    let table = render_results(&r, Format::Table);
    for want in [
        "held constant: bs=8K replicate: all 4 memory settings equal to the baseline's",
        "equivalent: TOST q < 0.05 (90% CI inside ±2.0%)",
        "the 'all runs' columns use every completed run",
        "suspect runs in bs=8K replicate: errors (excluded)",
        "repetitions: until the 95% CI is within ±2.0% of the mean",
    ] {
        assert!(table.contains(want), "table lacks {want:?}:\n{table}");
    }
    let md = render_results(&r, Format::Markdown);
    assert!(
        md.contains("| q-value | TOST q (±2.0%) | verdict |"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render_results(&r, Format::Json)).expect("json");
    let c = &json["cells"][1];
    assert_eq!(c["q_value"], 0.8);
    assert_eq!(c["tost_q_value"], 0.0008);
    assert_eq!(c["equivalence_pct"], 2.0);
    assert_eq!(c["compared_on"], "replicate");
    assert_eq!(c["replicate"], true);
    assert_eq!(c["target_status"], "target reached");
    assert_eq!(
        c["held_constant"],
        "all 4 memory settings equal to the baseline's"
    );
    assert_eq!(c["all_runs"]["verdict"], "inconclusive");
    assert_eq!(c["all_runs"]["pct_change"], 3.5);
    assert_eq!(json["cells"][0]["held_constant"], serde_json::Value::Null);
    let csv = render_results(&r, Format::Csv);
    let lines: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let at = |name: &str| {
        lines[0]
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name} in {csv}"))
    };
    assert_eq!(lines[2][at("q_value")], "0.8");
    assert_eq!(lines[2][at("tost_p_value")], "0.0004");
    assert_eq!(lines[2][at("verdict")], "equivalent");
    assert_eq!(lines[2][at("all_runs_verdict")], "inconclusive");
    assert_eq!(lines[2][at("all_runs_n")], "3");
    assert_eq!(lines[1][at("all_runs_q_value")], "");
}

#[test]
fn without_exclusion_or_target_the_extra_columns_stay_away() {
    let mut cells = judged_cells();
    for c in &mut cells {
        c.all_runs = None;
        c.target_status.clear();
        c.target_ci_pct = None;
        c.runs_excluded = 0;
    }
    let (head, rows) = table_rows(&cells, false);
    assert!(
        !head
            .iter()
            .any(|h| h.starts_with("all runs") || h == "repetitions")
    );
    // The default: suspect runs are in the statistics, counted.
    assert_eq!(rows[1][head.len() - 1], "1");
    let text = render_results(
        &QueryResults {
            cells,
            ..Default::default()
        },
        Format::Table,
    );
    assert!(
        text.contains("suspect runs in bs=8K replicate: errors (in the statistics)"),
        "{text}"
    );
    // compare: no "compared on" column (every cell is compared on the job).
    let (head, _) = table_rows(&judged_cells(), true);
    assert!(!head.iter().any(|h| h == "compared on"), "{head:?}");
}

#[test]
fn host_warnings_are_named_under_the_table() {
    let r = QueryResults {
        job_id: "j".into(),
        cells: vec![cell("a", 2)],
        host_warnings: vec![
            blocklab_measure::job::HostWarning {
                warning: "load: 3.10 (1-minute average; 4 runnable): other processes are busy"
                    .into(),
                runs: 2,
            },
            blocklab_measure::job::HostWarning {
                warning: "transparent huge pages: always".into(),
                runs: 1,
            },
        ],
        runs_done: 3,
        ..Default::default()
    };
    let table = render_results(&r, Format::Table);
    let tail: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("warnings on the database host"))
        .take(3)
        .collect();
    assert_eq!(
        tail,
        [
            "warnings on the database host during the runs (blocklab-agent doctor):",
            "  load: 3.10 (1-minute average; 4 runnable): other processes are busy (2 of 3 runs)",
            "  transparent huge pages: always (1 of 3 runs)",
        ]
    );
    let md = render_results(&r, Format::Markdown);
    assert!(
        md.contains("- transparent huge pages: always (1 of 3 runs)\n"),
        "{md}"
    );
    let quiet = QueryResults {
        cells: vec![cell("a", 2)],
        ..Default::default()
    };
    assert!(!render_results(&quiet, Format::Table).contains("warnings on"));
}

#[test]
fn the_model_the_mde_and_the_rounds_to_equivalence_are_shown() {
    let mut cells = judged_cells();
    cells[1].model = "rounds".into();
    cells[1].mde_pct = Some(0.4321);
    cells[1].verdict = "inconclusive".into();
    cells[1].extra_rounds = Some(12);
    let mut cannot = cells[1].clone();
    cannot.label = "bs=16K".into();
    cannot.model = "welch".into();
    cannot.extra_rounds = None;
    cannot.extra_rounds_cannot = true;
    cells.push(cannot);
    let (head, rows) = table_rows(&cells, false);
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name} in {head:?}"))
    };
    assert_eq!(rows[0][col("model")], "-");
    assert_eq!(rows[1][col("model")], "rounds");
    assert_eq!(rows[1][col("MDE (80%)")], "0.43%");
    assert_eq!(rows[1][col("rounds to equivalence")], "+12");
    assert_eq!(rows[2][col("rounds to equivalence")], "cannot");
    assert_eq!(rows[0][col("rounds to equivalence")], "-");
    let r = QueryResults {
        job_id: "j".into(),
        cells,
        ..Default::default()
    };
    let json: serde_json::Value =
        serde_json::from_str(&render_results(&r, Format::Json)).expect("json");
    let c = &json["cells"];
    assert_eq!(c[0]["model"], serde_json::Value::Null);
    assert_eq!(c[1]["model"], "rounds");
    assert_eq!(c[1]["mde_pct"], 0.4321);
    assert_eq!(c[1]["extra_rounds"], 12);
    assert_eq!(c[1]["extra_rounds_cannot"], false);
    assert_eq!(c[2]["extra_rounds"], serde_json::Value::Null);
    assert_eq!(c[2]["extra_rounds_cannot"], true);
    let csv = render_results(&r, Format::Csv);
    let lines: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let at = |name: &str| {
        lines[0]
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name} in {csv}"))
    };
    assert_eq!(lines[2][at("model")], "rounds");
    assert_eq!(lines[2][at("mde_pct")], "0.4321");
    assert_eq!(lines[2][at("extra_rounds")], "12");
    assert_eq!(lines[3][at("extra_rounds_cannot")], "true");
}

#[test]
fn a_job_until_decided_says_its_stopping_rule_and_round() {
    let mut cells = judged_cells();
    for c in &mut cells {
        c.all_runs = None;
        c.target_ci_pct = None;
        c.target_status.clear();
    }
    cells[1].target_status =
        "sequential: decided at round 7 (alpha 0.0028 per look, 18 looks)".into();
    let (head, rows) = table_rows(&cells, false);
    let at = head
        .iter()
        .position(|h| h == "repetitions")
        .expect("column");
    assert_eq!(
        rows[1][at],
        "sequential: decided at round 7 (alpha 0.0028 per look, 18 looks)"
    );
    let text = render_results(
        &QueryResults {
            cells,
            ..Default::default()
        },
        Format::Table,
    );
    assert!(
        text.contains(
            "repetitions: until every compared cell is faster, slower or equivalent, or the \
             maximum; sequential boundary: each look after the minimum tests at 0.05 / looks"
        ),
        "{text}"
    );
    assert!(!text.contains("until the 95% CI is within"), "{text}");
}

/// A job with every part under its table: verdicts, a target, excluded suspect runs, a host
/// warning, workload metrics, own-workload figures and a catalog path.
pub(crate) fn full_results() -> QueryResults {
    let mut cells = judged_cells();
    cells[1].model = "rounds".into();
    cells[1].mde_pct = Some(0.4321);
    let mut slow = cells[1].clone();
    slow.label = "bs=16K".into();
    slow.cell_index = 2;
    slow.replicate = false;
    slow.compared_on = "page size".into();
    slow.mean = 905.3;
    slow.ci95_low = 880.1;
    slow.ci95_high = 930.5;
    slow.n = 3;
    slow.pct_change_vs_baseline = Some(-9.47);
    slow.pct_change_ci95_low = Some(-12.3);
    slow.pct_change_ci95_high = Some(-6.55);
    slow.q_value = Some(0.004);
    slow.tost_q_value = Some(0.99);
    slow.verdict = "slower".into();
    slow.mde_pct = Some(3.87);
    slow.runs_suspect = 0;
    slow.runs_excluded = 0;
    slow.suspect_reasons.clear();
    cells.push(slow);
    for (i, c) in cells.iter_mut().enumerate() {
        c.cell_index = i as u32;
    }
    let metric = |name: &str, unit: &str, higher: bool, means: [f64; 3]| MetricResults {
        name: name.into(),
        unit: unit.into(),
        higher_is_better: higher,
        cells: cells
            .iter()
            .zip(means)
            .map(|(c, mean)| CellResult {
                metric: name.into(),
                unit: unit.into(),
                higher_is_better: higher,
                mean,
                ..c.clone()
            })
            .collect(),
    };
    QueryResults {
        job_id: "j".into(),
        by_metric: vec![
            metric("wal_bytes_per_txn", "B/txn", false, [512.0, 515.5, 1020.25]),
            metric("checkpoints_in_window", "count", false, [0.0, 0.0, 1.0]),
        ],
        cells,
        catalog_path: "/var/lib/blocklab/catalog.db".into(),
        own_workload: crate::own_workload(&crate::own::tests::export()),
        host_warnings: vec![HostWarning {
            warning: "transparent huge pages: always".into(),
            runs: 2,
        }],
        runs_done: 9,
    }
}
