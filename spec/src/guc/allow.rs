//! Which settings a spec may give: those of the groups a benchmark varies, and nothing that
//! names a file, a directory, a library or a command, whatever its group.
//!
//! A setting is judged by its name alone ([`refused_name`]: the agent's own settings, those
//! that run commands or load code, and the shapes of names that point into the file system)
//! and, where the GUC catalog of the build (or the embedded one of a known version) lists it,
//! by its group ([`allowed_group`]). Everything else PostgreSQL offers (where the server
//! logs, authentication, SSL, replication, archiving and recovery, file locations, library
//! preloading, developer and customized options) stays the agent's.

use super::catalog::Guc;

/// Settings no spec may give: those the agent owns (where the server listens, its files),
/// and those that run shell commands or load code as the PostgreSQL user.
pub const RESERVED_SETTINGS: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "unix_socket_group",
    "unix_socket_permissions",
    "data_directory",
    "hba_file",
    "ident_file",
    "config_file",
    "include",
    "include_if_exists",
    "include_dir",
    "external_pid_file",
    "archive_command",
    "archive_library",
    "restore_command",
    "archive_cleanup_command",
    "recovery_end_command",
    "ssl_passphrase_command",
    "shared_preload_libraries",
    "session_preload_libraries",
    "local_preload_libraries",
    "dynamic_library_path",
    "extension_control_path",
    "jit_provider",
];

/// The GUC groups (as `postgres --describe-config` names them, PostgreSQL 15 to 18) whose
/// settings a spec may give; a group ending in " /" admits each of its subgroups.
pub const ALLOWED_GROUPS: &[&str] = &[
    "Connections and Authentication / Connection Settings",
    "Connections and Authentication / TCP Settings",
    "Resource Usage /",
    "Write-Ahead Log / Settings",
    "Write-Ahead Log / Checkpoints",
    "Write-Ahead Log / Recovery",
    "Write-Ahead Log / Summarization",
    "Query Tuning /",
    "Reporting and Logging / When to Log",
    "Reporting and Logging / What to Log",
    "Reporting and Logging / Process Title",
    "Statistics /",
    "Autovacuum",
    "Vacuuming /",
    "Client Connection Defaults / Statement Behavior",
    "Client Connection Defaults / Locale and Formatting",
    "Client Connection Defaults / Other Defaults",
    "Lock Management",
    "Version and Platform Compatibility /",
    "Error Handling",
];

/// Settings `postgres --describe-config` does not list (they are kept out of the sample
/// file) that a spec may still give: `application_name` (Reporting and Logging / What to
/// Log), a plain string; `debug_io_direct` (PostgreSQL 16 and later, a developer option:
/// direct I/O for `data`, `wal` and `wal_init` files, the way to measure reads that no
/// OS page cache serves), a list of those words that the build's own check of the
/// configuration judges like every other value.
pub const UNLISTED_ALLOWED: &[&str] = &["application_name", "debug_io_direct"];

/// What the allowed groups hold, for messages.
pub const ALLOWED_SUMMARY: &str = "memory, disk, kernel resources, background writer, I/O and \
worker processes, WAL settings, checkpoints, recovery prefetch, the planner, when and what to \
log (not where), statistics, vacuum and autovacuum, client defaults, locks, compatibility, error \
handling, connection limits";

/// Endings of names that point into the file system or at code (`log_directory`,
/// `ssl_cert_file`, `krb_server_keyfile`, `log_filename`, `stats_temp_directory`, ...).
const PATH_LIKE_SUFFIXES: &[&str] = &[
    "file",
    "_filename",
    "_directory",
    "_directories",
    "_dir",
    "_command",
    "_library",
    "_libraries",
    "_provider",
    "_path",
];

/// Names allowed although they end like a path: `search_path` names schemas.
const NOT_A_PATH: &[&str] = &["search_path"];

/// Why no spec may give the setting `name`, judged by its name alone; `None` if the name
/// may be given (its group is judged where a catalog lists it).
pub fn refused_name(name: &str) -> Option<String> {
    if RESERVED_SETTINGS.contains(&name) {
        return Some(
            "may not be set by a spec: the agent sets it, or it runs commands or loads code on \
             the database host"
                .into(),
        );
    }
    if name.contains('.') {
        return Some(
            "is a customized (extension) option; no spec may preload libraries, so none applies"
                .into(),
        );
    }
    if name.starts_with("ssl") || name.starts_with("krb_") || name.starts_with("archive_") {
        return Some(
            "may not be set by a spec: SSL, authentication and archiving are the agent's".into(),
        );
    }
    if !NOT_A_PATH.contains(&name) && PATH_LIKE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return Some(
            "names a file, a directory, a library or a command, which no spec may choose".into(),
        );
    }
    None
}

/// Whether settings of the catalog group `group` may be given.
pub fn allowed_group(group: &str) -> bool {
    ALLOWED_GROUPS.iter().any(|g| match g.strip_suffix(" /") {
        Some(parent) => group
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with(" / ")),
        None => group == *g,
    })
}

/// Why the setting `name`, listed in a catalog as `guc` (or not listed: `None`), may not be
/// given; `None` when it may. A setting no catalog lists is refused only by its name here
/// (the build's own check, with the build's catalog, is the authority).
pub fn refused(name: &str, guc: Option<&Guc>) -> Option<String> {
    if let Some(why) = refused_name(name) {
        return Some(why);
    }
    let guc = guc?;
    if !allowed_group(&guc.group) {
        return Some(format!(
            "is in the group \"{}\", which no spec may set; specs may set {ALLOWED_SUMMARY}",
            guc.group
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_point_into_the_file_system_are_refused() {
        for name in [
            "log_directory",
            "log_filename",
            "ssl_cert_file",
            "ssl_key_file",
            "ssl_ciphers",
            "krb_server_keyfile",
            "extension_control_path",
            "stats_temp_directory",
            "archive_mode",
            "archive_command",
            "shared_preload_libraries",
            "auto_explain.log_min_duration",
            "listen_addresses",
        ] {
            assert!(refused_name(name).is_some(), "{name}");
        }
        for name in [
            "shared_buffers",
            "search_path",
            "wal_buffers",
            "log_line_prefix",
            "max_connections",
            "io_method",
            "effective_io_concurrency",
        ] {
            assert_eq!(refused_name(name), None, "{name}");
        }
    }

    #[test]
    fn groups_a_benchmark_varies_are_allowed_and_nothing_else() {
        for g in [
            "Resource Usage / Memory",
            "Resource Usage / I/O",
            "Write-Ahead Log / Settings",
            "Write-Ahead Log / Checkpoints",
            "Query Tuning / Planner Cost Constants",
            "Autovacuum",
            "Vacuuming / Freezing",
            "Statistics / Monitoring",
            "Connections and Authentication / Connection Settings",
            "Reporting and Logging / What to Log",
        ] {
            assert!(allowed_group(g), "{g}");
        }
        for g in [
            "Reporting and Logging / Where to Log",
            "Connections and Authentication / Authentication",
            "Connections and Authentication / SSL",
            "File Locations",
            "Write-Ahead Log / Archiving",
            "Write-Ahead Log / Archive Recovery",
            "Write-Ahead Log / Recovery Target",
            "Replication / Sending Servers",
            "Client Connection Defaults / Shared Library Preloading",
            "Developer Options",
            "Customized Options",
            "Preset Options",
            "Resource Usage",
            "Resource Usage Extra / Memory",
        ] {
            assert!(!allowed_group(g), "{g}");
        }
    }
}
