//! `blocklab ... | head`: a reader of stdout that has gone ends the program quietly (status
//! 141, as a pipeline member killed by SIGPIPE), never with a panic.

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_blocklab");

#[test]
fn a_closed_pipe_ends_the_output_without_a_panic() {
    let spec = format!("{}/../deploy/specs/tpcc.toml", env!("CARGO_MANIFEST_DIR"));
    for args in [
        vec!["completions", "bash"],
        vec!["submit", "--dry-run", spec.as_str()],
    ] {
        // The read end is closed before the program writes: every write fails with EPIPE.
        let mut child = Command::new(BIN)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run blocklab");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(141), "{args:?}");
    }
}

#[test]
fn piped_into_head_only_the_first_line_comes_out() {
    for args in ["--help", "completions bash"] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("'{BIN}' {args} | head -n 1"))
            .output()
            .expect("run sh");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args}: {stderr}");
        assert!(out.status.success(), "{args}: {}", out.status);
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    }
}
