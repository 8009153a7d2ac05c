//! One table of error codes: every error that reaches a caller has a [`ErrorCode`], which
//! maps once to a gRPC status code and once to an HTTP status, so the Control API and the
//! dashboard answer the same failure the same way.

use blocklab_spec::SpecError;
use tonic::Status;

use crate::catalog::CatalogError;
use blocklab_report::ReportError;

use crate::results::ResultsError;
use blocklab_daemon::security::TokenRefused;

/// What kind of failure a caller sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The caller's input is wrong (a spec, an id, a metric, a format).
    BadInput,
    /// What the caller names does not exist.
    NotFound,
    /// The catalog cannot serve the request now (a lost connection, a busy database, a pool
    /// timeout, a standby); retrying may help.
    Unavailable,
    /// The catalog holds what this coordinator cannot read (a corrupt row, an unreadable
    /// stored plan) or its schema is broken (a failed migration): retrying will not help.
    Internal,
    /// The caller did not prove who it is (no token, a wrong one, a revoked credential).
    Unauthenticated,
    /// The caller is known but may not do this (a token's scope, a host's enrolled identity).
    PermissionDenied,
}

impl ErrorCode {
    pub fn grpc(self) -> tonic::Code {
        match self {
            ErrorCode::BadInput => tonic::Code::InvalidArgument,
            ErrorCode::NotFound => tonic::Code::NotFound,
            ErrorCode::Unavailable => tonic::Code::Unavailable,
            ErrorCode::Internal => tonic::Code::Internal,
            ErrorCode::Unauthenticated => tonic::Code::Unauthenticated,
            ErrorCode::PermissionDenied => tonic::Code::PermissionDenied,
        }
    }

    pub fn http(self) -> axum::http::StatusCode {
        use axum::http::StatusCode;
        match self {
            ErrorCode::BadInput => StatusCode::BAD_REQUEST,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
        }
    }
}

/// An error a service returns to its caller.
pub trait ServiceError: std::error::Error {
    fn code(&self) -> ErrorCode;
}

impl ServiceError for SpecError {
    fn code(&self) -> ErrorCode {
        ErrorCode::BadInput
    }
}

impl ServiceError for CatalogError {
    fn code(&self) -> ErrorCode {
        match self {
            CatalogError::JobNotFound(_) | CatalogError::HostNotEnrolled(_) => ErrorCode::NotFound,
            CatalogError::HostEnrolled(_) | CatalogError::HostRevoked(_) => ErrorCode::BadInput,
            CatalogError::Corrupt(_)
            | CatalogError::Plan { .. }
            | CatalogError::Series { .. }
            | CatalogError::Migrate(_) => ErrorCode::Internal,
            CatalogError::Sql(e) => sql_code(e),
            CatalogError::Fenced { .. } | CatalogError::NoLease | CatalogError::InUse { .. } => {
                ErrorCode::Unavailable
            }
        }
    }
}

/// What a database error means to the caller: a row or a schema the catalog cannot read is
/// [`ErrorCode::Internal`]; a lost connection, a busy database or a full pool is
/// [`ErrorCode::Unavailable`].
fn sql_code(e: &sqlx::Error) -> ErrorCode {
    use sqlx::Error;
    match e {
        Error::ColumnDecode { .. }
        | Error::Decode(_)
        | Error::ColumnNotFound(_)
        | Error::ColumnIndexOutOfBounds { .. }
        | Error::TypeNotFound { .. }
        | Error::Encode(_)
        | Error::RowNotFound
        | Error::Migrate(_)
        | Error::InvalidArgument(_)
        | Error::InvalidSavePointStatement
        | Error::BeginFailed => ErrorCode::Internal,
        Error::Database(db) => match db.code() {
            Some(code) if broken_catalog(&code) => ErrorCode::Internal,
            _ => ErrorCode::Unavailable,
        },
        _ => ErrorCode::Unavailable,
    }
}

/// Whether a database's error code means a corrupt file, a schema the catalog's queries do
/// not fit, or a write the schema's constraints forbid: retrying will not help. PostgreSQL
/// codes are SQLSTATEs (five characters): classes 22 (data exception), 23 (integrity
/// constraint violation), 42 (no such table or column) and XX (corrupt data or index).
/// SQLite codes are numbers below 10000 whose low byte is the primary code: 1 (no such table
/// or column), 11 (corrupt), 19 (constraint), 20 (datatype mismatch), 26 (not a database).
fn broken_catalog(code: &str) -> bool {
    if code.len() == 5 {
        return ["22", "23", "42", "XX"]
            .iter()
            .any(|class| code.starts_with(class));
    }
    match code.parse::<u32>() {
        Ok(n) => matches!(n & 0xff, 1 | 11 | 19 | 20 | 26),
        Err(_) => false,
    }
}

