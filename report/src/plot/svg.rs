//! The SVG frame every chart draws in: size, axes, ticks, legend, colours, escaping.

use std::fmt::Write as _;

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
pub(crate) const COLORS: [&str; 8] = [
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
pub(crate) fn ticks(lo: f64, hi: f64) -> Vec<f64> {
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

pub(crate) fn tick_label(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Plot area with data ranges; maps data to pixels.
pub(crate) struct Frame {
    pub(crate) x: (f64, f64),
    pub(crate) y: (f64, f64),
}

impl Frame {
    pub(crate) fn px(&self, x: f64) -> f64 {
        let (a, b) = self.x;
        LEFT + if b > a { (x - a) / (b - a) } else { 0.5 } * (W - LEFT - RIGHT)
    }
    pub(crate) fn py(&self, y: f64) -> f64 {
        let (a, b) = self.y;
        H - BOTTOM - if b > a { (y - a) / (b - a) } else { 0.5 } * (H - TOP - BOTTOM)
    }
}

/// Opens an SVG with a title, the axes, y ticks and axis labels; x ticks are given.
pub(crate) fn open(
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
    if f.y.0 > 0.0 {
        // The y axis does not start at 0: a break mark on the axis and a note say so.
        let (bx, by) = (x0, y1 - 10.0);
        let _ = write!(
            out,
            r##"<g class="axis-break" stroke="#333"><rect x="{rx}" y="{ry}" width="12" height="6" fill="#ffffff" stroke="none"/><line x1="{a}" y1="{b1}" x2="{c}" y2="{b2}"/><line x1="{a}" y1="{b3}" x2="{c}" y2="{b4}"/></g><text class="axis-note" x="{nx}" y="{ny}" font-size="11" fill="#b00000">y axis starts at {l}, not 0</text>"##,
            rx = bx - 6.0,
            ry = by - 3.0,
            a = bx - 6.0,
            c = bx + 6.0,
            b1 = by,
            b2 = by - 4.0,
            b3 = by + 4.0,
            b4 = by,
            nx = x0 + 4.0,
            ny = y0 - 5.0,
            l = tick_label(f.y.0)
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

pub(crate) fn legend(out: &mut String, i: usize, label: &str, dashed: bool) {
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
