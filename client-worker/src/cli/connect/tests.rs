//! Resolving pgbench's connection options and environment into one conninfo.
use super::*;
use std::os::unix::fs::PermissionsExt;

fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

fn args(h: Option<&str>, p: Option<&str>, u: Option<&str>, d: Option<&str>) -> ConnArgs {
    ConnArgs {
        host: h.map(Into::into),
        port: p.map(Into::into),
        user: u.map(Into::into),
        dbname: d.map(Into::into),
    }
}

#[test]
fn flags_environment_and_conninfo() {
    let env = env_of(&[
        ("PGHOST", "envhost"),
        ("PGPORT", "6000"),
        ("PGUSER", "envuser"),
        ("PGPASSWORD", "pw x"),
        ("PGDATABASE", "envdb"),
    ]);
    assert_eq!(
        args(Some("127.0.0.1"), Some("5433"), Some("u"), Some("d"))
            .conninfo(&env)
            .unwrap(),
        "dbname=d host=127.0.0.1 password='pw x' port=5433 user=u"
    );
    assert_eq!(
        args(None, None, None, None).conninfo(&env).unwrap(),
        "dbname=envdb host=envhost password='pw x' port=6000 user=envuser"
    );
    // A conninfo string as the dbname: the flags override it, the environment fills in.
    assert_eq!(
        args(
            None,
            Some("7000"),
            None,
            Some("host=h port=1 dbname='my db'")
        )
        .conninfo(&env)
        .unwrap(),
        "dbname='my db' host=h password='pw x' port=7000 user=envuser"
    );
    assert_eq!(
        args(None, None, None, Some("postgresql://a@db.example:5444/x"))
            .conninfo(&env_of(&[]))
            .unwrap()
            .split(' ')
            .filter(|p| !p.starts_with("password"))
            .collect::<Vec<_>>(),
        ["dbname=x", "host=db.example", "port=5444", "user=a"]
    );
    // No host anywhere: the local socket; no dbname: the user's name.
    let c = args(None, None, Some("me"), None)
        .conninfo(&env_of(&[]))
        .unwrap();
    assert_eq!(c, "dbname=me host=/var/run/postgresql user=me");
    assert!(parse_pairs("host").is_err());
    assert!(parse_pairs("host='x").is_err());
}

#[test]
fn password_file() {
    let text = "# comment\nother:*:*:*:no\nlocalhost:5432:*:u:sock\n127.0.0.1:*:d\\:b:u:a\\:b\n*:*:*:*:any\n";
    assert_eq!(
        passfile::find(text, "/tmp", "5432", "x", "u").as_deref(),
        Some("sock")
    );
    assert_eq!(
        passfile::find(text, "127.0.0.1", "9", "d:b", "u").as_deref(),
        Some("a:b")
    );
    assert_eq!(
        passfile::find(text, "h", "1", "x", "v").as_deref(),
        Some("any")
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pgpass");
    std::fs::write(&f, "127.0.0.1:5432:bench:bench:from-file\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = f.display().to_string();
    let env = move |k: &str| (k == "PGPASSFILE").then(|| path.clone());
    let c = args(Some("127.0.0.1"), None, Some("bench"), Some("bench"))
        .conninfo(&env)
        .unwrap();
    assert!(c.contains("password=from-file"), "{c}");
    // Readable by others: ignored, as libpq does.
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let c = args(Some("127.0.0.1"), None, Some("bench"), Some("bench"))
        .conninfo(&env)
        .unwrap();
    assert!(!c.contains("password"), "{c}");
}
