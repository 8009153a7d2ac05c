//! Text renderings of results and comparisons: table, csv, json, markdown.

use blocklab_measure::job::*;
use serde_json::json;

use crate::ReportError;
use crate::stats::Metric;

mod compact;
mod data;
mod fit;
mod metrics;
mod own;
mod race;
pub use race::{BestVsDefault, best_vs_default, race_json, race_text};
pub use series::{series_json, series_text};
mod scaling;
mod series;
mod table;

pub use compact::LEFT_OUT_ORDER;
pub use data::{cell_json, csv_field};
pub use fit::{Column, PIPE_WIDTH, View, plain_table, table_width, wrap};
pub use metrics::{metric_rows, metric_table};
pub use own::{is_builtin_script, own_json, own_tables};
pub use scaling::{KNEE_RULE, scaling_json, scaling_text};
pub use table::table_rows;

use data::csv;
use table::metric_of;

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

/// A markdown pipe table (`|` in a value escaped).
pub fn markdown(header: &[String], rows: &[Vec<String>]) -> String {
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

/// The lines under a table: the method, the band, and per cell its suspect runs and what was
/// held constant.
pub(crate) fn notes(cells: &[CellResult], metric: &Metric) -> String {
    let band = table::band(cells).unwrap_or(crate::stats::DEFAULT_EQUIVALENCE_PCT);
    let mut out = format!(
        "metric: {metric} ({}); 95% CI: Student t; change: a ratio on the log scale, within \
         rounds (model rounds, rounds+hosts), hosts or Welch's test with the delta method; q: \
         Benjamini-Hochberg across the job's comparisons; faster/slower: q < 0.05 and the CI \
         excludes 0; equivalent: TOST q < 0.05 (90% CI inside ±{band:.1}%); otherwise \
         inconclusive; too few runs: fewer than 3 runs a side, not judged; MDE: the smallest change found at 80% power; rounds to equivalence: more \
         rounds that would fit the 90% CI in the band at the observed variance\n",
        if metric.is_descriptive() {
            "a count, share or size: no verdict"
        } else if metric.higher_is_better() {
            "higher is better"
        } else {
            "lower is better"
        }
    );
    if cells.iter().any(|c| c.all_runs.is_some()) {
        out.push_str(
            "suspect runs excluded from the statistics (the job's choice); the 'all runs' columns \
             use every completed run\n",
        );
    }
    for c in cells.iter().filter(|c| !c.suspect_reasons.is_empty()) {
        out.push_str(&format!(
            "suspect runs in {}: {}{}\n",
            c.label,
            c.suspect_reasons.join(", "),
            if c.suspect_included {
                " (kept: fewer than 2 clean runs)"
            } else if c.runs_excluded > 0 {
                " (excluded)"
            } else {
                " (in the statistics)"
            }
        ));
    }
    if cells
        .iter()
        .any(|c| c.target_status.starts_with("sequential"))
    {
        out.push_str(
            "repetitions: until every compared cell is faster, slower or equivalent, or the \
             maximum; sequential boundary: each look after the minimum tests at 0.05 / looks\n",
        );
    }
    if let Some(t) = cells.iter().find_map(|c| c.target_ci_pct) {
        out.push_str(&format!(
            "repetitions: until the 95% CI is within ±{t:.1}% of the mean, or the maximum\n"
        ));
    }
    for c in cells.iter().filter(|c| !c.held_constant.is_empty()) {
        out.push_str(&format!(
            "held constant: {}: {}\n",
            c.label, c.held_constant
        ));
    }
    if cells.iter().any(|c| !c.hosts.is_empty()) {
        out.push_str(
            "per database host (the change above is estimated within hosts, the host as a block):\n",
        );
    }
    for c in cells.iter().filter(|c| !c.hosts.is_empty()) {
        let on: Vec<String> = c
            .hosts
            .iter()
            .map(|h| {
                let change = h
                    .pct_change_vs_baseline
                    .map(|p| format!(" ({p:+.1}%)"))
                    .unwrap_or_default();
                format!("{} {:.1} n={}{change}", h.host_id, h.mean, h.n)
            })
            .collect();
        out.push_str(&format!("  {}: {}\n", c.label, on.join(", ")));
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
    view: View,
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
        Format::Table => match view.width {
            Some(width) => {
                let (table, left_out) = compact::cell_table(cells, &metric, compare, width);
                let notes = notes(cells, &metric) + &compact::cell_notes(cells, compare, &left_out);
                format!("{table}\n{}{footer}", wrap(&notes, width))
            }
            None => {
                let mut t = comfy_table::Table::new();
                t.set_header(head);
                for r in rows {
                    t.add_row(r);
                }
                format!("{t}\n{}{footer}", notes(cells, &metric))
            }
        },
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
/// The lines naming what made the database host noisy during the runs (empty when nothing
/// did), each item after `bullet`.
pub fn host_warnings(r: &QueryResults, bullet: &str) -> String {
    if r.host_warnings.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\nwarnings on the database host during the runs (blocklab-agent doctor):\n");
    for w in &r.host_warnings {
        let indent = if bullet.is_empty() { "  " } else { bullet };
        out.push_str(&format!(
            "{indent}{} ({} of {} runs)\n",
            w.warning, w.runs, r.runs_done
        ));
    }
    out
}

/// `blocklab results` with every column and every statement (`--wide --statements`).
pub fn render_results(r: &QueryResults, format: Format) -> String {
    render_results_view(r, format, View::FULL)
}

/// The per-metric table for people: compact at the view's width, or every statistic.
fn metric_text(by_metric: &[MetricResults], title: &str, view: View) -> String {
    match view.width {
        Some(width) => compact::metric_table(by_metric, title, width),
        None => metrics::metric_table(by_metric, title),
    }
}

/// `blocklab results` laid out as `view` says (the table format; markdown takes only its
/// choice of statements; csv and json carry everything).
pub fn render_results_view(r: &QueryResults, format: Format, view: View) -> String {
    let footer = if r.catalog_path.is_empty() {
        String::new()
    } else {
        format!("catalog: {}\n", r.catalog_path)
    };
    let mut head = json!({ "job_id": r.job_id });
    if !r.by_metric.is_empty() {
        head["by_metric"] = by_metric_json(&r.by_metric);
    }
    if !r.own_workload.is_empty() {
        head["own_workload"] = own_json(&r.own_workload);
    }
    if let Some(s) = scaling_json(&r.cells) {
        head["scaling"] = s;
    }
    if let Some(race) = race::race_json(&r.cells) {
        head["races"] = race;
    }
    if let Some(s) = series::series_json(&r.cells) {
        head["series"] = s;
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
            csv(&all, &[("job_id", &r.job_id)]) + &own_csv(r)
        }
        Format::Table => {
            let body = render(&r.cells, format, false, head, &[], "", view);
            body + &view.wrap(&host_warnings(r, ""))
                + &view.wrap(&race::race_text(&r.cells, ""))
                + &view.wrap(&series::series_text(&r.cells, ""))
                + &view.wrap(&scaling_text(&r.cells, ""))
                + &metric_text(
                    &r.by_metric,
                    "per metric (each cell against its baseline cell)",
                    view,
                )
                + &own_text(&own::shown(&r.own_workload, view.builtin_statements), view)
                + &view.wrap(&footer)
        }
        Format::Markdown => {
            let mut body = render(&r.cells, format, false, head, &[], "", view);
            body.push_str(&host_warnings(r, "- "));
            body.push_str(&race::race_text(&r.cells, "- "));
            body.push_str(&series::series_text(&r.cells, "- "));
            body.push_str(&scaling_text(&r.cells, "- "));
            if !r.by_metric.is_empty() {
                let (h, rows) = metrics::metric_rows(&r.by_metric);
                body.push('\n');
                body.push_str(&markdown(&h, &rows));
            }
            let own = own::shown(&r.own_workload, view.builtin_statements);
            if !own.is_empty() {
                body.push_str("\n### Own workload\n\n");
                for (h, rows) in own_tables(&own) {
                    if !rows.is_empty() {
                        body.push_str(&markdown(&h, &rows));
                        body.push('\n');
                    }
                }
                body.push_str(OWN_NOTE);
            }
            body
        }
        Format::Json => render(&r.cells, format, false, head, &[], "", view),
    }
}

/// What the own-workload figures are, under their tables.
const OWN_NOTE: &str = "schedule lag: the median over the cell's runs of each run's mean lag behind \
     the rate, and the largest; late and skipped: transactions over the latency limit and \
     skipped for it, summed; per statement: count and failures summed, latency the median \
     over the runs of each run's average\n";

/// The own-workload table of the CSV: after a blank line, its own header and one line per
/// cell and statement.
fn own_csv(r: &QueryResults) -> String {
    if r.own_workload.is_empty() {
        return String::new();
    }
    let mut text = format!("\njob_id,{}\n", own::OWN_CSV_COLUMNS.join(","));
    for l in own::own_csv_rows(&r.own_workload) {
        let fields: Vec<String> = std::iter::once(r.job_id.clone())
            .chain(l)
            .map(|f| data::csv_field(&f))
            .collect();
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    text
}

/// The own-workload tables for the terminal: as comfy-table draws them, or plain tables
/// fitted to the view's width (a statement's command cut with `…` where it would not fit).
fn own_text(own: &[OwnWorkloadCell], view: View) -> String {
    if own.is_empty() {
        return String::new();
    }
    let mut out = String::from(if view.width.is_some() {
        "\nown workload\n"
    } else {
        "own workload\n"
    });
    for (h, rows) in own_tables(own) {
        if rows.is_empty() {
            continue;
        }
        match view.width {
            Some(width) => out.push_str(&own::fitted(h, rows, width)),
            None => {
                let mut t = comfy_table::Table::new();
                t.set_header(h);
                for r in rows {
                    t.add_row(r);
                }
                out.push_str(&format!("{t}\n"));
            }
        }
    }
    out + &view.wrap(OWN_NOTE)
}

/// `blocklab compare` with every column (`--wide`).
pub fn render_compare(r: &Comparison, format: Format) -> String {
    render_compare_view(r, format, View::FULL)
}

/// `blocklab compare`: each cell of job B against the like cell of job A, laid out as `view`
/// says.
pub fn render_compare_view(r: &Comparison, format: Format, view: View) -> String {
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
        view,
    );
    match format {
        Format::Table => {
            view.wrap(&head)
                + &body
                + &metric_text(
                    &r.by_metric,
                    "per metric (each cell of B against A's like cell)",
                    view,
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

#[cfg(test)]
mod tests;
