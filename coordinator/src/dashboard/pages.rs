//! The dashboard's HTML: an index of hosts and jobs, and a page per job that is the job's
//! `blocklab report` (results, verdicts, charts, hosts, builds, runs, settings) under a
//! navigation bar. Pages refresh themselves while there is something running.

use std::fmt::Write as _;

use axum::http::StatusCode;
use blocklab_measure::job::{Comparison, JobExport, JobSummary};

use super::jobs::JobLine;
use crate::catalog::{HostRecord, JobRecord};
use blocklab_report::html::{STYLE, fact_rows, strings, table};
use blocklab_report::plot::esc;
use blocklab_report::render::table_rows;

const NAV_STYLE: &str = "nav{margin:-1em 0 1em;padding:0.5em 0;border-bottom:1px solid #ddd}\
nav a{margin-right:1.2em}.up{color:#1a7f37;font-weight:bold}.down{color:#b42318;font-weight:bold}\
a.job{font-weight:bold}details summary{cursor:pointer}form.logout{display:inline;float:right}";

pub(crate) fn head(out: &mut String, title: &str, refresh: bool) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{}<title>{}</title>\
         <style>{STYLE}{NAV_STYLE}</style></head><body>\n",
        if refresh {
            "<meta http-equiv=\"refresh\" content=\"10\">"
        } else {
            ""
        },
        esc(title)
    );
    out.push_str(NAV);
}

const NAV: &str = "<nav><a href=\"/\">blocklab</a><a href=\"/#hosts\">hosts</a><a href=\"/#jobs\">jobs</a>\
     <a href=\"/history\">history</a><a href=\"/metrics\">metrics</a><form class=\"logout\" method=\"post\" action=\"/logout\">\
     <button type=\"submit\">sign out</button></form></nav>\n";

/// `/login`: the sign-in form (a read token, sent with POST, never in the URL), with why the
/// last attempt was refused.
pub fn login(message: Option<&str>) -> String {
    let mut out = String::new();
    head(&mut out, "blocklab dashboard: sign in", false);
    out.push_str("<h1>Sign in</h1>");
    if let Some(m) = message {
        let _ = write!(out, "<p class=\"error\">{}</p>", esc(m));
    }
    out.push_str(
        "<form method=\"post\" action=\"/login\"><label>read token \
         <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label> \
         <button type=\"submit\">sign in</button></form>\
         <p class=\"note\">A token with scope <code>read</code> from the coordinator's \
         <code>--api-token-file</code>.</p></body></html>",
    );
    out
}

/// `/`: hosts (up/down, facts) and jobs (state, runs, the headline comparison), newest job
/// first as the catalog lists them; while a job runs, a script updates the rows in place
/// from `/jobs.json` ([`super::jobs`]).
pub fn index(
    hosts: &[HostRecord],
    up: &[bool],
    jobs: &[JobRecord],
    lines: &[JobLine],
    catalog_path: &str,
) -> String {
    let mut out = String::new();
    let active = jobs.iter().any(|j| !j.state.is_finished());
    head(&mut out, "blocklab dashboard", false);
    let _ = writeln!(
        out,
        "<h1>blocklab dashboard</h1><p class=\"note\">catalog {}; read-only</p>",
        esc(catalog_path)
    );
    let _ = writeln!(out, "<h2 id=\"hosts\">Hosts ({})</h2>", hosts.len());
    out.push_str("<table class=\"hosts\"><thead><tr><th>host</th><th>role</th><th>status</th><th>address</th><th>labels</th><th>version</th><th>last seen</th><th>facts</th></tr></thead><tbody>");
    for (h, up) in hosts.iter().zip(up) {
        let (class, word) = if *up { ("up", "up") } else { ("down", "down") };
        let mut facts = String::new();
        table(
            &mut facts,
            "host-facts",
            &strings(&["fact", "value"]),
            &fact_rows(&h.facts_json),
            &[],
        );
        let _ = write!(
            out,
            "<tr data-host=\"{id}\"><td>{id}</td><td>{}</td><td class=\"{class}\">{word}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><details><summary>facts</summary>{facts}</details></td></tr>",
            esc(h.role.as_str()),
            esc(&h.address),
            esc(&h.labels.join(", ")),
            esc(&h.version),
            esc(&h.last_seen),
            id = esc(&h.host_id),
        );
    }
    out.push_str("</tbody></table>\n");
    let _ = writeln!(out, "<h2 id=\"jobs\">Jobs ({})</h2>", jobs.len());
    out.push_str("<table class=\"jobs\"><thead><tr><th>job</th><th>id</th><th>state</th><th>runs done / total / failed</th><th>headline comparison</th><th>database host</th><th>created</th><th>error</th></tr></thead><tbody>");
    for (j, l) in jobs.iter().zip(lines) {
        let _ = write!(
            out,
            "<tr data-job=\"{id}\" data-state=\"{state}\"><td><a class=\"job\" href=\"/jobs/{id}\">{}</a></td><td>{id}</td><td><span class=\"state-name\">{state}</span><br><small class=\"waiting\">{}</small><br><small class=\"build-progress\">{}</small></td><td class=\"runs\">{}</td><td class=\"headline\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&j.name),
            esc(&l.waiting),
            esc(&l.build),
            esc(&l.runs),
            esc(&l.headline),
            esc(j.db_host_id.as_deref().unwrap_or("")),
            esc(&j.created_at),
            esc(j.error.as_deref().unwrap_or("")),
            id = esc(&j.job_id),
            state = esc(j.state.as_str()),
        );
    }
    out.push_str("</tbody></table>\n");
    if active {
        out.push_str(super::jobs::SCRIPT);
    }
    out.push_str("</body></html>\n");
    out
}

