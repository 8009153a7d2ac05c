//! The build pipeline with a fake "PostgreSQL" (a configure script that records its argv and
//! a two-line Makefile): fast, so options, concurrency, failures, listing and the size cap
//! can be tested without real 2-minute builds.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use blocklab_agent::AgentHandler;
use blocklab_proto::BuildOptions;
use common::*;

const CONFIGURE: &str = r#"#!/bin/sh
PACKAGE_VERSION='@VERSION@'
set -e
prefix=
for a in "$@"; do case "$a" in --prefix=*) prefix="${a#--prefix=}";; esac; done
printf '%s\n' "$@" > configure.args
src=$(dirname "$0")
fail=true
case " $* " in *" --enable-fail-make "*) fail=false;; esac
printf 'all:\n\tsleep 1\n\t%s || { echo "error: boom in make" >&2; exit 1; }\n\techo built > built.txt\ninstall:\n\tmkdir -p $(DESTDIR)%s/bin\n\tcp configure.args $(DESTDIR)%s/configure.args\n\tcp %s/pg_config $(DESTDIR)%s/bin/pg_config\n' "$fail" "$prefix" "$prefix" "$src" "$prefix" > Makefile
"#;

/// `postgresql-<version>.tar.gz` holding a fake tree.
fn fake_tarball(dir: &Path, version: &str) -> PathBuf {
    let top = dir.join(format!("src-{version}/postgresql-{version}"));
    std::fs::create_dir_all(top.join("src/include")).unwrap();
    std::fs::write(top.join("src/include/pg_config.h.in"), b"/* fake */\n").unwrap();
    let exe = |p: PathBuf, text: String| {
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    exe(
        top.join("configure"),
        CONFIGURE.replace("@VERSION@", version),
    );
    exe(
        top.join("pg_config"),
        format!("#!/bin/sh\necho \"PostgreSQL {version}\"\n"),
    );
    let t = dir.join(format!("postgresql-{version}.tar.gz"));
    let parent = top.parent().unwrap().to_str().unwrap().to_string();
    run(
        "tar",
        &[
            "-czf",
            t.to_str().unwrap(),
            "-C",
            &parent,
            &format!("postgresql-{version}"),
        ],
        dir,
        &[],
    );
    t
}

fn opts(tarball: &Path, f: impl FnOnce(&mut BuildOptions)) -> BuildOptions {
    let mut o = BuildOptions {
        source: Some(source_tarball(tarball)),
        block_size_kb: 8,
        wal_block_size_kb: 8,
        ..Default::default()
    };
    f(&mut o);
    o
}

fn configure_args(install_dir: &str) -> Vec<String> {
    std::fs::read_to_string(Path::new(install_dir).join("configure.args"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn options_reach_configure_as_argv_and_wal_segsize_goes_where_the_version_wants() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), work.path().join("cache"), 55420)).unwrap();
    let new = fake_tarball(work.path(), "15.99");
    let r = handler
        .ensure_build(
            &opts(&new, |o| {
                o.segsize_gb = 2;
                o.wal_segsize_mb = 64;
                o.cflags = vec!["-O1".into(), "-g".into()];
                o.configure_flags = vec!["--without-icu".into()];
            }),
            None,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", e.log_tail()));
    assert!(r.build_key.starts_with("pg15.99-b8-w8-s2-"), "{r:?}");
    assert_eq!(r.pg_version, "15.99");
    let args = configure_args(&r.install_dir);
    // configure's cache lives in the source's object store, shared by its builds.
    let cache_file = args[1].strip_prefix("--cache-file=").expect("a cache file");
    assert!(
        cache_file.contains("/.objects/src-") && cache_file.ends_with(".cache"),
        "{args:?}"
    );
    assert_eq!(
        args[2..],
        [
            "--with-blocksize=8",
            "--with-wal-blocksize=8",
            "--with-segsize=2",
            "--without-icu",
            "CFLAGS=-O1 -g"
        ],
        "{args:?}"
    );
    // From 11 on the WAL segment size is initdb's: same binaries, same key.
    let same = handler
        .ensure_build(
            &opts(&new, |o| {
                o.segsize_gb = 2;
                o.cflags = vec!["-O1".into(), "-g".into()];
                o.configure_flags = vec!["--without-icu".into()];
            }),
            None,
        )
        .await
        .unwrap();
    assert!(same.reused && same.build_key == r.build_key, "{same:?}");

    // Before 11 it is compiled in.
    let old = fake_tarball(work.path(), "10.23");
    let r10 = handler
        .ensure_build(&opts(&old, |o| o.wal_segsize_mb = 32), None)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", e.log_tail()));
    assert!(configure_args(&r10.install_dir).contains(&"--with-wal-segsize=32".to_string()));
    let listed = handler.list_builds().await.builds;
    let b10 = listed
        .iter()
        .find(|b| b.build_key == r10.build_key)
        .unwrap();
    assert_eq!((b10.wal_segsize_mb, b10.pg_version.as_str()), (32, "10.23"));
    let b15 = listed.iter().find(|b| b.build_key == r.build_key).unwrap();
    assert_eq!((b15.segsize_gb, b15.wal_segsize_mb), (2, 0));
    assert!(b15.size_bytes > 0 && !b15.built_at.is_empty() && !b15.last_used_at.is_empty());
    assert_eq!(listed.len(), 2, "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_for_one_key_build_once() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), work.path().join("cache"), 55425)).unwrap();
    let t = fake_tarball(work.path(), "15.98");
    let o = opts(&t, |_| {});
    let (a, b) = tokio::join!(
        handler.ensure_build(&o, None),
        handler.ensure_build(&o, None)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.build_key, b.build_key);
    let built = [a.reused, b.reused].iter().filter(|r| !**r).count();
    assert_eq!(built, 1, "exactly one of them builds: {a:?} {b:?}");
    assert_eq!(a.build_seconds, b.build_seconds);
}

#[tokio::test]
async fn a_failing_stage_reports_its_log_tail_and_leaves_no_build() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55430)).unwrap();
    let t = fake_tarball(work.path(), "15.97");
    let err = handler
        .ensure_build(
            &opts(&t, |o| {
                o.configure_flags = vec!["--enable-fail-make".into()]
            }),
            None,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("make failed"), "{err}");
    assert!(
        err.log_tail().contains("error: boom in make"),
        "{}",
        err.log_tail()
    );
    assert!(handler.list_builds().await.builds.is_empty());
    // The logs stay for inspection.
    let logs: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".logs"))
        .collect();
    assert_eq!(logs.len(), 1);
    assert!(logs[0].path().join("build.log").is_file());
}

