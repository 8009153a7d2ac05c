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
    #[error("{0}")]
    Binding(String),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// What a host is bound to at enrollment: its labels and its address. Its hellos cannot
/// change them; `hosts set` can.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
    pub labels: Vec<String>,
    /// `None`: the address its connection comes from.
    pub address: Option<std::net::IpAddr>,
}

/// Labels enrollment accepts: at most 64, each 1 to 128 of `A-Z a-z 0-9 . _ - = :`.
pub fn check_labels(labels: &[String]) -> Result<(), EnrollError> {
    use crate::fleet::limits::{MAX_LABEL_BYTES, MAX_LABELS};
    if labels.len() > MAX_LABELS {
        return Err(EnrollError::Binding(format!(
            "--label: {} labels, at most {MAX_LABELS}",
            labels.len()
        )));
    }
    for l in labels {
        let ok = (1..=MAX_LABEL_BYTES).contains(&l.len())
            && l.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'=' | b':')
            });
        if !ok {
            return Err(EnrollError::Binding(format!(
                "--label {l:?}: must be 1 to {MAX_LABEL_BYTES} letters, digits, '.', '_', '-', \
                 '=' or ':'"
            )));
        }
    }
    Ok(())
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
pub async fn add(
    catalog: &Catalog,
    host_id: &str,
    role: HostRole,
    binding: &Binding,
) -> Result<Secret, EnrollError> {
    check_host_id(host_id)?;
    check_labels(&binding.labels)?;
    let token = new_token();
    let address = binding.address.map(|a| a.to_string()).unwrap_or_default();
    catalog
        .enroll_host(
            host_id,
            role,
            &token_sha256(token.expose().as_bytes()),
            &binding.labels,
            &address,
        )
        .await?;
    tracing::info!(host_id, role = role.as_str(), labels = ?binding.labels, address, "host enrolled");
    Ok(token)
}

/// Binds an enrolled host to new labels and/or a new address (`None`: unchanged; an address
/// of `Some(None)`: the one its connection comes from). Its next hello takes them.
pub async fn bind(
    catalog: &Catalog,
    host_id: &str,
    labels: Option<&[String]>,
    address: Option<Option<std::net::IpAddr>>,
) -> Result<(), EnrollError> {
    if let Some(l) = labels {
        check_labels(l)?;
    }
    let address = address.map(|a| a.map(|a| a.to_string()).unwrap_or_default());
    catalog
        .bind_host(host_id, labels, address.as_deref())
        .await?;
    tracing::info!(host_id, labels = ?labels, address = ?address, "host binding changed");
    Ok(())
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
        let token = add(&catalog, "db1", HostRole::Agent, &Binding::default())
            .await
            .expect("add");
        assert_eq!(token.expose().len(), 64);
        let bound = Binding {
            labels: vec!["rack=a".into(), "ssd".into()],
            address: Some("10.0.0.7".parse().expect("ip")),
        };
        let other = add(&catalog, "w1", HostRole::Worker, &bound)
            .await
            .expect("add");
        assert_ne!(token.expose(), other.expose());
        let e = add(&catalog, "db1", HostRole::Agent, &Binding::default())
            .await
            .expect_err("twice");
        assert!(e.to_string().contains("already enrolled"), "{e}");
        let listed = list(&catalog).await.expect("list");
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].host_id, "db1");
        assert_eq!(
            (listed[0].labels.clone(), listed[0].address.as_str()),
            (Vec::<String>::new(), "")
        );
        assert_eq!(
            (listed[1].labels.clone(), listed[1].address.as_str()),
            (vec!["rack=a".to_string(), "ssd".into()], "10.0.0.7")
        );
        // Rebound: new labels, the address left; then the address cleared, labels left.
        bind(&catalog, "w1", Some(&["rack=b".to_string()]), None)
            .await
            .expect("bind");
        bind(&catalog, "w1", None, Some(None)).await.expect("bind");
        let w1 = &list(&catalog).await.expect("list")[1];
        assert_eq!(
            (w1.labels.clone(), w1.address.as_str()),
            (vec!["rack=b".to_string()], "")
        );
        assert!(matches!(
            bind(&catalog, "w9", None, None).await,
            Err(EnrollError::Catalog(CatalogError::HostNotEnrolled(_)))
        ));
        let e = bind(&catalog, "w1", Some(&["a b".to_string()]), None)
            .await
            .expect_err("bad label");
        assert!(e.to_string().starts_with("--label \"a b\": must be"), "{e}");
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
        let again = add(&catalog, "db1", HostRole::Agent, &Binding::default())
            .await
            .expect("again");
        assert_ne!(again.expose(), token.expose());
        assert!(list(&catalog).await.expect("list")[0].is_active());
    }
}
