//! Three users on a database host: the agent (root here), the builds user and the servers'
//! user. A build runs as the builds user in a directory of its own and reaches nothing else:
//! not the build cache, not another cached build, not the agent's credential, not the work
//! directory where clusters live. Its install enters the cache as the agent's files.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use blocklab_agent::AgentHandler;
use blocklab_proto::BuildOptions;
use common::*;

/// A `configure` that writes a Makefile installing a stand-in `pg_config` (with `DESTDIR`).
const BENIGN: &str = r#"#!/bin/sh
PACKAGE_VERSION='@VERSION@'
prefix=
for a in "$@"; do case "$a" in --prefix=*) prefix="${a#--prefix=}";; esac; done
src=$(dirname "$0")
echo "configure ran as uid $(id -u)"
printf 'all:\n\ttrue\ninstall:\n\tmkdir -p $(DESTDIR)%s/bin\n\tcp %s/pg_config $(DESTDIR)%s/bin/pg_config\n\tchmod 4755 $(DESTDIR)%s/bin/pg_config\n' "$prefix" "$src" "$prefix" "$prefix" > Makefile
"#;

/// A hostile `configure`: it tries to reach what a build must not, records every attempt,
/// and fails (it is not PostgreSQL).
const HOSTILE: &str = r##"#!/bin/sh
PACKAGE_VERSION='15.66'
echo "configure ran as uid $(id -u)"
try() {
  what=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "SUCCEEDED: $what"; else echo "refused: $what"; fi
}
try "write into the build cache" sh -c 'echo x > "$CACHE/planted"'
try "write into the staging directory" sh -c 'echo x > "$CACHE/.staging/planted"'
try "overwrite another cached build" sh -c 'echo "#!/bin/sh" > "$VICTIM/bin/pg_config"'
try "add to another cached build" sh -c 'echo x > "$VICTIM/bin/planted"'
try "move another cached build" mv "$VICTIM" "$CACHE/moved"
try "replace another build's marker" sh -c 'echo {} > "$VICTIM/.blocklab-complete"'
try "read the agent's credential" cat "$TOKEN"
try "write into the work directory" sh -c 'echo x > "$WORK/planted"'
try "write into a run's directory" sh -c 'echo x > "$RUN/planted"'
try "read a run's directory" ls "$RUN"
echo 'error: not a PostgreSQL source' >&2
exit 1
"##;

/// `postgresql-<version>.tar.gz` with `configure` and a stand-in `pg_config`.
fn tarball_with(dir: &Path, version: &str, configure: &str) -> PathBuf {
    let top = dir.join(format!("tree-{version}/postgresql-{version}"));
    std::fs::create_dir_all(top.join("src/include")).unwrap();
    std::fs::write(top.join("src/include/pg_config.h.in"), b"/* fake */\n").unwrap();
    for (name, text) in [
        ("configure", configure.replace("@VERSION@", version)),
        (
            "pg_config",
            format!("#!/bin/sh\necho \"PostgreSQL {version}\"\n"),
        ),
    ] {
        std::fs::write(top.join(name), text).unwrap();
        std::fs::set_permissions(top.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let t = dir.join(format!("postgresql-{version}.tar.gz"));
    let parent = top.parent().unwrap().to_str().unwrap().to_string();
    let name = format!("postgresql-{version}");
    run(
        "tar",
        &["-czf", t.to_str().unwrap(), "-C", &parent, &name],
        dir,
        &[],
    );
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o644)).unwrap();
    t
}

fn opts(t: &Path) -> BuildOptions {
    BuildOptions {
        source: Some(source_tarball(t)),
        block_size_kb: 8,
        wal_block_size_kb: 8,
        ..Default::default()
    }
}

fn uid_of(name: &str) -> u32 {
    nix::unistd::User::from_name(name)
        .unwrap()
        .expect("user exists")
        .uid
        .as_raw()
}

