//! Running `blocklab-worker bench` and the real pgbench with the same options against a
//! test server, and reading their summaries and transaction logs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{PASSWORD, SUPERUSER, TestServer};

/// Which tool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Ours,
    Pgbench,
}

impl Tool {
    pub fn program(self) -> PathBuf {
        match self {
            // BLOCKLAB_WORKER_BIN: a copy of the binary, when others share the target dir.
            Tool::Ours => std::env::var_os("BLOCKLAB_WORKER_BIN").map_or_else(
                || env!("CARGO_BIN_EXE_blocklab-worker").into(),
                PathBuf::from,
            ),
            Tool::Pgbench => std::env::var_os("BLOCKLAB_TEST_PGBENCH")
                .map_or_else(|| "/usr/bin/pgbench".into(), PathBuf::from),
        }
    }

    /// Runs the tool's benchmark with pgbench's connection options (`-h -p -U`, the
    /// password from PGPASSWORD, the dbname last) in `dir`.
    pub fn run(self, server: &TestServer, db: &str, args: &[&str], dir: &Path) -> Output {
        let mut c = Command::new(self.program());
        if self == Tool::Ours {
            c.arg("bench");
        }
        c.args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            SUPERUSER,
        ])
        .args(args)
        .arg(db)
        .current_dir(dir)
        .env("PGPASSWORD", PASSWORD)
        .env("RUST_LOG", "warn")
        .env_remove("PGHOST")
        .env_remove("PGDATABASE");
        c.output().unwrap()
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The number after `prefix` on the summary line starting with it.
pub fn summary_number(o: &Output, prefix: &str) -> Option<f64> {
    String::from_utf8_lossy(&o.stdout).lines().find_map(|l| {
        let rest = l.strip_prefix(prefix)?;
        let num: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        num.parse().ok()
    })
}

pub fn has_line(o: &Output, prefix: &str) -> bool {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .any(|l| l.starts_with(prefix))
}

/// The transaction log files in `dir` (name, lines split into fields), sorted by name.
pub fn logs(dir: &Path, prefix: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.starts_with(&format!("{prefix}.")).then_some(name)
        })
        .map(|name| {
            let body = std::fs::read_to_string(dir.join(&name)).unwrap();
            let lines = body
                .lines()
                .map(|l| l.split(' ').map(str::to_string).collect())
                .collect();
            (name, lines)
        })
        .collect();
    out.sort();
    out
}

pub fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "no values");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
