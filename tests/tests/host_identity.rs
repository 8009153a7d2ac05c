//! "No way in", across a network: the coordinator in its own namespace with TLS, scoped API
//! tokens, the shared fleet token and one enrolled host (db1, an agent), the real agent and
//! worker binaries in theirs. A host holding db1's credential is refused as db2 and as a
//! worker; db1 attaches as itself and a revocation disconnects it within seconds; a read
//! token cannot submit or cancel (the catalog does not change); the dashboard refuses a token
//! in the URL and its sign-in cookie is HttpOnly, Secure and SameSite=Strict; the CLI refuses
//! to send a token over `http://` to the coordinator's (non-loopback) address.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use blocklab_tests::netns::Topology;
use blocklab_tests::{binary, build_cache, build_user, pg_user, submitted_job_id};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

const READ_TOKEN: &str = "netns-read-token-0123456789abcdef";
const SUBMIT_TOKEN: &str = "netns-submit-token-0123456789abcdef";
const FLEET_TOKEN: &str = "netns-shared-fleet-token-0123456789";

/// A CA and a server certificate for `ip`, written as ca.pem, server.pem, server.key.
fn pki(dir: &Path, ip: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "netns test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_pem = ca.self_signed(&ca_key).expect("ca cert").pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec![ip.to_string()]).expect("server params");
    params
        .distinguished_name
        .push(DnType::CommonName, "blocklab coordinator");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &issuer).expect("server cert");
    let paths = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&paths.0, ca_pem).expect("ca");
    std::fs::write(&paths.1, cert.pem()).expect("cert");
    write_private(&paths.2, &key.serialize_pem());
    paths
}

fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default()
}

/// Waits until `check` holds, or panics after `timeout` naming `what`.
fn wait_for(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out after {timeout:?} waiting for: {what}");
}

