//! `kind = "series"`: one comparison followed over an ordered list of points. A point is a
//! source (`[sources.<name>]`: a version's tarball, or a commit of a git repository); the job
//! measures the same page-size comparison within each source, and the results follow its
//! effect from point to point, with the change points of that effect.

use super::source::{check_git, parse_cflags, validate_configure_flag};
use crate::error::SpecError;
use crate::model::Source;
use crate::raw::RawCommits;

/// The fewest points a series has.
pub const MIN_POINTS: usize = 2;

/// What of the spec a series depends on.
pub(super) struct Parts<'a> {
    pub kind: Option<&'a str>,
    pub points: Option<&'a [String]>,
    pub commits: Option<&'a RawCommits>,
    pub sources: &'a [(String, Source)],
    pub compare_sources: bool,
}

/// A spec with `[commits]` before its sources are read: a series, with its points resolved
/// (by `blocklab submit`) and no `[source]` beside them.
pub(super) fn commits_first(
    kind: Option<&str>,
    raw: Option<&RawCommits>,
    resolved: bool,
    single_source: bool,
) -> Result<(), SpecError> {
    let Some(raw) = raw else { return Ok(()) };
    if kind != Some("series") {
        return Err(SpecError::new(
            "commits",
            "only applies to kind = \"series\"",
        ));
    }
    commits(raw)?;
    if !resolved {
        return Err(SpecError::new(
            "commits",
            "is not resolved into points: `blocklab submit` reads the repository's history and lists the commits it chose as `series` and `[sources.<name>]`",
        ));
    }
    if single_source {
        return Err(SpecError::new(
            "source",
            "a series of [commits] has its commits as its sources: remove [source]",
        ));
    }
    Ok(())
}

/// The series' points in order (empty for a job that is not a series): every source, each
/// named once, and the comparison within each source (not across them).
pub(super) fn series(p: Parts<'_>) -> Result<Vec<String>, SpecError> {
    let is_series = p.kind == Some("series");
    if let Some(raw) = p.commits {
        let commits = commits(raw)?;
        for (name, source) in p.sources {
            let same = source.git_url == commits.git
                && source.configure == commits.configure
                && source.cflags == commits.cflags;
            if !same {
                return Err(SpecError::new(
                    format!("sources.{name}"),
                    format!(
                        "a series of [commits] has only commits of {} as its sources, configured as [commits] says",
                        commits.git
                    ),
                ));
            }
        }
    }
    let Some(points) = p.points else {
        if is_series {
            return Err(SpecError::new(
                "series",
                "is required with kind = \"series\": the points in order, each the name of a [sources.<name>] (e.g. series = [\"pg15\", \"pg17\", \"pg18\"])",
            ));
        }
        return Ok(Vec::new());
    };
    if !is_series {
        return Err(SpecError::new(
            "series",
            "only applies to kind = \"series\"",
        ));
    }
    if points.len() < MIN_POINTS {
        return Err(SpecError::new(
            "series",
            format!("needs at least {MIN_POINTS} points, each a [sources.<name>]"),
        ));
    }
    for (i, name) in points.iter().enumerate() {
        if !p.sources.iter().any(|(n, _)| n == name) {
            let known: Vec<&str> = p.sources.iter().map(|(n, _)| n.as_str()).collect();
            return Err(SpecError::new(
                format!("series[{i}]"),
                format!(
                    "{name:?} is not a source; the sources are {}",
                    known.join(", ")
                ),
            ));
        }
        if points[..i].contains(name) {
            return Err(SpecError::new(
                format!("series[{i}]"),
                format!("{name:?} is listed twice"),
            ));
        }
    }
    if let Some((missing, _)) = p.sources.iter().find(|(n, _)| !points.contains(n)) {
        return Err(SpecError::new(
            "series",
            format!("leaves out the source {missing:?}: list every source, in order"),
        ));
    }
    if p.compare_sources {
        return Err(SpecError::new(
            "baseline.compare_sources",
            "a series compares page sizes within each point, and follows that comparison across the points: remove compare_sources",
        ));
    }
    Ok(points.to_vec())
}

