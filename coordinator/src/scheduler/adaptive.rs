//! Adaptive repetitions: once every queued run of a job is done, another round (one run of
//! each cell, in the job's order) is added while some cell's 95% CI half-width of the
//! headline metric is wider than the target (in percent of its mean), until the maximum
//! number of rounds. Every completed run counts (as in the default statistics).

use blocklab_report::{analysis, stats};
use blocklab_spec::{Plan, Spec};

use super::{Scheduler, SchedulerError};
use crate::catalog::export::export_job;

/// Why no round is added, or that one is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    TargetReached { rounds: u32 },
    MaxReached { rounds: u32, widest_pct: f64 },
    AddRound { round: u32, widest_pct: f64 },
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
        let rounds = export
            .runs
            .iter()
            .map(|r| r.repetition + 1)
            .max()
            .unwrap_or(0);
        let widest = widest_ci_pct(&export);
        let decision = decide(rounds, adaptive.max, adaptive.target_ci_pct, widest);
        tracing::info!(job_id, ?decision, "adaptive repetitions");
        let Decision::AddRound { round, .. } = decision else {
            return Ok(false);
        };
        let next_sequence = export
            .runs
            .iter()
            .map(|r| r.sequence + 1)
            .max()
            .unwrap_or(0);
        let runs = spec.more_rounds(plan, round..round + 1, next_sequence);
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
}
