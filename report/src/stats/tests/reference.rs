//! TOST and Benjamini–Hochberg pinned to statsmodels 0.15.0 and SciPy 1.17.1: the values
//! printed by `report/tests/reference/stats_reference.py`
//! (`ttost_ind(treat, base, -δ, δ, usevar="unequal")` with `δ = band·mean_b/100`,
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
fn check_tost(base: &[f64], treat: &[f64], band: f64, r: &TostRef) -> (Change, Tost) {
    let b = summarize(base).expect("base");
    let t = summarize(treat).expect("treat");
    let c = welch(&b, &t).expect("n >= 2");
    let x = tost(&b, &c, band).expect("a test");
    rel(x.p_value, r.p, 1e-6);
    rel(x.p_lower, r.p_lower, 1e-6);
    rel(x.p_upper, r.p_upper, 1e-6);
    rel(c.df, r.df, 1e-10);
    rel(x.pct_ci90.0, r.pct_ci90.0, 1e-7);
    rel(x.pct_ci90.1, r.pct_ci90.1, 1e-7);
    rel(x.bound, band * b.mean / 100.0, 1e-12);
    (c, x)
}

fn judged(c: &Change, x: &Tost) -> Verdict {
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
fn tost_matches_statsmodels() {
    // Same means, n = 3 at CV 1.7-3.2%: the 90% CI (-4.9%, +4.9%) is not inside ±2%.
    let (c, x) = check_tost(
        &A,
        &C,
        2.0,
        &TostRef {
            p: 0.207_848_610_145_489_08,
            p_lower: 0.207_848_610_145_489_08,
            p_upper: 0.202_816_136_171_464_24,
            df: 3.031_013_332_440_436_7,
            pct_ci90: (-4.947_335_955_943_162, 4.898_641_244_729_821),
        },
    );
    assert_eq!(judged(&c, &x), Verdict::Inconclusive);
    // ... but it is inside ±10%.
    let (c, x) = check_tost(
        &A,
        &C,
        10.0,
        &TostRef {
            p: 0.008_654_243_810_720_691,
            p_lower: 0.008_654_243_810_720_691,
            p_upper: 0.008_539_439_601_271_52,
            df: 3.031_013_332_440_436_7,
            pct_ci90: (-4.947_335_955_943_162, 4.898_641_244_729_821),
        },
    );
    assert_eq!(judged(&c, &x), Verdict::Equivalent);
    // An A/A pair at CV 0.15%, n = 6: equivalent within ±2%.
    let (c, x) = check_tost(
        &E,
        &F,
        2.0,
        &TostRef {
            p: 2.573_775_762_239_083_7e-10,
            p_lower: 2.573_775_762_239_083_7e-10,
            p_upper: 2.337_931_918_540_815e-10,
            df: 9.764_082_937_953_889,
            pct_ci90: (-0.160_403_634_606_218_84, 0.140_416_959_056_603_45),
        },
    );
    // welch E,F: t=-0.12071677124607307 p=0.9063632956947563
    rel(c.t, -0.120_716_771_246_073_07, 1e-9);
    rel(c.p_value, 0.906_363_295_694_756_3, 1e-9);
    assert_eq!(judged(&c, &x), Verdict::Equivalent);
    // +1.3%, precisely measured: significant (p = 1.9e-7) and inside ±2%, so equivalent ...
    let (c, x) = check_tost(
        &E,
        &G,
        2.0,
        &TostRef {
            p: 2.150_531_759_600_384_6e-5,
            p_lower: 1.530_728_119_214_987_6e-11,
            p_upper: 2.150_531_759_600_384_6e-5,
            df: 9.616_047_871_014_585,
            pct_ci90: (1.118_102_292_105_007_2, 1.480_165_529_347_358),
        },
    );
    // welch E,G: t=13.059630004715311 p=1.9493516177440585e-07
    rel(c.t, 13.059_630_004_715_311, 1e-9);
    rel(c.p_value, 1.949_351_617_744_058_5e-7, 1e-6);
    assert_eq!(judged(&c, &x), Verdict::Equivalent);
    // ... and outside ±1%: faster.
    let (c, x) = check_tost(
        &E,
        &G,
        1.0,
        &TostRef {
            p: 0.993_124_508_030_844_7,
            p_lower: 4.738_032_957_308_695e-10,
            p_upper: 0.993_124_508_030_844_7,
            df: 9.616_047_871_014_585,
            pct_ci90: (1.118_102_292_105_007_2, 1.480_165_529_347_358),
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
