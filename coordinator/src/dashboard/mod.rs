//! The read-only web dashboard (`--dashboard-listen`): hosts, jobs and their runs, each job's
//! results with its charts and verdicts, and `/metrics`. Pages are rendered on the server
//! from the catalog with [`crate::results`], so they agree with the CLI and `blocklab report`.
//!
//! When the coordinator has API tokens, every path needs one: `Authorization: Bearer`, a
//! `?token=` query parameter (which also sets a `blocklab_token` cookie, for browsers), or
//! that cookie.

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use blocklab_daemon::security::{ApiToken, TokenCheck};
use tokio::net::TcpListener;

use crate::catalog::Catalog;
use crate::error::{ErrorCode, ServiceError};
use crate::fleet::Registry;

mod pages;

/// What the dashboard reads.
#[derive(Clone)]
pub struct Dashboard {
    pub catalog: Catalog,
    pub registry: Arc<Registry>,
    pub catalog_path: String,
    tokens: TokenCheck,
}

impl Dashboard {
    pub fn new(
        catalog: Catalog,
        registry: Arc<Registry>,
        catalog_path: String,
        api_tokens: &[ApiToken],
    ) -> Self {
        Self {
            catalog,
            registry,
            catalog_path,
            tokens: TokenCheck::api(api_tokens),
        }
    }

    /// The routes, behind the token check.
    pub fn router(self) -> axum::Router {
        let state = Arc::new(self);
        axum::Router::new()
            .route("/", get(index))
            .route("/jobs/{job_id}", get(job))
            .route("/metrics", get(metrics))
            .layer(axum::middleware::from_fn_with_state(state.clone(), auth))
            .with_state(state)
    }
}

/// Serves the dashboard on `listener` until `shutdown` resolves.
pub async fn serve(
    dashboard: Dashboard,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(addr = ?listener.local_addr().ok(), "dashboard listening");
    axum::serve(listener, dashboard.router())
        .with_graceful_shutdown(shutdown)
        .await
}

const COOKIE: &str = "blocklab_token";

fn query_token(query: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == "token").then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == COOKIE).then(|| v.to_string())
        })
}

async fn auth(State(d): State<Arc<Dashboard>>, request: Request, next: Next) -> Response {
    if d.tokens.is_open() {
        return next.run(request).await;
    }
    let from_query = request.uri().query().and_then(query_token);
    let presented = match (&from_query, request.headers().get(header::AUTHORIZATION)) {
        (Some(t), _) => Some(format!("Bearer {t}").into_bytes()),
        (None, Some(h)) => Some(h.as_bytes().to_vec()),
        (None, None) => cookie_token(request.headers()).map(|t| format!("Bearer {t}").into_bytes()),
    };
    if let Err(refused) = d.tokens.check(presented.as_deref()) {
        tracing::warn!("dashboard request refused: {refused}");
        let text = format!(
            "401 unauthorized: {refused}\nBrowsers: open this page once with ?token=<API token>.\n"
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            text,
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    if let Some(t) = from_query {
        // Only token characters reach the cookie (a token is printable, without ; or spaces).
        if t.bytes()
            .all(|c| c.is_ascii_graphic() && c != b';' && c != b',')
        {
            let cookie =
                format!("{COOKIE}={t}; Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict");
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, v);
            }
        }
    }
    response
}

fn error_page(status: StatusCode, message: &str) -> Response {
    (status, Html(pages::error(status, message))).into_response()
}

/// The page for an error, with the status of its code (the same table gRPC uses).
fn service_error(e: &impl ServiceError) -> Response {
    if e.code() == ErrorCode::Unavailable {
        tracing::error!(error = %e, "dashboard: catalog read failed");
    }
    error_page(e.code().http(), &e.to_string())
}

async fn index(State(d): State<Arc<Dashboard>>) -> Response {
    let hosts = match d.catalog.hosts().await {
        Ok(h) => h,
        Err(e) => return service_error(&e),
    };
    let jobs = match d.catalog.jobs().await {
        Ok(j) => j,
        Err(e) => return service_error(&e),
    };
    let up: Vec<bool> = hosts
        .iter()
        .map(|h| d.registry.get(&h.host_id).is_some())
        .collect();
    Html(pages::index(&hosts, &up, &jobs, &d.catalog_path)).into_response()
}

async fn job(State(d): State<Arc<Dashboard>>, Path(job_id): Path<String>) -> Response {
    if uuid::Uuid::parse_str(&job_id).is_err() {
        return error_page(StatusCode::NOT_FOUND, "not a job id (a UUID)");
    }
    let metric = blocklab_report::stats::Metric::Tps;
    match crate::results::export_job(&d.catalog, &d.catalog_path, &job_id, metric.name(), true)
        .await
    {
        Ok(export) => Html(pages::job(&export)).into_response(),
        Err(e) => service_error(&e),
    }
}

async fn metrics(State(d): State<Arc<Dashboard>>) -> Response {
    match crate::metrics::render(&d.catalog, &d.registry).await {
        Ok(text) => (
            [(header::CONTENT_TYPE, blocklab_daemon::metrics::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(e) => service_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_from_query_and_cookie() {
        assert_eq!(query_token("a=1&token=ab%2Fc+d").as_deref(), Some("ab/c d"));
        assert_eq!(query_token("tokenx=1"), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("x=1; blocklab_token=s3cret"),
        );
        assert_eq!(cookie_token(&h).as_deref(), Some("s3cret"));
    }
}
