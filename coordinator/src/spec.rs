//! The experiment spec (TOML): parsing, strict validation with errors that name the field,
//! and expansion into cells (matrix points) and runs (cell x repetition) in run order.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

/// Data page sizes PostgreSQL's configure accepts (`--with-blocksize`, KB).
pub const DATA_BLOCK_SIZES_KB: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// WAL page sizes PostgreSQL's configure accepts (`--with-wal-blocksize`, KB).
pub const WAL_BLOCK_SIZES_KB: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Built-in workloads the workers run.
pub const BUILTINS: [&str; 3] = ["tpcb-like", "simple-update", "select-only"];
/// Query protocols, as pgbench's `-M`.
pub const PROTOCOLS: [&str; 3] = ["simple", "extended", "prepared"];
/// Largest spec accepted, in bytes.
pub const MAX_SPEC_BYTES: usize = 256 * 1024;

/// A spec that failed to parse or validate: which field, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

impl SpecError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: String,
    #[serde(default = "one")]
    repetitions: u32,
    #[serde(default)]
    order: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    baseline: Option<RawBaseline>,
    source: RawSource,
    matrix: RawMatrix,
    #[serde(default)]
    settings: BTreeMap<String, toml::Value>,
    workload: RawWorkload,
    #[serde(default)]
    placement: RawPlacement,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBaseline {
    block_size_kb: Option<u32>,
    wal_block_size_kb: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    tarball: String,
    #[serde(default)]
    configure: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    #[serde(default = "default_sizes")]
    block_size_kb: Vec<u32>,
    #[serde(default = "default_sizes")]
    wal_block_size_kb: Vec<u32>,
    #[serde(default = "default_clients")]
    clients: Vec<u32>,
}

fn default_sizes() -> Vec<u32> {
    vec![8]
}
fn default_clients() -> Vec<u32> {
    vec![1]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    #[serde(default = "default_builtin")]
    builtin: String,
    #[serde(default = "one")]
    scale: u32,
    duration: String,
    #[serde(default)]
    warmup: Option<String>,
    #[serde(default = "default_protocol")]
    protocol: String,
    #[serde(default = "one")]
    threads: u32,
}

fn default_builtin() -> String {
    "tpcb-like".into()
}
fn default_protocol() -> String {
    "simple".into()
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlacement {
    #[serde(default)]
    db_host_labels: Vec<String>,
    #[serde(default)]
    client_workers: Option<u32>,
}

/// How runs of different cells are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOrder {
    /// Repetition-major round robin: A B C A B C ...
    Interleaved,
    /// A seeded shuffle of all runs; the seed is recorded.
    Shuffled { seed: u64 },
    /// Cell-major: A A A B B B ...
    Sequential,
}

impl fmt::Display for RunOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOrder::Interleaved => f.write_str("interleaved"),
            RunOrder::Shuffled { seed } => write!(f, "shuffled(seed={seed})"),
            RunOrder::Sequential => f.write_str("sequential"),
        }
    }
}

/// A validated experiment spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub name: String,
    pub repetitions: u32,
    pub order: RunOrder,
    pub baseline: (u32, u32),
    pub tarball: String,
    pub configure: Vec<String>,
    pub block_sizes_kb: Vec<u32>,
    pub wal_block_sizes_kb: Vec<u32>,
    pub clients: Vec<u32>,
    pub settings: Vec<(String, String)>,
    pub workload: Workload,
    pub db_host_labels: Vec<String>,
    pub client_workers: u32,
}

/// What the workers run in each measured window.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub builtin: String,
    pub scale: u32,
    pub duration: Duration,
    pub warmup: Duration,
    pub protocol: String,
    pub threads: u32,
}

/// One matrix point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub index: u32,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub clients: u32,
    pub is_baseline: bool,
}

impl Cell {
    pub fn label(&self) -> String {
        format!(
            "bs={}K wal={}K c={}",
            self.block_size_kb, self.wal_block_size_kb, self.clients
        )
    }
}

/// One measurement: a cell at a repetition, at a position in the run order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedRun {
    pub sequence: u32,
    pub cell_index: u32,
    pub repetition: u32,
}

/// Cells and runs of a job, in execution order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub runs: Vec<PlannedRun>,
}