#[tokio::test]
async fn the_size_cap_evicts_the_least_recently_used_build_after_a_new_one() {
    let work = tempfile::tempdir().unwrap();
    let mut c = config(work.path(), work.path().join("cache"), 55435);
    c.build_cache_max_bytes = Some(1);
    let handler = AgentHandler::new(c).unwrap();
    let t = fake_tarball(work.path(), "15.96");
    let first = handler.ensure_build(&opts(&t, |_| {}), None).await.unwrap();
    // Over the cap, but the build just made is in use while the cap is applied.
    let keys = |l: blocklab_proto::ListBuildsResult| {
        l.builds
            .into_iter()
            .map(|b| b.build_key)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(handler.list_builds().await),
        [first.build_key.as_str()]
    );
    let second = handler
        .ensure_build(&opts(&t, |o| o.block_size_kb = 16), None)
        .await
        .unwrap();
    assert_eq!(
        keys(handler.list_builds().await),
        [second.build_key.as_str()]
    );
    assert!(!Path::new(&first.install_dir).exists());
    // The same through the task interface.
    use blocklab_daemon::fleet::{ProgressSink, TaskHandler};
    let task = blocklab_proto::Task {
        kind: Some(blocklab_proto::task::Kind::ListBuilds(Default::default())),
        ..Default::default()
    };
    match handler.handle(task, ProgressSink::detached()).await {
        blocklab_proto::task_result::Outcome::ListBuilds(l) => {
            assert_eq!(keys(l), [second.build_key.as_str()])
        }
        other => panic!("{other:?}"),
    }
}
