//! A series over commits with a known answer, and bisection naming the commit. The test makes
//! a git repository from PostgreSQL 15's source with 16 commits. Commit 9 is the one real C
//! change: every WAL flush waits 5 ms, but only in a build with 4K WAL pages
//! (`#if XLOG_BLCKSZ == 4096` in `XLogFlush`). The other commits change a text file that
//! nothing compiles.
//!
//! The series follows WAL 4K against 8K over every second commit (9 points, from the
//! spec's `[commits]` as `blocklab submit` resolves it), 3 rounds a point. With the 5 ms cost
//! a point after the change is about -77% [-83%, -69%] and one before it within about ±40%, so
//! 3 rounds separate them (the change point's measured p < 0.001); with a 1 ms cost it took 5
//! rounds and still failed now and then. Its one change
//! point must fall between commits 8 and 10, beyond the points' measurement noise; the
//! points before it scatter by 10-20% on a noisy disk, which the permutation test alone once
//! took for a second change point (`report/src/stats/changepoint/tests.rs` keeps that run). Bisection between the first and the last point must then name commit 9
//! with at most ceil(log2 15) + 2 commits measured.
//!
//! The known cost is large against the noise on purpose. The test asks whether the series
//! finds the change and the bisection names its commit, not how small a change they can see:
//! with a 1 ms wait (about -30% at one client, a debug-built client sharing two cores with the
//! server) and fsync on, the disk scattered one-client tps by 10-50% from run to run, and one
//! run in a few left the two ends' effects undecided, with nothing to bisect. The server runs
//! with `fsync = off`: a commit still calls `XLogFlush` (the flush position still moves,
//! without the system call), so the wait stays while the disk's latency leaves the
//! measurement.
//!
//! The repository's path and contents are the same on every run. The builds are keyed by the
//! git tree, so a second run builds nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use blocklab_cli::{Found, bisect, resolve_commits};
use blocklab_report::bisect::Side;
use blocklab_tests::{Lab, pg_tarball, query_results, run_job};

const COMMITS: usize = 16;
/// The commit that makes 4K WAL pages slow.
const SLOW: usize = 9;

fn git(dir: &Path, args: &[&str], when: usize) -> String {
    let date = format!("2025-01-01T00:{:02}:00Z", when);
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "blocklab test")
        .env("GIT_AUTHOR_EMAIL", "test@blocklab.invalid")
        .env("GIT_COMMITTER_NAME", "blocklab test")
        .env("GIT_COMMITTER_EMAIL", "test@blocklab.invalid")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

