//! The client ladders of a job's results in text and JSON: each ladder's knee and its steps.

use blocklab_measure::job::CellResult;
use serde_json::{Value, json};

use crate::scaling::{Ladder, ladders, step_change};

/// What the knee is, under the ladders' lines.
pub const KNEE_RULE: &str = "knee: the client count at the top of the last step whose 95% CI of \
     the change (Welch, mean(k+1) - mean(k)) is above 0; the first rung when no step gained";

/// The ladders as lines after `bullet` (empty when the job has no client ladder).
pub fn scaling_text(cells: &[CellResult], bullet: &str) -> String {
    let all = ladders(cells);
    if all.is_empty() {
        return String::new();
    }
    let indent = if bullet.is_empty() { "  " } else { bullet };
    let mut out = String::from("\nscaling over clients:\n");
    for l in &all {
        out.push_str(&format!("{indent}{}\n", l.sentence()));
        let steps: Vec<String> = l
            .steps
            .iter()
            .map(|s| {
                format!(
                    "{}→{} {}{}",
                    s.from,
                    s.to,
                    step_change(s),
                    if s.gained { " gained" } else { "" }
                )
            })
            .collect();
        out.push_str(&format!("{indent}  steps: {}\n", steps.join("; ")));
    }
    out.push_str(&format!("({KNEE_RULE})\n"));
    out
}

fn ladder_json(l: &Ladder) -> Value {
    let opt = |v: Option<f64>| v.map_or(Value::Null, |v| json!(v));
    json!({
        "series": l.series,
        "block_size_kb": l.block_size_kb,
        "metric": l.metric,
        "knee_clients": l.knee,
        "rungs": l.rungs.iter().map(|r| json!({
            "clients": r.clients,
            "cell": r.label,
            "n": r.n,
            "mean": r.mean,
            "ci95_low": r.ci95_low,
            "ci95_high": r.ci95_high,
        })).collect::<Vec<_>>(),
        "steps": l.steps.iter().map(|s| json!({
            "from_clients": s.from,
            "to_clients": s.to,
            "diff": s.diff,
            "diff_ci95_low": opt(s.diff_ci95.map(|c| c.0)),
            "diff_ci95_high": opt(s.diff_ci95.map(|c| c.1)),
            "pct_change": opt(s.pct),
            "pct_change_ci95_low": opt(s.pct_ci95.map(|c| c.0)),
            "pct_change_ci95_high": opt(s.pct_ci95.map(|c| c.1)),
            "gained": s.gained,
        })).collect::<Vec<_>>(),
    })
}

/// The ladders as a JSON array (`None` when there are none).
pub fn scaling_json(cells: &[CellResult]) -> Option<Value> {
    let all = ladders(cells);
    (!all.is_empty()).then(|| Value::Array(all.iter().map(ladder_json).collect()))
}
