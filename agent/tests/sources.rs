//! Sources with the real PostgreSQL 15.18: a tarball by URL (served on 127.0.0.1, reusing
//! the cached build), checksum mismatches, something that is not PostgreSQL, and a build
//! from a local git repository (one new build, cached afterwards: the repository's commit
//! is deterministic and the key uses its tree).

mod common;

use std::path::Path;

use blocklab_agent::AgentHandler;
use blocklab_agent::build::source::git_mirror_dir;
use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{PrepareServerTask, SourceSpec};
use common::*;

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[tokio::test]
async fn url_tarball_is_downloaded_checked_and_reuses_the_build() {
    let tarball = tarball();
    let bytes = std::fs::read(&tarball).unwrap();
    let sha = sha256_of(&tarball);
    let base = serve_files(vec![
        ("/pg/postgresql-15.18.tar.bz2".into(), bytes),
        ("/pg/wrong-15.18.tar.bz2".into(), b"not a tarball".to_vec()),
    ])
    .await;
    let work = tempfile::tempdir().unwrap();
    let cache = shared_cache();
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55400)).unwrap();

    // The same bytes as the local tarball: same digest, same cached build.
    let local = handler
        .ensure_build(&options_8k(source_tarball(&tarball)), None)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", e.log_tail()));
    let by_url = SourceSpec {
        url: format!("{base}/pg/postgresql-15.18.tar.bz2"),
        sha256: sha.clone(),
        ..Default::default()
    };
    let r = handler
        .ensure_build(&options_8k(by_url.clone()), None)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", e.log_tail()));
    assert!(r.reused, "{r:?}");
    assert_eq!(r.build_key, local.build_key);
    assert_eq!(r.source_sha256, sha);
    let downloaded = cache
        .join("downloads")
        .join(&sha)
        .join("postgresql-15.18.tar.bz2");
    assert_eq!(sha256_of(&downloaded), sha);

    // A wrong digest for a URL: refused, naming both digests, nothing kept.
    let wrong_sha = "0".repeat(64);
    let err = handler
        .ensure_build(
            &options_8k(SourceSpec {
                url: format!("{base}/pg/wrong-15.18.tar.bz2"),
                sha256: wrong_sha.clone(),
                ..Default::default()
            }),
            None,
        )
        .await
        .unwrap_err()
        .to_string();
    let actual = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(b"not a tarball"))
    };
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(err.contains(&wrong_sha) && err.contains(&actual), "{err}");
    assert!(!cache.join("downloads").join(&wrong_sha).exists());

    // Not found.
    let err = handler
        .ensure_build(
            &options_8k(SourceSpec {
                url: format!("{base}/pg/missing.tar.bz2"),
                sha256: wrong_sha.clone(),
                ..Default::default()
            }),
            None,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not found (HTTP 404)") && err.contains("missing.tar.bz2"),
        "{err}"
    );
    assert!(!cache.join("downloads").join(&wrong_sha).exists());
}

