//! The compact tables as a terminal shows them, pinned whole (`snapshots/`), and `--wide` as
//! the table was before the compact one existed.

use blocklab_measure::job::*;

use super::LEFT_OUT_ORDER;
use crate::render::tests::{full_results, judged_cells};
use crate::render::{Format, View, render_compare_view, render_results, render_results_view};

/// Every line of `text` is at most `width` characters.
fn fits(text: &str, width: usize) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "{} > {width}: {line:?}\n{text}",
            line.chars().count()
        );
    }
}

#[test]
fn at_100_columns_every_compact_column_fits() {
    let text = render_results_view(&full_results(), Format::Table, View::fit(100));
    fits(&text, 100);
    assert_eq!(text, include_str!("snapshots/compact_100.txt"));
}

#[test]
fn at_60_columns_the_ci_the_mde_and_n_are_left_out_and_the_notes_wrap() {
    let text = render_results_view(&full_results(), Format::Table, View::fit(60));
    fits(&text, 60);
    assert_eq!(text, include_str!("snapshots/compact_60.txt"));
}

#[test]
fn wide_is_the_table_as_it_was() {
    let before = include_str!("snapshots/wide.txt");
    let r = full_results();
    assert_eq!(render_results(&r, Format::Table), before);
    let wide = View {
        width: None,
        builtin_statements: false,
    };
    // The fixture's scripts are the job's own: --wide alone prints the same.
    assert_eq!(render_results_view(&r, Format::Table, wide), before);
}

#[test]
fn columns_are_left_out_in_their_order_and_the_cell_and_verdict_stay() {
    let cells = full_results().cells;
    let header = |width: usize| {
        let (table, left_out) = super::cell_table(&cells, &crate::stats::Metric::Tps, false, width);
        (table.lines().next().unwrap_or("").to_string(), left_out)
    };
    let mut seen = 0;
    for width in (20..=120).rev() {
        let (head, left_out) = header(width);
        assert_eq!(left_out, LEFT_OUT_ORDER[..left_out.len()], "at {width}");
        assert!(
            left_out.len() >= seen,
            "at {width}: fewer left out than wider"
        );
        seen = left_out.len();
        assert!(
            head.starts_with("cell ") && head.contains("verdict"),
            "{head}"
        );
        assert!(head.contains("vs baseline"), "{head}");
    }
    assert_eq!(header(92).1, LEFT_OUT_ORDER[..0]);
    assert_eq!(header(91).1, ["95% CI"]);
    assert_eq!(header(20).1, LEFT_OUT_ORDER);
    // Narrower than its last layout, the table stays whole rather than cut.
    let (table, _) = super::cell_table(&cells, &crate::stats::Metric::Tps, false, 20);
    assert!(
        table.contains("bs=8K replicate  +0.1%        equivalent"),
        "{table}"
    );
}

#[test]
fn compare_names_b_and_a() {
    let r = Comparison {
        cells: judged_cells(),
        ..Default::default()
    };
    let text = render_compare_view(&r, Format::Table, View::fit(100));
    fits(&text, 100);
    let head = text.lines().nth(2).unwrap_or_default();
    assert!(
        head.starts_with("cell (B)") && head.contains("vs A (95% CI)"),
        "{text}"
    );
    assert!(
        text.contains("--wide adds: like cell (A) and its mean,"),
        "{text}"
    );
}

/// A job's own-workload figures from a script of `script`, one `\set` line and one query.
fn own(script: &str) -> QueryResults {
    let statement = |position: u32, command: &str, ms: f64| CellStatement {
        script: script.into(),
        position,
        command: command.into(),
        count: 100,
        failures: 0,
        latency_median_ms: ms,
    };
    QueryResults {
        job_id: "j".into(),
        cells: judged_cells(),
        own_workload: vec![OwnWorkloadCell {
            cell: "bs=8K".into(),
            runs: 3,
            statements: vec![
                statement(0, "\\set aid random(1, 100000 * :scale)", 0.0),
                statement(
                    1,
                    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;",
                    0.21,
                ),
            ],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn a_builtin_script_has_no_statement_table_unless_asked() {
    let builtin = own("<builtin: select only>");
    for format in [Format::Table, Format::Markdown] {
        for view in [
            View::fit(100),
            View {
                width: None,
                ..View::fit(0)
            },
        ] {
            let text = render_results_view(&builtin, format, view);
            assert!(!text.contains("own workload"), "{text}");
            assert!(!text.contains("\\set aid"), "{text}");
            let asked = View {
                builtin_statements: true,
                ..view
            };
            let text = render_results_view(&builtin, format, asked);
            assert!(text.contains("\\set aid"), "{text}");
        }
    }
    // With a rate, the lag table stays without the statements.
    let mut lagged = builtin.clone();
    lagged.own_workload[0].late = 2;
    let text = render_results_view(&lagged, Format::Table, View::fit(100));
    assert!(
        text.contains("own workload") && !text.contains("\\set aid"),
        "{text}"
    );
    // csv and json carry every statement.
    assert!(render_results_view(&builtin, Format::Csv, View::fit(100)).contains("\\set aid"));
    assert!(render_results_view(&builtin, Format::Json, View::fit(100)).contains("\\\\set aid"));
}

#[test]
fn a_users_script_has_its_statement_table() {
    let text = render_results_view(&own("mine.sql"), Format::Table, View::fit(100));
    fits(&text, 100);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !(l.starts_with("cell ") && l.contains("script")))
        .take(4)
        .collect();
    assert_eq!(
        table,
        [
            "cell   script    #  command                                              count  failures  latency ms",
            "-----  --------  -  ---------------------------------------------------  -----  --------  ----------",
            "bs=8K  mine.sql  1  \\set aid random(1, 100000 * :scale)                    100         0       0.000",
            // A command longer than the room beside the other columns is cut.
            "bs=8K  mine.sql  2  SELECT abalance FROM pgbench_accounts WHERE aid = …    100         0       0.210",
        ]
    );
}
