//! A racing job's races in text and JSON (one per group of cells sharing a default): how each
//! ended, the best set, each dropped cell with the round it left and its change against the
//! best, the best against the default, and the runs spent against a full grid of the same
//! rounds.

use blocklab_measure::job::CellResult;
use serde_json::{Value, json};

use crate::format::{cell_metric, num, p_value, pct};

fn interval(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(l), Some(h)) => format!(" [{}, {}]", pct(l), pct(h)),
        _ => String::new(),
    }
}

/// The best of a race against its default, from the race's own comparison of the default
/// with the best (round-blocked, on the log scale, at the last look), turned around: the
/// default's cell is the race's default (the root of the group's baselines), not the best
/// cell's own baseline, which under settings variants is its variant's default.
#[derive(Debug, Clone, PartialEq)]
pub enum BestVsDefault {
    DefaultIsBest,
    Change {
        /// The best against the default, in %, and its 95% CI.
        pct: f64,
        ci95: (f64, f64),
        /// "better beyond the band" (the default is beaten), "equivalent within ±X%" (the
        /// default is in the best set) or "undecided" (the default still races).
        verdict: String,
    },
}

/// `raced`: the cells of one race. `None` while the race has no best (or its default has no
/// comparison with it yet).
pub fn best_vs_default(raced: &[&CellResult]) -> Option<BestVsDefault> {
    let default_label = &raced.first()?.race.as_ref()?.default_label;
    let default = raced.iter().find(|c| &c.label == default_label)?;
    let d = default.race.as_ref()?;
    if d.standing == "best" {
        return Some(BestVsDefault::DefaultIsBest);
    }
    let (p, l, h) = (d.vs_best_pct?, d.vs_best_ci95_low?, d.vs_best_ci95_high?);
    // default / best = 1 + p/100, so best / default = 1 / (1 + p/100); the interval turns over.
    let turn = |x: f64| 100.0 * (1.0 / (1.0 + x / 100.0) - 1.0);
    let verdict = match d.standing.as_str() {
        "default, beaten" => "better beyond the band".to_string(),
        "in the best set" => format!("equivalent within ±{}%", default.equivalence_pct),
        _ => "undecided".to_string(),
    };
    Some(BestVsDefault::Change {
        pct: turn(p),
        ci95: (turn(h), turn(l)),
        verdict,
    })
}

/// The cells that raced, by race (the default's label), in the order of the cells.
fn groups(cells: &[CellResult]) -> Vec<(&str, Vec<&CellResult>)> {
    let mut out: Vec<(&str, Vec<&CellResult>)> = Vec::new();
    for c in cells {
        let Some(r) = &c.race else { continue };
        match out.iter_mut().find(|(d, _)| *d == r.default_label) {
            Some((_, g)) => g.push(c),
            None => out.push((r.default_label.as_str(), vec![c])),
        }
    }
    out
}

/// The races' lines after `bullet` (empty unless the cells raced).
pub fn race_text(cells: &[CellResult], bullet: &str) -> String {
    let groups = groups(cells);
    let many = groups.len() > 1;
    groups
        .iter()
        .map(|(default, raced)| group_text(raced, default, many, bullet))
        .collect()
}

