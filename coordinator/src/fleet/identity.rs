//! Who a host is. A host presents a token on `Fleet`: its own credential, enrolled with
//! `blocklab-coordinator hosts add ID --role ROLE` and bound to that host id and role, or the
//! shared fleet join token (`--fleet-token-file`). The rules, applied at hello and again to
//! every live session whenever the credentials are re-read:
//!
//! - an enrolled credential attaches only as its host id and role; a revoked one not at all;
//! - the shared token (and, without one, an open loopback coordinator) attaches hosts only
//!   while no host has ever been enrolled: single-machine labs and the demo keep working, a
//!   lab that enrolled a host takes only credentials from then on, also once every
//!   credential is revoked (revoking the last one does not reopen the fleet).
//!
//! Enrolled tokens are looked up by their sha256 (only that is stored); the shared token is
//! compared in constant time.

use blocklab_daemon::security::{TokenCheck, TokenKind, TokenRefused, bearer_token};
use blocklab_spec::HostRole;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalog::credentials::CredentialRecord;
use crate::error::{ErrorCode, ServiceError};

/// How a session's host proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// No fleet token is configured and no host is enrolled (a loopback lab).
    Open,
    /// The shared fleet join token.
    Shared,
    /// An enrolled credential: the sha256 (hex) of its token.
    Enrolled {
        host_id: String,
        role: HostRole,
        token_sha256: String,
    },
}

/// Why a host may not attach (or stay attached).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error(transparent)]
    Token(#[from] TokenRefused),
    #[error(
        "the credential of host {0} was revoked (blocklab-coordinator hosts add {0} enrolls it again)"
    )]
    Revoked(String),
    #[error(
        "this credential is enrolled for host {enrolled} ({role}); it may not attach as host {claimed}"
    )]
    OtherHost {
        enrolled: String,
        role: HostRole,
        claimed: String,
    },
    #[error(
        "this credential is enrolled for host {host_id} as {enrolled}; it may not attach as {claimed}"
    )]
    OtherRole {
        host_id: String,
        enrolled: HostRole,
        claimed: HostRole,
    },
    #[error(
        "hosts have been enrolled on this coordinator: the shared fleet token no longer attaches hosts; \
         give this host its own token (blocklab-coordinator hosts add ID --role ROLE) in --token-file"
    )]
    SharedRetired,
    #[error(
        "host {0} is enrolled: it attaches only with its own credential (--token-file), not the shared fleet token"
    )]
    EnrolledId(String),
}

impl ServiceError for IdentityError {
    fn code(&self) -> ErrorCode {
        match self {
            IdentityError::Token(_) | IdentityError::Revoked(_) => ErrorCode::Unauthenticated,
            IdentityError::OtherHost { .. }
            | IdentityError::OtherRole { .. }
            | IdentityError::SharedRetired
            | IdentityError::EnrolledId(_) => ErrorCode::PermissionDenied,
        }
    }
}

/// The sha256 of a token, lowercase hex, as `host_credentials.token_sha256` stores it.
pub fn token_sha256(token: &[u8]) -> String {
    hex::encode(Sha256::digest(token))
}

/// Which credential an `authorization` value (or its absence) is, against the shared token
/// check and every stored credential.
pub fn identify(
    shared: &TokenCheck,
    credentials: &[CredentialRecord],
    authorization: Option<&[u8]>,
) -> Result<Credential, IdentityError> {
    // Revoked credentials count: once a host was enrolled, only credentials attach.
    let any_enrolled = !credentials.is_empty();
    let open = shared.is_open() && !any_enrolled;
    let token = match bearer_token(TokenKind::Fleet, authorization) {
        Ok(t) => t,
        Err(_) if open => return Ok(Credential::Open),
        Err(e) => return Err(e.into()),
    };
    let digest = token_sha256(token);
    let found = credentials
        .iter()
        .find(|c| bool::from(c.token_sha256.as_bytes().ct_eq(digest.as_bytes())));
    if let Some(c) = found {
        return match c.revoked_at {
            Some(_) => Err(IdentityError::Revoked(c.host_id.clone())),
            None => Ok(Credential::Enrolled {
                host_id: c.host_id.clone(),
                role: c.role,
                token_sha256: digest,
            }),
        };
    }
    if open {
        return Ok(Credential::Open);
    }
    match shared.scope_of(token) {
        Some(_) if any_enrolled => Err(IdentityError::SharedRetired),
        Some(_) => Ok(Credential::Shared),
        None => Err(TokenRefused::Invalid(TokenKind::Fleet).into()),
    }
}

