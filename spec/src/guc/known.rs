//! The GUC catalogs of the PostgreSQL versions blocklab builds, embedded: each file is what
//! that version's `postgres --describe-config` printed (for a new version, run it as the
//! PostgreSQL user on a build and add the file here).

use std::sync::LazyLock;

use super::catalog::{Guc, GucCatalog};

/// The major versions whose catalogs are embedded, newest first.
pub const KNOWN_VERSIONS: &[&str] = &["15"];

static CATALOGS: LazyLock<Vec<(&'static str, GucCatalog)>> =
    LazyLock::new(|| vec![("15", GucCatalog::parse(include_str!("pg15.tsv")))]);

/// The entry for `name` in the newest known version that lists it, with that version.
pub fn known(name: &str) -> Option<(&'static str, &'static Guc)> {
    CATALOGS
        .iter()
        .find_map(|(version, c)| c.get(name).map(|g| (*version, g)))
}

#[cfg(test)]
mod tests {
    use super::super::allow::{allowed_group, refused};
    use super::*;

    #[test]
    fn the_embedded_catalog_is_postgresql_15s() {
        let (_, c) = &CATALOGS[0];
        assert!(c.len() > 300, "{} settings", c.len());
        let (v, g) = known("shared_buffers").unwrap();
        assert_eq!((v, g.group.as_str()), ("15", "Resource Usage / Memory"));
        assert_eq!(
            known("wal_buffers").unwrap().1.group,
            "Write-Ahead Log / Settings"
        );
        // Internal and developer settings are not in it.
        assert!(known("block_size").is_none());
        assert!(known("wal_consistency_checking").is_none());
    }

    /// What PostgreSQL 15 lets a spec set: every setting of the allowed groups whose name
    /// does not point into the file system; nothing of the logging destination, SSL,
    /// authentication, archiving, replication, file locations or preloading.
    #[test]
    fn what_postgresql_15_lets_a_spec_set() {
        let (_, c) = &CATALOGS[0];
        for name in [
            "logging_collector",
            "log_directory",
            "log_filename",
            "log_destination",
            "ssl",
            "ssl_cert_file",
            "krb_server_keyfile",
            "password_encryption",
            "archive_mode",
            "primary_conninfo",
            "synchronous_standby_names",
            "data_directory",
            "session_preload_libraries",
            "dynamic_library_path",
        ] {
            assert!(refused(name, c.get(name)).is_some(), "{name} refused");
        }
        for name in [
            "shared_buffers",
            "work_mem",
            "maintenance_work_mem",
            "wal_buffers",
            "max_wal_size",
            "checkpoint_timeout",
            "synchronous_commit",
            "full_page_writes",
            "wal_compression",
            "bgwriter_lru_maxpages",
            "effective_io_concurrency",
            "max_parallel_workers_per_gather",
            "random_page_cost",
            "autovacuum",
            "autovacuum_naptime",
            "track_io_timing",
            "log_checkpoints",
            "log_line_prefix",
            "log_min_messages",
            "max_connections",
            "deadlock_timeout",
            "default_transaction_isolation",
            "search_path",
            "huge_pages",
        ] {
            let g = c.get(name).unwrap_or_else(|| panic!("{name} listed"));
            assert_eq!(refused(name, Some(g)), None, "{name} in {}", g.group);
        }
        // Every group the catalog uses is judged one way or the other on purpose.
        let mut groups: Vec<&str> = Vec::new();
        for name in c.names() {
            let g = c.get(name).unwrap().group.as_str();
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        groups.sort_unstable();
        let allowed: Vec<&str> = groups
            .iter()
            .copied()
            .filter(|g| allowed_group(g))
            .collect();
        let refused_groups: Vec<&str> = groups
            .iter()
            .copied()
            .filter(|g| !allowed_group(g))
            .collect();
        assert_eq!(
            refused_groups,
            [
                "Client Connection Defaults / Shared Library Preloading",
                "Connections and Authentication / Authentication",
                "Connections and Authentication / SSL",
                "File Locations",
                "Replication / Primary Server",
                "Replication / Sending Servers",
                "Replication / Standby Servers",
                "Replication / Subscribers",
                "Reporting and Logging / Where to Log",
                "Write-Ahead Log / Archive Recovery",
                "Write-Ahead Log / Archiving",
                "Write-Ahead Log / Recovery Target",
            ],
            "allowed: {allowed:#?}"
        );
    }
}
