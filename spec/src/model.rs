//! The validated spec and its expansion: cells (matrix points), runs (cell x repetition) in
//! run order, builds.

use std::fmt;
use std::time::Duration;

pub use crate::judging::{Adaptive, Analysis, Search};
use crate::memory::MemoryPolicy;
use crate::script::{DataInit, PgbenchOptions};
use crate::state::WorkloadName;

/// How runs of different cells are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RunOrder {
    /// Repetition-major round robin: A B C A B C ...
    Interleaved,
    /// A seeded shuffle of all runs; the seed is recorded.
    Shuffled { seed: u64 },
    /// Cell-major: A A A B B B ...
    Sequential,
    /// Randomized blocks: each round (one run of every cell) in a fresh seeded shuffle.
    RandomizedBlock { seed: u64 },
}

impl RunOrder {
    pub fn seed(&self) -> Option<u64> {
        match self {
            RunOrder::Shuffled { seed } | RunOrder::RandomizedBlock { seed } => Some(*seed),
            _ => None,
        }
    }
}

impl fmt::Display for RunOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOrder::Interleaved => f.write_str("interleaved"),
            RunOrder::Shuffled { seed } => write!(f, "shuffled(seed={seed})"),
            RunOrder::Sequential => f.write_str("sequential"),
            RunOrder::RandomizedBlock { seed } => write!(f, "randomized-block(seed={seed})"),
        }
    }
}

/// Which page-size points the matrix covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Vary {
    /// Each data page size at the baseline WAL size, and each WAL size at the baseline data size.
    OneAtATime,
    /// Every data page size with every WAL page size.
    All,
}

/// Where a PostgreSQL source comes from, and how it is configured.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Source {
    pub tarball: String,
    pub url: String,
    pub sha256: String,
    pub git_url: String,
    pub git_ref: String,
    pub configure: Vec<String>,
    pub cflags: Vec<String>,
}

impl Source {
    pub fn describe(&self) -> String {
        if !self.tarball.is_empty() {
            self.tarball.clone()
        } else if !self.url.is_empty() {
            self.url.clone()
        } else {
            format!("{}@{}", self.git_url, self.git_ref)
        }
    }
}

/// What the workers run in each measured window.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub builtin: String,
    pub scale: u32,
    pub duration: Duration,
    pub warmup: Duration,
    pub protocol: String,
    pub threads: u32,
    /// pgbench's run options (scripts, variables, rate, limits, retries, seed, ...).
    #[serde(default)]
    pub pgbench: PgbenchOptions,
    /// How each run's database gets its data.
    #[serde(default)]
    pub init: DataInit,
    /// `duration = "auto"` (with a `budget`): the coordinator chooses the window at submit
    /// from earlier like jobs (`blocklab_report::pilot`); `duration` holds the choice, or
    /// [`AUTO_PILOT_WINDOW`] without history.
    #[serde(default)]
    pub auto_window: bool,
}

/// The window of `duration = "auto"` when no earlier like job says better.
pub const AUTO_PILOT_WINDOW: Duration = Duration::from_secs(10);

/// Per-job choices about the cluster and the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    pub separate_wal: bool,
    /// Drop the OS page cache after the data load, just before the warm-up.
    pub drop_os_cache: bool,
    pub checkpoint_before: bool,
    /// Restart the server after the data load so the window starts with empty shared
    /// buffers (plans stored before this option read as false).
    #[serde(default)]
    pub cold: bool,
    /// Archive the WAL (`basic_archive` into the run's own directory, PostgreSQL 15+) and
    /// measure the bytes archived per transaction (plans stored before read as false).
    #[serde(default)]
    pub archive_wal: bool,
}

/// What differs between a cell and the cell it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Axis {
    PageSize,
    Segsize,
    WalSegsize,
    SettingsVariant,
    WorkloadVariant,
    Source,
    Replicate,
}

impl Axis {
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::PageSize => "page size",
            Axis::Segsize => "segsize",
            Axis::WalSegsize => "wal segsize",
            Axis::SettingsVariant => "settings variant",
            Axis::WorkloadVariant => "workload variant",
            Axis::Source => "source",
            Axis::Replicate => "replicate",
        }
    }
}

