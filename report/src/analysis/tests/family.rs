//! A job's family of comparisons end to end: q-values, TOST, verdicts, the plan's baselines,
//! suspect runs, adaptive repetitions. Expected values: `report/tests/reference/stats_reference.py`
//! (SciPy 1.17.1, statsmodels 0.15.0), sections `family_job` and `planned_job` (Welch with the
//! delta method), and `balanced` (rounds as blocks).

use super::super::*;
use blocklab_measure::Metric as WorkloadMetric;

#[track_caller]
fn rel(got: Option<f64>, want: f64) {
    let got = got.expect("a value");
    assert!(
        (got - want).abs() <= 1e-9 * want.abs(),
        "got {got}, want {want}"
    );
}

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

fn extra(name: &str, unit: &str, value: f64) -> WorkloadMetric {
    WorkloadMetric {
        name: name.into(),
        unit: unit.into(),
        value,
        higher_is_better: false,
    }
}

/// A done run of `cell` with tps and mean latency (every other pgbench column 0).
fn run(cell: u32, rep: u32, tps: f64, lat: f64, extras: Vec<WorkloadMetric>) -> ExportRun {
    ExportRun {
        cell_index: cell,
        repetition: rep,
        state: "done".into(),
        result: Some(RunMetrics {
            tps,
            latency_avg_ms: lat,
            extra: extras,
            ..Default::default()
        }),
        ..Default::default()
    }
}

const BASE_TPS: [f64; 3] = [1234.5, 1210.2, 1251.8];
const BASE_LAT: [f64; 3] = [3.24, 3.31, 3.20];
const C16_TPS: [f64; 3] = [1301.3, 1288.9, 1320.4];
const C16_LAT: [f64; 3] = [3.07, 3.10, 3.03];
const C32_TPS: [f64; 3] = [1236.0, 1229.5, 1240.3];
const C32_LAT: [f64; 3] = [3.22, 3.26, 3.25];

/// 8K (baseline), 16K and 32K, three runs each, with two descriptive workload metrics that
/// must not enter the family.
fn family_job() -> JobExport {
    let cells = vec![cell(0, 8, true), cell(1, 16, false), cell(2, 32, false)];
    let data = [(BASE_TPS, BASE_LAT), (C16_TPS, C16_LAT), (C32_TPS, C32_LAT)];
    let mut runs = Vec::new();
    for rep in 0..3 {
        for (c, (tps, lat)) in data.iter().enumerate() {
            let c = c as u32;
            let extras = vec![
                extra("checkpoints_in_window", "count", f64::from(rep + c)),
                extra("wal_bytes_per_txn", "B/txn", 400.0 + f64::from(rep * 7 + c)),
            ];
            runs.push(run(c, rep, tps[rep as usize], lat[rep as usize], extras));
        }
    }
    JobExport {
        cells,
        runs,
        ..Default::default()
    }
}

