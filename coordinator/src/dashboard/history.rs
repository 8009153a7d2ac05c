//! `/history/{metric}`: every job's % change of one metric against its baseline with its 95%
//! CI, as a forest plot (one row per compared cell per job, with its verdict) and a table,
//! filterable by database host, PostgreSQL version and workload (`?host=&version=&workload=`,
//! the filters listing the values present). A rerun sits right after the job it reruns, with a
//! link to their comparison. Every figure comes from [`crate::results`].

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use futures::StreamExt;

use blocklab_measure::job::{CellResult, QueryResults};
use blocklab_report::ReportError;
use blocklab_report::format::pct;
use blocklab_report::plot::{ForestRow, esc, forest_chart};
use blocklab_spec::JobKind;

use crate::catalog::history::RanOn;
use crate::catalog::{Catalog, CatalogError, JobRecord};
use crate::dashboard::cache::Finished;
use crate::dashboard::pages;
use crate::results::{ResultsError, query_results};

/// The filters a history page takes, in its query string's order.
pub const FILTERS: [&str; 3] = ["host", "version", "workload"];

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("{0}")]
    BadFilter(String),
}

/// The chosen value of each filter (`None` = any).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    pub host: Option<String>,
    pub version: Option<String>,
    pub workload: Option<String>,
}

impl Filters {
    /// From the query string's pairs; an unknown key is refused, naming those allowed. An
    /// empty value means any.
    pub fn parse(pairs: &[(String, String)]) -> Result<Filters, HistoryError> {
        let mut f = Filters::default();
        for (k, v) in pairs {
            let slot = match k.as_str() {
                "host" => &mut f.host,
                "version" => &mut f.version,
                "workload" => &mut f.workload,
                other => {
                    return Err(HistoryError::BadFilter(format!(
                        "unknown filter {other:?}; allowed: {}",
                        FILTERS.join(", ")
                    )));
                }
            };
            *slot = Some(v.clone()).filter(|v| !v.is_empty());
        }
        Ok(f)
    }
}

/// One job on the page: its record, where it ran, and its compared cells of the metric.
struct Entry {
    job: JobRecord,
    ran: RanOn,
    cells: Vec<CellResult>,
}

/// The values present for each filter.
#[derive(Default)]
struct Present {
    host: BTreeSet<String>,
    version: BTreeSet<String>,
    workload: BTreeSet<String>,
}

fn check(
    name: &str,
    chosen: &Option<String>,
    present: &BTreeSet<String>,
) -> Result<(), HistoryError> {
    match chosen {
        Some(v) if !present.contains(v) => Err(HistoryError::BadFilter(format!(
            "{name}: no job of this metric has {v:?}; present: {}",
            present.iter().cloned().collect::<Vec<_>>().join(", ")
        ))),
        _ => Ok(()),
    }
}

/// The metrics a history page exists for: tps, and every headline metric a benchmark job has.
pub fn metrics_present(jobs: &[JobRecord]) -> Vec<String> {
    let mut out = vec!["tps".to_string()];
    for j in jobs.iter().filter(|j| j.kind == JobKind::Benchmark) {
        if !j.headline_metric.is_empty() && !out.contains(&j.headline_metric) {
            out.push(j.headline_metric.clone());
        }
    }
    out
}

/// Jobs in the page's order: a rerun right after the job it reruns (and its reruns after it),
/// the groups in the order the catalog lists jobs (oldest first).
fn grouped(entries: Vec<Entry>) -> Vec<Entry> {
    let ids: HashMap<String, Option<String>> = entries
        .iter()
        .map(|e| (e.job.job_id.clone(), e.job.rerun_of.clone()))
        .collect();
    let root = |id: &str| {
        let mut at = id.to_string();
        for _ in 0..ids.len() {
            match ids.get(&at).cloned().flatten() {
                Some(up) if ids.contains_key(&up) => at = up,
                _ => break,
            }
        }
        at
    };
    let order: Vec<String> = entries.iter().map(|e| root(&e.job.job_id)).collect();
    let first: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .rev()
        .map(|(i, r)| (r.as_str(), i))
        .collect();
    let mut keyed: Vec<(usize, bool, String, Entry)> = Vec::new();
    for (e, r) in entries.into_iter().zip(order.iter()) {
        let is_root = e.job.job_id == *r;
        keyed.push((first[r.as_str()], !is_root, e.job.created_at.clone(), e));
    }
    keyed.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
    keyed.into_iter().map(|k| k.3).collect()
}

