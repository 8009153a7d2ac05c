//! The race of a `search = "race"` job drawn: at each look, every cell still racing against
//! the best of that look (its change with the 95% CI), the cells that left at that look
//! greyed.

use blocklab_measure::job::JobExport;

use super::forest::{ForestRow, forest_chart};
use super::svg::Chart;

/// The race chart; `None` unless the job races and has had a look.
pub fn race_chart(export: &JobExport) -> Option<Chart> {
    let metric = crate::analysis::resolve_metric("", export).ok()?;
    let race = crate::analysis::race::job_race(export, &metric)?;
    let label = |cell: u32| {
        export
            .cells
            .iter()
            .find(|c| c.cell_index == cell)
            .map_or_else(|| format!("cell {cell}"), |c| c.label.clone())
    };
    let mut rows = Vec::new();
    for look in &race.looks {
        let group = format!("round {}", look.round);
        rows.push(ForestRow {
            label: format!("round {}: {}", look.round, label(look.best)),
            group: group.clone(),
            pct: 0.0,
            ci95: None,
            verdict: "best".into(),
        });
        for &(cell, vs, dropped) in &look.rows {
            rows.push(ForestRow {
                label: format!("round {}: {}", look.round, label(cell)),
                group: group.clone(),
                pct: vs.pct,
                ci95: Some(vs.ci95),
                verdict: if dropped { "dropped" } else { "racing" }.into(),
            });
        }
    }
    forest_chart(
        &format!(
            "race on {}: each cell against the best at each look",
            metric.name()
        ),
        &rows,
    )
}