#[test]
fn q_values_and_verdicts_across_the_job_family() {
    let e = family_job();
    let all = job_results(&e, None);
    let get = |name: &str| {
        all.iter()
            .find(|(m, _)| m.name() == name)
            .map(|(_, c)| c.clone())
            .expect("metric")
    };
    let tps = get("tps");
    let lat = get("latency_avg_ms");
    // The family: 16K and 32K x tps and latency_avg_ms (the other columns are 0 in every run).
    // Welch with the delta method (the runs' order is not recorded: rounds are not blocks).
    assert_eq!(tps[1].model, "welch");
    rel(tps[1].p_value, 0.011_992_552_756_674_5);
    rel(tps[1].q_value, 0.023_985_105_513_349);
    rel(tps[1].tost_p_value, 0.977_960_402_541_466_7);
    rel(tps[1].tost_q_value, 0.979_742_552_932_408_5);
    rel(tps[1].pct_change_vs_baseline, 5.791_965_372_649_843);
    rel(tps[1].pct_change_ci95_low, 2.167_516_388_677_054_5);
    rel(tps[1].pct_change_ci95_high, 9.544_993_683_024_632);
    rel(tps[1].mde_pct, 4.742_879_575_777_506);
    assert_eq!(
        (tps[1].extra_rounds, tps[1].extra_rounds_cannot),
        (None, false)
    );
    assert_eq!(tps[1].verdict, "faster");
    rel(lat[1].p_value, 0.011_463_672_020_495_582);
    rel(lat[1].q_value, 0.023_985_105_513_349);
    rel(lat[1].tost_p_value, 0.979_742_552_932_408_5);
    rel(lat[1].pct_change_ci95_low, -8.888_857_337_727_74);
    rel(lat[1].mde_pct, 4.750_747_314_176_801);
    assert_eq!(lat[1].verdict, "faster");
    rel(tps[2].p_value, 0.824_551_396_977_567_1);
    rel(tps[2].q_value, 0.860_282_169_500_786_6);
    rel(tps[2].tost_p_value, 0.107_287_388_168_514_17);
    rel(tps[2].tost_q_value, 0.214_574_776_337_028_34);
    rel(tps[2].pct_change_ci90_low, -2.447_316_909_679_036_4);
    rel(tps[2].pct_change_ci90_high, 3.025_163_912_150_588);
    rel(tps[2].mde_pct, 5.061_172_721_452_031_5);
    assert_eq!(tps[2].verdict, "inconclusive");
    // Two more rounds would show it inside ±2% (up to 1000, the job sets no maximum).
    assert_eq!(
        (tps[2].extra_rounds, tps[2].extra_rounds_cannot),
        (Some(2), false)
    );
    rel(lat[2].q_value, 0.860_282_169_500_786_6);
    rel(lat[2].tost_q_value, 0.214_574_776_337_028_34);
    assert_eq!(lat[2].verdict, "inconclusive");
    assert_eq!(lat[2].extra_rounds, Some(2));
    assert!(tps.iter().all(|c| c.equivalence_pct == 2.0));
    assert_eq!(tps[0].verdict, "baseline");
    assert_eq!((tps[0].q_value, tps[0].p_value), (None, None));
    // Columns with zero variance on both sides: no p, no q, and the verdict says so.
    let p99 = get("latency_p99_ms");
    assert_eq!((p99[1].p_value, p99[1].q_value), (None, None));
    assert!(p99[1].zero_variance);
    assert_eq!(p99[1].verdict, "identical, zero variance");
    // Counts and per-transaction costs: change and p shown, no q, no verdict.
    for name in ["checkpoints_in_window", "wal_bytes_per_txn"] {
        let c = get(name);
        assert_eq!(c[1].verdict, "no verdict", "{name}");
        assert!(c[1].p_value.is_some() && c[1].q_value.is_none(), "{name}");
        assert!(c[1].pct_change_ci95_low.is_some(), "{name}");
    }
    // The same q-value whichever metric is asked for.
    let r = cell_results(&e, &Metric::LatencyAvgMs);
    assert_eq!(r[1].q_value, lat[1].q_value);
    let m = crate::metric_results(&e);
    assert_eq!(
        m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ["checkpoints_in_window", "wal_bytes_per_txn"]
    );
}

