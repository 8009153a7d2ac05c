use std::time::Duration;

use clap::{CommandFactory, Parser};

use super::*;

#[derive(Parser, Debug, PartialEq)]
#[command(name = "demo")]
struct Demo {
    /// Where to listen.
    #[arg(
        long,
        env = "BLOCKLAB_TEST_CONFIG_LISTEN",
        default_value = "127.0.0.1:7400"
    )]
    listen: String,
    /// How often.
    #[arg(long, default_value = "2s", value_parser = humantime_like)]
    heartbeat_interval: Duration,
    #[arg(long, default_value_t = 4)]
    make_jobs: usize,
    /// Labels.
    #[arg(long, value_delimiter = ',')]
    labels: Vec<String>,
    #[arg(long)]
    host_id: Option<String>,
    #[arg(long)]
    insecure: bool,
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long)]
    print_default_config: bool,
}

fn humantime_like(s: &str) -> Result<Duration, String> {
    s.strip_suffix('s')
        .and_then(|n| n.parse().ok())
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{s:?} is not like 5s"))
}

fn argv(args: &[&str]) -> Vec<OsString> {
    std::iter::once("demo")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect()
}

fn write(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("demo.toml");
    std::fs::write(&path, text).expect("write");
    let p = path.display().to_string();
    (dir, p)
}

#[test]
fn default_config_round_trips() {
    let text = default_config(&Demo::command());
    assert!(
        text.contains("# Where to listen\n# (--listen, $BLOCKLAB_TEST_CONFIG_LISTEN)\n"),
        "{text}"
    );
    assert!(text.contains("listen = \"127.0.0.1:7400\""), "{text}");
    assert!(text.contains("make_jobs = 4\n"), "{text}");
    assert!(text.contains("# host_id = \"\""), "{text}");
    assert!(text.contains("# labels = []"), "{text}");
    assert!(!text.contains("print_default_config") && !text.contains("\nconfig"));
    let (_d, path) = write(&text);
    let from_file: Demo = parse_with_config(argv(&["--config", &path]), None).expect("parse");
    let plain: Demo = parse_with_config(argv(&[]), None).expect("parse");
    assert_eq!(
        Demo {
            config: None,
            ..from_file
        },
        plain
    );
}

#[test]
fn file_sets_and_flags_override() {
    let (_d, path) = write(
        "listen = \"0.0.0.0:9\"\nheartbeat_interval = \"5s\"\nmake_jobs = 8\nlabels = [\"nvme\", \"lab1\"]\nhost_id = \"db1\"\ninsecure = true\n",
    );
    let d: Demo = parse_with_config(argv(&["--config", &path]), None).expect("parse");
    assert_eq!(d.listen, "0.0.0.0:9");
    assert_eq!(d.heartbeat_interval, Duration::from_secs(5));
    assert_eq!((d.make_jobs, d.insecure), (8, true));
    assert_eq!(d.labels, vec!["nvme", "lab1"]);
    assert_eq!(d.host_id.as_deref(), Some("db1"));
    let d: Demo = parse_with_config(
        argv(&["--make-jobs", "2", "--config", &path, "--labels", "ssd"]),
        None,
    )
    .expect("parse");
    assert_eq!(d.make_jobs, 2, "the flag beats the file");
    assert_eq!(d.labels, vec!["ssd"]);
    assert_eq!(d.listen, "0.0.0.0:9");
}

#[test]
fn unknown_keys_and_bad_values_are_named() {
    let (_d, path) = write("listen = \"x\"\nheartbeat_intervall = \"5s\"\n");
    let e = parse_with_config::<Demo>(argv(&["--config", &path]), None)
        .expect_err("unknown key")
        .to_string();
    assert!(
        e.contains("unknown key `heartbeat_intervall`") && e.contains("heartbeat_interval"),
        "{e}"
    );
    assert!(e.contains(&path), "{e}");
    let (_d, path) = write("heartbeat_interval = \"soon\"\n");
    let e = parse_with_config::<Demo>(argv(&["--config", &path]), None)
        .expect_err("bad value")
        .to_string();
    assert!(
        e.contains("--heartbeat-interval") && e.contains("soon"),
        "{e}"
    );
    let (_d, path) = write("insecure = \"yes\"\n");
    let e = parse_with_config::<Demo>(argv(&["--config", &path]), None)
        .expect_err("bad bool")
        .to_string();
    assert!(e.contains("key `insecure`: expected true or false"), "{e}");
    let (_d, path) = write("listen = \n");
    let e = parse_with_config::<Demo>(argv(&["--config", &path]), None)
        .expect_err("syntax")
        .to_string();
    assert!(e.contains("not valid TOML"), "{e}");
}
