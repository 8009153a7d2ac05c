//! The per-metric table of `blocklab results` for workload kinds with their own metrics
//! (NOTPM and per-transaction response times, seconds per query, tuples per second, seconds
//! per maintenance step): one row per metric and cell, compared with the baseline cell.

use blocklab_proto::v1::*;

use super::render::{cell_metric, num, p_value, pct};

/// Header and rows of the per-metric table.
pub fn metric_rows(by_metric: &[MetricResults]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "metric",
        "unit",
        "cell",
        "n",
        "mean",
        "95% CI",
        "% change vs baseline",
        "p-value",
        "verdict",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for m in by_metric {
        for c in &m.cells {
            let metric = cell_metric(c);
            let measured = c.n > 0;
            rows.push(vec![
                m.name.clone(),
                format!(
                    "{} ({})",
                    m.unit,
                    if m.higher_is_better {
                        "higher is better"
                    } else {
                        "lower is better"
                    }
                ),
                c.label.clone(),
                c.n.to_string(),
                if measured {
                    num(&metric, c.mean)
                } else {
                    "-".into()
                },
                if c.n > 1 {
                    format!(
                        "[{}, {}]",
                        num(&metric, c.ci95_low),
                        num(&metric, c.ci95_high)
                    )
                } else {
                    "-".into()
                },
                match (c.is_baseline, c.pct_change_vs_baseline) {
                    (true, _) => "(baseline)".into(),
                    (false, Some(p)) => pct(p),
                    (false, None) => "-".into(),
                },
                c.p_value.map(p_value).unwrap_or_else(|| "-".into()),
                c.verdict.clone(),
            ]);
        }
    }
    (header, rows)
}

/// The per-metric table as text for people (`table`), or empty when there is none.
pub fn metric_table(by_metric: &[MetricResults]) -> String {
    if by_metric.is_empty() {
        return String::new();
    }
    let (head, rows) = metric_rows(by_metric);
    let mut t = comfy_table::Table::new();
    t.set_header(head);
    for r in rows {
        t.add_row(r);
    }
    format!("\nper metric (each against the baseline cell):\n{t}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(label: &str, mean: f64, baseline: bool) -> CellResult {
        CellResult {
            label: label.into(),
            metric: "notpm".into(),
            unit: "NOTPM".into(),
            higher_is_better: true,
            mean,
            n: 3,
            runs_total: 3,
            ci95_low: mean - 1.0,
            ci95_high: mean + 1.0,
            is_baseline: baseline,
            pct_change_vs_baseline: (!baseline).then_some(10.0),
            p_value: (!baseline).then_some(0.01),
            verdict: if baseline { "baseline" } else { "faster" }.into(),
            ..Default::default()
        }
    }

    #[test]
    fn one_row_per_metric_and_cell_with_unit_and_direction() {
        let by = vec![MetricResults {
            name: "notpm".into(),
            unit: "NOTPM".into(),
            higher_is_better: true,
            cells: vec![cell("bs=8K", 100.0, true), cell("bs=16K", 110.0, false)],
        }];
        let (head, rows) = metric_rows(&by);
        assert_eq!(head.len(), rows[0].len());
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][1], "NOTPM (higher is better)");
        assert_eq!(rows[0][6], "(baseline)");
        assert_eq!(rows[1][4], "110.0");
        assert_eq!(rows[1][6], "+10.0%");
        assert_eq!(rows[1][8], "faster");
        assert!(metric_table(&by).contains("per metric"));
        assert!(metric_table(&[]).is_empty());
    }
}
