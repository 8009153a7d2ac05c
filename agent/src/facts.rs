//! Host facts reported in the hello: CPU, memory, OS, compiler, and the filesystems that
//! hold the data directories, the WAL directories, the agent's work dir and the build
//! cache. The JSON keys are documented in agent/README.md; keep them stable.

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
    /// cpufreq's scaling_max_freq of cpu0 (0 if the kernel exposes no cpufreq).
    pub cpu_max_mhz: u64,
    /// cpufreq governor of cpu0 (empty if none).
    pub cpu_governor: String,
    pub memory_bytes: u64,
    pub os_name: String,
    pub os_version: String,
    pub kernel: String,
    pub compiler: String,
    pub work_dir: Option<FsFacts>,
    pub build_cache: Option<FsFacts>,
    pub data_dir: Option<FsFacts>,
    pub wal_dir: Option<FsFacts>,
    /// What makes benchmarks noisy on this host now, as `check: value` (the warnings of
    /// `blocklab-agent doctor`, filled in by the hello).
    pub warnings: Vec<String>,
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
    /// Per-mount options (`rw,noatime`).
    pub mount_options: String,
    /// Filesystem-wide options (`rw,discard,...`).
    pub super_options: String,
    /// The whole disk under the device (`nvme0n1` for `nvme0n1p2`); empty for virtual
    /// filesystems.
    pub disk: String,
    /// `/sys/block/<disk>/queue/rotational`; None when unknown.
    pub rotational: Option<bool>,
    /// `/sys/block/<disk>/queue/read_ahead_kb`; None when unknown.
    pub read_ahead_kb: Option<u64>,
}

/// The directories facts describe.
pub struct FactDirs<'a> {
    pub work_dir: &'a Path,
    pub build_cache: &'a Path,
    pub data_root: &'a Path,
    pub wal_root: &'a Path,
}

/// Gathers the facts (blocking: reads /proc and waits for a CPU sample).
pub fn collect(dirs: &FactDirs<'_>, compiler: &str) -> HostFacts {
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
        cpu_max_mhz: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq")
            .and_then(|v| v.parse::<u64>().ok())
            .map(|khz| khz / 1000)
            .unwrap_or(0),
        cpu_governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
            .unwrap_or_default(),
        memory_bytes: sys.total_memory(),
        os_name: System::name().unwrap_or_default(),
        os_version: System::long_os_version()
            .or_else(System::os_version)
            .unwrap_or_default(),
        kernel: System::kernel_version().unwrap_or_default(),
        compiler: compiler.to_string(),
        work_dir: fs_facts(dirs.work_dir, &mounts),
        build_cache: fs_facts(dirs.build_cache, &mounts),
        data_dir: fs_facts(dirs.data_root, &mounts),
        wal_dir: fs_facts(dirs.wal_root, &mounts),
        warnings: Vec::new(),
    }
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
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
    /// `major:minor` of the filesystem's device.
    pub dev: String,
    pub options: String,
    pub super_options: String,
}

/// Parses /proc/self/mountinfo lines:
/// `id parent maj:min root mount_point options [optional...] - fstype source superopts`.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let mut r = right.split(' ');
            let fs_type = r.next()?.to_string();
            let device = r.next().unwrap_or("").to_string();
            Some(Mount {
                mount_point: PathBuf::from(unescape(l.get(4)?)),
                fs_type,
                device: unescape(&device),
                dev: l.get(2)?.to_string(),
                options: l.get(5).unwrap_or(&"").to_string(),
                super_options: r.next().unwrap_or("").to_string(),
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

pub fn fs_facts(path: &Path, mounts: &[Mount]) -> Option<FsFacts> {
    // The directory may not exist yet: describe its nearest existing ancestor.
    let existing = path.ancestors().find(|p| p.exists())?;
    let canonical = existing.canonicalize().ok()?;
    let m = mount_for(&canonical, mounts);
    let st = nix::sys::statvfs::statvfs(&canonical).ok();
    let (disk, rotational, read_ahead_kb) = m.map(|m| block_device(&m.dev)).unwrap_or_default();
    Some(FsFacts {
        path: path.display().to_string(),
        mount_point: m
            .map(|m| m.mount_point.display().to_string())
            .unwrap_or_default(),
        device: m.map(|m| m.device.clone()).unwrap_or_default(),
        fs_type: m.map(|m| m.fs_type.clone()).unwrap_or_default(),
        block_size: st.as_ref().map(|s| s.block_size()).unwrap_or(0),
        fragment_size: st.as_ref().map(|s| s.fragment_size()).unwrap_or(0),
        mount_options: m.map(|m| m.options.clone()).unwrap_or_default(),
        super_options: m.map(|m| m.super_options.clone()).unwrap_or_default(),
        disk,
        rotational,
        read_ahead_kb,
    })
}

/// The disk behind a `major:minor` (a partition resolves to its disk) with its queue's
/// rotational flag and read-ahead.
fn block_device(dev: &str) -> (String, Option<bool>, Option<u64>) {
    let sys = Path::new("/sys/dev/block").join(dev);
    let Ok(mut real) = sys.canonicalize() else {
        return Default::default();
    };
    if real.join("partition").exists()
        && let Some(parent) = real.parent()
    {
        real = parent.to_path_buf();
    }
    let disk = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let queue = real.join("queue");
    let rotational = read_trimmed(queue.join("rotational")).map(|v| v == "1");
    let read_ahead = read_trimmed(queue.join("read_ahead_kb")).and_then(|v| v.parse().ok());
    (disk, rotational, read_ahead)
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
        assert_eq!(m.dev, "259:3");
        assert_eq!(m.options, "rw,relatime");
        assert_eq!(m.super_options, "rw,attr2");
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
        let facts = collect(
            &FactDirs {
                work_dir: &dir.path().join("not/yet"),
                build_cache: dir.path(),
                data_root: dir.path(),
                wal_root: &dir.path().join("wal"),
            },
            "gcc (X) 1.2",
        );
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
        for fs in ["work_dir", "build_cache", "data_dir", "wal_dir"] {
            let f = &v[fs];
            for key in [
                "mount_point",
                "device",
                "fs_type",
                "block_size",
                "mount_options",
                "disk",
                "rotational",
                "read_ahead_kb",
            ] {
                assert!(f.get(key).is_some(), "missing {fs}.{key} in {v}");
            }
            assert!(!f["fs_type"].as_str().unwrap().is_empty(), "{v}");
            assert!(f["block_size"].as_u64().unwrap() >= 512, "{v}");
        }
        // On a block device (not tmpfs) the disk and its queue are found.
        if v["data_dir"]["device"]
            .as_str()
            .unwrap()
            .starts_with("/dev/")
        {
            assert!(!v["data_dir"]["disk"].as_str().unwrap().is_empty(), "{v}");
            assert!(v["data_dir"]["rotational"].is_boolean(), "{v}");
            assert!(v["data_dir"]["read_ahead_kb"].is_u64(), "{v}");
        }
    }

    #[test]
    fn partition_resolves_to_its_disk() {
        // Any real partition on this machine; skip quietly where there is none.
        let Ok(rd) = std::fs::read_dir("/sys/class/block") else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if let Some(dev) = read_trimmed(p.join("dev"))
                && p.join("partition").exists()
            {
                let (disk, rot, _) = block_device(&dev);
                let name = e.file_name().to_string_lossy().into_owned();
                assert!(name.starts_with(&disk) && disk != name, "{name} -> {disk}");
                assert!(rot.is_some());
                return;
            }
        }
    }
}
