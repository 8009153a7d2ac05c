//! The read-only web dashboard (`--dashboard-listen`): hosts, jobs and their runs, each job's
//! results with its charts and verdicts (its traces downsampled in the catalog to
//! [`job_page::TRACE_POINTS`] points a run at most), the history of a metric over every job
//! (`history.rs`), two jobs compared, and `/metrics`. Pages are rendered on the server
//! from the catalog with [`crate::results`], so they agree with the CLI and `blocklab report`.
//!
//! When the coordinator has API tokens, a browser signs in at `/login` with a read token and
//! gets a session cookie (`auth.rs`); a token in a URL is refused. With the coordinator's
//! certificate (`--tls-cert`) the dashboard serves HTTPS (`tls.rs`).

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use blocklab_daemon::security::{ApiToken, ServerTls, TokenCheck};
use tokio::net::TcpListener;

use crate::catalog::Catalog;
use crate::error::{ErrorCode, ServiceError};
use crate::fleet::Registry;

pub mod auth;
pub mod cache;
pub mod history;
pub mod job_page;
pub mod jobs;
mod pages;
pub mod tls;

/// What the dashboard reads.
#[derive(Clone)]
pub struct Dashboard {
    pub catalog: Catalog,
    pub registry: Arc<Registry>,
    pub catalog_path: String,
    gate: Arc<auth::Gate>,
    headlines: Arc<jobs::Headlines>,
    /// Finished jobs' rendered pages, and their results by job and metric.
    pages: Arc<cache::Finished<String>>,
    results: Arc<cache::Finished<blocklab_measure::job::QueryResults>>,
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
            gate: auth::Gate::new(TokenCheck::api(api_tokens), auth::SESSION_TTL),
            headlines: Arc::default(),
            pages: Arc::default(),
            results: Arc::default(),
        }
    }

    /// The same dashboard with sessions that last `ttl` after sign-in.
    pub fn with_session_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.gate = auth::Gate::new(self.gate.tokens().clone(), ttl);
        self
    }

    /// The routes, behind the sign-in check.
    pub fn router(self) -> axum::Router {
        let gate = self.gate.clone();
        let state = Arc::new(self);
        axum::Router::new()
            .route("/", get(index))
            .route("/jobs.json", get(jobs_json))
            .route("/jobs/{job_id}", get(job))
            .route("/history", get(history_index))
            .route("/history/{metric}", get(history_page))
            .route("/compare/{job_a}/{job_b}", get(compare))
            .route("/metrics", get(metrics))
            .with_state(state)
            .merge(auth::routes(gate.clone()))
            .layer(axum::middleware::from_fn_with_state(gate, auth::middleware))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error("--dashboard-listen: {0}")]
    Io(#[from] std::io::Error),
    #[error("--dashboard-listen with TLS: {0}")]
    Tls(#[from] blocklab_daemon::security::SecurityError),
}

/// Serves the dashboard on `listener` until `shutdown` resolves: HTTPS with `tls`, else
/// plain HTTP.
pub async fn serve(
    dashboard: Dashboard,
    listener: TcpListener,
    tls: Option<&ServerTls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), DashboardError> {
    let addr = listener.local_addr().ok();
    let router = dashboard.router();
    match tls {
        Some(tls) => {
            let listener = tls::TlsListener::new(listener, tls.rustls_config()?)?;
            tracing::info!(addr = ?addr, tls = true, "dashboard listening");
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await?;
        }
        None => {
            tracing::info!(addr = ?addr, tls = false, "dashboard listening");
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await?;
        }
    }
    Ok(())
}

fn error_page(status: StatusCode, message: &str) -> Response {
    (status, Html(pages::error(status, message))).into_response()
}

/// The page for an error, with the status of its code (the same table gRPC uses).
fn service_error(e: &impl ServiceError) -> Response {
    if matches!(e.code(), ErrorCode::Unavailable | ErrorCode::Internal) {
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
    let lines = d.headlines.lines(&d.catalog, &jobs).await;
    Html(pages::index(&hosts, &up, &jobs, &lines, &d.catalog_path)).into_response()
}

/// `/jobs.json`: every job's state, progress and headline, for the index page's script.
async fn jobs_json(State(d): State<Arc<Dashboard>>) -> Response {
    match d.catalog.jobs().await {
        Ok(jobs) => {
            let lines = d.headlines.lines(&d.catalog, &jobs).await;
            match serde_json::to_string(&lines) {
                Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
                Err(e) => {
                    tracing::error!(error = %e, "dashboard: job lines not serialized");
                    error_page(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "job lines not serialized",
                    )
                }
            }
        }
        Err(e) => service_error(&e),
    }
}

fn not_a_job(id: &str) -> Option<Response> {
    uuid::Uuid::parse_str(id)
        .is_err()
        .then(|| error_page(StatusCode::NOT_FOUND, "not a job id (a UUID)"))
}

async fn job(State(d): State<Arc<Dashboard>>, Path(job_id): Path<String>) -> Response {
    if let Some(r) = not_a_job(&job_id) {
        return r;
    }
    if let Some(page) = d.pages.get(&job_id) {
        return Html(page.as_str().to_string()).into_response();
    }
    match job_page::job_page(&d.catalog, &d.catalog_path, &job_id).await {
        Ok((page, finished)) => {
            if finished {
                d.pages.put(job_id, page.clone());
            }
            Html(page).into_response()
        }
        Err(e) => service_error(&e),
    }
}

async fn history_index() -> Response {
    axum::response::Redirect::to("/history/tps").into_response()
}

async fn history_page(
    State(d): State<Arc<Dashboard>>,
    Path(metric): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let filters = match history::Filters::parse(&pairs) {
        Ok(f) => f,
        Err(e) => return service_error(&e),
    };
    match history::page(&d.catalog, &d.catalog_path, &metric, &filters, &d.results).await {
        Ok(page) => Html(page).into_response(),
        Err(e) => service_error(&e),
    }
}

async fn compare(
    State(d): State<Arc<Dashboard>>,
    Path((job_a, job_b)): Path<(String, String)>,
) -> Response {
    if let Some(r) = not_a_job(&job_a).or_else(|| not_a_job(&job_b)) {
        return r;
    }
    match crate::results::compare_jobs(&d.catalog, &job_a, &job_b, "").await {
        Ok(r) => Html(pages::compare(&r)).into_response(),
        Err(e) => service_error(&e),
    }
}

async fn metrics(State(d): State<Arc<Dashboard>>) -> Response {
    match crate::prometheus::render(&d.catalog, &d.registry).await {
        Ok(text) => (
            [(header::CONTENT_TYPE, blocklab_daemon::metrics::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(e) => service_error(&e),
    }
}
