//! PostgreSQL 15, 17 and 18 in one series job (`kind = "series"`), each built from its
//! release tarball at 8K and 16K data pages: every cell's runs prove the major version and the
//! page size of the live server, and the results follow 16K against 8K from 15 to 18.

use std::time::Duration;

use blocklab_tests::{Lab, export_job, pg_tarball, pg_tarball_of, run_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_versions_at_two_page_sizes_run_end_to_end() {
    let sources = [
        ("pg15", 15, pg_tarball()),
        ("pg17", 17, pg_tarball_of(17)),
        ("pg18", 18, pg_tarball_of(18)),
    ];
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let mut spec = String::from(
        r#"
name = "pg-versions"
kind = "series"
series = ["pg15", "pg17", "pg18"]
repetitions = 1
baseline = { block_size_kb = 8 }
[matrix]
block_size_kb = [8, 16]
clients = [1]
[workload]
builtin = "select-only"
scale = 1
warmup = "1s"
duration = "2s"
"#,
    );
    for (name, _, tarball) in &sources {
        spec.push_str(&format!(
            "[sources.{name}]\ntarball = \"{}\"\nconfigure = [\"--without-icu\"]\n",
            tarball.display()
        ));
    }
    let (job, state) = run_job(&mut client, &spec, Duration::from_secs(60 * 60)).await;
    assert_eq!(state, "done", "job {job}");
    let export = export_job(&mut client, &job, false).await;
    assert_eq!(export.cells.len(), 6, "{:?}", export.cells);
    for cell in &export.cells {
        let (_, major, _) = sources
            .iter()
            .find(|(name, _, _)| cell.dims_json.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("cell {} names no source: {}", cell.label, cell.dims_json));
        let runs: Vec<_> = export
            .runs
            .iter()
            .filter(|r| r.cell_index == cell.cell_index)
            .collect();
        assert_eq!(runs.len(), 1, "{}", cell.label);
        for r in runs {
            assert_eq!(r.state, "done", "{}: {}", cell.label, r.error);
            assert!(
                r.server_version.starts_with(&format!("{major}.")),
                "{}: server_version {}",
                cell.label,
                r.server_version
            );
            assert_eq!(r.block_size, cell.block_size_kb * 1024, "{}", cell.label);
            assert!(
                r.result.as_ref().is_some_and(|m| m.transactions > 0),
                "{}",
                cell.label
            );
        }
    }
    // The series: 16K against 8K at each version, in the series' order, on the wire and in
    // what `results` prints.
    let r = blocklab_tests::query_results(&mut client, &job).await;
    let points: Vec<(u32, bool)> = r
        .cells
        .iter()
        .map(|c| {
            (
                c.series_point.expect("every cell has its point"),
                c.is_baseline,
            )
        })
        .collect();
    for point in 0..3 {
        assert_eq!(
            points.iter().filter(|(p, _)| *p == point).count(),
            2,
            "{points:?}"
        );
    }
    let compared: Vec<&blocklab_proto::v1::CellResult> =
        r.cells.iter().filter(|c| !c.is_baseline).collect();
    let text = blocklab_report::render::render_results(
        &r.clone().into(),
        blocklab_report::render::Format::Table,
    );
    eprintln!("{text}");
    assert!(
        text.contains("series of tps: bs=16K wal=8K c=1 vs bs=8K wal=8K c=1 over 3 points\n"),
        "{text}"
    );
    for (c, source) in compared.iter().zip(["pg15", "pg17", "pg18"]) {
        let line = format!(
            "  {source}: {:+.1}%",
            c.pct_change_vs_baseline.expect("a change")
        );
        assert!(text.contains(&line), "{line:?} in {text}");
    }
    assert!(
        text.contains("3 points cannot show one (a clean step reaches p ~ "),
        "{text}"
    );
}
