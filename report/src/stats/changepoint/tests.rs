//! E-Divisive pinned to MongoDB's `signal-processing-algorithms` 2.1.6 (NumPy 1.26.4, its C
//! extension loaded), run once on the series below:
//!
//! ```python
//! import numpy as np
//! from signal_processing_algorithms.energy_statistics import energy_statistics as es
//! from signal_processing_algorithms.determinism import deterministic_numpy_random
//! d = es._get_distance_matrix(es._get_valid_input(series))
//! es._calculate_t_stats(d)            # q̂ of every split: Q_* below
//! # each level: es._get_next_significant_change_point(d, cps, memo, 1.0, 20000) under
//! # deterministic_numpy_random(1234) fills memo with every window's (index, q̂); the level's
//! # best is the largest; `better` counts the 20000 shuffles (of every window, the largest
//! # q̂ over windows) at least as large, p = better / 20001: LEVELS_* below.
//! with deterministic_numpy_random(1234):
//!     es.e_divisive(series, pvalue=0.05, permutations=100)   # FOUND_* below
//! ```
//!
//! The `q̂` values, each level's windows, candidates and best split are deterministic and
//! pinned exactly (to 1e-12). The permutation p-values come from other random shuffles (NumPy's
//! Mersenne Twister there, xoshiro256** here), so they are pinned within the permutation
//! test's own error: 4 binomial standard deviations of the 999-round estimate around the
//! 20000-round reference, plus the `+ 1` of this p-value; and significant or not at 0.05
//! alike.
//!
//! The change points found (`FOUND_*`) are also those of Apache Otava 0.8.0 on the same series,
//! by both `otava.analysis.compute_change_points_orig(series, max_pvalue=0.05, seed=1)` (its
//! own E-Divisive with a permutation test) and `compute_change_points(series, max_pvalue=0.05)`
//! (its t-test variant): none in `FLAT`, 6 in `STEP`, 6 and 12 in `TWO`, 9 in `COMMITS`.

use super::*;

/// Noise around 0 and no change (log ratios).
const FLAT: [f64; 12] = [
    0.012, -0.004, 0.007, -0.011, 0.003, 0.009, -0.006, 0.001, -0.008, 0.005, -0.002, 0.010,
];
/// One step, at 6.
const STEP: [f64; 12] = [
    0.010, 0.002, 0.008, -0.003, 0.005, 0.001, 0.062, 0.055, 0.068, 0.059, 0.064, 0.051,
];
/// Two changes, at 6 and 12.
const TWO: [f64; 18] = [
    0.00, 0.01, -0.01, 0.005, -0.004, 0.002, 0.08, 0.09, 0.075, 0.085, 0.082, 0.088, 0.03, 0.025,
    0.035, 0.028, 0.032, 0.027,
];
/// Per-commit effects, a step at commit 9.
const COMMITS: [f64; 16] = [
    0.041, 0.046, 0.038, 0.044, 0.040, 0.047, 0.043, 0.039, 0.045, 0.012, 0.016, 0.009, 0.014,
    0.011, 0.017, 0.013,
];

const Q_FLAT: [f64; 12] = [
    0.0,
    0.014212121212121216,
    0.004466666666666673,
    0.006333333333333334,
    0.0036666666666666653,
    0.002066666666666653,
    0.004999999999999975,
    0.002409523809523776,
    0.0014166666666666332,
    0.0054444444444443985,
    0.0036666666666665924,
    0.0105757575757574,
];
const Q_STEP: [f64; 12] = [
    0.0,
    0.02745454545454546,
    0.05760000000000001,
    0.09488888888888887,
    0.14725,
    0.21068571428571434,
    0.30200000000000016,
    0.210457142857143,
    0.1540000000000003,
    0.09577777777777823,
    0.05640000000000078,
    0.027454545454547195,
];
const Q_TWO: [f64; 18] = [
    0.0,
    0.04236601307189543,
    0.06702777777777778,
    0.1197777777777778,
    0.16456349206349205,
    0.23196239316239325,
    0.3016111111111111,
    0.20008946608946615,
    0.13132777777777782,
    0.09622222222222218,
    0.08162777777777772,
    0.09344011544011538,
    0.13794444444444431,
    0.10500854700854688,
    0.0800634920634918,
    0.059244444444444065,
    0.03665277777777711,
    0.0197777777777763,
];
const Q_COMMITS: [f64; 16] = [
    0.0,
    0.01225833333333333,
    0.02655357142857144,
    0.03484294871794871,
    0.05262499999999999,
    0.06976136363636362,
    0.096725,
    0.1270138888888889,
    0.15637500000000004,
    0.20644246031746033,
    0.15645833333333337,
    0.12328863636363642,
    0.08695833333333335,
    0.059971153846153855,
    0.03541071428571429,
    0.020258333333333316,
];

