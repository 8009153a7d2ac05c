//! TOST and Benjamini–Hochberg pinned to statsmodels 0.15.0 and SciPy 1.17.1: the values
//! printed by `report/tests/reference/stats_reference.py` (the TOST of the change on the log
//! scale, `log_tost`, from the delta-method comparison `delta_ratio` with `scipy.stats.t`;
//! `false_discovery_control(p, method="bh")`, which the script checks against
//! `multipletests(p, method="fdr_bh")`).

use super::super::*;
use super::{A, C};

const E: [f64; 6] = [1000.1, 1003.2, 998.7, 1001.5, 999.9, 1000.6];
const F: [f64; 6] = [1001.0, 999.4, 1002.2, 1000.3, 998.8, 1001.7];
const G: [f64; 6] = [1012.0, 1015.3, 1013.1, 1016.0, 1011.2, 1014.4];

/// Relative closeness, also for tiny p-values.
#[track_caller]
fn rel(got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol * want.abs(),
        "got {got}, want {want}"
    );
}

struct TostRef {
    p: f64,
    p_lower: f64,
    p_upper: f64,
    df: f64,
    pct_ci90: (f64, f64),
}

#[track_caller]
fn check_tost(base: &[f64], treat: &[f64], band: f64, r: &TostRef) -> (Ratio, Tost) {
    let b = summarize(base).expect("base");
    let t = summarize(treat).expect("treat");
    let c = delta(&b, &t).expect("n >= 2");
    let x = tost(&c, band).expect("a test");
    rel(x.p_value, r.p, 1e-9);
    rel(x.p_lower, r.p_lower, 1e-9);
    rel(x.p_upper, r.p_upper, 1e-9);
    rel(c.df, r.df, 1e-10);
    rel(x.pct_ci90.0, r.pct_ci90.0, 1e-9);
    rel(x.pct_ci90.1, r.pct_ci90.1, 1e-9);
    rel(x.bounds.0, (1.0 - band / 100.0).ln(), 1e-12);
    rel(x.bounds.1, (1.0 + band / 100.0).ln(), 1e-12);
    (c, x)
}

fn judged(c: &Ratio, x: &Tost) -> Verdict {
    verdict(
        &Metric::Tps,
        Evidence {
            change: Some(c),
            q: Some(c.p_value),
            tost_q: Some(x.p_value),
        },
    )
}

#[test]
fn tost_on_the_log_scale_matches_the_reference() {
    // Same means, n = 3 at CV 1.7-3.2%: the 90% CI (-4.8%, +5.0%) is not inside ±2%.
    let (c, x) = check_tost(
        &A,
        &C,
        2.0,
        &TostRef {
            p: 0.205_784_032_503_216_56,
            p_lower: 0.205_784_032_503_216_56,
            p_upper: 0.204_885_820_457_897_36,
            df: 3.030_583_138_840_613,
            pct_ci90: (-4.828_112_480_270_288, 5.021_886_001_791_612_5),
        },
    );
    assert_eq!(judged(&c, &x), Verdict::Inconclusive);
    // ... but it is inside ±10%.
    let (c, x) = check_tost(
        &A,
        &C,
        10.0,
        &TostRef {
            p: 0.009_741_366_091_523_401,
            p_lower: 0.007_498_859_078_868_29,
            p_upper: 0.009_741_366_091_523_401,
            df: 3.030_583_138_840_613,
            pct_ci90: (-4.828_112_480_270_288, 5.021_886_001_791_612_5),
        },
    );
    assert_eq!(judged(&c, &x), Verdict::Equivalent);
    // An A/A pair at CV 0.15%, n = 6: equivalent within ±2%.
    let (c, x) = check_tost(
        &E,
        &F,
        2.0,
        &TostRef {
            p: 2.570_521_021_816_731_5e-10,
            p_lower: 2.334_620_413_206_010_6e-10,
            p_upper: 2.570_521_021_816_731_5e-10,
            df: 9.764_371_906_327_733,
            pct_ci90: (-0.160_281_430_380_801_5, 0.140_520_982_540_099_23),
        },
    );
    // delta E,F: t=-0.12071770853968743 p=0.9063625012716625
    rel(c.t, -0.120_717_708_539_687_43, 1e-9);
    rel(c.p_value, 0.906_362_501_271_662_5, 1e-9);
    assert_eq!(judged(&c, &x), Verdict::Equivalent);
    // +1.3%, precisely measured: significant (p = 1.8e-7) and inside ±2%, so equivalent ...
    let (c, x) = check_tost(
        &E,
        &G,
        2.0,
        &TostRef {
            p: 2.254_737_988_100_179_7e-5,
            p_lower: 1.260_249_699_006_236_3e-11,
            p_upper: 2.254_737_988_100_179_7e-5,
            df: 9.660_737_943_001_077,
            pct_ci90: (1.117_409_994_973_703_3, 1.481_184_412_984_074_5),
        },
    );
    // delta E,G: t=13.075868130693292 p=1.8399149618332702e-07
    rel(c.t, 13.075_868_130_693_292, 1e-9);
    rel(c.p_value, 1.839_914_961_833_270_2e-7, 1e-9);
    assert_eq!(judged(&c, &x), Verdict::Equivalent);
    // ... and outside ±1%: faster.
    let (c, x) = check_tost(
        &E,
        &G,
        1.0,
        &TostRef {
            p: 0.993_029_188_171_586,
            p_lower: 4.161_464_355_362_128_5e-10,
            p_upper: 0.993_029_188_171_586,
            df: 9.660_737_943_001_077,
            pct_ci90: (1.117_409_994_973_703_3, 1.481_184_412_984_074_5),
        },
    );
    assert_eq!(judged(&c, &x), Verdict::Faster);
    // The TOST p-value is below ALPHA exactly when the 90% CI is inside the band.
    assert!(x.pct_ci90.1 > 1.0 && x.p_value >= ALPHA);
}

#[test]
fn benjamini_hochberg_matches_scipy() {
    // bh family: unsorted, with ties.
    let q = fdr::bh_q_values(&[0.01, 0.04, 0.03, 0.2, 0.04, 0.001, 0.9, 0.5]);
    let want = [
        0.04,
        0.064,
        0.064,
        0.266_666_666_666_666_66,
        0.064,
        0.008,
        0.9,
        0.571_428_571_428_571_4,
    ];
    assert_eq!(q.len(), want.len());
    for (g, w) in q.iter().zip(want) {
        rel(*g, w, 1e-12);
    }
    rel(fdr::bh_q_values(&[0.03])[0], 0.03, 1e-15);
    assert!(fdr::bh_q_values(&[]).is_empty());
    // NaN is not a member of the family: the others are as if it were absent.
    let q = fdr::bh_q_values(&[0.01, f64::NAN, 0.04]);
    assert!(q[1].is_nan());
    rel(q[0], 0.02, 1e-15);
    rel(q[2], 0.04, 1e-15);
}
