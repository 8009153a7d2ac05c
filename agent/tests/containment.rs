//! What a spec's settings and a run's SQL cannot reach on the database host, with the real
//! (cached) 8K/8K PostgreSQL 15.18 build: settings of the groups no spec may set, or that the
//! build does not list, never reach a server; the configuration is the plan's at every start
//! (nothing appended survives a restart, and no link is followed); the server's log is kept
//! when the run's cluster is removed.

mod common;

use blocklab_agent::{AgentError, AgentHandler};
use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{PrepareServerTask, ResetCachesTask, Setting};
use common::*;

fn prepare_task(settings: &[(&str, &str)]) -> PrepareServerTask {
    PrepareServerTask {
        build: Some(options_8k(source_tarball(&tarball()))),
        allowed_client_addresses: vec!["127.0.0.1".into()],
        settings: settings
            .iter()
            .map(|(name, value)| Setting {
                name: name.to_string(),
                value: value.to_string(),
            })
            .collect(),
        ..Default::default()
    }
}

#[tokio::test]
async fn settings_a_spec_may_not_give_never_reach_a_server() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), shared_cache(), 55600)).unwrap();
    for (settings, named, says) in [
        (
            &[("logging_collector", "on"), ("log_line_prefix", "# ")][..],
            "settings",
            "logging_collector = \"on\": is in the group \"Reporting and Logging / Where to \
             Log\", which no spec may set",
        ),
        (
            &[("log_directory", ".")][..],
            // Refused by its name alone, before the build.
            "setting \"log_directory\"",
            "names a file, a directory, a library or a command",
        ),
        (
            &[("password_encryption", "md5")][..],
            "settings",
            "password_encryption = \"md5\": is in the group \"Connections and Authentication / \
             Authentication\"",
        ),
        (
            &[("allow_system_table_mods", "on")][..],
            "settings",
            "allow_system_table_mods = \"on\": is not a setting this build lists for \
             postgresql.conf (unknown to it, internal, or a developer option)",
        ),
        (
            &[("shared_buffers", "banana")][..],
            "settings",
            "shared_buffers = \"banana\": \"banana\" is not an integer",
        ),
    ] {
        let f = handler
            .prepare_server(
                "refused",
                &prepare_task(settings),
                &ProgressSink::detached(),
            )
            .await
            .unwrap_err();
        assert_eq!(f.stage, blocklab_spec::Stage::Starting, "{f}");
        match &f.error {
            AgentError::Invalid { field, reason } => {
                assert_eq!(field, named);
                assert!(reason.contains(says), "{settings:?}: {reason}");
            }
            other => panic!("{settings:?}: not refused as invalid: {other}"),
        }
        assert!(handler.running().is_empty());
        assert!(!work.path().join("agent/runs/refused").exists());
    }
}

#[tokio::test]
async fn the_configuration_is_the_plans_at_every_start_and_the_log_is_kept() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(work.path(), shared_cache(), 55605)).unwrap();
    let p = handler
        .prepare_server(
            "confrun",
            &prepare_task(&[("work_mem", "8MB")]),
            &ProgressSink::detached(),
        )
        .await
        .unwrap_or_else(|f| panic!("{f}\n{}", f.error.log_tail()));
    let data = std::path::PathBuf::from(&p.data_dir);
    let ci = p.conninfo.clone().unwrap();
    let show_work_mem = || async {
        let (client, conn) =
            tokio_postgres::connect(&ci.to_conninfo_string(), tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(conn);
        let v: String = client.query_one("SHOW work_mem", &[]).await.unwrap().get(0);
        // The run's role logs into the server log, as a run's SQL may.
        client
            .batch_execute("DO $$ BEGIN RAISE LOG 'marker %', 'of the run'; END $$")
            .await
            .unwrap();
        v
    };
    assert_eq!(show_work_mem().await, "8MB");

    // Whatever was appended to postgresql.conf (as a server log written into it would be)
    // is gone at the next start.
    let conf = data.join("postgresql.conf");
    let planned = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(
        &conf,
        format!("{planned}\nwork_mem = '64MB'\nshared_preload_libraries = 'x'\n"),
    )
    .unwrap();
    let restart = ResetCachesTask {
        restart_server: true,
        drop_os_cache: false,
    };
    handler.reset_caches("confrun", &restart).await.unwrap();
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), planned);
    assert_eq!(show_work_mem().await, "8MB");

    // A link planted in place of the file is not written through.
    let elsewhere = work.path().join("elsewhere");
    std::fs::write(&elsewhere, "untouched\n").unwrap();
    std::fs::remove_file(&conf).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &conf).unwrap();
    let e = handler.reset_caches("confrun", &restart).await.unwrap_err();
    assert!(e.to_string().contains("postgresql.conf"), "{e}");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched\n");

    // The run's server log outlives its cluster.
    handler.stop_server("confrun").await.unwrap();
    assert!(!data.exists());
    let kept = std::fs::read_to_string(work.path().join("agent/server-logs/confrun.log")).unwrap();
    assert_eq!(kept.matches("LOG:  marker of the run").count(), 2, "{kept}");
}

/// An agent told which sources it builds refuses any other before it fetches or unpacks
/// anything, and builds a listed one.
#[tokio::test]
async fn an_agent_builds_only_its_allowed_sources() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let elsewhere = work.path().join("releases");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut c = config(work.path(), cache.clone(), 55610);
    c.allowed_sources = vec![elsewhere.display().to_string()];
    let handler = AgentHandler::new(c).unwrap();
    let e = handler
        .ensure_build(&options_8k(source_tarball(&tarball())), None)
        .await
        .unwrap_err();
    match &e {
        AgentError::Invalid { field, reason } => {
            assert_eq!(field, "source");
            assert_eq!(
                reason,
                &format!(
                    "{} is not among the sources this agent builds (its --allow-source)",
                    tarball().display()
                )
            );
        }
        other => panic!("not refused as invalid: {other}"),
    }
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        entries.is_empty(),
        "nothing was fetched or unpacked: {entries:?}"
    );

    let mut c = config(work.path(), shared_cache(), 55615);
    c.allowed_sources = vec![tarball().display().to_string()];
    let handler = AgentHandler::new(c).unwrap();
    let built = handler
        .ensure_build(&options_8k(source_tarball(&tarball())), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(built.reused, "the shared cache holds it");
}