/// A validated experiment spec.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spec {
    pub name: String,
    pub repetitions: u32,
    pub order: RunOrder,
    /// Baseline data / WAL page sizes (KB) and source name.
    pub baseline: (u32, u32),
    pub baseline_source: String,
    pub memory_policy: MemoryPolicy,
    /// Named sources; a single `[source]` is named "default".
    pub sources: Vec<(String, Source)>,
    pub vary: Vary,
    pub block_sizes_kb: Vec<u32>,
    pub wal_block_sizes_kb: Vec<u32>,
    /// 0 = PostgreSQL's default.
    pub segsizes_gb: Vec<u32>,
    /// 0 = PostgreSQL's default.
    pub wal_segsizes_mb: Vec<u32>,
    pub clients: Vec<u32>,
    /// Scales to vary; empty = each workload's own scale.
    pub scales: Vec<u32>,
    /// Settings for every cell (memory already held constant).
    pub settings: Vec<(String, String)>,
    /// Named settings variants, each applied on top of `settings`; "default" = none.
    pub settings_variants: Vec<(String, Vec<(String, String)>)>,
    pub workload: Workload,
    /// Named workload variants; "default" = `workload`.
    pub workload_variants: Vec<(String, Workload)>,
    pub layout: Layout,
    pub db_host_labels: Vec<String>,
    pub client_workers: u32,
    /// How long a run may wait for its database host or its client workers before it fails.
    #[serde(default = "default_host_wait")]
    pub host_wait: std::time::Duration,
    /// Database hosts the job runs on at once, each a full replicate of the cells (every
    /// `db_hosts`-th repetition); the host is a block in the analysis.
    #[serde(default = "one")]
    pub db_hosts: u32,
    /// With several database hosts: they must report the same CPU model, logical CPUs,
    /// memory and data directory storage.
    #[serde(default = "yes")]
    pub same_hardware: bool,
    /// Adaptive repetitions (`repetitions` is then the minimum).
    #[serde(default)]
    pub adaptive: Option<Adaptive>,
    /// Every cell every round, or a race (plans stored before this option read as a grid).
    #[serde(default)]
    pub search: Search,
    #[serde(default)]
    pub analysis: Analysis,
    /// Cells of other sources at the baseline page sizes are compared with the baseline
    /// source's (a cross-version comparison); by default each source has its own baselines.
    #[serde(default)]
    pub compare_sources: bool,
    /// Each baseline cell is measured again as its own A/A cell.
    #[serde(default)]
    pub replicate_baseline: bool,
    /// `kind = "series"`: the sources in the series' order (empty: not a series).
    #[serde(default)]
    pub series: Vec<String>,
    /// The settings and workload variants other variants are compared with.
    #[serde(default)]
    pub baseline_settings_variant: String,
    #[serde(default)]
    pub baseline_workload_variant: String,
}

/// One matrix point.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    pub index: u32,
    pub source: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub segsize_gb: u32,
    pub wal_segsize_mb: u32,
    pub clients: u32,
    pub scale: u32,
    pub settings_variant: String,
    pub workload_variant: String,
    /// Compared with no other cell (the first value of every compared axis).
    pub is_baseline: bool,
    /// The cell this one is compared with, and what differs.
    #[serde(default)]
    pub baseline_cell: Option<u32>,
    #[serde(default)]
    pub compared_on: Option<Axis>,
    /// An A/A cell: its baseline cell's build and settings measured again.
    #[serde(default)]
    pub replicate: bool,
    /// The cell at the baseline page sizes whose memory settings, in bytes, this cell's
    /// server gets (unset in plans stored before memory was held this way).
    #[serde(default)]
    pub memory_reference: Option<u32>,
}

/// One measurement: a cell at a repetition, at a position in the run order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlannedRun {
    pub sequence: u32,
    pub cell_index: u32,
    pub repetition: u32,
}

/// Cells and runs of a job, in execution order.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub runs: Vec<PlannedRun>,
}

/// What identifies a PostgreSQL build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BuildPoint {
    pub source: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub segsize_gb: u32,
    pub wal_segsize_mb: u32,
}

