//! The verdicts' calibration table: false-positive rate on A/A comparisons and power to detect
//! a 3% and a 5% throughput change, per runs per cell (n) and per-run CV, from synthetic jobs
//! put through the same analysis as real ones (`blocklab_report::calibration`).
//!
//! `cargo run --release -p blocklab-report --example calibration [JOBS] [DRIFT_PCT] [tps-only]
//! [rounds] [sequential]` (`bench/verdict-calibration.sh`); `rounds`: the jobs record an
//! interleaved run order, so each comparison is estimated within rounds (else Welch's);
//! `sequential`: `until = "decided"` from 3 rounds to a maximum of 5 to 20, within rounds;
//! `disturbed`: one run in ten has four times the CV (heavy tails); `demo`: the demo's design
//! (2 cells, interleaved, all columns) as an A/A job, at fixed n and under `until = "decided"`;
//! `race`: `search = "race"` over the 42-cell page-size grid (`bench/race-calibration.sh`);
//! `bisect`: `blocklab bisect` over 15 commits (`bench/bisect-calibration.sh`).

use blocklab_report::calibration::{self, Scenario};

fn main() {
    let mut args = std::env::args().skip(1);
    let jobs: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let drift: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0.5);
    let rest: Vec<String> = args.collect();
    let disturbed = if rest.iter().any(|a| a == "disturbed") {
        0.1
    } else {
        0.0
    };
    if rest.iter().any(|a| a == "demo") {
        demo(jobs, drift, disturbed);
        return;
    }
    if rest.iter().any(|a| a == "race") {
        race(jobs, drift);
        return;
    }
    if rest.iter().any(|a| a == "bisect") {
        bisect(jobs, drift);
        return;
    }
    if rest.iter().any(|a| a == "sequential") {
        sequential(jobs, drift);
        return;
    }
    let all_columns = !rest.iter().any(|a| a == "tps-only");
    let rounds_as_blocks = rest.iter().any(|a| a == "rounds");
    println!(
        "synthetic jobs: {jobs} per row; 4 cells (baseline, A/A replicate, +3%, +5% tps); {} varying;",
        if all_columns {
            "all 8 pgbench columns"
        } else {
            "only tps"
        }
    );
    println!(
        "per-round drift: random walk, step sd {drift}%; equivalence band 2% (default); seeded; \
         model: {}; disturbed runs: {:.0}%",
        if rounds_as_blocks { "rounds" } else { "welch" },
        100.0 * disturbed
    );
    println!();
    println!(
        "| n | CV | FPR (A/A, all columns) | FPR (A/A, tps) | before the gate: all columns | before the gate: tps | jobs with any A/A FP | A/A tps equivalent | raw p<0.05 (A/A tps) | power +3% | power +5% | +3% or +5% called slower |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    for n in [2, 3, 4, 5, 6, 8, 10] {
        for cv in [1.0, 2.0, 3.0, 5.0] {
            let s = Scenario {
                all_columns,
                rounds_as_blocks,
                disturbed_share: disturbed,
                ..Scenario::new(n, cv, drift)
            };
            let seed = 0x5eed_0000 + u64::from(n) * 100 + cv as u64;
            let t = calibration::run(&s, jobs, seed);
            println!(
                "| {n} | {cv:.0}% | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                pct(t.fpr()),
                pct(t.fpr_tps()),
                pct(t.fpr_ungated()),
                pct(t.fpr_tps_ungated()),
                pct(f64::from(t.aa_jobs_with_false_positive) / f64::from(t.jobs)),
                pct(t.equivalent_tps()),
                pct(t.raw_p_rate_tps()),
                pct(t.power(0)),
                pct(t.power(1)),
                pct(f64::from(t.wrong_direction.iter().sum::<u32>()) / f64::from(2 * t.jobs)),
            );
        }
    }
}

