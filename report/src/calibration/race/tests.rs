use super::*;

/// A tiny grid: the default, one cell 0.5% ahead, one far behind, one 20% behind.
fn tiny(cv_pct: f64, max: u32) -> RaceScenario {
    RaceScenario {
        effects_pct: vec![0.0, 0.5, -40.0, -20.0],
        default: 0,
        cv_pct,
        drift_pct: 0.5,
        rule: Rule {
            min_rounds: 3,
            max_rounds: max,
            band_pct: 2.0,
            higher_is_better: true,
        },
    }
}

#[test]
fn the_gallery_grid_has_its_figures() {
    let e = gallery_effects();
    assert_eq!(e.len(), 42);
    assert_eq!(e[DEFAULT_CELL], 0.0);
    assert_eq!(DEFAULT_CELL, grid_cell(3, 3));
    // 8K data with 16K WAL: +0.9%, the best; 4K data with 64K WAL: the product.
    let best = grid_cell(3, 4);
    assert!((e[best] - 0.9).abs() < 1e-12);
    let s = RaceScenario::gallery(1.0, 0.5, 10, 2.0);
    assert!((0..42).all(|c| s.is_true_best(c) == (c == best)));
    let product = (0.977 * 0.876 - 1.0) * 100.0;
    assert!((e[grid_cell(2, 6)] - product).abs() < 1e-9);
    // Within 2% of the best: 8K data with WAL 2K, 8K, 16K and 32K.
    let within: Vec<usize> = (0..42).filter(|&c| s.within_band_of_best(c)).collect();
    let wal = |w| grid_cell(3, w);
    assert_eq!(within, [wal(1), wal(3), wal(4), wal(5)]);
    // The default is the best once the WAL sizes ahead of 8K are turned around.
    let d = default_best_effects();
    assert!((0..42).all(|c| c == DEFAULT_CELL || d[c] < d[DEFAULT_CELL]));
}

#[test]
fn one_replay_over_all_draws_makes_the_schedulers_drops() {
    let mut rng = Prng::new(42);
    for (k, cv) in [1.0, 3.0, 5.0, 8.0]
        .into_iter()
        .cycle()
        .take(24)
        .enumerate()
    {
        let s = tiny(cv, if k % 2 == 0 { 6 } else { 10 });
        let draws = draw(&s, &mut rng);
        let o = run_race(&s, &draws);
        let r = replay(&s, &draws);
        let standings: Vec<Standing> = r.cells.iter().map(|c| c.standing).collect();
        assert_eq!(o.standings, standings, "race {k}");
        assert_eq!(o.end, r.end, "race {k}");
        assert_eq!(
            (o.rounds, o.runs_spent, o.full_grid_runs),
            (r.rounds, r.runs_spent, r.full_grid_runs),
            "race {k}"
        );
        // Each cell ran the rounds until it left, or to the end.
        for (c, cell) in r.cells.iter().enumerate() {
            let ran = match cell.standing {
                Standing::Dropped { round } => round,
                _ => o.rounds,
            };
            assert_eq!(cell.runs, ran, "race {k} cell {c}");
        }
    }
}

#[test]
fn the_tally_counts_what_the_races_did() {
    let s = tiny(1.0, 6);
    let t = run_races(&s, 10, 7);
    assert_eq!(t, run_races(&s, 10, 7), "seeded");
    assert_eq!(t.races, 10);
    // The two cells far behind leave at the first look; the default and the cell 0.5% ahead
    // race on.
    assert_eq!(t.any_dropped, 10);
    assert_eq!(t.runs_spent, 2 * 3 * 10 + 2 * t.rounds);
    assert_eq!(t.full_grid_runs, 4 * t.rounds);
    assert_eq!(t.max_grid_runs, 4 * 6 * 10);
    assert_eq!(t.racing_at_end, 20);
    assert_eq!(t.holds_best, 10);
    assert!(t.default_in_band && t.holds_true_best == 10);
    assert!(t.default_beaten <= t.default_decided);
    let expected = (60.0 + 2.0 * t.rounds as f64) / (4.0 * t.rounds as f64);
    assert!((t.runs_ratio() - expected).abs() < 1e-12);
    assert!((t.mean_rounds() - t.rounds as f64 / 10.0).abs() < 1e-12);
    assert!(t.mean_rounds() >= 3.0 && t.mean_rounds() <= 6.0);
}

#[test]
fn an_a_a_grid_keeps_a_best_and_drops_next_to_nothing() {
    let s = RaceScenario {
        effects_pct: vec![0.0; 12],
        ..tiny(2.0, 8)
    };
    // Every cell is a true best: some stay, whichever the race drops; at the level of every
    // ordered pair, chance alone drops a cell of an A/A grid in few races.
    let t = run_races(&s, 40, 11);
    assert_eq!((t.holds_best, t.holds_true_best), (40, 40));
    assert!(t.default_in_band);
    assert!(t.any_dropped <= 2, "{t:?}");
}

#[test]
fn the_default_beyond_the_band_is_beaten_and_within_it_is_not() {
    // The default 0.5% behind the best, in a ±2% band: never beaten.
    let s = tiny(1.0, 10);
    assert_eq!(run_races(&s, 30, 3).default_beaten, 0);
    // The default 20% behind: beaten at the first look.
    let s = RaceScenario {
        default: 3,
        ..tiny(1.0, 10)
    };
    assert!(!s.within_band_of_best(3));
    assert_eq!(run_races(&s, 30, 3).default_beaten, 30);
}
