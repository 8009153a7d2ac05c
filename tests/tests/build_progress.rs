//! A cold build reports its progress: the agent builds into a fresh build cache and `watch`,
//! its output not a terminal, prints the build's step and a rising make percentage before the
//! build ends; the cache then holds the source's object count for the next build's meter.
//! (This is the suite's one cold build.)

use std::time::Duration;

use blocklab_proto::v1::{CancelJobRequest, GetJobRequest, SubmitJobRequest};
use blocklab_tests::{Lab, LabOptions, pg_tarball, wait_until};

/// The make percentage of a watch line ("... | building 8K/8K: make ~43%, ~2m10s left").
fn make_percent(line: &str) -> Option<u32> {
    let rest = line.split("building 8K/8K: make ").nth(1)?;
    let digits: String = rest
        .trim_start_matches('~')
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cold_build_reports_rising_make_percentages_to_watch() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let cache = dir.path().join("builds");
    let lab = Lab::start_with_cache(LabOptions::default(), cache.clone()).await;
    let mut client = lab.client().await;
    let spec = format!(
        r#"
name = "cold-build"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [1]
[workload]
builtin = "select-only"
scale = 1
duration = "1s"
"#,
        pg_tarball().display()
    );
    let job_id = client
        .submit_job(SubmitJobRequest {
            spec_toml: spec,
            files: Default::default(),
        })
        .await
        .expect("submit")
        .into_inner()
        .job_id;

    // Once the build is done (the job runs), cancel: the runs are not what this test is about.
    let mut canceller = client.clone();
    let id = job_id.clone();
    let cancel = tokio::spawn(async move {
        wait_until(Duration::from_secs(40 * 60), "the build ends", || {
            let mut c = canceller.clone();
            let id = id.clone();
            async move {
                c.get_job(GetJobRequest { job_id: id, run: 0 })
                    .await
                    .is_ok_and(|r| {
                        r.into_inner()
                            .job
                            .is_some_and(|j| j.state != "queued" && j.state != "building")
                    })
            }
        })
        .await;
        canceller
            .cancel_job(CancelJobRequest { job_id: id })
            .await
            .expect("cancel");
    });

    let mut out = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(45 * 60),
        blocklab_cli::watch(&mut client, &job_id, &mut out),
    )
    .await
    .expect("job finished in time")
    .expect("watch");
    cancel.await.expect("canceller");
    let text = String::from_utf8(out).expect("utf-8");

    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(" building: "))
        .unwrap_or_else(|| panic!("no line of a building job:\n{text}"));
    let built = start
        + lines[start..]
            .iter()
            .position(|l| !l.contains(" building: "))
            .unwrap_or_else(|| panic!("no line after the build:\n{text}"));
    let during = &lines[start..built];
    assert!(
        during
            .iter()
            .any(|l| l.contains("| building 8K/8K: configure")),
        "{text}"
    );
    let percents: Vec<u32> = during.iter().filter_map(|l| make_percent(l)).collect();
    assert!(
        percents.windows(2).all(|w| w[0] <= w[1]),
        "percentages fall: {percents:?}\n{text}"
    );
    let mut rising = percents.clone();
    rising.dedup();
    assert!(
        rising.len() >= 3 && rising[0] < rising[rising.len() - 1],
        "fewer than three rising make percentages: {percents:?}\n{text}"
    );
    // The first build of a source measures against an estimate, and says so.
    assert!(
        during.iter().any(|l| l.contains("make ~")),
        "first build not marked as estimated:\n{text}"
    );
    assert!(
        during
            .iter()
            .any(|l| l.contains("| building 8K/8K: install")),
        "{text}"
    );
    // After the build the job line names no build.
    assert!(!lines[built].contains("building 8K/8K"), "{text}");

    // The cache now knows this source's object count and make time.
    let history = std::fs::read_dir(&cache)
        .expect("cache")
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(".build-history.json")
        })
        .expect("build history written");
    let h: blocklab_agent::build::progress::History =
        serde_json::from_str(&std::fs::read_to_string(history.path()).expect("read"))
            .expect("history parses");
    eprintln!(
        "build history: {h:?}; watch lines during the build: {}",
        during.len()
    );
    assert!(h.objects > 1000, "{h:?}");
    assert_eq!(h.make_seconds.len(), 1, "{h:?}");
    lab.shutdown().await;
}