/// The table of `until = "decided"`: min 3 rounds, max 5 to 20, within rounds, all columns.
fn sequential(jobs: u32, drift: f64) {
    println!(
        "synthetic jobs: {jobs} per row; 4 cells (baseline, A/A replicate, +3%, +5% tps); all 8 \
         pgbench columns; interleaved (model: rounds); per-round drift step sd {drift}%;"
    );
    println!(
        "until = \"decided\" from 3 rounds: a look after every round, alpha 0.05 / looks per look; \
         naive: the same looks at 0.05 each; seeded"
    );
    println!();
    println!(
        "| max | CV | looks | A/A FP tps (at stop) | A/A FP tps (any look) | naive: any look | FPR (A/A, all columns) | A/A tps equivalent | power +3% | power +5% | decided | mean rounds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    for max in [5, 8, 10, 15, 20] {
        for cv in [1.0, 2.0, 3.0, 5.0] {
            let s = Scenario {
                rounds_as_blocks: true,
                ..Scenario::new(max, cv, drift)
            };
            let seed = 0x5e9_0000 + u64::from(max) * 100 + cv as u64;
            let t = calibration::run_looks(&s, 3, max, jobs, seed, true);
            let naive = calibration::run_looks(&s, 3, max, jobs, seed, false);
            println!(
                "| {max} | {cv:.0}% | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
                max - 2,
                pct(t.fpr_tps()),
                pct(t.fpr_tps_any_look()),
                pct(naive.fpr_tps_any_look()),
                pct(t.fpr()),
                pct(t.equivalent_tps()),
                pct(t.power(0)),
                pct(t.power(1)),
                pct(t.decided_rate()),
                t.mean_rounds(),
            );
        }
    }
}

/// The demo's design as an A/A job: 2 cells (the baseline and a replicate of it),
/// interleaved (model: rounds), all 8 pgbench columns, the demo's ±5% band; at a fixed n of
/// 2 to 10, then under
/// `until = "decided"` from 3 rounds to a maximum of 6, 8 and 10.
fn demo(jobs: u32, drift: f64, disturbed: f64) {
    println!(
        "the demo's design, A/A: {jobs} jobs per row; 2 cells (baseline, replicate); all 8 \
         pgbench columns; interleaved (model: rounds); equivalence band ±5% (the demo's); drift \
         step sd {drift}%; disturbed runs: {:.0}%; seeded",
        100.0 * disturbed
    );
    println!();
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    let scenario = |n: u32, cv: f64| Scenario {
        rounds_as_blocks: true,
        disturbed_share: disturbed,
        effects_pct: Vec::new(),
        equivalence_pct: 5.0,
        ..Scenario::new(n, cv, drift)
    };
    println!(
        "| n | CV | FP tps | FP tps before the gate | FPR all columns | before the gate | equivalent tps |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in [2, 3, 4, 5, 6, 8, 10] {
        for cv in [1.0, 2.0, 3.0] {
            let seed = 0xde30_0000 + u64::from(n) * 100 + cv as u64;
            let t = calibration::run(&scenario(n, cv), jobs, seed);
            println!(
                "| {n} | {cv:.0}% | {} | {} | {} | {} | {} |",
                pct(t.fpr_tps()),
                pct(t.fpr_tps_ungated()),
                pct(t.fpr()),
                pct(t.fpr_ungated()),
                pct(t.equivalent_tps()),
            );
        }
    }
    println!();
    println!(
        "| until decided, max | CV | looks | FP tps at the stop | at any look | FPR all columns | equivalent tps | decided | mean rounds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for max in [6, 8, 10] {
        for cv in [1.0, 2.0, 3.0] {
            let seed = 0xde35_0000 + u64::from(max) * 100 + cv as u64;
            let t = calibration::run_sequential(&scenario(max, cv), 3, max, jobs, seed);
            println!(
                "| {max} | {cv:.0}% | {} | {} | {} | {} | {} | {} | {:.1} |",
                max - 2,
                pct(t.fpr_tps()),
                pct(t.fpr_tps_any_look()),
                pct(t.fpr()),
                pct(t.equivalent_tps()),
                pct(t.decided_rate()),
                t.mean_rounds(),
            );
        }
    }
}

