//! `blocklab bisect JOB --between A B`: the first commit at which a series' effect changed.
//!
//! The series job measured one comparison (say WAL 4K against 8K) at points that are commits
//! of one repository, and its effect differs between points A and B. The commits after A up
//! to B (on B's first-parent line) are the candidates. Each step measures the comparison at
//! the middle candidate in a job of its own (the series' spec with that commit as its only
//! source and a fixed number of rounds), and puts the commit on A's side or B's by its effect
//! (`blocklab_report::bisect`). A step that cannot tell measures the same commit again with
//! twice the rounds, at most three times, and the bisection stops undecided rather
//! than guess (the search is `blocklab_report::bisect::Search`, which the calibration drives
//! too). N candidates take at most ceil(log2 N) decided steps; every step is a job in
//! the catalog, and the steps are printed as they end.

use std::io::Write;

use blocklab_measure::job::{CellResult, QueryResults};
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{QueryResultsRequest, SubmitJobRequest};
use blocklab_report::bisect::{Effect, Search, SearchEnd, Side, comparison};
use blocklab_spec::{JobSpec, Source, referenced_files};

use super::export::job_export;
use super::watch::watch;
use crate::client::{CliError, Transport, answer};
use crate::git::Repo;

/// One measurement of a commit.
#[derive(Debug, Clone)]
pub struct Step {
    pub commit: String,
    pub subject: String,
    pub rounds: u32,
    pub job_id: String,
    pub effect: Option<Effect>,
    pub side: Side,
}

/// What the bisection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The first commit with the later end's effect.
    Commit { commit: String, subject: String },
    /// A commit no step could place: the change is after `after`, at or before `upto`.
    Undecided { after: String, upto: String },
}

#[derive(Debug, Clone)]
pub struct Bisection {
    pub comparison: String,
    /// The two ends: point name, commit and effect.
    pub ends: [(String, String, Effect); 2],
    pub candidates: usize,
    pub steps: Vec<Step>,
    pub found: Found,
}

fn fail(message: impl Into<String>) -> CliError {
    CliError::Bisect(message.into())
}

async fn results<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
) -> Result<QueryResults, CliError> {
    let request = QueryResultsRequest {
        job_id: job_id.to_string(),
        metric: String::new(),
    };
    Ok(answer(client.query_results(request).await)?.into())
}

/// The compared cell of `comparison` (at `point`, in a series).
fn compared<'a>(
    cells: &'a [CellResult],
    point: Option<u32>,
    comparison_of: &str,
) -> Option<&'a CellResult> {
    cells
        .iter()
        .find(|c| !c.is_baseline && c.series_point == point && comparison(c) == comparison_of)
}

