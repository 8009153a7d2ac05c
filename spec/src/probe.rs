//! The I/O probe job kind: the direct-I/O chunk-size read test and a write+fdatasync latency
//! test, run by the agent on its data and WAL directories.

use serde::Deserialize;

use crate::error::SpecError;
use crate::limits::{MAX_SPEC_BYTES, WAL_BLOCK_SIZES_KB};
use crate::model::ProbeSpec;
use crate::state::JobKind;
use crate::validate::toml_error;

/// Chunk sizes the probe reads with, KB (4 KiB to 8 MiB, powers of two).
pub const PROBE_CHUNKS_KB: [u32; 12] = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbeSpec {
    name: String,
    kind: String,
    #[serde(default = "super::raw::one")]
    repetitions: u32,
    probe: RawProbe,
    #[serde(default)]
    placement: RawProbePlacement,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    #[serde(default = "default_targets")]
    targets: Vec<String>,
    #[serde(default = "default_size")]
    file_size: String,
    #[serde(default = "default_chunks")]
    chunk_sizes_kb: Vec<u32>,
    #[serde(default = "default_modes")]
    modes: Vec<String>,
    #[serde(default)]
    fsync_block_sizes_kb: Vec<u32>,
    #[serde(default = "default_writes")]
    fsync_writes: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbePlacement {
    #[serde(default)]
    db_host_labels: Vec<String>,
}

fn default_targets() -> Vec<String> {
    vec!["data".into()]
}
fn default_size() -> String {
    "256MB".into()
}
fn default_chunks() -> Vec<u32> {
    PROBE_CHUNKS_KB.to_vec()
}
fn default_modes() -> Vec<String> {
    vec!["buffered".into(), "direct".into()]
}
fn default_writes() -> u32 {
    200
}

/// The `kind` key of a spec: "benchmark" (default) or "probe".
pub fn spec_kind(text: &str) -> Result<JobKind, SpecError> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(SpecError::new(
            "spec",
            format!(
                "{} bytes is larger than the limit of {MAX_SPEC_BYTES}",
                text.len()
            ),
        ));
    }
    let table: toml::Table = toml::from_str(text).map_err(|e| toml_error(text, e))?;
    match table.get("kind") {
        None => Ok(JobKind::Benchmark),
        // A series is a benchmark whose sources are the points of one comparison.
        Some(toml::Value::String(k)) if k == "series" => Ok(JobKind::Benchmark),
        Some(toml::Value::String(k)) => k.parse().map_err(|_| {
            SpecError::new(
                "kind",
                format!("\"{k}\" is not allowed; use benchmark, series or probe"),
            )
        }),
        Some(other) => Err(SpecError::new(
            "kind",
            format!("{other} is not allowed; use benchmark, series or probe"),
        )),
    }
}

impl ProbeSpec {
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let raw: RawProbeSpec = toml::from_str(text).map_err(|e| toml_error(text, e))?;
        if raw.kind.parse() != Ok(JobKind::Probe) {
            return Err(SpecError::new("kind", "a probe spec has kind = \"probe\""));
        }
        if raw.name.trim().is_empty() || raw.name.len() > 200 {
            return Err(SpecError::new("name", "must be 1 to 200 characters"));
        }
        if !(1..=100).contains(&raw.repetitions) {
            return Err(SpecError::new("repetitions", "must be between 1 and 100"));
        }
        let p = raw.probe;
        if p.targets.is_empty() {
            return Err(SpecError::new("probe.targets", "must list data and/or wal"));
        }
        for (i, t) in p.targets.iter().enumerate() {
            if t != "data" && t != "wal" {
                return Err(SpecError::new(
                    format!("probe.targets[{i}]"),
                    format!("{t:?} is not allowed; use data or wal"),
                ));
            }
        }
        let size = parse_size(&p.file_size).ok_or_else(|| {
            SpecError::new(
                "probe.file_size",
                format!(
                    "cannot parse {:?}; write e.g. \"256MB\" or \"1GB\"",
                    p.file_size
                ),
            )
        })?;
        if !(1 << 20..=64 << 30).contains(&size) {
            return Err(SpecError::new(
                "probe.file_size",
                "must be between 1MB and 64GB",
            ));
        }
        for (i, c) in p.chunk_sizes_kb.iter().enumerate() {
            if !PROBE_CHUNKS_KB.contains(c) {
                return Err(SpecError::new(
                    format!("probe.chunk_sizes_kb[{i}]"),
                    format!("{c} is not allowed; use powers of two from 4 to 8192"),
                ));
            }
        }
        for (i, m) in p.modes.iter().enumerate() {
            if m != "buffered" && m != "direct" {
                return Err(SpecError::new(
                    format!("probe.modes[{i}]"),
                    format!("{m:?} is not allowed; use buffered or direct"),
                ));
            }
        }
        for (i, b) in p.fsync_block_sizes_kb.iter().enumerate() {
            if !WAL_BLOCK_SIZES_KB.contains(b) {
                return Err(SpecError::new(
                    format!("probe.fsync_block_sizes_kb[{i}]"),
                    format!("{b} is not a WAL block size; use 1, 2, 4, 8, 16, 32 or 64"),
                ));
            }
        }
        if !(1..=100_000).contains(&p.fsync_writes) {
            return Err(SpecError::new(
                "probe.fsync_writes",
                "must be between 1 and 100000",
            ));
        }
        Ok(ProbeSpec {
            name: raw.name,
            repetitions: raw.repetitions,
            targets: p.targets,
            file_size_bytes: size,
            chunk_sizes_kb: p.chunk_sizes_kb,
            buffered: p.modes.iter().any(|m| m == "buffered"),
            direct: p.modes.iter().any(|m| m == "direct"),
            fsync_block_sizes_kb: p.fsync_block_sizes_kb,
            fsync_writes: p.fsync_writes,
            db_host_labels: raw.placement.db_host_labels,
        })
    }
}

/// "256MB", "1GB", "512kB", "1048576" → bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "kB" | "KB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBE: &str = r#"
name = "disks"
kind = "probe"
[probe]
targets = ["data", "wal"]
file_size = "64MB"
chunk_sizes_kb = [4, 64, 8192]
fsync_block_sizes_kb = [8, 16]
"#;

    #[test]
    fn probe_spec_parses() {
        assert_eq!(spec_kind(PROBE), Ok(JobKind::Probe));
        let p = ProbeSpec::parse(PROBE).expect("valid");
        assert_eq!(p.file_size_bytes, 64 << 20);
        assert!(p.buffered && p.direct);
        assert_eq!(p.targets, vec!["data", "wal"]);
    }

    #[test]
    fn probe_errors_name_the_field() {
        let e = ProbeSpec::parse(&PROBE.replace("[4, 64, 8192]", "[4, 3]")).expect_err("bad");
        assert_eq!(e.field, "probe.chunk_sizes_kb[1]");
        let e = ProbeSpec::parse(&PROBE.replace("\"64MB\"", "\"lots\"")).expect_err("bad");
        assert_eq!(e.field, "probe.file_size");
        let e = ProbeSpec::parse(&PROBE.replace("\"wal\"]", "\"tmp\"]")).expect_err("bad");
        assert_eq!(e.field, "probe.targets[1]");
        let e = spec_kind(&PROBE.replace("\"probe\"", "\"magic\"")).expect_err("bad");
        assert_eq!(e.field, "kind");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MB"), Some(256 << 20));
        assert_eq!(parse_size("1GB"), Some(1 << 30));
        assert_eq!(parse_size("10"), Some(10));
        assert_eq!(parse_size("1TB"), None);
    }
}