/// The race's tables: the gallery grid (6 data × 7 WAL page sizes), an A/A grid (every cell
/// equal) and the grid with the default the true best, at min 3 rounds, max 10 and 20, a band
/// of 2% and 5%, per-run CV 1–5%, from a first look after 2 rounds and after 3.
fn race(races: u32, drift: f64) {
    println!(
        "races: {races} per row; grid: 6 data (1K..32K) x 7 WAL (1K..64K) page sizes = 42 cells, \
         default 8K/8K; per-round drift step sd {drift}%; seeded"
    );
    println!(
        "gallery: the measured effects (best 8K data, 16K WAL: +0.9%); a/a: every cell equal; \
         default best: the WAL sizes ahead of 8K turned around"
    );
    println!(
        "holds best: a cell within the band of the true best still racing at the end (strict: \
         the true best itself); runs: measured / the full grid's at the rounds run (and at max)"
    );
    println!();
    race_header();
    let grids = race_grids();
    for (k, (name, effects, cvs)) in grids.iter().enumerate() {
        for max in [10, 20] {
            for band in [2.0, 5.0] {
                for &cv in *cvs {
                    for min in [2, 3] {
                        race_row(name, effects, (min, max, band, cv, drift), k, races);
                    }
                }
            }
        }
    }
}

type Grid = (&'static str, Vec<f64>, &'static [f64]);

fn race_grids() -> [Grid; 3] {
    [
        (
            "gallery",
            calibration::gallery_effects(),
            &[1.0, 2.0, 3.0, 5.0],
        ),
        ("a/a", vec![0.0; 42], &[1.0, 3.0]),
        (
            "default best",
            calibration::default_best_effects(),
            &[1.0, 3.0],
        ),
    ]
}

fn race_header() {
    println!(
        "| grid | rule | max | band | CV | holds best (band) | holds true best | runs / full grid | runs / full grid at max | mean runs | mean rounds | racing at end | decided before max | default beaten (within the band of the best in every grid) | default decided | any dropped |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
}

/// One row: `(min, max, band, cv, drift)`.
fn race_row(
    name: &str,
    effects: &[f64],
    (min, max, band, cv, drift): (u32, u32, f64, f64, f64),
    grid: usize,
    races: u32,
) {
    let mut s = calibration::RaceScenario {
        effects_pct: effects.to_vec(),
        ..calibration::RaceScenario::gallery(cv, drift, max, band)
    };
    s.rule.min_rounds = min;
    // The same draws for every rule of a row.
    let seed =
        0x7ace_0000 + grid as u64 * 10_000 + u64::from(max) * 100 + band as u64 * 10 + cv as u64;
    let t = calibration::run_races(&s, races, seed);
    let rule = format!("min {min}");
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    println!(
        "| {name} | {rule} | {max} | {band:.0}% | {cv:.0}% | {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {} | {} |",
        pct(t.p_holds_best()),
        pct(t.p_holds_true_best()),
        pct(t.runs_ratio()),
        pct(t.runs_ratio_max()),
        t.mean_runs(),
        t.mean_rounds(),
        t.mean_racing_at_end(),
        pct(t.p_decided_before_max()),
        pct(t.p_default_beaten()),
        pct(t.p_default_decided()),
        pct(t.p_any_dropped()),
    );
}

/// `blocklab bisect` over 15 candidate commits, the change drawn uniformly among them, from no
/// effect to `after` at the series' 3 rounds.
fn bisect(bisections: u32, drift: f64) {
    let candidates = 15;
    println!(
        "bisections: {bisections} per row; {candidates} candidate commits (build bound ceil(log2 {candidates}) + 2 = {}); \
         the effect 0% before the changing commit; 3 rounds a step, doubled up to twice when undecided; \
         per-round drift: random walk, step sd {drift}%; two-cell jobs, rounds as blocks; seeded",
        calibration::build_bound(candidates)
    );
    println!();
    println!(
        "| change | CV | refused (ends alike) | right commit | wrong commit | undecided | mean jobs | mean builds | max builds | over the bound | mean rounds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    for after in [-3.0, -5.0, -10.0, -20.0, -65.0] {
        for cv in [1.0, 2.0, 5.0] {
            let s = calibration::BisectScenario {
                candidates,
                rounds: 3,
                cv_pct: cv,
                drift_pct: drift,
                before_pct: 0.0,
                after_pct: after,
            };
            let seed = 0xb15e_0000 + (-after) as u64 * 10 + cv as u64;
            let t = calibration::run_bisections(&s, bisections, seed);
            println!(
                "| {after:+.0}% | {cv:.0}% | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {:.1} |",
                pct(t.refused_rate()),
                pct(t.right_rate()),
                pct(t.wrong_rate()),
                pct(t.undecided_rate()),
                t.mean(t.jobs),
                t.mean(t.builds),
                t.max_builds,
                pct(t.over_bound_rate()),
                t.mean(t.rounds),
            );
        }
    }
}
