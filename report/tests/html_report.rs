//! The HTML report as a reader meets it: the runs' headline column, the hosts' facts as a
//! table, the hosts' warnings near the top, the charts right after the results, and a chart
//! whose y axis does not start at 0 saying so.

use blocklab_measure::job::*;
use blocklab_report::calibration::{Prng, Scenario, synthetic_job};
use blocklab_report::html::report;
use blocklab_report::stats::Metric;

const FACTS: &str = r#"{"hostname":"db1","cpu_model":"Test CPU 9000","logical_cpus":2,"data_dir":{"path":"/srv/blocklab/data","mount_point":"/srv","fs_type":"ext4","mount_options":"rw,noatime","rotational":null},"warnings":["disk write-back cache: enabled on sda","swap in use: 2048 kB: pages come back from disk"]}"#;

/// A pgbench job (headline tps) whose runs also measured WAL bytes per transaction, on a
/// database host with doctor's warnings.
fn job() -> JobExport {
    let mut e = synthetic_job(&Scenario::new(4, 1.0, 0.0), &mut Prng::new(7));
    for r in &mut e.runs {
        if let Some(m) = r.result.as_mut() {
            m.extra.push(blocklab_measure::Metric {
                name: "wal_bytes_per_txn".into(),
                value: 512.0,
                unit: "B/txn".into(),
                higher_is_better: false,
            });
        }
    }
    e.job = Some(JobSummary {
        name: "page-sizes".into(),
        headline_metric: "tps".into(),
        ..Default::default()
    });
    e.hosts = vec![ExportHost {
        host_id: "db1".into(),
        role: "agent".into(),
        facts_json: FACTS.into(),
        is_job_db_host: true,
        ..Default::default()
    }];
    e.results = blocklab_report::results(&e, &Metric::Tps).cells;
    e
}

/// The text of the `<table class="{class}">` element.
fn table<'a>(html: &'a str, class: &str) -> &'a str {
    let start = html
        .find(&format!("<table class=\"{class}\""))
        .unwrap_or_else(|| panic!("no table {class}"));
    let end = html[start..].find("</table>").expect("table end") + start;
    &html[start..end]
}

#[test]
fn the_runs_headline_column_shows_the_jobs_headline_metric() {
    let html = report(&job());
    let runs = table(&html, "runs");
    assert!(runs.contains("<th>headline metric</th>"), "{runs}");
    let row = runs.split("<tr").nth(2).expect("a run's row");
    assert!(row.contains("<td>tps "), "{row}");
    assert!(!runs.contains("wal_bytes_per_txn"), "{runs}");
}

#[test]
fn the_hosts_facts_are_a_key_value_table_not_json() {
    let html = report(&job());
    let facts = table(&html, "host-facts");
    for want in [
        "<td>data_dir.fs_type</td><td>ext4</td>",
        "<td>data_dir.mount_point</td><td>/srv</td>",
        "<td>data_dir.rotational</td><td>-</td>",
        "<td>cpu_model</td><td>Test CPU 9000</td>",
        "<td>warnings</td><td>disk write-back cache: enabled on sda; swap in use",
    ] {
        assert!(facts.contains(want), "facts lack {want:?}:\n{facts}");
    }
    // No value is a JSON object or list, on any line of the page.
    assert!(
        !facts.contains("{&quot;") && !facts.contains("[&quot;"),
        "{facts}"
    );
    assert!(!html.contains("{\"") && !html.contains("&quot;path&quot;"));
}

#[test]
fn the_hosts_warnings_are_listed_near_the_top() {
    let html = report(&job());
    let list = html
        .find("<ul class=\"host-warnings\">")
        .expect("a warnings list");
    assert!(list < html.find("<h2 id=\"summary\">").expect("summary"));
    assert!(list < html.find("<table class=\"results\"").expect("results"));
    for want in [
        "<li><b>db1</b> (the job&#39;s database host): disk write-back cache: enabled on sda</li>",
        "<li><b>db1</b> (the job&#39;s database host): swap in use: 2048 kB: pages come back from disk</li>",
    ] {
        assert!(html.contains(want), "lacks {want:?}");
    }
    assert!(html.contains("<a href=\"#warnings\">host warnings</a>"));
    // Without warnings, no list.
    let mut quiet = job();
    quiet.hosts[0].facts_json = r#"{"cpu_model":"x","warnings":[]}"#.into();
    let html = report(&quiet);
    assert!(!html.contains("<ul class=\"host-warnings\">") && !html.contains("#warnings"));
}

#[test]
fn the_charts_come_right_after_the_results_before_the_per_metric_tables() {
    let html = report(&job());
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s:?}"));
    let charts = at("<h3 id=\"charts\">");
    assert!(at("<table class=\"results\"") < charts);
    assert!(at("Method: mean over the cell") < charts);
    assert!(charts < at("<svg"));
    assert!(at("</svg>") < at("<h3 id=\"per-metric\">"));
    assert!(charts < at("<table class=\"per-metric\""));
    assert!(charts < at("<h2 id=\"hosts\">"));
    // The contents at the top link every section the report has.
    let toc = at("<p class=\"toc\">");
    assert!(toc < at("<h2 id=\"summary\">"));
    for id in [
        "summary",
        "results",
        "charts",
        "per-metric",
        "hosts",
        "runs",
        "spec",
    ] {
        assert!(
            html.contains(&format!("<a href=\"#{id}\">")),
            "no link to {id}"
        );
        assert!(html.contains(&format!("id=\"{id}\"")), "no section {id}");
    }
    assert!(!html.contains("<a href=\"#own-workload\">"));
}

#[test]
fn a_y_axis_that_does_not_start_at_zero_says_where_it_starts() {
    let e = job();
    let chart = blocklab_report::plot::metric_chart(&e).expect("chart");
    let note = chart
        .svg
        .split("<text class=\"axis-note\"")
        .nth(1)
        .expect("an axis note");
    let text = &note[note.find('>').expect("text") + 1..note.find("</text>").expect("end")];
    let start: f64 = text
        .strip_prefix("y axis starts at ")
        .and_then(|t| t.strip_suffix(", not 0"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    let lowest = e
        .results
        .iter()
        .map(|c| c.ci95_low.min(c.mean))
        .fold(f64::INFINITY, f64::min);
    assert!(start > 0.0 && start <= lowest, "{start} {lowest}");
    assert!(chart.svg.contains("<g class=\"axis-break\""));

    // Data that reach down near 0 get an axis from 0 and no note.
    let mut wide = e.clone();
    for (i, c) in wide.results.iter_mut().enumerate() {
        let v = if i == 0 { 100.0 } else { 1000.0 };
        (c.mean, c.ci95_low, c.ci95_high) = (v, v * 0.9, v * 1.1);
    }
    let chart = blocklab_report::plot::metric_chart(&wide).expect("chart");
    assert!(!chart.svg.contains("axis-note") && !chart.svg.contains("axis-break"));
    assert!(chart.svg.contains(">0</text>"), "{}", chart.svg);
}