/// The repository and its commits, oldest first: made once, then found again.
fn known_answer_repo() -> (PathBuf, Vec<String>) {
    let top = Path::new("/var/tmp/blocklab-known-answer-5ms");
    let dir = top.join("postgres");
    let list = top.join("commits.txt");
    if let Ok(text) = std::fs::read_to_string(&list) {
        let commits: Vec<String> = text.lines().map(str::to_string).collect();
        if commits.len() == COMMITS
            && dir.join(".git").is_dir()
            && git(&dir, &["rev-parse", "HEAD"], 0) == commits[COMMITS - 1]
        {
            return (dir, commits);
        }
    }
    let _ = std::fs::remove_dir_all(top);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let tar = Command::new("tar")
        .args(["-xjf"])
        .arg(pg_tarball())
        .args(["--strip-components=1", "-C"])
        .arg(&dir)
        .status()
        .expect("tar runs");
    assert!(tar.success());
    git(&dir, &["-c", "init.defaultBranch=main", "init", "-q"], 0);
    let note = dir.join("KNOWN_ANSWER");
    let xlog = dir.join("src/backend/access/transam/xlog.c");
    let mut commits = Vec::new();
    for i in 0..COMMITS {
        let message = if i == 0 {
            "PostgreSQL 15.18".to_string()
        } else if i == SLOW {
            let text = std::fs::read_to_string(&xlog).expect("xlog.c");
            let at = text
                .find("#ifdef WAL_DEBUG\n\tif (XLOG_DEBUG)\n\t\telog(LOG, \"xlog flush request")
                .expect("XLogFlush's debug block");
            let slow = "#if XLOG_BLCKSZ == 4096\n\t/* A known cost, for a bisection test. */\n\tpg_usleep(5000L);\n#endif\n\n";
            std::fs::write(&xlog, format!("{}{slow}{}", &text[..at], &text[at..])).expect("write");
            "xlog: wait 5 ms in every WAL flush with 4K WAL pages".to_string()
        } else {
            let lines: String = (1..=i).map(|k| format!("note {k}\n")).collect();
            std::fs::write(&note, lines).expect("write");
            format!("notes: line {i}")
        };
        git(&dir, &["add", "-A", "-f"], i);
        git(
            &dir,
            &["-c", "commit.gpgsign=false", "commit", "-q", "-m", &message],
            i,
        );
        commits.push(git(&dir, &["rev-parse", "HEAD"], i));
    }
    // The builds user reads it.
    let chmod = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(top)
        .status()
        .expect("chmod");
    assert!(chmod.success());
    std::fs::write(&list, commits.join("\n") + "\n").expect("write");
    (dir, commits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_series_over_commits_finds_the_change_and_bisection_names_its_commit() {
    let (dir, commits) = known_answer_repo();
    let spec = format!(
        r#"
name = "known answer"
kind = "series"
repetitions = 3
order = "randomized-block"
seed = 16
baseline = {{ wal_block_size_kb = 8 }}
[commits]
git = "file://{}"
range = "{}..{}"
every = 2
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
wal_block_size_kb = [4, 8]
clients = [1]
[workload]
builtin = "tpcb-like"
scale = 1
warmup = "1s"
duration = "2s"
[settings]
fsync = false
"#,
        dir.display(),
        &commits[0][..12],
        &commits[COMMITS - 1][..12],
    );
    let resolved = resolve_commits("known-answer.toml", &spec)
        .expect("resolves")
        .expect("has commits");
    let lab = Lab::start().await;
    let mut client = lab.client().await;
    let (job, state) = run_job(&mut client, &resolved, Duration::from_secs(90 * 60)).await;
    assert_eq!(state, "done", "job {job}");

    // Points: commits 0, 2, ..., 14 and 15; the change falls between 8 (point 4) and 10.
    let r = query_results(&mut client, &job).await;
    let json = blocklab_report::render::render_results(
        &r.clone().into(),
        blocklab_report::render::Format::Json,
    );
    let text =
        blocklab_report::render::render_results(&r.into(), blocklab_report::render::Format::Table);
    eprintln!("{text}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let series = &v["series"][0];
    assert_eq!(
        series["points"].as_array().map(Vec::len),
        Some(9),
        "{series}"
    );
    let found: Vec<(u64, f64, f64)> = series["change_points"]
        .as_array()
        .expect("change points")
        .iter()
        .map(|c| {
            (
                c["at_point"].as_u64().unwrap(),
                c["p_value"].as_f64().unwrap(),
                c["measured_p_value"].as_f64().expect("checked"),
            )
        })
        .collect();
    assert_eq!(found.len(), 1, "{series}");
    assert_eq!(found[0].0, 5, "{series}");
    assert!(found[0].1 < 0.05, "{series}");
    assert!(found[0].2 < 0.05, "{series}");
    let before = series["change_points"][0]["before_pct"].as_f64().unwrap();
    let after = series["change_points"][0]["after_pct"].as_f64().unwrap();
    assert!(after < before - 20.0, "{before} -> {after}");

    // Bisection between the first and the last point names commit 9.
    let b = bisect(&mut client, &job, ["p00", "p08"], None, std::io::stderr())
        .await
        .expect("bisects");
    eprintln!("{}", blocklab_cli::render_bisection(&b));
    assert_eq!(b.candidates, COMMITS - 1);
    assert_eq!(
        b.found,
        Found::Commit {
            commit: commits[SLOW].clone(),
            subject: "xlog: wait 5 ms in every WAL flush with 4K WAL pages".into()
        }
    );
    // ceil(log2 15) + 2 builds (commits measured) at most; each placed commit on its true
    // side.
    let built: std::collections::BTreeSet<&str> =
        b.steps.iter().map(|s| s.commit.as_str()).collect();
    assert!(built.len() <= 6, "{} commits measured", built.len());
    for s in &b.steps {
        let index = commits
            .iter()
            .position(|c| *c == s.commit)
            .expect("a commit of the line");
        match &s.side {
            Side::Before => assert!(index < SLOW, "{s:?}"),
            Side::After => assert!(index >= SLOW, "{s:?}"),
            Side::Undecided(_) => {}
        }
    }
    lab.shutdown().await;
}
