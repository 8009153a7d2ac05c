//! The spec as written: serde structures that refuse unknown keys.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub name: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub repetitions: RawRepetitions,
    /// `budget = "10m"`: the measured runs' time that adaptive repetitions may spend.
    #[serde(default)]
    pub budget: Option<String>,
    /// `search = "race"`: cells significantly worse than the best leave after each round.
    #[serde(default)]
    pub search: Option<String>,
    /// With `kind = "series"`: the points in order, each a `[sources.<name>]`.
    #[serde(default)]
    pub series: Option<Vec<String>>,
    /// With `kind = "series"`: the commits of a git repository whose points `blocklab submit`
    /// lists as `series` and `[sources.<name>]`.
    #[serde(default)]
    pub commits: Option<RawCommits>,
    #[serde(default)]
    pub order: Option<String>,
    #[serde(default)]
    pub equivalence_pct: Option<f64>,
    #[serde(default)]
    pub suspect_runs: Option<String>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub baseline: Option<RawBaseline>,
    #[serde(default)]
    pub memory_policy: Option<String>,
    #[serde(default)]
    pub source: Option<RawSource>,
    #[serde(default)]
    pub sources: BTreeMap<String, RawSource>,
    pub matrix: RawMatrix,
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub settings_variants: BTreeMap<String, BTreeMap<String, toml::Value>>,
    pub workload: RawWorkload,
    #[serde(default)]
    pub workload_variants: BTreeMap<String, RawWorkloadOverride>,
    #[serde(default)]
    pub layout: RawLayout,
    #[serde(default)]
    pub placement: RawPlacement,
}

pub(super) fn one() -> u32 {
    1
}

/// `repetitions = 5`, `repetitions = { min = 3, max = 20, target_ci_pct = 1.0 }` or
/// `repetitions = { min = 3, max = 20, until = "decided" }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawRepetitions {
    Fixed(i64),
    Adaptive(RawAdaptive),
}

