//! Checks shared by every part of the spec: names, durations, and TOML errors turned into
//! errors that name their field.

use std::time::Duration;

use crate::error::SpecError;

/// A variant or source name: 1 to 40 letters, digits, `_` or `-`.
pub(super) fn check_name(field: &str, name: &str) -> Result<(), SpecError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(SpecError::new(
            field,
            "names are 1 to 40 letters, digits, '_' or '-'",
        ))
    }
}

/// A duration such as `"90s"` or `"2min"`, at most a day.
pub(super) fn parse_duration(field: &str, text: &str) -> Result<Duration, SpecError> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        SpecError::new(
            field,
            format!("cannot parse {text:?} as a duration ({e}); write e.g. \"90s\" or \"2min\""),
        )
    })?;
    if d > Duration::from_secs(24 * 3600) {
        return Err(SpecError::new(field, "must be at most 24h"));
    }
    Ok(d)
}

/// A TOML syntax or type error as a [`SpecError`] naming the key (with its table) and line.
pub(crate) fn toml_error(text: &str, e: toml::de::Error) -> SpecError {
    let msg = e.message().trim().to_string();
    let Some(span) = e.span() else {
        return SpecError::new(backticked(&msg).unwrap_or_else(|| "spec".into()), msg);
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    // The key on that line, prefixed by the table it sits in.
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let field = match (table, key, backticked(&msg)) {
        (_, _, Some(b)) if msg.starts_with("missing field") => b,
        (Some(t), Some(k), _) => format!("{t}.{k}"),
        (None, Some(k), _) => k,
        (_, None, Some(b)) => b,
        _ => "spec".into(),
    };
    SpecError::new(field, format!("{msg} (line {line_no})"))
}

fn backticked(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_string()).filter(|w| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    })
}
