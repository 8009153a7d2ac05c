//! What a catalog operation can fail with.

use blocklab_spec::state::UnknownName;

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("catalog migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("job {0} not found")]
    JobNotFound(String),
    #[error("catalog holds a value this coordinator does not know: {0}")]
    Corrupt(UnknownName),
    #[error(
        "host {0} is already enrolled (revoke it first: blocklab-coordinator hosts revoke {0})"
    )]
    HostEnrolled(String),
    #[error("host {0} is not enrolled (blocklab-coordinator hosts list shows the enrolled hosts)")]
    HostNotEnrolled(String),
    #[error("host {0} is already revoked")]
    HostRevoked(String),
    /// A write on a coordinator that does not lead (`None`: a standby), or whose lead was
    /// taken over by another coordinator (`Some(epoch)`, the epoch it led in).
    #[error("{}", fenced(.epoch))]
    Fenced { epoch: Option<i64> },
    #[error("leader election needs a PostgreSQL catalog (--catalog postgres://...)")]
    NoLease,
    #[error("job {job_id}: its stored plan cannot be read: {message}")]
    Plan { job_id: String, message: String },
    #[error("run {run_id}: its stored series cannot be read: {message}")]
    Series { run_id: String, message: String },
    /// Another coordinator serves this SQLite catalog (`holder`: its pid, when known).
    #[error(
        "another coordinator (pid {}) serves the catalog {catalog}: stop it first, or share a \
         PostgreSQL catalog between coordinators",
        if holder.is_empty() { "unknown" } else { holder.as_str() }
    )]
    InUse { catalog: String, holder: String },
}

fn fenced(epoch: &Option<i64>) -> String {
    match epoch {
        None => "this coordinator is a standby: only the leader writes to the catalog".into(),
        Some(e) => format!(
            "this coordinator's lead (epoch {e}) was taken over by another coordinator: the \
             write was refused"
        ),
    }
}
