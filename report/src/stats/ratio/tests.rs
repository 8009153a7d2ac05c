//! Changes as ratios pinned to statsmodels 0.15.0 and SciPy 1.17.1 (NumPy 2.4.6, pandas
//! 3.1.1): the values printed by `report/tests/reference/stats_reference.py` (`ols(...)` of
//! `log(y) ~ C(cell, Treatment('base')) + C(round)` and friends with its `params`, `bse`,
//! `df_resid`, `pvalues` and `conf_int()`; the delta-method Welch comparison computed from its
//! formula and checked there against `ttest_ind` of each cell's runs over its mean; the TOST,
//! MDE and rounds computed from those with `scipy.stats.t`).

use super::super::linear::cell_effect;
use super::super::power::{MAX_EXTRA_ROUNDS, log_band};
use super::super::tost::tost;
use super::super::welch::{summarize, t_quantile, t_two_sided_p};
use super::*;

/// Relative closeness (each call pins one value).
#[track_caller]
fn rel(got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol * want.abs(),
        "got {got}, want {want}"
    );
}

const TOL: f64 = 1e-9;

fn runs<'a>(host: &'a str, xs: &[(u32, f64)]) -> Vec<Run<'a>> {
    xs.iter()
        .map(|&(round, value)| Run { value, round, host })
        .collect()
}

/// Balanced: 5 rounds, one run of each cell in each, a drift across rounds.
const BAL_B: [(u32, f64); 5] = [
    (0, 1000.0),
    (1, 1010.0),
    (2, 1024.0),
    (3, 1031.0),
    (4, 1046.0),
];
const BAL_T: [(u32, f64); 5] = [
    (0, 1013.0),
    (1, 1020.0),
    (2, 1039.0),
    (3, 1041.0),
    (4, 1062.0),
];
/// Missing runs: no baseline in round 3, no treatment in round 1.
const MIS_B: [(u32, f64); 5] = [
    (0, 1000.0),
    (1, 1010.0),
    (2, 1024.0),
    (4, 1046.0),
    (5, 1050.0),
];
const MIS_T: [(u32, f64); 5] = [
    (0, 1013.0),
    (2, 1039.0),
    (3, 1041.0),
    (4, 1062.0),
    (5, 1063.0),
];

struct OlsRef {
    coef: f64,
    bse: f64,
    df: f64,
    p: f64,
    ci: (f64, f64),
}

#[track_caller]
fn check(r: &Ratio, want: &OlsRef) {
    rel(r.log_ratio, want.coef, TOL);
    rel(r.se, want.bse, TOL);
    assert_eq!(r.df, want.df);
    rel(r.p_value, want.p, TOL);
    rel(r.log_ci95.0, want.ci.0, TOL);
    rel(r.log_ci95.1, want.ci.1, TOL);
}