impl ServiceError for crate::scheduler::SchedulerError {
    fn code(&self) -> ErrorCode {
        use crate::scheduler::SchedulerError;
        match self {
            SchedulerError::Catalog(c) => c.code(),
            // The spec was stored, not sent: the caller's input is not at fault.
            SchedulerError::Spec(_) => ErrorCode::Internal,
        }
    }
}

impl ServiceError for ReportError {
    fn code(&self) -> ErrorCode {
        ErrorCode::BadInput
    }
}

impl ServiceError for ResultsError {
    fn code(&self) -> ErrorCode {
        match self {
            ResultsError::Catalog(c) => c.code(),
            ResultsError::Report(r) => r.code(),
        }
    }
}

impl ServiceError for crate::dashboard::history::HistoryError {
    fn code(&self) -> ErrorCode {
        use crate::dashboard::history::HistoryError;
        match self {
            HistoryError::Catalog(c) => c.code(),
            HistoryError::Results(r) => r.code(),
            HistoryError::BadFilter(_) => ErrorCode::BadInput,
        }
    }
}

impl ServiceError for TokenRefused {
    fn code(&self) -> ErrorCode {
        ErrorCode::Unauthenticated
    }
}

/// Error messages travel in a response header: keep echoed input short.
const MAX_MESSAGE_CHARS: usize = 1024;

pub(crate) fn bounded(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}... ({} bytes in all)", &message[..cut], message.len()),
        None => message,
    }
}

/// The gRPC status of `e`.
pub fn status(e: &impl ServiceError) -> Status {
    Status::new(e.code().grpc(), bounded(e.to_string()))
}

impl From<CatalogError> for Status {
    fn from(e: CatalogError) -> Self {
        status(&e)
    }
}