/// `[commits]`: the commits of one repository a series follows, before `blocklab submit`
/// lists them as its points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commits {
    /// The repository, as the agents reach it (and `blocklab submit`, which reads its history).
    pub git: String,
    pub points: CommitPoints,
    pub configure: Vec<String>,
    pub cflags: Vec<String>,
}

/// Which commits are points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitPoints {
    /// `range = "A..B"`: A, then every `every`-th commit after it on the first-parent line
    /// to B, and B.
    Range {
        from: String,
        to: String,
        every: u32,
    },
    /// `list = [...]`: these commits, in this order.
    List(Vec<String>),
}

/// The `[commits]` of a spec's text, checked, or `None` when it has none; `resolved` tells
/// whether the spec already lists the points (`series`).
pub fn spec_commits(text: &str) -> Result<Option<(Commits, bool)>, SpecError> {
    #[derive(serde::Deserialize)]
    struct Part {
        #[serde(default)]
        commits: Option<RawCommits>,
        #[serde(default)]
        series: Option<toml::Value>,
    }
    let part: Part = toml::from_str(text).map_err(|e| SpecError::new("spec", e.message()))?;
    match part.commits {
        None => Ok(None),
        Some(raw) => Ok(Some((commits(&raw)?, part.series.is_some()))),
    }
}

fn commits(raw: &RawCommits) -> Result<Commits, SpecError> {
    let check_ref = |field: String, r: &str| {
        check_git("commits", &raw.git, r).map_err(|e| {
            if e.field == "commits.git" {
                e
            } else {
                SpecError::new(
                    field,
                    "must be a branch, tag or commit (letters, digits, . _ / -)",
                )
            }
        })
    };
    check_git("commits", &raw.git, "HEAD")?;
    let points = match (&raw.range, &raw.list) {
        (Some(range), None) => {
            let Some((from, to)) = range
                .split_once("..")
                .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.starts_with('.'))
            else {
                return Err(SpecError::new(
                    "commits.range",
                    "must be \"A..B\": the first and the last commit (a branch, tag or commit each)",
                ));
            };
            check_ref("commits.range".into(), from)?;
            check_ref("commits.range".into(), to)?;
            let every = raw.every.unwrap_or(1);
            if every == 0 {
                return Err(SpecError::new("commits.every", "must be at least 1"));
            }
            CommitPoints::Range {
                from: from.to_string(),
                to: to.to_string(),
                every,
            }
        }
        (None, Some(list)) => {
            if raw.every.is_some() {
                return Err(SpecError::new("commits.every", "only applies to a range"));
            }
            if list.len() < MIN_POINTS {
                return Err(SpecError::new(
                    "commits.list",
                    format!("needs at least {MIN_POINTS} commits"),
                ));
            }
            for (i, r) in list.iter().enumerate() {
                check_ref(format!("commits.list[{i}]"), r)?;
            }
            CommitPoints::List(list.clone())
        }
        _ => {
            return Err(SpecError::new(
                "commits",
                "give exactly one of range = \"A..B\" (with every = k) or list = [commits]",
            ));
        }
    };
    for (i, flag) in raw.configure.iter().enumerate() {
        validate_configure_flag(flag)
            .map_err(|m| SpecError::new(format!("commits.configure[{i}]"), m))?;
    }
    let cflags = parse_cflags("commits", raw.cflags.as_deref().unwrap_or_default())?;
    Ok(Commits {
        git: raw.git.clone(),
        points,
        configure: raw.configure.clone(),
        cflags,
    })
}

#[cfg(test)]
mod tests {
    use crate::error::SpecError;
    use crate::model::Spec;

