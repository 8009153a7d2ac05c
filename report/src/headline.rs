//! A job's headline comparison in one line, as the dashboard's job list shows it: a race's
//! best against the default; a job with one compared cell, that cell against its baseline;
//! with several, the one with the strongest evidence (the smallest q-value) and how the
//! others came out.

use std::collections::BTreeMap;

use blocklab_measure::job::CellResult;

use crate::format::pct;
use crate::render::{BestVsDefault, best_vs_default};

fn change(c: &CellResult) -> String {
    let interval = match (c.pct_change_ci95_low, c.pct_change_ci95_high) {
        (Some(l), Some(h)) => format!(" [{}, {}]", pct(l), pct(h)),
        _ => String::new(),
    };
    format!(
        "{}: {}{interval} {}",
        c.label,
        c.pct_change_vs_baseline
            .map(pct)
            .unwrap_or_else(|| "-".into()),
        c.verdict
    )
}

/// The headline line of a job's cells of its headline metric; empty without a comparison.
pub fn headline(cells: &[CellResult]) -> String {
    let is_best = |c: &&CellResult| c.race.as_ref().is_some_and(|r| r.standing == "best");
    if let Some(best) = cells.iter().find(is_best) {
        let default = &best.race.as_ref().expect("raced").default_label;
        let race: Vec<&CellResult> = cells
            .iter()
            .filter(|c| c.race.as_ref().is_some_and(|r| &r.default_label == default))
            .collect();
        return match best_vs_default(&race) {
            Some(BestVsDefault::DefaultIsBest) => {
                format!("race: the default {} is the best", best.label)
            }
            Some(BestVsDefault::Change {
                pct: p,
                ci95: (l, h),
                verdict,
            }) => format!(
                "race: best {}: {} [{}, {}] against the default {default}, {verdict}",
                best.label,
                pct(p),
                pct(l),
                pct(h)
            ),
            None => format!("race: best {} so far", best.label),
        };
    }
    let compared: Vec<&CellResult> = cells
        .iter()
        .filter(|c| !c.is_baseline && c.baseline_cell_index.is_some() && c.n > 0)
        .collect();
    let Some(lead) = compared.iter().min_by(|a, b| {
        let q = |c: &CellResult| c.q_value.unwrap_or(f64::INFINITY);
        q(a).total_cmp(&q(b))
    }) else {
        return String::new();
    };
    if compared.len() == 1 {
        return change(lead);
    }
    let mut others: BTreeMap<&str, usize> = BTreeMap::new();
    for c in compared.iter().filter(|c| c.cell_index != lead.cell_index) {
        *others.entry(c.verdict.as_str()).or_default() += 1;
    }
    let others: Vec<String> = others.iter().map(|(v, n)| format!("{n} {v}")).collect();
    format!(
        "{} (+{} more: {})",
        change(lead),
        compared.len() - 1,
        others.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::job::RaceStanding;

    fn cell(i: u32, label: &str, verdict: &str, q: Option<f64>, change: f64) -> CellResult {
        CellResult {
            cell_index: i,
            label: label.into(),
            is_baseline: i == 0,
            baseline_cell_index: (i > 0).then_some(0),
            n: 3,
            verdict: verdict.into(),
            q_value: q,
            pct_change_vs_baseline: (i > 0).then_some(change),
            pct_change_ci95_low: (i > 0).then_some(change - 2.0),
            pct_change_ci95_high: (i > 0).then_some(change + 2.0),
            ..Default::default()
        }
    }

    #[test]
    fn one_comparison_is_the_headline() {
        let cells = [
            cell(0, "8K", "baseline", None, 0.0),
            cell(1, "16K", "inconclusive", Some(0.4), -0.4),
        ];
        assert_eq!(headline(&cells), "16K: -0.4% [-2.4%, +1.6%] inconclusive");
        assert_eq!(headline(&cells[..1]), "");
    }

    #[test]
    fn of_several_the_strongest_evidence_leads() {
        let cells = [
            cell(0, "8K", "baseline", None, 0.0),
            cell(1, "4K", "inconclusive", Some(0.3), 1.0),
            cell(2, "16K", "slower", Some(0.01), -6.0),
            cell(3, "32K", "inconclusive", None, 2.0),
        ];
        assert_eq!(
            headline(&cells),
            "16K: -6.0% [-8.0%, -4.0%] slower (+2 more: 2 inconclusive)"
        );
    }

    #[test]
    fn a_race_is_headed_by_its_best_against_the_default() {
        let raced = |standing: &str, vs: Option<(f64, f64, f64)>| RaceStanding {
            standing: standing.into(),
            vs_best_pct: vs.map(|v| v.0),
            vs_best_ci95_low: vs.map(|v| v.1),
            vs_best_ci95_high: vs.map(|v| v.2),
            default_label: "8K".into(),
            ..Default::default()
        };
        let mut cells = vec![
            cell(0, "8K", "baseline", None, 0.0),
            cell(1, "16K", "faster", Some(0.01), 4.0),
        ];
        cells[0].equivalence_pct = 2.0;
        // The default 20% [15%, 25%] behind the best: the best 1/0.8 = +25% ahead of it, the
        // interval turned over (1/0.85, 1/0.75); not the cell's own +4% against its baseline.
        cells[0].race = Some(raced("default, beaten", Some((-20.0, -25.0, -15.0))));
        cells[1].race = Some(raced("best", None));
        assert_eq!(
            headline(&cells),
            "race: best 16K: +25.0% [+17.6%, +33.3%] against the default 8K, better beyond the band"
        );
        cells[0].race = Some(raced("in the best set", Some((-1.0, -1.5, -0.5))));
        assert_eq!(
            headline(&cells),
            "race: best 16K: +1.0% [+0.5%, +1.5%] against the default 8K, equivalent within ±2%"
        );
        cells[0].race = Some(raced("racing", Some((-5.0, -12.0, 2.0))));
        assert!(
            headline(&cells).ends_with(", undecided"),
            "{}",
            headline(&cells)
        );
        cells[1].race = Some(raced("racing", Some((-3.0, -5.0, -1.0))));
        cells[0].race = Some(raced("best", None));
        assert_eq!(headline(&cells), "race: the default 8K is the best");
    }
}
