//! Host facts sent in the hello: cpu, cores, memory, os, kernel.

use serde_json::json;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The first `key : value` line of a /proc-style file whose key is `key`.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

pub fn hostname() -> String {
    read("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "worker".to_string())
}

/// The facts as a JSON object.
pub fn facts_json() -> String {
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let meminfo = read("/proc/meminfo").unwrap_or_default();
    let memory_bytes = field(&meminfo, "MemTotal")
        .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024);
    let os = read("/etc/os-release").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    });
    json!({
        "hostname": hostname(),
        "cpu_model": field(&cpuinfo, "model name"),
        "cpu_cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "memory_bytes": memory_bytes,
        "os": os.unwrap_or_else(|| std::env::consts::OS.to_string()),
        "kernel": read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
        "arch": std::env::consts::ARCH,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_a_json_object_with_cores() {
        let v: serde_json::Value = serde_json::from_str(&facts_json()).unwrap();
        assert!(v["cpu_cores"].as_u64().unwrap() >= 1);
        assert!(v["os"].is_string());
        assert_eq!(
            field("a : 1\nmodel name\t: X Y\n", "model name").as_deref(),
            Some("X Y")
        );
    }
}
