//! Adaptive repetitions: once every queued run of a job is done, another round (one run of
//! each cell, in the job's order) is added while some cell's 95% CI half-width of the
//! headline metric is wider than the target (in percent of its mean), until the maximum
//! number of rounds. Every completed run counts (as in the default statistics).
//!
//! With `until = "decided"` a round is added while some compared cell's headline verdict
//! (the job's results, as `results` shows them) is neither faster, slower nor equivalent;
//! those verdicts already use the sequential boundary of the job's looks
//! (`blocklab_report::stats::sequential`), so stopping at the first decided look keeps the
//! false positives within alpha.
//!
//! With `search = "race"` the races decide ([`blocklab_report::race`], one per group of cells
//! sharing a default): a round is added, for the cells still racing in races not yet over,
//! until every race is decided or at the maximum.

use blocklab_report::{analysis, stats};
use blocklab_spec::{Plan, Spec};

use super::{Scheduler, SchedulerError};
use crate::catalog::export::export_job;

/// Why no round is added, or that one is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    TargetReached {
        rounds: u32,
    },
    MaxReached {
        rounds: u32,
        widest_pct: f64,
    },
    AddRound {
        round: u32,
        widest_pct: f64,
    },
    /// `until = "decided"`: every compared cell is decided.
    Decided {
        rounds: u32,
    },
    /// `until = "decided"`: cells still undecided at the maximum.
    UndecidedAtMax {
        rounds: u32,
        undecided: usize,
    },
    /// `until = "decided"`: cells still undecided, another round.
    AddUndecidedRound {
        round: u32,
        undecided: usize,
    },
    /// `budget`: another round, at the mean cost of a round so far, would pass the budget.
    BudgetReached {
        rounds: u32,
        spent_seconds: f64,
        budget_seconds: f64,
    },
}

impl Scheduler {
    /// Adds a round when the job's adaptive repetitions ask for one; true when it did.
    pub(crate) async fn add_round(
        &self,
        job_id: &str,
        spec: &Spec,
        plan: &Plan,
    ) -> Result<bool, SchedulerError> {
        let Some(adaptive) = spec.adaptive else {
            return Ok(false);
        };
        let export = export_job(&self.catalog, job_id, false).await?;
        let rounds = analysis::rounds_run(&export);
        let races = races(&export);
        let decision = match (races.is_empty(), adaptive.target_ci_pct) {
            (false, _) => decide_race(rounds, adaptive.max, &races),
            (true, Some(target)) if !adaptive.until_decided => {
                decide(rounds, adaptive.max, target, widest_ci_pct(&export))
            }
            _ => decide_sequential(rounds, adaptive.max, undecided_cells(&export)),
        };
        let look = if races.is_empty() {
            analysis::budget::look(&export)
        } else {
            analysis::race::budget_look(&export, &races)
        };
        let decision = within_budget(decision, rounds, look);
        tracing::info!(job_id, ?decision, "adaptive repetitions");
        let round = match decision {
            Decision::AddRound { round, .. } | Decision::AddUndecidedRound { round, .. } => round,
            _ => return Ok(false),
        };
        let next_sequence = export
            .runs
            .iter()
            .map(|r| r.sequence + 1)
            .max()
            .unwrap_or(0);
        let mut runs = spec.more_rounds(plan, round..round + 1, next_sequence);
        if !races.is_empty() {
            // Only the cells still racing run the round, in the round's order.
            let racing = racing(&races);
            runs.retain(|r| racing.contains(&r.cell_index));
            for (i, r) in runs.iter_mut().enumerate() {
                r.sequence = next_sequence + u32::try_from(i).unwrap_or(u32::MAX);
            }
        }
        self.catalog.append_runs(job_id, &runs).await?;
        self.changed(job_id);
        Ok(true)
    }
}

