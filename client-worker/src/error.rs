//! Errors of the worker, worded so a task failure report says what went wrong.

/// Everything the worker can fail with.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("invalid connection string: {0}")]
    Conninfo(String),
    #[error("cannot connect to {target}: {reason}")]
    Connect { target: String, reason: String },
    #[error("{context}: {reason}")]
    Sql { context: String, reason: String },
    #[error("{0}")]
    Run(String),
    /// An invalid script, worded as pgbench words it.
    #[error("{0}")]
    Script(String),
}

impl WorkerError {
    pub(crate) fn sql(context: impl Into<String>, err: &tokio_postgres::Error) -> Self {
        WorkerError::Sql {
            context: context.into(),
            reason: describe(err),
        }
    }
}

/// A one-line description of a driver error: the server's message for SQL errors, the
/// whole cause chain (e.g. "connection refused") for the rest.
/// A server error as libpq's PQresultErrorMessage gives it (what pgbench prints with
/// `--verbose-errors`): `SEVERITY:  message`, then DETAIL, HINT and CONTEXT lines; other
/// errors as [`describe`].
pub fn libpq_message(err: &tokio_postgres::Error) -> String {
    let Some(db) = err.as_db_error() else {
        return describe(err);
    };
    let mut s = format!("{}:  {}", db.severity(), db.message());
    for (label, field) in [
        ("DETAIL", db.detail()),
        ("HINT", db.hint()),
        ("CONTEXT", db.where_()),
    ] {
        if let Some(text) = field {
            s.push_str(&format!("\n{label}:  {text}"));
        }
    }
    s
}

pub fn describe(err: &tokio_postgres::Error) -> String {
    if let Some(db) = err.as_db_error() {
        let mut s = format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
        if let Some(detail) = db.detail() {
            s.push_str("; ");
            s.push_str(detail);
        }
        return s;
    }
    let mut s = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}
