//! How far a PostgreSQL build has got, as the agent reports it and `watch`, `job` and the
//! dashboard show it: "building 16K/8K: make 43%, ~1m10s left".

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::state::BuildStep;

/// One build's latest progress report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildProgress {
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub step: BuildStep,
    /// During `make`: objects compiled against the object count expected, 0..=100.
    pub percent: Option<f64>,
    /// The expected object count is an estimate (the first build of this source), not the
    /// count of its last build.
    pub estimated: bool,
    /// Seconds of `make` left, from earlier build times of the source (or, for a first
    /// build, from the pace so far).
    pub eta_seconds: Option<u64>,
}

impl fmt::Display for BuildProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "building {}K/{}K: {}",
            self.block_size_kb, self.wal_block_size_kb, self.step
        )?;
        if let Some(p) = self.percent {
            let approx = if self.estimated { "~" } else { "" };
            write!(f, " {approx}{:.0}%", p.clamp(0.0, 100.0).floor())?;
        }
        if let Some(eta) = self.eta_seconds {
            write!(f, ", ~{} left", duration_text(eta))?;
        }
        Ok(())
    }
}

/// `70` → `1m10s`, `45` → `45s`, `3700` → `1h01m`.
pub fn duration_text(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(step: BuildStep, percent: Option<f64>, estimated: bool, eta: Option<u64>) -> String {
        BuildProgress {
            block_size_kb: 16,
            wal_block_size_kb: 8,
            step,
            percent,
            estimated,
            eta_seconds: eta,
        }
        .to_string()
    }

    #[test]
    fn lines_read_as_the_issue_shows_them() {
        assert_eq!(
            at(BuildStep::Make, Some(43.7), false, Some(70)),
            "building 16K/8K: make 43%, ~1m10s left"
        );
        assert_eq!(
            at(BuildStep::Make, Some(5.0), true, None),
            "building 16K/8K: make ~5%"
        );
        assert_eq!(
            at(BuildStep::Configure, None, false, None),
            "building 16K/8K: configure"
        );
        assert_eq!(
            at(BuildStep::Make, Some(140.0), false, Some(3700)),
            "building 16K/8K: make 100%, ~1h01m left"
        );
        assert_eq!(duration_text(9), "9s");
    }

    #[test]
    fn progress_round_trips_through_json() {
        let p = BuildProgress {
            block_size_kb: 32,
            wal_block_size_kb: 4,
            step: BuildStep::Install,
            percent: None,
            estimated: false,
            eta_seconds: None,
        };
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains("\"install\""), "{text}");
        assert_eq!(serde_json::from_str::<BuildProgress>(&text).unwrap(), p);
    }
}
