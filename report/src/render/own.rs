//! The own-workload figures of a job's cells ([`crate::own`]) as JSON, CSV rows and tables.

use blocklab_measure::job::*;
use serde_json::{Value, json};

use super::fit::{Column, plain_table, table_width};

fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// The cells' figures, each with its statements, as JSON (numbers unrounded).
pub fn own_json(own: &[OwnWorkloadCell]) -> Value {
    own.iter()
        .map(|c| {
            json!({
                "cell": c.cell,
                "cell_index": c.cell_index,
                "runs": c.runs,
                "schedule_lag_median_ms": c.schedule_lag_median_ms,
                "schedule_lag_max_ms": c.schedule_lag_max_ms,
                "late": c.late,
                "skipped": c.skipped,
                "statements": c.statements.iter().map(|s| json!({
                    "script": s.script,
                    "position": s.position,
                    "command": s.command,
                    "count": s.count,
                    "failures": s.failures,
                    "latency_median_ms": s.latency_median_ms,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// CSV columns of the own-workload table: one line per cell and statement (a cell without
/// statements has one line with the statement columns empty).
pub(super) const OWN_CSV_COLUMNS: [&str; 13] = [
    "cell",
    "cell_index",
    "runs",
    "schedule_lag_median_ms",
    "schedule_lag_max_ms",
    "late",
    "skipped",
    "script",
    "position",
    "command",
    "count",
    "failures",
    "latency_median_ms",
];

/// The own-workload table's lines as fields, unrounded.
pub(super) fn own_csv_rows(own: &[OwnWorkloadCell]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for c in own {
        let head = vec![
            c.cell.clone(),
            c.cell_index.to_string(),
            c.runs.to_string(),
            c.schedule_lag_median_ms.to_string(),
            c.schedule_lag_max_ms.to_string(),
            c.late.to_string(),
            c.skipped.to_string(),
        ];
        if c.statements.is_empty() {
            let mut l = head.clone();
            l.extend(std::iter::repeat_n(String::new(), 6));
            out.push(l);
        }
        for s in &c.statements {
            let mut l = head.clone();
            l.extend([
                s.script.clone(),
                s.position.to_string(),
                s.command.clone(),
                s.count.to_string(),
                s.failures.to_string(),
                s.latency_median_ms.to_string(),
            ]);
            out.push(l);
        }
    }
    out
}

/// Whether `script` (a statement's script as the worker names it) is one of pgbench's
/// builtin scripts (`<builtin: TPC-B (sort of)>`, ...) rather than a file of the job's own.
pub fn is_builtin_script(script: &str) -> bool {
    blocklab_script::builtin::Builtin::ALL
        .iter()
        .any(|b| b.description() == script)
}

/// The figures a text rendering shows: without `builtin` statements, only the statements of
/// the job's own script files, and nothing at all when no cell keeps a statement or has a
/// schedule lag, late or skipped transactions (a builtin script's job without a rate).
pub(super) fn shown(own: &[OwnWorkloadCell], builtin: bool) -> Vec<OwnWorkloadCell> {
    if builtin {
        return own.to_vec();
    }
    let lagged = |c: &OwnWorkloadCell| {
        c.schedule_lag_median_ms > 0.0 || c.schedule_lag_max_ms > 0.0 || c.late + c.skipped > 0
    };
    let mut out: Vec<OwnWorkloadCell> = own
        .iter()
        .map(|c| OwnWorkloadCell {
            statements: c
                .statements
                .iter()
                .filter(|s| !is_builtin_script(&s.script))
                .cloned()
                .collect(),
            ..c.clone()
        })
        .collect();
    if !out.iter().any(|c| !c.statements.is_empty() || lagged(c)) {
        out.clear();
    }
    out
}

/// One of [`own_tables`] as a plain table within `width`: shorter headers, and the `command`
/// column (if any) cut with `…` to what is left beside the others, at least 12 characters.
pub(super) fn fitted(header: Vec<String>, rows: Vec<Vec<String>>, width: usize) -> String {
    let mut columns: Vec<Column> = header
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let cells = rows.iter().map(|r| r[i].clone()).collect();
            match h.as_str() {
                "cell" | "script" | "command" => Column::left(h, cells),
                "median schedule lag ms" => Column::right("lag median ms", cells),
                "max schedule lag ms" => Column::right("lag max ms", cells),
                "median latency ms" => Column::right("latency ms", cells),
                _ => Column::right(h, cells),
            }
        })
        .collect();
    if let Some(at) = columns.iter().position(|c| c.header == "command") {
        let others: Vec<&Column> = columns
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at)
            .map(|(_, c)| c)
            .collect();
        let room = width.saturating_sub(table_width(&others) + 2).max(12);
        for cell in &mut columns[at].cells {
            if cell.chars().count() > room {
                *cell = cell.chars().take(room - 1).collect::<String>() + "…";
            }
        }
    }
    plain_table(&columns.iter().collect::<Vec<_>>())
}

/// Two tables for people: per cell its lag and late/skipped counts; per cell and script its
/// statements, numbered from 1 in `#`. Rounded as the other tables are.
pub fn own_tables(own: &[OwnWorkloadCell]) -> [(Vec<String>, Vec<Vec<String>>); 2] {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cells = own
        .iter()
        .map(|c| {
            vec![
                c.cell.clone(),
                c.runs.to_string(),
                ms(c.schedule_lag_median_ms),
                ms(c.schedule_lag_max_ms),
                c.late.to_string(),
                c.skipped.to_string(),
            ]
        })
        .collect();
    let statements = own
        .iter()
        .flat_map(|c| {
            c.statements.iter().map(|s| {
                vec![
                    c.cell.clone(),
                    s.script.clone(),
                    // Numbered from 1, as `blocklab job ID --run N` numbers them.
                    (s.position + 1).to_string(),
                    s.command.clone(),
                    s.count.to_string(),
                    s.failures.to_string(),
                    ms(s.latency_median_ms),
                ]
            })
        })
        .collect();
    [
        (
            strings(&[
                "cell",
                "runs",
                "median schedule lag ms",
                "max schedule lag ms",
                "late",
                "skipped",
            ]),
            cells,
        ),
        (
            strings(&[
                "cell",
                "script",
                "#",
                "command",
                "count",
                "failures",
                "median latency ms",
            ]),
            statements,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::{Format, render_results};
    use blocklab_measure::job::*;

    fn response() -> QueryResults {
        QueryResults {
            job_id: "j1".into(),
            own_workload: crate::own_workload(&crate::own::tests::export()),
            ..Default::default()
        }
    }

    #[test]
    fn json_carries_each_cells_lag_and_statements() {
        let v: serde_json::Value =
            serde_json::from_str(&render_results(&response(), Format::Json)).unwrap();
        let own = &v["own_workload"];
        assert_eq!(own.as_array().unwrap().len(), 2);
        assert_eq!(own[0]["cell"], "8K");
        assert_eq!(own[0]["schedule_lag_median_ms"], 1.0);
        assert_eq!(own[0]["schedule_lag_max_ms"], 12.0);
        assert_eq!(own[0]["late"], 4);
        assert_eq!(own[0]["skipped"], 8);
        assert_eq!(own[1]["schedule_lag_median_ms"], 3.0);
        let s = &own[0]["statements"][1];
        assert_eq!(s["script"], "mine.sql");
        assert_eq!(s["position"], 1);
        assert_eq!(s["command"], "UPDATE t SET v = v + 1");
        assert_eq!(s["count"], 300);
        assert_eq!(s["failures"], 3);
        assert_eq!(s["latency_median_ms"], 3.0);
    }

    #[test]
    fn csv_has_a_second_table_one_line_per_cell_and_statement() {
        let text = render_results(&response(), Format::Csv);
        let (_, own) = text
            .split_once("\n\n")
            .expect("a blank line before the table");
        let lines: Vec<&str> = own.lines().collect();
        assert_eq!(
            lines[0],
            "job_id,cell,cell_index,runs,schedule_lag_median_ms,schedule_lag_max_ms,late,skipped,script,position,command,count,failures,latency_median_ms"
        );
        assert_eq!(lines.len(), 7, "{own}");
        assert_eq!(
            lines[2],
            "j1,8K,0,3,1,12,4,8,mine.sql,1,UPDATE t SET v = v + 1,300,3,3"
        );
        assert_eq!(lines[3], "j1,8K,0,3,1,12,4,8,aaa.sql,0,SELECT 1,30,0,0.5");
        assert_eq!(lines[6], "j1,16K,1,2,3,6,0,0,aaa.sql,0,SELECT 1,20,0,1.5");
        // Without figures there is no second table.
        let plain = QueryResults {
            job_id: "j1".into(),
            ..Default::default()
        };
        assert!(!render_results(&plain, Format::Csv).contains("\n\n"));
    }

    #[test]
    fn markdown_and_html_have_an_own_workload_section() {
        let md = render_results(&response(), Format::Markdown);
        assert!(md.contains("### Own workload"), "{md}");
        assert!(md.contains("| 8K | 3 | 1.000 | 12.000 | 4 | 8 |"), "{md}");
        assert!(
            md.contains("| 8K | mine.sql | 2 | UPDATE t SET v = v + 1 | 300 | 3 | 3.000 |"),
            "{md}"
        );
        assert!(
            md.contains("| 16K | aaa.sql | 1 | SELECT 1 | 20 | 0 | 1.500 |"),
            "{md}"
        );
        let html = crate::html::report(&crate::own::tests::export());
        assert!(html.contains("<h3 id=\"own-workload\">Own workload</h3>"));
        assert!(html.contains("<td>UPDATE t SET v = v + 1</td>"), "{html}");
        assert!(html.contains("<td>12.000</td>"));
    }
}
