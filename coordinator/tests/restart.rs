//! The restart path of the installed services, without systemd: deploy/check-restart.sh runs
//! the coordinator, an agent and a worker (this build's binaries) each under a restart loop,
//! SIGKILLs each in turn and checks with the CLI that both hosts come back up.

use std::path::{Path, PathBuf};

fn binary_dir() -> PathBuf {
    let coordinator = PathBuf::from(env!("CARGO_BIN_EXE_blocklab-coordinator"));
    let dir = coordinator.parent().expect("target dir").to_path_buf();
    for name in ["blocklab-agent", "blocklab-worker"] {
        if !dir.join(name).is_file() {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--bin", name])
                .stdin(std::process::Stdio::null())
                .status()
                .expect("run cargo build");
            assert!(status.success(), "building {name} failed");
        }
    }
    dir
}

#[test]
fn daemons_come_back_after_sigkill() {
    let dir = binary_dir();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/check-restart.sh");
    // A port of our own, away from the default 7400 and from other tests.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr()
            .expect("addr")
            .port()
            .saturating_sub(1)
            .max(1024)
    };
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("BLOCKLAB_BIN_DIR", &dir)
        .env("BLOCKLAB_CHECK_PORT", port.to_string())
        .env_remove("BLOCKLAB_TOKEN")
        .env_remove("BLOCKLAB_TOKEN_FILE")
        .env_remove("BLOCKLAB_CA_CERT")
        .output()
        .expect("run check-restart.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for d in ["coordinator", "agent", "worker"] {
        assert!(
            stdout.contains(&format!("after restarting {d}")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("ok: every daemon came back"), "{stdout}");
}
