//! `[source]` / `[sources.NAME]`: where the PostgreSQL source comes from and how it is
//! configured and compiled.

use std::collections::BTreeMap;

use super::field::check_name;
use crate::error::SpecError;
use crate::model::Source;
use crate::raw::RawSource;

/// One `[source]` (named "default") or several `[sources.NAME]`, not both.
pub(super) fn validate_sources(
    single: Option<RawSource>,
    named: BTreeMap<String, RawSource>,
) -> Result<Vec<(String, Source)>, SpecError> {
    let list: Vec<(String, String, RawSource)> = match (single, named.is_empty()) {
        (Some(s), true) => vec![("default".into(), "source".into(), s)],
        (None, false) => named
            .into_iter()
            .map(|(n, s)| (n.clone(), format!("sources.{n}"), s))
            .collect(),
        (Some(_), false) => {
            return Err(SpecError::new(
                "sources",
                "give either [source] or [sources.NAME] tables, not both",
            ));
        }
        (None, true) => {
            return Err(SpecError::new(
                "source",
                "missing: give [source] with tarball, url + sha256, or git + ref",
            ));
        }
    };
    let mut out = Vec::new();
    for (name, field, s) in list {
        check_name(&field, &name)?;
        out.push((name, validate_source(&field, s)?));
    }
    Ok(out)
}

fn validate_source(field: &str, s: RawSource) -> Result<Source, SpecError> {
    let given = [s.tarball.is_some(), s.url.is_some(), s.git.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(SpecError::new(
            field,
            "give exactly one of tarball, url (with sha256), git (with ref)",
        ));
    }
    let sha256 = check_sha256(field, s.sha256.unwrap_or_default())?;
    if let Some(url) = &s.url {
        check_url(field, url, &sha256)?;
    }
    if let Some(t) = &s.tarball {
        check_tarball_path(t).map_err(|m| SpecError::new(format!("{field}.tarball"), m))?;
    }
    let git_ref = s.git_ref.unwrap_or_default();
    if let Some(g) = &s.git {
        check_git(field, g, &git_ref)?;
    }
    for (i, flag) in s.configure.iter().enumerate() {
        validate_configure_flag(flag)
            .map_err(|m| SpecError::new(format!("{field}.configure[{i}]"), m))?;
    }
    let cflags = parse_cflags(field, &s.cflags.unwrap_or_default())?;
    Ok(Source {
        tarball: s.tarball.unwrap_or_default(),
        url: s.url.unwrap_or_default(),
        sha256,
        git_url: s.git.unwrap_or_default(),
        git_ref,
        configure: s.configure,
        cflags,
    })
}

/// `sha256`, lowercased: empty, or 64 hexadecimal characters.
fn check_sha256(field: &str, sha256: String) -> Result<String, SpecError> {
    let sha256 = sha256.to_ascii_lowercase();
    if !sha256.is_empty() && (sha256.len() != 64 || !sha256.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Err(SpecError::new(
            format!("{field}.sha256"),
            "must be 64 hexadecimal characters",
        ));
    }
    Ok(sha256)
}

/// `url`: http(s), no whitespace, and a `sha256` with it.
fn check_url(field: &str, url: &str, sha256: &str) -> Result<(), SpecError> {
    if !(url.starts_with("https://") || url.starts_with("http://"))
        || url.chars().any(char::is_whitespace)
    {
        return Err(SpecError::new(
            format!("{field}.url"),
            "must be an http:// or https:// URL",
        ));
    }
    if sha256.is_empty() {
        return Err(SpecError::new(
            format!("{field}.sha256"),
            "is required with url",
        ));
    }
    Ok(())
}

/// `git` and its `ref`: a plain URL or path, and a branch, tag or commit.
pub(super) fn check_git(field: &str, git: &str, git_ref: &str) -> Result<(), SpecError> {
    // `ext::` and `fd::` are git transports that run commands or use descriptors.
    if git.is_empty()
        || git.starts_with('-')
        || git.contains("::")
        || git.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(SpecError::new(
            format!("{field}.git"),
            "must be a git URL or path",
        ));
    }
    let ok = !git_ref.is_empty()
        && !git_ref.starts_with('-')
        && git_ref
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
    if !ok {
        return Err(SpecError::new(
            format!("{field}.ref"),
            "is required with git: a branch, tag or commit (letters, digits, . _ / -)",
        ));
    }
    Ok(())
}

/// `cflags`, split into words, each a plain compiler flag.
pub(super) fn parse_cflags(field: &str, cflags: &str) -> Result<Vec<String>, SpecError> {
    let words: Vec<String> = cflags.split_whitespace().map(String::from).collect();
    for w in &words {
        let ok = w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=.,+/".contains(c));
        if !ok {
            return Err(SpecError::new(
                format!("{field}.cflags"),
                format!("{w:?} is not a plain compiler flag"),
            ));
        }
    }
    Ok(words)
}

/// A configure flag as the agent will accept it: `--name` or `--name=value`, no shell
/// metacharacters, and none of the flags blocklab sets itself.
pub fn validate_configure_flag(flag: &str) -> Result<(), String> {
    if flag.len() > 256 {
        return Err(format!(
            "a configure flag of {} bytes is longer than the limit of 256",
            flag.len()
        ));
    }
    let Some(body) = flag.strip_prefix("--") else {
        return Err(format!("{flag:?} must start with --"));
    };
    let (name, value) = body.split_once('=').unwrap_or((body, ""));
    let name_ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let value_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./,:+-".contains(c));
    if !name_ok || !value_ok {
        return Err(format!(
            "{flag:?} is not a plain configure flag (letters, digits, '-', and a value of letters, digits and _./,:+-)"
        ));
    }
    if ["prefix", "with-blocksize", "with-wal-blocksize"].contains(&name) {
        return Err(format!(
            "{flag:?} is set by blocklab from the matrix; remove it"
        ));
    }
    Ok(())
}

/// A tarball on the agent host: an absolute path of plain characters, no `..`, no `:` (GNU tar
/// reads `host:path` as a remote archive).
fn check_tarball_path(t: &str) -> Result<(), &'static str> {
    if !t.starts_with('/') || t.len() > 4096 {
        return Err("must be an absolute path on the agent host (at most 4096 bytes)");
    }
    if t.split('/').any(|c| c == "..") {
        return Err("must not contain '..'");
    }
    if !t
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._+-~@,=".contains(c))
    {
        return Err("may contain only letters, digits and / . _ + - ~ @ , =");
    }
    Ok(())
}
