//! The races of a `search = "race"` job drawn, one chart per race: at each look, every cell
//! still racing against the best of that look (its change with the 95% CI), the cells that
//! left at that look greyed.

use blocklab_measure::job::JobExport;

use super::forest::{ForestRow, forest_chart};
use super::svg::Chart;

/// A chart per race that has had a look; none unless the job races.
pub fn race_charts(export: &JobExport) -> Vec<Chart> {
    let Ok(metric) = crate::analysis::resolve_metric("", export) else {
        return Vec::new();
    };
    let races = crate::analysis::race::job_races(export, &metric);
    let many = races.len() > 1;
    races
        .iter()
        .filter_map(|race| chart(export, &metric, race, many))
        .collect()
}

fn chart(
    export: &JobExport,
    metric: &crate::stats::Metric,
    race: &crate::race::Race,
    many: bool,
) -> Option<Chart> {
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
    let default = race
        .cells
        .iter()
        .find(|c| c.is_default)
        .map(|c| format!(" (default {})", label(c.cell)))
        .filter(|_| many)
        .unwrap_or_default();
    forest_chart(
        &format!(
            "race on {}{default}: each cell against the best at each look",
            metric.name()
        ),
        &rows,
    )
}
