//! A forest plot: one row per compared cell, its % change against its baseline as a point
//! with the 95% CI as a bar, a line at 0, and the verdict named at the right. Rows of one job
//! share a shade; the height grows with the rows.

use std::fmt::Write as _;

use super::svg::{Chart, esc, tick_label, ticks};
use crate::format::pct;

/// One compared cell of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    /// Names the row on the left (`job: cell`).
    pub label: String,
    /// Rows with the same group (a job) share a background band.
    pub group: String,
    pub pct: f64,
    pub ci95: Option<(f64, f64)>,
    pub verdict: String,
}

const W: f64 = 900.0;
const LEFT: f64 = 330.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const ROW: f64 = 22.0;
const BOTTOM: f64 = 50.0;

fn color(verdict: &str) -> &'static str {
    match verdict {
        "faster" => "#1a7f37",
        "slower" => "#b42318",
        "equivalent" => "#1f77b4",
        // A race's looks: the best, and the cells that left greyed.
        "best" => "#1a7f37",
        "dropped" => "#bbbbbb",
        _ => "#555555",
    }
}

/// The forest of `rows` titled `title`; `None` without rows.
pub fn forest_chart(title: &str, rows: &[ForestRow]) -> Option<Chart> {
    if rows.is_empty() {
        return None;
    }
    let ends = rows.iter().flat_map(|r| {
        [
            r.pct,
            r.ci95.map_or(r.pct, |c| c.0),
            r.ci95.map_or(r.pct, |c| c.1),
        ]
    });
    let (lo, hi) = ends.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let pad = ((hi - lo) * 0.08).max(0.5);
    let (lo, hi) = (lo - pad, hi + pad);
    let h = TOP + ROW * rows.len() as f64 + BOTTOM;
    let px = |v: f64| LEFT + (v - lo) / (hi - lo) * (W - LEFT - RIGHT);
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" class="blocklab-chart" data-chart="forest" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{W}" height="{h}" fill="#ffffff"/><text x="{cx}" y="22" text-anchor="middle" font-size="15">{t}</text>"##,
        t = esc(title),
        cx = W / 2.0
    );
    let bottom = TOP + ROW * rows.len() as f64;
    let mut shade = false;
    for (i, r) in rows.iter().enumerate() {
        if i == 0 || rows[i - 1].group != r.group {
            shade = !shade;
        }
        let y = TOP + ROW * i as f64;
        if shade {
            let _ = write!(
                out,
                r##"<rect x="0" y="{y}" width="{W}" height="{ROW}" fill="#f3f6fa"/>"##
            );
        }
    }
    for t in ticks(lo, hi) {
        let x = px(t);
        let _ = write!(
            out,
            r##"<line class="grid" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="#e5e5e5"/><text x="{x:.1}" y="{ty}" text-anchor="middle">{l}%</text>"##,
            ty = bottom + 16.0,
            l = tick_label(t)
        );
    }
    let x0 = px(0.0);
    let _ = write!(
        out,
        r##"<line class="zero" x1="{x0:.1}" y1="{TOP}" x2="{x0:.1}" y2="{bottom}" stroke="#333" stroke-width="1.5"/><text x="{cx}" y="{ly}" text-anchor="middle">% change against the baseline (95% CI)</text>"##,
        cx = (LEFT + W - RIGHT) / 2.0,
        ly = h - 12.0
    );
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64 + ROW / 2.0;
        let c = color(&r.verdict);
        let _ = write!(
            out,
            r##"<g class="forest-row" data-verdict="{v}" data-pct="{p}"><text x="{lx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            v = esc(&r.verdict),
            p = r.pct,
            lx = LEFT - 8.0,
            ty = y + 4.0,
            l = esc(&r.label)
        );
        if let Some((a, b)) = r.ci95 {
            let _ = write!(
                out,
                r##"<line class="ci" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2"/>"##,
                px(a),
                px(b)
            );
        }
        let ci = r
            .ci95
            .map(|(a, b)| format!(" [{}, {}]", pct(a), pct(b)))
            .unwrap_or_default();
        let _ = write!(
            out,
            r##"<rect class="point" x="{:.1}" y="{:.1}" width="8" height="8" fill="{c}"><title>{l}: {p}{ci} {v}</title></rect><text x="{vx}" y="{ty:.1}" fill="{c}">{p} {v}</text></g>"##,
            px(r.pct) - 4.0,
            y - 4.0,
            l = esc(&r.label),
            p = pct(r.pct),
            ci = ci,
            v = esc(&r.verdict),
            vx = W - RIGHT + 10.0,
            ty = y + 4.0,
        );
    }
    out.push_str("</svg>\n");
    Some(Chart {
        file_name: "history-forest.svg".into(),
        title: title.to_string(),
        svg: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_is_drawn_with_its_ci_and_verdict() {
        let rows = vec![
            ForestRow {
                label: "a: bs=16K".into(),
                group: "a".into(),
                pct: 5.0,
                ci95: Some((2.0, 8.0)),
                verdict: "faster".into(),
            },
            ForestRow {
                label: "b: bs=16K".into(),
                group: "b".into(),
                pct: -1.0,
                ci95: None,
                verdict: "inconclusive".into(),
            },
        ];
        let c = forest_chart("tps", &rows).expect("chart");
        assert_eq!(c.svg.matches("class=\"forest-row\"").count(), 2);
        assert_eq!(c.svg.matches("class=\"ci\"").count(), 1);
        assert!(c.svg.contains("+5.0% faster"), "{}", c.svg);
        assert!(c.svg.contains("[+2.0%, +8.0%]"), "{}", c.svg);
        assert!(forest_chart("tps", &[]).is_none());
    }
}
