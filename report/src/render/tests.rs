use super::*;

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
    let r = QueryResultsResponse {
        job_id: "j".into(),
        cells: vec![cell("a", 1)],
        catalog_path: String::new(),
        by_metric: Vec::new(),
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
    let r = QueryResultsResponse {
        job_id: "j".into(),
        cells: vec![cell("a,b \"x\"", 2), cell("c|d", 2)],
        catalog_path: String::new(),
        by_metric: Vec::new(),
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
    let r = QueryResultsResponse {
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
    let r = QueryResultsResponse {
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
