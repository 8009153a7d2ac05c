//! A cold build reports its progress: the agent builds into a fresh build cache and `watch`,
//! its output not a terminal, prints the build's steps and three rising make percentages
//! before the build ends (the test stops there and does not wait for the build). This is the
//! suite's one cold build.

use std::time::Duration;

use blocklab_proto::v1::SubmitJobRequest;
use blocklab_tests::{Lab, LabOptions, pg_tarball};

/// A writer that hands each complete line to a channel, as a pipe's reader would see it.
struct LineSink(tokio::sync::mpsc::UnboundedSender<String>, Vec<u8>);

impl std::io::Write for LineSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        while let Some(i) = self.1.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.1.drain(..=i).collect();
            let _ = self
                .0
                .send(String::from_utf8_lossy(&line[..i]).into_owned());
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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

    // `watch` writes into a pipe-like writer; the test reads its lines as they come and stops
    // once make has reported three rising percentages (the build itself is not awaited).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut watcher = client.clone();
    let id = job_id.clone();
    let watch = tokio::spawn(async move {
        let _ = blocklab_cli::watch(&mut watcher, &id, LineSink(tx, Vec::new())).await;
    });
    let mut lines = Vec::new();
    let mut percents: Vec<u32> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(25 * 60);
    while percents.len() < 3 {
        let line = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no three make percentages in time:\n{}", lines.join("\n")))
            .unwrap_or_else(|| panic!("watch ended before make reported:\n{}", lines.join("\n")));
        assert!(
            line.contains(" building: ") || (lines.is_empty() && line.contains(" queued: ")),
            "the job left building before make reported three percentages:\n{}\n{line}",
            lines.join("\n")
        );
        if let Some(p) = make_percent(&line)
            && percents.last().is_none_or(|&last| p > last)
        {
            percents.push(p);
        }
        lines.push(line);
    }
    watch.abort();
    let text = lines.join("\n");
    eprintln!("watch lines during the build:\n{text}");
    let fetch = lines
        .iter()
        .position(|l| l.ends_with("| building 8K/8K: fetch"));
    let configure = lines
        .iter()
        .position(|l| l.ends_with("| building 8K/8K: configure"));
    let make = lines.iter().position(|l| make_percent(l).is_some());
    assert!(
        configure.is_some() && fetch.is_none_or(|f| Some(f) < configure) && configure < make,
        "steps out of order:\n{text}"
    );
    // Reported percentages never fall.
    let all: Vec<u32> = lines.iter().filter_map(|l| make_percent(l)).collect();
    assert!(all.windows(2).all(|w| w[0] <= w[1]), "{all:?}\n{text}");
    // The first build of a source measures against an estimate, and says so.
    assert!(
        lines
            .iter()
            .filter(|l| make_percent(l).is_some())
            .all(|l| l.contains("make ~")),
        "first build not marked as estimated:\n{text}"
    );
    // No count of an earlier build exists yet in the fresh cache.
    assert!(
        !std::fs::read_dir(&cache)
            .expect("cache")
            .flatten()
            .any(|e| e
                .file_name()
                .to_string_lossy()
                .ends_with(".build-history.json")),
        "a fresh cache has no build history"
    );
    lab.shutdown().await;
}