/// Reads every finished benchmark job's cells of `metric` and renders the page.
pub async fn page(
    catalog: &Catalog,
    catalog_path: &str,
    metric: &str,
    filters: &Filters,
    kept: &Finished<QueryResults>,
) -> Result<String, HistoryError> {
    let jobs = catalog.jobs().await?;
    let metrics = metrics_present(&jobs);
    let mut ran = catalog.ran_on().await?;
    let mut present = Present::default();
    let mut entries = Vec::new();
    let wanted: Vec<JobRecord> = jobs
        .into_iter()
        .filter(|j| j.kind == JobKind::Benchmark && j.runs_done > 0)
        .collect();
    // Several jobs read at once (in order), as many as the catalog has readers.
    let reads: Vec<_> = wanted
        .iter()
        .map(|job| results_of(catalog, catalog_path, job, metric, kept))
        .collect();
    let results: Vec<_> = futures::stream::iter(reads)
        .buffered(crate::catalog::READERS)
        .collect()
        .await;
    for (job, r) in wanted.into_iter().zip(results) {
        // None: the job has no such metric.
        let Some(r) = r? else {
            continue;
        };
        let cells: Vec<CellResult> = r
            .cells
            .iter()
            .filter(|c| !c.is_baseline && c.pct_change_vs_baseline.is_some())
            .cloned()
            .collect();
        if cells.is_empty() {
            continue;
        }
        let ran = ran.remove(&job.job_id).unwrap_or_default();
        present.host.extend(ran.hosts.iter().cloned());
        present.version.extend(ran.versions.iter().cloned());
        if !job.workload.is_empty() {
            present.workload.insert(job.workload.clone());
        }
        entries.push(Entry { job, ran, cells });
    }
    check("host", &filters.host, &present.host)?;
    check("version", &filters.version, &present.version)?;
    check("workload", &filters.workload, &present.workload)?;
    let all: HashMap<String, String> = entries
        .iter()
        .map(|e| (e.job.job_id.clone(), e.job.name.clone()))
        .collect();
    let kept: Vec<Entry> = entries
        .into_iter()
        .filter(|e| {
            filters
                .host
                .as_ref()
                .is_none_or(|h| e.ran.hosts.contains(h))
                && filters
                    .version
                    .as_ref()
                    .is_none_or(|v| e.ran.versions.contains(v))
                && filters
                    .workload
                    .as_ref()
                    .is_none_or(|w| e.job.workload == *w)
        })
        .collect();
    Ok(render(
        metric,
        &metrics,
        filters,
        &present,
        &grouped(kept),
        &all,
    ))
}

/// The job's results of `metric`, kept once it is finished; `None` when it has no such metric.
async fn results_of(
    catalog: &Catalog,
    catalog_path: &str,
    job: &JobRecord,
    metric: &str,
    kept: &Finished<QueryResults>,
) -> Result<Option<Arc<QueryResults>>, ResultsError> {
    let key = format!("{}\n{metric}", job.job_id);
    if let Some(r) = kept.get(&key) {
        return Ok(Some(r));
    }
    match query_results(catalog, catalog_path, &job.job_id, metric).await {
        Ok(r) if job.state.is_finished() => Ok(Some(kept.put(key, r))),
        Ok(r) => Ok(Some(Arc::new(r))),
        Err(ResultsError::Report(ReportError::Stats(_))) => Ok(None),
        Err(e) => Err(e),
    }
}

