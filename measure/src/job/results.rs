//! A job's statistics: per-cell results of a metric against the baseline (or another job's
//! like cells), every workload metric's cells, own-workload figures and probe summaries.

use serde::{Deserialize, Serialize};

use crate::job::summary::JobSummary;

/// One cell's statistics of one metric, and its change against the cell it is compared with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub cell_index: u32,
    pub label: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub clients: u32,
    /// As read from the live servers of this cell's runs (0 if no run got that far).
    pub proven_block_size: u32,
    pub proven_wal_block_size: u32,
    pub runs_ok: u32,
    pub runs_total: u32,
    pub tps_mean: f64,
    pub tps_stddev: f64,
    pub latency_avg_ms_mean: f64,
    pub is_baseline: bool,
    /// Percent change of the metric against the baseline cell: of the mean (Welch), or within
    /// rounds or hosts as the comparison's model estimates it.
    pub pct_change_vs_baseline: Option<f64>,
    /// Statistics of the metric over this cell's measured runs.
    pub metric: String,
    pub mean: f64,
    pub stddev: f64,
    pub cv: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub pct_change_ci95_low: Option<f64>,
    pub pct_change_ci95_high: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: String,
    pub runs_suspect: u32,
    pub runs_excluded: u32,
    /// Runs that entered the statistics.
    pub n: u32,
    /// The job excludes suspect runs, but fewer than 2 clean runs remained, so they were kept.
    pub suspect_included: bool,
    /// Dimensions of the cell beyond page sizes and clients (JSON object).
    pub dims_json: String,
    /// The cell this one is compared with.
    pub baseline_label: String,
    pub baseline_mean: Option<f64>,
    /// Degrees of freedom of the comparison: Welch-Satterthwaite, or the blocked model's
    /// residual df (see `model`).
    pub welch_df: Option<f64>,
    /// Distinct suspect reasons among the cell's measured runs, with counts.
    pub suspect_reasons: Vec<String>,
    pub higher_is_better: bool,
    pub unit: String,
    /// Memory held constant against the baseline cell.
    pub held_constant: String,
    /// Benjamini-Hochberg q-value of p_value across the job's family of comparisons.
    pub q_value: Option<f64>,
    /// Two one-sided tests of the change on the log scale against +-equivalence_pct of the
    /// baseline, and its q-value.
    pub tost_p_value: Option<f64>,
    pub tost_q_value: Option<f64>,
    pub equivalence_pct: f64,
    /// 90% CI of the % change: the interval TOST checks against the band.
    pub pct_change_ci90_low: Option<f64>,
    pub pct_change_ci90_high: Option<f64>,
    /// Both cells have zero variance: no test is possible.
    pub zero_variance: bool,
    pub baseline_cell_index: Option<u32>,
    pub compared_on: String,
    pub replicate: bool,
    /// `kind = "series"`: the place of the cell's source among the series' points.
    pub series_point: Option<u32>,
    /// Half-width of the 95% CI of the mean in percent of the mean.
    pub ci95_half_width_pct: Option<f64>,
    /// Adaptive repetitions: the job's target half-width and whether it was reached.
    pub target_ci_pct: Option<f64>,
    pub target_status: String,
    /// Set when the job excludes suspect runs: the same statistics over every completed run.
    pub all_runs: Option<CellStats>,
    /// The cell on each database host, when its runs came from more than one.
    pub hosts: Vec<HostResult>,
    /// The model the change was estimated with: welch, rounds, hosts or rounds+hosts (empty
    /// without a comparison).
    pub model: String,
    /// The minimum detectable change in % at 80% power and alpha 0.05 (two-sided).
    pub mde_pct: Option<f64>,
    /// An inconclusive comparison: the more rounds that would make the 90% CI of the change
    /// fit inside the equivalence band at the observed variance.
    pub extra_rounds: Option<u32>,
    /// An inconclusive comparison that not even the job's maximum of rounds (or 1000) would
    /// make fit inside the band.
    pub extra_rounds_cannot: bool,
    /// `search = "race"`: where the cell stands in the race (on the job's headline metric).
    pub race: Option<RaceStanding>,
}

