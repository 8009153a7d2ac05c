//! The `blocklab` binary as a newcomer meets it, against a coordinator with no hosts: a
//! submitted job waits for its database host, so its listing, runs, export, cancellation and
//! watch answer without any PostgreSQL build. Submit prints the id alone; ids may be shortened
//! to a unique start; runs are numbered from 1; errors are said once, with the next step.

use std::process::{Command, Output, Stdio};

use blocklab_tests::{Lab, LabOptions, binary, submitted_job_id};

/// A coordinator alone: nothing attaches, so jobs wait.
async fn lab() -> Lab {
    Lab::start_with(LabOptions {
        workers_in_process: 0,
        agents: 0,
        ..LabOptions::default()
    })
    .await
}

/// Two cells, two repetitions: 4 runs.
const SPEC: &str = r#"
name = "newcomer"
repetitions = 2
[source]
tarball = "/nonexistent/postgresql-15.tar.bz2"
[matrix]
block_size_kb = [8, 16]
clients = [1]
[workload]
builtin = "select-only"
scale = 1
duration = "1s"
"#;

fn cli(lab: &Lab, args: &[&str]) -> Output {
    Command::new(binary("blocklab"))
        .args(["--coordinator", &lab.addr])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run blocklab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// The command's stdout; it must succeed.
fn ok(lab: &Lab, args: &[&str]) -> String {
    let out = cli(lab, args);
    assert!(
        out.status.success(),
        "blocklab {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The command's stderr; it must fail with exit code 1 and print nothing on stdout.
fn refused(lab: &Lab, args: &[&str]) -> String {
    let out = cli(lab, args);
    assert_eq!(out.status.code(), Some(1), "blocklab {args:?}: {out:?}");
    assert_eq!(text(&out.stdout), "", "blocklab {args:?}");
    text(&out.stderr)
}

/// Submits [`SPEC`] with the CLI; returns the job id and the whole output.
fn submit(lab: &Lab) -> (String, Output) {
    let path = lab.dir.path().join("newcomer.toml");
    std::fs::write(&path, SPEC).expect("spec");
    let out = cli(lab, &["submit", path.to_str().expect("path")]);
    assert!(out.status.success(), "submit: {}", text(&out.stderr));
    (submitted_job_id(&text(&out.stdout)), out)
}

/// Four characters that start no id of `ids`.
fn unused_prefix(ids: &[&str]) -> String {
    ["0000", "ffff", "a5a5"]
        .into_iter()
        .find(|p| ids.iter().all(|id| !id.starts_with(p)))
        .expect("a free prefix")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_and_rerun_print_the_id_alone_and_a_prefix_names_the_job() {
    let lab = lab().await;
    let (id, out) = submit(&lab);
    assert_eq!(text(&out.stdout), format!("{id}\n"));
    assert_eq!(
        text(&out.stderr),
        format!("submitted job {id} (2 cells, 4 runs)\n")
    );

    // Eight characters name the job, in upper case too.
    let shown = ok(&lab, &["job", &id[..8]]);
    assert!(
        shown.starts_with(&format!("job {id} (newcomer): ")),
        "{shown}"
    );
    assert_eq!(
        ok(&lab, &["job", &id[..8].to_ascii_uppercase()]),
        shown,
        "case does not matter"
    );

    let rerun = cli(&lab, &["rerun", &id[..6]]);
    assert!(rerun.status.success(), "rerun: {}", text(&rerun.stderr));
    let new = submitted_job_id(&text(&rerun.stdout));
    assert_eq!(text(&rerun.stdout), format!("{new}\n"));
    assert_eq!(
        text(&rerun.stderr),
        format!("submitted job {new} (rerun of {id}): 2 cells, 4 runs\n")
    );
    assert!(
        ok(&lab, &["job", &new]).contains(&format!("rerun of: {id}\n")),
        "the rerun names its job"
    );

    // Too short, not hex, no match: each says what to do, once.
    assert_eq!(
        refused(&lab, &["results", &id[..3]]),
        format!(
            "error: {:?} is not a job id: give the job's id or at least its first 4 characters \
             (see `blocklab jobs`)\n",
            &id[..3]
        )
    );
    let free = unused_prefix(&[&id, &new]);
    assert_eq!(
        refused(&lab, &["results", &free]),
        format!("error: no job starts with {free}, see `blocklab jobs`\n")
    );
    // A whole id the coordinator does not know: its message once, no gRPC code, a hint.
    let unknown = format!("{free}0000-0000-4000-8000-000000000000");
    assert_eq!(
        refused(&lab, &["watch", &unknown]),
        format!("error: job {unknown} not found; see `blocklab jobs`\n")
    );
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_numbered_from_1_and_run_0_is_refused_with_the_range() {
    let lab = lab().await;
    let (id, _) = submit(&lab);
    let short = &id[..8];
    let listing = ok(&lab, &["job", short]);
    let numbers: Vec<&str> = listing
        .lines()
        .filter_map(|l| {
            l.trim_start_matches(['│', '|', ' '])
                .split_whitespace()
                .next()
        })
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(numbers, ["1", "2", "3", "4"], "{listing}");
    assert_eq!(
        refused(&lab, &["job", short, "--run", "0"]),
        "error: run: this job has runs 1 to 4, not 0\n"
    );
    assert_eq!(
        refused(&lab, &["job", short, "--run", "5"]),
        "error: run: this job has runs 1 to 4, not 5\n"
    );
    let first = ok(&lab, &["job", short, "--run", "1"]);
    assert!(first.starts_with("run 1 ("), "{first}");
    let last = ok(&lab, &["job", short, "--run", "4"]);
    assert!(last.starts_with("run 4 ("), "{last}");
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_prints_the_jobs_export_as_json() {
    let lab = lab().await;
    let (id, _) = submit(&lab);
    let json = ok(&lab, &["export", &id[..8]]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["job"]["job_id"], id.as_str());
    assert_eq!(v["job"]["name"], "newcomer");
    assert!(
        v["spec_toml"]
            .as_str()
            .is_some_and(|s| s.contains("name = \"newcomer\""))
    );
    let sequences: Vec<u64> = v["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["sequence"].as_u64().expect("sequence"))
        .collect();
    assert_eq!(sequences, [0, 1, 2, 3]);
    let cells: Vec<&str> = v["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| c["label"].as_str().expect("label"))
        .collect();
    assert_eq!(cells.len(), 2, "{cells:?}");
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_fit_100_columns_when_piped_columns_when_set_and_wide_has_every_column() {
    let lab = lab().await;
    let (id, _) = submit(&lab);
    let results = |columns: Option<&str>, extra: &[&str]| {
        let mut c = Command::new(binary("blocklab"));
        c.args(["--coordinator", &lab.addr, "results", &id[..8]])
            .args(extra)
            .stdin(Stdio::null());
        match columns {
            Some(w) => c.env("COLUMNS", w),
            None => c.env_remove("COLUMNS"),
        };
        let out = c.output().expect("blocklab results");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let within = |t: &str, width: usize| t.lines().all(|l| l.chars().count() <= width);
    let piped = results(None, &[]);
    assert!(
        piped.starts_with("cell ") && piped.contains("verdict") && within(&piped, 100),
        "{piped}"
    );
    let narrow = results(Some("60"), &[]);
    assert!(
        within(&narrow, 60) && narrow.contains("verdict"),
        "{narrow}"
    );
    let wide = results(None, &["--wide"]);
    assert!(
        wide.contains("block_size") && wide.contains("p-value") && !within(&wide, 100),
        "{wide}"
    );
    assert_eq!(
        results(Some("60"), &["--wide"]),
        wide,
        "--wide ignores the width"
    );
    assert_eq!(results(None, &["--statements"]), piped, "no statements yet");
    lab.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_follows_a_waiting_job_and_a_finished_one_gets_its_final_line() {
    let lab = lab().await;
    let (id, _) = submit(&lab);

    // Watching a job that waits: its first line is the job, not its first run.
    let watching = Command::new(binary("blocklab"))
        .args(["--coordinator", &lab.addr, "watch", &id[..8]])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("blocklab watch");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        ok(&lab, &["cancel", &id[..8]]),
        format!("job {id}: cancelled (4 queued runs cancelled)\n")
    );
    let watched = tokio::task::spawn_blocking(move || watching.wait_with_output())
        .await
        .expect("join")
        .expect("watch output");
    assert_eq!(watched.status.code(), Some(2), "{watched:?}");
    let out = text(&watched.stdout);
    let first = out.lines().next().expect("a first line");
    assert!(
        first.starts_with(&format!("{id} ")) && first.contains(": 0/4 runs done, 0 failed"),
        "{out}"
    );
    assert!(!first.contains("| run "), "{out}");

    // Watching it now that it has finished: the final state line with the job's error,
    // nothing else.
    let again = cli(&lab, &["watch", &id[..8]]);
    assert_eq!(again.status.code(), Some(2), "not done: {again:?}");
    assert_eq!(
        text(&again.stdout),
        format!("job {id}: cancelled, 0/4 runs done, 0 failed: cancelled by request\n")
    );
    assert_eq!(text(&again.stderr), "");
    lab.shutdown().await;
}
