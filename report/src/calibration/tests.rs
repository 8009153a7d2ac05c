//! The verdicts are calibrated: on thousands of synthetic jobs with per-run CV 1–5%, 3 to 10
//! runs per cell and drift between rounds, A/A comparisons come out faster or slower in at
//! most 5% of cases, and otherwise equivalent or inconclusive, never anything else.

use super::*;

/// The scenarios of the test: few and many runs, low and high noise, with drift.
fn scenarios() -> Vec<Scenario> {
    let mut out = Vec::new();
    for n in [3, 5, 10] {
        for cv in [1.0, 3.0, 5.0] {
            out.push(Scenario::new(n, cv, 0.5));
        }
    }
    out
}

const JOBS: u32 = 250;

#[test]
fn a_a_false_positives_stay_under_five_percent() {
    let mut total = Tally::default();
    for (k, s) in scenarios().iter().enumerate() {
        let t = run(s, JOBS, 1000 + k as u64);
        // Every A/A comparison is judged: equivalent, inconclusive, or a false positive.
        assert_eq!(t.aa_other, 0, "{s:?}: {t:?}");
        assert_eq!(
            t.aa_equivalent + t.aa_inconclusive + t.aa_false_positives,
            t.aa_comparisons,
            "{s:?}"
        );
        // 8 pgbench columns of the replicate cell per job.
        assert_eq!(t.aa_comparisons, 8 * JOBS, "{s:?}");
        assert!(t.fpr() <= 0.05, "{s:?}: FPR {}", t.fpr());
        assert!(t.fpr_tps() <= 0.05, "{s:?}: tps FPR {}", t.fpr_tps());
        // A true +3% or +5% is never reported slower.
        assert_eq!(t.wrong_direction, [0, 0], "{s:?}");
        total.jobs += t.jobs;
        total.aa_comparisons += t.aa_comparisons;
        total.aa_false_positives += t.aa_false_positives;
    }
    assert_eq!(total.jobs, 9 * JOBS);
    assert!(total.fpr() <= 0.05, "overall FPR {}", total.fpr());
}

#[test]
fn the_simulation_has_the_noise_it_claims_and_the_verdicts_have_power() {
    // Without drift, Welch's uncorrected p-value on A/A tps is below 0.05 about 5% of the time
    // (a sanity check of the synthetic noise and of Welch's test).
    let t = run(&Scenario::new(5, 2.0, 0.0), 1000, 7);
    let raw = t.raw_p_rate_tps();
    assert!((0.03..=0.07).contains(&raw), "raw A/A p < 0.05 rate {raw}");
    // Precisely measured cells: a 5% change is found, and the A/A replicate is shown
    // equivalent within the default ±2% band most of the time.
    let t = run(&Scenario::new(10, 1.0, 0.5), JOBS, 11);
    assert!(t.power(1) >= 0.95, "power +5% {}", t.power(1));
    assert!(t.power(0) >= 0.90, "power +3% {}", t.power(0));
    assert!(
        t.equivalent_tps() >= 0.5,
        "A/A equivalent {}",
        t.equivalent_tps()
    );
    // Very noisy cells with 3 runs: nothing can be shown, and nothing is claimed.
    let t = run(&Scenario::new(3, 5.0, 0.5), JOBS, 13);
    assert_eq!(t.aa_tps_equivalent, 0);
    assert!(t.power(1) <= 0.10, "power +5% {}", t.power(1));
}

#[test]
fn the_simulation_is_deterministic() {
    let s = Scenario::new(4, 2.0, 0.5);
    assert_eq!(run(&s, 20, 3), run(&s, 20, 3));
    let job = synthetic_job(&s, &mut Prng::new(3));
    // Interleaved rounds: baseline, replicate, +3%, +5%, then the next round.
    assert_eq!(job.runs.len(), 16);
    let cells: Vec<u32> = job.runs.iter().take(5).map(|r| r.cell_index).collect();
    assert_eq!(cells, [0, 1, 2, 3, 0]);
    assert!(job.cells[1].replicate && job.cells[1].baseline_cell_index == Some(0));
}

#[test]
fn within_rounds_a_a_false_positives_stay_under_five_percent() {
    for (k, s) in scenarios().iter().enumerate() {
        let s = Scenario {
            rounds_as_blocks: true,
            ..s.clone()
        };
        let t = run(&s, JOBS, 2000 + k as u64);
        assert_eq!(t.aa_other, 0, "{s:?}: {t:?}");
        assert_eq!(t.aa_comparisons, 8 * JOBS, "{s:?}");
        assert!(t.fpr() <= 0.05, "{s:?}: FPR {}", t.fpr());
        assert!(t.fpr_tps() <= 0.05, "{s:?}: tps FPR {}", t.fpr_tps());
    }
}

#[test]
fn a_drift_between_rounds_does_not_reach_the_rounds_model() {
    // A 2% step per round, per-run CV 1%, 10 rounds: Welch sees the drift as noise, the
    // rounds model does not.
    let welch = run(&Scenario::new(10, 1.0, 2.0), JOBS, 17);
    let rounds = run(
        &Scenario {
            rounds_as_blocks: true,
            ..Scenario::new(10, 1.0, 2.0)
        },
        JOBS,
        17,
    );
    assert!(welch.power(0) <= 0.7, "welch power +3% {}", welch.power(0));
    assert!(
        rounds.power(0) >= 0.95,
        "rounds power +3% {}",
        rounds.power(0)
    );
    assert!(
        rounds.equivalent_tps() >= 0.5,
        "A/A equivalent {}",
        rounds.equivalent_tps()
    );
}