    const SERIES: &str = r#"
name = "wal 4K over versions"
kind = "series"
series = ["pg15", "pg17", "pg18"]
repetitions = 3
order = "randomized-block"
baseline = { wal_block_size_kb = 8 }
[sources.pg18]
tarball = "/src/postgresql-18.tar.bz2"
[sources.pg15]
tarball = "/src/postgresql-15.tar.bz2"
[sources.pg17]
tarball = "/src/postgresql-17.tar.bz2"
[matrix]
wal_block_size_kb = [4, 8]
clients = [1]
[workload]
builtin = "tpcb-like"
duration = "10s"
"#;

    fn err(text: &str) -> SpecError {
        Spec::parse(text).expect_err("must be refused")
    }

    #[test]
    fn a_series_keeps_its_order_and_compares_within_each_point() {
        let s = Spec::parse(SERIES).expect("valid");
        assert_eq!(s.series, ["pg15", "pg17", "pg18"]);
        let plan = s.plan();
        // Per point: WAL 4K against the same point's 8K.
        for c in plan.cells.iter().filter(|c| !c.is_baseline) {
            let b = &plan.cells[c.baseline_cell.expect("compared") as usize];
            assert_eq!(
                (b.source.as_str(), b.wal_block_size_kb),
                (c.source.as_str(), 8)
            );
            assert_eq!(c.wal_block_size_kb, 4);
        }
        assert_eq!(plan.cells.iter().filter(|c| !c.is_baseline).count(), 3);
        // A benchmark without `series` has none.
        let plain = SERIES
            .replace("kind = \"series\"\n", "")
            .replace("series = [\"pg15\", \"pg17\", \"pg18\"]\n", "");
        assert!(Spec::parse(&plain).expect("valid").series.is_empty());
    }

    #[test]
    fn a_series_names_every_source_once_and_only_sources() {
        let e = err(&SERIES.replace("series = [\"pg15\", \"pg17\", \"pg18\"]\n", ""));
        assert_eq!(e.field, "series");
        assert!(
            e.message.contains("is required with kind = \"series\""),
            "{e}"
        );
        let e = err(&SERIES.replace("\"pg17\", \"pg18\"]", "\"pg16\", \"pg18\"]"));
        assert_eq!(e.field, "series[1]");
        assert_eq!(
            e.message,
            "\"pg16\" is not a source; the sources are pg15, pg17, pg18"
        );
        let e = err(&SERIES.replace("\"pg17\", \"pg18\"]", "\"pg15\", \"pg18\"]"));
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("series[1]", "\"pg15\" is listed twice")
        );
        let e = err(&SERIES.replace(", \"pg17\", \"pg18\"]", ", \"pg18\"]"));
        assert_eq!(e.field, "series");
        assert!(e.message.contains("leaves out the source \"pg17\""), "{e}");
        let e = err(&SERIES.replace("[\"pg15\", \"pg17\", \"pg18\"]", "[\"pg15\"]"));
        assert_eq!(e.field, "series");
        assert!(e.message.contains("at least 2 points"), "{e}");
        let e = err(&SERIES.replace("kind = \"series\"\n", ""));
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("series", "only applies to kind = \"series\"")
        );
        let e = err(&SERIES.replace(
            "baseline = { wal_block_size_kb = 8 }",
            "baseline = { wal_block_size_kb = 8, source = \"pg15\", compare_sources = true }",
        ));
        assert_eq!(e.field, "baseline.compare_sources");
    }

    const COMMITS: &str = r#"
