//! `io_method` judged by the build before any run, with the real (cached) 8K/8K builds of
//! PostgreSQL 15 and 18: 15 has no such setting, and 18 without `--with-liburing` has no
//! `io_uring`; each refusal names the setting, the value and what is missing.

mod common;

use blocklab_agent::AgentHandler;
use blocklab_proto::{CheckSettingsTask, Setting};
use common::*;

/// The PostgreSQL 18 release tarball `deploy/setup.sh` fetches.
fn tarball_18() -> std::path::PathBuf {
    let p = std::env::var("BLOCKLAB_PG18_TARBALL")
        .unwrap_or_else(|_| "/var/cache/blocklab/src/postgresql-18.tar.bz2".into());
    let p = std::path::PathBuf::from(p);
    assert!(
        p.is_file(),
        "PostgreSQL 18 source tarball {} is missing: run deploy/setup.sh, which fetches it",
        p.display()
    );
    p
}

fn task(tarball: &std::path::Path, value: &str) -> CheckSettingsTask {
    CheckSettingsTask {
        build: Some(options_8k(source_tarball(tarball))),
        settings: vec![
            Setting {
                name: "io_method".into(),
                value: value.into(),
            },
            Setting {
                name: "work_mem".into(),
                value: "8MB".into(),
            },
        ],
    }
}

#[tokio::test]
async fn io_method_is_judged_by_the_builds_version_and_configure_flags() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), shared_cache(), 55620)).unwrap();
    let refusal = |r: &blocklab_proto::CheckSettingsResult| {
        r.problems
            .iter()
            .map(|p| format!("{} = {:?}: {}", p.name, p.value, p.reason))
            .collect::<Vec<_>>()
    };

    let r = handler
        .check_settings(&task(&tarball(), "worker"))
        .await
        .unwrap();
    let said = refusal(&r);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(
            "io_method = \"worker\": io_method needs PostgreSQL 18; this build is PostgreSQL 15."
        ),
        "{said:?}"
    );

    let pg18 = tarball_18();
    let r = handler
        .check_settings(&task(&pg18, "io_uring"))
        .await
        .unwrap();
    let said = refusal(&r);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(
            "io_method = \"io_uring\": io_uring needs a build configured --with-liburing"
        ),
        "{said:?}"
    );
    assert!(
        said[0].contains("pg_config --configure lacks it"),
        "{said:?}"
    );

    let r = handler
        .check_settings(&task(&pg18, "worker"))
        .await
        .unwrap();
    assert!(r.problems.is_empty(), "{:?}", refusal(&r));
}
