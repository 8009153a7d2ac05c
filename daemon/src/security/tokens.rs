//! Tokens: [`Secret`], token files and the client's [`Bearer`].

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use super::error::{MAX_TOKEN_LEN, MIN_TOKEN_LEN, SecurityError};

/// A token. Its value is only reachable through [`Secret::expose`]; `Debug` redacts it.
#[derive(Clone)]
pub struct Secret {
    value: Arc<str>,
    digest: [u8; 32],
    header: MetadataValue<Ascii>,
}

impl Secret {
    /// Checks the token's shape: 16 to 4096 visible ASCII characters, no spaces.
    /// `source_name` says where it came from in the error (never the value).
    pub fn new(value: &str, source_name: &str) -> Result<Self, SecurityError> {
        let err = |reason| SecurityError::Token {
            source_name: source_name.to_string(),
            reason,
        };
        if value.len() < MIN_TOKEN_LEN || value.len() > MAX_TOKEN_LEN {
            return Err(err("a token must be 16 to 4096 characters long"));
        }
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(err(
                "a token must be visible ASCII characters without spaces",
            ));
        }
        let mut header: MetadataValue<Ascii> = format!("Bearer {value}")
            .parse()
            .map_err(|_| err("a token must be visible ASCII characters without spaces"))?;
        header.set_sensitive(true);
        Ok(Self {
            value: value.into(),
            digest: Sha256::digest(value.as_bytes()).into(),
            header,
        })
    }

    /// The token itself, for sending it. Never log it.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The token's sha256, what a server keeps instead of the token.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Warns when a secret file is accessible to users other than its owner and group.
pub(super) fn warn_if_shared(flag: &'static str, path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o007 != 0
    {
        tracing::warn!(
            file = %path.display(),
            "{flag}: the file is accessible to other users; chmod 600 it"
        );
    }
}

pub(super) fn read_private(flag: &'static str, path: &Path) -> Result<String, SecurityError> {
    let text = std::fs::read_to_string(path).map_err(|error| SecurityError::Read {
        flag,
        path: path.to_path_buf(),
        error,
    })?;
    warn_if_shared(flag, path);
    Ok(text)
}

fn token_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Reads a file holding exactly one token (blank lines and `#` comments ignored).
pub fn read_token_file(flag: &'static str, path: &Path) -> Result<Secret, SecurityError> {
    let text = read_private(flag, path)?;
    let invalid = |reason: &str| SecurityError::Invalid {
        flag,
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let mut lines = token_lines(&text);
    let token = lines.next().ok_or_else(|| invalid("holds no token"))?;
    if lines.next().is_some() {
        return Err(invalid("must hold exactly one token"));
    }
    Secret::new(token, &format!("{flag} {}", path.display()))
}

/// The token from `file` (flag `flag`) if given, else from the environment variable `env`
/// if set and non-empty, else none.
pub fn resolve_token(
    flag: &'static str,
    file: Option<&Path>,
    env: &str,
) -> Result<Option<Secret>, SecurityError> {
    if let Some(path) = file {
        return read_token_file(flag, path).map(Some);
    }
    match std::env::var(env) {
        Ok(v) if !v.trim().is_empty() => Secret::new(v.trim(), env).map(Some),
        _ => Ok(None),
    }
}

/// Client interceptor adding `authorization: Bearer <token>` to every request (if a token).
#[derive(Clone, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    pub fn new(token: Option<&Secret>) -> Self {
        Self(token.map(|t| t.header.clone()))
    }
}

impl fmt::Debug for Bearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Bearer(<redacted>)"
        } else {
            "Bearer(none)"
        })
    }
}

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert("authorization", v.clone());
        }
        Ok(request)
    }
}

/// Which token a service requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Agents and workers on `Fleet`.
    Fleet,
    /// The CLI on `Control`.
    Api,
}

impl TokenKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            TokenKind::Fleet => "fleet token",
            TokenKind::Api => "API token",
        }
    }
    pub(super) fn hint(self) -> &'static str {
        match self {
            TokenKind::Fleet => {
                "start the agent or worker with --token-file FILE or BLOCKLAB_FLEET_TOKEN"
            }
            TokenKind::Api => "set BLOCKLAB_TOKEN or pass --token-file FILE to the CLI",
        }
    }
}