/// A level of the reference: windows, every window's (index, q̂), the best's index, and
/// `better` of 20000 shuffles.
struct RefLevel {
    windows: &'static [(usize, usize)],
    candidates: &'static [(usize, f64)],
    best: usize,
    better: u32,
}

const LEVELS_FLAT: [RefLevel; 1] = [RefLevel {
    windows: &[(0, 12)],
    candidates: &[(1, 0.014212121212121216)],
    best: 1,
    better: 13989,
}];
const LEVELS_STEP: [RefLevel; 2] = [
    RefLevel {
        windows: &[(0, 12)],
        candidates: &[(6, 0.30200000000000016)],
        best: 6,
        better: 6,
    },
    RefLevel {
        windows: &[(0, 6), (6, 12)],
        candidates: &[(1, 0.008866666666666669), (11, 0.01353333333333334)],
        best: 11,
        better: 11000,
    },
];
const LEVELS_TWO: [RefLevel; 3] = [
    RefLevel {
        windows: &[(0, 18)],
        candidates: &[(6, 0.3016111111111111)],
        best: 6,
        better: 53,
    },
    RefLevel {
        windows: &[(0, 6), (6, 18)],
        candidates: &[(2, 0.0075), (12, 0.29483333333333334)],
        best: 12,
        better: 26,
    },
    RefLevel {
        windows: &[(0, 6), (6, 12), (12, 18)],
        candidates: &[
            (2, 0.0075),
            (9, 0.006000000000000005),
            (14, 0.0033333333333333327),
        ],
        best: 2,
        better: 19950,
    },
];
const LEVELS_COMMITS: [RefLevel; 2] = [
    RefLevel {
        windows: &[(0, 16)],
        candidates: &[(9, 0.20644246031746033)],
        best: 9,
        better: 7,
    },
    RefLevel {
        windows: &[(0, 9), (9, 16)],
        candidates: &[(8, 0.0031111111111110598), (14, 0.0029714285714285632)],
        best: 8,
        better: 19997,
    },
];

const FOUND_FLAT: [usize; 0] = [];
const FOUND_STEP: [usize; 1] = [6];
const FOUND_TWO: [usize; 2] = [6, 12];
const FOUND_COMMITS: [usize; 1] = [9];

const REF_PERMUTATIONS: f64 = 20000.0;

#[track_caller]
fn assert_close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-12 * want.abs().max(1.0),
        "got {got}, want {want}"
    );
}

#[track_caller]
fn pinned(values: &[f64], q: &[f64], levels: &[RefLevel], found: &[usize]) -> Detection {
    let got = q_hat(values);
    assert_eq!(got.len(), q.len());
    for (g, w) in got.iter().zip(q) {
        assert_close(*g, *w);
    }
    let options = Options::default();
    let detection = e_divisive(values, &options).expect("finite series");
    assert_eq!(detection.levels.len(), levels.len());
    for (got, want) in detection.levels.iter().zip(levels) {
        assert_eq!(got.windows, want.windows);
        assert_eq!(got.candidates.len(), want.candidates.len());
        for (g, &(index, q)) in got.candidates.iter().zip(want.candidates) {
            assert_eq!(g.index, index);
            assert_close(g.q, q);
        }
        assert_eq!(got.candidate().index, want.best);
        // The reference's p, and its standard error with 999 rounds.
        let p = f64::from(want.better) / (REF_PERMUTATIONS + 1.0);
        let r = f64::from(options.permutations);
        let se = (p * (1.0 - p) / r).sqrt();
        let tolerance = 4.0 * se + 1.0 / (r + 1.0);
        assert!(
            (got.p_value - p).abs() <= tolerance,
            "p {} against {p} ± {tolerance}",
            got.p_value
        );
        assert_eq!(got.significant, p <= options.sig_level);
    }
    let indices: Vec<usize> = detection.change_points.iter().map(|c| c.index).collect();
    assert_eq!(indices, found);
    detection
}