/// The enrollment an enrolled credential is bound by (its labels and address); `None` for
/// the shared token or an open fleet, whose hosts declare their own.
pub fn binding<'c>(
    credential: &Credential,
    credentials: &'c [CredentialRecord],
) -> Option<&'c CredentialRecord> {
    match credential {
        Credential::Enrolled {
            host_id,
            token_sha256,
            ..
        } => credentials
            .iter()
            .find(|c| &c.token_sha256 == token_sha256 && &c.host_id == host_id),
        Credential::Open | Credential::Shared => None,
    }
}

/// The labels and address a host attaches with: an enrolled host's are those of its
/// enrollment (without a bound address, the one its connection comes from), whatever its
/// hello claims (a difference is logged); other hosts declare their own. `address` is the
/// checked hello's.
pub fn bound(
    credential: &Credential,
    credentials: &[CredentialRecord],
    hello: &blocklab_proto::v1::Hello,
    address: String,
    peer: Option<std::net::SocketAddr>,
) -> (Vec<String>, String) {
    let Some(enrolled) = binding(credential, credentials) else {
        return (hello.labels.clone(), address);
    };
    let address = if enrolled.address.is_empty() {
        peer.map(|p| p.ip().to_string()).unwrap_or(address)
    } else {
        enrolled.address.clone()
    };
    if hello.labels != enrolled.labels || (!hello.address.is_empty() && hello.address != address) {
        tracing::warn!(host_id = %hello.host_id, claimed_labels = ?hello.labels, claimed_address = %hello.address, labels = ?enrolled.labels, address, "hello's labels or address differ from the enrollment; the enrollment's apply");
    }
    (enrolled.labels.clone(), address)
}

