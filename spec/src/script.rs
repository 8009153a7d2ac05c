//! What a pgbench workload runs beyond a built-in: the user's scripts (their text, sent with
//! the submission), `-D` variables, rate and latency limits, retries, `-C`, `-t`, the random
//! seed, `-r`; and how each run's database gets its data (`[workload.init]`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The files a submission sends beside the spec text: path as the spec names it → text.
pub type Files = std::collections::BTreeMap<String, String>;

/// One script of the mix and its weight (pgbench's `-f file@w` / `-b name@w`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightedScript {
    pub source: ScriptSource,
    pub weight: u32,
}

/// A built-in script, or a file of the user's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScriptSource {
    Builtin(String),
    File(UserFile),
}

impl ScriptSource {
    /// The name a run's results use for the script: the built-in's or the file's.
    pub fn name(&self) -> &str {
        match self {
            ScriptSource::Builtin(b) => b,
            ScriptSource::File(f) => &f.name,
        }
    }
}

/// A file the spec names, as the submission sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFile {
    /// The path as the spec writes it.
    pub name: String,
    pub text: String,
    /// Hex sha256 of `text`.
    pub sha256: String,
}

impl UserFile {
    pub fn new(name: &str, text: &str) -> Self {
        use sha2::Digest;
        UserFile {
            name: name.to_string(),
            text: text.to_string(),
            sha256: hex::encode(sha2::Sha256::digest(text.as_bytes())),
        }
    }
}

/// pgbench's run options of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PgbenchOptions {
    /// The mix; empty = the workload's `builtin`.
    pub scripts: Vec<WeightedScript>,
    /// `-D name=value`, in name order.
    pub variables: Vec<(String, String)>,
    /// `-R`: transactions per second of the whole run (0 = unthrottled).
    pub rate: f64,
    /// `-L`
    pub latency_limit: Option<Duration>,
    /// `--max-tries` (0 = unlimited within the time and latency limits).
    pub max_tries: u32,
    /// With `max_tries = 0` and `transactions`: how long retries may go on (pgbench's `-T`).
    pub retry_time_limit: Option<Duration>,
    /// `-C`
    pub connect_per_transaction: bool,
    /// `-t`: transactions per client instead of the duration (0 = the duration).
    pub transactions: u64,
    /// `--random-seed`: the spec's, or the one chosen when the job was submitted (the one
    /// TPC-C-like and AS3AP-like runs draw from too).
    pub random_seed: Option<u64>,
    /// `-r`
    pub statement_latencies: bool,
    /// Count SQL errors as failed transactions and go on (else the client aborts).
    pub continue_on_error: bool,
}

impl PgbenchOptions {
    /// The mix and the options set, for people (`builtin` when there are no scripts).
    pub fn describe(&self, builtin: &str) -> String {
        let mut out = if self.scripts.is_empty() {
            builtin.to_string()
        } else {
            self.scripts
                .iter()
                .map(|s| format!("{}@{}", s.source.name(), s.weight))
                .collect::<Vec<_>>()
                .join(" + ")
        };
        if self.rate > 0.0 {
            out.push_str(&format!(", rate {} tps", self.rate));
        }
        if let Some(l) = self.latency_limit {
            out.push_str(&format!(", latency limit {l:?}"));
        }
        if self.max_tries != 1 {
            out.push_str(&format!(", max tries {}", self.max_tries));
        }
        if self.connect_per_transaction {
            out.push_str(", a connection per transaction");
        }
        if !self.variables.is_empty() {
            out.push_str(&format!(", {} variable(s)", self.variables.len()));
        }
        if let Some(seed) = self.random_seed {
            out.push_str(&format!(", seed {seed}"));
        }
        out
    }
}

impl Default for PgbenchOptions {
    fn default() -> Self {
        PgbenchOptions {
            scripts: Vec::new(),
            variables: Vec::new(),
            rate: 0.0,
            latency_limit: None,
            max_tries: 1,
            retry_time_limit: None,
            connect_per_transaction: false,
            transactions: 0,
            random_seed: None,
            statement_latencies: false,
            continue_on_error: true,
        }
    }
}

/// How each run's database gets its data before the first window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DataInit {
    /// pgbench's tables (`pgbench -i`) with `pgbench_options`.
    pub pgbench: bool,
    pub pgbench_options: PgbenchInit,
    /// A `pg_dump` archive on the agent's host, restored with the build's `pg_restore`.
    pub dump: Option<String>,
    /// SQL run once through a worker, after the dump and the pgbench tables.
    pub sql: Option<UserFile>,
}

impl Default for DataInit {
    fn default() -> Self {
        DataInit {
            pgbench: true,
            pgbench_options: PgbenchInit::default(),
            dump: None,
            sql: None,
        }
    }
}

impl DataInit {
    /// One line for people.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.pgbench {
            parts.push("pgbench tables".to_string());
        }
        if let Some(d) = &self.dump {
            parts.push(format!("restore {d}"));
        }
        if let Some(s) = &self.sql {
            parts.push(format!("sql {} (sha256 {})", s.name, &s.sha256[..12]));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", then ")
        }
    }
}

/// `pgbench -i` options.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PgbenchInit {
    /// `-I` steps (empty = pgbench's "dtgvp").
    pub steps: String,
    /// `-F` (0 = 100).
    pub fillfactor: u32,
    pub partitions: u32,
    /// range | hash (None = range).
    pub partition_method: Option<String>,
    pub unlogged: bool,
    pub foreign_keys: bool,
}