name = "wal 4K over commits"
kind = "series"
repetitions = 3
baseline = { wal_block_size_kb = 8 }
[commits]
git = "file:///srv/postgres"
range = "v15.0..main"
every = 2
configure = ["--without-icu"]
[matrix]
wal_block_size_kb = [4, 8]
clients = [1]
[workload]
builtin = "tpcb-like"
duration = "10s"
"#;

    /// `COMMITS` as `blocklab submit` resolves it, with these points.
    fn resolved(points: &[(&str, &str)]) -> String {
        let names: Vec<String> = points.iter().map(|(n, _)| format!("{n:?}")).collect();
        let mut text = format!("series = [{}]\n{COMMITS}", names.join(", "));
        for (name, commit) in points {
            text.push_str(&format!(
                "[sources.{name}]\ngit = \"file:///srv/postgres\"\nref = \"{commit}\"\nconfigure = [\"--without-icu\"]\n"
            ));
        }
        text
    }

    #[test]
    fn commits_are_points_once_resolved() {
        use super::{CommitPoints, spec_commits};
        let (c, resolved_already) = spec_commits(COMMITS).expect("valid").expect("commits");
        assert!(!resolved_already);
        assert_eq!(c.git, "file:///srv/postgres");
        assert_eq!(
            c.points,
            CommitPoints::Range {
                from: "v15.0".into(),
                to: "main".into(),
                every: 2
            }
        );
        assert_eq!(c.configure, ["--without-icu"]);
        let e = err(COMMITS);
        assert_eq!(e.field, "commits");
        assert!(e.message.starts_with("is not resolved into points"), "{e}");

        let text = resolved(&[("p00-aaaa", "v15.0"), ("p01-bbbb", "main")]);
        assert!(spec_commits(&text).expect("valid").expect("commits").1);
        let s = Spec::parse(&text).expect("valid");
        assert_eq!(s.series, ["p00-aaaa", "p01-bbbb"]);
        // A point from elsewhere, or configured otherwise, is not one of the commits.
        let e = err(&text.replacen("file:///srv/postgres\"\nref", "file:///srv/other\"\nref", 1));
        assert_eq!(e.field, "sources.p00-aaaa");
        let e = err(&text.replacen("[\"--without-icu\"]\n[sources", "[]\n[sources", 1));
        assert!(e.field.starts_with("sources."), "{e}");
        assert!(spec_commits("name = \"x\"").expect("valid").is_none());
    }

    #[test]
    fn commits_name_what_is_wrong() {
        for (from, to, field, message) in [
            (
                "range = \"v15.0..main\"",
                "range = \"v15.0..\"",
                "commits.range",
                "must be \"A..B\"",
            ),
            (
                "range = \"v15.0..main\"",
                "range = \"v15.0...main\"",
                "commits.range",
                "must be \"A..B\"",
            ),
            (
                "range = \"v15.0..main\"",
                "range = \"v15.0..$(id)\"",
                "commits.range",
                "must be a branch",
            ),
            ("every = 2", "every = 0", "commits.every", "at least 1"),
            (
                "range = \"v15.0..main\"\nevery = 2",
                "list = [\"a\"]",
                "commits.list",
                "at least 2",
            ),
            (
                "range = \"v15.0..main\"\nevery = 2",
                "list = [\"a\", \"-b\"]",
                "commits.list[1]",
                "must be a branch",
            ),
            (
                "every = 2",
                "every = 2\nlist = [\"a\", \"b\"]",
                "commits",
                "exactly one of",
            ),
            (
                "git = \"file:///srv/postgres\"",
                "git = \"ext::sh -c id\"",
                "commits.git",
                "git URL",
            ),
            (
                "[\"--without-icu\"]",
                "[\"--without-icu; id\"]",
                "commits.configure[0]",
                "",
            ),
        ] {
            let text = COMMITS.replace(from, to);
            assert_ne!(text, COMMITS, "{from}");
            let e = super::spec_commits(&text).expect_err(to);
            assert_eq!(e.field, field, "{to}: {e}");
            assert!(e.message.contains(message), "{to}: {e}");
            assert_eq!(err(&text).field, field, "{to}");
        }
        let e = err(&COMMITS.replace("kind = \"series\"\n", ""));
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("commits", "only applies to kind = \"series\"")
        );
    }
}
