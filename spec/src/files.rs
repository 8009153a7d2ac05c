//! The files a spec names (workload scripts, `[workload.init] sql`): listed from the text so
//! the CLI can read and send them, and from a validated spec so the coordinator can refuse
//! files it was sent that the spec does not name.

use std::collections::BTreeSet;

use crate::error::SpecError;
use crate::model::{Spec, Workload};
use crate::raw::{RawScript, RawSpec};
use crate::script::ScriptSource;
use crate::validate::toml_error;

/// The files (as the spec writes their paths) a spec's text names, in the order they appear,
/// each once. Only the TOML is read here; validation happens when the spec is parsed with
/// the files' text.
pub fn referenced_files(text: &str) -> Result<Vec<String>, SpecError> {
    if crate::probe::spec_kind(text)? == crate::state::JobKind::Probe {
        return Ok(Vec::new());
    }
    let raw: RawSpec = toml::from_str(text).map_err(|e| toml_error(text, e))?;
    let mut out: Vec<String> = Vec::new();
    let mut add = |scripts: Option<&Vec<RawScript>>, init: Option<&toml::Value>| {
        let names = scripts
            .into_iter()
            .flatten()
            .filter_map(|s| s.file.clone())
            .chain(
                init.and_then(|i| i.get("sql"))
                    .and_then(|s| s.as_str())
                    .map(str::to_string),
            );
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    };
    add(raw.workload.scripts.as_ref(), raw.workload.init.as_ref());
    for o in raw.workload_variants.values() {
        add(o.scripts.as_ref(), o.init.as_ref());
    }
    Ok(out)
}

fn workload_files(w: &Workload, out: &mut BTreeSet<String>) {
    for s in &w.pgbench.scripts {
        if let ScriptSource::File(f) = &s.source {
            out.insert(f.name.clone());
        }
    }
    if let Some(f) = &w.init.sql {
        out.insert(f.name.clone());
    }
}

/// The files a validated spec holds.
pub fn named_files(spec: &Spec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    workload_files(&spec.workload, &mut out);
    for (_, w) in &spec.workload_variants {
        workload_files(w, &mut out);
    }
    out
}

/// Every file sent is one the spec names.
pub(crate) fn check_files_used(spec: &Spec, files: &crate::script::Files) -> Result<(), SpecError> {
    let named = named_files(spec);
    match files.keys().find(|k| !named.contains(*k)) {
        Some(extra) => Err(SpecError::new(
            "files",
            format!("{extra:?} was sent but the spec names no such file"),
        )),
        None => Ok(()),
    }
}