#[test]
fn a_flat_series_has_no_change_point() {
    let d = pinned(&FLAT, &Q_FLAT, &LEVELS_FLAT, &FOUND_FLAT);
    assert!(d.change_points.is_empty());
    assert!(!d.levels[0].significant && d.levels[0].p_value > 0.5);
}

#[test]
fn one_step() {
    let d = pinned(&STEP, &Q_STEP, &LEVELS_STEP, &FOUND_STEP);
    let c = &d.change_points[0];
    assert_eq!((c.index, c.level), (6, 0));
    assert_close(c.q, 0.30200000000000016);
    assert!(c.p_value <= 0.01, "{}", c.p_value);
    assert_close(c.mean_before, mean(&STEP[..6]));
    assert_close(c.mean_after, mean(&STEP[6..]));
    assert_close(c.magnitude(), 0.056);
    assert_close(c.magnitude_pct(), 100.0 * 0.056f64.exp_m1());
    assert_close(c.before_pct(), 100.0 * 0.0038333333333333336f64.exp_m1());
}

#[test]
fn two_changes() {
    let d = pinned(&TWO, &Q_TWO, &LEVELS_TWO, &FOUND_TWO);
    let [first, second] = &d.change_points[..] else {
        panic!("two change points: {d:?}");
    };
    // Found in the order of their q̂; the segments either side are the final ones.
    assert_eq!((first.level, second.level), (0, 1));
    assert_close(first.mean_before, mean(&TWO[..6]));
    assert_close(first.mean_after, mean(&TWO[6..12]));
    assert_close(second.mean_before, mean(&TWO[6..12]));
    assert_close(second.mean_after, mean(&TWO[12..]));
    assert!(first.magnitude() > 0.07 && second.magnitude() < -0.05);
    // This implementation's own p-values under the default seed (against the reference's
    // 0.00265, 0.0013 and 0.99745 above): a guard that the seeded stream stays the same.
    let p: Vec<f64> = d.levels.iter().map(|l| l.p_value).collect();
    assert_eq!(p, [0.003, 0.003, 0.998]);
}

#[test]
fn a_step_over_commits() {
    let d = pinned(&COMMITS, &Q_COMMITS, &LEVELS_COMMITS, &FOUND_COMMITS);
    let c = &d.change_points[0];
    assert_close(c.mean_before, mean(&COMMITS[..9]));
    assert_close(c.mean_after, mean(&COMMITS[9..]));
    assert!(
        c.magnitude_pct() < -2.85 && c.magnitude_pct() > -2.95,
        "{}",
        c.magnitude_pct()
    );
}

#[test]
fn seeded_hence_reproducible() {
    let options = Options {
        permutations: 199,
        seed: 42,
        ..Options::default()
    };
    let a = e_divisive(&TWO, &options).expect("finite");
    let b = e_divisive(&TWO, &options).expect("finite");
    assert_eq!(a, b);
    let p = a.levels[0].p_value;
    assert!(p > 0.0 && p < 0.05, "{p}");
    // The p-value's grain is 1 / (permutations + 1).
    assert_close(p * 200.0, (p * 200.0).round());
}

#[test]
fn short_constant_and_invalid_series() {
    let options = Options::default();
    for values in [&[][..], &[0.01][..], &[0.02; 8][..]] {
        let d = e_divisive(values, &options).expect("finite");
        assert!(d.change_points.is_empty() && d.levels.is_empty(), "{d:?}");
    }
    assert!(matches!(
        e_divisive(&[0.0, f64::NAN], &options),
        Err(ChangePointError::NotFinite { index: 1, .. })
    ));
    assert!(matches!(
        e_divisive(&[0.0, f64::INFINITY], &options),
        Err(ChangePointError::NotFinite { index: 1, .. })
    ));
    let bad = Options {
        sig_level: 1.0,
        ..options
    };
    assert_eq!(
        e_divisive(&STEP, &bad),
        Err(ChangePointError::SigLevel(1.0))
    );
    let none = Options {
        permutations: 0,
        ..options
    };
    assert_eq!(
        e_divisive(&STEP, &none),
        Err(ChangePointError::NoPermutations)
    );
}

