//! The renderings for programs: each cell as a JSON object, and CSV with the same fields.

use blocklab_measure::job::*;
use serde_json::{Value, json};

fn opt(v: Option<f64>) -> Value {
    v.map_or(Value::Null, |v| json!(v))
}

/// A selection's statistics as a JSON object (the `all_runs` field).
fn stats_json(s: &CellStats) -> Value {
    let some = |b: bool, v: f64| if b { json!(v) } else { Value::Null };
    json!({
        "n": s.n,
        "mean": some(s.n > 0, s.mean),
        "stddev": some(s.n > 1, s.stddev),
        "cv": some(s.n > 1, s.cv),
        "ci95_low": some(s.n > 1, s.ci95_low),
        "ci95_high": some(s.n > 1, s.ci95_high),
        "ci95_half_width_pct": opt(s.ci95_half_width_pct),
        "baseline_mean": opt(s.baseline_mean),
        "pct_change": opt(s.pct_change_vs_baseline),
        "pct_change_ci95_low": opt(s.pct_change_ci95_low),
        "pct_change_ci95_high": opt(s.pct_change_ci95_high),
        "pct_change_ci90_low": opt(s.pct_change_ci90_low),
        "pct_change_ci90_high": opt(s.pct_change_ci90_high),
        "p_value": opt(s.p_value),
        "q_value": opt(s.q_value),
        "tost_p_value": opt(s.tost_p_value),
        "tost_q_value": opt(s.tost_q_value),
        "welch_df": opt(s.welch_df),
        "model": if s.model.is_empty() { Value::Null } else { json!(s.model) },
        "mde_pct": opt(s.mde_pct),
        "extra_rounds": s.extra_rounds,
        "extra_rounds_cannot": s.extra_rounds_cannot,
        "zero_variance": s.zero_variance,
        "verdict": s.verdict,
    })
}

/// One cell as a JSON object (numbers unrounded; absent values are null).
pub fn cell_json(c: &CellResult) -> Value {
    let some = |b: bool, v: f64| if b { json!(v) } else { Value::Null };
    let text = |s: &str| {
        if s.is_empty() { Value::Null } else { json!(s) }
    };
    let mut v = json!({
        "cell": c.label,
        "cell_index": c.cell_index,
        "block_size_kb": c.block_size_kb,
        "wal_block_size_kb": c.wal_block_size_kb,
        "block_size": c.proven_block_size,
        "wal_block_size": c.proven_wal_block_size,
        "clients": c.clients,
        "dims": serde_json::from_str::<Value>(&c.dims_json).unwrap_or_default(),
        "is_baseline": c.is_baseline,
        "baseline": c.baseline_label,
        "baseline_cell_index": c.baseline_cell_index,
        "compared_on": text(&c.compared_on),
        "replicate": c.replicate,
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
    });
    let comparison = json!({
        "ci95_half_width_pct": opt(c.ci95_half_width_pct),
        "target_ci_pct": opt(c.target_ci_pct),
        "target_status": text(&c.target_status),
        "pct_change": opt(c.pct_change_vs_baseline),
        "pct_change_ci95_low": opt(c.pct_change_ci95_low),
        "pct_change_ci95_high": opt(c.pct_change_ci95_high),
        "pct_change_ci90_low": opt(c.pct_change_ci90_low),
        "pct_change_ci90_high": opt(c.pct_change_ci90_high),
        "p_value": opt(c.p_value),
        "q_value": opt(c.q_value),
        "equivalence_pct": c.equivalence_pct,
        "tost_p_value": opt(c.tost_p_value),
        "tost_q_value": opt(c.tost_q_value),
        "welch_df": opt(c.welch_df),
        "model": text(&c.model),
        "mde_pct": opt(c.mde_pct),
        "extra_rounds": c.extra_rounds,
        "extra_rounds_cannot": c.extra_rounds_cannot,
        "zero_variance": c.zero_variance,
        "verdict": c.verdict,
        "runs_suspect": c.runs_suspect,
        "runs_excluded": c.runs_excluded,
        "suspect_included": c.suspect_included,
        "suspect_reasons": c.suspect_reasons,
        "held_constant": text(&c.held_constant),
        "all_runs": c.all_runs.as_ref().map_or(Value::Null, stats_json),
        "hosts": c.hosts.iter().map(|h| json!({
            "host_id": h.host_id,
            "n": h.n,
            "mean": h.mean,
            "pct_change_vs_baseline": opt(h.pct_change_vs_baseline),
        })).collect::<Vec<_>>(),
    });
    if let (Value::Object(m), Value::Object(more)) = (&mut v, comparison) {
        m.extend(more);
    }
    v
}

pub fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// CSV columns, in order: the keys of [`cell_json`] except `dims`, with `all_runs`'s fields
/// flattened as `all_runs_<field>`.
const CSV_COLUMNS: [&str; 51] = [
    "cell",
    "cell_index",
    "block_size_kb",
    "wal_block_size_kb",
    "block_size",
    "wal_block_size",
    "clients",
    "is_baseline",
    "baseline",
    "baseline_cell_index",
    "compared_on",
    "replicate",
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
    "ci95_half_width_pct",
    "target_ci_pct",
    "target_status",
    "pct_change",
    "pct_change_ci95_low",
    "pct_change_ci95_high",
    "pct_change_ci90_low",
    "pct_change_ci90_high",
    "p_value",
    "q_value",
    "equivalence_pct",
    "tost_p_value",
    "tost_q_value",
    "welch_df",
    "model",
    "mde_pct",
    "extra_rounds",
    "extra_rounds_cannot",
    "zero_variance",
    "verdict",
    "runs_suspect",
    "runs_excluded",
    "suspect_included",
    "suspect_reasons",
    "held_constant",
    "all_runs_n",
    "all_runs_mean",
];

/// The all-runs fields CSV carries beyond n and mean.
const CSV_ALL_RUNS: [&str; 6] = [
    "pct_change",
    "pct_change_ci95_low",
    "pct_change_ci95_high",
    "p_value",
    "q_value",
    "verdict",
];

fn field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// CSV: one line per cell, the JSON fields as columns (unrounded numbers).
pub(super) fn csv(cells: &[CellResult], prefix: &[(&str, &str)]) -> String {
    let columns: Vec<String> = CSV_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(CSV_ALL_RUNS.iter().map(|c| format!("all_runs_{c}")))
        .collect();
    let mut out: Vec<String> = prefix.iter().map(|(k, _)| k.to_string()).collect();
    out.extend(columns.iter().cloned());
    let mut text = out.join(",") + "\n";
    for c in cells {
        let r = cell_json(c);
        let mut line: Vec<String> = prefix.iter().map(|(_, v)| csv_field(v)).collect();
        for k in &columns {
            let v = match k.strip_prefix("all_runs_") {
                Some(inner) => &r["all_runs"][inner],
                None => &r[k.as_str()],
            };
            line.push(csv_field(&field(v)));
        }
        text.push_str(&line.join(","));
        text.push('\n');
    }
    text
}
