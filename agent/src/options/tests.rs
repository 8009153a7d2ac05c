use super::*;

fn opts(b: u32, w: u32, flags: &[&str]) -> BuildRequest {
    BuildRequest {
        source: Some(SourceRequest {
            tarball: "/src/postgresql-15.18.tar.bz2".into(),
            ..Default::default()
        }),
        block_size_kb: b,
        wal_block_size_kb: w,
        configure_flags: flags.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn cache_key_is_stable_and_changes_with_each_input() {
    let cache_key = |s: &BuildSpec, src: &str, cc: &str| cache_key(s, src, cc, "15.18", true);
    let base = BuildSpec::from_request(&opts(8, 8, &["--without-icu"])).unwrap();
    let k = cache_key(&base, "aa", "gcc 12");
    assert_eq!(k, cache_key(&base.clone(), "aa", "gcc 12"));
    // A real cached key: PostgreSQL 15.18 at 8K/8K, made by the current recipe. A change of
    // the key's inputs (or of their spelling) must be deliberate: it rebuilds every cache.
    assert_eq!(
        super::cache_key(
            &base,
            "11df0df97fe3ea4ba9a791faaf39cee1d2fe571e78885b5b55d8517d27c323b4",
            "gcc (Debian 12.2.0-14+deb12u1) 12.2.0",
            "15.18",
            false
        ),
        "pg15.18-b8-w8-156a9572aa052f2d"
    );
    let with = |f: &dyn Fn(&mut BuildRequest)| {
        let mut o = opts(8, 8, &["--without-icu"]);
        f(&mut o);
        BuildSpec::from_request(&o).unwrap()
    };
    let seg = with(&|o| o.segsize_gb = 2);
    assert!(cache_key(&seg, "aa", "gcc 12").starts_with("pg15.18-b8-w8-s2-"));
    let walseg = with(&|o| o.wal_segsize_mb = 64);
    // The WAL segment size is an initdb option from 11 on: same binaries, same key.
    assert_eq!(super::cache_key(&walseg, "aa", "gcc 12", "15.18", false), k);
    assert!(k.starts_with("pg15.18-b8-w8-"), "{k}");
    assert_eq!(k.len(), "pg15.18-b8-w8-".len() + 16);
    let mut seen = std::collections::HashSet::from([k.clone()]);
    let variants = [
        cache_key(&base, "ab", "gcc 12"),
        cache_key(&base, "aa", "gcc 13"),
        cache_key(
            &BuildSpec::from_request(&opts(16, 8, &["--without-icu"])).unwrap(),
            "aa",
            "gcc 12",
        ),
        cache_key(
            &BuildSpec::from_request(&opts(8, 16, &["--without-icu"])).unwrap(),
            "aa",
            "gcc 12",
        ),
        cache_key(
            &BuildSpec::from_request(&opts(8, 8, &[])).unwrap(),
            "aa",
            "gcc 12",
        ),
        cache_key(
            &BuildSpec::from_request(&opts(8, 8, &["--without-icu", "--enable-debug"])).unwrap(),
            "aa",
            "gcc 12",
        ),
        cache_key(
            &BuildSpec::from_request(&opts(8, 8, &["--enable-debug", "--without-icu"])).unwrap(),
            "aa",
            "gcc 12",
        ),
        cache_key(&seg, "aa", "gcc 12"),
        cache_key(&walseg, "aa", "gcc 12"),
        cache_key(&with(&|o| o.cflags = vec!["-O1".into()]), "aa", "gcc 12"),
        cache_key(
            &with(&|o| o.cflags = vec!["-O1".into(), "-g".into()]),
            "aa",
            "gcc 12",
        ),
    ];
    for v in variants {
        assert!(seen.insert(v.clone()), "duplicate key {v}");
    }
}

#[test]
fn good_configure_flags_pass() {
    for f in [
        "--without-icu",
        "--enable-debug",
        "--with-segsize=2",
        "--with-extra-version=-lab",
        "--with-liburing",
        "--with-includes=/usr/include/x:/opt/y",
        "--enable-cassert",
    ] {
        validate_configure_flag(f).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
}

#[test]
fn bad_configure_flags_are_refused_naming_the_flag() {
    for f in [
        "--with-blocksize=16; rm -rf /",
        "--with-blocksize=16",
        "--with-wal-blocksize=8",
        "--prefix=/tmp/x",
        "--bindir=/usr/bin",
        "-O2",
        "without-icu",
        "--Foo",
        "--with-x=$(id)",
        "--with-x=a b",
        "--",
        "--with-x=`id`",
        "--foo\n",
    ] {
        let err = validate_configure_flag(f).expect_err(f).to_string();
        assert!(err.contains(&format!("{f:?}")), "{f}: {err}");
    }
}

#[test]
fn block_sizes_are_validated() {
    assert!(BuildSpec::from_request(&opts(3, 8, &[])).is_err());
    assert!(BuildSpec::from_request(&opts(64, 8, &[])).is_err());
    assert!(BuildSpec::from_request(&opts(8, 128, &[])).is_err());
    assert!(BuildSpec::from_request(&opts(8, 0, &[])).is_err());
    assert!(BuildSpec::from_request(&opts(32, 64, &[])).is_ok());
    assert!(BuildSpec::from_request(&opts(1, 1, &[])).is_ok());
    let err = BuildSpec::from_request(&opts(8, 8, &["--prefix=/x"])).unwrap_err();
    assert!(err.to_string().contains("--prefix=/x"), "{err}");
}

#[test]
fn sources_are_validated() {
    let src = |s: SourceRequest| {
        let mut o = opts(8, 8, &[]);
        o.source = Some(s);
        BuildSpec::from_request(&o).map(|b| b.source)
    };
    let sha = "AB".repeat(32);
    let url = src(SourceRequest {
        url: "https://ftp.postgresql.org/pub/source/v15.18/postgresql-15.18.tar.bz2".into(),
        sha256: sha.clone(),
        ..Default::default()
    })
    .unwrap();
    assert!(matches!(url, Source::Url { ref sha256, .. } if *sha256 == "ab".repeat(32)));
    let no_sha = src(SourceRequest {
        url: "https://x/postgresql-15.tar.bz2".into(),
        ..Default::default()
    });
    assert!(no_sha.unwrap_err().to_string().contains("sha256"));
    let git = src(SourceRequest {
        git_url: "file:///srv/pg".into(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        git,
        Source::Git {
            url: "file:///srv/pg".into(),
            git_ref: "HEAD".into()
        }
    );
    for (bad, needle) in [
        (SourceRequest::default(), "exactly one"),
        (
            SourceRequest {
                tarball: "/a/postgresql.tar.bz2".into(),
                url: "https://x/y.tar.gz".into(),
                ..Default::default()
            },
            "exactly one",
        ),
        (
            SourceRequest {
                tarball: "rel/postgresql.tar.bz2".into(),
                ..Default::default()
            },
            "absolute",
        ),
        (
            SourceRequest {
                url: "ftp://x/y.tar.gz".into(),
                sha256: sha.clone(),
                ..Default::default()
            },
            "source.url",
        ),
        (
            SourceRequest {
                git_url: "-uhttps://x".into(),
                ..Default::default()
            },
            "source.git_url",
        ),
        (
            SourceRequest {
                git_url: "https://x/pg.git".into(),
                git_ref: "--upload-pack=x".into(),
                ..Default::default()
            },
            "source.git_ref",
        ),
        (
            SourceRequest {
                tarball: "/a/postgresql.tar.bz2".into(),
                sha256: "xyz".into(),
                ..Default::default()
            },
            "source.sha256",
        ),
    ] {
        let err = src(bad).unwrap_err().to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn segsize_wal_segsize_and_cflags_are_validated() {
    let mut o = opts(8, 8, &[]);
    o.segsize_gb = 3;
    assert!(BuildSpec::from_request(&o).is_err());
    o.segsize_gb = 2;
    assert!(BuildSpec::from_request(&o).is_ok());
    o.configure_flags = vec!["--with-segsize=4".into()];
    assert!(BuildSpec::from_request(&o).is_err());
    let mut o = opts(8, 8, &[]);
    o.wal_segsize_mb = 48;
    assert!(BuildSpec::from_request(&o).is_err());
    o.wal_segsize_mb = 64;
    assert!(BuildSpec::from_request(&o).is_ok());
    for ok in [
        vec!["-O2", "-g"],
        vec!["-march=native", "-DFOO=1", "-fno-omit-frame-pointer"],
    ] {
        validate_cflags(&ok.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    }
    for bad in ["O2", "-O2;id", "-O2 -g", "-I$(pwd)", "-", "-x`id`"] {
        let err = validate_cflags(&[bad.to_string()]).unwrap_err().to_string();
        assert!(err.contains(&format!("{bad:?}")), "{err}");
    }
    assert_eq!(major_version("15.18"), 15);
    assert_eq!(major_version("9.6.24"), 9);
    assert_eq!(major_version("17devel"), 17);
}

#[test]
fn missing_tarball_names_the_path() {
    let err = check_tarball(Path::new("/nope/postgresql-1.tar.bz2")).unwrap_err();
    assert!(
        err.to_string().contains("/nope/postgresql-1.tar.bz2"),
        "{err}"
    );
}
