//! `blocklab report`: one self-contained HTML file (inline CSS, inline SVG, no external
//! assets): a table of contents, the hosts' warnings, the job summary, the results table and
//! its notes, the charts, the per-metric and own-workload tables, the hosts' facts, the
//! builds, every run with its start time and suspect reasons, and each run's settings. Wide
//! tables scroll inside their own box, so the page itself fits the window.

use std::fmt::Write as _;

use blocklab_measure::job::*;

use crate::plot::{self, esc};
use crate::render::{self, table_rows};
use crate::stats::{Metric, SUSPECT_RULE};

pub const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1400px}\
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}\
th{background:#f0f0f0}tr.suspect td{background:#fff4e0}td.num{text-align:right}\
pre{background:#f7f7f7;padding:0.8em;overflow-x:auto}h2{margin-top:1.6em}\
.charts svg{margin:0.5em 1em 0.5em 0;border:1px solid #ddd;max-width:100%;height:auto}\
.note{color:#555;font-size:13px}.scroll{max-width:100%;overflow-x:auto}\
td{overflow-wrap:break-word}.toc a{margin-right:0.8em}\
ul.host-warnings{background:#fff4e0;border:1px solid #e0b060;padding:0.6em 0.6em 0.6em 2em}";

pub fn table(
    out: &mut String,
    class: &str,
    header: &[String],
    rows: &[Vec<String>],
    marks: &[bool],
) {
    let _ = write!(
        out,
        r#"<div class="scroll"><table class="{class}"><thead><tr>"#
    );
    for h in header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for (i, r) in rows.iter().enumerate() {
        let mark = marks.get(i).copied().unwrap_or(false);
        out.push_str(if mark {
            r#"<tr class="suspect">"#
        } else {
            "<tr>"
        });
        for v in r {
            let _ = write!(out, "<td>{}</td>", esc(v));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A host's facts as (key, value) rows: a nested object's fields under `key.field`, a list
/// of plain values joined with "; ", a list of objects as `key[i].field`; no value is JSON.
pub fn fact_rows(facts_json: &str) -> Vec<Vec<String>> {
    match serde_json::from_str::<serde_json::Value>(facts_json) {
        Ok(serde_json::Value::Object(m)) => {
            let mut rows = Vec::new();
            for (k, v) in m {
                flatten(&k, v, &mut rows);
            }
            rows
        }
        _ => vec![vec!["facts".into(), facts_json.to_string()]],
    }
}

fn flatten(key: &str, v: serde_json::Value, rows: &mut Vec<Vec<String>>) {
    use serde_json::Value;
    let plain = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{key}.{k}"), v, rows);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            for (i, item) in items.into_iter().enumerate() {
                flatten(&format!("{key}[{i}]"), item, rows);
            }
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(plain).collect();
            rows.push(vec![key.to_string(), items.join("; ")]);
        }
        other => rows.push(vec![key.to_string(), plain(&other)]),
    }
}

/// The warnings the job's hosts reported with their facts (`blocklab-agent doctor`'s:
/// write-back cache, swap in use, ...), as (host, role, warning).
pub fn host_warnings(e: &JobExport) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for h in &e.hosts {
        let Ok(facts) = serde_json::from_str::<serde_json::Value>(&h.facts_json) else {
            continue;
        };
        let Some(items) = facts.get("warnings").and_then(|w| w.as_array()) else {
            continue;
        };
        let role = if h.is_job_db_host {
            "the job's database host".to_string()
        } else {
            h.role.clone()
        };
        for w in items {
            let w = w.as_str().map_or_else(|| w.to_string(), str::to_string);
            out.push((h.host_id.clone(), role.clone(), w));
        }
    }
    out
}

fn warnings(out: &mut String, e: &JobExport) {
    let items = host_warnings(e);
    if items.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"warnings\">Host warnings</h2>\n<ul class=\"host-warnings\">");
    for (host, role, w) in &items {
        let _ = write!(
            out,
            "<li><b>{}</b> ({}): {}</li>",
            esc(host),
            esc(role),
            esc(w)
        );
    }
    out.push_str(
        "</ul>\n<p class=\"note\">What makes benchmarks noisy on these hosts, as blocklab-agent doctor found it when they last reported their facts.</p>\n",
    );
}

/// Links to the report's sections that it has.
fn contents(out: &mut String, e: &JobExport, has: impl Fn(&str) -> bool) {
    let mut links = vec![];
    if !host_warnings(e).is_empty() {
        links.push(("warnings", "host warnings"));
    }
    links.extend([("summary", "job"), ("results", "results")]);
    if has("series") {
        links.push(("series", "series"));
    }
    links.push(("charts", "charts"));
    for (id, name) in [
        ("per-metric", "per metric"),
        ("own-workload", "own workload"),
    ] {
        if has(id) {
            links.push((id, name));
        }
    }
    links.extend([
        ("hosts", "hosts"),
        ("builds", "builds"),
        ("runs", "runs"),
        ("settings", "settings"),
        ("spec", "spec"),
    ]);
    out.push_str("<p class=\"toc\">Contents: ");
    for (id, name) in links {
        let _ = write!(out, "<a href=\"#{id}\">{name}</a>");
    }
    out.push_str("</p>\n");
}

fn summary(out: &mut String, e: &JobExport) {
    let j = e.job.clone().unwrap_or_default();
    let seed = e.seed.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
    let rows = vec![
        vec!["job id".into(), j.job_id.clone()],
        vec!["name".into(), j.name.clone()],
        vec!["state".into(), j.state.clone()],
        vec![
            "runs done / total / failed".into(),
            format!("{} / {} / {}", j.runs_done, j.runs_total, j.runs_failed),
        ],
        vec!["database host".into(), j.db_host_id.clone()],
        vec!["run order".into(), e.run_order.clone()],
        vec!["shuffle seed".into(), seed],
        vec![
            "created / started / finished".into(),
            format!("{} / {} / {}", j.created_at, e.started_at, e.finished_at),
        ],
        vec!["metric".into(), e.metric.clone()],
        vec!["catalog".into(), e.catalog_path.clone()],
    ];
    table(out, "summary", &strings(&["", "job"]), &rows, &[]);
    if !j.error.is_empty() {
        let _ = write!(out, "<p>error: {}</p>", esc(&j.error));
    }
}

fn runs(out: &mut String, e: &JobExport) {
    let label = |i: u32| {
        e.cells
            .iter()
            .find(|c| c.cell_index == i)
            .map(|c| c.label.clone())
            .unwrap_or_default()
    };
    // Runs with workload metrics also show the job's headline metric (NOTPM, ...; tps for
    // pgbench scripts, whatever else they measure).
    let headline = e
        .runs
        .iter()
        .any(|r| r.result.as_ref().is_some_and(|m| !m.extra.is_empty()));
    let headline_metric = crate::analysis::resolve_metric("", e).unwrap_or(Metric::Tps);
    let mut header = strings(&crate::format::RUN_KEY_COLUMNS);
    header.extend(strings(&[
        "started",
        "finished",
        "db host",
        "worker",
        "block_size",
        "wal_block_size",
        "server version",
        "build key",
        "tps",
        "latency avg ms",
        "latency p99 ms",
        "failures",
        "suspect reasons",
        "error",
    ]));
    let mut rows = Vec::new();
    let mut marks = Vec::new();
    for r in &e.runs {
        let m = r.result.as_ref();
        let f =
            |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or_else(|| "-".into());
        let mut row = vec![
            (r.sequence + 1).to_string(),
            label(r.cell_index),
            (r.repetition + 1).to_string(),
            r.attempt.to_string(),
            r.state.clone(),
            r.stage.clone(),
            r.started_at.clone(),
            r.finished_at.clone(),
            r.db_host_id.clone(),
            r.worker_host_id.clone(),
            r.block_size.to_string(),
            r.wal_block_size.to_string(),
            r.server_version.clone(),
            format!(
                "{}{}",
                r.build_key,
                if r.build_reused { " (cached)" } else { "" }
            ),
            f(m.as_ref().map(|m| m.tps), 1),
            f(m.as_ref().map(|m| m.latency_avg_ms), 3),
            f(m.as_ref().map(|m| m.latency_p99_ms), 3),
            m.as_ref()
                .map(|m| m.failures.to_string())
                .unwrap_or_else(|| "-".into()),
            r.suspect_reasons.join("; "),
            r.error.lines().next().unwrap_or("").to_string(),
        ];
        if headline {
            let value = m
                .map(|m| crate::analysis::metric_value(m, &headline_metric))
                .filter(|v| v.is_finite());
            row.insert(
                14,
                value.map_or_else(
                    || "-".into(),
                    |v| {
                        let unit = headline_metric.unit();
                        let unit = if unit == headline_metric.name() {
                            ""
                        } else {
                            unit
                        };
                        format!(
                            "{} {} {unit}",
                            headline_metric.name(),
                            crate::format::num(&headline_metric, v)
                        )
                        .trim_end()
                        .to_string()
                    },
                ),
            );
        }
        rows.push(row);
        marks.push(!r.suspect_reasons.is_empty());
    }
    if headline {
        header.insert(14, "headline metric".into());
    }
    table(out, "runs", &header, &rows, &marks);
}

fn settings(out: &mut String, e: &JobExport) {
    let header = strings(&["#", "cell", "name", "setting", "unit", "source"]);
    let mut rows = Vec::new();
    for r in &e.runs {
        let cell = e.cells.iter().find(|c| c.cell_index == r.cell_index);
        for s in &r.settings {
            rows.push(vec![
                (r.sequence + 1).to_string(),
                cell.map(|c| c.label.clone()).unwrap_or_default(),
                s.name.clone(),
                s.setting.clone(),
                s.unit.clone(),
                s.source.clone(),
            ]);
        }
    }
    table(out, "settings", &header, &rows, &[]);
    let stats: Vec<Vec<String>> = e
        .runs
        .iter()
        .flat_map(|r| {
            r.server_stats.iter().map(move |s| {
                vec![
                    (r.sequence + 1).to_string(),
                    s.name.clone(),
                    format!("{}", s.delta),
                ]
            })
        })
        .collect();
    if !stats.is_empty() {
        out.push_str(
            "<details><summary>Server statistics deltas over each measured window</summary>",
        );
        table(
            out,
            "server-stats",
            &strings(&["#", "name", "delta"]),
            &stats,
            &[],
        );
        out.push_str("</details>\n");
    }
}

/// The whole report for a job exported with samples.
pub fn report(e: &JobExport) -> String {
    let j = e.job.clone().unwrap_or_default();
    let metric = e
        .results
        .first()
        .map_or(Metric::Tps, crate::format::cell_metric);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>blocklab report: {}</title><style>{STYLE}</style></head><body>\n<h1>blocklab report: {}</h1>",
        esc(&j.name),
        esc(&j.name)
    );
    let by_metric = crate::metric_results(e);
    let own = crate::own_workload(e);
    contents(&mut out, e, |id| match id {
        "per-metric" => !by_metric.is_empty(),
        "own-workload" => !own.is_empty(),
        "series" => e.results.iter().any(|c| c.series_point.is_some()),
        _ => false,
    });
    warnings(&mut out, e);
    out.push_str("<h2 id=\"summary\">Job</h2>\n");
    summary(&mut out, e);
    out.push_str("<h2 id=\"results\">Results</h2>\n");
    let (header, rows) = table_rows(&e.results, false);
    let marks: Vec<bool> = e.results.iter().map(|c| c.runs_suspect > 0).collect();
    table(&mut out, "results", &header, &rows, &marks);
    let _ = writeln!(
        out,
        "<p class=\"note\">{}</p><p class=\"note\">Method: mean over the cell's runs, sample stddev, CV = stddev/mean, 95% CI of the mean from Student's t with n-1 df. Change against the baseline cell: a ratio estimated on the log scale, Δ = ln(level/baseline level), shown as 100·(exp(Δ)−1)% so that no interval passes −100%; in an interleaved or randomized-block job with 2 rounds or more holding both cells, within rounds by least squares of ln(y) ~ cell + round (+ host with several database hosts; model column), with several hosts only ln(y) ~ cell + host, otherwise Welch's t-test with the delta method (se of a log mean ≈ s/(√n·mean)); two-sided t-test and 95% CI with the model's df. q-values: Benjamini-Hochberg across the job's comparisons (every non-baseline cell x every metric with a verdict). Equivalence: two one-sided tests of Δ against ln(1 ± {band:.1}/100), the band of ±{band:.1}% of the baseline. MDE: the smallest change the comparison finds with 80% power at α = 0.05, (t(0.975, df) + t(0.8, df))·se as a %. Rounds to equivalence (inconclusive comparisons): the more rounds after which the 90% CI would fit inside the band at the observed variance, or cannot within the job's maximum (1000 without one). Verdicts: equivalent when the TOST q-value &lt; 0.05 (the 90% CI of the change inside the band); else faster/slower when q &lt; 0.05 and the 95% CI excludes 0; else inconclusive. Counts, shares, sizes and per-transaction costs get the change and its CI, no verdict. {}</p>",
        esc(&render::notes(&e.results, &metric)).replace('\n', "<br/>"),
        esc(SUSPECT_RULE),
        band = crate::analysis::Options::of(e).equivalence_pct,
    );
    let race = render::race_text(&e.results, "");
    if !race.is_empty() {
        let _ = writeln!(
            out,
            "<h3 id=\"race\">Race</h3>\n<pre class=\"race\">{}</pre>",
            esc(race.trim())
        );
    }
    let series = render::series_text(&e.results, "");
    if !series.is_empty() {
        let _ = writeln!(
            out,
            "<h3 id=\"series\">Series</h3>\n<pre class=\"series\">{}</pre>",
            esc(series.trim())
        );
    }
    let ladders = crate::scaling::ladders(&e.results);
    if !ladders.is_empty() {
        out.push_str("<h3 id=\"scaling\">Scaling over clients</h3>\n<ul class=\"scaling\">");
        for l in &ladders {
            let _ = write!(
                out,
                "<li class=\"knee\" data-series=\"{}\" data-knee=\"{}\">{}</li>",
                esc(&l.series),
                l.knee,
                esc(&l.sentence())
            );
        }
        let _ = writeln!(out, "</ul><p class=\"note\">{}</p>", esc(render::KNEE_RULE));
    }
    out.push_str("<h3 id=\"charts\">Charts</h3>\n<div class=\"charts\">\n");
    for c in plot::charts(e) {
        out.push_str(&c.svg);
    }
    out.push_str("</div>\n");
    if !by_metric.is_empty() {
        out.push_str("<h3 id=\"per-metric\">Per metric</h3>\n");
        let (header, rows) = render::metric_rows(&by_metric);
        let marks: Vec<bool> = by_metric
            .iter()
            .map(|m| m.cells.iter().any(|c| c.runs_suspect > 0))
            .collect();
        table(&mut out, "per-metric", &header, &rows, &marks);
    }
    if !own.is_empty() {
        out.push_str("<h3 id=\"own-workload\">Own workload</h3>\n");
        let [lag, statements] = render::own_tables(&own);
        table(&mut out, "own-workload", &lag.0, &lag.1, &[]);
        if !statements.1.is_empty() {
            table(
                &mut out,
                "own-statements",
                &statements.0,
                &statements.1,
                &[],
            );
        }
        let _ = writeln!(
            out,
            "<p class=\"note\">Schedule lag: the median over the cell's runs of each run's mean lag behind the rate, and the largest; late and skipped: transactions over the latency limit and skipped for it, summed over the runs; per statement: count and failures summed, latency the median over the runs of each run's average.</p>"
        );
    }
    out.push_str("<h2 id=\"hosts\">Hosts</h2>\n");
    for h in &e.hosts {
        let _ = writeln!(
            out,
            "<h3>{} ({}{}), facts reported {}</h3>",
            esc(&h.host_id),
            esc(&h.role),
            if h.is_job_db_host {
                ", the job's database host"
            } else {
                ""
            },
            esc(&h.facts_seen_at)
        );
        let mut rows = vec![
            vec!["address".into(), h.address.clone()],
            vec!["labels".into(), h.labels.join(", ")],
            vec!["version".into(), h.version.clone()],
        ];
        rows.extend(fact_rows(&h.facts_json));
        table(
            &mut out,
            "host-facts",
            &strings(&["fact", "value"]),
            &rows,
            &[],
        );
    }
    out.push_str("<h2 id=\"builds\">Builds</h2>\n");
    let rows: Vec<Vec<String>> = e
        .builds
        .iter()
        .map(|b| {
            vec![
                b.build_key.clone(),
                b.host_id.clone(),
                format!("{}K", b.block_size_kb),
                format!("{}K", b.wal_block_size_kb),
                b.pg_version.clone(),
                b.source_sha256.clone(),
                if b.reused {
                    "cached".into()
                } else {
                    format!("built in {:.0} s", b.build_seconds)
                },
            ]
        })
        .collect();
    let header = strings(&[
        "build key",
        "host",
        "block size",
        "WAL block size",
        "version",
        "source sha256",
        "build",
    ]);
    table(&mut out, "builds", &header, &rows, &[]);
    let _ = writeln!(
        out,
        "<h2 id=\"runs\">Runs in execution order ({}{})</h2>",
        esc(&e.run_order),
        e.seed.map(|s| format!(", seed {s}")).unwrap_or_default()
    );
    runs(&mut out, e);
    out.push_str("<h2 id=\"settings\">Effective settings per run</h2>\n");
    settings(&mut out, e);
    let _ = writeln!(
        out,
        "<h2 id=\"spec\">Spec</h2>\n<pre>{}</pre>\n</body></html>",
        esc(&e.spec_toml)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::{Prng, Scenario, synthetic_job};

    #[test]
    fn the_report_shows_q_values_the_band_and_the_verdicts() {
        let mut e = synthetic_job(&Scenario::new(10, 1.0, 0.0), &mut Prng::new(5));
        e.results = crate::results(&e, &Metric::Tps).cells;
        let html = report(&e);
        for want in [
            "<th>q-value</th>",
            "<th>TOST q (±2.0%)</th>",
            "<th>model</th>",
            "<th>MDE (80%)</th>",
            "<th>rounds to equivalence</th>",
            "<th>compared on</th>",
            "<td>replicate</td>",
            "<td>page size</td>",
            "<td>equivalent</td>",
            "<td>faster</td>",
            "the band of ±2.0% of the baseline",
            "Benjamini-Hochberg",
        ] {
            assert!(html.contains(want), "report lacks {want:?}");
        }
    }
}