impl Cell {
    /// Short label: page sizes and clients, plus every other dimension the job varies.
    pub fn label_in(&self, spec: &Spec) -> String {
        let mut l = format!(
            "bs={}K wal={}K c={}",
            self.block_size_kb, self.wal_block_size_kb, self.clients
        );
        if spec.sources.len() > 1 {
            l.push_str(&format!(" src={}", self.source));
        }
        if spec.segsizes_gb.len() > 1 {
            l.push_str(&format!(" seg={}G", self.segsize_gb));
        }
        if spec.wal_segsizes_mb.len() > 1 {
            l.push_str(&format!(" walseg={}M", self.wal_segsize_mb));
        }
        if spec.scales.len() > 1 {
            l.push_str(&format!(" s={}", self.scale));
        }
        if spec.settings_variants.len() > 1 {
            l.push_str(&format!(" set={}", self.settings_variant));
        }
        if spec.workload_variants.len() > 1 {
            l.push_str(&format!(" wl={}", self.workload_variant));
        }
        if self.replicate {
            l.push_str(" A/A");
        }
        l
    }

    /// The dimensions other than page sizes, as a JSON object (for the catalog).
    pub fn dims_json(&self) -> String {
        let mut d = serde_json::json!({
            "source": self.source,
            "segsize_gb": self.segsize_gb,
            "wal_segsize_mb": self.wal_segsize_mb,
            "scale": self.scale,
            "settings": self.settings_variant,
            "workload": self.workload_variant,
        });
        if self.replicate {
            d["replicate"] = serde_json::Value::Bool(true);
        }
        d.to_string()
    }

    pub fn build_point(&self) -> BuildPoint {
        BuildPoint {
            source: self.source.clone(),
            block_size_kb: self.block_size_kb,
            wal_block_size_kb: self.wal_block_size_kb,
            segsize_gb: self.segsize_gb,
            wal_segsize_mb: self.wal_segsize_mb,
        }
    }
}

/// Any job's spec: a benchmark (the matrix of page sizes) or an I/O probe.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JobSpec {
    Benchmark(Box<Spec>),
    Probe(ProbeSpec),
}

impl JobSpec {
    pub fn name(&self) -> &str {
        match self {
            JobSpec::Benchmark(s) => &s.name,
            JobSpec::Probe(p) => &p.name,
        }
    }
}

impl Spec {
    /// The (data, WAL) page-size points of the matrix.
    pub fn page_points(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        let mut push = |p: (u32, u32)| {
            if !out.contains(&p) {
                out.push(p);
            }
        };
        match self.vary {
            Vary::All => {
                for &bs in &self.block_sizes_kb {
                    for &wal in &self.wal_block_sizes_kb {
                        push((bs, wal));
                    }
                }
            }
            Vary::OneAtATime => {
                for &bs in &self.block_sizes_kb {
                    push((bs, self.baseline.1));
                }
                for &wal in &self.wal_block_sizes_kb {
                    push((self.baseline.0, wal));
                }
            }
        }
        out
    }

