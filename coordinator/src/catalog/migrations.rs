//! The catalog's schema migrations, embedded in the binary: one list per backend, each
//! migration versioned and described by its file name as `sqlx migrate` names it
//! (`0019_job_results.sql` is version 19, "job results"), so a catalog migrated by any
//! earlier build records the same versions and checksums.

use std::borrow::Cow;
use std::sync::LazyLock;

use sqlx::SqlStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// The files of one backend's migrations directory: (file name, contents), in order.
type Files = &'static [(&'static str, &'static str)];

const SQLITE: Files = &[
    (
        "0001_catalog.sql",
        include_str!("../../migrations/sqlite/0001_catalog.sql"),
    ),
    (
        "0002_experiment_design.sql",
        include_str!("../../migrations/sqlite/0002_experiment_design.sql"),
    ),
    (
        "0003_views.sql",
        include_str!("../../migrations/sqlite/0003_views.sql"),
    ),
    (
        "0004_run_choices.sql",
        include_str!("../../migrations/sqlite/0004_run_choices.sql"),
    ),
    (
        "0005_run_metrics.sql",
        include_str!("../../migrations/sqlite/0005_run_metrics.sql"),
    ),
    (
        "0006_job_plan.sql",
        include_str!("../../migrations/sqlite/0006_job_plan.sql"),
    ),
    (
        "0007_window.sql",
        include_str!("../../migrations/sqlite/0007_window.sql"),
    ),
    (
        "0008_views_verdicts.sql",
        include_str!("../../migrations/sqlite/0008_views_verdicts.sql"),
    ),
    (
        "0009_user_workload.sql",
        include_str!("../../migrations/sqlite/0009_user_workload.sql"),
    ),
    (
        "0010_host_credentials.sql",
        include_str!("../../migrations/sqlite/0010_host_credentials.sql"),
    ),
    (
        "0011_job_waiting.sql",
        include_str!("../../migrations/sqlite/0011_job_waiting.sql"),
    ),
    (
        "0012_job_hosts.sql",
        include_str!("../../migrations/sqlite/0012_job_hosts.sql"),
    ),
    (
        "0013_build_progress.sql",
        include_str!("../../migrations/sqlite/0013_build_progress.sql"),
    ),
    (
        "0014_run_host_warnings.sql",
        include_str!("../../migrations/sqlite/0014_run_host_warnings.sql"),
    ),
    (
        "0015_job_rerun_of.sql",
        include_str!("../../migrations/sqlite/0015_job_rerun_of.sql"),
    ),
    (
        "0016_leader_lease.sql",
        include_str!("../../migrations/sqlite/0016_leader_lease.sql"),
    ),
    (
        "0017_credential_bindings.sql",
        include_str!("../../migrations/sqlite/0017_credential_bindings.sql"),
    ),
    (
        "0018_run_series.sql",
        include_str!("../../migrations/sqlite/0018_run_series.sql"),
    ),
    (
        "0019_job_results.sql",
        include_str!("../../migrations/sqlite/0019_job_results.sql"),
    ),
    (
        "0020_job_pages.sql",
        include_str!("../../migrations/sqlite/0020_job_pages.sql"),
    ),
];

const POSTGRES: Files = &[
    (
        "0015_catalog.sql",
        include_str!("../../migrations/postgres/0015_catalog.sql"),
    ),
    (
        "0016_leader_lease.sql",
        include_str!("../../migrations/postgres/0016_leader_lease.sql"),
    ),
    (
        "0017_credential_bindings.sql",
        include_str!("../../migrations/postgres/0017_credential_bindings.sql"),
    ),
    (
        "0018_run_series.sql",
        include_str!("../../migrations/postgres/0018_run_series.sql"),
    ),
    (
        "0019_job_results.sql",
        include_str!("../../migrations/postgres/0019_job_results.sql"),
    ),
    (
        "0020_job_pages.sql",
        include_str!("../../migrations/postgres/0020_job_pages.sql"),
    ),
];

pub(super) static SQLITE_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(SQLITE));
pub(super) static POSTGRES_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(POSTGRES));

fn migrator(files: Files) -> Migrator {
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(name, sql)| migration(name, sql))
            .collect(),
    )
}

/// `NNNN_words.sql`: version NNNN, description "words"; a migration that begins with
/// `-- no-transaction` runs outside a transaction.
fn migration(name: &'static str, sql: &'static str) -> Migration {
    let (version, rest) = name
        .split_once('_')
        .expect("an embedded migration's name is NNNN_description.sql");
    let version = version
        .parse()
        .expect("an embedded migration's name begins with its version");
    let description = rest
        .strip_suffix(".sql")
        .expect("an embedded migration's name ends in .sql")
        .replace('_', " ");
    Migration::new(
        version,
        Cow::Owned(description),
        MigrationType::Simple,
        SqlStr::from_static(sql),
        sql.starts_with("-- no-transaction"),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The embedded lists are the directories as sqlx resolves them: every file, with the
    /// same version, description, checksum and transaction mode.
    #[test]
    fn embedded_migrations_are_the_directories() {
        for (dir, files) in [("sqlite", SQLITE), ("postgres", POSTGRES)] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(dir);
            let mut resolved: Vec<Migration> = sqlx::migrate::resolve_blocking(&path)
                .expect("resolve the migrations directory")
                .into_iter()
                .map(|(m, _)| m)
                .collect();
            resolved.sort_by_key(|m| m.version);
            let embedded = &migrator(files).migrations;
            assert_eq!(
                embedded.len(),
                resolved.len(),
                "{dir}: a file is not embedded"
            );
            for (e, r) in embedded.iter().zip(&resolved) {
                assert_eq!(e.version, r.version, "{dir}");
                assert_eq!(e.description, r.description, "{dir} {}", r.version);
                assert_eq!(e.checksum, r.checksum, "{dir} {}", r.version);
                assert_eq!(e.no_tx, r.no_tx, "{dir} {}", r.version);
                assert_eq!(e.migration_type, r.migration_type, "{dir} {}", r.version);
            }
        }
    }
}
