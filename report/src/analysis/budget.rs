//! `budget = "10m"`: the time a job's measured runs have spent, and whether another round
//! fits. A run's time is its start to its end as the catalog records them (starting the
//! server, loading the data, the warm-up, the window, collecting); builds are tasks of their
//! own before the runs. The cost of a round is the mean over the rounds run so far, so the
//! first round is the pilot of a job that has no other history.

use blocklab_measure::job::JobExport;

/// Seconds between two catalog timestamps (`2026-12-06T01:27:20.316Z`); `None` when either
/// is missing or unreadable, or the end is before the start.
pub(crate) fn run_seconds(started_at: &str, finished_at: &str) -> Option<f64> {
    let start = humantime::parse_rfc3339_weak(started_at.trim()).ok()?;
    let end = humantime::parse_rfc3339_weak(finished_at.trim()).ok()?;
    end.duration_since(start).ok().map(|d| d.as_secs_f64())
}

/// The measured runs' time so far: the runs that started and ended, in seconds.
pub fn spent_seconds(export: &JobExport) -> f64 {
    export
        .runs
        .iter()
        .filter_map(|r| run_seconds(&r.started_at, &r.finished_at))
        .sum()
}

/// The rounds that have started: the highest repetition of a started run, plus one.
fn rounds_started(export: &JobExport) -> u32 {
    export
        .runs
        .iter()
        .filter(|r| !r.started_at.is_empty())
        .map(|r| r.repetition + 1)
        .max()
        .unwrap_or(0)
}

/// What a budget allows after the rounds run so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetLook {
    pub spent_seconds: f64,
    /// The mean time of a round so far (0 before any).
    pub round_seconds: f64,
    pub budget_seconds: f64,
}

impl BudgetLook {
    /// The same look with the next round costing `runs` runs at the mean time of a run so far
    /// (a race's next round holds only the cells still racing); unchanged before any run.
    pub fn with_next_round_of(self, export: &JobExport, runs: usize) -> BudgetLook {
        let timed: Vec<f64> = export
            .runs
            .iter()
            .filter_map(|r| run_seconds(&r.started_at, &r.finished_at))
            .collect();
        if timed.is_empty() {
            return self;
        }
        let per_run = timed.iter().sum::<f64>() / timed.len() as f64;
        BudgetLook {
            round_seconds: per_run * runs as f64,
            ..self
        }
    }

    /// Whether one more round, at the mean cost of a round so far, stays within the budget.
    pub fn round_fits(&self) -> bool {
        self.spent_seconds + self.round_seconds <= self.budget_seconds
    }
}

/// The job's budget look; `None` when the job has no budget.
pub fn look(export: &JobExport) -> Option<BudgetLook> {
    let budget_seconds = export.analysis?.budget_seconds?;
    let spent_seconds = spent_seconds(export);
    let rounds = rounds_started(export);
    let round_seconds = if rounds == 0 {
        0.0
    } else {
        spent_seconds / f64::from(rounds)
    };
    Some(BudgetLook {
        spent_seconds,
        round_seconds,
        budget_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::job::{AnalysisOptions, ExportRun};

    fn run(rep: u32, start: &str, end: &str) -> ExportRun {
        ExportRun {
            repetition: rep,
            started_at: start.into(),
            finished_at: end.into(),
            state: "done".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_round_is_added_only_while_it_fits_at_the_cost_measured_so_far() {
        let mut e = JobExport {
            runs: vec![
                run(0, "2026-12-06T01:27:20.000Z", "2026-12-06T01:27:40.000Z"),
                run(0, "2026-12-06T01:27:40.000Z", "2026-12-06T01:27:59.500Z"),
                run(1, "2026-12-06T01:28:00.000Z", "2026-12-06T01:28:20.500Z"),
                // A run not started yet, and one with an unreadable end: no time.
                run(1, "", ""),
                run(2, "2026-12-06T01:28:40.000Z", "later"),
            ],
            ..Default::default()
        };
        assert_eq!(look(&e), None);
        e.analysis = Some(AnalysisOptions {
            budget_seconds: Some(90.0),
            ..Default::default()
        });
        let l = look(&e).expect("a budget");
        assert!((l.spent_seconds - 60.0).abs() < 1e-9, "{l:?}");
        // Three rounds started: 20 s a round; 60 + 20 <= 90.
        assert!((l.round_seconds - 20.0).abs() < 1e-9, "{l:?}");
        assert!(l.round_fits());
        e.analysis = Some(AnalysisOptions {
            budget_seconds: Some(79.0),
            ..Default::default()
        });
        assert!(!look(&e).expect("a budget").round_fits());
        // A race's next round of one cell: one run at the mean 20 s; 60 + 20 <= 79 fails, a
        // budget of 80 holds it.
        let one = look(&e).expect("a budget").with_next_round_of(&e, 1);
        assert!((one.round_seconds - 20.0).abs() < 1e-9, "{one:?}");
        assert!(!one.round_fits());
        let none = look(&e).expect("a budget").with_next_round_of(&e, 0);
        assert!(none.round_fits());
    }
}