/// The widest 95% CI half-width of the headline metric over the job's cells, in percent of
/// the cell's mean; infinite when a cell has a single measured run or a zero mean (cells
/// without any are left out).
fn widest_ci_pct(export: &blocklab_measure::job::JobExport) -> f64 {
    let Ok(metric) = blocklab_report::resolve("", export) else {
        return f64::INFINITY;
    };
    export
        .cells
        .iter()
        .map(|c| {
            let values: Vec<f64> = analysis::measured(export, c.cell_index)
                .map(|(_, m)| analysis::metric_value(m, &metric))
                .filter(|v| v.is_finite())
                .collect();
            match stats::summarize(&values) {
                // A cell none of whose runs completed cannot be helped by more rounds.
                None => 0.0,
                Some(s) if s.mean != 0.0 => s.ci95.map_or(f64::INFINITY, |(lo, hi)| {
                    (hi - lo) / 2.0 / s.mean.abs() * 100.0
                }),
                _ => f64::INFINITY,
            }
        })
        .fold(0.0, f64::max)
}

/// The compared cells (those with a baseline cell) whose headline verdict is not yet
/// faster, slower or equivalent; every cell counts when the headline metric has no runs yet.
fn undecided_cells(export: &blocklab_measure::job::JobExport) -> usize {
    let Ok(metric) = blocklab_report::resolve("", export) else {
        return export.cells.len().max(1);
    };
    analysis::cell_results(export, &metric)
        .iter()
        .filter(|c| !c.is_baseline && c.baseline_cell_index.is_some())
        .filter(|c| !stats::sequential::is_decided(&c.verdict))
        .count()
}

/// The job's races on its headline metric (one per group of cells sharing a default); empty
/// unless it races.
fn races(export: &blocklab_measure::job::JobExport) -> Vec<blocklab_report::race::Race> {
    match blocklab_report::resolve("", export) {
        Ok(metric) => analysis::race::job_races(export, &metric),
        Err(_) => Vec::new(),
    }
}

/// The cells that run the next round: those still racing in a race that is not over.
fn racing(races: &[blocklab_report::race::Race]) -> Vec<u32> {
    races
        .iter()
        .filter(|r| r.end == blocklab_report::race::End::Running)
        .flat_map(|r| r.racing())
        .collect()
}

/// `search = "race"`: whether to add round number `rounds` (0-based) for the cells still
/// racing in races that are not over; decided when every race is.
pub(crate) fn decide_race(
    rounds: u32,
    max: u32,
    races: &[blocklab_report::race::Race],
) -> Decision {
    use blocklab_report::race::End;
    let running = racing(races).len();
    if races.iter().all(|r| matches!(r.end, End::Decided { .. })) {
        Decision::Decided { rounds }
    } else if running == 0 {
        let undecided = races
            .iter()
            .filter(|r| matches!(r.end, End::MaxReached { .. }))
            .map(|r| r.racing().len())
            .sum();
        Decision::UndecidedAtMax { rounds, undecided }
    } else {
        decide_sequential(rounds, max, running)
    }
}

/// `until = "decided"`: whether to add round number `rounds` (0-based) given the compared
/// cells still undecided.
pub(crate) fn decide_sequential(rounds: u32, max: u32, undecided: usize) -> Decision {
    if undecided == 0 {
        Decision::Decided { rounds }
    } else if rounds >= max {
        Decision::UndecidedAtMax { rounds, undecided }
    } else {
        Decision::AddUndecidedRound {
            round: rounds,
            undecided,
        }
    }
}

/// A decision to add a round, kept only when the round fits the job's budget.
pub(crate) fn within_budget(
    decision: Decision,
    rounds: u32,
    budget: Option<analysis::budget::BudgetLook>,
) -> Decision {
    match (&decision, budget) {
        (Decision::AddRound { .. } | Decision::AddUndecidedRound { .. }, Some(b))
            if !b.round_fits() =>
        {
            Decision::BudgetReached {
                rounds,
                spent_seconds: b.spent_seconds,
                budget_seconds: b.budget_seconds,
            }
        }
        _ => decision,
    }
}

