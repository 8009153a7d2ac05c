//! Several hosts on one machine: one network namespace per host, joined by veth pairs to a
//! bridge in a switch namespace. Only addresses inside these namespaces are used. Daemons
//! run as real processes inside their namespace, so links can be cut and processes killed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The namespaces, addresses and daemon processes of one test topology.
pub struct Topology {
    tag: String,
    subnet: String,
    pub dir: PathBuf,
    children: Vec<(String, Child)>,
    roles: Vec<String>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Topology {
    /// Creates namespaces `<tag>c` (coordinator), `<tag>d` (database), `<tag>w` (worker) and
    /// `<tag>s` (switch), with addresses .1, .2, .3 in a private /24.
    pub fn new(dir: &Path) -> Self {
        Self::with_hosts(dir, &["c", "d", "w"])
    }

    /// Creates one namespace per role (one letter each, `<tag><role>`, address .1, .2, ... in
    /// role order) and the switch namespace joining them.
    pub fn with_hosts(dir: &Path, roles: &[&str]) -> Self {
        let n = std::process::id() % 200 + 20;
        let tag = format!("bl{n}");
        let subnet = format!("10.213.{n}");
        let t = Self {
            tag: tag.clone(),
            subnet,
            dir: dir.to_path_buf(),
            children: Vec::new(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        };
        t.teardown_namespaces();
        let switch = format!("{tag}s");
        ip(&["netns", "add", &switch]);
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &switch, "link", "set", "br0", "up"]);
        for (i, role) in roles.iter().enumerate() {
            let ns = format!("{tag}{role}");
            ip(&["netns", "add", &ns]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            let (host_if, switch_if) = (format!("{tag}{role}h"), format!("{tag}{role}p"));
            ip(&[
                "-n", &ns, "link", "add", &host_if, "type", "veth", "peer", "name", &switch_if,
                "netns", &switch,
            ]);
            ip(&["-n", &switch, "link", "set", &switch_if, "master", "br0"]);
            ip(&["-n", &switch, "link", "set", &switch_if, "up"]);
            let addr = format!("{}.{}/24", t.subnet, i + 1);
            ip(&["-n", &ns, "addr", "add", &addr, "dev", &host_if]);
            ip(&["-n", &ns, "link", "set", &host_if, "up"]);
        }
        t
    }

    pub fn coordinator_addr(&self) -> String {
        format!("{}.1", self.subnet)
    }
    pub fn db_addr(&self) -> String {
        format!("{}.2", self.subnet)
    }
    pub fn worker_addr(&self) -> String {
        format!("{}.3", self.subnet)
    }
    /// The address of namespace `role`.
    pub fn addr(&self, role: &str) -> String {
        let i = self
            .roles
            .iter()
            .position(|r| r == role)
            .expect("a role of this topology");
        format!("{}.{}", self.subnet, i + 1)
    }
    pub fn ns(&self, role: &str) -> String {
        format!("{}{role}", self.tag)
    }

    /// Starts `binary args` inside namespace `role` ("c", "d", "w"), logging to `<name>.log`.
    pub fn spawn(&mut self, name: &str, role: &str, binary: &Path, args: &[String]) {
        let log_path = self.dir.join(format!("{name}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("log");
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(role)])
            .arg(binary)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn daemon");
        self.children.push((name.to_string(), child));
    }

    /// SIGKILLs the named daemon (as a crash would).
    pub fn kill(&mut self, name: &str) {
        if let Some(pos) = self.children.iter().position(|(n, _)| n == name) {
            let (_, mut child) = self.children.remove(pos);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Takes the link of namespace `role` down (`up = false`) or up again.
    pub fn link(&self, role: &str, up: bool) {
        let ns = self.ns(role);
        let dev = format!("{}{role}h", self.tag);
        ip(&[
            "-n",
            &ns,
            "link",
            "set",
            &dev,
            if up { "up" } else { "down" },
        ]);
    }

    /// Runs `binary args` inside namespace `role` to completion and returns its output,
    /// whatever its exit status.
    pub fn exec(&self, role: &str, binary: &Path, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.ns(role)])
            .arg(binary)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run in namespace")
    }

    /// Runs the CLI inside the coordinator's namespace and returns stdout.
    pub fn cli(&self, binary: &Path, args: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns("c")])
            .arg(binary)
            .args([
                "--coordinator",
                &format!("{}:7400", self.coordinator_addr()),
            ])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run blocklab");
        assert!(
            out.status.success(),
            "blocklab {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Writes `spec` to `dir/<name>.toml`, submits it with the CLI from the coordinator's
    /// namespace and returns the job id.
    pub fn submit(&self, binary: &Path, name: &str, spec: &str) -> String {
        let path = self.dir.join(format!("{name}.toml"));
        std::fs::write(&path, spec).expect("spec");
        crate::submitted_job_id(&self.cli(binary, &["submit", path.to_str().expect("path")]))
    }

    fn teardown_namespaces(&self) {
        for role in self.roles.iter().map(String::as_str).chain(["s"]) {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(role)])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.teardown_namespaces();
    }
}
