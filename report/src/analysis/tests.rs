use super::*;

fn cell(i: u32, bs: u32, clients: u32, source: &str, base: bool) -> ExportCell {
    ExportCell {
        cell_index: i,
        label: format!("bs={bs}K c={clients} src={source}"),
        block_size_kb: bs,
        wal_block_size_kb: 8,
        clients,
        is_baseline: base,
        dims_json: format!(r#"{{"scale":10,"source":"{source}"}}"#),
        ..Default::default()
    }
}

fn run(cell: u32, tps: f64, suspect: bool) -> ExportRun {
    ExportRun {
        cell_index: cell,
        state: "done".into(),
        suspect_reasons: if suspect {
            vec!["errors".into()]
        } else {
            vec![]
        },
        result: Some(RunMetrics {
            tps,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn job(cells: Vec<ExportCell>) -> JobExport {
    let runs = cells
        .iter()
        .flat_map(|c| {
            let base = f64::from(c.block_size_kb) * 100.0 + f64::from(c.clients);
            [
                run(c.cell_index, base, false),
                run(c.cell_index, base + 10.0, false),
            ]
        })
        .collect();
    JobExport {
        cells,
        runs,
        ..Default::default()
    }
}

#[test]
fn each_cell_is_compared_with_the_baseline_of_its_group() {
    // Two client counts and two sources; the baseline is 8K on pg15.
    let e = job(vec![
        cell(0, 8, 4, "pg15", true),
        cell(1, 16, 4, "pg15", false),
        cell(2, 8, 16, "pg15", true),
        cell(3, 16, 16, "pg15", false),
        cell(4, 8, 16, "pg16", false),
    ]);
    let r = cell_results(&e, &Metric::Tps);
    let base: Vec<&str> = r.iter().map(|c| c.baseline_label.as_str()).collect();
    assert_eq!(
        base,
        [
            "bs=8K c=4 src=pg15",
            "bs=8K c=4 src=pg15",
            "bs=8K c=16 src=pg15",
            "bs=8K c=16 src=pg15",
            "bs=8K c=16 src=pg15"
        ]
    );
    assert_eq!(
        (r[0].verdict.as_str(), r[2].verdict.as_str()),
        ("baseline", "baseline")
    );
    assert_eq!(r[3].baseline_mean, Some(821.0));
    // Equal means, but n = 2: below the calibrated n, too few runs for any verdict.
    assert_eq!(r[4].verdict, "too few runs");
    assert!(r[4].mde_pct.is_some(), "{:?}", r[4]);
    // What differs, as the group rule sees it.
    let on: Vec<&str> = r.iter().map(|c| c.compared_on.as_str()).collect();
    assert_eq!(on, ["", "page size", "", "page size", "source"]);
    assert_eq!(r[4].baseline_cell_index, Some(2));
}

#[test]
fn a_cell_without_a_baseline_or_runs_has_insufficient_data() {
    let mut e = job(vec![
        cell(0, 16, 4, "pg15", false),
        cell(1, 8, 4, "pg15", true),
    ]);
    e.cells.push(cell(2, 32, 8, "pg15", false));
    e.runs.push(run(1, 900.0, true));
    let r = cell_results(&e, &Metric::Tps);
    assert_eq!(
        (r[2].n, r[2].verdict.as_str(), r[2].baseline_label.as_str()),
        (0, "insufficient data", "")
    );
    // The baseline's suspect run enters its statistics (the default) and is counted.
    assert_eq!(
        (r[1].n, r[1].runs_ok, r[1].runs_suspect, r[1].runs_excluded),
        (3, 3, 1, 0)
    );
    assert_eq!(r[1].suspect_reasons, ["errors"]);
    assert_eq!(r[1].all_runs, None);
}

#[test]
fn compare_matches_on_dimensions_that_vary_inside_a_job() {
    // Job A on pg15, job B on pg16 (source fixed in each job): 8K matches 8K.
    let a = job(vec![
        cell(0, 8, 4, "pg15", true),
        cell(1, 16, 4, "pg15", false),
    ]);
    let b = job(vec![
        cell(0, 8, 4, "pg16", true),
        cell(1, 32, 4, "pg16", false),
    ]);
    let r = compare(&a, &b, &Metric::Tps);
    assert_eq!(r[0].baseline_label, "bs=8K c=4 src=pg15");
    assert!(!r[0].is_baseline);
    assert_eq!(r[1].verdict, NO_LIKE_CELL);
    // When the source varies inside a job it must match too.
    let a2 = job(vec![
        cell(0, 8, 4, "pg15", true),
        cell(1, 8, 4, "pg16", false),
    ]);
    let r = compare(&a2, &b, &Metric::Tps);
    assert_eq!(r[0].baseline_label, "bs=8K c=4 src=pg16");
}

mod family;
mod race;
mod rounds;
mod sequential;