/// Baseline, an A/A replicate and 16K from the plan, six runs each, tps only.
fn planned_job() -> JobExport {
    let pb = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6];
    let pr = [1001.0, 999.4, 1002.2, 1000.3, 998.8, 1001.7];
    let p16 = [1041.0, 1046.3, 1039.1, 1044.0, 1040.2, 1043.4];
    // The baseline is not the first cell; the group rule would find none for the replicate
    // (is_baseline is false and it has the baseline's page sizes).
    let mut cells = vec![cell(0, 16, false), cell(1, 8, true), cell(2, 8, false)];
    cells[0].baseline_cell_index = Some(1);
    cells[0].compared_on = "page size".into();
    cells[2].baseline_cell_index = Some(1);
    cells[2].compared_on = "replicate".into();
    cells[2].replicate = true;
    cells[2].label = "bs=8K replicate".into();
    let mut runs = Vec::new();
    for rep in 0..6 {
        for (c, xs) in [p16, pb, pr].iter().enumerate() {
            runs.push(run(c as u32, rep, xs[rep as usize], 0.0, vec![]));
        }
    }
    JobExport {
        cells,
        runs,
        analysis: Some(AnalysisOptions {
            equivalence_pct: 0.0,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn baselines_from_the_plan_and_an_a_a_replicate() {
    let r = cell_results(&planned_job(), &Metric::Tps);
    assert_eq!(r[1].verdict, "baseline");
    // The A/A replicate: equivalent within the default band (0 in the options = 2%).
    let aa = &r[2];
    assert_eq!(
        (
            aa.baseline_label.as_str(),
            aa.compared_on.as_str(),
            aa.replicate
        ),
        ("bs=8K", "replicate", true)
    );
    assert_eq!(aa.baseline_cell_index, Some(1));
    assert_eq!(aa.equivalence_pct, 2.0);
    rel(aa.p_value, 0.906_362_501_271_662_5);
    rel(aa.q_value, 0.906_362_501_271_662_5);
    rel(aa.tost_p_value, 2.570_521_021_816_731_5e-10);
    rel(aa.tost_q_value, 5.141_042_043_633_463e-10);
    rel(aa.mde_pct, 0.258_250_902_908_790_16);
    assert_eq!(aa.verdict, "equivalent");
    // 16K: +4.2%, far outside the band.
    let c = &r[0];
    assert_eq!((c.compared_on.as_str(), c.replicate), ("page size", false));
    rel(c.p_value, 5.546_162_874_864_125e-10);
    rel(c.q_value, 1.109_232_574_972_825e-9);
    rel(c.tost_p_value, 0.999_999_942_257_539_9);
    rel(c.pct_change_ci90_low, 3.926_405_962_535_022);
    rel(c.pct_change_ci90_high, 4.401_918_198_762_38);
    rel(c.mde_pct, 0.392_848_230_029_411_7);
    assert_eq!(c.verdict, "faster");
    // The held-constant line comes from crate::held for each compared cell.
    assert_eq!(
        c.held_constant,
        crate::held::line(&planned_job(), 0, Some(1))
    );
}

#[test]
fn a_cell_the_plan_gives_no_baseline_has_none() {
    let mut e = planned_job();
    e.cells[0].baseline_cell_index = None;
    let r = cell_results(&e, &Metric::Tps);
    assert_eq!(
        (r[0].verdict.as_str(), r[0].baseline_label.as_str()),
        ("insufficient data", "")
    );
    assert_eq!(r[2].verdict, "equivalent");
}

/// 8K and 16K; 16K's fourth run is suspect and an outlier.
fn suspect_job(exclude: bool) -> JobExport {
    let mut runs = Vec::new();
    for (rep, (b, t)) in [
        (1000.0, 1100.0),
        (1010.0, 1105.0),
        (990.0, 1102.0),
        (995.0, 9999.0),
    ]
    .into_iter()
    .enumerate()
    {
        runs.push(run(0, rep as u32, b, 0.0, vec![]));
        let mut r = run(1, rep as u32, t, 0.0, vec![]);
        if rep == 3 {
            r.suspect_reasons = vec!["checkpoint in measured window".into()];
        }
        runs.push(r);
    }
    JobExport {
        cells: vec![cell(0, 8, true), cell(1, 16, false)],
        runs,
        analysis: Some(AnalysisOptions {
            exclude_suspect: exclude,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn suspect_runs_enter_the_statistics_unless_the_job_excludes_them() {
    // Default: every completed run, the outlier too; the suspect run is counted.
    let r = cell_results(&suspect_job(false), &Metric::Tps);
    let c = &r[1];
    assert_eq!((c.n, c.runs_suspect, c.runs_excluded), (4, 1, 0));
    assert_eq!(c.suspect_reasons, ["checkpoint in measured window"]);
    assert_eq!(c.verdict, "inconclusive");
    assert_eq!(c.all_runs, None);
    // Excluded: the clean runs decide, and the all-runs statistics travel beside them.
    let r = cell_results(&suspect_job(true), &Metric::Tps);
    let c = &r[1];
    assert_eq!((c.n, c.runs_suspect, c.runs_excluded), (3, 1, 1));
    assert!((c.mean - 3307.0 / 3.0).abs() < 1e-9);
    assert_eq!(c.verdict, "faster");
    let all = c.all_runs.as_ref().expect("all runs");
    assert_eq!((all.n, all.verdict.as_str()), (4, "inconclusive"));
    assert!((all.mean - 3326.5).abs() < 1e-9);
    assert!(
        r[0].all_runs
            .as_ref()
            .is_some_and(|b| b.verdict == "baseline")
    );
}

#[test]
fn adaptive_repetitions_report_the_target() {
    let mut e = suspect_job(false);
    e.runs.retain(|r| r.repetition < 3);
    e.analysis = Some(AnalysisOptions {
        target_ci_pct: Some(2.0),
        min_repetitions: 3,
        max_repetitions: 3,
        ..Default::default()
    });
    // A third 8K-like cell measured tightly.
    e.cells.push(cell(2, 32, false));
    for (rep, v) in [1000.0, 1001.0, 1000.5].into_iter().enumerate() {
        e.runs.push(run(2, rep as u32, v, 0.0, vec![]));
    }
    let r = cell_results(&e, &Metric::Tps);
    // 8K: ±4.303·10/√3 = ±24.8 = ±2.48% of 1000 > 2%, with its 3 of 3 repetitions.
    rel(r[0].ci95_half_width_pct, 2.484_137_711_750_331_6);
    assert_eq!(r[0].target_status, "max repetitions reached");
    assert_eq!(r[0].target_ci_pct, Some(2.0));
    assert_eq!(r[2].target_status, "target reached");
    e.analysis = Some(AnalysisOptions {
        target_ci_pct: Some(2.0),
        max_repetitions: 5,
        ..Default::default()
    });
    let r = cell_results(&e, &Metric::Tps);
    assert_eq!(r[0].target_status, "target not reached");
    e.analysis = None;
    let r = cell_results(&e, &Metric::Tps);
    assert_eq!(
        (r[0].target_status.as_str(), r[0].target_ci_pct),
        ("", None)
    );
}
