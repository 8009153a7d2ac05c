//! Text renderings of results and comparisons: table, csv, json, markdown.

use blocklab_proto::v1::*;
use serde_json::json;

use crate::ReportError;
use crate::format::{cell_metric, num, p_value, pct, size};
use crate::stats::Metric;

/// Output formats of `results` and `compare`.
pub const FORMATS: [&str; 4] = ["table", "csv", "json", "markdown"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
    Markdown,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, ReportError> {
        match s {
            "" | "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "markdown" | "md" => Ok(Format::Markdown),
            other => Err(ReportError::UnknownFormat(other.to_string())),
        }
    }
}

fn metric_of(cells: &[CellResult]) -> Metric {
    cells.first().map_or(Metric::Tps, cell_metric)
}

/// The human cells of one row.
fn human_row(c: &CellResult, metric: &Metric, compare: bool) -> Vec<String> {
    let measured = c.n > 0;
    let mut row = vec![c.label.clone()];
    if compare {
        row.push(if c.baseline_label.is_empty() {
            "-".into()
        } else {
            c.baseline_label.clone()
        });
        row.push(
            c.baseline_mean
                .map(|m| num(metric, m))
                .unwrap_or_else(|| "-".into()),
        );
    }
    row.extend([
        size(c.proven_block_size),
        size(c.proven_wal_block_size),
        c.clients.to_string(),
        format!("{}/{}", c.n, c.runs_total),
        if measured {
            num(metric, c.mean)
        } else {
            "-".into()
        },
        if c.n > 1 {
            num(metric, c.stddev)
        } else {
            "-".into()
        },
        if c.n > 1 {
            format!("{:.1}%", c.cv * 100.0)
        } else {
            "-".into()
        },
        if c.n > 1 {
            format!(
                "[{}, {}]",
                num(metric, c.ci95_low),
                num(metric, c.ci95_high)
            )
        } else {
            "-".into()
        },
        match (c.is_baseline, c.pct_change_vs_baseline) {
            (true, _) => "(baseline)".into(),
            (false, Some(p)) => pct(p),
            (false, None) => "-".into(),
        },
        match (c.pct_change_ci95_low, c.pct_change_ci95_high) {
            (Some(l), Some(h)) => format!("[{}, {}]", pct(l), pct(h)),
            _ => "-".into(),
        },
        c.p_value.map(p_value).unwrap_or_else(|| "-".into()),
        c.verdict.clone(),
        match (c.runs_suspect, c.suspect_included) {
            (0, _) => "0".into(),
            (n, true) => format!("{n} (included)"),
            (n, false) => format!("{n} (excluded)"),
        },
    ]);
    row
}

fn header(metric: &Metric, compare: bool) -> Vec<String> {
    let mut h = vec![if compare { "cell (B)" } else { "cell" }.to_string()];
    if compare {
        h.push("like cell (A)".into());
        h.push(format!("{metric} mean (A)"));
    }
    h.extend(
        [
            "block_size",
            "wal_block_size",
            "clients",
            "n/runs",
            &format!("{metric} mean"),
            "stddev",
            "CV",
            "95% CI",
            if compare {
                "% change vs A"
            } else {
                "% change vs baseline"
            },
            "95% CI of change",
            "p-value",
            "verdict",
            "suspect",
        ]
        .map(String::from),
    );
    h
}

/// The human table of `results` (or `compare`): header and rows, as the HTML report shows it.
pub fn table_rows(cells: &[CellResult], compare: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let metric = metric_of(cells);
    let rows = cells
        .iter()
        .map(|c| human_row(c, &metric, compare))
        .collect();
    (header(&metric, compare), rows)
}

fn opt(v: Option<f64>) -> serde_json::Value {
    v.map_or(serde_json::Value::Null, |v| json!(v))
}

