//! `/history/{metric}`: every job's % change of one metric against its baseline with its 95%
//! CI, as a forest plot (one row per compared cell per job, with its verdict) and a table,
//! filterable by database host, PostgreSQL version and workload (`?host=&version=&workload=`,
//! the filters listing the values present). A rerun sits right after the job it reruns, with a
//! link to their comparison. Every figure comes from [`crate::results`].

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use blocklab_measure::job::CellResult;
use blocklab_report::ReportError;
use blocklab_report::format::pct;
use blocklab_report::plot::{ForestRow, esc, forest_chart};
use blocklab_spec::JobKind;

use crate::catalog::history::RanOn;
use crate::catalog::{Catalog, CatalogError, JobRecord};
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
) -> Result<String, HistoryError> {
    let jobs = catalog.jobs().await?;
    let metrics = metrics_present(&jobs);
    let mut ran = catalog.ran_on().await?;
    let mut present = Present::default();
    let mut entries = Vec::new();
    for job in jobs
        .into_iter()
        .filter(|j| j.kind == JobKind::Benchmark && j.runs_done > 0)
    {
        let r = match query_results(catalog, catalog_path, &job.job_id, metric).await {
            Ok(r) => r,
            // The job has no such metric.
            Err(ResultsError::Report(ReportError::Stats(_))) => continue,
            Err(e) => return Err(e.into()),
        };
        let cells: Vec<CellResult> = r
            .cells
            .into_iter()
            .filter(|c| !c.is_baseline && c.pct_change_vs_baseline.is_some())
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
         baselines: the % change with its 95% CI and the verdict, as the job's results give \
         them. A rerun follows the job it reruns.</p><p class=\"metrics\">metrics: ",
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
                 <td class=\"num\">{p}</td><td class=\"num\">{ci}</td><td>{v}</td></tr>",
                if c.runs_suspect > 0 { " suspect" } else { "" },
                cell = esc(&c.label),
                v = esc(&c.verdict),
                name = esc(&e.job.name),
                base = esc(&c.baseline_label),
                hosts = esc(&join(&e.ran.hosts)),
                versions = esc(&join(&e.ran.versions)),
                workload = esc(&e.job.workload),
                p = esc(&pct(p)),
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
         <th>95% CI</th><th>verdict</th></tr></thead><tbody>",
    );
    out.push_str(&rows);
    out.push_str("</tbody></table>\n");
    out.push_str("</body></html>\n");
    out
}
