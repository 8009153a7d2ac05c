//! A cell's own-workload figures from its completed runs: the median of the runs' mean
//! schedule lag, the largest lag, the late and skipped transactions, and per statement of
//! each script its count and the median of the runs' average latencies.

use std::collections::BTreeMap;

use blocklab_measure::job::*;

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn has_figures(m: &RunMetrics) -> bool {
    !m.statements.is_empty() || m.schedule_lag_max_ms > 0.0 || m.late > 0 || m.skipped > 0
}

/// The cells whose completed runs have own-workload figures, in cell order. A statement is
/// keyed by its script and position; its command text is the first run's.
pub fn own_workload(e: &JobExport) -> Vec<OwnWorkloadCell> {
    let mut out = Vec::new();
    for c in &e.cells {
        let results: Vec<&RunMetrics> = e
            .runs
            .iter()
            .filter(|r| r.cell_index == c.cell_index)
            .filter_map(|r| r.result.as_ref())
            .collect();
        if !results.iter().any(|m| has_figures(m)) {
            continue;
        }
        let mut statements: BTreeMap<(String, u32), (CellStatement, Vec<f64>)> = BTreeMap::new();
        // Scripts in the order the runs list them, not by name.
        let mut script_order: Vec<String> = Vec::new();
        for m in &results {
            for s in &m.statements {
                if !script_order.contains(&s.script) {
                    script_order.push(s.script.clone());
                }
                let (row, lat) = statements
                    .entry((s.script.clone(), s.position))
                    .or_insert_with(|| {
                        (
                            CellStatement {
                                script: s.script.clone(),
                                position: s.position,
                                command: s.command.clone(),
                                ..Default::default()
                            },
                            Vec::new(),
                        )
                    });
                row.count += s.count;
                row.failures += s.failures;
                if s.count > 0 {
                    lat.push(s.latency_avg_ms);
                }
            }
        }
        let mut rows: Vec<CellStatement> = statements
            .into_values()
            .map(|(mut row, lat)| {
                row.latency_median_ms = median(lat);
                row
            })
            .collect();
        rows.sort_by_key(|r| (script_order.iter().position(|s| *s == r.script), r.position));
        out.push(OwnWorkloadCell {
            cell_index: c.cell_index,
            cell: c.label.clone(),
            runs: results.len() as u32,
            schedule_lag_median_ms: median(results.iter().map(|m| m.schedule_lag_avg_ms).collect()),
            schedule_lag_max_ms: results
                .iter()
                .map(|m| m.schedule_lag_max_ms)
                .fold(0.0, f64::max),
            late: results.iter().map(|m| m.late).sum(),
            skipped: results.iter().map(|m| m.skipped).sum(),
            statements: rows,
        });
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn stmt(script: &str, position: u32, command: &str, count: u64, ms: f64) -> StatementLatency {
        StatementLatency {
            script: script.into(),
            position,
            command: command.into(),
            count,
            latency_avg_ms: ms,
            failures: position as u64,
        }
    }

    fn run(
        cell: u32,
        lag: f64,
        max: f64,
        late: u64,
        statements: Vec<StatementLatency>,
    ) -> ExportRun {
        ExportRun {
            cell_index: cell,
            result: Some(RunMetrics {
                schedule_lag_avg_ms: lag,
                schedule_lag_max_ms: max,
                late,
                skipped: late * 2,
                statements,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Two cells of three runs (one failed run without a result) and a plain cell.
    pub(crate) fn export() -> JobExport {
        let cells = ["8K", "16K", "32K"]
            .iter()
            .enumerate()
            .map(|(i, l)| ExportCell {
                cell_index: i as u32,
                label: l.to_string(),
                ..Default::default()
            })
            .collect();
        let s = |a: f64, b: f64| {
            vec![
                stmt("mine.sql", 1, "UPDATE t SET v = v + 1", 100, a),
                stmt("mine.sql", 0, "\\set id random(1, 10)", 100, 0.001),
                stmt("aaa.sql", 0, "SELECT 1", 10, b),
            ]
        };
        let mut runs = vec![
            run(0, 1.5, 9.0, 1, s(2.0, 0.5)),
            run(0, 0.5, 4.0, 0, s(4.0, 0.25)),
            run(0, 1.0, 12.0, 3, s(3.0, 0.75)),
            run(1, 2.0, 5.0, 0, s(1.0, 1.0)),
            run(1, 4.0, 6.0, 0, s(2.0, 2.0)),
            run(2, 0.0, 0.0, 0, Vec::new()),
        ];
        runs.push(ExportRun {
            cell_index: 1,
            ..Default::default()
        });
        JobExport {
            cells,
            runs,
            ..Default::default()
        }
    }

    #[test]
    fn figures_are_medians_sums_and_maxima_over_a_cells_runs() {
        let own = own_workload(&export());
        assert_eq!(own.len(), 2, "the plain cell has none: {own:?}");
        let a = &own[0];
        assert_eq!((a.cell_index, a.cell.as_str(), a.runs), (0, "8K", 3));
        assert_eq!(a.schedule_lag_median_ms, 1.0);
        assert_eq!(a.schedule_lag_max_ms, 12.0);
        assert_eq!((a.late, a.skipped), (4, 8));
        let rows: Vec<(&str, u32, u64, u64, f64)> = a
            .statements
            .iter()
            .map(|s| {
                (
                    s.script.as_str(),
                    s.position,
                    s.count,
                    s.failures,
                    s.latency_median_ms,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("mine.sql", 0, 300, 0, 0.001),
                ("mine.sql", 1, 300, 3, 3.0),
                ("aaa.sql", 0, 30, 0, 0.5),
            ]
        );
        let b = &own[1];
        assert_eq!(
            (b.runs, b.schedule_lag_median_ms, b.schedule_lag_max_ms),
            (2, 3.0, 6.0)
        );
        assert_eq!(b.statements[1].latency_median_ms, 1.5);
        assert_eq!(b.statements[2].latency_median_ms, 1.5);
    }
}
