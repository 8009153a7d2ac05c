//! Statistics pinned to reference values computed independently with SciPy 1.17.1
//! (NumPy 2.4.6), once, by this script (the TOST and Benjamini–Hochberg values below come from
//! `report/tests/reference/stats_reference.py`, SciPy 1.17.1 and statsmodels 0.15.0):
//!
//! ```python
//! import numpy as np
//! from scipy import stats
//! def summ(x):
//!     x = np.array(x); n = len(x); m = x.mean(); s = x.std(ddof=1)
//!     lo, hi = stats.t.interval(0.95, n - 1, loc=m, scale=s / np.sqrt(n))
//!     print(n, m, s, s / m, lo, hi)
//! def welch(b, t):
//!     b = np.array(b); t = np.array(t)
//!     r = stats.ttest_ind(t, b, equal_var=False); ci = r.confidence_interval(0.95)
//!     print(r.statistic, r.pvalue, r.df, t.mean() - b.mean(), ci.low, ci.high,
//!           100 * (t.mean() - b.mean()) / b.mean(), 100 * ci.low / b.mean(), 100 * ci.high / b.mean())
//! A = [1234.5, 1210.2, 1251.8]; B = [1301.3, 1288.9, 1320.4]; C = [1198.0, 1275.5, 1222.1]
//! L0 = [2.41, 2.47, 2.39, 2.44]; L1 = [2.30, 2.33, 2.28]
//! D = [1150.0, 1162.5, 1139.9, 1171.3]
//! summ(A); summ(B); summ(L0); summ([10.0, 12.0, 9.0, 11.0, 13.0])
//! welch(A, B); welch(A, C); welch(L0, L1); welch(A, D)
//! print(stats.t.ppf(0.975, [1, 2, 4, 10, 3.5]))
//! print(2 * stats.t.sf(2.5, 3), 2 * stats.t.sf(1.2, 7.3))
//! ```

use super::*;

const A: [f64; 3] = [1234.5, 1210.2, 1251.8];
const B: [f64; 3] = [1301.3, 1288.9, 1320.4];
const C: [f64; 3] = [1198.0, 1275.5, 1222.1];
const D: [f64; 4] = [1150.0, 1162.5, 1139.9, 1171.3];
const L0: [f64; 4] = [2.41, 2.47, 2.39, 2.44];
const L1: [f64; 3] = [2.30, 2.33, 2.28];

/// The verdict of a single comparison (a family of one: q = p), without an equivalence test.
fn judged(metric: &Metric, c: &Ratio) -> Verdict {
    verdict(
        metric,
        Evidence {
            change: Some(c),
            q: c.p_value.is_finite().then_some(c.p_value),
            tost_q: None,
        },
    )
}

/// Relative closeness (absolute near zero).
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(1.0)
}

#[track_caller]
fn assert_close(got: f64, want: f64) {
    assert!(close(got, want, 1e-7), "got {got}, want {want}");
}

#[track_caller]
fn assert_pair(got: (f64, f64), want: (f64, f64)) {
    assert_close(got.0, want.0);
    assert_close(got.1, want.1);
}

#[test]
fn mean_and_sample_stddev() {
    // Reference: numpy.std([2,4,4,4,5,5,7,9], ddof=1) = 2.138089935299395
    let (m, sd) = mean_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).expect("non-empty");
    assert!((m - 5.0).abs() < 1e-12);
    assert!((sd - 2.138_089_935_299_395).abs() < 1e-12);
    assert_eq!(mean_stddev(&[3.0]), Some((3.0, 0.0)));
    assert_eq!(mean_stddev(&[]), None);
}

#[test]
fn percent_change() {
    assert_eq!(pct_change(110.0, 100.0), Some(10.0));
    assert_eq!(pct_change(90.0, 100.0), Some(-10.0));
    assert_eq!(pct_change(1.0, 0.0), None);
}

#[test]
fn t_distribution_matches_scipy() {
    // stats.t.ppf(0.975, [1, 2, 4, 10, 3.5])
    for (df, want) in [
        (1.0, 12.706_204_736_174_7),
        (2.0, 4.302_652_729_749_464),
        (4.0, 2.776_445_105_197_793),
        (10.0, 2.228_138_851_986_274),
        (3.5, 2.940_088_64),
    ] {
        assert!(
            close(t_quantile(df), want, 1e-7),
            "df {df}: {}",
            t_quantile(df)
        );
    }
    // 2 * stats.t.sf(2.5, 3) = 0.08770664700806556; 2 * stats.t.sf(1.2, 7.3) = 0.2676306665516561
    assert_close(t_two_sided_p(2.5, 3.0), 0.087_706_647_008_065_56);
    assert_close(t_two_sided_p(-2.5, 3.0), 0.087_706_647_008_065_56);
    assert_close(t_two_sided_p(1.2, 7.3), 0.267_630_666_551_656_1);
}

