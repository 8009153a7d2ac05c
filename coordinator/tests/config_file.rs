//! The coordinator's config file handling end to end.

use std::process::{Command, Output};

/// Runs a binary with a clean environment, so `[env: X=value]` in help texts is stable.
fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run binary")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

#[test]
fn coordinator_config_file() {
    let bin = env!("CARGO_BIN_EXE_blocklab-coordinator");
    let text = stdout(&run(bin, &["--print-default-config"]));
    let table: toml::Table = text.parse().expect("default config is TOML");
    assert_eq!(table["listen"].as_str(), Some("127.0.0.1:7400"));
    assert!(text.contains("# dashboard_listen = \"\""), "{text}");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("coordinator.toml");
    std::fs::write(&path, format!("{text}\nlisten_port = 1\n")).expect("write");
    let o = run(bin, &["--config", path.to_str().expect("utf-8")]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown key `listen_port`"), "{err}");
    // A flag beats the file: the file's bad heartbeat is overridden, the file's timeout used.
    std::fs::write(
        &path,
        "heartbeat_interval = \"soon\"\nheartbeat_timeout = \"1s\"\ncatalog = \"/nonexistent/dir/c.db\"\n",
    )
    .expect("write");
    let o = run(
        bin,
        &[
            "--config",
            path.to_str().expect("utf-8"),
            "--heartbeat-interval",
            "5s",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--heartbeat-timeout must be longer than --heartbeat-interval"),
        "{err}"
    );
}