fn sql(db: &Path, query: &str) -> String {
    let out = std::process::Command::new("sqlite3")
        .arg(db)
        .arg(query)
        .output()
        .expect("sqlite3");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Lab {
    topo: Topology,
    catalog: PathBuf,
    ca: String,
    coordinator: String,
}

impl Lab {
    fn agent_args(&self, host_id: &str, token: &Path) -> Vec<String> {
        let work = self.topo.dir.join(format!("agent-{host_id}"));
        [
            "--coordinator",
            &self.coordinator,
            "--ca-cert",
            &self.ca,
            "--token-file",
            &token.display().to_string(),
            "--host-id",
            host_id,
            "--advertise-addr",
            &self.topo.db_addr(),
            "--work-dir",
            &work.display().to_string(),
            "--build-cache",
            &build_cache().display().to_string(),
            "--pg-user",
            &pg_user(),
            "--build-user",
            &build_user(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn worker_args(&self, host_id: &str, token: &Path) -> Vec<String> {
        [
            "serve",
            "--coordinator",
            &self.coordinator,
            "--ca-cert",
            &self.ca,
            "--token-file",
            &token.display().to_string(),
            "--host-id",
            host_id,
            "--advertise-addr",
            &self.topo.worker_addr(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// The CLI in the coordinator's namespace, with the CA and `token_file`.
    fn cli(&self, token_file: &Path, args: &[&str]) -> Output {
        let token = token_file.display().to_string();
        let mut all = vec![
            "--coordinator",
            self.coordinator.as_str(),
            "--ca-cert",
            self.ca.as_str(),
            "--token-file",
            token.as_str(),
        ];
        all.extend_from_slice(args);
        self.topo.exec("c", &binary("blocklab"), &all)
    }

    fn curl(&self, args: &[&str]) -> String {
        let mut all = vec![
            "-sS",
            "-i",
            "--max-time",
            "10",
            "--cacert",
            self.ca.as_str(),
        ];
        all.extend_from_slice(args);
        text(&self.topo.exec("c", Path::new("/usr/bin/curl"), &all))
    }

    fn counts(&self) -> String {
        sql(
            &self.catalog,
            "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM cells), \
             (SELECT count(*) FROM runs), (SELECT group_concat(state) FROM jobs), \
             (SELECT group_concat(state) FROM runs)",
        )
    }
}

#[test]
fn hosts_prove_who_they_are_and_tokens_do_only_their_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let topo = Topology::new(dir.path());
    let ip = topo.coordinator_addr();
    let (ca, cert, key) = pki(dir.path(), &ip);
    let catalog = dir.path().join("catalog.db");
    let api_tokens = dir.path().join("api-tokens");
    write_private(
        &api_tokens,
        &format!("# netns lab\nread {READ_TOKEN}\nsubmit {SUBMIT_TOKEN}\n"),
    );
    let fleet_token = dir.path().join("fleet-token");
    write_private(&fleet_token, FLEET_TOKEN);
    let (read_file, submit_file) = (
        dir.path().join("read.token"),
        dir.path().join("submit.token"),
    );
    write_private(&read_file, READ_TOKEN);
    write_private(&submit_file, SUBMIT_TOKEN);

    // Enroll db1 before the coordinator starts: the token is printed once, only its sha256
    // is stored.
    let coordinator_bin = binary("blocklab-coordinator");
    let out = std::process::Command::new(&coordinator_bin)
        .args(["--catalog", &catalog.display().to_string()])
        .args(["hosts", "add", "db1", "--role", "agent"])
        .output()
        .expect("hosts add");
    assert!(out.status.success(), "{}", text(&out));
    let db1_token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(db1_token.len(), 64, "{}", text(&out));
    let stored = sql(
        &catalog,
        "SELECT host_id, role, token_sha256 FROM host_credentials",
    );
    assert!(stored.starts_with("db1|agent|"), "{stored}");
    assert!(!stored.contains(&db1_token), "the catalog holds the token");
    let db1_file = dir.path().join("db1.token");
    write_private(&db1_file, &db1_token);

    let mut lab = Lab {
        topo,
        catalog: catalog.clone(),
        ca: ca.display().to_string(),
        coordinator: format!("{ip}:7400"),
    };
    let args: Vec<String> = [
        "--listen",
        &format!("{ip}:7400"),
        "--catalog",
        &catalog.display().to_string(),
        "--tls-cert",
        &cert.display().to_string(),
        "--tls-key",
        &key.display().to_string(),
        "--api-token-file",
        &api_tokens.display().to_string(),
        "--fleet-token-file",
        &fleet_token.display().to_string(),
        "--dashboard-listen",
        &format!("{ip}:7401"),
        "--heartbeat-interval",
        "500ms",
        "--heartbeat-timeout",
        "3s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    lab.topo.spawn("coordinator", "c", &coordinator_bin, &args);
    wait_for(Duration::from_secs(30), "the coordinator answers", || {
        lab.cli(&read_file, &["jobs"]).status.success()
    });

    // db1's credential as db2 (an agent) and as db1 the worker: refused, nothing stored.
    let agent_bin = binary("blocklab-agent");
    let worker_bin = binary("blocklab-worker");
    let as_db2 = lab.agent_args("db2", &db1_file);
    lab.topo.spawn("agent-as-db2", "d", &agent_bin, &as_db2);
    wait_for(Duration::from_secs(30), "db2 refused", || {
        log(dir.path(), "agent-as-db2").contains(
            "this credential is enrolled for host db1 (agent); it may not attach as host db2",
        )
    });
    lab.topo.kill("agent-as-db2");
    let as_worker = lab.worker_args("db1", &db1_file);
    lab.topo
        .spawn("worker-as-db1", "w", &worker_bin, &as_worker);
    wait_for(Duration::from_secs(30), "db1 as a worker refused", || {
        log(dir.path(), "worker-as-db1").contains(
            "this credential is enrolled for host db1 as agent; it may not attach as worker",
        )
    });
    lab.topo.kill("worker-as-db1");
    // The shared token no longer attaches hosts once one is enrolled.
    let shared_worker = lab.worker_args("client", &fleet_token);
    lab.topo
        .spawn("worker-shared", "w", &worker_bin, &shared_worker);
    wait_for(Duration::from_secs(30), "the shared token refused", || {
        log(dir.path(), "worker-shared").contains("the shared fleet token no longer attaches hosts")
    });
    lab.topo.kill("worker-shared");
    assert_eq!(sql(&catalog, "SELECT count(*) FROM hosts"), "0");

    // db1 as itself attaches.
    let as_db1 = lab.agent_args("db1", &db1_file);
    lab.topo.spawn("agent-db1", "d", &agent_bin, &as_db1);
    let hosts_csv = |lab: &Lab| {
        String::from_utf8_lossy(&lab.cli(&read_file, &["hosts", "--format", "csv"]).stdout)
            .to_string()
    };
    wait_for(Duration::from_secs(60), "db1 up", || {
        hosts_csv(&lab).contains("db1,agent,up")
    });

    // A read token reads, but cannot submit or cancel; the catalog does not change.
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "name = \"identity\"\nrepetitions = 1\n[source]\ntarball = \"/nonexistent/postgresql.tar.bz2\"\n\
         [matrix]\nblock_size_kb = [8]\nclients = [1]\n[workload]\nduration = \"1s\"\n",
    )
    .expect("spec");
    let spec_arg = spec.display().to_string();
    // The job waits: db1 is revoked below before it could build anything.
    lab.topo.kill("agent-db1");
    wait_for(Duration::from_secs(30), "db1 down", || {
        hosts_csv(&lab).contains("db1,agent,down")
    });
    let out = lab.cli(&submit_file, &["submit", &spec_arg]);
    assert!(out.status.success(), "{}", text(&out));
    let job_id = submitted_job_id(&String::from_utf8_lossy(&out.stdout));
    let before = lab.counts();
    let out = lab.cli(&read_file, &["submit", &spec_arg]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains(
            "SubmitJob needs an API token with scope submit (or higher); this token's scope is read"
        ),
        "{}",
        text(&out)
    );
    let out = lab.cli(&read_file, &["cancel", &job_id]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains(
            "CancelJob needs an API token with scope submit (or higher); this token's scope is read"
        ),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains(READ_TOKEN));
    assert_eq!(lab.counts(), before, "the catalog changed");
    let out = lab.cli(&read_file, &["job", &job_id]);
    assert!(out.status.success(), "a read token reads: {}", text(&out));

    // A revoked host is disconnected within seconds and refused afterwards.
    lab.topo.spawn("agent-db1", "d", &agent_bin, &as_db1);
    wait_for(Duration::from_secs(60), "db1 up again", || {
        hosts_csv(&lab).contains("db1,agent,up")
    });
    let out = std::process::Command::new(&coordinator_bin)
        .args(["--catalog", &catalog.display().to_string()])
        .args(["hosts", "revoke", "db1"])
        .output()
        .expect("hosts revoke");
    assert!(out.status.success(), "{}", text(&out));
    let revoked = Instant::now();
    wait_for(Duration::from_secs(10), "db1 disconnected", || {
        hosts_csv(&lab).contains("db1,agent,down")
    });
    let took = revoked.elapsed();
    println!("revocation to disconnect: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    wait_for(Duration::from_secs(30), "db1's next hello refused", || {
        log(dir.path(), "agent-db1").contains("the credential of host db1 was revoked")
    });
    lab.topo.kill("agent-db1");

    // The dashboard: HTTPS, a token in the URL refused, the sign-in cookie's attributes.
    let board = format!("https://{ip}:7401");
    let out = lab.curl(&[&format!("{board}/?token={READ_TOKEN}")]);
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    assert!(out.contains("a token in the URL is refused"), "{out}");
    let out = lab.curl(&[
        "--data-urlencode",
        &format!("token={READ_TOKEN}"),
        &format!("{board}/login"),
    ]);
    assert!(out.starts_with("HTTP/1.1 303"), "{out}");
    let cookie = out
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {out}"));
    let attributes: Vec<&str> = cookie.split(';').map(str::trim).collect();
    for want in ["HttpOnly", "Secure", "SameSite=Strict"] {
        assert!(attributes.contains(&want), "{want} missing: {cookie}");
    }
    assert!(!cookie.contains(READ_TOKEN), "{cookie}");
    let session = attributes[0]
        .split_once(':')
        .map(|(_, v)| v.trim())
        .expect("cookie pair");
    let out = lab.curl(&["-H", &format!("Cookie: {session}"), &format!("{board}/")]);
    assert!(
        out.starts_with("HTTP/1.1 200") && out.contains("identity"),
        "{out}"
    );
    let out = lab.curl(&[
        "--data-urlencode",
        &format!("token={SUBMIT_TOKEN}"),
        &format!("{board}/login"),
    ]);
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");

    // The CLI refuses to send a token over http:// off loopback (before dialing).
    for target in [format!("http://{ip}:7400"), format!("{ip}:7400")] {
        let read = read_file.display().to_string();
        let out = lab.topo.exec(
            "c",
            &binary("blocklab"),
            &["--coordinator", &target, "--token-file", &read, "jobs"],
        );
        assert!(!out.status.success());
        let t = text(&out);
        assert!(
            t.contains(&format!(
                "refusing to send the API token to {target} over plain http"
            )) && t.contains("--ca-cert"),
            "{t}"
        );
        assert!(!t.contains(READ_TOKEN), "{t}");
    }
    assert!(
        !log(dir.path(), "coordinator").contains(READ_TOKEN)
            && !log(dir.path(), "coordinator").contains(&db1_token),
        "the coordinator logged a token"
    );
}
