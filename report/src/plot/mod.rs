//! SVG charts, written by hand (no plotting dependency): the metric against page size with
//! 95% CI error bars, one series per combination of the other dimensions, and per-second tps
//! traces of every run of a cell. Elements carry classes (`series`, `point`, `errorbar`,
//! `trace`) so the charts can be checked and styled.

use std::fmt::Write as _;

use blocklab_measure::job::*;

use crate::format::{cell_metric, num, pct};
use crate::stats::Metric;

mod forest;
mod metrics;
mod probe;
mod race;
mod scaling;
mod svg;

pub use forest::{ForestRow, forest_chart};
pub use probe::probe_charts;
pub use scaling::scaling_charts;
use svg::{COLORS, Frame, legend, open, tick_label, ticks};
pub use svg::{Chart, esc};

/// Drops the `prefix=` token from a cell label (what the x axis already says).
fn series_label(cell_label: &str, axis_prefix: &str) -> String {
    let s: Vec<&str> = cell_label
        .split_whitespace()
        .filter(|t| !t.starts_with(axis_prefix))
        .collect();
    if s.is_empty() {
        "all".into()
    } else {
        s.join(" ")
    }
}

/// The y range of the metric chart for data from `lo` to `hi` with `pad` around them: from 0
/// when the data are not negative and reach down to half the top or lower, else zoomed in
/// from a round value, which the chart then names ("y axis starts at 3100, not 0") with a
/// break mark on the axis.
fn y_range(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    let (low, high) = (lo - pad, hi + pad);
    if lo < 0.0 {
        return (low, high);
    }
    if low <= high * 0.5 {
        return (0.0, high);
    }
    let t = ticks(low, high);
    let step = match t.as_slice() {
        [a, b, ..] => b - a,
        _ => return (low, high),
    };
    ((low / step).floor() * step, high)
}

/// `metric` (the export's) against page size with 95% CI error bars; `None` without results.
pub fn metric_chart(export: &JobExport) -> Option<Chart> {
    let cells: Vec<&CellResult> = export.results.iter().filter(|c| c.n > 0).collect();
    let metric = cells.first().map_or(Metric::Tps, |c| cell_metric(c));
    let distinct = |f: fn(&CellResult) -> u32| {
        let mut v: Vec<u32> = cells.iter().map(|c| f(c)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (bs, wal) = (
        distinct(|c| c.block_size_kb),
        distinct(|c| c.wal_block_size_kb),
    );
    let data_axis = bs.len() > 1 || wal.len() <= 1;
    let (sizes, prefix, axis) = if data_axis {
        (bs, "bs=", "data page size (BLCKSZ)")
    } else {
        (wal, "wal=", "WAL page size (XLOG_BLCKSZ)")
    };
    let size_of = |c: &CellResult| {
        if data_axis {
            c.block_size_kb
        } else {
            c.wal_block_size_kb
        }
    };
    let lo = cells
        .iter()
        .map(|c| c.ci95_low.min(c.mean))
        .fold(f64::INFINITY, f64::min);
    let hi = cells
        .iter()
        .map(|c| c.ci95_high.max(c.mean))
        .fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let pad = ((hi - lo) * 0.12).max(hi.abs() * 0.01).max(1e-9);
    let frame = Frame {
        x: (-0.5, sizes.len() as f64 - 0.5),
        y: y_range(lo, hi, pad),
    };
    let pos = |kb: u32| sizes.iter().position(|&s| s == kb).unwrap_or(0) as f64;
    let xt: Vec<(f64, String)> = sizes.iter().map(|&s| (pos(s), format!("{s}K"))).collect();
    let title = format!(
        "{} {metric}: mean with 95% CI by page size",
        export.job.as_ref().map(|j| j.name.as_str()).unwrap_or("")
    );
    let mut out = String::new();
    let ylabel = if let Metric::Workload { unit, .. } = &metric {
        format!("{metric} ({unit})")
    } else if metric.higher_is_better() {
        format!("{metric} (transactions per second)")
    } else {
        format!("{metric} (ms)")
    };
    open(&mut out, "metric", &title, &frame, &xt, axis, &ylabel);
    let mut series: Vec<(String, Vec<&CellResult>)> = Vec::new();
    for c in &cells {
        let key = series_label(&c.label, prefix);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(c),
            None => series.push((key, vec![c])),
        }
    }
    for (i, (key, mut pts)) in series.into_iter().enumerate() {
        pts.sort_by_key(|c| size_of(c));
        let color = COLORS[i % COLORS.len()];
        let _ = write!(
            out,
            r#"<g class="series" data-series="{}" stroke="{color}" fill="{color}">"#,
            esc(&key)
        );
        let line: Vec<String> = pts
            .iter()
            .map(|c| format!("{:.1},{:.1}", frame.px(pos(size_of(c))), frame.py(c.mean)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series-line" fill="none" stroke-width="2" points="{}"/>"#,
            line.join(" ")
        );
        for c in pts {
            let x = frame.px(pos(size_of(c)));
            if c.n > 1 {
                let (yl, yh) = (frame.py(c.ci95_low), frame.py(c.ci95_high));
                let _ = write!(
                    out,
                    r#"<g class="errorbar" data-cell="{l}" data-low="{lo}" data-high="{hi}"><line x1="{x:.1}" y1="{yl:.1}" x2="{x:.1}" y2="{yh:.1}"/><line x1="{a:.1}" y1="{yl:.1}" x2="{b:.1}" y2="{yl:.1}"/><line x1="{a:.1}" y1="{yh:.1}" x2="{b:.1}" y2="{yh:.1}"/></g>"#,
                    l = esc(&c.label),
                    lo = c.ci95_low,
                    hi = c.ci95_high,
                    a = x - 6.0,
                    b = x + 6.0
                );
            }
            let note = match (c.is_baseline, c.pct_change_vs_baseline) {
                (true, _) => "baseline".to_string(),
                (false, Some(p)) => format!("{} {}", pct(p), c.verdict),
                _ => c.verdict.clone(),
            };
            let _ = write!(
                out,
                r##"<circle class="point" data-cell="{l}" data-mean="{m}" cx="{x:.1}" cy="{y:.1}" r="4"{hollow}><title>{l}: {mv} (n={n}) {note}</title></circle><text x="{tx:.1}" y="{ty:.1}" stroke="none" font-size="10">{note}</text>"##,
                l = esc(&c.label),
                m = c.mean,
                y = frame.py(c.mean),
                hollow = if c.is_baseline {
                    r##" fill="#ffffff" stroke-width="2""##
                } else {
                    ""
                },
                mv = num(&metric, c.mean),
                n = c.n,
                note = esc(&note),
                tx = x + 8.0,
                ty = frame.py(c.mean) - 6.0
            );
        }
        out.push_str("</g>");
        legend(&mut out, i, &key, false);
    }
    out.push_str("</svg>\n");
    Some(Chart {
        file_name: format!(
            "{}-vs-page-size.svg",
            metric
                .name()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                })
                .collect::<String>()
        ),
        title,
        svg: out,
    })
}

