//! Charts of an I/O probe job: read throughput against chunk size (one series per target and
//! mode, as in the direct-I/O chunk-size test), and write + fdatasync latency against block
//! size.

use std::fmt::Write as _;

use blocklab_measure::job::{ProbeResults, ProbeSummary};

use super::svg::{COLORS, Chart, Frame, esc, legend, open};

fn chunk_label(bytes: u32) -> String {
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

/// One chart per measured quantity: MB/s of the read modes, latency of the fsync test.
pub fn probe_charts(r: &ProbeResults) -> Vec<Chart> {
    let reads: Vec<&ProbeSummary> = r
        .rows
        .iter()
        .filter(|p| p.mode.starts_with("read"))
        .collect();
    let writes: Vec<&ProbeSummary> = r
        .rows
        .iter()
        .filter(|p| p.mode == "write-fdatasync")
        .collect();
    let mut out = Vec::new();
    if let Some(c) = chart(
        &reads,
        "probe-read-throughput.svg",
        "read throughput by chunk size",
        "MB/s",
        |p| p.mb_per_s,
    ) {
        out.push(c);
    }
    if let Some(c) = chart(
        &writes,
        "probe-fdatasync-latency.svg",
        "write + fdatasync latency by block size",
        "average latency (µs)",
        |p| p.latency_avg_us,
    ) {
        out.push(c);
    }
    out
}

fn chart(
    rows: &[&ProbeSummary],
    file: &str,
    title: &str,
    ylabel: &str,
    y: fn(&ProbeSummary) -> f64,
) -> Option<Chart> {
    if rows.is_empty() {
        return None;
    }
    let mut sizes: Vec<u32> = rows.iter().map(|p| p.chunk_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let hi = rows.iter().map(|p| y(p)).fold(0.0, f64::max);
    let frame = Frame {
        x: (-0.5, sizes.len() as f64 - 0.5),
        y: (0.0, hi * 1.1 + 1e-9),
    };
    let pos = |b: u32| sizes.iter().position(|&s| s == b).unwrap_or(0) as f64;
    let xt: Vec<(f64, String)> = sizes.iter().map(|&s| (pos(s), chunk_label(s))).collect();
    let mut svg = String::new();
    open(
        &mut svg,
        "probe",
        title,
        &frame,
        &xt,
        "chunk / block size",
        ylabel,
    );
    let mut series: Vec<(String, Vec<&ProbeSummary>)> = Vec::new();
    for p in rows {
        let key = format!("{} {}", p.target, p.mode);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(p),
            None => series.push((key, vec![p])),
        }
    }
    for (i, (key, mut pts)) in series.into_iter().enumerate() {
        pts.sort_by_key(|p| p.chunk_bytes);
        let color = COLORS[i % COLORS.len()];
        let line: Vec<String> = pts
            .iter()
            .map(|p| format!("{:.1},{:.1}", frame.px(pos(p.chunk_bytes)), frame.py(y(p))))
            .collect();
        let _ = write!(
            svg,
            r#"<g class="series" data-series="{k}" stroke="{color}" fill="{color}"><polyline class="series-line" fill="none" stroke-width="2" points="{pts}"/>"#,
            k = esc(&key),
            pts = line.join(" ")
        );
        for p in pts {
            let _ = write!(
                svg,
                r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="3.5" data-value="{}"/>"#,
                frame.px(pos(p.chunk_bytes)),
                frame.py(y(p)),
                y(p)
            );
        }
        svg.push_str("</g>");
        legend(&mut svg, i, &key, false);
    }
    svg.push_str("</svg>");
    Some(Chart {
        file_name: file.to_string(),
        title: title.to_string(),
        svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(target: &str, mode: &str, chunk: u32, mbs: f64, lat: f64) -> ProbeSummary {
        ProbeSummary {
            target: target.into(),
            mode: mode.into(),
            chunk_bytes: chunk,
            mb_per_s: mbs,
            latency_avg_us: lat,
            runs: 1,
            ..Default::default()
        }
    }

    #[test]
    fn probe_charts_have_a_series_per_target_and_mode() {
        let r = ProbeResults {
            rows: vec![
                row("data", "read-buffered", 4096, 900.0, 0.0),
                row("data", "read-buffered", 1 << 20, 2500.0, 0.0),
                row("data", "read-direct", 4096, 90.0, 0.0),
                row("data", "read-direct", 1 << 20, 1800.0, 0.0),
                row("wal", "write-fdatasync", 8192, 40.0, 250.0),
            ],
            ..Default::default()
        };
        let charts = probe_charts(&r);
        assert_eq!(charts.len(), 2);
        let read = &charts[0].svg;
        let doc = roxmltree::Document::parse(read).expect("valid SVG");
        let series: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .collect();
        assert_eq!(series.len(), 2);
        assert_eq!(
            doc.descendants()
                .filter(|n| n.attribute("class") == Some("point"))
                .count(),
            4
        );
        assert!(read.contains("1M") && read.contains("4K"));
        assert!(charts[1].svg.contains("fdatasync"));
        assert!(probe_charts(&ProbeResults::default()).is_empty());
    }
}
