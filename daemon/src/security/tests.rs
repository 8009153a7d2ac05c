use super::*;
use tonic::Request;
use tonic::service::Interceptor as _;

const GOOD: &str = "0123456789abcdef-good";

fn secret(v: &str) -> Secret {
    Secret::new(v, "test").expect("valid token")
}

#[test]
fn secret_debug_is_redacted_and_shape_is_checked() {
    let s = secret(GOOD);
    assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
    assert!(!format!("{:?}", Bearer::new(Some(&s))).contains(GOOD));
    for bad in [
        "short",
        "has a space in it here",
        "tab\there-0123456789",
        "é-0123456789abcdef",
    ] {
        let e = Secret::new(bad, "BLOCKLAB_TOKEN")
            .expect_err(bad)
            .to_string();
        assert!(e.starts_with("BLOCKLAB_TOKEN: "), "{e}");
        assert!(!e.contains(bad), "error echoes the token: {e}");
    }
    assert!(Secret::new(&"x".repeat(4097), "t").is_err());
}

fn api(scope: Scope, v: &str) -> ApiToken {
    ApiToken::new(scope, secret(v))
}

#[test]
fn token_check_accepts_only_listed_tokens_with_their_scope() {
    let check = TokenCheck::api(&[
        api(Scope::Submit, GOOD),
        api(Scope::Read, "another-token-0123456789"),
        api(Scope::Admin, "admin-token-0123456789"),
    ]);
    assert_eq!(
        check.check(Some(format!("Bearer {GOOD}").as_bytes())),
        Ok(Scope::Submit)
    );
    assert_eq!(
        check.check(Some(b"bearer another-token-0123456789")),
        Ok(Scope::Read)
    );
    assert_eq!(
        check.check(Some(b"Bearer admin-token-0123456789")),
        Ok(Scope::Admin)
    );
    let missing = check.check(None).expect_err("missing");
    assert_eq!(missing, TokenRefused::Missing(TokenKind::Api));
    assert!(
        missing.to_string().contains("missing API token"),
        "{missing}"
    );
    let wrong = check
        .check(Some(b"Bearer 0123456789abcdef-evil"))
        .expect_err("wrong");
    assert_eq!(wrong, TokenRefused::Invalid(TokenKind::Api));
    assert!(wrong.to_string().contains("invalid API token"));
    assert!(!wrong.to_string().contains("evil"));
    let malformed = check.check(Some(GOOD.as_bytes())).expect_err("no scheme");
    assert!(malformed.to_string().contains("malformed"));
    // A prefix or extension of a good token is not good.
    assert!(
        check
            .check(Some(format!("Bearer {GOOD}x").as_bytes()))
            .is_err()
    );
    assert!(check.check(Some(b"Bearer 0123456789abcdef-goo")).is_err());
    assert_eq!(TokenCheck::fleet(&[]).check(None), Ok(Scope::Admin));
}

#[test]
fn scopes_nest() {
    use Scope::*;
    for (have, needed, allowed) in [
        (Read, Read, true),
        (Read, Submit, false),
        (Read, Admin, false),
        (Submit, Read, true),
        (Submit, Submit, true),
        (Submit, Admin, false),
        (Admin, Read, true),
        (Admin, Submit, true),
        (Admin, Admin, true),
    ] {
        assert_eq!(have.allows(needed), allowed, "{have} for {needed}");
    }
    assert_eq!("submit".parse::<Scope>(), Ok(Submit));
    assert!("Read".parse::<Scope>().is_err());
}

#[test]
fn api_token_file_lines() {
    let path = std::path::Path::new("/etc/blocklab/api-tokens");
    let text = format!(
        "# lab tokens\nread   reader-token-0123456789\n\n{GOOD}\nadmin admin-token-0123456789\n"
    );
    let tokens = parse_api_tokens("--api-token-file", path, &text).expect("parse");
    let scopes: Vec<Scope> = tokens.iter().map(|t| t.scope).collect();
    assert_eq!(scopes, [Scope::Read, Scope::Submit, Scope::Admin]);
    assert_eq!(tokens[0].secret.expose(), "reader-token-0123456789");
    assert_eq!(tokens[1].secret.expose(), GOOD);
    for (text, expected) in [
        (
            "read reader-token-0123456789\nwrite writer-token-0123456789\n".to_string(),
            "--api-token-file /etc/blocklab/api-tokens line 2: unknown scope \"write\" (allowed: read, submit, admin)",
        ),
        (
            "# c\nread a b\n".to_string(),
            "--api-token-file /etc/blocklab/api-tokens line 2: expected `SCOPE TOKEN` or `TOKEN` (scopes: read, submit, admin)",
        ),
        (
            "admin\n".to_string(),
            "--api-token-file /etc/blocklab/api-tokens line 1: scope admin without a token",
        ),
        (
            format!("read {GOOD}\nadmin {GOOD}\n"),
            "--api-token-file /etc/blocklab/api-tokens line 2: the same token as line 1",
        ),
        (
            "\n\nread abc\n".to_string(),
            "--api-token-file /etc/blocklab/api-tokens line 3: a token must be 16 to 4096 characters long",
        ),
        (
            "# nothing\n".to_string(),
            "--api-token-file /etc/blocklab/api-tokens: holds no token",
        ),
    ] {
        let e = parse_api_tokens("--api-token-file", path, &text).expect_err(&text);
        assert_eq!(e.to_string(), expected);
        assert!(!e.to_string().contains(GOOD), "the token is echoed: {e}");
    }
}

