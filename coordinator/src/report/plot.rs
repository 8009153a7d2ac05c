//! SVG charts, written by hand (no plotting dependency): the metric against page size with
//! 95% CI error bars, one series per combination of the other dimensions, and per-second tps
//! traces of every run of a cell. Elements carry classes (`series`, `point`, `errorbar`,
//! `trace`) so the charts can be checked and styled.

use std::fmt::Write as _;

use blocklab_proto::v1::*;

use super::render::{num, pct};
use crate::stats::Metric;

/// One chart: a file name for `blocklab plot` and the SVG text.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub file_name: String,
    pub title: String,
    pub svg: String,
}

const W: f64 = 760.0;
const H: f64 = 420.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 210.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
pub(super) const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Escapes text for XML and HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A "nice" tick step for a range, and the ticks inside it.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).abs().max(f64::EPSILON);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

fn tick_label(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Plot area with data ranges; maps data to pixels.
pub(super) struct Frame {
    pub(super) x: (f64, f64),
    pub(super) y: (f64, f64),
}

impl Frame {
    pub(super) fn px(&self, x: f64) -> f64 {
        let (a, b) = self.x;
        LEFT + if b > a { (x - a) / (b - a) } else { 0.5 } * (W - LEFT - RIGHT)
    }
    pub(super) fn py(&self, y: f64) -> f64 {
        let (a, b) = self.y;
        H - BOTTOM - if b > a { (y - a) / (b - a) } else { 0.5 } * (H - TOP - BOTTOM)
    }
}

/// Opens an SVG with a title, the axes, y ticks and axis labels; x ticks are given.
pub(super) fn open(
    out: &mut String,
    kind: &str,
    title: &str,
    f: &Frame,
    xt: &[(f64, String)],
    xl: &str,
    yl: &str,
) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" class="blocklab-chart" data-chart="{kind}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{W}" height="{H}" fill="#ffffff"/><text x="{cx}" y="22" text-anchor="middle" font-size="15">{t}</text>"##,
        t = esc(title),
        cx = (LEFT + W - RIGHT) / 2.0
    );
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let _ = write!(
        out,
        r##"<g class="axes" stroke="#333"><line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}"/></g>"##
    );
    for t in ticks(f.y.0, f.y.1) {
        let y = f.py(t);
        let _ = write!(
            out,
            r##"<line class="grid" x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            tx = x0 - 6.0,
            ty = y + 4.0,
            l = tick_label(t)
        );
    }
    for (v, l) in xt {
        let x = f.px(*v);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y2}" stroke="#333"/><text x="{x:.1}" y="{ty}" text-anchor="middle">{l}</text>"##,
            y2 = y1 + 5.0,
            ty = y1 + 18.0,
            l = esc(l)
        );
    }
    let _ = write!(
        out,
        r##"<text class="x-label" x="{cx}" y="{ly}" text-anchor="middle">{xl}</text><text class="y-label" transform="translate(18 {cy}) rotate(-90)" text-anchor="middle">{yl}</text>"##,
        cx = (x0 + x1) / 2.0,
        ly = H - 16.0,
        cy = (y0 + y1) / 2.0,
        xl = esc(xl),
        yl = esc(yl)
    );
}

pub(super) fn legend(out: &mut String, i: usize, label: &str, dashed: bool) {
    let y = TOP + 8.0 + 18.0 * i as f64;
    let x = W - RIGHT + 16.0;
    let _ = write!(
        out,
        r##"<g class="legend-item"><line x1="{x}" y1="{y}" x2="{x2}" y2="{y}" stroke="{c}" stroke-width="2"{d}/><text x="{tx}" y="{ty}">{l}</text></g>"##,
        x2 = x + 22.0,
        c = COLORS[i % COLORS.len()],
        d = if dashed {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        },
        tx = x + 28.0,
        ty = y + 4.0,
        l = esc(label)
    );
}

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

/// `metric` (the export's) against page size with 95% CI error bars; `None` without results.
pub fn metric_chart(export: &JobExport) -> Option<Chart> {
    let cells: Vec<&CellResult> = export.results.iter().filter(|c| c.n > 0).collect();
    let metric = cells
        .first()
        .map_or(Metric::Tps, |c| super::render::cell_metric(c));
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
        y: (lo - pad, hi + pad),
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

/// The metric chart (if there are results), the change of every workload metric (if the job
/// has any), then the traces.
pub fn charts(export: &JobExport) -> Vec<Chart> {
    metric_chart(export)
        .into_iter()
        .chain(super::metrics_plot::change_chart(export))
        .chain(trace_charts(export))
        .collect()
}