impl Spec {
    /// Parses and validates spec text. Unknown keys, wrong types and disallowed values
    /// are refused with the field named.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        if text.len() > MAX_SPEC_BYTES {
            return Err(SpecError::new(
                "spec",
                format!(
                    "{} bytes is larger than the limit of {MAX_SPEC_BYTES}",
                    text.len()
                ),
            ));
        }
        let raw: RawSpec = toml::from_str(text).map_err(|e| toml_error(text, e))?;
        validate(raw)
    }

    /// Expands the matrix into cells and orders the runs.
    pub fn plan(&self) -> Plan {
        let mut cells = Vec::new();
        for &bs in &self.block_sizes_kb {
            for &wal in &self.wal_block_sizes_kb {
                for &clients in &self.clients {
                    let index = u32::try_from(cells.len()).unwrap_or(u32::MAX);
                    cells.push(Cell {
                        index,
                        block_size_kb: bs,
                        wal_block_size_kb: wal,
                        clients,
                        is_baseline: false,
                    });
                }
            }
        }
        let base = cells
            .iter()
            .position(|c| (c.block_size_kb, c.wal_block_size_kb) == self.baseline)
            .unwrap_or(0);
        if let Some(c) = cells.get_mut(base) {
            c.is_baseline = true;
        }
        let n = u32::try_from(cells.len()).unwrap_or(u32::MAX);
        let mut pairs: Vec<(u32, u32)> = match self.order {
            RunOrder::Sequential => (0..n)
                .flat_map(|c| (0..self.repetitions).map(move |r| (c, r)))
                .collect(),
            _ => (0..self.repetitions)
                .flat_map(|r| (0..n).map(move |c| (c, r)))
                .collect(),
        };
        if let RunOrder::Shuffled { seed } = self.order {
            shuffle(&mut pairs, seed);
        }
        let runs = pairs
            .into_iter()
            .enumerate()
            .map(|(i, (cell_index, repetition))| PlannedRun {
                sequence: u32::try_from(i).unwrap_or(u32::MAX),
                cell_index,
                repetition,
            })
            .collect();
        Plan { cells, runs }
    }

    /// The distinct (data, WAL) block-size pairs this job needs built.
    pub fn builds(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for &bs in &self.block_sizes_kb {
            for &wal in &self.wal_block_sizes_kb {
                if !out.contains(&(bs, wal)) {
                    out.push((bs, wal));
                }
            }
        }
        out
    }
}

fn toml_error(text: &str, e: toml::de::Error) -> SpecError {
    let msg = e.message().trim().to_string();
    let Some(span) = e.span() else {
        return SpecError::new(backticked(&msg).unwrap_or_else(|| "spec".into()), msg);
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    // The key on that line, prefixed by the table it sits in.
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let field = match (table, key, backticked(&msg)) {
        (_, _, Some(b)) if msg.starts_with("missing field") => b,
        (Some(t), Some(k), _) => format!("{t}.{k}"),
        (None, Some(k), _) => k,
        (_, None, Some(b)) => b,
        _ => "spec".into(),
    };
    SpecError::new(field, format!("{msg} (line {line_no})"))
}

fn backticked(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_string()).filter(|w| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    })
}

fn validate(raw: RawSpec) -> Result<Spec, SpecError> {
    if raw.name.trim().is_empty() || raw.name.len() > 200 {
        return Err(SpecError::new("name", "must be 1 to 200 characters"));
    }
    if !(1..=1000).contains(&raw.repetitions) {
        return Err(SpecError::new("repetitions", "must be between 1 and 1000"));
    }
    let order = match (raw.order.as_deref().unwrap_or("interleaved"), raw.seed) {
        ("interleaved", _) => RunOrder::Interleaved,
        ("sequential", _) => RunOrder::Sequential,
        ("shuffled", Some(seed)) => RunOrder::Shuffled { seed },
        ("shuffled", None) => RunOrder::Shuffled {
            seed: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1),
        },
        (other, _) => {
            return Err(SpecError::new(
                "order",
                format!("{other:?} is not allowed; use interleaved, shuffled or sequential"),
            ));
        }
    };
    if raw.source.tarball.trim().is_empty() {
        return Err(SpecError::new(
            "source.tarball",
            "must name a PostgreSQL source tarball",
        ));
    }
    for (i, flag) in raw.source.configure.iter().enumerate() {
        validate_configure_flag(flag)
            .map_err(|m| SpecError::new(format!("source.configure[{i}]"), m))?;
    }
    let m = &raw.matrix;
    check_sizes(
        "matrix.block_size_kb",
        &m.block_size_kb,
        &DATA_BLOCK_SIZES_KB,
    )?;
    check_sizes(
        "matrix.wal_block_size_kb",
        &m.wal_block_size_kb,
        &WAL_BLOCK_SIZES_KB,
    )?;
    if m.clients.is_empty() {
        return Err(SpecError::new(
            "matrix.clients",
            "must list at least one client count",
        ));
    }
    for (i, &c) in m.clients.iter().enumerate() {
        if !(1..=10_000).contains(&c) {
            return Err(SpecError::new(
                format!("matrix.clients[{i}]"),
                format!("{c} is not allowed; client counts are 1 to 10000"),
            ));
        }
    }
    let baseline = match &raw.baseline {
        Some(b) => (
            b.block_size_kb.unwrap_or(8),
            b.wal_block_size_kb.unwrap_or(8),
        ),
        None => (8, 8),
    };
    let in_matrix =
        m.block_size_kb.contains(&baseline.0) && m.wal_block_size_kb.contains(&baseline.1);
    let baseline = if in_matrix {
        baseline
    } else if raw.baseline.is_some() {
        return Err(SpecError::new(
            "baseline",
            format!(
                "{}K/{}K is not a cell of the matrix (block_size_kb {:?}, wal_block_size_kb {:?})",
                baseline.0, baseline.1, m.block_size_kb, m.wal_block_size_kb
            ),
        ));
    } else {
        (m.block_size_kb[0], m.wal_block_size_kb[0])
    };
    let mut settings = Vec::new();
    for (name, value) in &raw.settings {
        let field = format!("settings.{name}");
        if !valid_setting_name(name) {
            return Err(SpecError::new(
                field,
                "setting names are lowercase letters, digits, '_' and '.'",
            ));
        }
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => return Err(SpecError::new(field, "must be a string, number or boolean")),
        };
        if text.chars().any(|c| c.is_control()) || text.len() > 1024 {
            return Err(SpecError::new(
                field,
                "must be one line of at most 1024 characters",
            ));
        }
        settings.push((name.clone(), text));
    }
    let workload = validate_workload(&raw.workload)?;
    let client_workers = raw.placement.client_workers.unwrap_or(1);
    if client_workers != 1 {
        return Err(SpecError::new(
            "placement.client_workers",
            "only 1 is supported",
        ));
    }
    for (i, l) in raw.placement.db_host_labels.iter().enumerate() {
        if l.is_empty() || l.len() > 64 {
            return Err(SpecError::new(
                format!("placement.db_host_labels[{i}]"),
                "labels are 1 to 64 characters",
            ));
        }
    }
    Ok(Spec {
        name: raw.name,
        repetitions: raw.repetitions,
        order,
        baseline,
        tarball: raw.source.tarball,
        configure: raw.source.configure,
        block_sizes_kb: raw.matrix.block_size_kb,
        wal_block_sizes_kb: raw.matrix.wal_block_size_kb,
        clients: raw.matrix.clients,
        settings,
        workload,
        db_host_labels: raw.placement.db_host_labels,
        client_workers,
    })
}