fn select(out: &mut String, name: &str, chosen: &Option<String>, values: &BTreeSet<String>) {
    let _ = write!(
        out,
        "<label>{name} <select name=\"{name}\"><option value=\"\">any</option>"
    );
    for v in values {
        let _ = write!(
            out,
            "<option value=\"{v}\"{}>{v}</option>",
            if chosen.as_deref() == Some(v.as_str()) {
                " selected"
            } else {
                ""
            },
            v = esc(v)
        );
    }
    out.push_str("</select></label> ");
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

fn render(
    metric: &str,
    metrics: &[String],
    filters: &Filters,
    present: &Present,
    entries: &[Entry],
    names: &HashMap<String, String>,
) -> String {
    let mut out = String::new();
    pages::head(&mut out, &format!("blocklab history: {metric}"), false);
    let _ = write!(
        out,
        "<h1>History: {m}</h1><p class=\"note\">Each job's cells of <b>{m}</b> against their \
         baselines: the % change with its 95% CI, the model it was estimated with, the smallest \
         change it could detect (MDE, 80% power), the verdict and, when inconclusive, the more \
         rounds that would show equivalence, as the job's results give them. A rerun follows the job it reruns.</p><p class=\"metrics\">metrics: ",
        m = esc(metric)
    );
    for m in metrics {
        let _ = write!(out, "<a href=\"/history/{0}\">{0}</a> ", esc(m));
    }
    let _ = write!(
        out,
        "</p><form class=\"filters\" method=\"get\" action=\"/history/{}\">",
        esc(metric)
    );
    select(&mut out, "host", &filters.host, &present.host);
    select(&mut out, "version", &filters.version, &present.version);
    select(&mut out, "workload", &filters.workload, &present.workload);
    out.push_str("<button type=\"submit\">filter</button></form>\n");
    let mut forest = Vec::new();
    let mut rows = String::new();
    let mut count = 0;
    for e in entries {
        let id = esc(&e.job.job_id);
        let rerun = match &e.job.rerun_of {
            Some(o) => format!(
                "rerun of <a class=\"job\" href=\"/jobs/{o}\">{}</a> \
                 (<a class=\"compare\" href=\"/compare/{o}/{id}\">compare</a>)",
                esc(names.get(o).map_or(o.as_str(), |n| n.as_str())),
                o = esc(o),
            ),
            None => String::new(),
        };
        for c in &e.cells {
            let p = c.pct_change_vs_baseline.unwrap_or(0.0);
            let ci = c.pct_change_ci95_low.zip(c.pct_change_ci95_high);
            forest.push(ForestRow {
                label: format!("{}: {}", e.job.name, c.label),
                group: e.job.job_id.clone(),
                pct: p,
                ci95: ci,
                verdict: c.verdict.clone(),
            });
            count += 1;
            let _ = write!(
                rows,
                "<tr class=\"forest-row{}\" data-job=\"{id}\" data-cell=\"{cell}\" data-verdict=\"{v}\">\
                 <td><a class=\"job\" href=\"/jobs/{id}\">{name}</a></td><td>{rerun}</td><td>{cell}</td>\
                 <td>{base}</td><td>{hosts}</td><td>{versions}</td><td>{workload}</td>\
                 <td class=\"num\">{p}</td><td class=\"num\">{ci}</td><td>{model}</td>\
                 <td class=\"num\">{mde}</td><td>{v}</td><td class=\"num\">{more}</td></tr>",
                if c.runs_suspect > 0 { " suspect" } else { "" },
                cell = esc(&c.label),
                v = esc(&c.verdict),
                name = esc(&e.job.name),
                base = esc(&c.baseline_label),
                hosts = esc(&join(&e.ran.hosts)),
                versions = esc(&join(&e.ran.versions)),
                workload = esc(&e.job.workload),
                p = esc(&pct(p)),
                model = esc(&c.model),
                mde = c.mde_pct.map(|m| format!("{m:.2}%")).unwrap_or_default(),
                more = match (c.extra_rounds, c.extra_rounds_cannot) {
                    (Some(k), _) => format!("+{k}"),
                    (None, true) => "cannot".into(),
                    (None, false) => String::new(),
                },
                ci = esc(&ci
                    .map(|(a, b)| format!("[{}, {}]", pct(a), pct(b)))
                    .unwrap_or_default()),
            );
        }
    }
    let _ = writeln!(
        out,
        "<p class=\"history-count\">{count} compared cells in {} jobs</p>",
        entries.len()
    );
    if let Some(chart) = forest_chart(&format!("{metric}: % change against the baseline"), &forest)
    {
        out.push_str("<div class=\"charts\">");
        out.push_str(&chart.svg);
        out.push_str("</div>\n");
    }
    out.push_str(
        "<table class=\"history\"><thead><tr><th>job</th><th>rerun</th><th>cell</th>\
         <th>baseline</th><th>host</th><th>version</th><th>workload</th><th>change</th>\
         <th>95% CI</th><th>model</th><th>MDE (80%)</th><th>verdict</th>\
         <th>rounds to equivalence</th></tr></thead><tbody>",
    );
    out.push_str(&rows);
    out.push_str("</tbody></table>\n");
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_spec::JobState;

    #[test]
    fn the_table_shows_the_model_the_mde_and_the_rounds_to_equivalence() {
        let job = JobRecord {
            job_id: "j1".into(),
            name: "pages".into(),
            state: JobState::Done,
            error: None,
            db_host_id: None,
            created_at: String::new(),
            spec_toml: String::new(),
            seed: None,
            kind: JobKind::Benchmark,
            workload: "tpcb-like".into(),
            headline_metric: "tps".into(),
            waiting: None,
            build_progress: None,
            rerun_of: None,
            runs_total: 0,
            runs_done: 0,
            runs_failed: 0,
        };
        let cell = CellResult {
            label: "bs=16K".into(),
            pct_change_vs_baseline: Some(0.3),
            pct_change_ci95_low: Some(-1.2),
            pct_change_ci95_high: Some(1.8),
            model: "rounds".into(),
            mde_pct: Some(1.234),
            verdict: "inconclusive".into(),
            extra_rounds: Some(7),
            ..Default::default()
        };
        let cannot = CellResult {
            label: "bs=32K".into(),
            model: "welch".into(),
            extra_rounds: None,
            extra_rounds_cannot: true,
            ..cell.clone()
        };
        let entries = [Entry {
            job,
            ran: RanOn::default(),
            cells: vec![cell, cannot],
        }];
        let page = render(
            "tps",
            &[],
            &Filters::default(),
            &Present::default(),
            &entries,
            &HashMap::new(),
        );
        assert!(
            page.contains(
                "<th>model</th><th>MDE (80%)</th><th>verdict</th><th>rounds to equivalence</th>"
            ),
            "{page}"
        );
        assert!(
            page.contains("<td>rounds</td><td class=\"num\">1.23%</td><td>inconclusive</td><td class=\"num\">+7</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td>welch</td><td class=\"num\">1.23%</td><td>inconclusive</td><td class=\"num\">cannot</td>"),
            "{page}"
        );
    }
}
