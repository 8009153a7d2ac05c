//! A series job (`kind = "series"`) in text and JSON: each comparison it measured at every
//! point (the same page-size change within each source), followed over the points in the
//! series' order, with the change points of its effect.
//!
//! The effect at a point is the comparison's change against its baseline as the job's
//! analysis estimated it (round-blocked where rounds are blocks), with its 95% interval and
//! verdict. The change points are those of E-Divisive means with a permutation test
//! ([`crate::stats::changepoint`], seeded, so the same runs give the same points) over the
//! effects' log ratios `ln(1 + change)`: a shift of the effect itself, whatever the levels of
//! the two cells did. The permutation test sees each point's estimate, not its interval; each
//! split it finds must also differ by more than the points' measurement noise (the points'
//! standard errors, from their intervals and degrees of freedom, [`crate::stats::changepoint::measured`]).
//! A split that passes the first test only is shown as what more runs per point would decide.

use blocklab_measure::job::CellResult;
use serde_json::{Value, json};

use crate::format::{p_value, pct};
use crate::stats::changepoint::{ChangePoint, Options, Precision, e_divisive_measured, pct_of_log};

/// One comparison at one point.
struct Point<'a> {
    point: u32,
    source: String,
    cell: &'a CellResult,
}

/// A split the permutation test found and the measurement check did not confirm.
struct WithinNoise {
    after_source: String,
    at_source: String,
    /// The pooled effects either side, as % changes.
    before_pct: f64,
    after_pct: f64,
    p_value: f64,
    measured_p_value: f64,
}

/// One comparison over the series.
struct Series<'a> {
    /// The comparison without its source (`wal=4K c=1 vs wal=8K c=1`).
    comparison: String,
    points: Vec<Point<'a>>,
    change_points: Vec<ChangePoint>,
    /// The search's last candidate when the permutation test found it but the points'
    /// measurement noise covers it.
    within_noise: Option<WithinNoise>,
    /// Why no change point could be looked for.
    not_searched: Option<String>,
}

