//! Who may call what on `Control`: the scope each RPC needs ([`required_scope`]) and the
//! [`ScopeGate`] that checks the caller's API token and its scope before any handler runs.

use std::convert::Infallible;
use std::task::{Context, Poll};

use blocklab_daemon::security::{Scope, TokenCheck, TokenRefused};
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;

use crate::error::{ErrorCode, ServiceError, status};

/// The gRPC path prefix of the `Control` service's methods.
const CONTROL_PREFIX: &str = "/blocklab.v1.Control/";

/// The scope a `Control` method needs. Reading needs `read`; submitting and cancelling need
/// `submit`; a method this table does not name needs `admin` (a new RPC is closed until it
/// is given its scope here).
pub fn required_scope(method: &str) -> Scope {
    match method {
        "ListJobs" | "GetJob" | "WatchJob" | "ListHosts" | "QueryResults" | "ListBuilds"
        | "ProbeResults" | "ExportJob" | "CompareJobs" | "GetLeader" => Scope::Read,
        "SubmitJob" | "CancelJob" | "RerunJob" => Scope::Submit,
        _ => Scope::Admin,
    }
}

/// Why a `Control` request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// No token, a malformed one, or one that is not in `--api-token-file`.
    #[error(transparent)]
    Token(#[from] TokenRefused),
    /// A valid token whose scope is too small for the method.
    #[error(
        "{method} needs an API token with scope {needed} (or higher); this token's scope is {had}"
    )]
    Scope {
        method: String,
        needed: Scope,
        had: Scope,
    },
}

impl ServiceError for AccessError {
    fn code(&self) -> ErrorCode {
        match self {
            AccessError::Token(t) => t.code(),
            AccessError::Scope { .. } => ErrorCode::PermissionDenied,
        }
    }
}

/// Checks one request: its token, then the scope its method needs.
pub fn admit(
    tokens: &TokenCheck,
    path: &str,
    authorization: Option<&[u8]>,
) -> Result<Scope, AccessError> {
    let had = tokens.check(authorization)?;
    let method = path.strip_prefix(CONTROL_PREFIX).unwrap_or(path);
    let needed = required_scope(method);
    if had.allows(needed) {
        Ok(had)
    } else {
        Err(AccessError::Scope {
            method: method.chars().take(64).collect(),
            needed,
            had,
        })
    }
}

/// A service wrapper that answers a refused request itself (Unauthenticated or
/// PermissionDenied, see `error.rs`) and passes the rest to the wrapped service.
#[derive(Clone)]
pub struct ScopeGate<S> {
    inner: S,
    tokens: TokenCheck,
}

impl<S> ScopeGate<S> {
    pub fn new(inner: S, tokens: TokenCheck) -> Self {
        Self { inner, tokens }
    }
}

impl<S: NamedService> NamedService for ScopeGate<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<Request<B>> for ScopeGate<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let authorization = request.headers().get("authorization").map(|v| v.as_bytes());
        match admit(&self.tokens, request.uri().path(), authorization) {
            Ok(scope) => {
                tracing::debug!(path = request.uri().path(), %scope, "request admitted");
                let fut = self.inner.call(request);
                Box::pin(fut)
            }
            Err(e) => {
                tracing::warn!(path = request.uri().path(), reason = %e, "request refused");
                let response = status(&e).into_http();
                Box::pin(async move { Ok(response) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every RPC of `control.proto` has its scope here; none falls to the admin default.
    #[test]
    fn every_control_rpc_is_in_the_table() {
        let proto = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proto/proto/blocklab/v1/control.proto"
        ))
        .expect("control.proto");
        let methods: Vec<&str> = proto
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .collect();
        assert_eq!(methods.len(), 13, "{methods:?}");
        let submit = ["SubmitJob", "CancelJob", "RerunJob"];
        for m in methods {
            let expected = if submit.contains(&m) {
                Scope::Submit
            } else {
                Scope::Read
            };
            assert_eq!(required_scope(m), expected, "{m}");
        }
        assert_eq!(required_scope("SomethingNew"), Scope::Admin);
    }
}
