use blocklab_measure::job::*;

use crate::render::tests::judged_cells;
use crate::render::{Format, View, render_results, render_results_view};

fn demo() -> QueryResults {
    QueryResults {
        job_id: "j".into(),
        cells: judged_cells(),
        ..Default::default()
    }
}

#[test]
fn show() {
    for w in [100, 60, 40] {
        println!(
            "{}",
            render_results_view(&demo(), Format::Table, View::fit(w))
        );
    }
    let _ = render_results(&demo(), Format::Table);
}