fn validate_workload(w: &RawWorkload) -> Result<Workload, SpecError> {
    if !BUILTINS.contains(&w.builtin.as_str()) {
        return Err(SpecError::new(
            "workload.builtin",
            format!(
                "{:?} is not a built-in; use one of {}",
                w.builtin,
                BUILTINS.join(", ")
            ),
        ));
    }
    if !PROTOCOLS.contains(&w.protocol.as_str()) {
        return Err(SpecError::new(
            "workload.protocol",
            format!(
                "{:?} is not allowed; use one of {}",
                w.protocol,
                PROTOCOLS.join(", ")
            ),
        ));
    }
    if !(1..=100_000).contains(&w.scale) {
        return Err(SpecError::new(
            "workload.scale",
            "must be between 1 and 100000",
        ));
    }
    if !(1..=1024).contains(&w.threads) {
        return Err(SpecError::new(
            "workload.threads",
            "must be between 1 and 1024",
        ));
    }
    let duration = parse_duration("workload.duration", &w.duration)?;
    if duration.is_zero() {
        return Err(SpecError::new(
            "workload.duration",
            "must be longer than zero",
        ));
    }
    let warmup = match &w.warmup {
        Some(t) => parse_duration("workload.warmup", t)?,
        None => Duration::ZERO,
    };
    Ok(Workload {
        builtin: w.builtin.clone(),
        scale: w.scale,
        duration,
        warmup,
        protocol: w.protocol.clone(),
        threads: w.threads,
    })
}

fn parse_duration(field: &str, text: &str) -> Result<Duration, SpecError> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        SpecError::new(
            field,
            format!("cannot parse {text:?} as a duration ({e}); write e.g. \"90s\" or \"2min\""),
        )
    })?;
    if d > Duration::from_secs(24 * 3600) {
        return Err(SpecError::new(field, "must be at most 24h"));
    }
    Ok(d)
}

fn check_sizes(field: &str, values: &[u32], allowed: &[u32]) -> Result<(), SpecError> {
    if values.is_empty() {
        return Err(SpecError::new(field, "must list at least one size"));
    }
    for (i, v) in values.iter().enumerate() {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(u32::to_string).collect();
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!(
                    "{v} is not a size PostgreSQL allows; use one of {} (KB)",
                    list.join(", ")
                ),
            ));
        }
        if values[..i].contains(v) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{v} is listed twice"),
            ));
        }
    }
    Ok(())
}

/// A configure flag as the agent will accept it: `--name` or `--name=value`, no shell
/// metacharacters, and none of the flags blocklab sets itself.
pub fn validate_configure_flag(flag: &str) -> Result<(), String> {
    let Some(body) = flag.strip_prefix("--") else {
        return Err(format!("{flag:?} must start with --"));
    };
    let (name, value) = body.split_once('=').unwrap_or((body, ""));
    let name_ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let value_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./,:+-".contains(c));
    if !name_ok || !value_ok {
        return Err(format!(
            "{flag:?} is not a plain configure flag (letters, digits, '-', and a value of letters, digits and _./,:+-)"
        ));
    }
    if ["prefix", "with-blocksize", "with-wal-blocksize"].contains(&name) {
        return Err(format!(
            "{flag:?} is set by blocklab from the matrix; remove it"
        ));
    }
    Ok(())
}

fn valid_setting_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
}

/// Fisher-Yates with splitmix64, so a recorded seed reproduces the order on any build.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
