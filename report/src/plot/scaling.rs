//! The metric against the client count, one chart per data page size: a series per ladder
//! (its other dimensions), 95% CI error bars and the knee marked (`crate::scaling`).

use std::fmt::Write as _;

use blocklab_measure::job::CellResult;

use super::svg::{COLORS, Chart, Frame, esc, legend, open};
use crate::scaling::{Ladder, ladders};

/// One chart per data page size that has a client ladder.
pub fn scaling_charts(cells: &[CellResult]) -> Vec<Chart> {
    let all = ladders(cells);
    let mut sizes: Vec<u32> = all.iter().map(|l| l.block_size_kb).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|bs| {
            let of: Vec<&Ladder> = all.iter().filter(|l| l.block_size_kb == bs).collect();
            chart(bs, &of)
        })
        .collect()
}

fn chart(bs: u32, ladders: &[&Ladder]) -> Option<Chart> {
    let mut clients: Vec<u32> = ladders
        .iter()
        .flat_map(|l| l.rungs.iter().map(|r| r.clients))
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let rungs = ladders.iter().flat_map(|l| l.rungs.iter());
    let lo = rungs
        .clone()
        .map(|r| r.ci95_low.min(r.mean))
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    let hi = rungs
        .map(|r| r.ci95_high.max(r.mean))
        .fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let metric = ladders
        .first()
        .map(|l| l.metric.clone())
        .unwrap_or_default();
    let frame = Frame {
        x: (-0.5, clients.len() as f64 - 0.5),
        y: (lo, hi + ((hi - lo) * 0.12).max(1e-9)),
    };
    let pos = |c: u32| clients.iter().position(|&x| x == c).unwrap_or(0) as f64;
    let xt: Vec<(f64, String)> = clients.iter().map(|&c| (pos(c), c.to_string())).collect();
    let title = format!("{metric} by clients at {bs}K pages: mean with 95% CI, knee marked");
    let mut out = String::new();
    open(
        &mut out,
        "scaling",
        &title,
        &frame,
        &xt,
        "clients (the ladder's steps)",
        &metric,
    );
    for (i, l) in ladders.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let _ = write!(
            out,
            r#"<g class="series" data-series="{}" data-knee="{}" stroke="{color}" fill="{color}">"#,
            esc(&l.series),
            l.knee
        );
        let line: Vec<String> = l
            .rungs
            .iter()
            .map(|r| format!("{:.1},{:.1}", frame.px(pos(r.clients)), frame.py(r.mean)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series-line" fill="none" stroke-width="2" points="{}"/>"#,
            line.join(" ")
        );
        for r in &l.rungs {
            let x = frame.px(pos(r.clients));
            if r.n > 1 {
                let (yl, yh) = (frame.py(r.ci95_low), frame.py(r.ci95_high));
                let _ = write!(
                    out,
                    r#"<g class="errorbar" data-cell="{l}" data-low="{lo}" data-high="{hi}"><line x1="{x:.1}" y1="{yl:.1}" x2="{x:.1}" y2="{yh:.1}"/><line x1="{a:.1}" y1="{yl:.1}" x2="{b:.1}" y2="{yl:.1}"/><line x1="{a:.1}" y1="{yh:.1}" x2="{b:.1}" y2="{yh:.1}"/></g>"#,
                    l = esc(&r.label),
                    lo = r.ci95_low,
                    hi = r.ci95_high,
                    a = x - 6.0,
                    b = x + 6.0
                );
            }
            let _ = write!(
                out,
                r#"<circle class="point" data-cell="{l}" data-mean="{m}" cx="{x:.1}" cy="{y:.1}" r="4"><title>{l}: {m:.1} (n={n})</title></circle>"#,
                l = esc(&r.label),
                m = r.mean,
                y = frame.py(r.mean),
                n = r.n,
            );
        }
        if let Some(k) = l.rungs.iter().find(|r| r.clients == l.knee) {
            let (x, y) = (frame.px(pos(k.clients)), frame.py(k.mean));
            let _ = write!(
                out,
                r#"<g class="knee" data-knee="{c}"><circle cx="{x:.1}" cy="{y:.1}" r="9" fill="none" stroke-width="2"/><text x="{tx:.1}" y="{ty:.1}" stroke="none" font-size="11">knee: {c} clients</text></g>"#,
                c = l.knee,
                tx = x + 11.0,
                ty = y - 10.0 - 12.0 * i as f64,
            );
        }
        out.push_str("</g>");
        legend(
            &mut out,
            i,
            &format!("{} (knee {})", l.series, l.knee),
            false,
        );
    }
    out.push_str("</svg>\n");
    Some(Chart {
        file_name: format!("{}-vs-clients-bs{bs}.svg", file_safe(&metric)),
        title,
        svg: out,
    })
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
