//! Who may see the dashboard. When the coordinator has API tokens, a browser signs in once at
//! `/login` with a **read** token (a form, POST); the dashboard answers with a session cookie
//! `blocklab_session` (`HttpOnly; Secure; SameSite=Strict`) holding an opaque random id that
//! is kept in memory, never the token, and expires ([`SESSION_TTL`]); `POST /logout` ends
//! it. A token in a URL (`?token=`) is refused, never used. `/metrics` also takes
//! `Authorization: Bearer <read token>` for scrapers, which cannot fill in a form.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use blocklab_daemon::security::{Scope, TokenCheck, TokenRefused};
use rand::RngCore as _;
use sha2::{Digest, Sha256};

use crate::dashboard::pages;
use crate::error::ServiceError;

/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// The session cookie's name.
pub const SESSION_COOKIE: &str = "blocklab_session";
/// Paths anyone may reach: the form and signing out.
const OPEN_PATHS: &[&str] = &["/login", "/logout"];
/// Most live sessions at once; a sign-in beyond them ends the one closest to expiring.
pub const MAX_SESSIONS: usize = 256;

/// Why the dashboard refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    #[error(
        "a token in the URL is refused (URLs end up in logs and browser history): sign in at /login"
    )]
    TokenInUrl,
    #[error("sign in at /login with a read token")]
    NoSession,
    #[error("{0}")]
    Token(#[from] TokenRefused),
    #[error(
        "the dashboard takes read tokens only; this token's scope is {0} (add a `read TOKEN` line to --api-token-file)"
    )]
    NotRead(Scope),
    #[error("a form sent from another site is refused (origin {0})")]
    CrossOrigin(String),
}

impl ServiceError for LoginError {
    fn code(&self) -> crate::error::ErrorCode {
        use crate::error::ErrorCode;
        match self {
            LoginError::TokenInUrl => ErrorCode::BadInput,
            LoginError::NoSession | LoginError::Token(_) => ErrorCode::Unauthenticated,
            LoginError::NotRead(_) | LoginError::CrossOrigin(_) => ErrorCode::PermissionDenied,
        }
    }
}

/// The dashboard's token check and its signed-in sessions.
pub struct Gate {
    tokens: TokenCheck,
    ttl: Duration,
    /// sha256 of a session id -> when it expires.
    sessions: Mutex<HashMap<[u8; 32], Instant>>,
}

#[derive(serde::Deserialize)]
pub struct LoginForm {
    token: String,
}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

impl Gate {
    pub fn new(tokens: TokenCheck, ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            tokens,
            ttl,
            sessions: Mutex::new(HashMap::new()),
        })
    }

    pub fn tokens(&self) -> &TokenCheck {
        &self.tokens
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Instant>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session for a read token: its id (256 random bits, hex).
    fn sign_in(&self, token: &str) -> Result<String, LoginError> {
        let scope = self
            .tokens
            .check(Some(format!("Bearer {token}").as_bytes()))?;
        if scope != Scope::Read {
            return Err(LoginError::NotRead(scope));
        }
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let id = hex::encode(bytes);
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.retain(|_, expires| *expires > now);
        while sessions.len() >= MAX_SESSIONS {
            let Some(soonest) = sessions.iter().min_by_key(|(_, e)| **e).map(|(k, _)| *k) else {
                break;
            };
            sessions.remove(&soonest);
        }
        sessions.insert(digest(&id), now + self.ttl);
        Ok(id)
    }

    fn session_valid(&self, id: &str) -> bool {
        let key = digest(id);
        let mut sessions = self.lock();
        match sessions.get(&key) {
            Some(expires) if *expires > Instant::now() => true,
            Some(_) => {
                sessions.remove(&key);
                false
            }
            None => false,
        }
    }

    fn sign_out(&self, id: &str) {
        self.lock().remove(&digest(id));
    }

    /// Whether `request` may pass: a live session, or a read token in `Authorization` on
    /// `/metrics`.
    fn admit(&self, path: &str, headers: &HeaderMap) -> Result<(), LoginError> {
        if cookie(headers, SESSION_COOKIE).is_some_and(|id| self.session_valid(&id)) {
            return Ok(());
        }
        if path == "/metrics"
            && let Some(value) = headers.get(header::AUTHORIZATION)
        {
            let scope = self.tokens.check(Some(value.as_bytes()))?;
            return if scope == Scope::Read {
                Ok(())
            } else {
                Err(LoginError::NotRead(scope))
            };
        }
        Err(LoginError::NoSession)
    }
}