/// A cell's standing in its job's race.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RaceStanding {
    /// "best", "in the best set", "racing", "default, beaten", "dropped at round N" or
    /// "no runs by round N".
    pub standing: String,
    /// The round at whose look it left the race.
    pub dropped_round: Option<u32>,
    /// Its change against the best at the last look it took part in, with the 95% CI, in %,
    /// and the one-sided p-value of "worse than the best" (none for the best).
    pub vs_best_pct: Option<f64>,
    pub vs_best_ci95_low: Option<f64>,
    pub vs_best_ci95_high: Option<f64>,
    pub vs_best_p_worse: Option<f64>,
    /// The best cell's label at that look.
    pub best_label: String,
    /// The race's rounds, its measured runs and what a full grid of those rounds would take.
    pub rounds: u32,
    pub runs_spent: u32,
    pub full_grid_runs: u32,
    /// "running", "decided at round N" or "max repetitions reached (N)".
    pub end: String,
    /// The default cell of the cell's race (a job races each group of cells that share a
    /// default, e.g. one per client count).
    pub default_label: String,
}

/// A cell's statistics over a set of runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    pub n: u32,
    pub mean: f64,
    pub stddev: f64,
    pub cv: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub ci95_half_width_pct: Option<f64>,
    pub pct_change_vs_baseline: Option<f64>,
    pub pct_change_ci95_low: Option<f64>,
    pub pct_change_ci95_high: Option<f64>,
    pub p_value: Option<f64>,
    pub q_value: Option<f64>,
    pub tost_p_value: Option<f64>,
    pub tost_q_value: Option<f64>,
    pub welch_df: Option<f64>,
    pub zero_variance: bool,
    pub verdict: String,
    pub pct_change_ci90_low: Option<f64>,
    pub pct_change_ci90_high: Option<f64>,
    pub baseline_mean: Option<f64>,
    /// The model the change was estimated with: welch, rounds, hosts or rounds+hosts (empty
    /// without a comparison).
    pub model: String,
    /// The minimum detectable change in % at 80% power and alpha 0.05 (two-sided).
    pub mde_pct: Option<f64>,
    /// An inconclusive comparison: the more rounds that would make the 90% CI of the change
    /// fit inside the equivalence band at the observed variance.
    pub extra_rounds: Option<u32>,
    /// An inconclusive comparison that not even the job's maximum of rounds (or 1000) would
    /// make fit inside the band.
    pub extra_rounds_cannot: bool,
}

/// A cell on one database host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostResult {
    pub host_id: String,
    pub n: u32,
    pub mean: f64,
    /// The cell against its baseline's runs on the same host.
    pub pct_change_vs_baseline: Option<f64>,
}

/// One workload metric with its per-cell statistics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricResults {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub cells: Vec<CellResult>,
}

/// A cell's own-workload figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnWorkloadCell {
    pub cell_index: u32,
    pub cell: String,
    /// Completed runs the figures come from.
    pub runs: u32,
    pub schedule_lag_median_ms: f64,
    pub schedule_lag_max_ms: f64,
    /// Summed over the runs.
    pub late: u64,
    pub skipped: u64,
    /// Per statement of each script, in script order.
    pub statements: Vec<CellStatement>,
}

/// One statement of a script over a cell's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellStatement {
    pub script: String,
    pub position: u32,
    pub command: String,
    /// Summed over the runs.
    pub count: u64,
    pub failures: u64,
    /// Median over the runs of each run's average latency of the command.
    pub latency_median_ms: f64,
}

/// A doctor warning of the database host, with the number of done runs it held for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostWarning {
    pub warning: String,
    pub runs: u32,
}

/// A job's results: the cells of one metric, every workload metric's cells, own-workload
/// figures and the database host's warnings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryResults {
    pub job_id: String,
    pub cells: Vec<CellResult>,
    pub catalog_path: String,
    pub by_metric: Vec<MetricResults>,
    pub own_workload: Vec<OwnWorkloadCell>,
    pub host_warnings: Vec<HostWarning>,
    /// The job's done runs (what host_warnings' counts are out of).
    pub runs_done: u32,
}

/// Each cell of job B against A's like cell.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    pub job_a: Option<JobSummary>,
    pub job_b: Option<JobSummary>,
    pub metric: String,
    pub cells: Vec<CellResult>,
    pub by_metric: Vec<MetricResults>,
}

/// A probe job's results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeResults {
    pub job_id: String,
    pub db_host_id: String,
    pub rows: Vec<ProbeSummary>,
}

/// One probe target and mode, over its runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeSummary {
    pub target: String,
    pub mode: String,
    pub chunk_bytes: u32,
    pub mb_per_s: f64,
    pub system_cpu_s: f64,
    pub latency_avg_us: f64,
    pub latency_p99_us: f64,
    pub runs: u32,
}
