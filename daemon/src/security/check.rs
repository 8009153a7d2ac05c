//! The server's token check: [`TokenCheck`] compares a request's bearer token in constant
//! time against every configured token and gives its [`Scope`].

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::scopes::{ApiToken, Scope};
use super::tokens::{Secret, TokenKind};

/// Why a request's token was refused. The message names the flag or variable to set and never
/// the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefused {
    #[error("missing {}: this coordinator requires `authorization: Bearer <token>` ({})", .0.name(), .0.hint())]
    Missing(TokenKind),
    #[error("malformed authorization metadata: expected `Bearer <{}>` ({})", .0.name(), .0.hint())]
    Malformed(TokenKind),
    #[error("invalid {} ({})", .0.name(), .0.hint())]
    Invalid(TokenKind),
}

/// The token of an `authorization` value: `Bearer <token>` (or `bearer`).
pub fn bearer_token(kind: TokenKind, authorization: Option<&[u8]>) -> Result<&[u8], TokenRefused> {
    let value = authorization.ok_or(TokenRefused::Missing(kind))?;
    value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))
        .ok_or(TokenRefused::Malformed(kind))
}

/// The server's token check: with no tokens configured every request passes (as `admin`);
/// otherwise a request must carry `authorization: Bearer <one of the tokens>`, compared in
/// constant time against every token, and gets that token's scope.
#[derive(Clone, Debug)]
pub struct TokenCheck {
    kind: TokenKind,
    entries: Arc<[([u8; 32], Scope)]>,
}

impl TokenCheck {
    /// The fleet join token(s): whoever holds one may attach (scope is not used).
    pub fn fleet(tokens: &[Secret]) -> Self {
        Self {
            kind: TokenKind::Fleet,
            entries: tokens.iter().map(|t| (t.digest(), Scope::Admin)).collect(),
        }
    }

    /// The API tokens with their scopes.
    pub fn api(tokens: &[ApiToken]) -> Self {
        Self {
            kind: TokenKind::Api,
            entries: tokens
                .iter()
                .map(|t| (t.secret.digest(), t.scope))
                .collect(),
        }
    }

    /// Whether this service accepts requests without a token.
    pub fn is_open(&self) -> bool {
        self.entries.is_empty()
    }

    /// The scope of the token in one `authorization` value (or its absence).
    pub fn check(&self, authorization: Option<&[u8]>) -> Result<Scope, TokenRefused> {
        if self.is_open() {
            return Ok(Scope::Admin);
        }
        let token = bearer_token(self.kind, authorization)?;
        self.scope_of(token).ok_or(TokenRefused::Invalid(self.kind))
    }

    /// The scope of `token` if it is one of the tokens. Every token is compared, each in
    /// constant time, whichever matches.
    pub fn scope_of(&self, token: &[u8]) -> Option<Scope> {
        let digest: [u8; 32] = Sha256::digest(token).into();
        let rank = self.entries.iter().fold(0u8, |found, (d, scope)| {
            u8::conditional_select(&found, &scope.rank(), d.ct_eq(&digest))
        });
        Scope::from_rank(rank)
    }
}
