//! The agent's error type. Every failure a task can hit ends up here and is turned into a
//! `TaskError{stage, reason, log_tail}` by the handler.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Input from a task or the configuration that we refuse (names the field/value).
    #[error("invalid {field}: {reason}")]
    Invalid { field: String, reason: String },

    #[error("source tarball {} is not readable: {reason}", path.display())]
    SourceMissing { path: PathBuf, reason: String },

    /// A source whose digest is not the one the task named.
    #[error("checksum mismatch for {what}: expected sha256 {expected}, got {actual}")]
    ChecksumMismatch {
        what: String,
        expected: String,
        actual: String,
    },

    /// Unpacked, but not something PostgreSQL's build can use.
    #[error("{what} is not a PostgreSQL source tree: {reason}")]
    NotPostgres { what: String, reason: String },

    #[error("download of {url} failed: {reason}")]
    Download { url: String, reason: String },

    /// The run's postmaster died (crash, OOM kill, someone's SIGKILL).
    #[error("postgres is not running (postmaster pid {pid} gone)")]
    ServerGone { pid: i32, log_tail: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// A spawned program failed or timed out.
    #[error("{what} failed: {reason}")]
    Process {
        what: String,
        reason: String,
        log_tail: String,
    },

    /// Talking to the freshly started server failed.
    #[error("{context}: {reason}")]
    Postgres {
        context: String,
        reason: String,
        log_tail: String,
    },

    #[error("no cluster for run {0}")]
    UnknownRun(String),

    #[error("{0}")]
    Other(String),
}

impl AgentError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn postgres(context: impl Into<String>, e: &tokio_postgres::Error) -> Self {
        let reason = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => match std::error::Error::source(e) {
                Some(s) => format!("{e}: {s}"),
                None => e.to_string(),
            },
        };
        Self::Postgres {
            context: context.into(),
            reason,
            log_tail: String::new(),
        }
    }

    /// The log excerpt that explains this error, if any.
    pub fn log_tail(&self) -> &str {
        match self {
            Self::Process { log_tail, .. }
            | Self::Postgres { log_tail, .. }
            | Self::ServerGone { log_tail, .. } => log_tail,
            _ => "",
        }
    }

    /// Adds what a log says caused a failed program to its reason (e.g. the setting a server
    /// that did not start names).
    pub fn with_cause(mut self, cause: Option<String>) -> Self {
        if let (Self::Process { reason, .. }, Some(cause)) = (&mut self, cause) {
            reason.push_str(&format!(": {cause}"));
        }
        self
    }

    /// Appends another log excerpt (e.g. the server log after a failed start).
    pub fn with_extra_log(mut self, extra: String) -> Self {
        if extra.is_empty() {
            return self;
        }
        match &mut self {
            Self::Process { log_tail, .. } | Self::Postgres { log_tail, .. } => {
                if !log_tail.is_empty() {
                    log_tail.push('\n');
                }
                log_tail.push_str(&extra);
                self
            }
            _ => self,
        }
    }
}
