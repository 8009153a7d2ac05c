//! `[commits]` resolved into a series' points: `blocklab submit` reads the repository's
//! history and writes the commits it chose into the spec it sends, as `series = [...]` and one
//! `[sources.<name>]` per commit (`p03-1a2b3c4d5e`: the point's place and the commit's start).
//! The spec's own text is kept as written; what was added says where it came from. A job's
//! stored spec therefore names its exact commits, and a rerun measures the same ones.

use blocklab_spec::{CommitPoints, Commits, SpecError, spec_commits};

use crate::client::CliError;
use crate::git::Repo;

/// The spec's text with its `[commits]` resolved into points, or `None` when it has none to
/// resolve (no `[commits]`, or its `series` is already listed).
pub fn resolve_commits(path: &str, text: &str) -> Result<Option<String>, CliError> {
    let spec_error = |error: SpecError| CliError::Spec {
        path: path.to_string(),
        error,
    };
    let Some((commits, false)) = spec_commits(text).map_err(spec_error)? else {
        return Ok(None);
    };
    let repo = Repo::open(&commits.git)?;
    let points = points(&repo, &commits, spec_error)?;
    Ok(Some(write(text, &commits, &points)))
}

/// The name of the point at `index`, commit `commit`.
pub fn point_name(index: usize, commit: &str) -> String {
    format!("p{index:02}-{}", &commit[..commit.len().min(10)])
}

/// The commits that are points, in order; a range or list that gives none is `spec_error`'s.
fn points(
    repo: &Repo,
    c: &Commits,
    spec_error: impl Fn(SpecError) -> CliError,
) -> Result<Vec<String>, CliError> {
    let points = match &c.points {
        CommitPoints::Range { from, to, every } => {
            let first = repo.commit(from)?;
            let after = repo.first_parent(from, to)?;
            if after.is_empty() {
                return Err(spec_error(SpecError::new(
                    "commits.range",
                    format!("{from}..{to} holds no commit after {from}"),
                )));
            }
            let every = *every as usize;
            let last = after.len() - 1;
            let mut points = vec![first];
            points.extend(
                after
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (i + 1) % every == 0 || *i == last)
                    .map(|(_, c)| c.clone()),
            );
            points
        }
        CommitPoints::List(list) => {
            let mut points: Vec<String> = Vec::new();
            for (i, r) in list.iter().enumerate() {
                let commit = repo.commit(r)?;
                if let Some(j) = points.iter().position(|p| *p == commit) {
                    return Err(spec_error(SpecError::new(
                        format!("commits.list[{i}]"),
                        format!("{r:?} is the same commit as list[{j}] ({commit})"),
                    )));
                }
                points.push(commit);
            }
            points
        }
    };
    Ok(points)
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `text` with the points: `series` first (a top-level key must come before any table), the
/// sources last.
fn write(text: &str, c: &Commits, points: &[String]) -> String {
    let names: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| quoted(&point_name(i, p)))
        .collect();
    let how = match &c.points {
        CommitPoints::Range { from, to, every } => {
            format!("the first-parent commits of {from}..{to}, every {every}")
        }
        CommitPoints::List(_) => "the list".to_string(),
    };
    let mut out = format!(
        "# [commits] resolved by `blocklab submit`: {} points from {how}\nseries = [{}]\n\n",
        points.len(),
        names.join(", ")
    );
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    let configure: Vec<String> = c.configure.iter().map(|f| quoted(f)).collect();
    for (i, commit) in points.iter().enumerate() {
        out.push_str(&format!(
            "\n[sources.{}]\ngit = {}\nref = {}\nconfigure = [{}]\n",
            point_name(i, commit),
            quoted(&c.git),
            quoted(commit),
            configure.join(", ")
        ));
        if !c.cflags.is_empty() {
            out.push_str(&format!("cflags = {}\n", quoted(&c.cflags.join(" "))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;

    /// A repository of `n` commits, each changing one file; their ids, oldest first.
    fn repo(dir: &Path, n: usize) -> Vec<String> {
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8(out.stdout)
                .expect("utf-8")
                .trim()
                .to_string()
        };
        git(&["-c", "init.defaultBranch=main", "init", "-q"]);
        (0..n)
            .map(|i| {
                std::fs::write(dir.join("f"), format!("{i}\n")).expect("write");
                git(&["add", "f"]);
                git(&["commit", "-q", "-m", &format!("change {i}")]);
                git(&["tag", &format!("t{i}")]);
                git(&["rev-parse", "HEAD"])
            })
            .collect()
    }

    fn spec(dir: &Path, points: &str) -> String {
        format!(
            "name = \"s\"\nkind = \"series\"\nrepetitions = 3\nbaseline = {{ wal_block_size_kb = 8 }}\n\
             [commits]\ngit = \"file://{}\"\n{points}\nconfigure = [\"--without-icu\"]\n\
             [matrix]\nwal_block_size_kb = [4, 8]\nclients = [1]\n\
             [workload]\nbuiltin = \"tpcb-like\"\nduration = \"10s\"\n",
            dir.display()
        )
    }

    #[test]
    fn a_range_gives_its_first_every_kth_and_last_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = repo(dir.path(), 6);
        let text = spec(dir.path(), "range = \"t0..t5\"\nevery = 2");
        let resolved = resolve_commits("s.toml", &text)
            .expect("resolves")
            .expect("has commits");
        assert!(resolved.contains(&text), "the spec's own text is kept");
        let s = blocklab_spec::Spec::parse(&resolved).expect("valid");
        let want: Vec<String> = [0, 2, 4, 5]
            .iter()
            .enumerate()
            .map(|(point, &commit)| point_name(point, &c[commit]))
            .collect();
        assert_eq!(s.series, want);
        assert_eq!(s.series[3], format!("p03-{}", &c[5][..10]));
        // Resolved once: submitting the resolved text again changes nothing.
        assert!(resolve_commits("s.toml", &resolved).expect("ok").is_none());
        // A list keeps its order.
        let text = spec(dir.path(), "list = [\"t3\", \"t1\"]");
        let s = blocklab_spec::Spec::parse(&resolve_commits("s", &text).unwrap().unwrap()).unwrap();
        assert_eq!(s.series, [point_name(0, &c[3]), point_name(1, &c[1])]);
    }

    #[test]
    fn what_cannot_be_resolved_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = repo(dir.path(), 3);
        let err = |points: &str| {
            resolve_commits("s.toml", &spec(dir.path(), points))
                .expect_err(points)
                .to_string()
        };
        let e = err("list = [\"t1\", \"t2\", \"t1\"]");
        assert!(
            e.contains("commits.list[2]: \"t1\" is the same commit as list[0]"),
            "{e}"
        );
        let e = err("range = \"t2..t2\"");
        assert!(
            e.contains("commits.range: t2..t2 holds no commit after t2"),
            "{e}"
        );
        let e = err("range = \"t2..t0\"");
        assert!(
            e.contains(&format!("{} is not an ancestor of {}", c[2], c[0])),
            "{e}"
        );
        let e = err("range = \"t0..nope\"");
        assert!(e.contains("\"nope\" is not a commit of"), "{e}");
        let missing = dir.path().join("missing");
        let text = spec(&missing, "range = \"t0..t1\"");
        let e = resolve_commits("s.toml", &text)
            .expect_err("no repository")
            .to_string();
        assert!(e.contains("is not a commit of"), "{e}");
    }
}
