//! `until = "decided"`: the verdicts use the level of a look (0.05 over the planned looks),
//! and each compared cell says where the job stopped.

use super::super::*;

const BASE: [f64; 5] = [1000.0, 1010.0, 990.0, 1005.0, 995.0];
const TREAT: [f64; 5] = [1014.0, 1024.0, 1007.0, 1019.0, 1011.0];

fn cell(i: u32, bs: u32, base: bool) -> ExportCell {
    ExportCell {
        cell_index: i,
        label: format!("bs={bs}K"),
        block_size_kb: bs,
        wal_block_size_kb: 8,
        clients: 4,
        is_baseline: base,
        baseline_cell_index: (!base).then_some(0),
        compared_on: if base { "" } else { "page size" }.into(),
        dims_json: r#"{"source":"pg15"}"#.into(),
        ..Default::default()
    }
}

/// 8K and 16K over five rounds (no run order: Welch), +1.5% with p between 0.01 and 0.0167.
fn job(analysis: Option<AnalysisOptions>) -> JobExport {
    let mut runs = Vec::new();
    for rep in 0..5 {
        for (c, xs) in [BASE, TREAT].iter().enumerate() {
            runs.push(ExportRun {
                cell_index: c as u32,
                repetition: rep,
                state: "done".into(),
                result: Some(RunMetrics {
                    tps: xs[rep as usize],
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
    JobExport {
        cells: vec![cell(0, 8, true), cell(1, 16, false)],
        runs,
        analysis,
        ..Default::default()
    }
}

fn until_decided(min: u32, max: u32) -> Option<AnalysisOptions> {
    Some(AnalysisOptions {
        min_repetitions: min,
        max_repetitions: max,
        until_decided: true,
        ..Default::default()
    })
}

#[test]
fn a_look_tests_at_alpha_over_the_planned_looks() {
    let fixed = cell_results(&job(None), &Metric::Tps);
    let p = fixed[1].p_value.expect("a p-value");
    assert!((0.01..0.0167).contains(&p), "p {p}");
    assert_eq!(fixed[1].verdict, "faster");
    assert_eq!(fixed[1].target_status, "");
    // 3 to 20 rounds: 18 looks at 0.05/18 = 0.0028 each; not shown yet.
    let r = cell_results(&job(until_decided(3, 20)), &Metric::Tps);
    assert_eq!(r[1].p_value, Some(p));
    assert_eq!(r[1].verdict, "inconclusive");
    assert_eq!(
        r[1].target_status,
        "sequential: undecided at round 5 (alpha 0.0028 per look, 18 looks)"
    );
    assert_eq!(r[0].target_status, "");
    // 3 to 5 rounds: 3 looks at 0.0167; faster at the fifth round.
    let r = cell_results(&job(until_decided(3, 5)), &Metric::Tps);
    assert_eq!(r[1].verdict, "faster");
    assert_eq!(
        r[1].target_status,
        "sequential: decided at round 5 (alpha 0.0167 per look, 3 looks)"
    );
    // 1 to 5 rounds: 5 looks at 0.01; the maximum is reached undecided.
    let r = cell_results(&job(until_decided(1, 5)), &Metric::Tps);
    assert_eq!(r[1].verdict, "inconclusive");
    assert_eq!(
        r[1].target_status,
        "sequential: undecided, max repetitions reached (5) (alpha 0.0100 per look, 5 looks)"
    );
}
