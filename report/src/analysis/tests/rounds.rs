//! Rounds as blocks: the run order decides whether a job's rounds are blocks. Expected values:
//! `report/tests/reference/stats_reference.py`, `ols balanced` (statsmodels' `ols("log(y) ~
//! C(cell) + C(round)")`) and `delta balanced pooled` (Welch with the delta method).

use super::super::*;

#[track_caller]
fn rel(got: Option<f64>, want: f64) {
    let got = got.expect("a value");
    assert!(
        (got - want).abs() <= 1e-9 * want.abs(),
        "got {got}, want {want}"
    );
}

const BASE: [f64; 5] = [1000.0, 1010.0, 1024.0, 1031.0, 1046.0];
const TREAT: [f64; 5] = [1013.0, 1020.0, 1039.0, 1041.0, 1062.0];

fn cell(i: u32, bs: u32, base: bool) -> ExportCell {
    ExportCell {
        cell_index: i,
        label: format!("bs={bs}K"),
        block_size_kb: bs,
        wal_block_size_kb: 8,
        clients: 4,
        is_baseline: base,
        dims_json: r#"{"source":"pg15"}"#.into(),
        ..Default::default()
    }
}

/// 8K and 16K over five rounds that drift upwards, in `order`.
fn drifting_job(order: &str) -> JobExport {
    let mut runs = Vec::new();
    for rep in 0..5 {
        for (c, xs) in [BASE, TREAT].iter().enumerate() {
            runs.push(ExportRun {
                cell_index: c as u32,
                repetition: rep,
                state: "done".into(),
                db_host_id: "db".into(),
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
        run_order: order.into(),
        ..Default::default()
    }
}

#[test]
fn interleaved_and_randomized_block_rounds_are_blocks() {
    for order in ["interleaved", "randomized-block(seed=7)"] {
        let r = cell_results(&drifting_job(order), &Metric::Tps);
        let c = &r[1];
        assert_eq!(c.model, "rounds", "{order}");
        // ols balanced: coef=0.012428769796872796, df_resid=4, p=0.00042102794682275023
        assert_eq!(c.welch_df, Some(4.0));
        rel(c.p_value, 0.000_421_027_946_822_750_23);
        rel(c.pct_change_vs_baseline, 1.250_632_794_056_874_4);
        rel(c.pct_change_ci95_low, 0.926_818_585_924_222_7);
        rel(c.pct_change_ci95_high, 1.575_485_929_630_792);
        rel(c.tost_p_value, 0.001_538_186_425_388_151_8);
        rel(c.pct_change_ci90_low, 1.001_905_060_122_165_5);
        rel(c.mde_pct, 0.429_810_022_174_491_16);
        assert_eq!(c.verdict, "equivalent");
        assert_eq!((c.extra_rounds, c.extra_rounds_cannot), (None, false));
        assert_eq!(r[0].model, "");
    }
}

#[test]
fn sequential_and_shuffled_rounds_are_not_blocks() {
    for order in ["sequential", "shuffled(seed=7)", ""] {
        let r = cell_results(&drifting_job(order), &Metric::Tps);
        let c = &r[1];
        assert_eq!(c.model, "welch", "{order}");
        // delta balanced pooled: df=7.971288236166001 p=0.30907723777616986
        rel(c.welch_df, 7.971_288_236_166_001);
        rel(c.p_value, 0.309_077_237_776_169_86);
        rel(c.pct_change_vs_baseline, 1.252_201_134_807_300_8);
        rel(c.pct_change_ci95_low, -1.389_030_785_052_816_3);
        rel(c.tost_p_value, 0.269_332_544_961_638_2);
        rel(c.mde_pct, 3.729_488_639_579_472_4);
        assert_eq!(c.verdict, "inconclusive");
        // rounds balanced pooled band 2.0: 29
        assert_eq!((c.extra_rounds, c.extra_rounds_cannot), (Some(29), false));
    }
}

#[test]
fn the_job_maximum_bounds_the_rounds() {
    let mut e = drifting_job("sequential");
    e.analysis = Some(AnalysisOptions {
        max_repetitions: 30,
        ..Default::default()
    });
    // 5 runs a side and at most 30: 25 more are not the 29 it would need.
    let c = &cell_results(&e, &Metric::Tps)[1];
    assert_eq!((c.extra_rounds, c.extra_rounds_cannot), (None, true));
    e.analysis = Some(AnalysisOptions {
        max_repetitions: 34,
        ..Default::default()
    });
    let c = &cell_results(&e, &Metric::Tps)[1];
    assert_eq!((c.extra_rounds, c.extra_rounds_cannot), (Some(29), false));
}

#[test]
fn the_rounds_of_two_jobs_are_not_blocks() {
    let a = drifting_job("interleaved");
    let mut b = drifting_job("interleaved");
    for r in &mut b.runs {
        if let Some(m) = r.result.as_mut() {
            m.tps += 5.0;
        }
    }
    let r = compare(&a, &b, &Metric::Tps);
    assert!(r.iter().all(|c| c.model == "welch"), "{r:?}");
}