#[test]
fn summary_matches_scipy() {
    let s = summarize(&A).expect("non-empty");
    assert_eq!(s.n, 3);
    assert_close(s.mean, 1_232.166_666_666_666_7);
    assert_close(s.stddev, 20.897_926_531_915_35);
    assert_close(s.cv.expect("cv"), 0.016_960_308_290_476_407);
    assert_pair(
        s.ci95.expect("ci"),
        (1_180.253_339_271_348, 1_284.079_994_061_985_4),
    );

    let s = summarize(&B).expect("non-empty");
    assert_close(s.stddev, 15.868_312_239_596_674);
    assert_close(s.cv.expect("cv"), 0.012_173_307_604_661_695);
    assert_pair(
        s.ci95.expect("ci"),
        (1_264.114_260_477_122, 1_342.952_406_189_544_7),
    );

    let s = summarize(&L0).expect("non-empty");
    assert_close(s.mean, 2.4275);
    assert_close(s.stddev, 0.035);
    assert_close(s.cv.expect("cv"), 0.014_418_125_643_666_324);
    assert_pair(
        s.ci95.expect("ci"),
        (2.371_807_189_657_535_5, 2.483_192_810_342_465),
    );

    let s = summarize(&[10.0, 12.0, 9.0, 11.0, 13.0]).expect("non-empty");
    assert_close(s.stddev, 1.581_138_830_084_189_8);
    assert_close(s.cv.expect("cv"), 0.143_739_893_644_017_26);
    assert_pair(
        s.ci95.expect("ci"),
        (9.036_756_838_522_443, 12.963_243_161_477_557),
    );

    let one = summarize(&[5.0]).expect("non-empty");
    assert_eq!((one.n, one.mean, one.cv, one.ci95), (1, 5.0, None, None));
    assert_eq!(summarize(&[]), None);
}

struct WelchRef {
    t: f64,
    p: f64,
    df: f64,
    diff: f64,
    ci: (f64, f64),
    pct: f64,
    pct_ci: (f64, f64),
}

/// Pins Welch's test on the raw scale (what scaling uses) and returns the comparison the
/// verdict is made from: the same runs as a ratio ([`delta`]).
#[track_caller]
fn check_welch(base: &[f64], treat: &[f64], r: &WelchRef) -> Ratio {
    let b = summarize(base).expect("base");
    let t = summarize(treat).expect("treat");
    let c = welch(&b, &t).expect("both have >= 2 runs");
    assert_close(c.t, r.t);
    assert_close(c.p_value, r.p);
    assert_close(c.df, r.df);
    assert_close(c.diff, r.diff);
    assert_pair(c.diff_ci95, r.ci);
    assert_close(c.pct.expect("pct"), r.pct);
    assert_pair(c.pct_ci95.expect("pct ci"), r.pct_ci);
    delta(&b, &t).expect("a ratio")
}

#[test]
fn welch_matches_scipy_and_gives_the_verdict() {
    // 16K faster than 8K: significant increase of tps.
    let c = check_welch(
        &A,
        &B,
        &WelchRef {
            t: 4.710_810_749_096_835,
            p: 0.010_924_525_393_129_905,
            df: 3.730_884_886_370_670_3,
            diff: 71.366_666_666_666_56,
            ci: (28.080_773_610_456_24, 114.652_559_722_876_87),
            pct: 5.791_965_372_649_795,
            pct_ci: (2.278_975_269_345_833, 9.304_955_475_953_756),
        },
    );
    assert_eq!(judged(&Metric::Tps, &c), Verdict::Faster);

    // Same means within noise.
    let c = check_welch(
        &A,
        &C,
        &WelchRef {
            t: -0.011_590_510_906_764_703,
            p: 0.991_473_077_696_992_1,
            df: 3.031_013_332_440_437,
            diff: -0.300_000_000_000_181_9,
            ci: (-82.197_267_745_058_71, 81.597_267_745_058_35),
            pct: -0.024_347_355_606_669_705,
            pct_ci: (-6.670_953_692_281_242, 6.622_258_981_067_903),
        },
    );
    assert_eq!(judged(&Metric::Tps, &c), Verdict::Inconclusive);

    // Latency went down: faster for a lower-is-better metric; slower for tps.
    let c = check_welch(
        &L0,
        &L1,
        &WelchRef {
            t: -5.458_937_625_582_474,
            p: 0.002_808_136_958_788_688,
            df: 4.998_649_074_616_11,
            diff: -0.124_166_666_666_666_98,
            ci: (-0.182_640_777_739_388_42, -0.065_692_555_593_945_55),
            pct: -5.115_001_716_443_541,
            pct_ci: (-7.523_821_946_009_821, -2.706_181_486_877_262_5),
        },
    );
    assert_eq!(judged(&Metric::LatencyP99Ms, &c), Verdict::Faster);
    assert_eq!(judged(&Metric::Tps, &c), Verdict::Slower);

    // Unequal n, tps went down: slower.
    let c = check_welch(
        &A,
        &D,
        &WelchRef {
            t: -5.485_129_295_370_537_5,
            p: 0.009_333_761_311_864_726,
            df: 3.288_112_299_987_136,
            diff: -76.241_666_666_666_79,
            ci: (-118.362_826_177_012_14, -34.120_507_156_321_44),
            pct: -6.187_609_901_257_956,
            pct_ci: (-9.606_072_731_801_337, -2.769_147_070_714_576),
        },
    );
    assert_eq!(judged(&Metric::Tps, &c), Verdict::Slower);
    assert_eq!(judged(&Metric::LatencyAvgMs, &c), Verdict::Faster);
}

