//! A throwaway PostgreSQL server for tests that run the catalog on PostgreSQL: Debian's
//! postgresql-15 binaries (deploy/setup.sh installs them), a data directory in a temporary
//! directory, listening on a free loopback port (and a Unix socket in that directory), with
//! trust authentication for loopback only. PostgreSQL refuses to run as root, so initdb and
//! the server run as the unprivileged PostgreSQL user (`BLOCKLAB_PG_USER`, default
//! `blocklab`) when the test runs as root.
//!
//! One server is shared by the tests of a process that run at the same time
//! ([`PgServer::shared`]); each test takes a fresh database ([`PgServer::database`]). The
//! server stops when the last test holding it is done.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Where Debian installs PostgreSQL 15's server binaries (`BLOCKLAB_TEST_PG_BINDIR`
/// overrides it).
pub const BINDIR: &str = "/usr/lib/postgresql/15/bin";

/// The user the server and its databases belong to.
const SUPERUSER: &str = "lab";

pub struct PgServer {
    dir: tempfile::TempDir,
    data: PathBuf,
    bin: PathBuf,
    port: u16,
    next: AtomicU32,
}

static SHARED: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());

fn bindir() -> PathBuf {
    std::env::var_os("BLOCKLAB_TEST_PG_BINDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| BINDIR.into())
}

fn pg_user() -> String {
    std::env::var("BLOCKLAB_PG_USER").unwrap_or_else(|_| "blocklab".into())
}

/// Runs `cmd` (as the PostgreSQL user when we are root) and panics with its output on
/// failure.
fn run(cmd: &mut Command, what: &str) {
    use std::os::unix::process::CommandExt;
    if nix::unistd::geteuid().is_root() {
        let user = nix::unistd::User::from_name(&pg_user())
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                panic!(
                    "{what}: no OS user {:?} to run PostgreSQL as (deploy/setup.sh creates it)",
                    pg_user()
                )
            });
        cmd.uid(user.uid.as_raw()).gid(user.gid.as_raw());
    }
    let out = cmd
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (is postgresql-15 installed? deploy/setup.sh)"));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl PgServer {
    /// Starts a new server (initdb, then pg_ctl start, waiting until it accepts connections).
    pub fn start() -> PgServer {
        let dir = tempfile::Builder::new()
            .prefix("blocklab-testpg-")
            .tempdir()
            .expect("tempdir");
        if nix::unistd::geteuid().is_root() {
            let user = nix::unistd::User::from_name(&pg_user())
                .ok()
                .flatten()
                .expect("the PostgreSQL user");
            nix::unistd::chown(dir.path(), Some(user.uid), Some(user.gid)).expect("chown");
        }
        let bin = bindir();
        let data = dir.path().join("data");
        run(
            Command::new(bin.join("initdb")).arg("-D").arg(&data).args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]),
            "initdb",
        );
        let port = free_port();
        let opts = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=200",
            dir.path().display()
        );
        run(
            Command::new(bin.join("pg_ctl"))
                .arg("-D")
                .arg(&data)
                .args(["-w", "-o", &opts, "-l"])
                .arg(dir.path().join("server.log"))
                .arg("start"),
            "pg_ctl start",
        );
        PgServer {
            dir,
            data,
            bin,
            port,
            next: AtomicU32::new(0),
        }
    }

    /// The server the tests of this process share while any of them holds it (started on
    /// first use, stopped when the last holder drops it).
    pub fn shared() -> Arc<PgServer> {
        let mut slot = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(server) = slot.upgrade() {
            return server;
        }
        let server = Arc::new(PgServer::start());
        *slot = Arc::downgrade(&server);
        server
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the server's Unix socket and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A URL for database `db` on this server.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a new, empty database and returns its URL.
    pub fn database(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let name = format!("catalog_{}_{n}", std::process::id());
        run(
            Command::new(self.bin.join("createdb"))
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    SUPERUSER,
                ])
                .arg(&name),
            "createdb",
        );
        self.url(&name)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // Immediate: a test's open connections must not hold the stop up.
        let stopped = {
            use std::os::unix::process::CommandExt;
            let mut cmd = Command::new(self.bin.join("pg_ctl"));
            cmd.arg("-D")
                .arg(&self.data)
                .args(["-w", "-m", "immediate", "stop"]);
            if nix::unistd::geteuid().is_root()
                && let Ok(Some(user)) = nix::unistd::User::from_name(&pg_user())
            {
                cmd.uid(user.uid.as_raw()).gid(user.gid.as_raw());
            }
            cmd.output()
        };
        if !matches!(&stopped, Ok(o) if o.status.success()) {
            eprintln!("testpg: pg_ctl stop failed: {stopped:?}");
        }
    }
}