/// Finds the series' point `given` names: the start of its name (`p04`), or of its commit
/// (4 characters or more).
fn point_index(spec_points: &[(String, Source)], given: &str) -> Result<usize, CliError> {
    let hits: Vec<usize> = spec_points
        .iter()
        .enumerate()
        .filter(|(_, (name, s))| {
            name.starts_with(given) || (given.len() >= 4 && s.git_ref.starts_with(given))
        })
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(fail(format!(
            "{given:?} is not a point of the series; its points are {}",
            spec_points
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        _ => Err(fail(format!(
            "{given:?} names several points; give more of it"
        ))),
    }
}

/// The spec of a step: the series' spec with `commit` of `source` as its only source.
fn step_spec(
    stored: &str,
    source: &Source,
    commit: &str,
    rounds: u32,
    name: &str,
) -> Result<String, CliError> {
    use toml::Value;
    let mut t: toml::Table = stored
        .parse()
        .map_err(|e: toml::de::Error| fail(format!("the job's spec: {}", e.message())))?;
    for key in ["kind", "series", "commits", "sources", "budget", "search"] {
        t.remove(key);
    }
    if let Some(Value::Table(b)) = t.get_mut("baseline") {
        b.remove("source");
        b.remove("compare_sources");
    }
    t.insert("name".into(), Value::String(name.to_string()));
    t.insert("repetitions".into(), Value::Integer(i64::from(rounds)));
    let mut s = toml::Table::new();
    s.insert("git".into(), Value::String(source.git_url.clone()));
    s.insert("ref".into(), Value::String(commit.to_string()));
    s.insert(
        "configure".into(),
        Value::Array(
            source
                .configure
                .iter()
                .cloned()
                .map(Value::String)
                .collect(),
        ),
    );
    if !source.cflags.is_empty() {
        s.insert("cflags".into(), Value::String(source.cflags.join(" ")));
    }
    t.insert("source".into(), Value::Table(s));
    toml::to_string(&t).map_err(|e| fail(format!("a step's spec: {e}")))
}

/// Bisects `job_id`'s series between points `a` and `b` for the comparison `cell` (its label
/// without the source; default: the first compared cell), writing each step as it ends.
pub async fn bisect<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    [a, b]: [&str; 2],
    cell: Option<&str>,
    mut log: impl Write,
) -> Result<Bisection, CliError> {
    let export = job_export(client, job_id, "", false).await?;
    let stored = export.spec_toml.clone();
    let files = referenced_files(&stored).map_err(|e| fail(format!("the job's spec: {e}")))?;
    if !files.is_empty() {
        return Err(fail(format!(
            "the job's spec names files ({}); a step cannot send them again",
            files.join(", ")
        )));
    }
    let spec = match JobSpec::parse(&stored) {
        Ok(JobSpec::Benchmark(s)) if !s.series.is_empty() => s,
        _ => {
            return Err(fail(format!(
                "job {job_id} is not a series (kind = \"series\")"
            )));
        }
    };
    let points: Vec<(String, Source)> = spec
        .series
        .iter()
        .filter_map(|n| spec.sources.iter().find(|(s, _)| s == n).cloned())
        .collect();
    let (ia, ib) = (point_index(&points, a)?, point_index(&points, b)?);
    if ia >= ib {
        return Err(fail(format!(
            "{a} must come before {b} in the series ({} before {})",
            points[ia.min(ib)].0,
            points[ia.max(ib)].0
        )));
    }
    let (src_a, src_b) = (&points[ia].1, &points[ib].1);
    if src_a.git_url.is_empty() || src_a.git_url != src_b.git_url {
        return Err(fail("both points must be commits of one git repository"));
    }
    let r = results(client, job_id).await?;
    let comparison_of = match cell {
        Some(c) => c.to_string(),
        None => r
            .cells
            .iter()
            .find(|c| !c.is_baseline && c.series_point == Some(ia as u32))
            .map(comparison)
            .ok_or_else(|| fail("the series has no compared cell"))?,
    };
    let effect_at = |i: usize| {
        compared(&r.cells, Some(i as u32), &comparison_of)
            .and_then(Effect::of)
            .ok_or_else(|| {
                fail(format!(
                    "no effect of {comparison_of:?} at {} (the comparisons are named as in `results`' series lines)",
                    points[i].0
                ))
            })
    };
    let (before, after) = (effect_at(ia)?, effect_at(ib)?);
    if !before.differs_from(after) {
        return Err(fail(format!(
            "the effects at {} ({:+.1}%) and {} ({:+.1}%) do not differ at 95%: nothing to bisect",
            points[ia].0,
            before.pct(),
            points[ib].0,
            after.pct()
        )));
    }
    let repo = Repo::open(&src_a.git_url)?;
    let mut line: Vec<String> = vec![repo.commit(&src_a.git_ref)?];
    line.extend(repo.first_parent(&src_a.git_ref, &src_b.git_ref)?);
    let candidates = line.len() - 1;
    writeln!(
        log,
        "bisecting {comparison_of} between {} ({:+.1}%) and {} ({:+.1}%): {candidates} commits",
        points[ia].0,
        before.pct(),
        points[ib].0,
        after.pct()
    )
    .ok();
    // A job with adaptive repetitions keeps its minimum in `repetitions`.
    let base_rounds = spec.repetitions.max(3);
    let mut search = Search::new(candidates, base_rounds, before, after);
    let mut steps = Vec::new();
    while let Some((m, rounds)) = search.next() {
        let commit = line[m].clone();
        let subject = repo.subject(&commit).unwrap_or_default();
        let name = format!("{} bisect {}", spec.name, &commit[..12.min(commit.len())]);
        let text = step_spec(&stored, src_a, &commit, rounds, &name)?;
        let submitted = answer(
            client
                .submit_job(SubmitJobRequest {
                    spec_toml: text,
                    files: Default::default(),
                })
                .await,
        )?;
        let state = watch(client, &submitted.job_id, std::io::sink()).await?;
        let done = state.as_ref().is_some_and(|j| j.state == "done");
        let step_results = results(client, &submitted.job_id).await?;
        let effect = compared(&step_results.cells, None, &comparison_of).and_then(Effect::of);
        let s = if done {
            search.record(effect)
        } else {
            search.stop();
            Side::Undecided(format!(
                "the job ended {}",
                state.map_or("without a state".into(), |j| j.state)
            ))
        };
        let step = Step {
            commit,
            subject,
            rounds,
            job_id: submitted.job_id,
            effect,
            side: s,
        };
        writeln!(log, "{}", step_line(steps.len() + 1, &step)).ok();
        steps.push(step);
    }
    let found = match search.end() {
        SearchEnd::Undecided { lo, hi } => Found::Undecided {
            after: line[lo].clone(),
            upto: line[hi].clone(),
        },
        SearchEnd::Found(i) => {
            let commit = line[i].clone();
            let subject = repo.subject(&commit).unwrap_or_default();
            Found::Commit { commit, subject }
        }
    };
    Ok(Bisection {
        comparison: comparison_of,
        ends: [
            (points[ia].0.clone(), line[0].clone(), before),
            (points[ib].0.clone(), line[candidates].clone(), after),
        ],
        candidates,
        steps,
        found,
    })
}

fn effect_text(e: Option<Effect>) -> String {
    e.map_or("no effect".into(), |e| {
        let (low, high) = (
            (e.ln - e.half).exp_m1() * 100.0,
            (e.ln + e.half).exp_m1() * 100.0,
        );
        format!("{:+.1}% [{low:+.1}%, {high:+.1}%]", e.pct())
    })
}

fn step_line(n: usize, s: &Step) -> String {
    let side = match &s.side {
        Side::Before => "before the change".to_string(),
        Side::After => "after the change".to_string(),
        Side::Undecided(why) => format!("undecided: {why}"),
    };
    format!(
        "step {n}: {} {:?}: {} in {} rounds (job {}): {side}",
        &s.commit[..12.min(s.commit.len())],
        s.subject,
        effect_text(s.effect),
        s.rounds,
        s.job_id
    )
}

/// What `bisect` prints at the end.
pub fn render_bisection(b: &Bisection) -> String {
    let [(na, _, ea), (nb, _, eb)] = &b.ends;
    let mut out = format!(
        "{}: {na} {} -> {nb} {}; {} candidate commits, {} steps\n",
        b.comparison,
        effect_text(Some(*ea)),
        effect_text(Some(*eb)),
        b.candidates,
        b.steps.len()
    );
    for (i, s) in b.steps.iter().enumerate() {
        out.push_str(&format!("  {}\n", step_line(i + 1, s)));
    }
    match &b.found {
        Found::Commit { commit, subject } => {
            out.push_str(&format!("first commit with the changed effect: {commit} {subject:?}\n"));
        }
        Found::Undecided { after, upto } => out.push_str(&format!(
            "undecided: the change is after {after} and at or before {upto}; no step could place the commit between\n"
        )),
    }
    out
}