/// Whether `credential` may be host `host_id` in `role`, with the credentials as they are now.
pub fn authorize(
    credential: &Credential,
    host_id: &str,
    role: HostRole,
    credentials: &[CredentialRecord],
) -> Result<(), IdentityError> {
    match credential {
        Credential::Enrolled {
            host_id: enrolled,
            role: enrolled_role,
            token_sha256,
        } => {
            let current = credentials
                .iter()
                .find(|c| &c.token_sha256 == token_sha256 && c.host_id == *enrolled);
            match current {
                Some(c) if c.is_active() => {}
                _ => return Err(IdentityError::Revoked(enrolled.clone())),
            }
            if enrolled != host_id {
                return Err(IdentityError::OtherHost {
                    enrolled: enrolled.clone(),
                    role: *enrolled_role,
                    claimed: host_id.to_string(),
                });
            }
            if *enrolled_role != role {
                return Err(IdentityError::OtherRole {
                    host_id: enrolled.clone(),
                    enrolled: *enrolled_role,
                    claimed: role,
                });
            }
            Ok(())
        }
        Credential::Open | Credential::Shared => {
            if credentials.iter().any(|c| c.host_id == host_id) {
                Err(IdentityError::EnrolledId(host_id.to_string()))
            } else if !credentials.is_empty() {
                Err(IdentityError::SharedRetired)
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_daemon::security::Secret;

    const DB1: &str = "db1-token-0123456789abcdef";
    const SHARED: &str = "shared-fleet-token-0123456789";

    fn cred(host: &str, role: HostRole, token: &str, revoked: bool) -> CredentialRecord {
        CredentialRecord {
            host_id: host.into(),
            role,
            token_sha256: token_sha256(token.as_bytes()),
            enrolled_at: "now".into(),
            revoked_at: revoked.then(|| "later".into()),
            labels: Vec::new(),
            address: String::new(),
        }
    }

    fn bearer(t: &str) -> Vec<u8> {
        format!("Bearer {t}").into_bytes()
    }

    #[test]
    fn enrolled_credentials_bind_host_and_role() {
        let shared = TokenCheck::fleet(&[Secret::new(SHARED, "t").expect("token")]);
        let creds = [cred("db1", HostRole::Agent, DB1, false)];
        let c = identify(&shared, &creds, Some(&bearer(DB1))).expect("db1");
        assert!(matches!(c, Credential::Enrolled { ref host_id, .. } if host_id == "db1"));
        assert_eq!(authorize(&c, "db1", HostRole::Agent, &creds), Ok(()));
        assert_eq!(
            authorize(&c, "db2", HostRole::Agent, &creds)
                .expect_err("db2")
                .to_string(),
            "this credential is enrolled for host db1 (agent); it may not attach as host db2"
        );
        assert_eq!(
            authorize(&c, "db1", HostRole::Worker, &creds)
                .expect_err("worker")
                .to_string(),
            "this credential is enrolled for host db1 as agent; it may not attach as worker"
        );
        // The shared token is retired once a host is enrolled.
        assert_eq!(
            identify(&shared, &creds, Some(&bearer(SHARED))),
            Err(IdentityError::SharedRetired)
        );
        let revoked = [cred("db1", HostRole::Agent, DB1, true)];
        assert_eq!(
            identify(&shared, &revoked, Some(&bearer(DB1))),
            Err(IdentityError::Revoked("db1".into()))
        );
        assert_eq!(
            authorize(&c, "db1", HostRole::Agent, &revoked),
            Err(IdentityError::Revoked("db1".into()))
        );
        // With only revoked credentials the shared token stays retired, and a session that
        // attached with it before any enrollment is ended, as db1 or as any other id.
        assert_eq!(
            identify(&shared, &revoked, Some(&bearer(SHARED))),
            Err(IdentityError::SharedRetired)
        );
        assert_eq!(
            authorize(&Credential::Shared, "db1", HostRole::Agent, &revoked),
            Err(IdentityError::EnrolledId("db1".into()))
        );
        assert_eq!(
            authorize(&Credential::Shared, "db9", HostRole::Agent, &revoked),
            Err(IdentityError::SharedRetired)
        );
        assert_eq!(
            identify(&shared, &creds, Some(&bearer("unknown-token-0123456789"))),
            Err(IdentityError::Token(TokenRefused::Invalid(
                TokenKind::Fleet
            )))
        );
        assert_eq!(
            identify(&shared, &creds, None),
            Err(IdentityError::Token(TokenRefused::Missing(
                TokenKind::Fleet
            )))
        );
    }

    #[test]
    fn an_open_coordinator_is_open_until_a_host_is_enrolled() {
        let open = TokenCheck::fleet(&[]);
        assert_eq!(identify(&open, &[], None), Ok(Credential::Open));
        assert_eq!(
            identify(&open, &[], Some(&bearer("anything-0123456789abc"))),
            Ok(Credential::Open)
        );
        let creds = [cred("db1", HostRole::Agent, DB1, false)];
        assert_eq!(
            identify(&open, &creds, None),
            Err(IdentityError::Token(TokenRefused::Missing(
                TokenKind::Fleet
            )))
        );
        assert!(matches!(
            identify(&open, &creds, Some(&bearer(DB1))),
            Ok(Credential::Enrolled { .. })
        ));
        assert_eq!(
            authorize(&Credential::Open, "w1", HostRole::Worker, &creds),
            Err(IdentityError::SharedRetired)
        );
        // Revoking the last credential does not reopen the fleet.
        let revoked = [cred("db1", HostRole::Agent, DB1, true)];
        assert_eq!(
            identify(&open, &revoked, None),
            Err(IdentityError::Token(TokenRefused::Missing(
                TokenKind::Fleet
            )))
        );
        assert_eq!(
            identify(&open, &revoked, Some(&bearer("anything-0123456789abc"))),
            Err(IdentityError::Token(TokenRefused::Invalid(
                TokenKind::Fleet
            )))
        );
        assert_eq!(
            authorize(&Credential::Open, "w1", HostRole::Worker, &revoked),
            Err(IdentityError::SharedRetired)
        );
        let shared = TokenCheck::fleet(&[Secret::new(SHARED, "t").expect("token")]);
        assert_eq!(
            identify(&shared, &revoked, Some(&bearer(SHARED))),
            Err(IdentityError::SharedRetired)
        );
        assert_eq!(
            IdentityError::SharedRetired.code().grpc(),
            tonic::Code::PermissionDenied
        );
        assert_eq!(
            IdentityError::Revoked("x".into()).code().grpc(),
            tonic::Code::Unauthenticated
        );
    }
}
