use super::model::fit;
use super::*;

/// Four cells over four rounds; the values statsmodels was given.
const Y: [[f64; 4]; 4] = [
    [1000.0, 1012.0, 995.0, 1004.0],
    [1030.0, 1041.0, 1022.0, 1035.0],
    [900.0, 915.0, 893.0, 905.0],
    [1003.0, 1020.0, 990.0, 1010.0],
];

fn design(skip: Option<(usize, usize)>) -> (Vec<f64>, Vec<usize>, Vec<usize>) {
    let (mut y, mut cell, mut round) = (Vec::new(), Vec::new(), Vec::new());
    for (c, row) in Y.iter().enumerate() {
        for (r, v) in row.iter().enumerate() {
            if skip != Some((c, r)) {
                y.push(v.ln());
                cell.push(c);
                round.push(r);
            }
        }
    }
    (y, cell, round)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

/// A design (the run left out), the residual df and variance, and contrasts `(a, b, estimate,
/// se)`.
type Case = (
    Option<(usize, usize)>,
    f64,
    f64,
    [(usize, usize, f64, f64); 4],
);

/// Pinned to statsmodels 0.14: `ols("ly ~ C(cell) + C(round)").fit().t_test(L)` with `L` the
/// contrast of two cells' coefficients; `df_resid` and `scale` of the same fit.
#[test]
fn the_pooled_model_matches_statsmodels() {
    let cases: [Case; 2] = [
        (
            None,
            9.0,
            7.000_935_179_172_901_4e-6,
            [
                (1, 0, 0.028_748_865_015_485_275, 0.001_870_953_657_786_972),
                (2, 1, -0.133_271_068_281_377_94, 0.001_870_953_657_786_972_5),
                (
                    3,
                    1,
                    -0.025_801_344_774_392_408,
                    0.001_870_953_657_786_972_5,
                ),
                (2, 0, -0.104_522_203_265_892_68, 0.001_870_953_657_786_971_7),
            ],
        ),
        (
            Some((3, 2)),
            8.0,
            3.200_799_009_069_589_5e-6,
            [
                (1, 0, 0.028_748_865_015_489_063, 0.001_265_068_972_244_120_3),
                (2, 1, -0.133_271_068_281_378_83, 0.001_265_068_972_244_12),
                (
                    3,
                    1,
                    -0.023_762_771_620_335_518,
                    0.001_398_586_371_618_091_4,
                ),
                (2, 0, -0.104_522_203_265_889_78, 0.001_265_068_972_244_120_6),
            ],
        ),
    ];
    for (skip, df, s2, contrasts) in cases {
        let (y, cell, round) = design(skip);
        let f = fit(&y, &cell, &round, 4, 4).expect("fit");
        assert_eq!(f.df, df, "{skip:?}");
        assert!(close(f.s2, s2), "{skip:?}: s2 {} vs {s2}", f.s2);
        for (a, b, est, se) in contrasts {
            let c = f.contrast(a, b);
            assert!(close(c.estimate, est), "{skip:?} {a}-{b}: {c:?} vs {est}");
            assert!(close(c.se, se), "{skip:?} {a}-{b}: {c:?} vs se {se}");
        }
    }
}

#[test]
fn a_design_the_model_cannot_fit_has_no_fit() {
    // One round: no residual degree of freedom once the cells are fitted.
    assert!(fit(&[1.0, 2.0], &[0, 1], &[0, 0], 2, 1).is_none());
    // A cell without runs: its column is zero.
    assert!(fit(&[1.0, 2.0, 1.5, 2.5], &[0, 0, 0, 0], &[0, 1, 0, 1], 2, 2).is_none());
}

fn rule(min: u32, max: u32) -> Rule {
    Rule {
        min_rounds: min,
        max_rounds: max,
        band_pct: 5.0,
        higher_is_better: true,
    }
}

/// Cells with levels `levels` (the first is the default) over `rounds` rounds, with a
/// deterministic per-run wobble of about `wobble` (relative) and a drift per round.
fn entrants(levels: &[f64], rounds: u32, wobble: f64) -> Vec<Entrant> {
    levels
        .iter()
        .enumerate()
        .map(|(i, &level)| Entrant {
            cell: u32::try_from(i).expect("cells"),
            is_default: i == 0,
            runs: (0..rounds)
                .map(|r| {
                    let w = ((i as f64 * 7.3 + f64::from(r) * 3.1).sin()) * wobble;
                    let drift = 1.0 + 0.03 * f64::from(r % 2);
                    (r, level * drift * (1.0 + w))
                })
                .collect(),
        })
        .collect()
}

#[test]
fn a_clearly_worse_cell_leaves_at_the_first_look_and_the_default_stays() {
    // Cell 3 is throttled to a tenth; the default (cell 0) is 30% behind the best, cell 4.
    let e = entrants(&[700.0, 1000.0, 995.0, 100.0, 1002.0, 600.0], 3, 0.001);
    let r = race(&e, 3, &rule(3, 8));
    assert_eq!(r.best, Some(4));
    assert_eq!(
        r.of(3).map(|c| c.standing),
        Some(Standing::Dropped { round: 3 })
    );
    assert_eq!(
        r.of(5).map(|c| c.standing),
        Some(Standing::Dropped { round: 3 })
    );
    // The default is worse too, but stays in the race, marked beaten.
    assert_eq!(r.of(0).map(|c| c.standing), Some(Standing::DefaultBeaten));
    assert_eq!(r.racing(), vec![0, 1, 2, 4]);
    assert_eq!(r.of(1).map(|c| c.standing), Some(Standing::Equivalent));
    assert_eq!(r.end, End::Decided { round: 3 });
    let drop = r.of(3).and_then(|c| c.vs_best).expect("against the best");
    assert!(
        (drop.pct - (100.0 / 1005.0 - 1.0) * 100.0).abs() < 2.0,
        "{drop:?}"
    );
    assert!(drop.ci95.0 > -100.0 && drop.ci95.1 < 0.0, "{drop:?}");
    assert_eq!(r.looks.len(), 1);
    assert_eq!((r.rounds, r.runs_spent, r.full_grid_runs), (3, 18, 18));
}

#[test]
fn the_race_ends_when_the_rest_is_equivalent_to_the_best() {
    // Three cells within 0.5% of each other, quiet runs: equivalent within ±5% at once; a
    // fourth far behind leaves.
    let e = entrants(&[1000.0, 1004.0, 998.0, 500.0], 3, 0.002);
    let r = race(&e, 3, &rule(3, 10));
    assert_eq!(r.end, End::Decided { round: 3 });
    assert_eq!(r.best, Some(1));
    assert_eq!(r.of(0).map(|c| c.standing), Some(Standing::Equivalent));
    assert_eq!(r.of(2).map(|c| c.standing), Some(Standing::Equivalent));
    assert_eq!(
        r.of(3).map(|c| c.standing),
        Some(Standing::Dropped { round: 3 })
    );
}

#[test]
fn lower_is_better_turns_the_race_around() {
    let e = entrants(&[10.0, 9.0, 30.0], 4, 0.01);
    let mut rule = rule(3, 10);
    rule.higher_is_better = false;
    let r = race(&e, 4, &rule);
    assert_eq!(r.best, Some(1));
    assert_eq!(
        r.of(2).map(|c| c.standing),
        Some(Standing::Dropped { round: 3 })
    );
}

#[test]
fn the_replay_gives_each_look_the_rounds_it_saw() {
    // Noisy, close cells: undecided; the replay over 5 rounds starts with the replay over 3.
    let levels = [1000.0, 1010.0, 1020.0, 1015.0];
    let e = entrants(&levels, 5, 0.04);
    let three = race(&e, 3, &rule(3, 5));
    let five = race(&e, 5, &rule(3, 5));
    assert_eq!(three.end, End::Running);
    assert_eq!(five.looks.first(), three.looks.first());
    assert_eq!(five.looks.len(), 3);
    assert_eq!(five.end, End::MaxReached { round: 5 });
    // Before the minimum there is no look, and every cell races.
    let two = race(&e, 2, &rule(3, 5));
    assert!(two.looks.is_empty() && two.best.is_none());
    assert_eq!(two.racing(), vec![0, 1, 2, 3]);
}

#[test]
fn a_cell_without_runs_cannot_race() {
    let mut e = entrants(&[1000.0, 1010.0, 990.0], 3, 0.01);
    e[2].runs.clear();
    let r = race(&e, 3, &rule(3, 6));
    assert_eq!(
        r.of(2).map(|c| c.standing),
        Some(Standing::NoRuns { round: 3 })
    );
    assert_eq!(r.racing(), vec![0, 1]);
}