fn group_text(raced: &[&CellResult], default: &str, many: bool, bullet: &str) -> String {
    let Some(first) = raced.first().and_then(|c| c.race.as_ref()) else {
        return String::new();
    };
    let indent = if bullet.is_empty() { "  " } else { bullet };
    let metric = cell_metric(raced[0]);
    let mut out = format!(
        "\nrace on {}{} ({} better): {}\n",
        raced[0].metric,
        if many {
            format!(" among the cells of default {default}")
        } else {
            String::new()
        },
        if raced[0].higher_is_better {
            "higher"
        } else {
            "lower"
        },
        first.end
    );
    fn standing<'a>(c: &&'a CellResult) -> &'a str {
        c.race.as_ref().map_or("", |r| r.standing.as_str())
    }
    if let Some(best) = raced.iter().find(|c| standing(c) == "best") {
        out.push_str(&format!(
            "{indent}best: {} ({} {})\n",
            best.label,
            num(&metric, best.mean),
            best.unit
        ));
    }
    let set: Vec<String> = raced
        .iter()
        .filter(|c| standing(c) == "in the best set")
        .map(|c| {
            let r = c.race.as_ref().expect("raced");
            format!(
                "{} {}{}",
                c.label,
                r.vs_best_pct.map(pct).unwrap_or_default(),
                interval(r.vs_best_ci95_low, r.vs_best_ci95_high)
            )
        })
        .collect();
    if !set.is_empty() {
        out.push_str(&format!(
            "{indent}equivalent to the best (within ±{}%): {}\n",
            raced[0].equivalence_pct,
            set.join("; ")
        ));
    }
    for c in raced {
        let r = c.race.as_ref().expect("raced");
        if matches!(r.standing.as_str(), "best" | "in the best set") {
            continue;
        }
        out.push_str(&format!(
            "{indent}{}: {}, {}{} vs {}{}\n",
            c.label,
            r.standing,
            r.vs_best_pct.map(pct).unwrap_or_default(),
            interval(r.vs_best_ci95_low, r.vs_best_ci95_high),
            r.best_label,
            r.vs_best_p_worse
                .map(|p| format!(" (p worse {})", p_value(p)))
                .unwrap_or_default()
        ));
    }
    match best_vs_default(raced) {
        Some(BestVsDefault::DefaultIsBest) => {
            out.push_str(&format!("{indent}the default is the best\n"));
        }
        Some(BestVsDefault::Change {
            pct: p,
            ci95: (l, h),
            verdict,
        }) => out.push_str(&format!(
            "{indent}best against the default ({default}): {} [{}, {}], {verdict}\n",
            pct(p),
            pct(l),
            pct(h)
        )),
        None => {}
    }
    let share = if first.full_grid_runs > 0 {
        format!(
            " ({:.0}%)",
            100.0 * f64::from(first.runs_spent) / f64::from(first.full_grid_runs)
        )
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{indent}runs: {} of the {} a full grid of {} rounds takes{share}\n",
        first.runs_spent, first.full_grid_runs, first.rounds
    ));
    out
}

/// The races in the results' JSON: each with its default, end, rounds and runs, and each
/// cell's standing; `None` unless the cells raced.
pub fn race_json(cells: &[CellResult]) -> Option<Value> {
    let groups = groups(cells);
    if groups.is_empty() {
        return None;
    }
    Some(Value::Array(
        groups
            .iter()
            .map(|(default, raced)| group_json(raced, default))
            .collect(),
    ))
}

fn group_json(cells: &[&CellResult], default: &str) -> Value {
    let first = cells[0].race.as_ref().expect("raced");
    let standings: Vec<Value> = cells
        .iter()
        .filter_map(|c| {
            let r = c.race.as_ref()?;
            Some(json!({
                "cell_index": c.cell_index,
                "label": c.label,
                "is_default": c.label == default,
                "standing": r.standing,
                "dropped_round": r.dropped_round,
                "vs_best_pct": r.vs_best_pct,
                "vs_best_ci95": [r.vs_best_ci95_low, r.vs_best_ci95_high],
                "vs_best_p_worse": r.vs_best_p_worse,
                "best": r.best_label,
            }))
        })
        .collect();
    let best_vs_default = match best_vs_default(cells) {
        Some(BestVsDefault::DefaultIsBest) => json!({ "default_is_best": true }),
        Some(BestVsDefault::Change { pct, ci95, verdict }) => json!({
            "default_is_best": false,
            "pct": pct,
            "ci95": [ci95.0, ci95.1],
            "verdict": verdict,
        }),
        None => Value::Null,
    };
    json!({
        "default": default,
        "best_vs_default": best_vs_default,
        "metric": cells[0].metric,
        "end": first.end,
        "rounds": first.rounds,
        "runs_spent": first.runs_spent,
        "full_grid_runs": first.full_grid_runs,
        "cells": standings,
    })
}