/// Per-second tps of every run of each cell that has samples (suspect runs dashed).
pub fn trace_charts(export: &JobExport) -> Vec<Chart> {
    let mut charts = Vec::new();
    for cell in &export.cells {
        let runs: Vec<&ExportRun> = export
            .runs
            .iter()
            .filter(|r| r.cell_index == cell.cell_index && !r.samples.is_empty())
            .collect();
        if runs.is_empty() {
            continue;
        }
        let pts = runs.iter().flat_map(|r| r.samples.iter());
        let xmax = pts.clone().map(|s| s.second).max().unwrap_or(0).max(1) as f64;
        let ymax = pts.map(|s| s.transactions).max().unwrap_or(0).max(1) as f64;
        let frame = Frame {
            x: (0.0, xmax),
            y: (0.0, ymax * 1.08),
        };
        let xt: Vec<(f64, String)> = ticks(0.0, xmax)
            .into_iter()
            .map(|t| (t, tick_label(t)))
            .collect();
        let title = format!("tps per second: {}", cell.label);
        let mut out = String::new();
        open(
            &mut out,
            "trace",
            &title,
            &frame,
            &xt,
            "second of the measured window",
            "transactions per second",
        );
        for (i, r) in runs.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let suspect = !r.suspect_reasons.is_empty();
            let line: Vec<String> = r
                .samples
                .iter()
                .map(|s| {
                    format!(
                        "{:.1},{:.1}",
                        frame.px(f64::from(s.second)),
                        frame.py(s.transactions as f64)
                    )
                })
                .collect();
            let label = format!(
                "rep {} (run #{}){}",
                r.repetition + 1,
                r.sequence + 1,
                if suspect { " suspect" } else { "" }
            );
            let _ = write!(
                out,
                r#"<polyline class="trace" data-run="{id}" fill="none" stroke="{color}" stroke-width="1.5"{d} points="{p}"><title>{l}</title></polyline>"#,
                id = esc(&r.run_id),
                d = if suspect {
                    r#" stroke-dasharray="5 3""#
                } else {
                    ""
                },
                p = line.join(" "),
                l = esc(&label)
            );
            legend(&mut out, i, &label, suspect);
        }
        out.push_str("</svg>\n");
        charts.push(Chart {
            file_name: format!("tps-trace-cell{}.svg", cell.cell_index),
            title,
            svg: out,
        });
    }
    charts
}

/// The metric chart (if there are results), the race (if the job races), the metric by
/// clients per page size (if the job has a client ladder), the change of every workload metric (if the job has any), then the
/// traces.
pub fn charts(export: &JobExport) -> Vec<Chart> {
    metric_chart(export)
        .into_iter()
        .chain(race::race_charts(export))
        .chain(scaling_charts(&export.results))
        .chain(metrics::change_chart(export))
        .chain(trace_charts(export))
        .collect()
}
