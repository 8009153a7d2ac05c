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

#[test]
fn token_check_accepts_only_listed_tokens() {
    let check = TokenCheck::new(
        TokenKind::Api,
        &[secret(GOOD), secret("another-token-0123456789")],
    );
    assert!(
        check
            .check(Some(format!("Bearer {GOOD}").as_bytes()))
            .is_ok()
    );
    assert!(
        check
            .check(Some(b"Bearer another-token-0123456789"))
            .is_ok()
    );
    let missing = check.check(None).expect_err("missing");
    assert_eq!(missing.code(), tonic::Code::Unauthenticated);
    assert!(
        missing.message().contains("missing API token"),
        "{}",
        missing.message()
    );
    let wrong = check
        .check(Some(b"Bearer 0123456789abcdef-evil"))
        .expect_err("wrong");
    assert!(wrong.message().contains("invalid API token"));
    assert!(!wrong.message().contains("evil"));
    let malformed = check.check(Some(GOOD.as_bytes())).expect_err("no scheme");
    assert!(malformed.message().contains("malformed"));
    // A prefix or extension of a good token is not good.
    assert!(
        check
            .check(Some(format!("Bearer {GOOD}x").as_bytes()))
            .is_err()
    );
    assert!(check.check(Some(b"Bearer 0123456789abcdef-goo")).is_err());
    assert!(TokenCheck::new(TokenKind::Fleet, &[]).check(None).is_ok());
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
        read_token_list("--api-token-file", &two)
            .expect("list")
            .len(),
        2
    );

    let empty = dir.path().join("empty");
    std::fs::write(&empty, "# nothing\n").expect("write");
    assert!(read_token_list("--api-token-file", &empty).is_err());
    let short = dir.path().join("short");
    std::fs::write(&short, "abc\n").expect("write");
    let e = read_token_list("--api-token-file", &short)
        .expect_err("short")
        .to_string();
    assert!(e.contains("token 1") && !e.contains("abc\n"), "{e}");
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