/// Whether to add round number `rounds` (0-based) given the widest CI so far.
pub(crate) fn decide(rounds: u32, max: u32, target_pct: f64, widest_pct: f64) -> Decision {
    if widest_pct <= target_pct {
        Decision::TargetReached { rounds }
    } else if rounds >= max {
        Decision::MaxReached { rounds, widest_pct }
    } else {
        Decision::AddRound {
            round: rounds,
            widest_pct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_added_until_the_target_or_the_maximum() {
        assert_eq!(
            decide(3, 10, 1.0, 0.8),
            Decision::TargetReached { rounds: 3 }
        );
        assert_eq!(
            decide(3, 10, 1.0, 2.5),
            Decision::AddRound {
                round: 3,
                widest_pct: 2.5
            }
        );
        assert_eq!(
            decide(10, 10, 1.0, 2.5),
            Decision::MaxReached {
                rounds: 10,
                widest_pct: 2.5
            }
        );
        assert_eq!(
            decide(4, 10, 1.0, f64::INFINITY),
            Decision::AddRound {
                round: 4,
                widest_pct: f64::INFINITY
            }
        );
    }

    #[test]
    fn rounds_are_added_until_every_cell_is_decided_or_the_maximum() {
        assert_eq!(decide_sequential(5, 20, 0), Decision::Decided { rounds: 5 });
        assert_eq!(
            decide_sequential(5, 20, 2),
            Decision::AddUndecidedRound {
                round: 5,
                undecided: 2
            }
        );
        assert_eq!(
            decide_sequential(20, 20, 1),
            Decision::UndecidedAtMax {
                rounds: 20,
                undecided: 1
            }
        );
        // Decided at the maximum is decided.
        assert_eq!(
            decide_sequential(20, 20, 0),
            Decision::Decided { rounds: 20 }
        );
    }

    #[test]
    fn no_round_is_added_past_the_budget() {
        use analysis::budget::BudgetLook;
        let add = Decision::AddUndecidedRound {
            round: 4,
            undecided: 1,
        };
        let look = |spent_seconds: f64| BudgetLook {
            spent_seconds,
            round_seconds: 40.0,
            budget_seconds: 180.0,
        };
        assert_eq!(within_budget(add.clone(), 4, Some(look(140.0))), add);
        assert_eq!(
            within_budget(add.clone(), 4, Some(look(160.0))),
            Decision::BudgetReached {
                rounds: 4,
                spent_seconds: 160.0,
                budget_seconds: 180.0
            }
        );
        assert_eq!(within_budget(add.clone(), 4, None), add);
        // A decided job stays decided, whatever the budget.
        let done = Decision::Decided { rounds: 4 };
        assert_eq!(within_budget(done.clone(), 4, Some(look(500.0))), done);
    }

    /// A synthetic interleaved job of `n` rounds (baseline, A/A replicate, +3%, +5% tps)
    /// under `until = "decided"` from 3 to 20 rounds.
    fn synthetic(n: u32, cv_pct: f64, effects_pct: Vec<f64>) -> blocklab_measure::job::JobExport {
        use blocklab_report::calibration::{Prng, Scenario, synthetic_job};
        let s = Scenario {
            rounds_as_blocks: true,
            all_columns: false,
            effects_pct,
            ..Scenario::new(n, cv_pct, 0.0)
        };
        let mut job = synthetic_job(&s, &mut Prng::new(5));
        if let Some(a) = job.analysis.as_mut() {
            a.until_decided = true;
            a.min_repetitions = 3;
            a.max_repetitions = 20;
        }
        job
    }

    #[test]
    fn the_compared_cells_not_yet_decided_are_counted() {
        // Three rounds at CV 5%: none of the 3 compared cells can be decided yet.
        assert_eq!(undecided_cells(&synthetic(3, 5.0, vec![3.0, 5.0])), 3);
        // Twenty quiet rounds: the replicate is equivalent and +10%, +20% are faster.
        let job = synthetic(20, 0.3, vec![10.0, 20.0]);
        assert_eq!(undecided_cells(&job), 0);
        assert_eq!(
            decide_sequential(20, 20, undecided_cells(&job)),
            Decision::Decided { rounds: 20 }
        );
    }
}
