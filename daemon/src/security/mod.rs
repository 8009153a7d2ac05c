//! TLS, tokens and client channels, shared by the coordinator, the CLI, agents and workers.
//!
//! - Clients (CLI, agents, workers) build their channel with [`connect_channel`]: one connect
//!   timeout, TLS verified against the CA given with `--ca-cert` when there is one.
//! - Tokens travel as `authorization: Bearer <token>` metadata ([`Bearer`]) and are checked
//!   on the coordinator by a [`TokenCheck`] per service, in constant time; API tokens carry a
//!   [`Scope`] (`scopes.rs`, the API token file).
//! - A [`Secret`] never prints its value: `Debug` shows `<redacted>`.

mod check;
mod error;
mod scopes;
mod tls;
mod tokens;

pub use check::{TokenCheck, TokenRefused, bearer_token};
pub use error::SecurityError;
pub use scopes::{ApiToken, Scope, UnknownScope, parse_api_tokens, read_api_tokens};
pub use tls::{ClientTls, ServerTls};
pub use tokens::{Bearer, Secret, TokenKind, read_token_file, resolve_token};

use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

/// How long a client waits for the TCP (and TLS) connection to the coordinator.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request the coordinator decodes on the `Control` service.
pub const CONTROL_MAX_MESSAGE_BYTES: usize = 4 << 20;
/// Largest message the coordinator decodes on the `Fleet` stream (results carry histograms).
pub const FLEET_MAX_MESSAGE_BYTES: usize = 64 << 20;
/// Largest message a client decodes from the coordinator (exports with samples, tasks).
pub const CLIENT_MAX_MESSAGE_BYTES: usize = 64 << 20;
/// Environment variable holding the fleet join token (agents, workers, coordinator).
pub const FLEET_TOKEN_ENV: &str = "BLOCKLAB_FLEET_TOKEN";
/// Environment variable holding the CLI's API token.
pub const API_TOKEN_ENV: &str = "BLOCKLAB_TOKEN";
/// Environment variable naming the CA certificate file clients verify the coordinator with.
pub const CA_CERT_ENV: &str = "BLOCKLAB_CA_CERT";

/// What a client presents: the CA to verify the coordinator and its token.
#[derive(Clone, Debug, Default)]
pub struct ClientAuth {
    pub tls: Option<ClientTls>,
    pub token: Option<Secret>,
}

/// The URL for `addr` (`host:port` or a URL): `https://` when TLS is on, `http://` otherwise.
/// A scheme that contradicts the TLS setting is refused rather than silently changed.
pub fn client_url(addr: &str, tls: bool) -> Result<String, SecurityError> {
    let bad = |reason: &str| SecurityError::Address {
        addr: addr.to_string(),
        reason: reason.to_string(),
    };
    if addr.trim().is_empty() {
        return Err(bad("is empty"));
    }
    match (
        addr.starts_with("http://"),
        addr.starts_with("https://"),
        tls,
    ) {
        (true, _, true) => Err(bad(
            "is http:// but a CA certificate is set (--ca-cert / BLOCKLAB_CA_CERT): use https:// or host:port",
        )),
        (_, true, false) => Err(bad(
            "is https:// but no CA certificate is set: give --ca-cert or BLOCKLAB_CA_CERT",
        )),
        (true, _, false) | (_, true, true) => Ok(addr.to_string()),
        (false, false, true) => Ok(format!("https://{addr}")),
        (false, false, false) => Ok(crate::endpoint_url(addr)),
    }
}

/// Whether the coordinator address `addr` (`host:port` or a URL) names this machine: an IP in
/// 127.0.0.0/8, `::1` (or `::ffff:127.x.y.z`), or `localhost`. Another name is not loopback,
/// whatever it resolves to.
pub fn is_loopback_target(addr: &str) -> bool {
    let rest = addr
        .strip_prefix("http://")
        .or_else(|| addr.strip_prefix("https://"))
        .unwrap_or(addr);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => match authority.rsplit_once(':') {
            Some((h, port)) if !h.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => authority,
        },
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// The endpoint every client uses: the URL, a connect timeout, and TLS when `tls` is set.
pub fn client_endpoint(addr: &str, tls: Option<&ClientTls>) -> Result<Endpoint, SecurityError> {
    let url = client_url(addr, tls.is_some())?;
    let endpoint = Endpoint::from_shared(url).map_err(|e| SecurityError::Address {
        addr: addr.to_string(),
        reason: error_chain(&e),
    })?;
    let endpoint = endpoint.connect_timeout(CONNECT_TIMEOUT);
    match tls {
        Some(tls) => endpoint
            .tls_config(tls.tonic_config())
            .map_err(|e| SecurityError::Address {
                addr: addr.to_string(),
                reason: error_chain(&e),
            }),
        None => Ok(endpoint),
    }
}

/// Connects to the coordinator at `addr` (see [`client_endpoint`]).
pub async fn connect_channel(
    addr: &str,
    tls: Option<&ClientTls>,
) -> Result<Channel, SecurityError> {
    client_endpoint(addr, tls)?
        .connect()
        .await
        .map_err(|e| SecurityError::Connect {
            addr: addr.to_string(),
            detail: error_chain(&e),
        })
}

/// An error and its sources on one line (tonic's transport errors say little on their own).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests;