#[test]
fn rounds_are_blocks_as_statsmodels_fits_them() {
    let (b, t) = (runs("h", &BAL_B), runs("h", &BAL_T));
    let r = compare(&b, &t, true).expect("a comparison");
    assert_eq!(r.model, Model::Rounds);
    // ols balanced: coef=0.012428769796872796 bse=0.001153730725846451 df_resid=4.0
    // p=0.00042102794682275023 conf_int=(0.009225499770380119, 0.015632039823365473)
    check(
        &r,
        &OlsRef {
            coef: 0.012_428_769_796_872_796,
            bse: 0.001_153_730_725_846_451,
            df: 4.0,
            p: 0.000_421_027_946_822_750_23,
            ci: (0.009_225_499_770_380_119, 0.015_632_039_823_365_473),
        },
    );
    rel(r.pct().expect("pct"), 1.250_632_794_056_874_4, TOL);
    let ci = r.pct_ci95().expect("ci");
    rel(ci.0, 0.926_818_585_924_222_7, TOL);
    rel(ci.1, 1.575_485_929_630_792, TOL);
    rel(r.mde_pct().expect("mde"), 0.429_810_022_174_491_16, TOL);
    let x = tost(&r, 2.0).expect("a test");
    rel(x.p_value, 0.001_538_186_425_388_151_8, TOL);
    rel(x.p_lower, 4.649_234_670_903_068e-6, TOL);
    rel(x.pct_ci90.0, 1.001_905_060_122_165_5, TOL);
    rel(x.pct_ci90.1, 1.499_973_045_998_956_2, TOL);
    assert_eq!(r.rounds_to_equivalence(2.0, MAX_EXTRA_ROUNDS), Some(0));

    // The same runs pooled (a sequential order): the drift is noise, nothing is shown.
    let w = compare(&b, &t, false).expect("a comparison");
    assert_eq!(w.model, Model::Welch);
    // delta balanced pooled: d=0.012444259365290478 se=0.011455040072778274
    // df=7.971288236166001 p=0.30907723777616986
    rel(w.log_ratio, 0.012_444_259_365_290_478, TOL);
    rel(w.se, 0.011_455_040_072_778_274, TOL);
    rel(w.df, 7.971_288_236_166_001, TOL);
    rel(w.p_value, 0.309_077_237_776_169_86, TOL);
    rel(w.mde_pct().expect("mde"), 3.729_488_639_579_472_4, TOL);
    let x = tost(&w, 2.0).expect("a test");
    rel(x.p_value, 0.269_332_544_961_638_2, TOL);
    rel(x.pct_ci90.0, -0.882_769_379_090_903_9, TOL);
    rel(x.pct_ci90.1, 3.433_158_598_367_649_4, TOL);
    assert_eq!(w.rounds_to_equivalence(2.0, MAX_EXTRA_ROUNDS), Some(29));
    assert_eq!(w.rounds_to_equivalence(2.0, 28), None);
}

#[test]
fn unbalanced_and_missing_rounds_enter_the_fit() {
    // Round 2 has two runs of the treatment cell.
    let mut t = BAL_T.to_vec();
    t.push((2, 1036.0));
    let r = compare(&runs("h", &BAL_B), &runs("h", &t), true).expect("a comparison");
    assert_eq!(r.model, Model::Rounds);
    // ols unbalanced: coef=0.01219941224333132 bse=0.0010752374635046805 df_resid=5.0
    // p=9.303505029386687e-05 conf_int=(0.009435426350650523, 0.014963398136012118)
    check(
        &r,
        &OlsRef {
            coef: 0.012_199_412_243_331_32,
            bse: 0.001_075_237_463_504_680_5,
            df: 5.0,
            p: 9.303_505_029_386_687e-5,
            ci: (0.009_435_426_350_650_523, 0.014_963_398_136_012_118),
        },
    );
    rel(r.mde_pct().expect("mde"), 0.375_976_406_144_297_6, TOL);

    let r = compare(&runs("h", &MIS_B), &runs("h", &MIS_T), true).expect("a comparison");
    assert_eq!(r.model, Model::Rounds);
    // ols missing: coef=0.013735975783430998 bse=0.0006743303838075744 df_resid=3.0
    // p=0.00025867540934520046 conf_int=(0.011589955544942038, 0.015881996021919958)
    check(
        &r,
        &OlsRef {
            coef: 0.013_735_975_783_430_998,
            bse: 0.000_674_330_383_807_574_4,
            df: 3.0,
            p: 0.000_258_675_409_345_200_46,
            ci: (0.011_589_955_544_942_038, 0.015_881_996_021_919_958),
        },
    );
    rel(r.pct().expect("pct"), 1.383_074_773_002_347_2, TOL);
    rel(r.mde_pct().expect("mde"), 0.280_977_388_438_945, TOL);
}

