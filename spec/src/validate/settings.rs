//! `[settings]`, `[settings_variants.NAME]` and `memory_policy`: the server settings of each
//! cell, with memory sizes held constant across page sizes.

use std::collections::BTreeMap;

use super::field::check_name;
use crate::error::SpecError;
use crate::guc;
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
        let text =
            hold_constant(name, &text, policy).map_err(|m| SpecError::new(field.clone(), m))?;
        check_setting_value(&field, name, &text)?;
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
    // The embedded catalogs judge the group of a setting they list; one they do not list
    // (a newer version's) is judged by its name here and by the build's own check later.
    if let Some(why) = guc::refused(name, guc::known(name).map(|(_, g)| g)) {
        return Err(SpecError::new(field, why));
    }
    Ok(())
}

/// The value as the newest known version that lists the setting would parse it.
fn check_setting_value(field: &str, name: &str, value: &str) -> Result<(), SpecError> {
    if let Some((version, g)) = guc::known(name)
        && let Some(why) = guc::judge(g, value)
    {
        return Err(SpecError::new(
            field,
            format!("{why} (as PostgreSQL {version} reads {name})"),
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

#[cfg(test)]
mod tests {
    use crate::{Spec, SpecError};

    fn refused(settings: &str) -> SpecError {
        let text = format!(
            r#"
name = "s"
[source]
tarball = "/var/cache/blocklab/src/postgresql-15.18.tar.bz2"
[matrix]
block_size_kb = [8, 16]
[workload]
builtin = "tpcb-like"
duration = "5s"
{settings}
"#
        );
        Spec::parse(&text).expect_err("refused")
    }

    /// The server's log may not be pointed at its configuration (nor anywhere else), and no
    /// setting naming a file, a directory, a library or a command passes the submit.
    #[test]
    fn settings_that_reach_past_the_run_are_refused_at_submit() {
        let where_to_log = "is in the group \"Reporting and Logging / Where to Log\", which no \
            spec may set";
        for (settings, field, says) in [
            (
                "[settings]\nlogging_collector = \"on\"",
                "settings.logging_collector",
                where_to_log,
            ),
            (
                "[settings]\nlog_destination = \"stderr\"",
                "settings.log_destination",
                where_to_log,
            ),
            (
                "[settings_variants.a]\nlog_directory = \".\"",
                "settings_variants.a.log_directory",
                "names a file, a directory, a library or a command",
            ),
            (
                "[settings]\nlog_filename = \"postgresql.conf\"",
                "settings.log_filename",
                "names a file, a directory, a library or a command",
            ),
            (
                "[settings]\nssl_cert_file = \"/etc/shadow\"",
                "settings.ssl_cert_file",
                "SSL, authentication and archiving are the agent's",
            ),
            (
                "[settings]\nkrb_server_keyfile = \"/etc/shadow\"",
                "settings.krb_server_keyfile",
                "SSL, authentication and archiving are the agent's",
            ),
            (
                "[settings]\nextension_control_path = \"/tmp\"",
                "settings.extension_control_path",
                "runs commands or loads code",
            ),
            (
                "[settings]\nprimary_conninfo = \"host=x\"",
                "settings.primary_conninfo",
                "\"Replication / Standby Servers\"",
            ),
            (
                "[settings]\n\"auto_explain.log_analyze\" = \"on\"",
                "settings.auto_explain.log_analyze",
                "customized (extension) option",
            ),
            (
                "[settings]\nmax_connections = \"lots\"",
                "settings.max_connections",
                "\"lots\" is not an integer (as PostgreSQL 18 reads max_connections)",
            ),
            (
                "[settings]\nwal_level = \"replica'; listen_addresses = '*\"",
                "settings.wal_level",
                "is not one of the setting's values (as PostgreSQL 18 reads wal_level)",
            ),
        ] {
            let e = refused(settings);
            assert_eq!(e.field, field, "{settings}: {e}");
            assert!(e.message.contains(says), "{settings}: {}", e.message);
        }
    }

    /// PostgreSQL 18's `io_method` passes the submit; whether the build has it (18, and
    /// `io_uring` only `--with-liburing`) is the build's check before any run.
    #[test]
    fn io_method_is_a_setting_a_spec_may_give() {
        for value in ["worker", "io_uring", "sync"] {
            let text = format!(
                "name = \"s\"\n[source]\ntarball = \"/var/cache/blocklab/src/postgresql-18.tar.bz2\"\n\
                 [matrix]\nblock_size_kb = [8]\n[workload]\nbuiltin = \"tpcb-like\"\n\
                 duration = \"5s\"\n[settings]\nio_method = \"{value}\"\nio_workers = 4\n"
            );
            Spec::parse(&text).unwrap_or_else(|e| panic!("io_method = {value}: {e}"));
        }
    }

    #[test]
    fn a_quoted_setting_cannot_carry_another() {
        let e = refused("[settings]\nshared_buffers = \"64MB' ; listen_addresses = '*\"");
        assert_eq!(e.field, "settings.shared_buffers");
    }
}
