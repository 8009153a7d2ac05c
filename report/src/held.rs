//! Memory held constant: each cell's memory settings (every setting with a byte or page
//! unit its servers reported), in bytes, against its baseline cell's.

use std::collections::BTreeMap;

use blocklab_measure::job::{ExportRun, JobExport};
use blocklab_spec::{RunState, setting_bytes};

/// A cell's memory settings in bytes, from its first completed run that reported settings
/// (else its first run that did).
fn memory(export: &JobExport, cell: u32) -> BTreeMap<String, i128> {
    let mine = || {
        export
            .runs
            .iter()
            .filter(move |r| r.cell_index == cell && !r.settings.is_empty())
    };
    let run: Option<&ExportRun> = mine()
        .find(|r| r.state.parse() == Ok(RunState::Done))
        .or_else(|| mine().next());
    run.map(|r| {
        r.settings
            .iter()
            .filter_map(|s| Some((s.name.clone(), setting_bytes(&s.setting, &s.unit)?)))
            .collect()
    })
    .unwrap_or_default()
}

/// A byte count the way PostgreSQL writes memory: the largest unit that divides it.
pub fn bytes_text(b: i128) -> String {
    for (unit, size) in [
        ("TB", 1i128 << 40),
        ("GB", 1 << 30),
        ("MB", 1 << 20),
        ("kB", 1 << 10),
    ] {
        if b != 0 && b % size == 0 {
            return format!("{}{unit}", b / size);
        }
    }
    format!("{b}B")
}

/// The held-constant line of `cell` against `baseline`: "all N memory settings equal to the
/// baseline's", or the settings whose bytes differ, named with both values. Empty when either
/// cell has no stored settings or there is no baseline.
pub fn line(export: &JobExport, cell: u32, baseline: Option<u32>) -> String {
    let Some(baseline) = baseline.filter(|b| *b != cell) else {
        return String::new();
    };
    let (mine, base) = (memory(export, cell), memory(export, baseline));
    if mine.is_empty() || base.is_empty() {
        return String::new();
    }
    let mut names: Vec<&String> = mine.keys().chain(base.keys()).collect();
    names.sort();
    names.dedup();
    let show = |v: Option<&i128>| v.map_or_else(|| "unset".to_string(), |b| bytes_text(*b));
    let differ: Vec<String> = names
        .iter()
        .filter(|n| mine.get(**n) != base.get(**n))
        .map(|n| format!("{n} {} vs {}", show(mine.get(*n)), show(base.get(*n))))
        .collect();
    if differ.is_empty() {
        format!(
            "all {} memory settings equal to the baseline's",
            names.len()
        )
    } else {
        format!(
            "{} of {} memory settings differ from the baseline's: {}",
            differ.len(),
            names.len(),
            differ.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::job::EffectiveSetting;

    fn run(cell: u32, settings: &[(&str, &str, &str)]) -> ExportRun {
        ExportRun {
            cell_index: cell,
            state: "done".into(),
            settings: settings
                .iter()
                .map(|(n, v, u)| EffectiveSetting {
                    name: n.to_string(),
                    setting: v.to_string(),
                    unit: u.to_string(),
                    source: "configuration file".into(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn equal_bytes_at_other_page_sizes_are_held_and_differences_named() {
        let export = JobExport {
            runs: vec![
                run(
                    0,
                    &[
                        ("shared_buffers", "32768", "8kB"),
                        ("wal_buffers", "1024", "8kB"),
                        ("work_mem", "4096", "kB"),
                        ("checkpoint_timeout", "300", "s"),
                    ],
                ),
                run(
                    1,
                    &[
                        ("shared_buffers", "16384", "16kB"),
                        ("wal_buffers", "1024", "8kB"),
                        ("work_mem", "4", "MB"),
                    ],
                ),
                run(
                    2,
                    &[
                        ("shared_buffers", "16384", "16kB"),
                        ("wal_buffers", "512", "8kB"),
                        ("work_mem", "4096", "kB"),
                    ],
                ),
            ],
            ..Default::default()
        };
        assert_eq!(
            line(&export, 1, Some(0)),
            "all 3 memory settings equal to the baseline's"
        );
        assert_eq!(
            line(&export, 2, Some(0)),
            "1 of 3 memory settings differ from the baseline's: wal_buffers 4MB vs 8MB"
        );
        assert_eq!(line(&export, 0, None), "");
        assert_eq!(line(&export, 3, Some(0)), "", "no runs");
        assert_eq!(bytes_text(0), "0B");
        assert_eq!(bytes_text(1536), "1536B");
    }
}
