//! `blocklab-agent doctor` runs on this machine, exits 0 (with or without warnings) and
//! prints every check with `ok` or `warn` and a value.

use std::process::Command;

use blocklab_agent::doctor::CHECK_NAMES;

#[test]
fn doctor_prints_every_check_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_blocklab-agent"))
        .arg("doctor")
        .arg("--work-dir")
        .arg(dir.path())
        .output()
        .expect("run blocklab-agent doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    // A header, one line per check in order, and the count.
    assert_eq!(lines.len(), CHECK_NAMES.len() + 2, "{text}");
    for (line, name) in lines[1..=CHECK_NAMES.len()].iter().zip(CHECK_NAMES) {
        let (level, rest) = line.split_once(' ').expect("level");
        assert!(level == "ok" || level == "warn", "{line}");
        let rest = rest.trim_start();
        assert!(rest.starts_with(name), "{line} should name {name}");
        assert!(!rest[name.len()..].trim().is_empty(), "{line} has no value");
    }
    let warned = lines.iter().filter(|l| l.starts_with("warn ")).count();
    assert_eq!(
        lines.last().copied(),
        Some(format!("{warned} warning(s) of {} checks", CHECK_NAMES.len()).as_str())
    );
}

#[test]
fn a_bad_flag_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_blocklab-agent"))
        .args(["doctor", "--no-such-flag"])
        .output()
        .expect("run blocklab-agent doctor");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}