#[test]
fn verdict_edges() {
    let one = summarize(&[1.0]).expect("one");
    let three = summarize(&A).expect("three");
    assert_eq!(welch(&one, &three), None);
    assert_eq!(welch(&three, &one), None);
    assert_eq!(
        verdict(&Metric::Tps, Evidence::default()),
        Verdict::InsufficientData
    );
    // A q-value just under ALPHA with a CI that still touches zero is not significant.
    let c = Ratio {
        model: Model::Welch,
        log_ratio: 0.01,
        se: 0.005,
        df: 4.0,
        t: 2.0,
        p_value: 0.049,
        log_ci95: (0.0, 0.02),
        zero_variance: false,
        identical: false,
        growth: ratio::Growth::Blocked {
            rounds: 5.0,
            df_per_round: 1.0,
        },
    };
    assert_eq!(judged(&Metric::Tps, &c), Verdict::Inconclusive);
    let c = Ratio {
        p_value: 0.05,
        log_ci95: (0.005, 0.015),
        ..c
    };
    assert_eq!(judged(&Metric::Tps, &c), Verdict::Inconclusive);
    // The q-value decides, not p: p = 0.01 but q = 0.06 across the family.
    let c = Ratio { p_value: 0.01, ..c };
    let e = |q: Option<f64>, tost_q: Option<f64>| Evidence {
        change: Some(&c),
        q,
        tost_q,
    };
    assert_eq!(
        verdict(&Metric::Tps, e(Some(0.06), None)),
        Verdict::Inconclusive
    );
    assert_eq!(verdict(&Metric::Tps, e(Some(0.049), None)), Verdict::Faster);
    // Outside the family (no q-value): no faster or slower.
    assert_eq!(verdict(&Metric::Tps, e(None, None)), Verdict::Inconclusive);
    // Equivalence is shown by the TOST q-value; it wins over a significant difference.
    assert_eq!(
        verdict(&Metric::Tps, e(Some(0.01), Some(0.049))),
        Verdict::Equivalent
    );
    assert_eq!(
        verdict(&Metric::Tps, e(Some(0.01), Some(0.05))),
        Verdict::Faster
    );
    // Counts, shares, sizes and per-transaction costs are described, not judged.
    let count = Metric::Workload {
        name: "checkpoints_in_window".into(),
        unit: "count".into(),
        higher_is_better: false,
    };
    assert_eq!(verdict(&count, e(Some(0.001), None)), Verdict::NoVerdict);
    // Zero variance on both sides: no p-value, and the verdict says so.
    let a = summarize(&[10.0, 10.0]).expect("a");
    let b = summarize(&[12.0, 12.0, 12.0]).expect("b");
    let c = welch(&a, &b).expect("n >= 2");
    assert!(c.zero_variance && c.p_value.is_nan());
    assert_eq!((c.diff_ci95, c.df), ((2.0, 2.0), 3.0));
    let c = delta(&a, &b).expect("n >= 2");
    assert_eq!(c.df, 3.0);
    assert_eq!(judged(&Metric::Tps, &c).as_str(), "differs, zero variance");
    assert_eq!(tost(&c, 2.0), None);
    let c = delta(&a, &a).expect("n >= 2");
    assert!(c.zero_variance);
    assert_eq!(
        judged(&Metric::Tps, &c).as_str(),
        "identical, zero variance"
    );
    assert_eq!(judged(&count, &c).as_str(), "identical, zero variance");
    // A zero baseline mean has no percent change and no equivalence band.
    let z = summarize(&[0.0, 0.0]).expect("z");
    let c = welch(&z, &b).expect("n >= 2");
    assert_eq!((c.pct, c.pct_ci95), (None, None));
    let c = delta(&z, &b).expect("n >= 2");
    assert_eq!((c.pct(), c.pct_ci95()), (None, None));
    assert_eq!(tost(&c, 2.0), None);
}

