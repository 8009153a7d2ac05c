//! `blocklab job ID`'s runs table fitted to a width (a terminal's, or 100 columns when
//! piped); `--wide` gives every column instead ([`super::detail::render_job`]).
//!
//! The table shows the run's number, its cell, its repetition, its state, the proven page
//! sizes as one column ("16K/8K"), its result and its build. The attempt shows only when a
//! run was retried, the stage only where it says more than the state (a run under way, a
//! failure). Errors are listed under the table, one wrapped line per failed run, not cut in a
//! column. When the table is wider than the width, columns leave in [`LEFT_OUT_ORDER`]; the
//! number, the cell, the state and the result always stay.

use blocklab_proto::v1::RunInfo;
use blocklab_report::render::{Column, plain_table, table_width, wrap};

use crate::runs::{build_cell, result_cell};

/// The columns the width leaves out, first to last.
pub const LEFT_OUT_ORDER: [&str; 5] = ["build", "pages", "stage", "attempt", "rep"];

/// Proven page sizes as "16K/8K"; "-" before the run proved them.
fn pages(r: &RunInfo) -> String {
    let kb = |bytes: u32| format!("{}K", bytes / 1024);
    match (r.block_size, r.wal_block_size) {
        (0, 0) => "-".into(),
        (0, w) => format!("-/{}", kb(w)),
        (b, 0) => format!("{}/-", kb(b)),
        (b, w) => format!("{}/{}", kb(b), kb(w)),
    }
}

/// Whether the stage tells more than the state: a stage named, and not the state again.
fn stage_tells(r: &RunInfo) -> bool {
    !r.stage.is_empty() && r.stage != r.state
}

/// The runs table at `width`, a line naming the columns it left out, and the runs' errors.
pub fn runs_table(runs: &[RunInfo], width: usize) -> String {
    let col = |f: &dyn Fn(&RunInfo) -> String| runs.iter().map(f).collect::<Vec<_>>();
    let number = Column::right("#", col(&|r| (r.sequence + 1).to_string()));
    let cell = Column::left("cell", col(&|r| r.cell_label.clone()));
    let rep = Column::right("rep", col(&|r| (r.repetition + 1).to_string()));
    let attempt = Column::right("attempt", col(&|r| r.attempt.to_string()));
    let state = Column::left("state", col(&|r| r.state.clone()));
    let stage = Column::left(
        "stage",
        col(&|r| {
            if stage_tells(r) {
                r.stage.clone()
            } else {
                String::new()
            }
        }),
    );
    let page = Column::left("pages", col(&pages));
    let result = Column::left("result", col(&result_cell));
    let build = Column::left("build", col(&build_cell));

    let retried = runs.iter().any(|r| r.attempt > 1);
    let staged = runs.iter().any(stage_tells);
    // Every column in the table's order, named when it may leave (LEFT_OUT_ORDER's names);
    // the attempt and the stage only where they tell something.
    let all: Vec<(Option<&str>, &Column)> = [
        (None, &number),
        (None, &cell),
        (Some("rep"), &rep),
        (Some("attempt"), &attempt),
        (None, &state),
        (Some("stage"), &stage),
        (Some("pages"), &page),
        (None, &result),
        (Some("build"), &build),
    ]
    .into_iter()
    .filter(|(name, _)| match *name {
        Some("attempt") => retried,
        Some("stage") => staged,
        _ => true,
    })
    .collect();
    let layout = |left_out: &[&str]| -> Vec<&Column> {
        all.iter()
            .filter(|(name, _)| !name.is_some_and(|n| left_out.contains(&n)))
            .map(|(_, c)| *c)
            .collect()
    };
    // Leave columns out, in order, until the table fits (or nothing optional is left).
    let mut left_out: Vec<&str> = Vec::new();
    for name in LEFT_OUT_ORDER {
        if table_width(&layout(&left_out)) <= width {
            break;
        }
        if all.iter().any(|(n, _)| *n == Some(name)) {
            left_out.push(name);
        }
    }
    let columns = layout(&left_out);
    let mut out = plain_table(&columns);
    let failed: Vec<&RunInfo> = runs.iter().filter(|r| !r.error.is_empty()).collect();
    if !failed.is_empty() {
        out.push_str("errors:\n");
        for r in failed {
            let first = r.error.lines().next().unwrap_or("");
            let line = if r.stage.is_empty() {
                format!("  #{}: {first}\n", r.sequence + 1)
            } else {
                format!("  #{} ({}): {first}\n", r.sequence + 1, r.stage)
            };
            out.push_str(&wrap(&line, width));
        }
    }
    if !left_out.is_empty() {
        out.push_str(&wrap(
            &format!(
                "left out at this width: {}; --wide shows every column\n",
                left_out.join(", ")
            ),
            width,
        ));
    }
    out
}

#[cfg(test)]
mod tests;
