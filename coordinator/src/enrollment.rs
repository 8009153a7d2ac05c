//! Host enrollment (`blocklab-coordinator hosts add|list|revoke`): each host gets its own
//! token, bound to its host id and role, printed once; the catalog keeps only its sha256. A
//! running coordinator re-reads the credentials every heartbeat interval, so a new host can
//! attach at once and a revoked host's session ends within one interval.

use blocklab_daemon::security::Secret;
use blocklab_spec::HostRole;
use rand::RngCore as _;

use crate::catalog::credentials::CredentialRecord;
use crate::catalog::{Catalog, CatalogError};
use crate::fleet::identity::token_sha256;

/// Why enrollment refused a request.
#[derive(Debug, thiserror::Error)]
pub enum EnrollError {
    #[error(
        "host id {0:?}: must be 1 to 128 letters, digits, '.', '_' or '-' (as the host's --host-id)"
    )]
    HostId(String),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// A host id enrollment accepts: 1 to 128 of `A-Z a-z 0-9 . _ -`.
pub fn check_host_id(host_id: &str) -> Result<(), EnrollError> {
    let ok = (1..=128).contains(&host_id.len())
        && host_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(EnrollError::HostId(host_id.chars().take(140).collect()))
    }
}

/// A new random token: 256 bits, hex.
fn new_token() -> Secret {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    Secret::new(&hex::encode(bytes), "host token").expect("64 hex characters are a valid token")
}

/// Enrolls `host_id` as `role`; returns its token (the only time it is known).
pub async fn add(catalog: &Catalog, host_id: &str, role: HostRole) -> Result<Secret, EnrollError> {
    check_host_id(host_id)?;
    let token = new_token();
    catalog
        .enroll_host(host_id, role, &token_sha256(token.expose().as_bytes()))
        .await?;
    tracing::info!(host_id, role = role.as_str(), "host enrolled");
    Ok(token)
}

/// Revokes `host_id`'s credential.
pub async fn revoke(catalog: &Catalog, host_id: &str) -> Result<(), EnrollError> {
    catalog.revoke_host(host_id).await?;
    tracing::info!(host_id, "host credential revoked");
    Ok(())
}

/// Every enrolled host, valid and revoked.
pub async fn list(catalog: &Catalog) -> Result<Vec<CredentialRecord>, EnrollError> {
    Ok(catalog.host_credentials().await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Location;

    #[test]
    fn host_ids() {
        for ok in ["db1", "client-2.lab_a", &"x".repeat(128)] {
            assert!(check_host_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "db 1", "db1;rm", "é", &"x".repeat(129)] {
            let e = check_host_id(bad).expect_err(bad).to_string();
            assert!(e.contains("must be 1 to 128 letters"), "{e}");
        }
    }

    #[tokio::test]
    async fn add_list_revoke() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.db");
        let none = Location::Sqlite(dir.path().join("none.db"));
        add_list_revoke_on(&Location::Sqlite(path), &none).await;
        assert!(
            !dir.path().join("none.db").exists(),
            "the check created a file"
        );
    }

    #[tokio::test]
    async fn add_list_revoke_on_postgres() {
        let pg = blocklab_testpg::PgServer::shared();
        let none = Location::Postgres(pg.url("no_such_database"));
        add_list_revoke_on(&Location::Postgres(pg.database()), &none).await;
    }

    async fn add_list_revoke_on(at: &Location, none: &Location) {
        let catalog = Catalog::connect(at).await.expect("catalog");
        let token = add(&catalog, "db1", HostRole::Agent).await.expect("add");
        assert_eq!(token.expose().len(), 64);
        let other = add(&catalog, "w1", HostRole::Worker).await.expect("add");
        assert_ne!(token.expose(), other.expose());
        let e = add(&catalog, "db1", HostRole::Agent)
            .await
            .expect_err("twice");
        assert!(e.to_string().contains("already enrolled"), "{e}");
        let listed = list(&catalog).await.expect("list");
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].host_id, "db1");
        assert_eq!(
            listed[0].token_sha256,
            token_sha256(token.expose().as_bytes())
        );
        assert!(
            listed
                .iter()
                .all(|c| !c.token_sha256.contains(token.expose()))
        );
        assert!(
            crate::catalog::credentials::any_enrolled(at)
                .await
                .expect("read")
        );
        assert!(
            !crate::catalog::credentials::any_enrolled(none)
                .await
                .expect("no catalog")
        );
        revoke(&catalog, "db1").await.expect("revoke");
        assert!(!list(&catalog).await.expect("list")[0].is_active());
        revoke(&catalog, "w1").await.expect("revoke");
        assert!(
            crate::catalog::credentials::any_enrolled(at)
                .await
                .expect("read"),
            "revoked credentials keep the fleet closed to the shared token"
        );
        assert!(matches!(
            revoke(&catalog, "db1").await,
            Err(EnrollError::Catalog(CatalogError::HostRevoked(_)))
        ));
        assert!(matches!(
            revoke(&catalog, "db9").await,
            Err(EnrollError::Catalog(CatalogError::HostNotEnrolled(_)))
        ));
        // Enrolled again after a revocation: a new token, valid again.
        let again = add(&catalog, "db1", HostRole::Agent).await.expect("again");
        assert_ne!(again.expose(), token.expose());
        assert!(list(&catalog).await.expect("list")[0].is_active());
    }
}