#[test]
fn metrics_parse_and_name_the_allowed_ones() {
    assert_eq!(Metric::parse(""), Ok(Metric::Tps));
    for m in Metric::ALL {
        assert_eq!(Metric::parse(m.name()), Ok(m));
    }
    assert!(Metric::Tps.higher_is_better() && Metric::TpsInclConn.higher_is_better());
    assert!(!Metric::LatencyP999Ms.higher_is_better());
    let e = Metric::parse("qps").expect_err("unknown").to_string();
    assert!(e.starts_with("metric: unknown metric \"qps\""), "{e}");
    assert!(e.contains("tps, tps_incl_conn, latency_avg_ms, latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_p999_ms, latency_max_ms"), "{e}");
}

#[test]
fn suspect_rule() {
    let runs = || [(1.0, false), (2.0, true), (3.0, false), (4.0, false)];
    // By default every completed run is used; the suspect ones are counted.
    let s = select_runs(runs(), false);
    assert_eq!(s.used, vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!((s.suspect, s.excluded, s.suspect_included), (1, 0, false));
    // Excluding: enough clean runs, suspect ones are left out.
    let s = select_runs(runs(), true);
    assert_eq!(s.used, vec![1.0, 3.0, 4.0]);
    assert_eq!((s.suspect, s.excluded, s.suspect_included), (1, 1, false));
    // Exactly two clean runs remain: still excluded.
    let s = select_runs([(1.0, true), (2.0, false), (3.0, false)], true);
    assert_eq!(s.used, vec![2.0, 3.0]);
    assert_eq!((s.suspect, s.excluded, s.suspect_included), (1, 1, false));
    // Excluding would leave one run: everything is used and the cell is marked.
    let s = select_runs([(1.0, true), (2.0, false), (3.0, true)], true);
    assert_eq!(s.used, vec![1.0, 2.0, 3.0]);
    assert_eq!((s.suspect, s.excluded, s.suspect_included), (2, 0, true));
    // The same runs by default: used, nothing to mark.
    let s = select_runs([(1.0, true), (2.0, false), (3.0, true)], false);
    assert_eq!(
        (s.used.len(), s.excluded, s.suspect_included),
        (3, 0, false)
    );
    // No suspect runs: nothing to mark even with a single run.
    let s = select_runs([(1.0, false)], true);
    assert_eq!(s.used, vec![1.0]);
    assert_eq!((s.suspect, s.excluded, s.suspect_included), (0, 0, false));
}

#[test]
fn ci_half_width_in_percent_of_the_mean() {
    let s = summarize(&A).expect("a");
    // (1284.0799940619854 - 1232.1666666666667) / 1232.1666666666667
    assert_close(
        s.ci95_half_width_pct().expect("n >= 2"),
        100.0 * (1_284.079_994_061_985_4 - 1_232.166_666_666_666_7) / 1_232.166_666_666_666_7,
    );
    assert_eq!(summarize(&[5.0]).expect("one").ci95_half_width_pct(), None);
    assert_eq!(
        summarize(&[0.0, 0.0]).expect("zero").ci95_half_width_pct(),
        None
    );
}

mod reference;

#[test]
fn below_the_calibrated_n_every_judgement_is_too_few_runs() {
    assert_eq!(MIN_RUNS_TO_DECIDE, 3);
    for v in [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::Equivalent,
        Verdict::Inconclusive,
    ] {
        assert_eq!(gated(v, 2), Verdict::TooFewRuns, "{v}");
        assert_eq!(gated(v, 3), v, "{v}");
    }
    // What is not a judgement stays what it is.
    for v in [
        Verdict::Baseline,
        Verdict::InsufficientData,
        Verdict::NoVerdict,
        Verdict::ZeroVariance { identical: true },
    ] {
        assert_eq!(gated(v, 2), v, "{v}");
    }
    assert_eq!(Verdict::TooFewRuns.as_str(), "too few runs");
}

#[test]
fn the_planned_mde_matches_scipy() {
    // scipy.stats.t.ppf: (t(1 - a/2, df) + t(0.8, df)) * cv * sqrt(2/R), df = (C-1)(R-1),
    // shown as 100 * expm1.
    for (cv, rounds, cells, alpha, want) in [
        (1.0, 5, 2, 0.0125, 3.379_806_639_553_038),
        (2.0, 10, 4, 0.05, 2.634_167_713_916_155),
        (1.5, 3, 3, 0.05 / 18.0, 9.635_000_488_321_879),
    ] {
        let got = super::planned_mde_pct(cv, rounds, cells, alpha).expect("a design");
        assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    }
    assert_eq!(super::planned_mde_pct(1.0, 1, 2, 0.05), None);
    assert_eq!(super::planned_mde_pct(1.0, 5, 1, 0.05), None);
}