fn root_or_skip(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    eprintln!("skipping {test}: needs root (the agent switches to the builds and servers users)");
    false
}

/// Every entry under `dir` (itself included) belongs to `uid` and nobody else may write it.
fn assert_owned(dir: &Path, uid: u32) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        assert_eq!(m.uid(), uid, "{} owner", p.display());
        if !m.file_type().is_symlink() {
            assert_eq!(m.mode() & 0o7022, 0, "{} mode {:o}", p.display(), m.mode());
        }
        if m.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
        }
    }
}

#[tokio::test]
async fn a_build_enters_the_cache_as_the_agents_files() {
    if !root_or_skip("a_build_enters_the_cache_as_the_agents_files") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("builds");
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55470)).unwrap();
    let builder = uid_of(handler.build_user());
    assert_ne!(builder, uid_of(handler.pg_user()));
    let t = tarball_with(work.path(), "15.67", BENIGN);
    let built = handler.ensure_build(&opts(&t), None).await.unwrap();
    assert!(!built.reused);
    let log =
        std::fs::read_to_string(cache.join(format!("{}.logs/configure.log", built.build_key)))
            .unwrap();
    assert!(
        log.contains(&format!("configure ran as uid {builder}\n")),
        "{log}"
    );

    // The cache and the entry are root's; the set-uid bit the build asked for is gone; the
    // build's own directory is removed.
    assert_owned(Path::new(&built.install_dir), 0);
    for d in [cache.clone(), cache.join(".staging"), cache.join("sources")] {
        let m = std::fs::metadata(&d).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o7777), (0, 0o755), "{}", d.display());
    }
    assert_eq!(
        std::fs::read_dir(cache.join(".staging")).unwrap().count(),
        0,
        "build directories left behind"
    );

    // An entry left by an older layout (another owner) is not trusted: rebuilt.
    let entry = Path::new(&built.install_dir);
    let pg = uid_of(handler.pg_user());
    for p in [entry.to_path_buf(), entry.join(".blocklab-complete")] {
        std::os::unix::fs::lchown(&p, Some(pg), Some(pg)).unwrap();
    }
    let again = handler.ensure_build(&opts(&t), None).await.unwrap();
    assert_eq!(again.build_key, built.build_key);
    assert!(!again.reused, "an entry of another owner is rebuilt");
    assert_owned(entry, 0);
    let reused = handler.ensure_build(&opts(&t), None).await.unwrap();
    assert!(reused.reused);
}

#[tokio::test]
async fn a_hostile_configure_reaches_nothing_but_its_own_directory() {
    if !root_or_skip("a_hostile_configure_reaches_nothing_but_its_own_directory") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("builds");
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55475)).unwrap();
    let builder = uid_of(handler.build_user());
    let pg = uid_of(handler.pg_user());

    // Another build in the cache, the agent's credential (as deploy/install.sh makes it),
    // and a run's directory as the agent makes them for initdb.
    let benign = tarball_with(work.path(), "15.65", BENIGN);
    let victim = handler.ensure_build(&opts(&benign), None).await.unwrap();
    let victim_dir = PathBuf::from(&victim.install_dir);
    let token = work.path().join("agent.token");
    std::fs::write(&token, "secret-host-token-0123456789\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    blocklab_agent::users::check_credential_file("--token-file", &token).unwrap();
    let agent_work = handler.config().work_dir.clone();
    let run_dir = handler.config().data_root().join("run-of-another-job");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::lchown(&run_dir, Some(pg), Some(pg)).unwrap();

    let hostile = HOSTILE
        .replace("\"$CACHE", &format!("\"{}", cache.display()))
        .replace("\"$VICTIM", &format!("\"{}", victim_dir.display()))
        .replace("\"$TOKEN", &format!("\"{}", token.display()))
        .replace("\"$WORK", &format!("\"{}", agent_work.display()))
        .replace("\"$RUN", &format!("\"{}", run_dir.display()));
    let err = handler
        .ensure_build(&opts(&tarball_with(work.path(), "15.66", &hostile)), None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("configure failed: exited with"),
        "{err}"
    );
    let tail = err.log_tail();
    assert!(
        tail.contains(&format!("configure ran as uid {builder}\n")),
        "{tail}"
    );
    assert_eq!(tail.matches("refused: ").count(), 10, "{tail}");
    assert!(!tail.contains("SUCCEEDED"), "{tail}");
    assert!(tail.ends_with("error: not a PostgreSQL source"), "{tail}");

    // Nothing changed: the other build is whole and still trusted.
    for p in [
        cache.join("planted"),
        cache.join(".staging/planted"),
        cache.join("moved"),
        victim_dir.join("bin/planted"),
        agent_work.join("planted"),
        run_dir.join("planted"),
    ] {
        assert!(!p.exists(), "{} was written", p.display());
    }
    assert_owned(&victim_dir, 0);
    // The same tarball (made again, its files' times could differ: another source).
    let again = handler.ensure_build(&opts(&benign), None).await.unwrap();
    assert!(again.reused);
    assert_eq!(again.build_key, victim.build_key);
    assert!(handler.list_builds().await.builds.len() == 1);
}