fn source_of(c: &CellResult) -> String {
    serde_json::from_str::<Value>(&c.dims_json)
        .ok()
        .and_then(|d| d.get("source").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// The comparisons of a series job, each with its points in order (empty for another job).
fn series(cells: &[CellResult]) -> Vec<Series<'_>> {
    let mut out: Vec<Series> = Vec::new();
    for c in cells {
        let (Some(point), Some(_)) = (c.series_point, c.pct_change_vs_baseline) else {
            continue;
        };
        if c.is_baseline {
            continue;
        }
        let comparison = crate::bisect::comparison(c);
        let p = Point {
            point,
            source: source_of(c),
            cell: c,
        };
        match out.iter_mut().find(|s| s.comparison == comparison) {
            Some(s) => s.points.push(p),
            None => out.push(Series {
                comparison,
                points: vec![p],
                change_points: Vec::new(),
                within_noise: None,
                not_searched: None,
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by_key(|p| p.point);
        let effects: Vec<f64> = s
            .points
            .iter()
            .map(|p| (1.0 + p.cell.pct_change_vs_baseline.unwrap_or(0.0) / 100.0).ln())
            .collect();
        let precision: Vec<Precision> = s.points.iter().map(|p| precision(p.cell)).collect();
        let options = Options::default();
        match e_divisive_measured(&effects, Some(&precision), &options) {
            Ok(d) => {
                s.within_noise = d
                    .levels
                    .last()
                    .filter(|l| !l.significant && l.p_value <= options.sig_level)
                    .and_then(|l| {
                        let m = l.measured?;
                        let at = l.candidate().index;
                        Some(WithinNoise {
                            after_source: s.points[at - 1].source.clone(),
                            at_source: s.points[at].source.clone(),
                            before_pct: pct_of_log(m.mean_before),
                            after_pct: pct_of_log(m.mean_after),
                            p_value: l.p_value,
                            measured_p_value: m.p_value,
                        })
                    });
                s.change_points = d.change_points;
            }
            Err(e) => s.not_searched = Some(e.to_string()),
        }
    }
    out
}

/// A point's standard error on the log scale, from its 95% interval and degrees of freedom
/// (`NaN` when it has neither).
fn precision(c: &CellResult) -> Precision {
    match (c.pct_change_ci95_low, c.pct_change_ci95_high, c.welch_df) {
        (Some(low), Some(high), Some(df)) => Precision::from_interval(low, high, df),
        _ => Precision {
            se: f64::NAN,
            df: f64::NAN,
        },
    }
}

/// About the smallest p-value the permutation test can give over `n` points: a clean step
/// between two halves is matched by the shuffles that keep the halves apart, 2 of the
/// `C(n, n/2)` ways to choose one half.
fn best_p(n: usize) -> f64 {
    let k = n / 2;
    let ways = (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    (2.0 / ways).min(1.0)
}

/// What a candidate inside the points' noise was, and what would decide it.
fn noise_text(w: &WithinNoise) -> String {
    format!(
        ": the shift between {} and {} ({} -> {}, p {} over the points' order) is within the points' measurement noise (p {}); more runs per point would decide it",
        w.after_source,
        w.at_source,
        pct(w.before_pct),
        pct(w.after_pct),
        p_value(w.p_value),
        p_value(w.measured_p_value),
    )
}

fn interval(c: &CellResult) -> String {
    match (c.pct_change_ci95_low, c.pct_change_ci95_high) {
        (Some(l), Some(h)) => format!(" [{}, {}]", pct(l), pct(h)),
        _ => String::new(),
    }
}

/// The series' lines after `bullet` (empty unless the job is a series).
pub fn series_text(cells: &[CellResult], bullet: &str) -> String {
    let indent = if bullet.is_empty() { "  " } else { bullet };
    let mut out = String::new();
    for s in series(cells) {
        let metric = &s.points[0].cell.metric;
        out.push_str(&format!(
            "\nseries of {metric}: {} over {} points\n",
            s.comparison,
            s.points.len()
        ));
        for p in &s.points {
            let c = p.cell;
            out.push_str(&format!(
                "{indent}{}: {}{} {} (n {})\n",
                p.source,
                pct(c.pct_change_vs_baseline.unwrap_or(0.0)),
                interval(c),
                c.verdict,
                c.n
            ));
        }
        if let Some(why) = &s.not_searched {
            out.push_str(&format!("{indent}change points not searched: {why}\n"));
        } else if let (true, Some(w)) = (s.change_points.is_empty(), &s.within_noise) {
            out.push_str(&format!("{indent}change points: none{}\n", noise_text(w)));
        } else if s.change_points.is_empty() {
            let best = best_p(s.points.len());
            out.push_str(&format!(
                "{indent}change points: none at p <= 0.05 (E-Divisive means, 999 permutations){}\n",
                if best > 0.05 {
                    format!(
                        "; {} points cannot show one (a clean step reaches p ~ {best:.2} at best): measure more points",
                        s.points.len()
                    )
                } else {
                    String::new()
                }
            ));
        }
        for cp in &s.change_points {
            let at = &s.points[cp.index];
            let before = &s.points[cp.index - 1];
            out.push_str(&format!(
                "{indent}change point between {} and {}: the effect {} -> {} ({} in the ratio), p {}{}\n",
                before.source,
                at.source,
                pct(cp.before_pct()),
                pct(cp.after_pct()),
                pct(cp.magnitude_pct()),
                p_value(cp.p_value),
                cp.measured_p
                    .map(|m| format!(", beyond the points' noise at p {}", p_value(m)))
                    .unwrap_or_default()
            ));
        }
        if let (false, Some(w)) = (s.change_points.is_empty(), &s.within_noise) {
            out.push_str(&format!(
                "{indent}no further change point{}\n",
                noise_text(w)
            ));
        }
    }
    out
}

/// The series in the results' JSON (`None` unless the job is a series).
pub fn series_json(cells: &[CellResult]) -> Option<Value> {
    let all = series(cells);
    if all.is_empty() {
        return None;
    }
    let items: Vec<Value> = all
        .iter()
        .map(|s| {
            json!({
                "comparison": s.comparison,
                "metric": s.points[0].cell.metric,
                "points": s.points.iter().map(|p| json!({
                    "point": p.point,
                    "source": p.source,
                    "cell_index": p.cell.cell_index,
                    "pct_change": p.cell.pct_change_vs_baseline,
                    "pct_change_ci95_low": p.cell.pct_change_ci95_low,
                    "pct_change_ci95_high": p.cell.pct_change_ci95_high,
                    "verdict": p.cell.verdict,
                    "n": p.cell.n,
                })).collect::<Vec<_>>(),
                "change_points": s.change_points.iter().map(|cp| json!({
                    "after_source": s.points[cp.index - 1].source,
                    "at_source": s.points[cp.index].source,
                    "at_point": s.points[cp.index].point,
                    "before_pct": cp.before_pct(),
                    "after_pct": cp.after_pct(),
                    "magnitude_pct": cp.magnitude_pct(),
                    "p_value": cp.p_value,
                    "measured_p_value": cp.measured_p,
                })).collect::<Vec<_>>(),
                "within_noise": s.within_noise.as_ref().map(|w| json!({
                    "after_source": w.after_source,
                    "at_source": w.at_source,
                    "before_pct": w.before_pct,
                    "after_pct": w.after_pct,
                    "p_value": w.p_value,
                    "measured_p_value": w.measured_p_value,
                })),
                "not_searched": s.not_searched,
            })
        })
        .collect();
    Some(Value::Array(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(index: u32, source: &str, point: u32, change: f64) -> CellResult {
        CellResult {
            cell_index: index,
            label: format!("src={source} bs=8K wal=4K c=1"),
            baseline_label: format!("src={source} bs=8K wal=8K c=1"),
            dims_json: format!("{{\"source\":\"{source}\"}}"),
            metric: "tps".into(),
            pct_change_vs_baseline: Some(change),
            pct_change_ci95_low: Some(change - 1.0),
            pct_change_ci95_high: Some(change + 1.0),
            verdict: if change > 1.0 { "faster" } else { "equivalent" }.into(),
            n: 3,
            welch_df: Some(4.0),
            series_point: Some(point),
            ..Default::default()
        }
    }

    fn baseline(index: u32, source: &str, point: u32) -> CellResult {
        CellResult {
            cell_index: index,
            label: format!("src={source} bs=8K wal=8K c=1"),
            is_baseline: true,
            series_point: Some(point),
            ..Default::default()
        }
    }

    /// Eight points, the effect +0.2% .. +0.5% for four, then +12% .. +12.4%: one change point,
    /// between c4 and c5, found by the permutation test at its best reachable level.
    #[test]
    fn a_step_in_the_effect_is_found_between_the_right_points() {
        let changes = [0.3, 0.2, 0.5, 0.4, 12.1, 12.4, 12.0, 12.2];
        let mut cells = Vec::new();
        // Listed out of order: the series' order is the points', not the cells'.
        for (i, c) in changes.iter().enumerate().rev() {
            let src = format!("c{}", i + 1);
            cells.push(baseline(100 + i as u32, &src, i as u32));
            cells.push(cell(i as u32, &src, i as u32, *c));
        }
        let all = series(&cells);
        assert_eq!(all.len(), 1);
        let s = &all[0];
        assert_eq!(s.comparison, "bs=8K wal=4K c=1 vs bs=8K wal=8K c=1");
        let order: Vec<&str> = s.points.iter().map(|p| p.source.as_str()).collect();
        assert_eq!(order, ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]);
        assert_eq!(s.change_points.len(), 1, "{:?}", s.change_points);
        let cp = &s.change_points[0];
        assert_eq!(cp.index, 4);
        // 2 of the 70 ways to split 8 points into halves keep the halves apart.
        assert!(cp.p_value <= 0.05, "{}", cp.p_value);
        let text = series_text(&cells, "");
        eprintln!("{text}");
        assert!(
            text.contains("series of tps: bs=8K wal=4K c=1 vs bs=8K wal=8K c=1 over 8 points\n"),
            "{text}"
        );
        assert!(
            text.contains("  c1: +0.3% [-0.7%, +1.3%] equivalent (n 3)\n"),
            "{text}"
        );
        assert!(
            text.contains("change point between c4 and c5: the effect +0.3% -> +12.2%"),
            "{text}"
        );
        let json = series_json(&cells).expect("a series");
        assert_eq!(json[0]["change_points"][0]["at_source"], "c5");
        assert_eq!(json[0]["points"].as_array().map(Vec::len), Some(8));
    }

    /// The known-answer series of the end-to-end `bisect` test, as one noisy run measured it:
    /// the step at point 5 is a change point, confirmed beyond the points' noise; the
    /// permutation test's second split, at point 2, is shown as within the noise.
    #[test]
    fn a_split_within_the_noise_says_what_would_decide_it() {
        let cells: Vec<CellResult> = crate::stats::changepoint::measured::tests::KNOWN_ANSWER
            .iter()
            .enumerate()
            .map(|(i, &(change, low, high))| CellResult {
                pct_change_ci95_low: Some(low),
                pct_change_ci95_high: Some(high),
                ..cell(i as u32, &format!("p{i:02}"), i as u32, change)
            })
            .collect();
        let text = series_text(&cells, "");
        eprintln!("{text}");
        assert!(
            text.contains("  change point between p04 and p05: the effect +1.3% -> -26.9% (-27.8% in the ratio), p 0.004, beyond the points' noise at p <0.001\n"),
            "{text}"
        );
        assert!(
            text.contains("  no further change point: the shift between p01 and p02 (+6.3% -> -2.4%, p 0.038 over the points' order) is within the points' measurement noise (p 0.269); more runs per point would decide it\n"),
            "{text}"
        );
        let json = series_json(&cells).expect("a series");
        let s = &json[0];
        assert_eq!(s["change_points"].as_array().map(Vec::len), Some(1));
        assert_eq!(s["change_points"][0]["at_source"], "p05");
        assert_eq!(s["within_noise"]["at_source"], "p02");
        let p = s["within_noise"]["measured_p_value"].as_f64().unwrap();
        assert!((p - 4.0 * 0.06728388140189728).abs() < 1e-9, "{p}");
    }

    /// Six points with the same step: no split can reach p <= 0.05, and the text says why.
    #[test]
    fn too_few_points_say_so() {
        let changes = [0.3, 0.2, 0.5, 12.1, 12.4, 12.0];
        let cells: Vec<CellResult> = changes
            .iter()
            .enumerate()
            .map(|(i, c)| cell(i as u32, &format!("c{}", i + 1), i as u32, *c))
            .collect();
        assert!(series(&cells)[0].change_points.is_empty());
        assert!((best_p(6) - 0.1).abs() < 1e-12);
        assert!((best_p(8) - 2.0 / 70.0).abs() < 1e-12);
        let text = series_text(&cells, "- ");
        assert!(
            text.contains("- change points: none at p <= 0.05 (E-Divisive means, 999 permutations); 6 points cannot show one (a clean step reaches p ~ 0.10 at best): measure more points\n"),
            "{text}"
        );
    }

    #[test]
    fn a_job_that_is_not_a_series_has_no_series() {
        let mut c = cell(0, "pg15", 0, 3.0);
        c.series_point = None;
        assert_eq!(series_text(&[c.clone()], ""), "");
        assert_eq!(series_json(&[c]), None);
    }
}
