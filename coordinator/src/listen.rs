//! Whether the coordinator may listen on an address with the protection it was given.
//!
//! On loopback (127.0.0.0/8, ::1) anything goes: only local users can connect. Anywhere else
//! the coordinator needs TLS, a fleet join token and API tokens, unless told `--insecure`.

use std::net::SocketAddr;

/// What protects the coordinator's services.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Protection {
    /// `--tls-cert` and `--tls-key`.
    pub tls: bool,
    /// `--fleet-token-file` (or `BLOCKLAB_FLEET_TOKEN`), or hosts enrolled in the catalog.
    pub fleet_token: bool,
    /// `--api-token-file`.
    pub api_tokens: bool,
}

impl Protection {
    /// The flags that are missing, by name.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.tls {
            out.push("--tls-cert/--tls-key");
        }
        if !self.fleet_token {
            out.push("--fleet-token-file");
        }
        if !self.api_tokens {
            out.push("--api-token-file");
        }
        out
    }
}

/// The outcome of [`decide_listen`] when listening is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenDecision {
    /// A loopback address: allowed with or without protection.
    Loopback,
    /// Off loopback with TLS and both kinds of tokens.
    Protected,
    /// Off loopback without full protection, allowed by `--insecure`; these flags are missing
    /// (log a warning naming them).
    Insecure { missing: Vec<&'static str> },
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "refusing to listen on {addr}: it is not a loopback address and lacks {}; \
     give --tls-cert FILE --tls-key FILE --fleet-token-file FILE --api-token-file FILE, \
     or --insecure to serve anyway without them",
    missing.join(", ")
)]
pub struct ListenRefused {
    pub addr: SocketAddr,
    pub missing: Vec<&'static str>,
}

/// Decides whether to serve on `addr` with `protection`.
pub fn decide_listen(
    addr: SocketAddr,
    protection: Protection,
    insecure: bool,
) -> Result<ListenDecision, ListenRefused> {
    if addr.ip().to_canonical().is_loopback() {
        return Ok(ListenDecision::Loopback);
    }
    let missing = protection.missing();
    if missing.is_empty() {
        Ok(ListenDecision::Protected)
    } else if insecure {
        Ok(ListenDecision::Insecure { missing })
    } else {
        Err(ListenRefused { addr, missing })
    }
}
