//! Helpers shared by the agent's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use blocklab_agent::AgentConfig;
use blocklab_proto::{BuildOptions, SourceSpec};

/// The PostgreSQL 15.18 release tarball (BLOCKLAB_PG_TARBALL overrides).
pub fn tarball() -> PathBuf {
    let p = std::env::var("BLOCKLAB_PG_TARBALL")
        .unwrap_or_else(|_| "/var/cache/blocklab/src/postgresql-15.18.tar.bz2".into());
    let p = PathBuf::from(p);
    assert!(
        p.is_file(),
        "PostgreSQL source tarball {} is missing: set BLOCKLAB_PG_TARBALL or fetch it \
         (apt-get source --download-only postgresql-15)",
        p.display()
    );
    p
}

/// The shared build cache (BLOCKLAB_BUILD_CACHE overrides), where real builds are reused.
pub fn shared_cache() -> PathBuf {
    std::env::var("BLOCKLAB_BUILD_CACHE")
        .unwrap_or_else(|_| "/var/cache/blocklab/builds".into())
        .into()
}

/// A config with its own work dir and five ports from `first_port`.
pub fn config(work: &Path, build_cache: PathBuf, first_port: u16) -> AgentConfig {
    let mut c = AgentConfig::default_for("http://127.0.0.1:1");
    c.work_dir = work.join("agent");
    c.build_cache = build_cache;
    c.pg_user = std::env::var("BLOCKLAB_PG_USER")
        .ok()
        .or_else(blocklab_agent::default_pg_user);
    c.build_user = std::env::var("BLOCKLAB_BUILD_USER")
        .ok()
        .or_else(blocklab_agent::default_build_user);
    c.port_range = (first_port, first_port + 4);
    c
}

pub fn source_tarball(path: &Path) -> SourceSpec {
    SourceSpec {
        tarball: path.display().to_string(),
        ..Default::default()
    }
}

/// 8K/8K `--without-icu` from `source`: the build every real-PostgreSQL test shares.
pub fn options_8k(source: SourceSpec) -> BuildOptions {
    BuildOptions {
        source: Some(source),
        block_size_kb: 8,
        wal_block_size_kb: 8,
        configure_flags: vec!["--without-icu".into()],
        ..Default::default()
    }
}

pub fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// Runs a program for test setup; panics with its output on failure.
pub fn run(program: &str, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A minimal HTTP/1.1 server on 127.0.0.1 serving `files` (path → bytes), 404 otherwise.
/// Returns the base URL; the server lives as long as the runtime.
pub async fn serve_files(files: Vec<(String, Vec<u8>)>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let files = std::sync::Arc::new(files);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let files = files.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split(' ').nth(1).unwrap_or("/").to_string();
                let body = files.iter().find(|(p, _)| *p == path).map(|(_, b)| b);
                let (status, body): (&str, &[u8]) = match body {
                    Some(b) => ("200 OK", b),
                    None => ("404 Not Found", b"not found"),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}