/// The known-answer series of the end-to-end `bisect` test as one noisy run measured it: a
/// step of about -30% at point 5, and points 0..5 scattering by their own noise. The
/// permutation test alone also splits 0..5 at 2 (p 0.038); its measurement check does not
/// confirm that split (p 0.27, the best of 4 splits at a raw 0.067), so only point 5 stays.
#[test]
fn a_split_within_the_points_noise_is_not_a_change_point() {
    let (x, precision) = measured::tests::known_answer();
    let options = Options::default();
    let alone = e_divisive(&x, &options).expect("finite");
    let found: Vec<usize> = alone.change_points.iter().map(|c| c.index).collect();
    assert_eq!(found, [2, 5]);
    assert!((alone.change_points[0].p_value - 0.038).abs() < 1e-12);

    let d = e_divisive_measured(&x, Some(&precision), &options).expect("finite");
    let found: Vec<(usize, usize)> = d.change_points.iter().map(|c| (c.index, c.level)).collect();
    assert_eq!(found, [(5, 0)]);
    let cp = &d.change_points[0];
    assert!(cp.measured_p.expect("checked") < 1e-11);
    assert_eq!(d.levels.len(), 2);
    let last = &d.levels[1];
    assert_eq!(last.candidate().index, 2);
    assert!(last.p_value <= 0.05, "{}", last.p_value);
    let m = last.measured.expect("checked");
    assert!((m.p_value - 4.0 * 0.06728388140189728).abs() < 1e-9);
    assert!(!last.significant);
}

#[test]
fn precision_must_match_the_series() {
    let (x, precision) = measured::tests::known_answer();
    assert_eq!(
        e_divisive_measured(&x[..8], Some(&precision), &Options::default()),
        Err(ChangePointError::PrecisionLength {
            values: 8,
            precision: 9
        })
    );
}

/// A standard normal variate (Box–Muller).
fn normal(rng: &mut Xoshiro256) -> f64 {
    let u = 1.0 - rng.unit();
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `points` points, each the mean of 5 runs' log ratios with sd 0.12 (the known-answer
/// series' scatter), its standard error estimated from those runs (df 4); `step` added from
/// the middle point on.
fn simulated(rng: &mut Xoshiro256, points: usize, step: f64) -> (Vec<f64>, Vec<Precision>) {
    (0..points)
        .map(|i| {
            let runs: Vec<f64> = (0..5).map(|_| 0.12 * normal(rng)).collect();
            let mean = runs.iter().sum::<f64>() / 5.0;
            let var = runs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 4.0;
            let shift = if i >= points / 2 { step } else { 0.0 };
            (
                mean + shift,
                Precision {
                    se: (var / 5.0).sqrt(),
                    df: 4.0,
                },
            )
        })
        .unzip()
}

/// Over 200 simulated series of 9 points without a change, the permutation test alone finds
/// a change point in about one series of ten (two levels, each at 5%); with the measurement
/// check, in under 5%. With a step of 25% it finds the step as often with the check as
/// without.
#[test]
fn the_measurement_check_keeps_false_change_points_under_the_level() {
    let mut rng = Xoshiro256::seed(7);
    let options = Options {
        permutations: 199,
        ..Options::default()
    };
    let (mut alone, mut checked) = (0, 0);
    for _ in 0..200 {
        let (x, p) = simulated(&mut rng, 9, 0.0);
        alone += usize::from(!e_divisive(&x, &options).unwrap().change_points.is_empty());
        checked += usize::from(
            !e_divisive_measured(&x, Some(&p), &options)
                .unwrap()
                .change_points
                .is_empty(),
        );
    }
    eprintln!("no change: {alone} of 200 alone, {checked} checked");
    assert!(checked < 10, "{checked} of 200");
    assert!(checked < alone, "{checked} >= {alone}");

    let (mut alone, mut checked) = (0, 0);
    for _ in 0..200 {
        let (x, p) = simulated(&mut rng, 9, -0.29);
        let at_step = |d: Detection| d.change_points.iter().map(|c| c.index).eq([4]);
        alone += usize::from(at_step(e_divisive(&x, &options).unwrap()));
        checked += usize::from(at_step(
            e_divisive_measured(&x, Some(&p), &options).unwrap(),
        ));
    }
    eprintln!("a step: found {alone} of 200 alone, {checked} checked");
    assert!(checked >= alone, "{checked} < {alone}");
    assert!(checked >= 190, "{checked} of 200");
}
