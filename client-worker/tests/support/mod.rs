//! A throwaway PostgreSQL cluster for tests: initdb + postgres from the Debian server
//! binaries (`BLOCKLAB_TEST_PG_BINDIR`), run as an unprivileged OS user
//! (`BLOCKLAB_PG_USER`) because PostgreSQL refuses to run as root. Listens on
//! 127.0.0.1 on a free port with password (scram) authentication over TCP.
#![allow(dead_code)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use blocklab_proto::ConnInfo;

pub mod compare;

pub const SUPERUSER: &str = "bench";
pub const PASSWORD: &str = "s3cret pw";

pub struct TestServer {
    pub port: u16,
    pub bindir: PathBuf,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

fn os_user() -> (u32, u32, String) {
    let name = std::env::var("BLOCKLAB_PG_USER").unwrap_or_else(|_| "blocklab".into());
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    let line = passwd
        .lines()
        .find(|l| l.split(':').next() == Some(name.as_str()))
        .unwrap_or_else(|| panic!("OS user {name} (BLOCKLAB_PG_USER) does not exist"));
    let f: Vec<&str> = line.split(':').collect();
    (f[2].parse().unwrap(), f[3].parse().unwrap(), name)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TestServer {
    pub fn start() -> TestServer {
        let bindir = PathBuf::from(
            std::env::var("BLOCKLAB_TEST_PG_BINDIR")
                .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into()),
        );
        assert!(
            bindir.join("initdb").exists(),
            "no initdb in {} (set BLOCKLAB_TEST_PG_BINDIR to PostgreSQL's bin directory, \
             e.g. install postgresql-15)",
            bindir.display()
        );
        let (uid, gid, _) = os_user();
        let dir = tempfile::Builder::new()
            .prefix("blocklab-worker-pg-")
            .tempdir_in("/tmp")
            .unwrap();
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).unwrap();
        let data = dir.path().join("data");
        let out = Command::new(bindir.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                SUPERUSER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--locale=C",
                "-E",
                "UTF8",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .env("LC_ALL", "C")
            .uid(uid)
            .gid(gid)
            .current_dir(dir.path())
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("postgres.log")).unwrap();
        let child = Command::new(bindir.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", dir.path().display()))
            .args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "max_connections=60",
            ])
            .env("LC_ALL", "C")
            .uid(uid)
            .gid(gid)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start postgres");
        let server = TestServer {
            port,
            bindir,
            dir,
            child: Some(child),
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = Command::new(self.bindir.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not start:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn conn(&self, dbname: &str) -> ConnInfo {
        ConnInfo {
            host: "127.0.0.1".into(),
            port: u32::from(self.port),
            user: SUPERUSER.into(),
            password: PASSWORD.into(),
            dbname: dbname.into(),
        }
    }

    pub fn conninfo(&self, dbname: &str) -> String {
        self.conn(dbname).to_conninfo_string()
    }

    pub async fn client(&self, dbname: &str) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.conninfo(dbname), tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to {dbname}: {e:?}"));
        tokio::spawn(conn);
        client
    }

    /// Admits loopback TCP connections without a password from now on.
    pub async fn trust_loopback(&self) {
        let hba = self.dir.path().join("data/pg_hba.conf");
        let old = std::fs::read_to_string(&hba).unwrap();
        std::fs::write(&hba, format!("host all all 127.0.0.1/32 trust\n{old}")).unwrap();
        self.client("postgres")
            .await
            .batch_execute("select pg_reload_conf()")
            .await
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }

    pub async fn create_db(&self, name: &str) {
        self.client("postgres")
            .await
            .batch_execute(&format!("create database {name}"))
            .await
            .unwrap();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGINT: fast shutdown; the postmaster stops its backends and exits.
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