impl Default for RawRepetitions {
    fn default() -> Self {
        RawRepetitions::Fixed(1)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdaptive {
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub target_ci_pct: Option<f64>,
    pub until: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBaseline {
    pub block_size_kb: Option<u32>,
    pub wal_block_size_kb: Option<u32>,
    pub source: Option<String>,
    #[serde(default)]
    pub compare_sources: Option<bool>,
    #[serde(default)]
    pub settings_variant: Option<String>,
    #[serde(default)]
    pub workload_variant: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    #[serde(default)]
    pub tarball: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub git: Option<String>,
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    #[serde(default)]
    pub configure: Vec<String>,
    #[serde(default)]
    pub cflags: Option<String>,
}

/// `[commits]`: a series' points as commits of one repository.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCommits {
    pub git: String,
    #[serde(default)]
    pub range: Option<String>,
    #[serde(default)]
    pub every: Option<u32>,
    #[serde(default)]
    pub list: Option<Vec<String>>,
    #[serde(default)]
    pub configure: Vec<String>,
    #[serde(default)]
    pub cflags: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatrix {
    #[serde(default = "default_sizes")]
    pub block_size_kb: Vec<u32>,
    #[serde(default = "default_sizes")]
    pub wal_block_size_kb: Vec<u32>,
    #[serde(default)]
    pub vary: Option<String>,
    #[serde(default)]
    pub segsize_gb: Vec<u32>,
    #[serde(default)]
    pub wal_segsize_mb: Vec<u32>,
    #[serde(default = "default_clients")]
    pub clients: Vec<u32>,
    #[serde(default)]
    pub scale: Vec<u32>,
    #[serde(default)]
    pub replicate_baseline: bool,
}

fn default_sizes() -> Vec<u32> {
    vec![8]
}
fn default_clients() -> Vec<u32> {
    vec![1]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub builtin: Option<String>,
    #[serde(default = "one")]
    pub scale: u32,
    #[serde(default)]
    pub duration: Option<String>,
    #[serde(default)]
    pub warmup: Option<String>,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default = "one")]
    pub threads: u32,
    #[serde(default)]
    pub keying_thinking: Option<bool>,
    #[serde(default)]
    pub time_scale: Option<f64>,
    #[serde(default)]
    pub check: Option<bool>,
    #[serde(default)]
    pub mixes: Option<Vec<String>>,
    #[serde(default)]
    pub single_user: Option<bool>,
    #[serde(default)]
    pub steps: Option<Vec<String>>,
    #[serde(default)]
    pub scripts: Option<Vec<RawScript>>,
    #[serde(default)]
    pub variables: Option<BTreeMap<String, toml::Value>>,
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub latency_limit: Option<String>,
    #[serde(default)]
    pub max_tries: Option<u32>,
    #[serde(default)]
    pub retry_time_limit: Option<String>,
    #[serde(default)]
    pub connect_per_transaction: Option<bool>,
    #[serde(default)]
    pub transactions: Option<u64>,
    #[serde(default)]
    pub random_seed: Option<u64>,
    #[serde(default)]
    pub statement_latencies: Option<bool>,
    #[serde(default)]
    pub continue_on_error: Option<bool>,
    /// `"pgbench"`, `"none"`, or a table `{ sql, dump, pgbench }`.
    #[serde(default)]
    pub init: Option<toml::Value>,
    #[serde(default)]
    pub fillfactor: Option<u32>,
    #[serde(default)]
    pub partitions: Option<u32>,
    #[serde(default)]
    pub partition_method: Option<String>,
    #[serde(default)]
    pub unlogged: Option<bool>,
    #[serde(default)]
    pub foreign_keys: Option<bool>,
    #[serde(default)]
    pub init_steps: Option<String>,
}

/// A workload variant: any field of `[workload]`, overriding it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkloadOverride {
    pub builtin: Option<String>,
    pub scale: Option<u32>,
    pub duration: Option<String>,
    pub warmup: Option<String>,
    pub protocol: Option<String>,
    pub threads: Option<u32>,
    pub keying_thinking: Option<bool>,
    pub time_scale: Option<f64>,
    pub check: Option<bool>,
    pub mixes: Option<Vec<String>>,
    pub single_user: Option<bool>,
    pub steps: Option<Vec<String>>,
    pub scripts: Option<Vec<RawScript>>,
    pub variables: Option<BTreeMap<String, toml::Value>>,
    pub rate: Option<f64>,
    pub latency_limit: Option<String>,
    pub max_tries: Option<u32>,
    pub retry_time_limit: Option<String>,
    pub connect_per_transaction: Option<bool>,
    pub transactions: Option<u64>,
    pub random_seed: Option<u64>,
    pub statement_latencies: Option<bool>,
    pub continue_on_error: Option<bool>,
    pub init: Option<toml::Value>,
    pub fillfactor: Option<u32>,
    pub partitions: Option<u32>,
    pub partition_method: Option<String>,
    pub unlogged: Option<bool>,
    pub foreign_keys: Option<bool>,
    pub init_steps: Option<String>,
}

/// One script of `workload.scripts`: `{ file = "mine.sql", weight = 2 }` or
/// `{ builtin = "select-only" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScript {
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub builtin: Option<String>,
    #[serde(default)]
    pub weight: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLayout {
    #[serde(default)]
    pub separate_wal: bool,
    /// Archive the WAL through the `basic_archive` module into a directory of the agent's.
    #[serde(default)]
    pub archive_wal: bool,
    #[serde(default)]
    pub drop_os_cache: bool,
    #[serde(default)]
    pub checkpoint_before: Option<bool>,
    #[serde(default)]
    pub cold: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlacement {
    #[serde(default)]
    pub db_host_labels: Vec<String>,
    #[serde(default)]
    pub client_workers: Option<u32>,
    #[serde(default)]
    pub host_wait: Option<String>,
    #[serde(default)]
    pub db_hosts: Option<u32>,
    #[serde(default)]
    pub same_hardware: Option<bool>,
}