/// `y ~ C(cell) + C(round)` on the raw scale, fitted by [`cell_effect`], with the t-test and
/// the 95% CI from its coefficient, standard error and df.
#[track_caller]
fn check_raw(base: &[(u32, f64)], treat: &[(u32, f64)], want: &OlsRef) {
    let y: Vec<f64> = base.iter().chain(treat).map(|r| r.1).collect();
    let treated: Vec<bool> = (0..y.len()).map(|i| i >= base.len()).collect();
    let rounds: Vec<usize> = base.iter().chain(treat).map(|r| r.0 as usize).collect();
    let f = cell_effect(&y, &treated, &[rounds]).expect("a fit");
    rel(f.coef, want.coef, TOL);
    rel(f.se, want.bse, TOL);
    assert_eq!(f.df, want.df);
    let p = t_two_sided_p(f.coef / f.se, f.df);
    rel(p, want.p, TOL);
    let half = t_quantile(f.df) * f.se;
    rel(f.coef - half, want.ci.0, TOL);
    rel(f.coef + half, want.ci.1, TOL);
}

#[test]
fn the_linear_model_on_the_raw_scale() {
    // ols balanced raw: coef=12.800000000000239 bse=1.2409673645990849 df_resid=4.0
    // p=0.0004984450281194904 conf_int=(9.354522234848904, 16.245477765151573)
    check_raw(
        &BAL_B,
        &BAL_T,
        &OlsRef {
            coef: 12.800_000_000_000_239,
            bse: 1.240_967_364_599_084_9,
            df: 4.0,
            p: 0.000_498_445_028_119_490_4,
            ci: (9.354_522_234_848_904, 16.245_477_765_151_573),
        },
    );
    // ols unbalanced raw: coef=12.562500000000455 bse=1.1507470399701234 df_resid=5.0
    // p=0.0001120857894690649 conf_int=(9.604410561641, 15.52058943835991)
    let mut t = BAL_T.to_vec();
    t.push((2, 1036.0));
    check_raw(
        &BAL_B,
        &t,
        &OlsRef {
            coef: 12.562_500_000_000_455,
            bse: 1.150_747_039_970_123_4,
            df: 5.0,
            p: 0.000_112_085_789_469_064_9,
            ci: (9.604_410_561_641, 15.520_589_438_359_91),
        },
    );
    // ols missing raw: coef=14.250000000000341 bse=0.7499999999999843 df_resid=3.0
    // p=0.00031834344007111465 conf_int=(11.86316527103761, 16.636834728963073)
    check_raw(
        &MIS_B,
        &MIS_T,
        &OlsRef {
            coef: 14.250_000_000_000_341,
            bse: 0.749_999_999_999_984_3,
            df: 3.0,
            p: 0.000_318_343_440_071_114_65,
            ci: (11.863_165_271_037_61, 16.636_834_728_963_073),
        },
    );
}

#[test]
fn rounds_and_hosts_as_statsmodels_fits_them() {
    let rows: [(bool, u32, &str, f64); 12] = [
        (false, 0, "a", 1000.0),
        (true, 0, "a", 1012.0),
        (false, 0, "b", 905.0),
        (true, 0, "b", 918.0),
        (false, 1, "a", 1008.0),
        (true, 1, "a", 1019.0),
        (false, 1, "b", 913.0),
        (true, 1, "b", 921.0),
        (false, 2, "a", 1017.0),
        (true, 2, "a", 1031.0),
        (false, 2, "b", 920.0),
        (true, 2, "b", 934.0),
    ];
    let side = |treated: bool| -> Vec<Run<'static>> {
        rows.iter()
            .filter(|r| r.0 == treated)
            .map(|r| Run {
                value: r.3,
                round: r.1,
                host: r.2,
            })
            .collect()
    };
    let r = compare(&side(false), &side(true), true).expect("a comparison");
    assert_eq!(r.model, Model::RoundsAndHosts);
    // ols rounds and hosts: coef=0.012423935698624433 bse=0.0008523018348095712 df_resid=7.0
    // p=1.7072887292147858e-06 conf_int=(0.010408562110356694, 0.014439309286892172)
    check(
        &r,
        &OlsRef {
            coef: 0.012_423_935_698_624_433,
            bse: 0.000_852_301_834_809_571_2,
            df: 7.0,
            p: 1.707_288_729_214_785_8e-6,
            ci: (0.010_408_562_110_356_694, 0.014_439_309_286_892_172),
        },
    );
    rel(r.mde_pct().expect("mde"), 0.278_292_646_869_551_63, TOL);
}

