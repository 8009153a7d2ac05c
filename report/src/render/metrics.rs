//! The per-metric table of `blocklab results` (and `compare`) for workload kinds with their
//! own metrics (NOTPM and per-transaction response times, seconds per query, tuples per
//! second, seconds per maintenance step): one row per metric, one column per cell, each cell
//! with its mean and its change against its baseline, so cells compare query by query.

use blocklab_measure::job::*;

use crate::format::{cell_metric, num, p_value, pct};
use crate::stats::DESCRIPTIVE_UNITS;

/// One table cell: the mean (with the n when it is not the usual one), then for a
/// non-baseline cell the % change, and either its CI (counts, shares, sizes and
/// per-transaction costs: described, not judged) or its p-value, q-value and the verdict
/// unless it is inconclusive.
fn entry(m: &MetricResults, c: &CellResult, n_usual: u32) -> String {
    let metric = cell_metric(c);
    if c.n == 0 {
        return "-".into();
    }
    let mut s = num(&metric, c.mean);
    if c.n != n_usual {
        s.push_str(&format!(" (n={})", c.n));
    }
    if c.is_baseline {
        return s;
    }
    if let Some(p) = c.pct_change_vs_baseline {
        s.push_str(&format!(" {}", pct(p)));
    }
    if DESCRIPTIVE_UNITS.contains(&m.unit.as_str()) {
        if let (Some(l), Some(h)) = (c.pct_change_ci95_low, c.pct_change_ci95_high) {
            s.push_str(&format!(" [{}, {}]", pct(l), pct(h)));
        }
        if c.zero_variance {
            s.push_str(&format!(" {}", c.verdict));
        }
        return s;
    }
    if let Some(p) = c.p_value {
        s.push_str(&format!(" p={}", p_value(p)));
    }
    if let Some(q) = c.q_value {
        s.push_str(&format!(" q={}", p_value(q)));
    }
    match c.verdict.as_str() {
        "inconclusive" | "" => {}
        v => s.push_str(&format!(" {v}")),
    }
    s
}

/// Header and rows of the per-metric table: metric, unit (and which way is better), then one
/// column per cell.
pub fn metric_rows(by_metric: &[MetricResults]) -> (Vec<String>, Vec<Vec<String>>) {
    let cells: Vec<&CellResult> = by_metric
        .first()
        .map_or(Vec::new(), |m| m.cells.iter().collect());
    let n_usual = cells.iter().map(|c| c.n).max().unwrap_or(0);
    let mut header = vec!["metric".to_string(), "unit".to_string()];
    header.extend(cells.iter().map(|c| {
        if c.is_baseline {
            format!("{} (baseline)", c.label)
        } else {
            c.label.clone()
        }
    }));
    let rows = by_metric
        .iter()
        .map(|m| {
            let direction = if DESCRIPTIVE_UNITS.contains(&m.unit.as_str()) {
                String::new()
            } else if m.higher_is_better {
                ", higher is better".into()
            } else {
                ", lower is better".into()
            };
            let mut row = vec![m.name.clone(), format!("{}{direction}", m.unit)];
            row.extend(cells.iter().map(|want| {
                m.cells
                    .iter()
                    .find(|c| c.cell_index == want.cell_index)
                    .map_or_else(|| "-".into(), |c| entry(m, c, n_usual))
            }));
            row
        })
        .collect();
    (header, rows)
}

/// The per-metric table as text for people (`table`) under `title`, or empty when there is none.
pub fn metric_table(by_metric: &[MetricResults], title: &str) -> String {
    if by_metric.is_empty() {
        return String::new();
    }
    let (head, rows) = metric_rows(by_metric);
    let mut t = comfy_table::Table::new();
    t.set_header(head);
    for r in rows {
        t.add_row(r);
    }
    format!(
        "\n{title}; each entry: mean, % change, p-value, Benjamini-Hochberg q-value, and \
         the verdict unless inconclusive (counts, shares and sizes: the CI of the change, no \
         verdict)\n{t}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(index: u32, label: &str, mean: f64, baseline: bool, verdict: &str) -> CellResult {
        CellResult {
            cell_index: index,
            label: label.into(),
            metric: "notpm".into(),
            unit: "NOTPM".into(),
            higher_is_better: true,
            mean,
            n: 3,
            runs_total: 3,
            is_baseline: baseline,
            pct_change_vs_baseline: (!baseline).then_some(10.0),
            pct_change_ci95_low: (!baseline).then_some(4.0),
            pct_change_ci95_high: (!baseline).then_some(16.0),
            p_value: (!baseline).then_some(0.01),
            q_value: (!baseline && verdict == "faster").then_some(0.02),
            verdict: verdict.into(),
            ..Default::default()
        }
    }

    fn metric(name: &str, unit: &str, cells: Vec<CellResult>) -> MetricResults {
        MetricResults {
            name: name.into(),
            unit: unit.into(),
            higher_is_better: true,
            cells,
        }
    }

    #[test]
    fn one_row_per_metric_one_column_per_cell() {
        let by = vec![
            metric(
                "notpm",
                "NOTPM",
                vec![
                    cell(0, "bs=8K", 100.0, true, "baseline"),
                    cell(1, "bs=16K", 110.0, false, "faster"),
                ],
            ),
            metric(
                "new_order.mix_pct",
                "%",
                vec![
                    cell(0, "bs=8K", 45.0, true, "baseline"),
                    cell(1, "bs=16K", 45.2, false, "no verdict"),
                ],
            ),
        ];
        let (head, rows) = metric_rows(&by);
        assert_eq!(head, ["metric", "unit", "bs=8K (baseline)", "bs=16K"]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][1], "NOTPM, higher is better");
        assert_eq!(rows[0][2], "100.0");
        assert_eq!(rows[0][3], "110.0 +10.0% p=0.010 q=0.020 faster");
        // A share of the mix describes the run: no direction, no verdict, the CI of the change.
        assert_eq!(rows[1][1], "%");
        assert_eq!(rows[1][3], "45.2 +10.0% [+4.0%, +16.0%]");
        let text = metric_table(&by, "per metric");
        assert!(text.contains("per metric; each entry: mean"), "{text}");
        assert!(metric_table(&[], "per metric").is_empty());
    }

    #[test]
    fn cells_with_fewer_runs_show_their_n() {
        let mut short = cell(1, "bs=16K", 5.0, false, "insufficient data");
        short.n = 1;
        let mut cells = vec![cell(0, "bs=8K", 4.0, true, "baseline"), short];
        for c in &mut cells {
            c.metric = "q.sel_1_cl".into();
            c.unit = "s".into();
            c.higher_is_better = false;
        }
        let by = vec![metric("q.sel_1_cl", "s", cells)];
        let (_, rows) = metric_rows(&by);
        assert_eq!(rows[0][3], "5.0000 (n=1) +10.0% p=0.010 insufficient data");
    }
}
