//! How far a build has got. During `make` the share of objects compiled (`.o` files in the
//! out-of-tree build directory) is measured against the object count of the last build of
//! the same source, which the cache keeps in `build_cache/<source digest>.build-history.json`
//! with the durations of its earlier `make` runs (for the ETA).
//!
//! The first build of a source has no count yet: it is estimated from the source tree as the
//! `.c` files in the parts the build makes (see `recipe`), outside the directories their
//! `make` does not compile (tests, Windows ports). The count and the object count differ a
//! little (generated sources, files one platform skips), so the first build's percentage is
//! shown with a `~`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Directories under the source's `src/` whose `.c` files a plain `make` does not compile.
const NOT_BUILT: &[&str] = &[
    "src/test/",
    "src/tools/",
    "src/tutorial/",
    "/ecpg/test/",
    "win32",
    "src/backend/port/aix/",
];

/// Earlier `make` durations kept per source.
const KEPT_DURATIONS: usize = 5;

/// What the cache remembers of the builds of one source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Objects the last build of this source compiled.
    pub objects: u64,
    /// Seconds of its latest `make` runs, oldest first.
    pub make_seconds: Vec<f64>,
}

/// `build_cache/<digest>.<recipe>.build-history.json`: a count made by another recipe
/// (another set of parts) says nothing of this one's.
pub fn history_path(root: &Path, digest: &str) -> PathBuf {
    root.join(format!(
        "{digest}.{}.build-history.json",
        super::recipe::RECIPE
    ))
}

/// The history of a source; `None` when there is none or it does not parse.
pub fn read_history(root: &Path, digest: &str) -> Option<History> {
    let text = std::fs::read_to_string(history_path(root, digest)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Records a finished `make`: its object count and duration.
pub fn record_make(root: &Path, digest: &str, objects: u64, seconds: f64) {
    let mut h = read_history(root, digest).unwrap_or_default();
    h.objects = objects;
    h.make_seconds.push(seconds);
    let extra = h.make_seconds.len().saturating_sub(KEPT_DURATIONS);
    h.make_seconds.drain(..extra);
    let path = history_path(root, digest);
    let written = serde_json::to_string_pretty(&h)
        .map_err(std::io::Error::other)
        .and_then(|json| std::fs::write(&path, json));
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "could not record build history");
    }
}

/// The estimated object count of a first build of `parts` of the source tree at `tree`.
pub fn estimate_objects(tree: &Path, parts: &[&str]) -> u64 {
    let mut n = 0;
    for part in parts {
        walk(&tree.join(part), &mut |p| {
            let rel = p.strip_prefix(tree).unwrap_or(p).to_string_lossy();
            // A part inside another (the conversion procedures in the backend) is walked
            // from its own entry only.
            let innermost = parts
                .iter()
                .filter(|q| super::recipe::in_parts(&rel, &[**q]))
                .max_by_key(|q| q.len());
            if rel.ends_with(".c")
                && innermost == Some(part)
                && !NOT_BUILT.iter().any(|d| rel.contains(d))
            {
                n += 1;
            }
        });
    }
    n
}

/// The `.o` files under `dir` (the build directory while `make` runs).
pub fn count_objects(dir: &Path) -> u64 {
    let mut n = 0;
    walk(dir, &mut |p| {
        if p.extension().is_some_and(|e| e == "o") {
            n += 1;
        }
    });
    n
}

fn walk(dir: &Path, on_file: &mut impl FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            walk(&e.path(), on_file);
        } else if t.is_file() {
            on_file(&e.path());
        }
    }
}

/// What `make`'s progress is measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct MakeMeter {
    pub expected_objects: u64,
    /// `expected_objects` is [`estimate_objects`]'s, not a counted build's.
    pub estimated: bool,
    /// The mean of the source's earlier `make` durations.
    pub earlier_seconds: Option<f64>,
}

/// Below this share done, a first build's pace says too little for an ETA.
const PACE_MIN_FRACTION: f64 = 0.05;

/// From this share done on, the ETA is the build's own pace alone; below it, the pace is
/// weighed against the earlier durations in proportion to the share done.
const PACE_ONLY_FRACTION: f64 = 0.2;

impl MakeMeter {
    /// The meter for a source with `history` (if any) and the tree at `tree`.
    pub fn new(history: Option<&History>, tree: &Path, parts: &[&str]) -> Self {
        let earlier_seconds = history
            .filter(|h| !h.make_seconds.is_empty())
            .map(|h| h.make_seconds.iter().sum::<f64>() / h.make_seconds.len() as f64);
        match history.filter(|h| h.objects > 0) {
            Some(h) => Self {
                expected_objects: h.objects,
                estimated: false,
                earlier_seconds,
            },
            None => Self {
                expected_objects: estimate_objects(tree, parts).max(1),
                estimated: true,
                earlier_seconds,
            },
        }
    }

