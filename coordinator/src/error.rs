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
    /// The catalog cannot serve the request now; retrying may help.
    Unavailable,
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
            _ => ErrorCode::Unavailable,
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
    }
}
