//! `search = "race"` end to end: six cells (8K and 16K data pages, each under two harmless
//! settings variants, the first of which is the baseline, and one throttled by a 100 ms
//! commit delay) race from three
//! rounds; the throttled cells must leave at the first look and run no more rounds, the
//! default must run every round, and the job must stop where the race, replayed from the
//! exported runs, says it is decided, or at its maximum.

use std::time::Duration;

use blocklab_report::race::{End, Standing};
use blocklab_report::stats::Metric;
use blocklab_tests::{Lab, pg_tarball, run_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_race_drops_the_throttled_cells_and_keeps_the_default() {
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "race"
search = "race"
repetitions = {{ min = 3, max = 4, until = "decided" }}
order = "randomized-block"
seed = 5
equivalence_pct = 10
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8, 16]
clients = [2]
[settings_variants.slow]
commit_delay = 100000
commit_siblings = 0
[settings_variants.lean]
wal_compression = "on"
[settings_variants.plain]
wal_compression = "off"
[workload]
builtin = "tpcb-like"
scale = 1
warmup = "1s"
duration = "2s"
"#,
        pg_tarball().display()
    );
    let (job, state) = run_job(&mut client, &spec, Duration::from_secs(25 * 60)).await;
    assert_eq!(state, "done", "job {job}");
    let export = blocklab_tests::export_job(&mut client, &job, false).await;
    assert_eq!(export.cells.len(), 6, "{:?}", export.cells);
    let label = |i: u32| export.cells[i as usize].label.clone();
    let races = blocklab_report::analysis::race::job_races(&export, &Metric::Tps);
    assert_eq!(races.len(), 1, "one client count: one race");
    let race = &races[0];
    let runs_of = |cell: u32| export.runs.iter().filter(|r| r.cell_index == cell).count();
    let rounds = blocklab_report::analysis::rounds_run(&export);
    // The job stopped where the replayed race ends.
    match race.end {
        End::Decided { round } => assert_eq!(rounds, round, "decided at {round}"),
        End::MaxReached { round } => assert_eq!((rounds, round), (4, 4)),
        End::Running => panic!("the job ended but its race runs: {race:?}"),
    }
    for c in &export.cells {
        let standing = race.of(c.cell_index).expect("entrant").standing;
        let slow = c.label.contains("slow");
        if slow {
            // A hundredth of the others' throughput: out at the first look.
            assert_eq!(standing, Standing::Dropped { round: 3 }, "{}", c.label);
            assert_eq!(runs_of(c.cell_index), 3, "{}", c.label);
        } else {
            assert!(standing.in_race(), "{}: {standing}", c.label);
            assert_eq!(runs_of(c.cell_index), rounds as usize, "{}", c.label);
        }
        if c.is_baseline {
            assert!(!slow && standing.in_race(), "the default stays");
        }
    }
    // What `results` says is that replay, cell by cell, with the best named.
    let r = blocklab_tests::query_results(&mut client, &job).await;
    let best = race.best.map(label).expect("a best");
    for c in &r.cells {
        let s = c.race.as_ref().expect("every cell has a standing");
        let want = race.of(c.cell_index).expect("entrant");
        assert_eq!(s.standing, want.standing.to_string(), "{}", c.label);
        assert_eq!(s.runs_spent, race.runs_spent);
        assert_eq!(s.full_grid_runs, 6 * rounds);
        if s.standing != "best" && s.dropped_round.is_none() {
            assert_eq!(s.best_label, best, "{}", c.label);
        }
    }
    let text =
        blocklab_report::render::render_results(&r.into(), blocklab_report::render::Format::Table);
    eprintln!("{text}");
    assert!(text.contains("race on tps (higher better): "), "{text}");
    assert!(text.contains(&format!("  best: {best} (")), "{text}");
    let spent = race.runs_spent;
    assert!(
        text.contains(&format!(
            "  runs: {spent} of the {} a full grid",
            6 * rounds
        )),
        "{text}"
    );
    lab.shutdown().await;
}
