//! `search = "race"`: a job's race from its export, as `results`, the JSON and the report
//! carry it.

use super::super::*;

/// Four cells (8K the default, a throttled 8K variant, 16K, 32K) over `rounds` rounds of a
/// randomized-block job; the throttled cell runs only the first three rounds, as the
/// scheduler leaves it after its drop.
fn job(rounds: u32) -> JobExport {
    let levels = [1000.0, 60.0, 1012.0, 930.0];
    let wobble = [
        [0.0, 4.0, -3.0, 2.0, -1.0],
        [1.0, -2.0, 0.5, 1.5, -0.5],
        [-2.0, 3.0, -1.0, 0.0, 2.5],
        [3.0, -1.0, 1.0, -2.5, 0.5],
    ];
    let mut runs = Vec::new();
    for rep in 0..rounds {
        for (c, level) in levels.iter().enumerate() {
            if c == 1 && rep >= 3 {
                continue;
            }
            let w = wobble[c][rep as usize];
            runs.push(ExportRun {
                cell_index: c as u32,
                repetition: rep,
                state: "done".into(),
                result: Some(RunMetrics {
                    tps: level * (1.0 + w / 1000.0) + f64::from(rep),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
    let cell = |i: u32, label: &str, base: bool| ExportCell {
        cell_index: i,
        label: label.into(),
        block_size_kb: 8,
        wal_block_size_kb: 8,
        clients: 4,
        is_baseline: base,
        baseline_cell_index: (!base).then_some(0),
        compared_on: if base { "" } else { "page size" }.into(),
        dims_json: r#"{"source":"pg15"}"#.into(),
        ..Default::default()
    };
    JobExport {
        cells: vec![
            cell(0, "8K", true),
            cell(1, "8K slow", false),
            cell(2, "16K", false),
            cell(3, "32K", false),
        ],
        runs,
        run_order: "randomized-block(seed=1)".into(),
        analysis: Some(AnalysisOptions {
            equivalence_pct: 5.0,
            min_repetitions: 3,
            max_repetitions: 5,
            until_decided: true,
            race: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn each_cell_carries_its_standing_on_the_headline_metric() {
    let e = job(3);
    let cells = cell_results(&e, &Metric::Tps);
    let standing = |i: usize| cells[i].race.as_ref().map(|r| r.standing.clone());
    assert_eq!(standing(1).as_deref(), Some("dropped at round 3"));
    assert_eq!(standing(3).as_deref(), Some("dropped at round 3"));
    assert_eq!(standing(2).as_deref(), Some("best"));
    // The default is 1.2% behind 16K: inside the 5% band, so in the best set.
    assert_eq!(standing(0).as_deref(), Some("in the best set"));
    let slow = cells[1].race.as_ref().expect("race");
    assert_eq!(slow.dropped_round, Some(3));
    assert_eq!(slow.best_label, "16K");
    assert_eq!(
        (slow.rounds, slow.runs_spent, slow.full_grid_runs),
        (3, 12, 12)
    );
    assert_eq!(slow.end, "decided at round 3");
    assert!(
        cells[1]
            .target_status
            .starts_with("race: dropped at round 3, -94."),
        "{}",
        cells[1].target_status
    );
    // Other metrics carry no race: it is judged on the headline.
    let p99 = cell_results(&e, &Metric::LatencyP99Ms);
    assert!(p99.iter().all(|c| c.race.is_none()));
    // A job that does not race has none either.
    let mut grid = job(3);
    if let Some(a) = grid.analysis.as_mut() {
        a.race = false;
    }
    assert!(
        cell_results(&grid, &Metric::Tps)
            .iter()
            .all(|c| c.race.is_none())
    );
}

#[test]
fn the_results_name_the_best_the_drops_and_the_runs_spent() {
    let mut e = job(3);
    e.results = cell_results(&e, &Metric::Tps);
    let text = crate::render::race_text(&e.results, "");
    for line in [
        "race on tps (higher better): decided at round 3",
        "  best: 16K (",
        "  equivalent to the best (within ±5%): 8K -1.",
        "  8K slow: dropped at round 3, -94.",
        "  32K: dropped at round 3, -8.",
        "  best against the default (8K): +1.",
        "  runs: 12 of the 12 a full grid of 3 rounds takes (100%)",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    let json = crate::render::race_json(&e.results).expect("json");
    assert_eq!(json["end"], "decided at round 3");
    assert_eq!(json["cells"][1]["dropped_round"], 3);
    let html = crate::html::report(&e);
    assert!(html.contains("<h3 id=\"race\">Race</h3>"));
    assert!(html.contains("race on tps: each cell against the best at each look"));
}

#[test]
fn a_dropped_cell_runs_no_more_rounds_and_the_replay_keeps_its_drop() {
    // Rounds 4 and 5 ran without the throttled cell; its drop stays at round 3.
    let e = job(5);
    let cells = cell_results(&e, &Metric::Tps);
    let slow = cells[1].race.as_ref().expect("race");
    assert_eq!(slow.dropped_round, Some(3));
    assert_eq!(slow.runs_spent, 3 * 4 + 2 * 3);
    assert_eq!(slow.full_grid_runs, 5 * 4);
}