    /// Percent done (below 100 while `make` runs) and seconds left, after `elapsed` seconds
    /// with `done` objects compiled. The ETA starts as the earlier durations' remaining share
    /// and moves to this build's pace as it gets going (fully at 20% done), so that a build on
    /// a machine busier or quieter than last time still reads true; without earlier builds it
    /// is the pace alone, once 5% are done.
    pub fn reading(&self, done: u64, elapsed: f64) -> (f64, Option<u64>) {
        let fraction = (done as f64 / self.expected_objects as f64).clamp(0.0, 0.99);
        let pace = (fraction > 0.0).then(|| elapsed * (1.0 - fraction) / fraction);
        let eta = match (self.earlier_seconds, pace) {
            (Some(total), Some(pace)) => {
                let w = (fraction / PACE_ONLY_FRACTION).min(1.0);
                Some(total * (1.0 - fraction) * (1.0 - w) + pace * w)
            }
            (Some(total), None) => Some(total * (1.0 - fraction)),
            (None, Some(pace)) if fraction >= PACE_MIN_FRACTION => Some(pace),
            (None, _) => None,
        };
        (fraction * 100.0, eta.map(|s| s.max(0.0).round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_reads_the_last_count_and_earlier_durations() {
        let h = History {
            objects: 1000,
            make_seconds: vec![100.0, 140.0],
        };
        let m = MakeMeter::new(Some(&h), Path::new("/nonexistent"), &[]);
        assert_eq!(
            m,
            MakeMeter {
                expected_objects: 1000,
                estimated: false,
                earlier_seconds: Some(120.0),
            }
        );
        // Nothing compiled yet: the earlier durations alone.
        assert_eq!(m.reading(0, 5.0), (0.0, Some(120)));
        // 10% done in 30 s: half the earlier remainder (108 s), half the pace (270 s).
        assert_eq!(m.reading(100, 30.0), (10.0, Some(189)));
        // Past 20%, the pace alone: 43% in 50 s leaves 66 s, not the earlier 68.
        assert_eq!(m.reading(430, 50.0), (43.0, Some(66)));
        // Four times faster than last time: 25% in 7.5 s leaves 22.5 s, not 90.
        assert_eq!(m.reading(250, 7.5), (25.0, Some(23)));
        // More objects than last time: held below 100 while make runs.
        assert_eq!(m.reading(1200, 130.0), (99.0, Some(1)));
    }

    #[test]
    fn first_build_estimates_from_the_tree_and_its_pace() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "src/backend/a.c",
            "src/backend/b.c",
            "src/backend/utils/mb/conversion_procs/u/u.c",
            "src/bin/c.c",
            "src/bin/pgbench/p.c",
            "src/backend/h.h",
            "src/test/regress/t.c",
            "src/port/win32setlocale.c",
            "src/interfaces/ecpg/test/e.c",
            "contrib/x.c",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let parts = [
            "src/backend",
            "src/backend/utils/mb/conversion_procs",
            "src/port",
            "src/test/regress",
        ];
        // a, b and u once each; not c or pgbench (in no part), not the test or Windows files.
        assert_eq!(estimate_objects(dir.path(), &parts), 3);
        let m = MakeMeter::new(None, dir.path(), &parts);
        assert!(m.estimated);
        assert_eq!(m.expected_objects, 3);
        let m = MakeMeter {
            expected_objects: 200,
            estimated: true,
            earlier_seconds: None,
        };
        assert_eq!(m.reading(5, 10.0), (2.5, None));
        assert_eq!(m.reading(50, 30.0), (25.0, Some(90)));
    }

    #[test]
    fn history_keeps_the_last_count_and_five_durations() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_history(dir.path(), "ab"), None);
        for i in 0..7 {
            record_make(dir.path(), "ab", 1200 + i, 100.0 + i as f64);
        }
        let h = read_history(dir.path(), "ab").unwrap();
        assert_eq!(h.objects, 1206);
        assert_eq!(h.make_seconds, vec![102.0, 103.0, 104.0, 105.0, 106.0]);
        std::fs::create_dir_all(dir.path().join("sub/deep")).unwrap();
        std::fs::write(dir.path().join("sub/deep/x.o"), "").unwrap();
        std::fs::write(dir.path().join("sub/y.o"), "").unwrap();
        std::fs::write(dir.path().join("sub/y.c"), "").unwrap();
        assert_eq!(count_objects(dir.path()), 2);
    }
}
