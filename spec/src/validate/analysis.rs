//! How a job's results are judged: `repetitions` (fixed, adaptive to a target CI, or until
//! decided), `equivalence_pct`,
//! `suspect_runs`, and the variants other variants are compared with.

use crate::error::SpecError;
use crate::limits::MAX_REPETITIONS;
use crate::model::{Adaptive, Analysis};
use crate::raw::{RawBaseline, RawRepetitions};

/// Widest equivalence band accepted (percent of the baseline).
const MAX_EQUIVALENCE_PCT: f64 = 50.0;

/// The shortest and longest `budget` accepted.
const MIN_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);
const MAX_BUDGET: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The minimum (or fixed) number of rounds, the adaptive bounds and the time budget.
pub(super) fn repetitions(
    r: &RawRepetitions,
    budget: Option<&str>,
) -> Result<(u32, Option<Adaptive>), SpecError> {
    let (min, adaptive) = rounds(r)?;
    let Some(text) = budget else {
        return Ok((min, adaptive));
    };
    let Some(mut adaptive) = adaptive else {
        return Err(SpecError::new(
            "budget",
            "a budget bounds the rounds adaptive repetitions add; use it with repetitions = { min = 3, max = 20, until = \"decided\" } (or target_ci_pct)",
        ));
    };
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        SpecError::new(
            "budget",
            format!("cannot parse {text:?} as a duration ({e}); write e.g. \"10m\" or \"1h\""),
        )
    })?;
    if !(MIN_BUDGET..=MAX_BUDGET).contains(&d) {
        return Err(SpecError::new("budget", "must be between 10s and 7days"));
    }
    adaptive.budget = Some(d);
    Ok((min, Some(adaptive)))
}

fn rounds(r: &RawRepetitions) -> Result<(u32, Option<Adaptive>), SpecError> {
    let count = |field: &str, v: i64| {
        u32::try_from(v)
            .ok()
            .filter(|v| (1..=MAX_REPETITIONS).contains(v))
            .ok_or_else(|| {
                SpecError::new(
                    field,
                    format!("{v} is not allowed; use 1 to {MAX_REPETITIONS}"),
                )
            })
    };
    match r {
        RawRepetitions::Fixed(n) => Ok((count("repetitions", *n)?, None)),
        RawRepetitions::Adaptive(a) => {
            let min = count("repetitions.min", a.min.unwrap_or(3))?;
            if min < 2 {
                return Err(SpecError::new(
                    "repetitions.min",
                    "adaptive repetitions need at least 2 rounds to estimate a CI",
                ));
            }
            let max = count("repetitions.max", a.max.unwrap_or(20))?;
            if max < min {
                return Err(SpecError::new(
                    "repetitions.max",
                    format!("{max} is less than repetitions.min ({min})"),
                ));
            }
            let until_decided = match a.until.as_deref() {
                None => false,
                Some("decided") => true,
                Some(other) => {
                    return Err(SpecError::new(
                        "repetitions.until",
                        format!("{other:?} is not allowed; use \"decided\""),
                    ));
                }
            };
            if until_decided {
                if a.target_ci_pct.is_some() {
                    return Err(SpecError::new(
                        "repetitions.until",
                        "until = \"decided\" and target_ci_pct exclude each other; give one",
                    ));
                }
                return Ok((
                    min,
                    Some(Adaptive {
                        max,
                        target_ci_pct: None,
                        until_decided: true,
                        budget: None,
                    }),
                ));
            }
            let target = a.target_ci_pct.ok_or_else(|| {
                SpecError::new(
                    "repetitions.target_ci_pct",
                    "adaptive repetitions need a target 95% CI half-width in percent of the mean (e.g. 1.0), or until = \"decided\"",
                )
            })?;
            if !(target.is_finite() && target > 0.0 && target <= 100.0) {
                return Err(SpecError::new(
                    "repetitions.target_ci_pct",
                    format!("{target} is not allowed; use a percentage above 0 and at most 100"),
                ));
            }
            Ok((
                min,
                Some(Adaptive {
                    max,
                    target_ci_pct: Some(target),
                    until_decided: false,
                    budget: None,
                }),
            ))
        }
    }
}

/// `equivalence_pct` and `suspect_runs`.
pub(super) fn analysis(
    equivalence_pct: Option<f64>,
    suspect_runs: Option<&str>,
) -> Result<Analysis, SpecError> {
    let mut a = Analysis::default();
    if let Some(e) = equivalence_pct {
        if !(e.is_finite() && e > 0.0 && e <= MAX_EQUIVALENCE_PCT) {
            return Err(SpecError::new(
                "equivalence_pct",
                format!(
                    "{e} is not allowed; use a percentage above 0 and at most {MAX_EQUIVALENCE_PCT}"
                ),
            ));
        }
        a.equivalence_pct = e;
    }
    a.exclude_suspect = match suspect_runs.unwrap_or("include") {
        "include" => false,
        "exclude" => true,
        other => {
            return Err(SpecError::new(
                "suspect_runs",
                format!("{other:?} is not allowed; use include (the default) or exclude"),
            ));
        }
    };
    Ok(a)
}

/// The variant of `kind` ("settings" / "workload") other variants are compared with: the
/// one `[baseline]` names, else "default" when there is one, else the first by name.
pub(super) fn baseline_variant<T>(
    b: Option<&RawBaseline>,
    kind: &str,
    variants: &[(String, T)],
) -> Result<String, SpecError> {
    let named = b.and_then(|b| match kind {
        "settings" => b.settings_variant.clone(),
        _ => b.workload_variant.clone(),
    });
    let names: Vec<&str> = variants.iter().map(|(n, _)| n.as_str()).collect();
    match named {
        Some(n) if names.contains(&n.as_str()) => Ok(n),
        Some(n) => Err(SpecError::new(
            format!("baseline.{kind}_variant"),
            format!(
                "{n:?} is not a {kind} variant; use one of {}",
                names.join(", ")
            ),
        )),
        None if names.contains(&"default") => Ok("default".into()),
        None => Ok(names.first().map(|n| n.to_string()).unwrap_or_default()),
    }
}