/// The `/login` and `/logout` routes.
pub fn routes(gate: Arc<Gate>) -> axum::Router {
    axum::Router::new()
        .route("/login", get(login_form).post(login))
        .route("/logout", axum::routing::post(logout))
        .with_state(gate)
}

/// Whether the query string names a `token` parameter (with or without a value, in any
/// case, percent-encoded or not, separated by `&` or `;`).
fn query_has_token(query: &str) -> bool {
    query
        .split(';')
        .flat_map(|part| form_urlencoded::parse(part.as_bytes()))
        .any(|(k, _)| k.eq_ignore_ascii_case("token"))
}

/// A request a browser sent from another site: its `Origin` names another host than the
/// one it was sent to, or its `Sec-Fetch-Site` says cross-site. The origin, if so.
fn cross_origin(headers: &HeaderMap) -> Option<String> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if get("sec-fetch-site") == Some("cross-site") {
        return Some(get("origin").unwrap_or("unknown").to_string());
    }
    let origin = get("origin")?;
    let host = get("host").unwrap_or("");
    let origin_host = origin.split_once("://").map_or(origin, |(_, h)| h);
    (!origin_host.eq_ignore_ascii_case(host)).then(|| origin.to_string())
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

fn refused(e: &LoginError) -> Response {
    let status = e.code().http();
    let body = if status == StatusCode::UNAUTHORIZED {
        pages::login(Some(&e.to_string()))
    } else {
        pages::error(status, &e.to_string())
    };
    (status, Html(body)).into_response()
}

/// The middleware in front of every path: a `?token=` is refused everywhere, and so is a
/// form (any method but GET and HEAD) sent from another site; with API tokens, every path but
/// the login form needs a session.
pub async fn middleware(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    if request.uri().query().is_some_and(query_has_token) {
        tracing::warn!(
            path = request.uri().path(),
            "dashboard request with a token in the url refused"
        );
        return refused(&LoginError::TokenInUrl);
    }
    let reads = matches!(request.method(), &Method::GET | &Method::HEAD);
    if !reads && let Some(origin) = cross_origin(request.headers()) {
        tracing::warn!(
            path = request.uri().path(),
            origin,
            "cross-site dashboard form refused"
        );
        return refused(&LoginError::CrossOrigin(origin));
    }
    if gate.tokens.is_open() || OPEN_PATHS.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    match gate.admit(request.uri().path(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => {
            tracing::warn!(path = request.uri().path(), reason = %e, "dashboard request refused");
            refused(&e)
        }
    }
}

fn session_cookie(value: &str, max_age: Duration) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; Path=/; Max-Age={}; HttpOnly; Secure; SameSite=Strict",
        max_age.as_secs()
    ))
    .ok()
}

fn see_other(to: &'static str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
}

async fn login_form() -> Response {
    Html(pages::login(None)).into_response()
}

async fn login(State(gate): State<Arc<Gate>>, Form(form): Form<LoginForm>) -> Response {
    match gate.sign_in(form.token.trim()) {
        Ok(id) => {
            tracing::info!("dashboard sign-in");
            let mut response = see_other("/");
            if let Some(v) = session_cookie(&id, gate.ttl) {
                response.headers_mut().insert(header::SET_COOKIE, v);
            }
            response
        }
        Err(e) => {
            tracing::warn!(reason = %e, "dashboard sign-in refused");
            refused(&e)
        }
    }
}

