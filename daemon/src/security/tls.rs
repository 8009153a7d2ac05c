//! TLS material: the CA clients verify the coordinator with, and the coordinator's identity.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

use super::error::SecurityError;
use super::tokens::warn_if_shared;

/// The CA a client verifies the coordinator's certificate with.
#[derive(Clone)]
pub struct ClientTls {
    ca_pem: Arc<[u8]>,
    origin: String,
    domain: Option<String>,
}

impl ClientTls {
    /// Reads a PEM CA certificate (flag `flag` names it in errors).
    pub fn from_ca_file(flag: &'static str, path: &Path) -> Result<Self, SecurityError> {
        let pem = std::fs::read(path).map_err(|error| SecurityError::Read {
            flag,
            path: path.to_path_buf(),
            error,
        })?;
        if !contains(&pem, b"-----BEGIN CERTIFICATE-----") {
            return Err(SecurityError::Invalid {
                flag,
                path: path.to_path_buf(),
                reason: "is not a PEM certificate".into(),
            });
        }
        Ok(Self {
            ca_pem: pem.into(),
            origin: path.display().to_string(),
            domain: None,
        })
    }

    /// A CA given as PEM text (tests).
    pub fn from_ca_pem(pem: impl Into<Vec<u8>>) -> Self {
        Self {
            ca_pem: pem.into().into(),
            origin: "<pem>".into(),
            domain: None,
        }
    }

    /// Verifies the server certificate against `domain` instead of the URL's host.
    pub fn with_domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    pub(super) fn tonic_config(&self) -> ClientTlsConfig {
        let config =
            ClientTlsConfig::new().ca_certificate(Certificate::from_pem(self.ca_pem.as_ref()));
        match &self.domain {
            Some(d) => config.domain_name(d.clone()),
            None => config,
        }
    }
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("ca", &self.origin)
            .field("domain", &self.domain)
            .finish()
    }
}

/// The coordinator's certificate chain and private key (PEM). `Debug` hides the key.
#[derive(Clone)]
pub struct ServerTls {
    cert_pem: Arc<[u8]>,
    key_pem: Arc<[u8]>,
    origin: String,
}

impl ServerTls {
    /// Reads `--tls-cert` and `--tls-key`.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, SecurityError> {
        let read = |flag, path: &Path, marker: &[u8], what: &str| {
            let pem = std::fs::read(path).map_err(|error| SecurityError::Read {
                flag,
                path: path.to_path_buf(),
                error,
            })?;
            if !contains(&pem, marker) {
                return Err(SecurityError::Invalid {
                    flag,
                    path: path.to_path_buf(),
                    reason: format!("is not a PEM {what}"),
                });
            }
            Ok(pem)
        };
        let cert_pem = read(
            "--tls-cert",
            cert,
            b"-----BEGIN CERTIFICATE-----",
            "certificate",
        )?;
        let key_pem = read("--tls-key", key, b"PRIVATE KEY-----", "private key")?;
        warn_if_shared("--tls-key", key);
        Ok(Self::from_pem(cert_pem, key_pem).with_origin(cert))
    }

    /// Certificate chain and key given as PEM text (tests).
    pub fn from_pem(cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Self {
        Self {
            cert_pem: cert_pem.into().into(),
            key_pem: key_pem.into().into(),
            origin: "<pem>".into(),
        }
    }

    fn with_origin(mut self, cert: &Path) -> Self {
        self.origin = cert.display().to_string();
        self
    }

    /// A rustls server configuration (ring, TLS 1.2 and 1.3) for servers other than tonic's
    /// (the dashboard).
    pub fn rustls_config(&self) -> Result<Arc<tokio_rustls::rustls::ServerConfig>, SecurityError> {
        use tokio_rustls::rustls;
        use tokio_rustls::rustls::pki_types::pem::PemObject as _;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let invalid = |flag, reason: String| SecurityError::Invalid {
            flag,
            path: self.origin.clone().into(),
            reason,
        };
        let certs = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                invalid(
                    "--tls-cert",
                    format!("cannot read the certificate chain: {e}"),
                )
            })?;
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem)
            .map_err(|e| invalid("--tls-key", format!("cannot read the private key: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("--tls-cert", e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                invalid(
                    "--tls-cert",
                    format!("certificate and key do not go together: {e}"),
                )
            })?;
        Ok(Arc::new(config))
    }

    /// The tonic server configuration.
    pub fn tonic_config(&self) -> ServerTlsConfig {
        ServerTlsConfig::new().identity(Identity::from_pem(
            self.cert_pem.as_ref(),
            self.key_pem.as_ref(),
        ))
    }
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert", &self.origin)
            .field("key", &"<redacted>")
            .finish()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
