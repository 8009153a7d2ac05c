//! API token scopes and the API token file (`--api-token-file`).
//!
//! One token per line, `SCOPE TOKEN` (`read`, `submit` or `admin`); a line holding only a
//! token is a `submit` token, what every API token could do before tokens had scopes. Blank
//! lines and `#` comments are ignored. A bad line is refused naming its number.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::error::SecurityError;
use super::tokens::{Secret, read_private};

/// What an API token may do; each scope includes the ones before it (read ⊂ submit ⊂ admin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Listings, job and run detail, results, exports, watching: nothing that changes anything.
    Read,
    /// Also submitting and cancelling jobs.
    Submit,
    /// Also managing the lab (the host enrollment the coordinator offers).
    Admin,
}

impl Scope {
    /// Every scope, smallest first.
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Submit, Scope::Admin];

    /// The scope of a line holding only a token.
    pub const UNTAGGED: Scope = Scope::Submit;

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Submit => "submit",
            Scope::Admin => "admin",
        }
    }

    /// Whether a token of this scope may do what `needed` guards.
    pub fn allows(self, needed: Scope) -> bool {
        self >= needed
    }

    /// The scopes as a list for messages: `read, submit, admin`.
    pub fn allowed_list() -> String {
        Self::ALL.map(Scope::as_str).join(", ")
    }

    pub(super) fn rank(self) -> u8 {
        match self {
            Scope::Read => 1,
            Scope::Submit => 2,
            Scope::Admin => 3,
        }
    }

    pub(super) fn from_rank(rank: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.rank() == rank)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A scope name that is not one of [`Scope::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope {0:?} (allowed: read, submit, admin)")]
pub struct UnknownScope(pub String);

impl FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(s: &str) -> Result<Self, UnknownScope> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| UnknownScope(s.chars().take(32).collect()))
    }
}

/// One token of the API token file with its scope.
#[derive(Clone, Debug)]
pub struct ApiToken {
    pub scope: Scope,
    pub secret: Secret,
}

impl ApiToken {
    pub fn new(scope: Scope, secret: Secret) -> Self {
        Self { scope, secret }
    }
}

/// Parses the text of an API token file; `flag` and `path` name it in errors.
pub fn parse_api_tokens(
    flag: &'static str,
    path: &Path,
    text: &str,
) -> Result<Vec<ApiToken>, SecurityError> {
    let mut tokens: Vec<(usize, ApiToken)> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let bad = |reason: String| SecurityError::Line {
            flag,
            path: path.to_path_buf(),
            line,
            reason,
        };
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let (scope, value) = match fields.as_slice() {
            [only] if only.parse::<Scope>().is_ok() => {
                return Err(bad(format!("scope {only} without a token")));
            }
            [token] => (Scope::UNTAGGED, *token),
            [scope, token] => (
                scope.parse::<Scope>().map_err(|e| bad(e.to_string()))?,
                *token,
            ),
            _ => {
                return Err(bad(format!(
                    "expected `SCOPE TOKEN` or `TOKEN` (scopes: {})",
                    Scope::allowed_list()
                )));
            }
        };
        let secret = Secret::new(value, &format!("{flag} {} line {line}", path.display()))?;
        if let Some((first, _)) = tokens
            .iter()
            .find(|(_, t)| t.secret.digest() == secret.digest())
        {
            return Err(bad(format!("the same token as line {first}")));
        }
        tokens.push((line, ApiToken::new(scope, secret)));
    }
    if tokens.is_empty() {
        return Err(SecurityError::Invalid {
            flag,
            path: path.to_path_buf(),
            reason: "holds no token".into(),
        });
    }
    Ok(tokens.into_iter().map(|(_, t)| t).collect())
}

/// Reads an API token file (see the module documentation); at least one token.
pub fn read_api_tokens(flag: &'static str, path: &Path) -> Result<Vec<ApiToken>, SecurityError> {
    let text = read_private(flag, path)?;
    parse_api_tokens(flag, path, &text)
}
