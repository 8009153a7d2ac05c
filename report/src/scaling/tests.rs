//! The knee rule on hand-built ladders where one answer is right.

use super::*;
use crate::stats::summarize;

/// A cell of `tps` at `clients` from its runs, with the statistics the analysis gives it.
fn cell(bs: u32, clients: u32, runs: &[f64]) -> CellResult {
    let s = summarize(runs).expect("runs");
    let (lo, hi) = s.ci95.unwrap_or((s.mean, s.mean));
    CellResult {
        label: format!("bs={bs}K wal=8K c={clients}"),
        block_size_kb: bs,
        wal_block_size_kb: 8,
        clients,
        metric: "tps".into(),
        higher_is_better: true,
        n: s.n as u32,
        mean: s.mean,
        stddev: s.stddev,
        ci95_low: lo,
        ci95_high: hi,
        ..Default::default()
    }
}

fn one(cells: &[CellResult]) -> Ladder {
    let l = ladders(cells);
    assert_eq!(l.len(), 1, "{l:?}");
    l.into_iter().next().expect("ladder")
}

#[test]
fn the_knee_is_the_top_of_the_last_step_that_gained_beyond_its_ci() {
    // 1→2 and 2→4 double; 4→8 moves within the noise; 8→16 falls.
    let l = one(&[
        cell(8, 1, &[100.0, 102.0, 98.0]),
        cell(8, 2, &[200.0, 204.0, 196.0]),
        cell(8, 4, &[390.0, 400.0, 410.0]),
        cell(8, 8, &[405.0, 395.0, 412.0]),
        cell(8, 16, &[380.0, 390.0, 385.0]),
    ]);
    let gained: Vec<bool> = l.steps.iter().map(|s| s.gained).collect();
    assert_eq!(gained, [true, true, false, false]);
    assert_eq!(l.knee, 4);
    assert_eq!(l.series, "bs=8K wal=8K");
    let s = l.knee_step().expect("a step gained");
    assert_eq!((s.from, s.to), (2, 4));
    assert!(s.diff_ci95.expect("ci").0 > 0.0);
    assert!(
        l.sentence()
            .starts_with("bs=8K wal=8K: tps knee at 4 clients")
    );
    assert!(l.sentence().contains("2→4 clients +"), "{}", l.sentence());
}

#[test]
fn a_gain_after_a_plateau_moves_the_knee_to_its_top() {
    let l = one(&[
        cell(8, 1, &[100.0, 101.0, 99.0]),
        cell(8, 2, &[150.0, 151.0, 149.0]),
        cell(8, 4, &[150.0, 152.0, 148.0]),
        cell(8, 8, &[300.0, 301.0, 299.0]),
    ]);
    let gained: Vec<bool> = l.steps.iter().map(|s| s.gained).collect();
    assert_eq!(gained, [true, false, true]);
    assert_eq!(l.knee, 8);
}

#[test]
fn a_rise_inside_the_ci_is_not_a_gain_and_the_knee_stays_at_the_first_rung() {
    // The mean rises by 10 but the runs spread by ±50: the CI of the change spans 0.
    let l = one(&[
        cell(16, 1, &[100.0, 150.0, 50.0]),
        cell(16, 4, &[110.0, 160.0, 60.0]),
    ]);
    let s = &l.steps[0];
    assert!(s.diff > 0.0);
    let (lo, hi) = s.diff_ci95.expect("ci");
    assert!(lo < 0.0 && hi > 0.0, "{lo} {hi}");
    assert!(!s.gained);
    assert_eq!(l.knee, 1);
    assert!(
        l.sentence().contains("no step from it gained"),
        "{}",
        l.sentence()
    );
}

#[test]
fn a_rung_of_one_run_has_no_ci_and_its_step_does_not_gain() {
    let l = one(&[cell(8, 1, &[100.0]), cell(8, 2, &[500.0, 510.0])]);
    assert_eq!(l.steps[0].diff_ci95, None);
    assert!(!l.steps[0].gained);
    assert_eq!(l.knee, 1);
}

#[test]
fn each_page_size_has_its_own_ladder_and_single_counts_make_none() {
    let cells = [
        cell(8, 1, &[100.0, 101.0, 99.0]),
        cell(16, 1, &[100.0, 101.0, 99.0]),
        cell(8, 2, &[200.0, 201.0, 199.0]),
        cell(16, 2, &[100.0, 102.0, 98.0]),
        cell(32, 4, &[100.0, 102.0, 98.0]),
    ];
    let l = ladders(&cells);
    let got: Vec<(&str, u32)> = l.iter().map(|l| (l.series.as_str(), l.knee)).collect();
    assert_eq!(got, [("bs=8K wal=8K", 2), ("bs=16K wal=8K", 1)]);
    // Latency-like metrics make no ladder.
    let mut latency = cells.to_vec();
    for c in &mut latency {
        c.higher_is_better = false;
    }
    assert!(ladders(&latency).is_empty());
}

#[test]
fn the_knee_is_named_in_every_rendering_and_on_the_chart() {
    use crate::render::{Format, render_results};
    let cells = vec![
        cell(8, 1, &[100.0, 102.0, 98.0]),
        cell(8, 2, &[200.0, 204.0, 196.0]),
        cell(8, 4, &[205.0, 195.0, 200.0]),
    ];
    let r = blocklab_measure::job::QueryResults {
        job_id: "j".into(),
        cells: cells.clone(),
        ..Default::default()
    };
    for format in [Format::Table, Format::Markdown] {
        let text = render_results(&r, format);
        assert!(
            text.contains("bs=8K wal=8K: tps knee at 2 clients"),
            "{format:?}:\n{text}"
        );
        assert!(text.contains("1→2 +100.0% ["), "{format:?}:\n{text}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&render_results(&r, Format::Json)).expect("json");
    let ladder = &json["scaling"][0];
    assert_eq!(ladder["knee_clients"], 2);
    assert_eq!(ladder["steps"][0]["gained"], true);
    assert_eq!(ladder["steps"][1]["gained"], false);
    let charts = crate::plot::scaling_charts(&cells);
    assert_eq!(charts.len(), 1);
    assert_eq!(charts[0].file_name, "tps-vs-clients-bs8.svg");
    assert!(charts[0].svg.contains(r#"class="knee" data-knee="2""#));
    assert!(charts[0].svg.contains("knee: 2 clients"));
    assert_eq!(charts[0].svg.matches(r#"class="errorbar""#).count(), 3);
}

#[test]
fn a_step_is_a_ratio_whose_ci_cannot_pass_minus_100_percent() {
    // A noisy rung falling by half: Welch on the raw means would put the CI's lower end
    // below -100%; as a ratio on the log scale it stays above.
    let l = one(&[
        cell(8, 1, &[1000.0, 1010.0, 990.0]),
        cell(8, 2, &[100.0, 900.0, 500.0]),
    ]);
    let s = &l.steps[0];
    let (lo, hi) = s.pct_ci95.expect("a CI");
    assert!(lo > -100.0 && hi > 0.0, "{s:?}");
    assert!((s.pct.expect("a change") - -50.0).abs() < 1e-9, "{s:?}");
    assert!(!s.gained);
}
