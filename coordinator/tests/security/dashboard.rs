//! The dashboard over TLS with the coordinator's certificate: curl with the CA signs in, a
//! plain HTTP request gets no page.

use super::*;
use blocklab_coordinator::dashboard::{self, Dashboard};
use blocklab_coordinator::fleet::{Liveness, Registry};
use blocklab_daemon::security::{ApiToken, Scope, ServerTls};
use lab::{Pki, READ_TOKEN};

fn curl(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new("curl")
        .args(["-sS", "-i", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl is installed");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

// curl blocks its thread: the dashboard runs on the other worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_serves_https_with_the_coordinator_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = Pki::new();
    let (ca, cert, key) = pki.write(dir.path());
    let tls = ServerTls::from_files(&cert, &key).expect("tls");
    let catalog = blocklab_coordinator::catalog::Catalog::open(&dir.path().join("catalog.db"))
        .await
        .expect("catalog");
    let registry = Registry::new(Liveness {
        heartbeat_interval: Duration::from_secs(2),
        heartbeat_timeout: Duration::from_secs(10),
    });
    let board = Dashboard::new(
        catalog,
        registry,
        "catalog.db".into(),
        &[ApiToken::new(Scope::Read, secret(READ_TOKEN))],
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        dashboard::serve(board, listener, Some(&tls), std::future::pending())
            .await
            .expect("dashboard");
    });
    let ca = ca.display().to_string();
    let base = format!("https://127.0.0.1:{}", addr.port());
    let (ok, out) = curl(&["--cacert", &ca, &format!("{base}/login")]);
    assert!(ok && out.starts_with("HTTP/1.1 200"), "{out}");
    let (ok, out) = curl(&[
        "--cacert",
        &ca,
        "--data-urlencode",
        &format!("token={READ_TOKEN}"),
        &format!("{base}/login"),
    ]);
    assert!(ok && out.starts_with("HTTP/1.1 303"), "{out}");
    let cookie = out
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("set-cookie");
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("Secure")
            && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    for query in ["token", "%74oken", "TOK%45N", "x=1;token"] {
        let (ok, out) = curl(&["--cacert", &ca, &format!("{base}/?{query}={READ_TOKEN}")]);
        assert!(ok && out.starts_with("HTTP/1.1 400"), "{query}: {out}");
    }
    // A sign-in form posted from another site is refused, the token never checked.
    let (ok, out) = curl(&[
        "--cacert",
        &ca,
        "-H",
        "Origin: https://evil.example",
        "--data-urlencode",
        &format!("token={READ_TOKEN}"),
        &format!("{base}/login"),
    ]);
    assert!(ok && out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(!out.to_ascii_lowercase().contains("set-cookie"), "{out}");
    let (ok, out) = curl(&[
        "--cacert",
        &ca,
        "-H",
        &format!("Origin: {base}"),
        "--data-urlencode",
        &format!("token={READ_TOKEN}"),
        &format!("{base}/login"),
    ]);
    assert!(ok && out.starts_with("HTTP/1.1 303"), "same site: {out}");
    // Plain HTTP to the TLS port gets no page; neither does a client without the CA.
    let (_, out) = curl(&[&format!("http://127.0.0.1:{}/login", addr.port())]);
    assert!(!out.contains("Sign in"), "{out}");
    let (ok, _) = curl(&[&format!("{base}/login")]);
    assert!(!ok, "the certificate was trusted without the CA");
}