    /// The distinct builds this job needs, in first-use order.
    pub fn builds(&self) -> Vec<BuildPoint> {
        let mut out: Vec<BuildPoint> = Vec::new();
        for c in self.plan().cells {
            let p = c.build_point();
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    pub fn source(&self, name: &str) -> Option<&Source> {
        self.sources.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The settings a cell's server gets: the common ones, then its variant's.
    pub fn cell_settings(&self, cell: &Cell) -> Vec<(String, String)> {
        let mut out = self.settings.clone();
        if let Some((_, extra)) = self
            .settings_variants
            .iter()
            .find(|(n, _)| *n == cell.settings_variant)
        {
            for (name, value) in extra {
                out.retain(|(n, _)| n != name);
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }

    pub fn cell_workload(&self, cell: &Cell) -> &Workload {
        self.workload_variants
            .iter()
            .find(|(n, _)| *n == cell.workload_variant)
            .map_or(&self.workload, |(_, w)| w)
    }
}

/// What a workload runs, with the choices only that kind has.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum WorkloadKind {
    /// pgbench's built-ins (the workload's `builtin` and `protocol`).
    Pgbench,
    /// TPC-C-like: `scale` warehouses, `clients` terminals.
    Tpcc {
        keying_thinking: bool,
        time_scale: f64,
        /// Run the consistency checks after each measured window.
        check: bool,
    },
    /// AS3AP-like: `scale` thousand rows per table, `clients` users in the mixes.
    As3ap {
        single_user: bool,
        mixes: Vec<String>,
    },
    /// Maintenance timings on `scale` x 100000 rows; no client workers.
    Maintenance { steps: Vec<String> },
}

impl WorkloadKind {
    /// Whether its runs draw from random streams the job's random seed starts (all but the
    /// maintenance timings).
    pub fn is_seeded(&self) -> bool {
        !matches!(self, WorkloadKind::Maintenance { .. })
    }

    pub fn name(&self) -> &'static str {
        self.kind_name().as_str()
    }

    pub fn kind_name(&self) -> WorkloadName {
        match self {
            WorkloadKind::Pgbench => WorkloadName::Pgbench,
            WorkloadKind::Tpcc { .. } => WorkloadName::Tpcc,
            WorkloadKind::As3ap { .. } => WorkloadName::As3ap,
            WorkloadKind::Maintenance { .. } => WorkloadName::Maintenance,
        }
    }

    /// Whether runs of this kind use client workers.
    pub fn has_workers(&self) -> bool {
        !matches!(self, WorkloadKind::Maintenance { .. })
    }

    /// Whether runs of this kind have a timed window of concurrent clients (and so need a
    /// duration and client workers).
    pub fn has_window(&self) -> bool {
        match self {
            WorkloadKind::Maintenance { .. } => false,
            WorkloadKind::As3ap { mixes, .. } => !mixes.is_empty(),
            _ => true,
        }
    }

    /// The metric `blocklab results` summarises by default for this kind.
    pub fn headline_metric(&self) -> &'static str {
        match self {
            WorkloadKind::Pgbench => "tps",
            WorkloadKind::Tpcc { .. } => "notpm",
            WorkloadKind::As3ap { mixes, .. } => match mixes.first().map(String::as_str) {
                Some("mixed-ir") => "mixed_ir.tup_per_s",
                Some(_) => "mixed_oltp.tup_per_s",
                None => "as3ap.single_user_s",
            },
            WorkloadKind::Maintenance { .. } => "maint.total_s",
        }
    }
}

impl Workload {
    /// One line for people: the kind, what `scale` and `clients` mean for it, the window.
    pub fn describe(&self) -> String {
        let auto = if self.auto_window {
            " (window chosen for the budget)"
        } else {
            ""
        };
        let window = if self.warmup.is_zero() {
            format!("{:?} measured{auto}", self.duration)
        } else {
            format!(
                "{:?} measured{auto} after {:?} warm-up",
                self.duration, self.warmup
            )
        };
        match &self.kind {
            WorkloadKind::Pgbench => format!(
                "pgbench {} ({} protocol), scale {}, {}, data: {}",
                self.pgbench.describe(&self.builtin),
                self.protocol,
                self.scale,
                if self.pgbench.transactions > 0 {
                    format!("{} transactions per client", self.pgbench.transactions)
                } else {
                    window
                },
                self.init.describe()
            ),
            WorkloadKind::Tpcc {
                keying_thinking,
                time_scale,
                check,
            } => format!(
                "tpcc, {} warehouse(s), clients = terminals, {window}, keying/thinking {}, consistency checks {}",
                self.scale,
                if *keying_thinking {
                    format!("on (x{time_scale})")
                } else {
                    "off".into()
                },
                if *check { "on" } else { "off" }
            ),
            WorkloadKind::As3ap { single_user, mixes } => format!(
                "as3ap, {} rows per table, single-user queries {}, mixes [{}] with clients = users{}",
                u64::from(self.scale) * 1000,
                if *single_user { "on" } else { "off" },
                mixes.join(", "),
                if mixes.is_empty() {
                    String::new()
                } else {
                    format!(", {window} each")
                }
            ),
            WorkloadKind::Maintenance { steps } => format!(
                "maintenance on {} rows: {} (done by the agent; no client workers)",
                u64::from(self.scale) * 100_000,
                steps.join(", ")
            ),
        }
    }
}

/// A validated probe job.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeSpec {
    pub name: String,
    pub repetitions: u32,
    pub targets: Vec<String>,
    pub file_size_bytes: u64,
    pub chunk_sizes_kb: Vec<u32>,
    pub buffered: bool,
    pub direct: bool,
    pub fsync_block_sizes_kb: Vec<u32>,
    pub fsync_writes: u32,
    pub db_host_labels: Vec<String>,
}

/// `placement.host_wait` when the spec gives none: long enough for a host's reboot or a
/// long job ahead on the shared workers.
pub const DEFAULT_HOST_WAIT: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

fn default_host_wait() -> std::time::Duration {
    DEFAULT_HOST_WAIT
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}