/// One cell as a JSON object (numbers unrounded; absent values are null).
pub fn cell_json(c: &CellResult) -> serde_json::Value {
    let some = |b: bool, v: f64| if b { json!(v) } else { serde_json::Value::Null };
    json!({
        "cell": c.label,
        "cell_index": c.cell_index,
        "block_size_kb": c.block_size_kb,
        "wal_block_size_kb": c.wal_block_size_kb,
        "block_size": c.proven_block_size,
        "wal_block_size": c.proven_wal_block_size,
        "clients": c.clients,
        "dims": serde_json::from_str::<serde_json::Value>(&c.dims_json).unwrap_or_default(),
        "is_baseline": c.is_baseline,
        "baseline": c.baseline_label,
        "baseline_mean": opt(c.baseline_mean),
        "metric": c.metric,
        "unit": c.unit,
        "higher_is_better": c.higher_is_better,
        "runs_total": c.runs_total,
        "runs_ok": c.runs_ok,
        "n": c.n,
        "mean": some(c.n > 0, c.mean),
        "stddev": some(c.n > 1, c.stddev),
        "cv": some(c.n > 1, c.cv),
        "ci95_low": some(c.n > 1, c.ci95_low),
        "ci95_high": some(c.n > 1, c.ci95_high),
        "pct_change": opt(c.pct_change_vs_baseline),
        "pct_change_ci95_low": opt(c.pct_change_ci95_low),
        "pct_change_ci95_high": opt(c.pct_change_ci95_high),
        "p_value": opt(c.p_value),
        "welch_df": opt(c.welch_df),
        "verdict": c.verdict,
        "runs_suspect": c.runs_suspect,
        "runs_excluded": c.runs_excluded,
        "suspect_included": c.suspect_included,
        "suspect_reasons": c.suspect_reasons,
    })
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// CSV columns, in order: the keys of [`cell_json`] except `dims`.
const CSV_COLUMNS: [&str; 31] = [
    "cell",
    "cell_index",
    "block_size_kb",
    "wal_block_size_kb",
    "block_size",
    "wal_block_size",
    "clients",
    "is_baseline",
    "baseline",
    "baseline_mean",
    "metric",
    "unit",
    "higher_is_better",
    "runs_total",
    "runs_ok",
    "n",
    "mean",
    "stddev",
    "cv",
    "ci95_low",
    "ci95_high",
    "pct_change",
    "pct_change_ci95_low",
    "pct_change_ci95_high",
    "p_value",
    "welch_df",
    "verdict",
    "runs_suspect",
    "runs_excluded",
    "suspect_included",
    "suspect_reasons",
];

/// CSV: one line per cell, the JSON fields as columns (unrounded numbers).
fn csv(cells: &[CellResult], prefix: &[(&str, &str)]) -> String {
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = cells
        .iter()
        .map(|c| match cell_json(c) {
            serde_json::Value::Object(m) => m,
            _ => serde_json::Map::new(),
        })
        .collect();
    let mut out: Vec<String> = prefix.iter().map(|(k, _)| k.to_string()).collect();
    out.extend(CSV_COLUMNS.iter().map(|c| c.to_string()));
    let mut text = out.join(",") + "\n";
    for r in &rows {
        let mut line: Vec<String> = prefix.iter().map(|(_, v)| csv_field(v)).collect();
        for k in CSV_COLUMNS {
            line.push(csv_field(
                &match r.get(k).unwrap_or(&serde_json::Value::Null) {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(a) => a
                        .iter()
                        .map(|v| {
                            v.as_str()
                                .map(String::from)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                    other => other.to_string(),
                },
            ));
        }
        text.push_str(&line.join(","));
        text.push('\n');
    }
    text
}

fn markdown(header: &[String], rows: &[Vec<String>]) -> String {
    let esc = |s: &String| s.replace('|', "\\|");
    let mut out = format!(
        "| {} |\n",
        header.iter().map(esc).collect::<Vec<_>>().join(" | ")
    );
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for r in rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(esc).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

pub(crate) fn notes(cells: &[CellResult], metric: &Metric) -> String {
    let mut out = format!(
        "metric: {metric} ({} is better); 95% CI: Student t; change: Welch's t-test, significant at p < 0.05\n",
        if metric.higher_is_better() {
            "higher"
        } else {
            "lower"
        }
    );
    for c in cells.iter().filter(|c| !c.suspect_reasons.is_empty()) {
        out.push_str(&format!(
            "suspect runs in {}: {}{}\n",
            c.label,
            c.suspect_reasons.join(", "),
            if c.suspect_included {
                " (kept: fewer than 2 clean runs)"
            } else {
                " (excluded)"
            }
        ));
    }
    out
}

fn render(
    cells: &[CellResult],
    format: Format,
    compare: bool,
    json_head: serde_json::Value,
    prefix: &[(&str, &str)],
    footer: &str,
) -> String {
    let metric = metric_of(cells);
    let (head, rows) = table_rows(cells, compare);
    match format {
        Format::Csv => csv(cells, prefix),
        Format::Json => {
            let mut v = json_head;
            v["metric"] = json!(metric.name());
            v["cells"] = cells.iter().map(cell_json).collect();
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        Format::Markdown => markdown(&head, &rows) + "\n" + &notes(cells, &metric),
        Format::Table => {
            let mut t = comfy_table::Table::new();
            t.set_header(head);
            for r in rows {
                t.add_row(r);
            }
            format!("{t}\n{}{footer}", notes(cells, &metric))
        }
    }
}

fn by_metric_json(by_metric: &[MetricResults]) -> serde_json::Value {
    by_metric
        .iter()
        .map(|m| {
            json!({
                "metric": m.name,
                "unit": m.unit,
                "higher_is_better": m.higher_is_better,
                "cells": m.cells.iter().map(cell_json).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// `blocklab results`: one row per cell with its statistics and the change vs its baseline.
pub fn render_results(r: &QueryResultsResponse, format: Format) -> String {
    let footer = if r.catalog_path.is_empty() {
        String::new()
    } else {
        format!("catalog: {}\n", r.catalog_path)
    };
    let mut head = json!({ "job_id": r.job_id });
    if !r.by_metric.is_empty() {
        head["by_metric"] = by_metric_json(&r.by_metric);
    }
    let headline = r
        .cells
        .first()
        .map(|c| c.metric.clone())
        .unwrap_or_default();
    let extra: Vec<CellResult> = r
        .by_metric
        .iter()
        .filter(|m| m.name != headline)
        .flat_map(|m| m.cells.iter().cloned())
        .collect();
    match format {
        Format::Csv => {
            let mut all = r.cells.clone();
            all.extend(extra);
            csv(&all, &[("job_id", &r.job_id)])
        }
        Format::Table => {
            let body = render(&r.cells, format, false, head, &[], "");
            body + &metrics::metric_table(
                &r.by_metric,
                "per metric (each cell against its baseline cell)",
            ) + &footer
        }
        Format::Markdown => {
            let mut body = render(&r.cells, format, false, head, &[], "");
            if !r.by_metric.is_empty() {
                let (h, rows) = metrics::metric_rows(&r.by_metric);
                body.push('\n');
                body.push_str(&markdown(&h, &rows));
            }
            body
        }
        Format::Json => render(&r.cells, format, false, head, &[], ""),
    }
}

/// `blocklab compare`: each cell of job B against the like cell of job A.
pub fn render_compare(r: &CompareJobsResponse, format: Format) -> String {
    let id = |j: &Option<JobSummary>| j.as_ref().map(|j| j.job_id.clone()).unwrap_or_default();
    let name = |j: &Option<JobSummary>| j.as_ref().map(|j| j.name.clone()).unwrap_or_default();
    let (a, b) = (id(&r.job_a), id(&r.job_b));
    let head = format!(
        "A (baseline): {a} {}\nB (treatment): {b} {}\n",
        name(&r.job_a),
        name(&r.job_b)
    );
    let mut json_head = json!({ "job_a": a, "job_b": b });
    if !r.by_metric.is_empty() {
        json_head["by_metric"] = by_metric_json(&r.by_metric);
    }
    let body = render(
        &r.cells,
        format,
        true,
        json_head,
        &[("job_a", &a), ("job_b", &b)],
        "",
    );
    match format {
        Format::Table => {
            head + &body
                + &metrics::metric_table(
                    &r.by_metric,
                    "per metric (each cell of B against A's like cell)",
                )
        }
        Format::Markdown => {
            let mut out = head + &body;
            if !r.by_metric.is_empty() {
                let (h, rows) = metrics::metric_rows(&r.by_metric);
                out.push('\n');
                out.push_str(&markdown(&h, &rows));
            }
            out
        }
        _ => body,
    }
}

mod metrics;

pub use metrics::{metric_rows, metric_table};

#[cfg(test)]
mod tests;