#[tokio::test]
async fn an_older_cache_becomes_the_agents() {
    if !root_or_skip("an_older_cache_becomes_the_agents") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("builds");
    let pg = uid_of(&blocklab_tests_pg_user());
    for d in [
        ".work/x",
        "sources/abc",
        "git/0123456789abcdef",
        "downloads/ff",
    ] {
        std::fs::create_dir_all(cache.join(d)).unwrap();
    }
    std::fs::write(cache.join("pg15-b8-w8-x.lock"), b"").unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let give = |p: &Path| std::os::unix::fs::lchown(p, Some(pg), Some(pg)).unwrap();
    for p in [
        "",
        ".work",
        ".work/x",
        "sources",
        "sources/abc",
        "git",
        "git/0123456789abcdef",
        "downloads",
        "downloads/ff",
        "pg15-b8-w8-x.lock",
    ] {
        give(&cache.join(p));
    }
    // A link the servers' user planted where the agent writes is removed, never followed.
    let target = work.path().join("outside");
    std::fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, cache.join("pg15-b8-w8-x.last-used")).unwrap();
    give(&cache.join("pg15-b8-w8-x.last-used"));
    let handler = AgentHandler::new(config(work.path(), cache.clone(), 55480)).unwrap();
    let builder = uid_of(handler.build_user());
    let m = std::fs::metadata(&cache).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o777), (0, 0o755));
    for gone in [
        ".work",
        "sources",
        "downloads",
        "pg15-b8-w8-x.lock",
        "pg15-b8-w8-x.last-used",
    ] {
        assert!(
            std::fs::symlink_metadata(cache.join(gone)).is_err(),
            "{gone} is still there"
        );
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    let owner = |p: &str| std::fs::symlink_metadata(cache.join(p)).unwrap().uid();
    assert_eq!(owner("git"), 0);
    assert_eq!(owner("git/0123456789abcdef"), builder);
}

fn blocklab_tests_pg_user() -> String {
    std::env::var("BLOCKLAB_PG_USER").unwrap_or_else(|_| "blocklab".into())
}

#[test]
fn a_credential_others_can_read_is_refused_as_root() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "secret-host-token-0123456789\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o640)).unwrap();
    let res = blocklab_agent::users::check_credential_file("--token-file", &token);
    if nix::unistd::geteuid().is_root() {
        let err = res.unwrap_err().to_string();
        assert!(err.contains("--token-file"), "{err}");
        assert!(err.contains("mode 600"), "{err}");
    } else {
        res.expect("only a warning when not root");
    }
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    blocklab_agent::users::check_credential_file("--token-file", &token).unwrap();
}