#[test]
fn bearer_sets_sensitive_authorization() {
    let mut b = Bearer::new(Some(&secret(GOOD)));
    let req = b.call(Request::new(())).expect("intercept");
    let v = req.metadata().get("authorization").expect("header");
    assert_eq!(v.to_str().expect("ascii"), format!("Bearer {GOOD}"));
    let mut none = Bearer::new(None);
    assert!(
        none.call(Request::new(()))
            .expect("ok")
            .metadata()
            .get("authorization")
            .is_none()
    );
}

#[test]
fn token_files() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("fleet");
    std::fs::write(&one, format!("# fleet token\n\n{GOOD}\n")).expect("write");
    std::fs::set_permissions(&one, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert_eq!(
        read_token_file("--token-file", &one)
            .expect("read")
            .expose(),
        GOOD
    );

    let two = dir.path().join("two");
    std::fs::write(&two, format!("{GOOD}\nsecond-token-0123456789\n")).expect("write");
    let e = read_token_file("--token-file", &two)
        .expect_err("two tokens")
        .to_string();
    assert!(
        e.contains("exactly one token") && e.starts_with("--token-file "),
        "{e}"
    );
    assert_eq!(
        read_api_tokens("--api-token-file", &two)
            .expect("list")
            .len(),
        2
    );
    let e = read_token_file("--token-file", &dir.path().join("missing")).expect_err("missing");
    assert!(e.to_string().starts_with("--token-file "));
}

#[test]
fn client_urls_follow_tls() {
    assert_eq!(
        client_url("127.0.0.1:7400", false).expect("url"),
        "http://127.0.0.1:7400"
    );
    assert_eq!(
        client_url("c.lab:7400", true).expect("url"),
        "https://c.lab:7400"
    );
    assert_eq!(client_url("https://c:1", true).expect("url"), "https://c:1");
    assert_eq!(client_url("http://c:1", false).expect("url"), "http://c:1");
    assert!(
        client_url("http://c:1", true)
            .expect_err("http + ca")
            .to_string()
            .contains("--ca-cert")
    );
    assert!(
        client_url("https://c:1", false)
            .expect_err("https, no ca")
            .to_string()
            .contains("--ca-cert")
    );
    assert!(client_url("", false).is_err());
}

#[test]
fn pem_files_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, "hello").expect("write");
    let e = ClientTls::from_ca_file("--ca-cert", &not_pem)
        .expect_err("not pem")
        .to_string();
    assert!(
        e.contains("--ca-cert") && e.contains("not a PEM certificate"),
        "{e}"
    );
    let e = ServerTls::from_files(&not_pem, &not_pem)
        .expect_err("not pem")
        .to_string();
    assert!(e.contains("--tls-cert"), "{e}");
    let tls = ServerTls::from_pem("cert", "-----BEGIN PRIVATE KEY-----secret");
    assert!(!format!("{tls:?}").contains("secret"));
}

#[test]
fn loopback_targets() {
    for addr in [
        "127.0.0.1:7400",
        "127.9.9.9:1",
        "http://127.0.0.1:7400",
        "localhost:7400",
        "http://LOCALHOST:7400/",
        "[::1]:7400",
        "http://[::1]:7400",
        "[::ffff:127.0.0.1]:7400",
        "::1",
    ] {
        assert!(is_loopback_target(addr), "{addr}");
    }
    for addr in [
        "10.0.0.1:7400",
        "http://10.0.0.1:7400",
        "lab1:7400",
        "localhost.example.org:7400",
        "127.0.0.1.example.org:7400",
        "[2001:db8::1]:7400",
        "0.0.0.0:7400",
        "",
    ] {
        assert!(!is_loopback_target(addr), "{addr}");
    }
}
