//! Host facts reported in the hello: CPU, memory, OS, and the filesystems that hold the
//! clusters and the build cache.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

#[derive(Clone, Debug, Serialize)]
pub struct HostFacts {
    pub hostname: String,
    pub cpu_model: String,
    /// Physical cores when known, else logical CPUs.
    pub cpu_cores: usize,
    pub logical_cpus: usize,
    pub cpu_mhz: u64,
    pub memory_bytes: u64,
    pub os_name: String,
    pub os_version: String,
    pub kernel: String,
    pub compiler: String,
    pub work_dir: Option<FsFacts>,
    pub build_cache: Option<FsFacts>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FsFacts {
    pub path: String,
    pub mount_point: String,
    pub device: String,
    pub fs_type: String,
    /// statvfs f_bsize
    pub block_size: u64,
    /// statvfs f_frsize
    pub fragment_size: u64,
}

/// Gathers the facts (blocking: reads /proc and waits for a CPU sample).
pub fn collect(work_dir: &Path, build_cache: &Path, compiler: &str) -> HostFacts {
    let sys = System::new_with_specifics(
        RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::everything())
            .with_memory(MemoryRefreshKind::everything()),
    );
    let cpus = sys.cpus();
    let logical = cpus.len();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default();
    HostFacts {
        hostname: hostname(),
        cpu_model: cpus
            .first()
            .map(|c| c.brand().trim().to_string())
            .unwrap_or_default(),
        cpu_cores: System::physical_core_count().unwrap_or(logical),
        logical_cpus: logical,
        cpu_mhz: cpus.first().map(|c| c.frequency()).unwrap_or(0),
        memory_bytes: sys.total_memory(),
        os_name: System::name().unwrap_or_default(),
        os_version: System::long_os_version()
            .or_else(System::os_version)
            .unwrap_or_default(),
        kernel: System::kernel_version().unwrap_or_default(),
        compiler: compiler.to_string(),
        work_dir: fs_facts(work_dir, &mounts),
        build_cache: fs_facts(build_cache, &mounts),
    }
}

/// The host name, or `localhost` if it cannot be read.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .or_else(System::host_name)
        .unwrap_or_else(|| "localhost".into())
}

#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub device: String,
}

/// Parses /proc/self/mountinfo lines:
/// `id parent maj:min root mount_point options [optional...] - fstype source superopts`.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fs_type = r.next()?.to_string();
            let device = r.next().unwrap_or("").to_string();
            Some(Mount {
                mount_point: PathBuf::from(unescape(mount_point)),
                fs_type,
                device: unescape(&device),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount with the longest mount point that is a prefix of `path` (the last such
/// entry wins among equals, as later mounts shadow earlier ones).
pub fn mount_for<'a>(path: &Path, mounts: &'a [Mount]) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for m in mounts {
        if path.starts_with(&m.mount_point)
            && best
                .is_none_or(|b| m.mount_point.as_os_str().len() >= b.mount_point.as_os_str().len())
        {
            best = Some(m);
        }
    }
    best
}

fn fs_facts(path: &Path, mounts: &[Mount]) -> Option<FsFacts> {
    // The directory may not exist yet: describe its nearest existing ancestor.
    let existing = path.ancestors().find(|p| p.exists())?;
    let canonical = existing.canonicalize().ok()?;
    let m = mount_for(&canonical, mounts);
    let st = nix::sys::statvfs::statvfs(&canonical).ok();
    Some(FsFacts {
        path: path.display().to_string(),
        mount_point: m
            .map(|m| m.mount_point.display().to_string())
            .unwrap_or_default(),
        device: m.map(|m| m.device.clone()).unwrap_or_default(),
        fs_type: m.map(|m| m.fs_type.clone()).unwrap_or_default(),
        block_size: st.as_ref().map(|s| s.block_size()).unwrap_or(0),
        fragment_size: st.as_ref().map(|s| s.fragment_size()).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
40 27 259:3 / /var/lib rw,relatime shared:9 - xfs /dev/nvme1n1 rw,attr2
41 40 0:50 / /var/lib/my\\040disk rw - tmpfs tmpfs rw
";

    #[test]
    fn longest_mount_prefix_wins() {
        let mounts = parse_mountinfo(SAMPLE);
        assert_eq!(mounts.len(), 4);
        let m = mount_for(Path::new("/var/lib/blocklab/agent"), &mounts).unwrap();
        assert_eq!(m.fs_type, "xfs");
        assert_eq!(m.device, "/dev/nvme1n1");
        let m = mount_for(Path::new("/var/cache/x"), &mounts).unwrap();
        assert_eq!(m.mount_point, Path::new("/"));
        assert_eq!(m.fs_type, "ext4");
        let m = mount_for(Path::new("/var/lib/my disk/x"), &mounts).unwrap();
        assert_eq!(m.fs_type, "tmpfs");
        // "/var/library" is not under "/var/lib".
        let m = mount_for(Path::new("/var/library"), &mounts).unwrap();
        assert_eq!(m.fs_type, "ext4");
    }

    #[test]
    fn facts_json_has_the_fields() {
        let dir = tempfile::tempdir().unwrap();
        let facts = collect(&dir.path().join("not/yet"), dir.path(), "gcc (X) 1.2");
        let v = serde_json::to_value(&facts).unwrap();
        for key in [
            "hostname",
            "cpu_model",
            "cpu_cores",
            "logical_cpus",
            "cpu_mhz",
            "memory_bytes",
            "os_name",
            "os_version",
            "kernel",
            "compiler",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {v}");
        }
        assert!(v["logical_cpus"].as_u64().unwrap() >= 1);
        assert!(v["memory_bytes"].as_u64().unwrap() > 0);
        assert!(!v["kernel"].as_str().unwrap().is_empty());
        for fs in ["work_dir", "build_cache"] {
            let f = &v[fs];
            for key in ["mount_point", "device", "fs_type", "block_size"] {
                assert!(f.get(key).is_some(), "missing {fs}.{key} in {v}");
            }
            assert!(!f["fs_type"].as_str().unwrap().is_empty(), "{v}");
            assert!(f["block_size"].as_u64().unwrap() >= 512, "{v}");
        }
    }
}
