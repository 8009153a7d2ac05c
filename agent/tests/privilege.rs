//! Builds run as the PostgreSQL user, in a cache only it can write: a git source whose
//! `configure` records who ran it and fails, so the build log reaches the error.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use blocklab_agent::AgentHandler;
use blocklab_proto::SourceSpec;
use common::*;

const CONFIGURE: &str = "#!/bin/sh\nPACKAGE_VERSION='15.99'\necho \"configure ran as uid $(id -u)\"\necho 'error: stopping here' >&2\nexit 1\n";

/// A git repository holding a fake source tree whose configure fails after saying who it is.
fn fake_repo(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("src/include")).unwrap();
    std::fs::write(dir.join("src/include/pg_config.h.in"), b"/* fake */\n").unwrap();
    std::fs::write(dir.join("configure"), CONFIGURE).unwrap();
    std::fs::set_permissions(
        dir.join("configure"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let env = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "blocklab test"),
        ("GIT_AUTHOR_EMAIL", "test@blocklab.invalid"),
        ("GIT_COMMITTER_NAME", "blocklab test"),
        ("GIT_COMMITTER_EMAIL", "test@blocklab.invalid"),
    ];
    run(
        "git",
        &["-c", "init.defaultBranch=main", "init", "-q"],
        dir,
        &env,
    );
    run("git", &["add", "-A"], dir, &env);
    run(
        "git",
        &["-c", "commit.gpgsign=false", "commit", "-q", "-m", "fake"],
        dir,
        &env,
    );
    format!("file://{}", dir.display())
}

#[tokio::test]
async fn a_git_source_is_configured_by_the_postgresql_user_in_a_cache_only_it_writes() {
    let work = tempfile::tempdir().unwrap();
    let url = fake_repo(&work.path().join("repo"));
    let cache = work.path().join("builds");
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55470)).unwrap();
    let pg_uid = nix::unistd::User::from_name(handler.pg_user())
        .unwrap()
        .expect("the postgresql user exists")
        .uid
        .as_raw();
    assert_ne!(pg_uid, 0);
    let err = handler
        .ensure_build(
            &options_8k(SourceSpec {
                git_url: url,
                git_ref: "main".into(),
                ..Default::default()
            }),
            None,
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("configure failed: exited with"),
        "{err}"
    );
    let tail = err.log_tail();
    assert!(
        tail.contains(&format!("configure ran as uid {pg_uid}\n")),
        "{tail}"
    );
    assert!(tail.ends_with("error: stopping here"), "{tail}");

    // The cache, its git mirrors and unpacked sources belong to the PostgreSQL user and
    // nobody else may write in them.
    for dir in [
        cache.clone(),
        cache.join("git"),
        cache.join("sources"),
        cache.join(".work"),
    ] {
        let m = std::fs::metadata(&dir).unwrap();
        assert_eq!(
            (m.uid(), m.mode() & 0o022),
            (pg_uid, 0),
            "{} mode {:o}",
            dir.display(),
            m.mode()
        );
    }
    let unpacked: Vec<_> = std::fs::read_dir(cache.join("sources"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert_eq!(unpacked.len(), 1);
    assert_eq!(unpacked[0].metadata().unwrap().uid(), pg_uid);
}

#[tokio::test]
async fn a_cache_made_by_root_is_given_to_the_postgresql_user() {
    if !nix::unistd::geteuid().is_root() {
        return; // only root makes caches owned by someone else
    }
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("builds");
    std::fs::create_dir_all(cache.join("pg15-b8-w8-x/bin")).unwrap();
    std::fs::write(cache.join("pg15-b8-w8-x/bin/postgres"), b"x").unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55475)).unwrap();
    let pg_uid = nix::unistd::User::from_name(handler.pg_user())
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    let owners = |paths: &[&str]| {
        for p in paths {
            let m = std::fs::symlink_metadata(cache.join(p)).unwrap();
            assert_eq!(m.uid(), pg_uid, "{p}");
        }
    };
    owners(&[
        "",
        "pg15-b8-w8-x",
        "pg15-b8-w8-x/bin",
        "pg15-b8-w8-x/bin/postgres",
    ]);
    assert_eq!(std::fs::metadata(&cache).unwrap().mode() & 0o777, 0o755);
    // What an agent running as root left in a cache that is already the user's is given
    // to it at the next start.
    drop(handler);
    std::fs::create_dir_all(cache.join(".work/left-by-root")).unwrap();
    assert_eq!(
        std::fs::metadata(cache.join(".work/left-by-root"))
            .unwrap()
            .uid(),
        0
    );
    AgentHandler::new(config(work.path(), cache.clone(), 55475)).unwrap();
    owners(&[".work", ".work/left-by-root"]);
}
