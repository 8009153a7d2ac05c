//! A coordinator with TLS and tokens on 127.0.0.1 (port 0), with certificates made by rcgen.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use blocklab_cli as cli;
use blocklab_daemon::security::{ClientAuth, ClientTls, Secret, ServerTls};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

pub const FLEET_TOKEN: &str = "fleet-join-token-0123456789abcdef";
pub const API_TOKEN: &str = "api-token-0123456789abcdef";
pub const API_TOKEN_2: &str = "second-api-token-fedcba9876543210";
pub const READ_TOKEN: &str = "read-api-token-0123456789abcdef";
pub const ADMIN_TOKEN: &str = "admin-api-token-0123456789abcdef";

pub struct Pki {
    pub ca_pem: String,
    pub other_ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

fn ca(name: &str) -> (CertificateParams, KeyPair, String) {
    let key = KeyPair::generate().expect("ca key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let pem = params.self_signed(&key).expect("self-signed ca").pem();
    (params, key, pem)
}

impl Pki {
    /// A CA, a server certificate for 127.0.0.1 and localhost signed by it, and an unrelated CA.
    pub fn new() -> Self {
        let (ca_params, ca_key, ca_pem) = ca("blocklab test CA");
        let (_, _, other_ca_pem) = ca("some other CA");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("server key");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("server params");
        params
            .distinguished_name
            .push(DnType::CommonName, "blocklab coordinator");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &issuer).expect("server cert");
        Self {
            ca_pem,
            other_ca_pem,
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// Writes the files the daemons' flags would name.
    pub fn write(&self, dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let paths = (
            dir.join("ca.pem"),
            dir.join("server.pem"),
            dir.join("server.key"),
        );
        std::fs::write(&paths.0, &self.ca_pem).expect("write ca");
        std::fs::write(&paths.1, &self.cert_pem).expect("write cert");
        std::fs::write(&paths.2, &self.key_pem).expect("write key");
        paths
    }
}

pub fn secret(v: &str) -> Secret {
    Secret::new(v, "test").expect("token")
}

pub struct Lab {
    pub dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub ca: ClientTls,
    pub other_ca: ClientTls,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Lab {
    /// Starts a coordinator with TLS (certificate files read as the daemon reads them), a
    /// fleet token and two API tokens from files, and waits until it answers.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = Pki::new();
        let (ca_path, cert_path, key_path) = pki.write(dir.path());
        let api_file = dir.path().join("api-tokens");
        std::fs::write(
            &api_file,
            format!(
                "# CLI tokens\n{API_TOKEN}\n\nsubmit {API_TOKEN_2}\nread {READ_TOKEN}\nadmin {ADMIN_TOKEN}\n"
            ),
        )
        .expect("write tokens");
        let mut config =
            blocklab_coordinator::CoordinatorConfig::new(dir.path().join("catalog.db"));
        config.tls = Some(ServerTls::from_files(&cert_path, &key_path).expect("server tls"));
        config.fleet_token = Some(secret(FLEET_TOKEN));
        config.api_tokens =
            blocklab_daemon::security::read_api_tokens("--api-token-file", &api_file)
                .expect("api tokens");
        let debug = format!("{config:?}");
        for t in [
            FLEET_TOKEN,
            API_TOKEN,
            API_TOKEN_2,
            READ_TOKEN,
            ADMIN_TOKEN,
            pki.key_pem.as_str(),
        ] {
            assert!(!debug.contains(t.trim()), "config Debug leaks a secret");
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            blocklab_coordinator::serve(config, listener, async {
                let _ = stop_rx.await;
            })
            .await
            .expect("serve");
        });
        let lab = Self {
            ca: ClientTls::from_ca_file("--ca-cert", &ca_path).expect("ca"),
            other_ca: ClientTls::from_ca_pem(pki.other_ca_pem.clone()),
            dir,
            addr,
            _stop: stop,
        };
        for _ in 0..100 {
            if let Ok(mut c) = lab.client(Some(API_TOKEN)).await
                && c.list_jobs(blocklab_proto::v1::ListJobsRequest {})
                    .await
                    .is_ok()
            {
                return lab;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("coordinator did not come up");
    }

    /// `host:port`, as the CLI's `--coordinator` takes it (https because a CA is given).
    pub fn target(&self) -> String {
        self.addr.to_string()
    }

    /// The CLI's client with the right CA and `token`.
    pub async fn client(&self, token: Option<&str>) -> Result<cli::Client, cli::CliError> {
        let auth = ClientAuth {
            tls: Some(self.ca.clone()),
            token: token.map(secret),
        };
        cli::connect(&self.target(), &auth).await
    }

    pub fn catalog(&self) -> PathBuf {
        self.dir.path().join("catalog.db")
    }
}

/// Rows in jobs, cells, runs and hosts.
pub fn counts(db: &Path) -> Vec<i64> {
    let out = std::process::Command::new("sqlite3")
        .arg(db)
        .arg(
            "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM cells), \
             (SELECT count(*) FROM runs), (SELECT count(*) FROM hosts);",
        )
        .output()
        .expect("sqlite3 is installed");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .split('|')
        .map(|v| v.parse().expect("count"))
        .collect()
}