impl From<ResultsError> for Status {
    fn from(e: ResultsError) -> Self {
        status(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_maps_to_one_grpc_and_one_http_status() {
        let spec = SpecError {
            field: "workload.clients".into(),
            message: "must be at least 1".into(),
        };
        assert_eq!(status(&spec).code(), tonic::Code::InvalidArgument);
        assert_eq!(spec.code().http(), axum::http::StatusCode::BAD_REQUEST);
        let missing = CatalogError::JobNotFound("x".into());
        assert_eq!(status(&missing).code(), tonic::Code::NotFound);
        assert_eq!(missing.code().http(), axum::http::StatusCode::NOT_FOUND);
        let sql = CatalogError::Sql(sqlx::Error::PoolClosed);
        assert_eq!(status(&sql).code(), tonic::Code::Unavailable);
        assert_eq!(
            sql.code().http(),
            axum::http::StatusCode::SERVICE_UNAVAILABLE
        );
        let token = TokenRefused::Invalid(blocklab_daemon::security::TokenKind::Api);
        assert_eq!(status(&token).code(), tonic::Code::Unauthenticated);
        assert_eq!(token.code().http(), axum::http::StatusCode::UNAUTHORIZED);
        assert_eq!(
            ErrorCode::PermissionDenied.grpc(),
            tonic::Code::PermissionDenied
        );
        assert_eq!(
            ErrorCode::PermissionDenied.http(),
            axum::http::StatusCode::FORBIDDEN
        );
        assert_eq!(ErrorCode::Internal.grpc(), tonic::Code::Internal);
        assert_eq!(
            ErrorCode::Internal.http(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    fn unknown() -> blocklab_spec::state::UnknownName {
        blocklab_spec::state::UnknownName {
            what: "run state",
            value: "garbage".into(),
            allowed: "queued, running".into(),
        }
    }

    #[test]
    fn each_catalog_error_has_its_code() {
        let cases = [
            (CatalogError::JobNotFound("j".into()), ErrorCode::NotFound),
            (
                CatalogError::HostNotEnrolled("h".into()),
                ErrorCode::NotFound,
            ),
            (CatalogError::HostEnrolled("h".into()), ErrorCode::BadInput),
            (CatalogError::HostRevoked("h".into()), ErrorCode::BadInput),
            (CatalogError::Corrupt(unknown()), ErrorCode::Internal),
            (
                CatalogError::Plan {
                    job_id: "j".into(),
                    message: "expected value at line 1 column 1".into(),
                },
                ErrorCode::Internal,
            ),
            (
                CatalogError::Migrate(sqlx::migrate::MigrateError::VersionMissing(3)),
                ErrorCode::Internal,
            ),
            (CatalogError::Fenced { epoch: None }, ErrorCode::Unavailable),
            (
                CatalogError::Fenced { epoch: Some(2) },
                ErrorCode::Unavailable,
            ),
            (CatalogError::NoLease, ErrorCode::Unavailable),
            (
                CatalogError::Sql(sqlx::Error::PoolTimedOut),
                ErrorCode::Unavailable,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.code(), code, "{e}");
            assert_eq!(status(&e).code(), code.grpc(), "{e}");
        }
    }

    #[test]
    fn unreadable_rows_are_internal_and_lost_connections_unavailable() {
        use sqlx::Error;
        let io = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let internal = [
            Error::ColumnDecode {
                index: "state".into(),
                source: "not text".into(),
            },
            Error::Decode("bad json".into()),
            Error::ColumnNotFound("plan_json".into()),
            Error::ColumnIndexOutOfBounds { index: 3, len: 2 },
            Error::TypeNotFound {
                type_name: "x".into(),
            },
            Error::RowNotFound,
            Error::Migrate(Box::new(sqlx::migrate::MigrateError::VersionMissing(1))),
        ];
        for e in internal {
            assert_eq!(CatalogError::Sql(e).code(), ErrorCode::Internal);
        }
        let transient = [
            Error::Io(io()),
            Error::PoolTimedOut,
            Error::PoolClosed,
            Error::WorkerCrashed,
            Error::Protocol("unexpected eof".into()),
            Error::Tls("handshake".into()),
        ];
        for e in transient {
            assert_eq!(CatalogError::Sql(e).code(), ErrorCode::Unavailable);
        }
    }

    #[derive(Debug)]
    struct Database(&'static str);

    impl std::fmt::Display for Database {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "database error {}", self.0)
        }
    }

    impl std::error::Error for Database {}

    impl sqlx::error::DatabaseError for Database {
        fn message(&self) -> &str {
            self.0
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    #[test]
    fn database_codes_tell_a_broken_catalog_from_a_busy_one() {
        let code = |c: &'static str| {
            CatalogError::Sql(sqlx::Error::Database(Box::new(Database(c)))).code()
        };
        // SQLite: no such table, corrupt, datatype mismatch, not a database, CHECK and
        // UNIQUE constraints.
        for c in ["1", "11", "20", "26", "267", "275", "2067"] {
            assert_eq!(code(c), ErrorCode::Internal, "sqlite {c}");
        }
        // SQLite: busy, busy (snapshot), locked, I/O error, full.
        for c in ["5", "517", "6", "10", "13"] {
            assert_eq!(code(c), ErrorCode::Unavailable, "sqlite {c}");
        }
        // PostgreSQL: undefined table, invalid text representation, data corrupted, CHECK
        // and UNIQUE constraints.
        for c in ["42P01", "22P02", "XX001", "23514", "23505"] {
            assert_eq!(code(c), ErrorCode::Internal, "postgres {c}");
        }
        // PostgreSQL: serialization failure, connection failure, admin shutdown, too many
        // connections.
        for c in ["40001", "08006", "57P01", "53300"] {
            assert_eq!(code(c), ErrorCode::Unavailable, "postgres {c}");
        }
    }

    #[test]
    fn stored_data_is_internal_but_the_callers_input_stays_bad_input() {
        use crate::dashboard::history::HistoryError;
        use crate::scheduler::SchedulerError;
        let spec = || SpecError {
            field: "workload.clients".into(),
            message: "must be at least 1".into(),
        };
        assert_eq!(spec().code(), ErrorCode::BadInput);
        assert_eq!(SchedulerError::Spec(spec()).code(), ErrorCode::Internal);
        assert_eq!(
            SchedulerError::Catalog(CatalogError::Corrupt(unknown())).code(),
            ErrorCode::Internal
        );
        assert_eq!(
            HistoryError::BadFilter("kind".into()).code(),
            ErrorCode::BadInput
        );
        assert_eq!(
            HistoryError::Catalog(CatalogError::Corrupt(unknown())).code(),
            ErrorCode::Internal
        );
        assert_eq!(
            ResultsError::Catalog(CatalogError::Plan {
                job_id: "j".into(),
                message: "no plan stored".into(),
            })
            .code(),
            ErrorCode::Internal
        );
    }
}
