//! A `search = "race"` job's races from its export ([`crate::race`]): one race per group of
//! cells that share a default (the baseline cell at the root of their baseline chain: one
//! group per client count or scale, say), each cell's runs of the headline metric an entrant,
//! the job's rounds and band the rule; and each cell's standing as the results carry it.

use blocklab_measure::job::{JobExport, RaceStanding};
use blocklab_spec::RunState;

use super::budget;
use super::cell::{metric_value, runs};
use super::job::{Options, rounds_run};
use crate::race::{self, End, Entrant, Race, Rule, Standing};
use crate::stats::Metric;

/// The rounds every run of which has ended: the first round with a run still queued, running
/// or lost, or every round.
pub fn complete_rounds(export: &JobExport) -> u32 {
    export
        .runs
        .iter()
        .filter(|r| !r.state.parse().is_ok_and(RunState::is_finished))
        .map(|r| r.repetition)
        .min()
        .unwrap_or_else(|| rounds_run(export))
}

/// The baseline cell at the root of a cell's baseline chain (the cell itself when it has
/// none).
fn root(export: &JobExport, cell_index: u32) -> u32 {
    let mut at = cell_index;
    for _ in 0..export.cells.len() {
        match export
            .cells
            .iter()
            .find(|c| c.cell_index == at)
            .and_then(|c| c.baseline_cell_index)
        {
            Some(b) if b != at => at = b,
            _ => break,
        }
    }
    at
}

/// The races of a job on `metric` (its headline), one per group of cells sharing a default,
/// in the order of their defaults; empty unless the job races.
pub fn job_races(export: &JobExport, metric: &Metric) -> Vec<Race> {
    let o = Options::of(export);
    if !o.race {
        return Vec::new();
    }
    let rule = Rule {
        min_rounds: o.min_repetitions,
        max_rounds: o.max_repetitions,
        band_pct: o.equivalence_pct,
        higher_is_better: metric.higher_is_better(),
    };
    let complete = complete_rounds(export);
    let mut groups: Vec<(u32, Vec<Entrant>)> = Vec::new();
    for c in &export.cells {
        let r = runs(export, c.cell_index, o.exclude_suspect);
        let entrant = Entrant {
            cell: c.cell_index,
            is_default: c.is_baseline,
            runs: r
                .rounds
                .iter()
                .zip(&r.used)
                .map(|(round, m)| (*round, metric_value(m, metric)))
                .filter(|(_, v)| v.is_finite())
                .collect(),
        };
        let key = root(export, c.cell_index);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(entrant),
            None => groups.push((key, vec![entrant])),
        }
    }
    groups.sort_by_key(|(k, _)| *k);
    groups
        .iter()
        .map(|(_, entrants)| race::race(entrants, complete, &rule))
        .collect()
}

/// The job's budget look when its next round holds only the cells still racing in races not
/// yet over, at the mean time of a run so far; `None` without a budget.
pub fn budget_look(export: &JobExport, races: &[Race]) -> Option<budget::BudgetLook> {
    let next: usize = races
        .iter()
        .filter(|r| r.end == End::Running)
        .map(|r| r.racing().len())
        .sum();
    budget::look(export).map(|b| b.with_next_round_of(export, next))
}

/// How the race ends (or that it runs), as the results name it; `look` is the job's
/// [`budget_look`].
pub fn end_text(race: &Race, look: Option<budget::BudgetLook>) -> String {
    match race.end {
        End::Decided { round } => format!("decided at round {round}"),
        End::MaxReached { round } => format!("max repetitions reached ({round})"),
        End::Running => match look.filter(|b| !b.round_fits()) {
            Some(b) => format!(
                "budget reached ({} rounds, {:.0}s of {:.0}s)",
                race.rounds, b.spent_seconds, b.budget_seconds
            ),
            None => "running".into(),
        },
    }
}

/// A cell's standing as the results carry it.
pub(super) fn standing(
    export: &JobExport,
    races: &[Race],
    cell_index: u32,
) -> Option<RaceStanding> {
    let race = races.iter().find(|r| r.of(cell_index).is_some())?;
    let c = race.of(cell_index)?;
    let label = |cell: u32| {
        export
            .cells
            .iter()
            .find(|c| c.cell_index == cell)
            .map(|c| c.label.clone())
            .unwrap_or_default()
    };
    // The best the cell was last compared with: at its drop, or the last look's.
    let best = match c.standing {
        Standing::Dropped { round } => race.looks.iter().find(|l| l.round == round),
        _ => race.looks.last(),
    }
    .map(|l| l.best);
    Some(RaceStanding {
        standing: c.standing.to_string(),
        dropped_round: match c.standing {
            Standing::Dropped { round } => Some(round),
            _ => None,
        },
        vs_best_pct: c.vs_best.map(|v| v.pct),
        vs_best_ci95_low: c.vs_best.map(|v| v.ci95.0),
        vs_best_ci95_high: c.vs_best.map(|v| v.ci95.1),
        vs_best_p_worse: c.vs_best.map(|v| v.p_worse),
        best_label: best.map(label).unwrap_or_default(),
        rounds: race.rounds,
        runs_spent: race.runs_spent,
        full_grid_runs: race.full_grid_runs,
        end: end_text(race, budget_look(export, races)),
        // The root of the cell's baselines, by which the races are grouped: under settings
        // variants each variant's baseline is a default too, but not the race's.
        default_label: label(root(export, cell_index)),
    })
}

/// The standing as one line of the results' status column: "race: dropped at round 3,
/// -41.2% [-45.0%, -37.1%] vs 16K/8K c4".
pub(super) fn status(s: &RaceStanding) -> String {
    let vs = match (s.vs_best_pct, s.vs_best_ci95_low, s.vs_best_ci95_high) {
        (Some(p), Some(l), Some(h)) => format!(
            ", {} [{}, {}] vs {}",
            crate::format::pct(p),
            crate::format::pct(l),
            crate::format::pct(h),
            s.best_label
        ),
        _ => String::new(),
    };
    format!("race: {}{vs}", s.standing)
}
