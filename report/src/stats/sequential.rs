//! The sequential boundary of `repetitions = { ..., until = "decided" }`: the job is looked at
//! after every round from the minimum to the maximum, and stops at the first look where every
//! compared cell's headline verdict is faster, slower or equivalent.
//!
//! Looking after every round and stopping at the first significant look inflates false
//! positives: with 18 looks at α = 0.05 each, an A/A pair would be called faster or slower far
//! more often than 5% of the time. The boundary is a Pocock-type constant one with the
//! Bonferroni bound: with `K = max − min + 1` planned looks, every look tests at `α/K`, for the
//! faster/slower q-values and for the equivalence (TOST) q-values alike. By the union bound the
//! chance that any look calls an unchanged comparison faster or slower is at most `K · α/K = α`,
//! whatever the correlation between looks, whichever model (Welch, within rounds) and however
//! few degrees of freedom the early looks have; no numerical integration of correlated
//! boundaries is needed, and the boundary does not depend on when the job stops. It is
//! conservative (an exact Pocock boundary for 18 looks is about α/8 rather than α/18), which
//! costs power and rounds, not error control. Benjamini–Hochberg across the job's family is
//! kept at each look, at the look's level.

use super::welch::ALPHA;

/// The planned looks of a job that runs `min` to `max` rounds: one after each round from
/// `min` on (at least 1).
pub fn looks(min_rounds: u32, max_rounds: u32) -> u32 {
    max_rounds
        .saturating_sub(min_rounds)
        .saturating_add(1)
        .max(1)
}

/// The level every look tests at: `ALPHA / looks`.
pub fn look_alpha(min_rounds: u32, max_rounds: u32) -> f64 {
    ALPHA / f64::from(looks(min_rounds, max_rounds))
}

/// Whether a headline verdict answers the question (faster, slower or equivalent).
pub fn is_decided(verdict: &str) -> bool {
    matches!(verdict, "faster" | "slower" | "equivalent")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_look_gets_an_equal_share_of_alpha() {
        assert_eq!(looks(3, 20), 18);
        assert_eq!(looks(5, 5), 1);
        assert_eq!(looks(6, 5), 1);
        assert!((look_alpha(3, 20) - 0.05 / 18.0).abs() < 1e-15);
        assert!((look_alpha(3, 3) - 0.05).abs() < 1e-15);
        // The shares add up to alpha over the planned looks.
        let total: f64 = (3..=20).map(|_| look_alpha(3, 20)).sum();
        assert!((total - 0.05).abs() < 1e-12);
    }

    #[test]
    fn only_faster_slower_and_equivalent_decide() {
        for v in ["faster", "slower", "equivalent"] {
            assert!(is_decided(v), "{v}");
        }
        for v in [
            "inconclusive",
            "insufficient data",
            "no verdict",
            "baseline",
        ] {
            assert!(!is_decided(v), "{v}");
        }
    }
}
