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
    assert_eq!(json[0]["end"], "decided at round 3");
    assert_eq!(json[0]["default"], "8K");
    assert_eq!(json[0]["cells"][1]["dropped_round"], 3);
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

#[test]
fn each_group_of_cells_sharing_a_default_races_on_its_own() {
    // The same four cells at 1 and at 4 clients: two races, each with its own default and best.
    let mut e = job(3);
    let n = e.cells.len() as u32;
    let mut more = Vec::new();
    for c in &e.cells {
        let mut c = c.clone();
        c.cell_index += n;
        c.label = format!("{} c1", c.label);
        c.clients = 1;
        c.baseline_cell_index = c.baseline_cell_index.map(|b| b + n);
        more.push(c);
    }
    let runs: Vec<ExportRun> = e
        .runs
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.cell_index += n;
            // At 1 client the default (cell 4) leads by 3%.
            if let Some(m) = r.result.as_mut() {
                m.tps /= if r.cell_index == n { 0.97 } else { 4.0 };
            }
            r
        })
        .collect();
    e.cells.extend(more);
    e.runs.extend(runs);
    let races = race::job_races(&e, &Metric::Tps);
    assert_eq!(races.len(), 2);
    assert_eq!((races[0].best, races[1].best), (Some(2), Some(n)));
    let cells = cell_results(&e, &Metric::Tps);
    let r = |i: usize| cells[i].race.as_ref().expect("race");
    assert_eq!(r(1).default_label, "8K");
    assert_eq!(r(5).default_label, "8K c1");
    assert_eq!(r(4).standing, "best");
    let text = crate::render::race_text(&cells, "");
    assert!(
        text.contains("race on tps among the cells of default 8K (higher better)"),
        "{text}"
    );
    assert!(
        text.contains("race on tps among the cells of default 8K c1 (higher better)"),
        "{text}"
    );
    assert!(text.contains("  the default is the best\n"), "{text}");
}

#[test]
fn the_best_is_compared_with_the_race_default_not_its_own_baseline() {
    // Under settings variants a cell's baseline is its variant's default: here 16K's is the
    // throttled 8K (60 tps), itself compared with the race's default 8K. The best against
    // the default is 16K against 8K (about +1%), not against its own baseline (about +1600%).
    let mut e = job(3);
    e.cells[2].baseline_cell_index = Some(1);
    e.cells[2].compared_on = "page size".into();
    e.cells[1].compared_on = "settings variant".into();
    e.results = cell_results(&e, &Metric::Tps);
    let r = e.results[2].race.as_ref().expect("race");
    assert_eq!(
        (r.standing.as_str(), r.default_label.as_str()),
        ("best", "8K")
    );
    let text = crate::render::race_text(&e.results, "");
    assert!(
        text.contains("  best against the default (8K): +1."),
        "{text}"
    );
    let json = crate::render::race_json(&e.results).expect("json");
    let pct = json[0]["best_vs_default"]["pct"].as_f64().expect("pct");
    assert!((0.5..2.0).contains(&pct), "{pct}");
    assert_eq!(json[0]["cells"][0]["is_default"], true);
    assert_eq!(json[0]["cells"][1]["is_default"], false);
}
