//! `kind = "series"`: one comparison followed over an ordered list of points. A point is a
//! source (`[sources.<name>]`: a version's tarball, or a commit of a git repository); the job
//! measures the same page-size comparison within each source, and the results follow its
//! effect from point to point, with the change points of that effect.

use crate::error::SpecError;
use crate::model::Source;

/// The fewest points a series has.
pub const MIN_POINTS: usize = 2;

/// What of the spec a series depends on.
pub(super) struct Parts<'a> {
    pub kind: Option<&'a str>,
    pub points: Option<&'a [String]>,
    pub sources: &'a [(String, Source)],
    pub compare_sources: bool,
}

/// The series' points in order (empty for a job that is not a series): every source, each
/// named once, and the comparison within each source (not across them).
pub(super) fn series(p: Parts<'_>) -> Result<Vec<String>, SpecError> {
    let is_series = p.kind == Some("series");
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
}
