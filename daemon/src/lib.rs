//! What every blocklab daemon shares: the host side of a Fleet session ([`fleet`]), daemon
//! config files ([`config`]), the `/metrics` endpoint ([`metrics`]), TLS and tokens
//! ([`security`], also used by the CLI), and the shutdown signal.

pub mod config;
pub mod fleet;
pub mod metrics;
pub mod security;

/// Default coordinator address used by the CLI and the daemons when none is configured.
pub const DEFAULT_COORDINATOR: &str = "http://127.0.0.1:7400";

/// Turns `host:port` or a full URL into the URL form tonic expects.
pub fn endpoint_url(addr: &str) -> String {
    if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

/// A daemon's shutdown signal as one type: `serve` boxes the caller's future into it and
/// hands it to a function that is not generic, so the daemon's code is compiled once, in its
/// library, not again in every binary and test that starts it.
pub type Shutdown<'a> = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Resolves when the process gets SIGTERM or SIGINT: every daemon's shutdown trigger.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; running until killed");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!(signal = "SIGTERM", "shutdown requested"),
        _ = int.recv() => tracing::info!(signal = "SIGINT", "shutdown requested"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_url_adds_scheme_once() {
        assert_eq!(endpoint_url("127.0.0.1:7400"), "http://127.0.0.1:7400");
        assert_eq!(endpoint_url("https://c:1"), "https://c:1");
    }
}