#[test]
fn hosts_are_blocks_on_the_log_scale() {
    let mut base = runs("a", &[(0, 1000.0), (1, 1012.0), (2, 995.0)]);
    base.extend(runs("b", &[(0, 905.0), (1, 898.0), (2, 910.0)]));
    let mut treat = runs("a", &[(0, 1031.0), (1, 1040.0), (2, 1022.0)]);
    treat.extend(runs("b", &[(0, 930.0), (1, 925.0)]));
    let r = compare(&base, &treat, false).expect("a comparison");
    assert_eq!(r.model, Model::Hosts);
    // ols hosts: coef=0.026912903723912862 bse=0.004372411026301078 df_resid=8.0
    // p=0.00027245072747081995 conf_int=(0.016830105816450287, 0.03699570163137544)
    check(
        &r,
        &OlsRef {
            coef: 0.026_912_903_723_912_862,
            bse: 0.004_372_411_026_301_078,
            df: 8.0,
            p: 0.000_272_450_727_470_819_95,
            ci: (0.016_830_105_816_450_287, 0.036_995_701_631_375_44),
        },
    );
    rel(r.mde_pct().expect("mde"), 1.406_741_607_104_754_7, TOL);
}

#[test]
fn a_host_spanned_by_the_rounds_is_left_out() {
    // Each round on one host: statsmodels' pseudo-inverse fit (rank 4 of 5 columns).
    let base = [
        Run {
            value: 1000.0,
            round: 0,
            host: "a",
        },
        Run {
            value: 950.0,
            round: 1,
            host: "b",
        },
        Run {
            value: 1004.0,
            round: 2,
            host: "a",
        },
    ];
    let treat = [
        Run {
            value: 1020.0,
            round: 0,
            host: "a",
        },
        Run {
            value: 972.0,
            round: 1,
            host: "b",
        },
        Run {
            value: 1021.0,
            round: 2,
            host: "a",
        },
    ];
    let r = compare(&base, &treat, true).expect("a comparison");
    assert_eq!(r.model, Model::RoundsAndHosts);
    // ols nested: coef=0.01982898835834317 bse=0.0017619208136906536 df_resid=2.0
    // p=0.007803063614407417 conf_int=(0.012248054959714686, 0.027409921756971656)
    check(
        &r,
        &OlsRef {
            coef: 0.019_828_988_358_343_17,
            bse: 0.001_761_920_813_690_653_6,
            df: 2.0,
            p: 0.007_803_063_614_407_417,
            ci: (0.012_248_054_959_714_686, 0.027_409_921_756_971_656),
        },
    );
}

