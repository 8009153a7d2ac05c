//! `blocklab-agent doctor`: what on this host makes benchmarks noisy, one check per line with
//! `ok` or `warn` and the value seen (pyperf's `system show` is the model). The same checks
//! give the `warnings` of the host facts sent at hello, which each run stores.

use std::fmt;
use std::path::Path;

mod parse;

pub use parse::{flag, load, selected, swap_used_kb};

/// Free space under the data or WAL directory below which a check warns.
const LOW_FREE_BYTES: u64 = 10 << 30;
/// A 1-minute load average at or above this means other processes compete for the CPUs.
const BUSY_LOAD: f64 = 1.0;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
        }
    }
}

/// One check: its name, outcome and the value it saw (with why it warns).
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub value: String,
}

impl Check {
    fn new(name: impl Into<String>, level: Level, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            level,
            value: value.into(),
        }
    }

    /// `name: value`, the form a run stores a warning in.
    pub fn warning(&self) -> String {
        format!("{}: {}", self.name, self.value)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<5} {:<28} {}",
            self.level.as_str(),
            self.name,
            self.value
        )
    }
}

/// The names of the checks, in the order they are printed.
pub const CHECK_NAMES: &[&str] = &[
    "cpu frequency governor",
    "turbo boost",
    "smt",
    "transparent huge pages",
    "swap in use",
    "load",
    "disk scheduler (data)",
    "write cache (data)",
    "free space (data)",
    "disk scheduler (wal)",
    "write cache (wal)",
    "free space (wal)",
];

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Runs every check (blocking: reads /proc and /sys) for the data and WAL directories.
pub fn checks(data_root: &Path, wal_root: &Path) -> Vec<Check> {
    let mut out = vec![governor(), turbo(), smt(), huge_pages(), swap(), busy()];
    for (what, dir) in [("data", data_root), ("wal", wal_root)] {
        out.extend(disk(what, dir));
    }
    out
}

/// The warnings among `checks`, as `name: value`.
pub fn warnings(checks: &[Check]) -> Vec<String> {
    checks
        .iter()
        .filter(|c| c.level == Level::Warn)
        .map(Check::warning)
        .collect()
}

fn governor() -> Check {
    let name = CHECK_NAMES[0];
    let mut governors: Vec<String> = (0..4096)
        .map_while(|i| {
            let cpu = format!("/sys/devices/system/cpu/cpu{i}");
            Path::new(&cpu)
                .exists()
                .then(|| read(format!("{cpu}/cpufreq/scaling_governor")))
        })
        .flatten()
        .map(|g| g.trim().to_string())
        .collect();
    governors.sort();
    governors.dedup();
    match governors.as_slice() {
        [] => Check::new(
            name,
            Level::Ok,
            "no cpufreq (the kernel sets no frequency policy)",
        ),
        [g] if g == "performance" => Check::new(name, Level::Ok, g.as_str()),
        gs => Check::new(
            name,
            Level::Warn,
            format!("{} (use performance for steady clocks)", gs.join(", ")),
        ),
    }
}

fn turbo() -> Check {
    let name = CHECK_NAMES[1];
    if let Some(no_turbo) =
        read("/sys/devices/system/cpu/intel_pstate/no_turbo").and_then(|t| flag(&t))
    {
        return if no_turbo {
            Check::new(name, Level::Ok, "off (intel_pstate/no_turbo = 1)")
        } else {
            Check::new(
                name,
                Level::Warn,
                "on (intel_pstate/no_turbo = 0): clocks vary with heat and load",
            )
        };
    }
    match read("/sys/devices/system/cpu/cpufreq/boost").and_then(|t| flag(&t)) {
        Some(true) => Check::new(
            name,
            Level::Warn,
            "on (cpufreq/boost = 1): clocks vary with heat and load",
        ),
        Some(false) => Check::new(name, Level::Ok, "off (cpufreq/boost = 0)"),
        None => Check::new(name, Level::Ok, "not exposed by the kernel"),
    }
}

fn smt() -> Check {
    let name = CHECK_NAMES[2];
    let control = read("/sys/devices/system/cpu/smt/control").map(|t| t.trim().to_string());
    match read("/sys/devices/system/cpu/smt/active").and_then(|t| flag(&t)) {
        Some(true) => Check::new(name, Level::Warn, "active: sibling threads share cores"),
        Some(false) => Check::new(
            name,
            Level::Ok,
            format!(
                "inactive (control {})",
                control.as_deref().unwrap_or("unknown")
            ),
        ),
        None => Check::new(name, Level::Ok, "not exposed by the kernel"),
    }
}

