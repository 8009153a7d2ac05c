use super::*;

#[test]
fn half_finished_build_is_removed_complete_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    let half = dir.path().join("pg15-b8-w8-aaaa");
    std::fs::create_dir_all(half.join("bin")).unwrap();
    std::fs::write(half.join("bin/postgres"), b"x").unwrap();
    assert!(remove_unfinished(&half).unwrap());
    assert!(!half.exists());

    let done = dir.path().join("pg15-b8-w8-bbbb");
    std::fs::create_dir_all(done.join("bin")).unwrap();
    let m = Marker {
        key: "pg15-b8-w8-bbbb".into(),
        source_sha256: "ff".into(),
        pg_version: "15.18".into(),
        block_size_kb: 8,
        wal_block_size_kb: 8,
        configure_flags: vec![],
        compiler: "gcc".into(),
        build_seconds: 1.5,
        completed_at_unix: 1,
        segsize_gb: 0,
        wal_segsize_mb: 0,
        cflags: vec![],
        source: String::new(),
        git_commit: String::new(),
        object_family: String::new(),
        objects_reused: 0,
        objects_compiled: 0,
    };
    write_marker(&done, &m).unwrap();
    assert!(!remove_unfinished(&done).unwrap());
    assert_eq!(read_marker(&done), Some(m));

    // A corrupt marker counts as unfinished.
    std::fs::write(done.join(MARKER), b"{").unwrap();
    assert!(remove_unfinished(&done).unwrap());
    assert!(!done.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_lock_is_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.lock");
    let first = crate::fsutil::lock_file(path.clone()).await.unwrap();
    let second = tokio::spawn(crate::fsutil::lock_file(path.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "second lock must wait for the first");
    drop(first);
    let got = tokio::time::timeout(Duration::from_secs(5), second).await;
    assert!(matches!(got, Ok(Ok(Ok(_)))), "second lock not acquired");
}

#[test]
fn configure_names_the_missing_build_dependency() {
    let log = "checking for bison... no\nchecking for flex... no\n\
               configure: error: bison not found\n";
    assert_eq!(configure_error(log).as_deref(), Some("bison not found"));
    let e = AgentError::Process {
        what: "configure".into(),
        reason: "exited with exit status: 1".into(),
        log_tail: log.into(),
    }
    .with_cause(configure_error(log));
    assert_eq!(
        e.to_string(),
        "configure failed: exited with exit status: 1: bison not found"
    );
    assert_eq!(configure_error("checking for gcc... gcc\n"), None);
}
