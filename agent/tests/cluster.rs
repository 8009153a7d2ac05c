//! The real thing: build PostgreSQL (or reuse the cached 8K/8K build), start a cluster as
//! the unprivileged user, prove its block size over TCP, stop it.
//!
//! Env: BLOCKLAB_PG_TARBALL (default /var/cache/blocklab/src/postgresql-15.18.tar.bz2),
//! BLOCKLAB_BUILD_CACHE (default /var/cache/blocklab/builds), BLOCKLAB_PG_USER (default
//! `blocklab` when root).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use blocklab_agent::{AgentConfig, AgentHandler};
use blocklab_daemon::fleet::{ProgressSink, TaskHandler};
use blocklab_proto::{
    BuildOptions, BuildTask, PrepareServerTask, Setting, SourceSpec, Task, task, task_result,
};

fn tarball() -> PathBuf {
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

fn config(work: &tempfile::TempDir, build_cache: PathBuf, first_port: u16) -> AgentConfig {
    let mut c = AgentConfig::default_for("http://127.0.0.1:1");
    c.work_dir = work.path().join("agent");
    c.build_cache = build_cache;
    c.pg_user = std::env::var("BLOCKLAB_PG_USER")
        .ok()
        .or_else(blocklab_agent::default_pg_user);
    c.build_user = std::env::var("BLOCKLAB_BUILD_USER")
        .ok()
        .or_else(blocklab_agent::default_build_user);
    // Each test its own ports: tests run in parallel and check ports after stopping.
    c.port_range = (first_port, first_port + 4);
    c
}

fn shared_cache() -> PathBuf {
    std::env::var("BLOCKLAB_BUILD_CACHE")
        .unwrap_or_else(|_| "/var/cache/blocklab/builds".into())
        .into()
}

fn options(flags: &[&str]) -> BuildOptions {
    BuildOptions {
        source: Some(SourceSpec {
            tarball: tarball().display().to_string(),
            ..Default::default()
        }),
        block_size_kb: 8,
        wal_block_size_kb: 8,
        configure_flags: flags.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn entries(dir: &std::path::Path) -> Vec<String> {
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
async fn builds_starts_proves_block_size_and_stops() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(&work, shared_cache(), 55320)).unwrap();
    let progress = ProgressSink::detached();

    let started = std::time::Instant::now();
    let build = handler
        .ensure_build(&options(&["--without-icu"]), None)
        .await
        .unwrap_or_else(|e| panic!("build failed: {e}\n{}", e.log_tail()));
    eprintln!(
        "build {} reused={} build_seconds={:.0} (this call {:.1}s)",
        build.build_key,
        build.reused,
        build.build_seconds,
        started.elapsed().as_secs_f64()
    );
    assert!(
        build.build_key.starts_with("pg15") && build.build_key.contains("-b8-w8-"),
        "{build:?}"
    );
    assert_eq!(build.pg_version, "15.18");
    assert_eq!(build.source_sha256.len(), 64);
    // The parts a lab runs, and not the rest of the tree (15 still links `postmaster`).
    let install = std::path::Path::new(&build.install_dir);
    assert_eq!(
        entries(&install.join("bin")),
        [
            "initdb",
            "pg_config",
            "pg_ctl",
            "pg_dump",
            "pg_dumpall",
            "pg_restore",
            "pg_waldump",
            "postgres",
            "postmaster",
            "psql"
        ]
    );
    // PostgreSQL adds `postgresql/` to the library and data directories of a prefix whose
    // name does not say postgres.
    let pkg = |d: &str| {
        let sub = install.join(d).join("postgresql");
        if sub.is_dir() { sub } else { install.join(d) }
    };
    let lib = entries(&pkg("lib"));
    for want in [
        "plpgsql.so",
        "dict_snowball.so",
        "utf8_and_iso8859.so",
        "basic_archive.so",
    ] {
        assert!(lib.iter().any(|f| f == want), "lib lacks {want}: {lib:?}");
    }
    let libs = entries(&install.join("lib"));
    assert!(libs.iter().any(|f| f == "libpq.so"), "{libs:?}");
    assert!(!libs.iter().any(|f| f.starts_with("libecpg")), "{libs:?}");
    for share in [
        "postgres.bki",
        "snowball_create.sql",
        "timezonesets",
        "timezone",
        "extension",
    ] {
        assert!(pkg("share").join(share).exists(), "share lacks {share}");
    }

    let again = handler
        .ensure_build(&options(&["--without-icu"]), None)
        .await
        .unwrap();
    assert!(again.reused, "second ensure-build must reuse: {again:?}");
    assert_eq!(again.build_key, build.build_key);
    assert_eq!(again.build_seconds, build.build_seconds);

    let task = PrepareServerTask {
        build: Some(options(&["--without-icu"])),
        settings: vec![
            Setting {
                name: "shared_buffers".into(),
                value: "32MB".into(),
            },
            Setting {
                name: "application_name".into(),
                value: "it's blocklab".into(),
            },
            // Names resolve in the run's schema before pg_catalog, for every session whose
            // startup does not say otherwise.
            Setting {
                name: "search_path".into(),
                value: "public, pg_catalog".into(),
            },
        ],
        allowed_client_addresses: vec!["127.0.0.1".into(), "10.99.0.2".into()],
        ..Default::default()
    };
    let prepared = handler
        .prepare_server("run-1", &task, &progress)
        .await
        .unwrap_or_else(|f| panic!("prepare failed: {f}\n{}", f.error.log_tail()));
    assert!(prepared.build_reused);
    assert_eq!(prepared.build_key, build.build_key);
    assert_eq!(prepared.block_size, 8192);
    assert_eq!(prepared.wal_block_size, 8192);
    assert!(prepared.server_version.starts_with("15.18"), "{prepared:?}");
    let sb = prepared
        .effective_settings
        .iter()
        .find(|s| s.name == "shared_buffers")
        .expect("shared_buffers among effective settings");
    assert_eq!((sb.setting.as_str(), sb.unit.as_str()), ("4096", "8kB"));
    assert_eq!(sb.source, "configuration file");
    assert_eq!(handler.running(), ["run-1"]);

    let ci = prepared.conninfo.clone().unwrap();
    assert_eq!(ci.host, "127.0.0.1");
    assert_eq!(
        (ci.user.as_str(), ci.dbname.as_str()),
        ("blocklab_run", "bench")
    );
    assert_eq!(ci.password.len(), 32);
    let port = u16::try_from(ci.port).unwrap();
    assert!((55320..=55324).contains(&port));

    // The data directory belongs to the PostgreSQL user, and no password file is left.
    let data = PathBuf::from(&prepared.data_dir);
    let run_dir = data.parent().unwrap().to_path_buf();
    let pg_uid = nix::unistd::User::from_name(handler.pg_user())
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    assert_eq!(std::fs::metadata(&data).unwrap().uid(), pg_uid);
    assert!(!run_dir.join("pwfile").exists());
    let hba = std::fs::read_to_string(data.join("pg_hba.conf")).unwrap();
    assert!(
        hba.contains("host bench blocklab_run 10.99.0.2/32 scram-sha-256"),
        "{hba}"
    );
    assert!(!hba.contains("trust"), "{hba}");

    // Connect as a client would, over TCP with the returned conninfo.
    let (client, conn) = tokio_postgres::connect(&ci.to_conninfo_string(), tokio_postgres::NoTls)
        .await
        .expect("connect with returned conninfo");
    tokio::spawn(conn);
    let bs: String = client
        .query_one("SHOW block_size", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(bs, "8192");
    let db: String = client
        .query_one("SELECT current_database()", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(db, "bench");
    let app: String = client
        .query_one(
            "SELECT setting FROM pg_settings WHERE name = 'application_name'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(app, "it's blocklab");
    // The workers' role owns its schema (not its database) and can do nothing a superuser
    // could.
    for sql in [
        "CREATE TABLE t (i int)",
        "INSERT INTO t VALUES (1)",
        "VACUUM ANALYZE t",
    ] {
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("the run's role may {sql}: {e}"));
    }
    for (sql, denied) in [
        (
            "CREATE ROLE intruder SUPERUSER LOGIN",
            "must be superuser to create superusers",
        ),
        (
            "CREATE ROLE intruder LOGIN",
            "permission denied to create role",
        ),
        (
            "SELECT pg_read_file('pg_hba.conf')",
            "permission denied for function pg_read_file",
        ),
        (
            "COPY t TO '/tmp/blocklab-copy-to-test'",
            "must be superuser or have privileges of the pg_write_server_files role to COPY to a file",
        ),
        (
            "ALTER ROLE blocklab_run SUPERUSER",
            "must be superuser to alter superuser roles or change superuser attribute",
        ),
    ] {
        let e = client.batch_execute(sql).await.expect_err(sql);
        let msg = e
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_default();
        assert_eq!(msg, denied, "{sql}");
    }
    assert!(!Path::new("/tmp/blocklab-copy-to-test").exists());

    // What the role defines cannot reach the agent's superuser sessions: the role cannot set
    // its database's search_path, and functions that shadow the built-ins the agent calls
    // (found first by the spec's search_path) are not called by the agent's statistics.
    let marker = PathBuf::from(format!("/tmp/blocklab-hijack-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let e = client
        .batch_execute("ALTER DATABASE bench SET search_path = public, pg_catalog")
        .await
        .expect_err("the role cannot set its database's settings");
    assert_eq!(
        e.as_db_error().map(|d| d.message().to_string()).as_deref(),
        Some("must be owner of database bench")
    );
    for f in [
        "current_database() RETURNS name",
        "pg_backend_pid() RETURNS int",
    ] {
        client
            .batch_execute(&format!(
                "CREATE FUNCTION public.{f} LANGUAGE plpgsql AS $f$ BEGIN \
                 EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch {}'''; RETURN NULL; END $f$",
                marker.display()
            ))
            .await
            .unwrap_or_else(|e| panic!("the role may create its functions: {e}"));
    }
    drop(client);
    let outcome = handler
        .handle(
            Task {
                task_id: "t-snap".into(),
                run_id: "run-1".into(),
                attempt: 1,
                kind: Some(task::Kind::SnapshotStats(
                    blocklab_proto::SnapshotStatsTask {
                        checkpoint_first: true,
                        settle_sessions: true,
                    },
                )),
            },
            progress.clone(),
        )
        .await;
    match outcome {
        task_result::Outcome::SnapshotStats(r) => {
            assert!(r.stats_json.contains("\"db.xact_commit\""), "{r:?}");
        }
        other => panic!("unexpected snapshot outcome {other:?}"),
    }
    assert!(
        !marker.exists(),
        "a function of the run's role ran as the agent's superuser"
    );
    // The superuser cannot be reached with the workers' password.
    let mut as_superuser = ci.clone();
    as_superuser.user = "blocklab".into();
    assert!(
        tokio_postgres::connect(&as_superuser.to_conninfo_string(), tokio_postgres::NoTls)
            .await
            .is_err()
    );

    // A wrong password is refused (scram, not trust).
    let mut wrong = ci.clone();
    wrong.password = "not-the-password".into();
    assert!(
        tokio_postgres::connect(&wrong.to_conninfo_string(), tokio_postgres::NoTls)
            .await
            .is_err()
    );

    // A second cluster gets its own port; shutdown (stop_all) stops and removes it.
    let second = handler
        .prepare_server("run-2", &task, &progress)
        .await
        .unwrap_or_else(|f| panic!("prepare run-2 failed: {f}\n{}", f.error.log_tail()));
    let port2 = second.conninfo.as_ref().unwrap().port;
    assert_ne!(port2, ci.port);
    assert_eq!(handler.running(), ["run-1", "run-2"]);
    let run_dir2 = PathBuf::from(&second.data_dir)
        .parent()
        .unwrap()
        .to_path_buf();

    // Stop through the task interface.
    let outcome = handler
        .handle(
            Task {
                task_id: "t-stop".into(),
                run_id: "run-1".into(),
                attempt: 1,
                kind: Some(task::Kind::StopServer(Default::default())),
            },
            progress.clone(),
        )
        .await;
    match outcome {
        task_result::Outcome::StopServer(r) => assert!(r.removed),
        other => panic!("unexpected stop outcome {other:?}"),
    }
    assert!(
        !run_dir.exists(),
        "run dir {} still exists",
        run_dir.display()
    );
    assert_eq!(handler.running(), ["run-2"]);
    handler.stop_all().await;
    assert!(!run_dir2.exists(), "{} still exists", run_dir2.display());
    assert!(handler.running().is_empty());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "server still listening on {port}"
    );
}

#[tokio::test]
async fn bad_configure_flag_is_refused_before_anything_runs() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let handler = AgentHandler::new(config(&work, cache.clone(), 55325)).unwrap();
    let flag = "--with-blocksize=16; rm -rf /";
    let err = handler
        .ensure_build(&options(&["--without-icu", flag]), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains(flag), "{err}");
    // Nothing was unpacked, logged or locked: no process ran.
    assert!(entries(&cache).is_empty(), "{:?}", entries(&cache));

    // Through the task interface it is a `building` error naming the flag.
    let outcome = handler
        .handle(
            Task {
                task_id: "t-build".into(),
                run_id: String::new(),
                attempt: 1,
                kind: Some(task::Kind::Build(BuildTask {
                    options: Some(options(&[flag])),
                })),
            },
            ProgressSink::detached(),
        )
        .await;
    match outcome {
        task_result::Outcome::Error(e) => {
            assert_eq!(e.stage, "building");
            assert!(e.reason.contains(flag), "{}", e.reason);
        }
        other => panic!("unexpected outcome {other:?}"),
    }
    assert!(entries(&cache).is_empty());
}

#[tokio::test]
async fn missing_tarball_error_names_the_path() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let handler = AgentHandler::new(config(&work, cache.clone(), 55330)).unwrap();
    let missing = work.path().join("postgresql-99.0.tar.bz2");
    let mut opts = options(&[]);
    opts.source = Some(SourceSpec {
        tarball: missing.display().to_string(),
        ..Default::default()
    });
    let err = handler.ensure_build(&opts, None).await.unwrap_err();
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
    assert!(entries(&cache).is_empty(), "{:?}", entries(&cache));
}

#[tokio::test]
async fn bad_settings_fail_in_starting_before_any_build() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let handler = AgentHandler::new(config(&work, cache.clone(), 55335)).unwrap();
    for (setting, addr, needle) in [
        ("work_mem = 1", "127.0.0.1", "work_mem = 1"),
        ("work_mem", "10.0.0.0/8", "10.0.0.0/8"),
    ] {
        let task = PrepareServerTask {
            build: Some(options(&[])),
            settings: vec![Setting {
                name: setting.into(),
                value: "4MB".into(),
            }],
            allowed_client_addresses: vec![addr.into()],
            ..Default::default()
        };
        let f = handler
            .prepare_server("run-x", &task, &ProgressSink::detached())
            .await
            .unwrap_err();
        assert_eq!(f.stage, blocklab_spec::Stage::Starting);
        assert!(f.to_string().contains(needle), "{f}");
    }
    assert!(entries(&cache).is_empty());
    assert!(entries(&work.path().join("agent/runs")).is_empty());
}

#[tokio::test]
async fn server_that_cannot_start_reports_postgres_log_and_cleans_up() {
    let work = tempfile::tempdir().unwrap();
    let handler = AgentHandler::new(config(&work, shared_cache(), 55340)).unwrap();
    let task = PrepareServerTask {
        build: Some(options(&["--without-icu"])),
        // Accepted by the catalog and the configuration parser; the postmaster refuses
        // wal_level minimal with WAL senders at start.
        settings: vec![Setting {
            name: "wal_level".into(),
            value: "minimal".into(),
        }],
        allowed_client_addresses: vec![],
        ..Default::default()
    };
    let f = handler
        .prepare_server("run-bad", &task, &ProgressSink::detached())
        .await
        .unwrap_err();
    assert_eq!(f.stage, blocklab_spec::Stage::Starting, "{f}");
    let tail = f.error.log_tail();
    eprintln!("expected failure: {f}\n{tail}");
    assert!(
        tail.contains("WAL streaming (max_wal_senders > 0) requires wal_level"),
        "log tail: {tail}"
    );
    assert!(handler.running().is_empty());
    assert!(!work.path().join("agent/runs/run-bad").exists());
}

#[tokio::test]
async fn a_fresh_agent_stops_a_cluster_it_did_not_start() {
    let work = tempfile::tempdir().unwrap();
    let first = AgentHandler::new(config(&work, shared_cache(), 55345)).unwrap();
    let task = PrepareServerTask {
        build: Some(options(&["--without-icu"])),
        settings: vec![],
        allowed_client_addresses: vec![],
        ..Default::default()
    };
    let prepared = first
        .prepare_server("orphan", &task, &ProgressSink::detached())
        .await
        .unwrap_or_else(|f| panic!("prepare failed: {f}\n{}", f.error.log_tail()));
    let port = u16::try_from(prepared.conninfo.unwrap().port).unwrap();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    // As after an agent restart: a new handler knows nothing about the cluster.
    let second = AgentHandler::new(config(&work, shared_cache(), 55350)).unwrap();
    let r = second.stop_server("orphan").await.unwrap();
    assert!(r.removed);
    assert!(!work.path().join("agent/runs/orphan").exists());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "orphan still listening on {port}"
    );
}
