//! How a job is judged: its adaptive repetitions (a target CI, until decided, a budget) and
//! the analysis options of its results.

/// Adaptive repetitions: rounds are added (each one run of every cell) until every cell's
/// 95% CI half-width of the headline metric is within `target_ci_pct` of its mean, or, with
/// `until_decided`, until every compared cell's headline verdict is faster, slower or
/// equivalent under the sequential boundary; or until `max` rounds were run.
/// `Spec::repetitions` is the minimum.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Adaptive {
    pub max: u32,
    /// The target 95% CI half-width in percent of the mean (none with `until_decided`).
    pub target_ci_pct: Option<f64>,
    /// `until = "decided"`: stop once the question is answered (plans stored before this
    /// option read as false).
    #[serde(default)]
    pub until_decided: bool,
    /// `budget = "10m"`: no round is added that would take the job's measured runs (from a
    /// run's start to its end; builds are separate tasks) past this time, at the cost per
    /// round measured so far.
    #[serde(default)]
    pub budget: Option<std::time::Duration>,
}

/// How the results of a job are judged.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Analysis {
    /// The equivalence band (TOST) in percent of the baseline mean.
    pub equivalence_pct: f64,
    /// Leave suspect runs out of the statistics (default: every completed run counts).
    pub exclude_suspect: bool,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis {
            equivalence_pct: crate::limits::DEFAULT_EQUIVALENCE_PCT,
            exclude_suspect: false,
        }
    }
}

/// How the cells of a job are searched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Search {
    /// Every cell runs every round (the default).
    #[default]
    Grid,
    /// `search = "race"`: after the minimum of rounds, a cell significantly worse than the
    /// best leaves; the default cell stays to the end (`blocklab_report::race`).
    Race,
}