async fn logout(State(gate): State<Arc<Gate>>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers, SESSION_COOKIE) {
        gate.sign_out(&id);
    }
    let mut response = see_other("/login");
    if let Some(v) = session_cookie("", Duration::ZERO) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_daemon::security::{ApiToken, Secret};

    fn gate(ttl: Duration) -> Arc<Gate> {
        let token = |scope, v| ApiToken::new(scope, Secret::new(v, "test").expect("token"));
        Gate::new(
            TokenCheck::api(&[
                token(Scope::Read, "reader-token-0123456789"),
                token(Scope::Submit, "submit-token-0123456789"),
            ]),
            ttl,
        )
    }

    #[test]
    fn only_read_tokens_sign_in_and_sessions_expire() {
        let g = gate(SESSION_TTL);
        let id = g.sign_in("reader-token-0123456789").expect("read token");
        assert_eq!(id.len(), 64);
        assert!(!id.contains("reader"));
        assert!(g.session_valid(&id));
        assert_eq!(
            g.sign_in("submit-token-0123456789"),
            Err(LoginError::NotRead(Scope::Submit))
        );
        assert!(matches!(
            g.sign_in("wrong-token-0123456789"),
            Err(LoginError::Token(_))
        ));
        g.sign_out(&id);
        assert!(!g.session_valid(&id));
        let short = gate(Duration::ZERO);
        let id = short
            .sign_in("reader-token-0123456789")
            .expect("read token");
        assert!(!short.session_valid(&id), "an expired session passes");
    }

    #[test]
    fn sessions_are_capped_and_the_oldest_goes_first() {
        let g = gate(SESSION_TTL);
        let first = g.sign_in("reader-token-0123456789").expect("read token");
        let rest: Vec<String> = (1..MAX_SESSIONS + 10)
            .map(|_| g.sign_in("reader-token-0123456789").expect("read token"))
            .collect();
        assert_eq!(g.lock().len(), MAX_SESSIONS);
        assert!(!g.session_valid(&first), "the oldest session ended");
        assert!(g.session_valid(rest.last().expect("sessions")));
    }

    #[test]
    fn forms_from_other_sites_are_refused() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        assert_eq!(
            cross_origin(&headers(&[
                ("host", "lab:7401"),
                ("origin", "https://evil.example")
            ])),
            Some("https://evil.example".into())
        );
        assert_eq!(
            cross_origin(&headers(&[
                ("host", "lab:7401"),
                ("origin", "https://lab:7402")
            ])),
            Some("https://lab:7402".into())
        );
        assert_eq!(
            cross_origin(&headers(&[
                ("host", "lab:7401"),
                ("sec-fetch-site", "cross-site")
            ])),
            Some("unknown".into())
        );
        assert_eq!(
            cross_origin(&headers(&[
                ("host", "lab:7401"),
                ("origin", "https://LAB:7401")
            ])),
            None
        );
        // Not from a browser: nothing to compare.
        assert_eq!(cross_origin(&headers(&[("host", "lab:7401")])), None);
    }

    #[test]
    fn token_parameters_and_cookies() {
        assert!(query_has_token("a=1&token=abc"));
        assert!(query_has_token("Token"));
        assert!(query_has_token("%74oken=abc"));
        assert!(query_has_token("x=1;%54%4F%4b%45%4e=abc"));
        assert!(query_has_token("tok%65n"));
        assert!(!query_has_token("tokens=1&x=token"));
        assert!(!query_has_token("%74oken2=1&tok%=1&%"));
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("x=1; blocklab_session=abc"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE).as_deref(), Some("abc"));
        let c = session_cookie("abc", SESSION_TTL).expect("cookie");
        assert_eq!(
            c.to_str().expect("ascii"),
            "blocklab_session=abc; Path=/; Max-Age=28800; HttpOnly; Secure; SameSite=Strict"
        );
    }
}
