//! The GUC catalogs of the PostgreSQL versions blocklab builds, embedded: each file is what
//! that version's `postgres --describe-config` printed on an 8K build (for a new version, run
//! it as the PostgreSQL user on a build and add the file here). A setting resolves to the
//! newest version that lists it, so one only an older version has (`old_snapshot_threshold`,
//! gone in 17) is still judged.

use std::sync::LazyLock;

use super::catalog::{Guc, GucCatalog};

/// The major versions whose catalogs are embedded, newest first.
pub const KNOWN_VERSIONS: &[&str] = &["18", "15"];

static CATALOGS: LazyLock<Vec<(&'static str, GucCatalog)>> = LazyLock::new(|| {
    vec![
        ("18", GucCatalog::parse(include_str!("pg18.tsv"))),
        ("15", GucCatalog::parse(include_str!("pg15.tsv"))),
    ]
});

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

    /// The groups no spec may set in either version: logging destination, SSL,
    /// authentication, archiving, replication, file locations and preloading.
    const REFUSED_GROUPS: [&str; 12] = [
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
    ];

    /// The catalog of a version, by its major.
    fn catalog(version: &str) -> &'static GucCatalog {
        &CATALOGS.iter().find(|(v, _)| *v == version).unwrap().1
    }

    #[test]
    fn the_catalogs_are_listed_newest_first() {
        let listed: Vec<&str> = CATALOGS.iter().map(|(v, _)| *v).collect();
        assert_eq!(listed, KNOWN_VERSIONS);
        let mut sorted = listed.clone();
        sorted.sort_by_key(|v| std::cmp::Reverse(v.parse::<u32>().unwrap()));
        assert_eq!(listed, sorted);
    }

    #[test]
    fn a_setting_resolves_to_the_newest_version_that_lists_it() {
        let c = catalog("18");
        assert!(c.len() > 340, "{} settings", c.len());
        // PostgreSQL 18's asynchronous I/O, a setting a spec may give.
        let (v, g) = known("io_method").unwrap();
        assert_eq!((v, g.group.as_str()), ("18", "Resource Usage / I/O"));
        assert_eq!(g.reset, "worker");
        assert_eq!(refused("io_method", Some(g)), None);
        assert!(catalog("15").get("io_method").is_none());
        for name in ["io_workers", "io_max_concurrency", "io_combine_limit"] {
            let (v, g) = known(name).unwrap();
            assert_eq!((v, refused(name, Some(g))), ("18", None), "{name}");
        }
        // Gone in 17: still judged, as 15 lists it.
        let (v, g) = known("old_snapshot_threshold").unwrap();
        assert_eq!(
            (v, g.group.as_str()),
            ("15", "Resource Usage / Asynchronous Behavior")
        );
        assert_eq!(refused("old_snapshot_threshold", Some(g)), None);
        // Both list it: 18's entry.
        assert_eq!(known("shared_buffers").unwrap().0, "18");
    }

    /// What PostgreSQL 18 lets a spec set: its new groups ("Resource Usage / I/O",
    /// "Vacuuming / ...") are allowed, and the ones refused are 15's.
    #[test]
    fn every_group_of_postgresql_18_is_judged_on_purpose() {
        let c = catalog("18");
        let mut refused_groups: Vec<&str> = c
            .names()
            .map(|n| c.get(n).unwrap().group.as_str())
            .filter(|g| !allowed_group(g))
            .collect();
        refused_groups.sort_unstable();
        refused_groups.dedup();
        assert_eq!(refused_groups, REFUSED_GROUPS);
        for name in [
            "autovacuum_worker_slots",
            "vacuum_truncate",
            "summarize_wal",
        ] {
            let g = c.get(name).unwrap_or_else(|| panic!("{name} listed"));
            assert_eq!(refused(name, Some(g)), None, "{name} in {}", g.group);
        }
    }

    #[test]
    fn the_embedded_catalog_of_postgresql_15() {
        let c = catalog("15");
        assert!(c.len() > 300, "{} settings", c.len());
        let g = c.get("shared_buffers").unwrap();
        assert_eq!(g.group.as_str(), "Resource Usage / Memory");
        assert_eq!(
            c.get("wal_buffers").unwrap().group,
            "Write-Ahead Log / Settings"
        );
        // Internal and developer settings are in none.
        assert!(known("block_size").is_none());
        assert!(known("wal_consistency_checking").is_none());
    }

    /// What PostgreSQL 15 lets a spec set: every setting of the allowed groups whose name
    /// does not point into the file system; nothing of the logging destination, SSL,
    /// authentication, archiving, replication, file locations or preloading.
    #[test]
    fn what_postgresql_15_lets_a_spec_set() {
        let c = catalog("15");
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
        assert_eq!(refused_groups, REFUSED_GROUPS, "allowed: {allowed:#?}");
    }
}
