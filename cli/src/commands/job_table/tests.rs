//! The runs table as a terminal shows it, pinned whole (`snapshots/`), and `--wide` as the
//! former table gave it (`snapshots/wide.txt`, printed by the binary before the compact table
//! existed, for the same job).

use blocklab_proto::v1::{GetJobResponse, JobSummary, RunInfo};

use super::*;
use crate::commands::detail::{render_job, render_job_fit};

/// The demo job the wide snapshot was printed for: 8K against 16K pages at 4 clients, 5
/// rounds, every run done with a cached build.
fn demo_job() -> GetJobResponse {
    let tps = [
        2155.0, 2110.0, 1124.8, 887.5, 1406.3, 1987.1, 1972.8, 2158.0, 1637.1, 1867.5,
    ];
    let runs = tps
        .iter()
        .enumerate()
        .map(|(i, tps)| {
            let big = i % 2 == 1;
            RunInfo {
                cell_index: u32::from(big),
                repetition: u32::try_from(i / 2).unwrap(),
                sequence: u32::try_from(i).unwrap(),
                attempt: 1,
                state: "done".into(),
                stage: "done".into(),
                cell_label: if big {
                    "bs=16K wal=8K c=4".into()
                } else {
                    "bs=8K wal=8K c=4".into()
                },
                block_size: if big { 16384 } else { 8192 },
                wal_block_size: 8192,
                tps: *tps,
                build_key: if big {
                    "pg15.18-b16-w8-de8a04f00d94127c".into()
                } else {
                    "pg15.18-b8-w8-156a9572aa052f2d".into()
                },
                build_reused: true,
                ..Default::default()
            }
        })
        .collect();
    GetJobResponse {
        job: Some(JobSummary {
            job_id: "e816df88-e396-461f-b256-d401cdb51a24".into(),
            name: "demo-8k-vs-16k".into(),
            state: "done".into(),
            runs_total: 10,
            runs_done: 10,
            db_host_id: "demo-db".into(),
            ..Default::default()
        }),
        runs,
        ..Default::default()
    }
}

/// A job under way: a run retried after a lost worker, one failed with a long error, one
/// measuring, one queued before its build.
fn busy_job() -> GetJobResponse {
    let mut job = demo_job();
    job.runs.truncate(4);
    let r = &mut job.runs;
    r[1].attempt = 2;
    r[2].state = "failed".into();
    r[2].stage = "load".into();
    r[2].error = "pgbench -i failed: ERROR:  could not extend file \"base/16384/16397\": No space left on device\nHINT:  Check free disk space.".into();
    r[3].state = "running".into();
    r[3].stage = "measure".into();
    r[3].block_size = 0;
    r[3].wal_block_size = 0;
    r[3].build_reused = false;
    job.runs.push(RunInfo {
        sequence: 4,
        repetition: 2,
        state: "queued".into(),
        cell_label: "bs=8K wal=8K c=4".into(),
        ..Default::default()
    });
    job
}

/// The runs table's header: the line above its dashes.
fn header(text: &str) -> &str {
    let lines: Vec<&str> = text.lines().collect();
    let dashes = lines
        .iter()
        .position(|l| l.starts_with('-') || l.starts_with(" -"))
        .expect("a table");
    lines[dashes - 1]
}

fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn the_demo_job_at_100_columns() {
    let text = render_job_fit(&demo_job(), 100);
    assert_eq!(text, include_str!("snapshots/compact_100.txt"));
    assert!(widest_line(&text) <= 100);
}

#[test]
fn the_demo_job_at_60_columns() {
    let text = render_job_fit(&demo_job(), 60);
    assert_eq!(text, include_str!("snapshots/compact_60.txt"));
    assert!(widest_line(&text) <= 60);
}

#[test]
fn wide_is_the_former_table() {
    assert_eq!(
        render_job(&demo_job()) + "\n",
        include_str!("snapshots/wide.txt")
    );
}

#[test]
fn a_job_under_way_shows_attempts_stages_and_errors_under_the_table() {
    let text = render_job_fit(&busy_job(), 100);
    assert_eq!(text, include_str!("snapshots/busy_100.txt"));
    let header = header(&text);
    for column in ["attempt", "stage"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(
        text.contains("errors:\n  #3 (load): pgbench -i failed:"),
        "{text}"
    );
    assert!(!text.contains("HINT"), "only an error's first line: {text}");
}

#[test]
fn a_settled_job_has_no_attempt_or_stage_column() {
    let text = render_job_fit(&demo_job(), 200);
    assert_eq!(
        header(&text).split_whitespace().collect::<Vec<_>>(),
        ["#", "cell", "rep", "state", "pages", "result", "build"]
    );
    assert!(!text.contains("left out"), "{text}");
}

#[test]
fn columns_leave_in_order_and_the_table_fits_where_it_can() {
    let job = busy_job();
    let rows = |table: &str| table.split("errors:").next().unwrap().to_string();
    // The note may wrap (at width 1, a word a line): read it with its words joined again.
    let left_out = |table: &str| -> Vec<String> {
        let flat = table.split_whitespace().collect::<Vec<_>>().join(" ");
        flat.split_once("left out at this width: ")
            .map(|(_, l)| {
                l.split(';')
                    .next()
                    .unwrap()
                    .split(", ")
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    // With every optional column gone: #, cell, state and result.
    let narrowest = runs_table(&job.runs, 1);
    assert_eq!(
        header(&narrowest).split_whitespace().collect::<Vec<_>>(),
        ["#", "cell", "state", "result"]
    );
    assert_eq!(left_out(&narrowest), LEFT_OUT_ORDER);
    let floor = widest_line(&rows(&narrowest));
    let mut before = LEFT_OUT_ORDER.len();
    for width in 1..=140 {
        let table = runs_table(&job.runs, width);
        assert!(
            widest_line(&rows(&table)) <= width.max(floor),
            "at {width}:\n{table}"
        );
        // Under the table, every line but an unbreakable word fits too.
        for line in table.lines().skip_while(|l| *l != "errors:") {
            assert!(
                line.chars().count() <= width.max(floor) || !line.trim().contains(' '),
                "at {width}: {line}"
            );
        }
        // What goes is a prefix of the order, and a wider table never leaves out more.
        let gone = left_out(&table);
        assert_eq!(gone, LEFT_OUT_ORDER[..gone.len()], "at {width}");
        assert!(gone.len() <= before, "at {width}");
        before = gone.len();
    }
    assert_eq!(before, 0, "at 140 every column fits");
}

#[test]
fn pages_read_as_sizes() {
    let mut r = RunInfo::default();
    assert_eq!(pages(&r), "-");
    r.block_size = 32768;
    r.wal_block_size = 4096;
    assert_eq!(pages(&r), "32K/4K");
}
