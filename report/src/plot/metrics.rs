//! The chart of a job's workload metrics: for each metric (each AS3AP-like query, NOTPM and
//! the transaction types' response times, each maintenance step), the % change of every cell
//! against its baseline cell as a horizontal bar with its 95% CI, so a page size's effect can
//! be read query by query. Bars point right when the cell is better, left when worse.

use std::fmt::Write as _;

use blocklab_measure::job::*;

use super::svg::{COLORS, Chart, esc};
use crate::format::pct;
use crate::stats::DESCRIPTIVE_UNITS;

const W: f64 = 860.0;
const LABEL: f64 = 230.0;
const RIGHT: f64 = 40.0;
const ROW: f64 = 16.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;

/// One bar: metric, cell, change made positive-is-better, and its CI the same way.
struct Bar {
    metric: String,
    cell: String,
    color: usize,
    better_pct: f64,
    ci: Option<(f64, f64)>,
    significant: bool,
}

fn bars(by_metric: &[MetricResults]) -> Vec<Bar> {
    let mut cells: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for m in by_metric
        .iter()
        // Counts, shares, sizes and per-transaction costs are described, not charted.
        .filter(|m| !DESCRIPTIVE_UNITS.contains(&m.unit.as_str()))
    {
        for c in m.cells.iter().filter(|c| !c.is_baseline) {
            let Some(p) = c.pct_change_vs_baseline else {
                continue;
            };
            let sign = if m.higher_is_better { 1.0 } else { -1.0 };
            let color = match cells.iter().position(|l| *l == c.label) {
                Some(i) => i,
                None => {
                    cells.push(c.label.clone());
                    cells.len() - 1
                }
            };
            let ci = c
                .pct_change_ci95_low
                .zip(c.pct_change_ci95_high)
                .map(|(l, h)| {
                    let (a, b) = (sign * l, sign * h);
                    (a.min(b), a.max(b))
                });
            out.push(Bar {
                metric: m.name.clone(),
                cell: c.label.clone(),
                color,
                better_pct: sign * p,
                ci,
                significant: c.verdict == "faster" || c.verdict == "slower",
            });
        }
    }
    out
}

/// The chart, or `None` when the job has no workload metric with a change to show.
pub fn change_chart(export: &JobExport) -> Option<Chart> {
    let bars = bars(&crate::metric_results(export));
    if bars.is_empty() {
        return None;
    }
    let extent = bars
        .iter()
        .flat_map(|b| {
            [
                b.better_pct.abs(),
                b.ci.map_or(0.0, |(l, h)| l.abs().max(h.abs())),
            ]
        })
        .fold(1.0_f64, f64::max)
        .min(200.0);
    let h = TOP + BOTTOM + ROW * bars.len() as f64;
    let mid = LABEL + (W - LABEL - RIGHT) / 2.0;
    let scale = (W - LABEL - RIGHT) / 2.0 / extent;
    let x = |v: f64| mid + v.clamp(-extent, extent) * scale;
    let job = export.job.as_ref().map_or("", |j| j.name.as_str());
    let title = format!("{job}: % change against the baseline by metric (right = better)");
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart change-chart" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/><text x="{tx}" y="20" text-anchor="middle" font-size="14">{t}</text>"#,
        tx = W / 2.0,
        t = esc(&title)
    );
    for v in [-extent, -extent / 2.0, 0.0, extent / 2.0, extent] {
        let _ = writeln!(
            out,
            r##"<line x1="{p}" x2="{p}" y1="{TOP}" y2="{y2}" stroke="{c}"/><text x="{p}" y="{ty}" text-anchor="middle">{l}</text>"##,
            p = x(v),
            y2 = h - BOTTOM,
            c = if v == 0.0 { "#444" } else { "#ddd" },
            ty = h - BOTTOM + 15.0,
            l = esc(&pct(v))
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let color = COLORS[b.color % COLORS.len()];
        let (x0, x1) = (x(0.0).min(x(b.better_pct)), x(0.0).max(x(b.better_pct)));
        let tip = format!(
            "{} {}: {} ({})",
            b.metric,
            b.cell,
            pct(b.better_pct),
            if b.significant {
                "significant"
            } else {
                "not significant"
            }
        );
        let _ = writeln!(
            out,
            r#"<text x="{lx}" y="{ly}" text-anchor="end">{m}</text><rect class="bar" data-metric="{m}" x="{x0}" y="{by}" width="{bw}" height="{bh}" fill="{color}" fill-opacity="{op}"><title>{tip}</title></rect>"#,
            lx = LABEL - 6.0,
            ly = y + ROW * 0.7,
            m = esc(&b.metric),
            by = y + 2.0,
            bw = (x1 - x0).max(1.0),
            bh = ROW - 4.0,
            op = if b.significant { "0.9" } else { "0.35" },
            tip = esc(&tip)
        );
        if let Some((l, hi)) = b.ci {
            let _ = writeln!(
                out,
                r#"<line class="errorbar" x1="{a}" x2="{z}" y1="{cy}" y2="{cy}" stroke="black"/>"#,
                a = x(l),
                z = x(hi),
                cy = y + ROW / 2.0
            );
        }
    }
    let mut cells: Vec<(usize, &str)> = bars.iter().map(|b| (b.color, b.cell.as_str())).collect();
    cells.sort_unstable();
    cells.dedup();
    for (k, (color, label)) in cells.iter().enumerate() {
        let lx = LABEL + 160.0 * k as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{lx}" y="{ly}" width="10" height="10" fill="{c}"/><text x="{tx}" y="{ty}">{l} (solid: significant)</text>"#,
            ly = h - 28.0,
            c = COLORS[color % COLORS.len()],
            tx = lx + 14.0,
            ty = h - 19.0,
            l = esc(label)
        );
    }
    out.push_str("</svg>\n");
    Some(Chart {
        file_name: "change-by-metric.svg".into(),
        title,
        svg: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(label: &str, baseline: bool, p: Option<f64>, verdict: &str) -> CellResult {
        CellResult {
            label: label.into(),
            is_baseline: baseline,
            pct_change_vs_baseline: p,
            pct_change_ci95_low: p.map(|p| p - 2.0),
            pct_change_ci95_high: p.map(|p| p + 2.0),
            verdict: verdict.into(),
            n: 2,
            ..Default::default()
        }
    }

    #[test]
    fn lower_is_better_metrics_point_right_when_they_drop() {
        let by = vec![
            MetricResults {
                name: "q.sel_1_cl".into(),
                unit: "s".into(),
                higher_is_better: false,
                cells: vec![
                    cell("8K", true, None, "baseline"),
                    cell("16K", false, Some(-10.0), "faster"),
                ],
            },
            MetricResults {
                name: "new_order.mix_pct".into(),
                unit: "%".into(),
                higher_is_better: true,
                cells: vec![
                    cell("8K", true, None, "baseline"),
                    cell("16K", false, Some(1.0), "no significant difference"),
                ],
            },
        ];
        let b = bars(&by);
        assert_eq!(b.len(), 1, "descriptive metrics are left out");
        assert_eq!(b[0].better_pct, 10.0);
        assert_eq!(b[0].ci, Some((8.0, 12.0)));
        assert!(b[0].significant);
    }
}