#[test]
fn designs_that_are_not_blocked() {
    // One round holds both cells: Welch.
    let b = runs("h", &[(0, 10.0), (1, 11.0), (2, 12.0)]);
    let t = runs("h", &[(0, 10.5), (3, 11.5), (4, 12.5)]);
    assert_eq!(model_for(&b, &t, true), Model::Welch);
    assert_eq!(compare(&b, &t, true).expect("welch").model, Model::Welch);
    // Each cell on its own host, one run per round: the host is the cell; back to Welch.
    let b = runs("a", &[(0, 10.0), (1, 11.0), (2, 12.0)]);
    let t = runs("b", &[(0, 10.5), (1, 11.5), (2, 12.5)]);
    assert_eq!(model_for(&b, &t, false), Model::Hosts);
    assert_eq!(compare(&b, &t, false).expect("welch").model, Model::Welch);
    // Two rounds, one run each: one residual degree of freedom.
    let b = runs("h", &[(0, 10.0), (1, 11.0)]);
    let t = runs("h", &[(0, 10.5), (1, 11.4)]);
    let r = compare(&b, &t, true).expect("rounds");
    assert_eq!((r.model, r.df), (Model::Rounds, 1.0));
    // Two rounds, the second with the cells on two hosts: no residual degree of freedom.
    let b = runs("a", &[(0, 10.0), (1, 11.0)]);
    let mut t = runs("a", &[(0, 10.5)]);
    t.extend(runs("b", &[(1, 11.4)]));
    assert_eq!(model_for(&b, &t, true), Model::RoundsAndHosts);
    assert_eq!(compare(&b, &t, true).expect("welch").model, Model::Welch);
    // A value that is not positive: no log fit, Welch on the means.
    let b = runs("h", &[(0, 0.0), (1, 11.0), (2, 12.0)]);
    let t = runs("h", &[(0, 10.5), (1, 11.4), (2, 12.1)]);
    assert_eq!(compare(&b, &t, true).expect("welch").model, Model::Welch);
}

struct DeltaRef {
    d: f64,
    se: f64,
    df: f64,
    p: f64,
    pct_ci95: (f64, f64),
    mde: f64,
}

#[track_caller]
fn check_delta(base: &[f64], treat: &[f64], want: &DeltaRef) -> Ratio {
    let r = delta(&summarize(base).expect("b"), &summarize(treat).expect("t")).expect("a ratio");
    assert_eq!(r.model, Model::Welch);
    rel(r.log_ratio, want.d, TOL);
    rel(r.se, want.se, TOL);
    rel(r.df, want.df, TOL);
    rel(r.p_value, want.p, TOL);
    let ci = r.pct_ci95().expect("ci");
    rel(ci.0, want.pct_ci95.0, TOL);
    rel(ci.1, want.pct_ci95.1, TOL);
    rel(r.mde_pct().expect("mde"), want.mde, TOL);
    r
}

const A: [f64; 3] = [1234.5, 1210.2, 1251.8];
const B: [f64; 3] = [1301.3, 1288.9, 1320.4];
const C: [f64; 3] = [1198.0, 1275.5, 1222.1];
const E: [f64; 6] = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6];
const G: [f64; 6] = [1012.0, 1015.3, 1013.1, 1016.0, 1011.2, 1014.4];