#[tokio::test]
async fn local_tarball_checksum_mismatch_and_non_postgres_tree_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55405)).unwrap();
    let tarball = tarball();
    let wrong = "ab".repeat(32);
    let mut src = source_tarball(&tarball);
    src.sha256 = wrong.clone();
    let err = handler
        .ensure_build(&options_8k(src), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(
        err.contains(&wrong) && err.contains(&sha256_of(&tarball)),
        "{err}"
    );
    assert!(err.contains(&tarball.display().to_string()), "{err}");
    assert!(entries(&cache).is_empty(), "{:?}", entries(&cache));

    // A tarball of something else.
    let other = work.path().join("other");
    std::fs::create_dir_all(other.join("proj")).unwrap();
    std::fs::write(other.join("proj/README"), b"hello").unwrap();
    let t = work.path().join("postgresql-0.1.tar.gz");
    run(
        "tar",
        &[
            "-czf",
            t.to_str().unwrap(),
            "-C",
            other.to_str().unwrap(),
            "proj",
        ],
        work.path(),
        &[],
    );
    let err = handler
        .ensure_build(&options_8k(source_tarball(&t)), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not a PostgreSQL source tree"), "{err}");
    assert!(err.contains("no configure script"), "{err}");
    // Nothing half-unpacked is trusted later.
    assert!(
        entries(&cache.join("sources"))
            .iter()
            .all(|e| e.ends_with(".lock") || e.ends_with(".log"))
    );
}

/// Unpacks the release into a git repository with one deterministic commit.
fn make_repo(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let t = tarball();
    run(
        "tar",
        &[
            "--no-same-owner",
            "--strip-components=1",
            "-xf",
            t.to_str().unwrap(),
        ],
        dir,
        &[],
    );
    let env = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "blocklab test"),
        ("GIT_AUTHOR_EMAIL", "test@blocklab.invalid"),
        ("GIT_COMMITTER_NAME", "blocklab test"),
        ("GIT_COMMITTER_EMAIL", "test@blocklab.invalid"),
        ("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z"),
    ];
    run(
        "git",
        &["-c", "init.defaultBranch=main", "init", "-q"],
        dir,
        &env,
    );
    // -f: the release ships .gitignore files that would drop its generated files (gram.c…).
    run("git", &["add", "-A", "-f"], dir, &env);
    run(
        "git",
        &[
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-m",
            "PostgreSQL 15.18",
        ],
        dir,
        &env,
    );
    run("git", &["tag", "v15.18"], dir, &env);
    run("git", &["rev-parse", "HEAD"], dir, &env)
        .trim()
        .to_string()
}

#[tokio::test]
async fn builds_from_a_local_git_repository_and_records_the_commit() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("postgres.git");
    let commit = make_repo(&repo);
    let url = format!("file://{}", repo.display());
    let cache = shared_cache();
    let _tidy = RemoveMirror(git_mirror_dir(&cache, &url));
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55410)).unwrap();
    let started = std::time::Instant::now();
    let git = |git_ref: &str| {
        options_8k(SourceSpec {
            git_url: url.clone(),
            git_ref: git_ref.into(),
            ..Default::default()
        })
    };
    let r = handler
        .ensure_build(&git("main"), None)
        .await
        .unwrap_or_else(|e| panic!("git build failed: {e}\n{}", e.log_tail()));
    eprintln!(
        "git build {} reused={} in {:.0}s",
        r.build_key,
        r.reused,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(r.git_commit, commit);
    assert!(r.build_key.starts_with("pg15.18-b8-w8-"), "{r:?}");
    assert_eq!(r.pg_version, "15.18");
    assert!(!r.compiler.is_empty());
    let tarball_key = handler
        .ensure_build(&options_8k(source_tarball(&tarball())), None)
        .await
        .unwrap()
        .build_key;
    assert_ne!(r.build_key, tarball_key, "a git tree is another source");

    // Tag and full commit resolve to the same build; a missing ref is a clear error.
    for git_ref in ["v15.18", commit.as_str(), "HEAD"] {
        let again = handler.ensure_build(&git(git_ref), None).await.unwrap();
        assert!(
            again.reused && again.build_key == r.build_key,
            "{git_ref}: {again:?}"
        );
        assert_eq!(again.git_commit, commit);
    }
    let err = handler
        .ensure_build(&git("no-such-branch"), None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("\"no-such-branch\" not found"),
        "{err}"
    );

    // The build runs.
    let task = PrepareServerTask {
        build: Some(git("main")),
        ..Default::default()
    };
    let p = handler
        .prepare_server("git-run", &task, &ProgressSink::detached())
        .await
        .unwrap_or_else(|f| panic!("{f}\n{}", f.error.log_tail()));
    assert_eq!((p.block_size, p.wal_block_size), (8192, 8192));
    assert_eq!(p.build_key, r.build_key);
    handler.stop_all().await;
}

/// The test's git mirror is specific to its temporary repository: removed even on panic.
struct RemoveMirror(std::path::PathBuf);

impl Drop for RemoveMirror {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
        let _ = std::fs::remove_file(self.0.with_extension("log"));
    }
}