/// `/jobs/{id}`: the job's report under the navigation bar.
pub fn job(export: &JobExport) -> String {
    let report = blocklab_report::html::report(export);
    let state = export.job.as_ref().map(|j| j.state.as_str()).unwrap_or("");
    let name = export.job.as_ref().map(|j| j.name.as_str()).unwrap_or("");
    let mut out = String::new();
    let finished = state
        .parse::<blocklab_spec::JobState>()
        .is_ok_and(|s| s.is_finished());
    head(&mut out, &format!("blocklab: {name}"), !finished);
    out.push_str(&verdicts(export));
    if !export.metric.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"history-link\"><a href=\"/history/{m}\">{m} in every job's history</a></p>",
            m = esc(&export.metric)
        );
    }
    // The report's body, without its own document head.
    let body = report
        .split_once("<body>")
        .map(|(_, b)| b)
        .unwrap_or(&report);
    out.push_str(&results_first(body.trim_start_matches('\n')));
    out
}

/// One line over the job's page: how many cells came out faster, slower, equivalent and
/// inconclusive against their baselines, and the band they were judged with.
fn verdicts(export: &JobExport) -> String {
    let cells = &export.results;
    if cells.iter().all(|c| c.is_baseline) {
        return String::new();
    }
    let count = |v: &str| cells.iter().filter(|c| c.verdict == v).count();
    let band = cells
        .iter()
        .map(|c| c.equivalence_pct)
        .find(|b| *b > 0.0)
        .unwrap_or(blocklab_report::stats::DEFAULT_EQUIVALENCE_PCT);
    format!(
        "<p class=\"verdicts\"><b>{}</b>: {} faster, {} slower, {} equivalent, {} inconclusive{} \
         against their baselines (equivalence band ±{band:.1}%; q-values: Benjamini-Hochberg \
         across the job's comparisons)</p>\n",
        esc(&export.metric),
        count("faster"),
        count("slower"),
        count("equivalent"),
        count("inconclusive"),
        match count("too few runs") {
            0 => String::new(),
            k => format!(", {k} with too few runs"),
        },
    )
}

/// The report with its results and charts moved above the job summary: what one opens the
/// dashboard for comes first.
fn results_first(body: &str) -> String {
    let at = |m: &str| body.find(m);
    match (
        at("<h2 id=\"summary\">"),
        at("<h2 id=\"results\">"),
        at("<h2 id=\"hosts\">"),
    ) {
        (Some(s), Some(r), Some(h)) if s < r && r < h => {
            [&body[..s], &body[r..h], &body[s..r], &body[h..]].concat()
        }
        _ => body.to_string(),
    }
}

/// `/compare/{a}/{b}`: each cell of job B against A's like cell, as `blocklab compare` gives it.
pub fn compare(r: &Comparison) -> String {
    let name = |j: &Option<JobSummary>| j.as_ref().map(|j| (j.job_id.clone(), j.name.clone()));
    let (a, b) = (
        name(&r.job_a).unwrap_or_default(),
        name(&r.job_b).unwrap_or_default(),
    );
    let mut out = String::new();
    head(&mut out, &format!("blocklab: {} vs {}", a.1, b.1), false);
    let _ = writeln!(
        out,
        "<h1>{m}: B against A</h1><p>A (baseline): <a class=\"job\" href=\"/jobs/{ai}\">{an}</a> {ai}<br>\
         B (treatment): <a class=\"job\" href=\"/jobs/{bi}\">{bn}</a> {bi}</p>",
        m = esc(&r.metric),
        ai = esc(&a.0),
        an = esc(&a.1),
        bi = esc(&b.0),
        bn = esc(&b.1),
    );
    let (header, rows) = table_rows(&r.cells, true);
    let marks: Vec<bool> = r.cells.iter().map(|c| c.runs_suspect > 0).collect();
    table(&mut out, "results", &header, &rows, &marks);
    out.push_str("</body></html>\n");
    out
}

/// An error page (unknown job, catalog failure).
pub fn error(status: StatusCode, message: &str) -> String {
    let mut out = String::new();
    head(&mut out, "blocklab dashboard", false);
    let _ = writeln!(
        out,
        "<h1>{}</h1><p>{}</p></body></html>",
        esc(&status.to_string()),
        esc(message)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::job::CellResult;

    #[test]
    fn the_job_page_counts_the_verdicts_and_names_the_band() {
        let cell = |verdict: &str, baseline: bool| CellResult {
            verdict: verdict.into(),
            is_baseline: baseline,
            equivalence_pct: 3.0,
            ..Default::default()
        };
        let export = JobExport {
            metric: "tps".into(),
            results: vec![
                cell("baseline", true),
                cell("faster", false),
                cell("equivalent", false),
                cell("equivalent", false),
                cell("inconclusive", false),
            ],
            ..Default::default()
        };
        let line = verdicts(&export);
        assert!(
            line.contains("<b>tps</b>: 1 faster, 0 slower, 2 equivalent, 1 inconclusive"),
            "{line}"
        );
        assert!(line.contains("equivalence band ±3.0%"), "{line}");
        assert!(job(&export).contains("class=\"verdicts\""));
        let only_baseline = JobExport {
            results: vec![cell("baseline", true)],
            ..Default::default()
        };
        assert!(verdicts(&only_baseline).is_empty());
    }
}