#[test]
fn welch_with_the_delta_method_matches_the_reference() {
    // delta A,B: the % change is the ratio of the means, 5.791965372649843.
    let r = check_delta(
        &A,
        &B,
        &DeltaRef {
            d: 0.056_304_388_895_020_1,
            se: 0.012_053_235_739_082_915,
            df: 3.628_479_081_907_895_6,
            p: 0.011_992_552_756_674_5,
            pct_ci95: (2.167_516_388_677_054_5, 9.544_993_683_024_632),
            mde: 4.742_879_575_777_506,
        },
    );
    rel(r.pct().expect("pct"), 5.791_965_372_649_843, TOL);
    let x = tost(&r, 2.0).expect("a test");
    rel(x.p_value, 0.977_960_402_541_466_7, TOL);
    rel(x.p_lower, 0.002_181_497_808_697_221, TOL);
    rel(x.pct_ci90.0, 3.028_332_740_402_708_3, TOL);
    rel(x.pct_ci90.1, 8.629_729_703_652_753, TOL);
    // The change itself is outside the band: no number of rounds shows equivalence.
    assert_eq!(r.rounds_to_equivalence(2.0, MAX_EXTRA_ROUNDS), None);

    // Same means within noise: inconclusive at ±2%, 8 more rounds would do.
    let r = check_delta(
        &A,
        &C,
        &DeltaRef {
            d: -0.000_243_503_200_564_987_3,
            se: 0.021_010_287_542_255_13,
            df: 3.030_583_138_840_613,
            p: 0.991_473_759_995_953_8,
            pct_ci95: (-6.454_992_849_506_912, 6.848_365_574_364_082),
            mde: 9.090_675_638_008_78,
        },
    );
    let x = tost(&r, 2.0).expect("a test");
    rel(x.p_value, 0.205_784_032_503_216_56, TOL);
    rel(x.p_upper, 0.204_885_820_457_897_36, TOL);
    rel(x.pct_ci90.0, -4.828_112_480_270_288, TOL);
    rel(x.pct_ci90.1, 5.021_886_001_791_612_5, TOL);
    assert_eq!(r.rounds_to_equivalence(2.0, MAX_EXTRA_ROUNDS), Some(8));
    assert_eq!(r.rounds_to_equivalence(2.0, 7), None);
    let x = tost(&r, 10.0).expect("a test");
    rel(x.p_value, 0.009_741_366_091_523_401, TOL);
    rel(x.p_lower, 0.007_498_859_078_868_29, TOL);

    // +1.3%, precisely measured.
    let r = check_delta(
        &E,
        &G,
        &DeltaRef {
            d: 0.012_907_675_483_957_881,
            se: 0.000_987_137_171_692_592_3,
            df: 9.660_737_943_001_077,
            p: 1.839_914_961_833_270_2e-7,
            pct_ci95: (1.075_510_666_436_582, 1.523_251_907_454_500_6),
            mde: 0.308_384_146_178_031_7,
        },
    );
    let x = tost(&r, 2.0).expect("a test");
    rel(x.p_value, 2.254_737_988_100_179_7e-5, TOL);
    rel(x.p_lower, 1.260_249_699_006_236_3e-11, 1e-7);
    let x = tost(&r, 1.0).expect("a test");
    rel(x.p_value, 0.993_029_188_171_586, TOL);
    rel(x.pct_ci90.0, 1.117_409_994_973_703_3, TOL);
    rel(x.pct_ci90.1, 1.481_184_412_984_074_5, TOL);
}

#[test]
fn a_large_drop_stays_above_minus_100_percent() {
    // The difference over the baseline mean would give about -95.2% [-140%, -50%].
    let r = check_delta(
        &[40.0, 2.0, 38.0, 3.0],
        &[1.0, 0.9, 1.1, 1.0],
        &DeltaRef {
            d: -3.032_546_246_676_707_5,
            se: 0.509_903_137_525_068_3,
            df: 3.038_707_885_025_156_8,
            p: 0.009_166_344_540_785_859,
            pct_ci95: (-99.037_752_803_595_47, -75.863_341_629_203_09),
            mde: 724.025_247_752_960_5,
        },
    );
    rel(r.pct().expect("pct"), -95.180_722_891_566_26, TOL);
}

#[test]
fn the_band_on_the_log_scale() {
    let (l, u) = log_band(2.0);
    rel(l, (0.98_f64).ln(), 1e-15);
    rel(u, (1.02_f64).ln(), 1e-15);
    assert_eq!(log_band(100.0).0, f64::NEG_INFINITY);
    // Zero variance on both sides: no test, no MDE, no rounds.
    let a = summarize(&[10.0, 10.0]).expect("a");
    let b = summarize(&[12.0, 12.0, 12.0]).expect("b");
    let r = delta(&a, &b).expect("a ratio");
    assert!(r.zero_variance && !r.identical && r.p_value.is_nan());
    rel(r.pct().expect("pct"), 20.0, 1e-12);
    assert_eq!((r.mde_pct(), tost(&r, 2.0)), (None, None));
    assert_eq!(r.rounds_to_equivalence(2.0, 10), None);
    // Zero means: identical, no % change.
    let z = summarize(&[0.0, 0.0]).expect("z");
    let r = delta(&z, &z).expect("a ratio");
    assert!(r.zero_variance && r.identical && r.pct().is_none());
    // A mean that is not positive, with variance: no ratio.
    let n = summarize(&[-1.0, 0.5, 0.2]).expect("n");
    assert_eq!(delta(&n, &b), None);
}
