//! `[settings]`, `[settings_variants.NAME]` and `memory_policy`: the server settings of each
//! cell, with memory sizes held constant across page sizes.

use std::collections::BTreeMap;

use super::field::check_name;
use crate::error::SpecError;
use crate::memory::{MemoryPolicy, hold_constant};

/// Settings as (name, value) pairs in PostgreSQL's text form.
type Settings = Vec<(String, String)>;

/// `memory_policy`: refuse (the default) or convert page-counted memory settings.
pub(super) fn memory_policy(text: Option<&str>) -> Result<MemoryPolicy, SpecError> {
    match text.unwrap_or("refuse") {
        "refuse" => Ok(MemoryPolicy::Refuse),
        "convert" => Ok(MemoryPolicy::Convert),
        other => Err(SpecError::new(
            "memory_policy",
            format!("{other:?} is not allowed; use refuse or convert"),
        )),
    }
}

/// The named settings variants; none given is one variant "default" with no settings.
pub(super) fn settings_variants(
    tables: &BTreeMap<String, BTreeMap<String, toml::Value>>,
    policy: MemoryPolicy,
) -> Result<Vec<(String, Settings)>, SpecError> {
    let mut out = vec![];
    for (name, table) in tables {
        let field = format!("settings_variants.{name}");
        check_name(&field, name)?;
        out.push((name.clone(), validate_settings(&field, table, policy)?));
    }
    if out.is_empty() {
        out.push(("default".to_string(), vec![]));
    }
    Ok(out)
}

/// One settings table.
pub(super) fn validate_settings(
    prefix: &str,
    table: &BTreeMap<String, toml::Value>,
    policy: MemoryPolicy,
) -> Result<Settings, SpecError> {
    let mut out = Vec::new();
    for (name, value) in table {
        let field = format!("{prefix}.{name}");
        check_setting_name(&field, name)?;
        let text = setting_text(&field, value)?;
        let text = hold_constant(name, &text, policy).map_err(|m| SpecError::new(field, m))?;
        out.push((name.clone(), text));
    }
    Ok(out)
}

fn check_setting_name(field: &str, name: &str) -> Result<(), SpecError> {
    if !valid_setting_name(name) {
        return Err(SpecError::new(
            field,
            "setting names are lowercase letters, digits, '_' and '.'",
        ));
    }
    if crate::reserved::RESERVED_SETTINGS.contains(&name) {
        return Err(SpecError::new(
            field,
            "may not be set by a spec: the agent sets it, or it runs commands or loads code on the database host",
        ));
    }
    Ok(())
}

/// A setting's value as text: one line of at most 1024 characters; booleans are on/off.
fn setting_text(field: &str, value: &toml::Value) -> Result<String, SpecError> {
    let text = match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
        _ => return Err(SpecError::new(field, "must be a string, number or boolean")),
    };
    if text.chars().any(|c| c.is_control()) || text.len() > 1024 {
        return Err(SpecError::new(
            field,
            "must be one line of at most 1024 characters",
        ));
    }
    Ok(text)
}

fn valid_setting_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
}