fn huge_pages() -> Check {
    let name = CHECK_NAMES[3];
    let text = read("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    match selected(&text) {
        Some("always") => Check::new(
            name,
            Level::Warn,
            "always: khugepaged compaction stalls at random",
        ),
        Some(mode) => Check::new(name, Level::Ok, mode),
        None => Check::new(name, Level::Ok, "not exposed by the kernel"),
    }
}

fn swap() -> Check {
    let name = CHECK_NAMES[4];
    match read("/proc/meminfo").as_deref().and_then(swap_used_kb) {
        Some(0) => Check::new(name, Level::Ok, "0 kB"),
        Some(kb) => Check::new(
            name,
            Level::Warn,
            format!("{kb} kB: pages come back from disk"),
        ),
        None => Check::new(name, Level::Warn, "cannot read /proc/meminfo"),
    }
}

fn busy() -> Check {
    let name = CHECK_NAMES[5];
    match read("/proc/loadavg").as_deref().and_then(load) {
        Some((l, running)) if l >= BUSY_LOAD => Check::new(
            name,
            Level::Warn,
            format!("{l:.2} (1-minute average; {running} runnable): other processes are busy"),
        ),
        Some((l, running)) => Check::new(
            name,
            Level::Ok,
            format!("{l:.2} (1-minute average; {running} runnable)"),
        ),
        None => Check::new(name, Level::Warn, "cannot read /proc/loadavg"),
    }
}

/// The scheduler, write cache and free space of the disk under `dir`.
fn disk(what: &str, dir: &Path) -> Vec<Check> {
    let mounts = read("/proc/self/mountinfo")
        .map(|t| crate::facts::parse_mountinfo(&t))
        .unwrap_or_default();
    let fs = crate::facts::fs_facts(dir, &mounts);
    let disk = fs.as_ref().map(|f| f.disk.clone()).unwrap_or_default();
    let queue = Path::new("/sys/block").join(&disk).join("queue");
    let no_disk = || {
        format!(
            "no block device under {} ({})",
            dir.display(),
            fs.as_ref()
                .map(|f| f.fs_type.as_str())
                .unwrap_or("not found")
        )
    };
    let scheduler = if disk.is_empty() {
        Check::new(format!("disk scheduler ({what})"), Level::Ok, no_disk())
    } else {
        let text = read(queue.join("scheduler")).unwrap_or_default();
        match selected(&text) {
            Some(s @ ("bfq" | "cfq")) => Check::new(
                format!("disk scheduler ({what})"),
                Level::Warn,
                format!("{disk}: {s} (fair queueing adds latency; use none or mq-deadline)"),
            ),
            Some(s) => Check::new(
                format!("disk scheduler ({what})"),
                Level::Ok,
                format!("{disk}: {s}"),
            ),
            None => Check::new(
                format!("disk scheduler ({what})"),
                Level::Ok,
                format!("{disk}: not exposed"),
            ),
        }
    };
    let cache = if disk.is_empty() {
        Check::new(format!("write cache ({what})"), Level::Ok, no_disk())
    } else {
        match read(queue.join("write_cache")).map(|t| t.trim().to_string()) {
            Some(c) if c == "write back" => Check::new(
                format!("write cache ({what})"),
                Level::Warn,
                format!("{disk}: write back (fsync timings depend on the device's cache flushes)"),
            ),
            Some(c) => Check::new(
                format!("write cache ({what})"),
                Level::Ok,
                format!("{disk}: {c}"),
            ),
            None => Check::new(
                format!("write cache ({what})"),
                Level::Ok,
                format!("{disk}: not exposed"),
            ),
        }
    };
    let existing = dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let space = match nix::sys::statvfs::statvfs(existing) {
        Ok(st) => {
            let free = st.blocks_available() * st.fragment_size();
            let total = st.blocks() * st.fragment_size();
            let value = format!(
                "{:.1} GiB free of {:.1} GiB under {}",
                free as f64 / f64::from(1u32 << 30),
                total as f64 / f64::from(1u32 << 30),
                existing.display()
            );
            if free < LOW_FREE_BYTES {
                Check::new(
                    format!("free space ({what})"),
                    Level::Warn,
                    format!("{value}: below 10 GiB"),
                )
            } else {
                Check::new(format!("free space ({what})"), Level::Ok, value)
            }
        }
        Err(e) => Check::new(
            format!("free space ({what})"),
            Level::Warn,
            format!("cannot statvfs {}: {e}", existing.display()),
        ),
    };
    vec![scheduler, cache, space]
}

/// The report `doctor` prints: a header line, then one line per check.
pub fn render(checks: &[Check]) -> String {
    let mut out = format!("{:<5} {:<28} value\n", "", "check");
    for c in checks {
        out.push_str(&c.to_string());
        out.push('\n');
    }
    let warned = checks.iter().filter(|c| c.level == Level::Warn).count();
    out.push_str(&format!("{warned} warning(s) of {} checks\n", checks.len()));
    out
}
