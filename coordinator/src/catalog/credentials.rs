//! Per-host credentials (table `host_credentials`): enrollment, listing, revocation. Only a
//! token's sha256 is stored.

use sqlx::Row;

use blocklab_spec::HostRole;

use super::{Catalog, CatalogError, now};

/// One enrolled host's credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRecord {
    pub host_id: String,
    pub role: HostRole,
    /// sha256 of the token, lowercase hex.
    pub token_sha256: String,
    pub enrolled_at: String,
    /// When it was revoked; `None` while it is valid.
    pub revoked_at: Option<String>,
    /// The labels the host is bound to (placement reads these, not the hello's).
    pub labels: Vec<String>,
    /// The address it is bound to; empty: the address its connection comes from.
    pub address: String,
}

impl CredentialRecord {
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// Whether a host was ever enrolled in the catalog at `location` (a credential, valid or
/// revoked: once a host was enrolled, only credentials attach), read without creating,
/// migrating or writing anything (a missing file or database, or an older schema, holds
/// none).
pub async fn any_enrolled(location: &super::Location) -> Result<bool, CatalogError> {
    if location.sqlite_path().is_some_and(|p| !p.exists()) {
        return Ok(false);
    }
    let mut conn = match super::backend::connect_read_only(location).await {
        Ok(conn) => conn,
        // invalid_catalog_name: no such PostgreSQL database, so nothing is enrolled there.
        Err(CatalogError::Sql(sqlx::Error::Database(e)))
            if e.code().as_deref() == Some("3D000") =>
        {
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let table_sql = match location.backend() {
        super::Backend::Sqlite => {
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'host_credentials'"
        }
        super::Backend::Postgres => {
            "SELECT count(*) FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_name = 'host_credentials'"
        }
    };
    let tables: i64 = sqlx::query_scalar(table_sql).fetch_one(&mut conn).await?;
    if tables == 0 {
        return Ok(false);
    }
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM host_credentials")
        .fetch_one(&mut conn)
        .await?;
    Ok(n > 0)
}

impl Catalog {
    /// Enrolls `host_id` as `role` with the token whose sha256 is `token_sha256`. A host id
    /// whose credential is valid is refused; a revoked one is enrolled again with the new
    /// token.
    pub async fn enroll_host(
        &self,
        host_id: &str,
        role: HostRole,
        token_sha256: &str,
        labels: &[String],
        address: &str,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        let revoked: Option<Option<String>> =
            sqlx::query_scalar("SELECT revoked_at FROM host_credentials WHERE host_id = $1")
                .bind(host_id)
                .fetch_optional(&mut *tx)
                .await?;
        if matches!(revoked, Some(None)) {
            return Err(CatalogError::HostEnrolled(host_id.to_string()));
        }
        sqlx::query(
            "INSERT INTO host_credentials (host_id, role, token_sha256, enrolled_at, revoked_at, labels, address)
             VALUES ($1, $2, $3, $4, NULL, $5, $6)
             ON CONFLICT(host_id) DO UPDATE SET role = excluded.role,
               token_sha256 = excluded.token_sha256, enrolled_at = excluded.enrolled_at,
               revoked_at = NULL, labels = excluded.labels, address = excluded.address",
        )
        .bind(host_id)
        .bind(role.as_str())
        .bind(token_sha256)
        .bind(now())
        .bind(labels_json(labels))
        .bind(address)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Binds an enrolled host to new labels and/or a new address (`None`: unchanged).
    pub async fn bind_host(
        &self,
        host_id: &str,
        labels: Option<&[String]>,
        address: Option<&str>,
    ) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        let n = sqlx::query(
            "UPDATE host_credentials SET labels = COALESCE($1, labels), address = COALESCE($2, address)
             WHERE host_id = $3",
        )
        .bind(labels.map(labels_json))
        .bind(address)
        .bind(host_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            return Err(CatalogError::HostNotEnrolled(host_id.to_string()));
        }
        tx.commit().await?;
        Ok(())
    }

    /// Revokes `host_id`'s credential (its row stays, marked revoked).
    pub async fn revoke_host(&self, host_id: &str) -> Result<(), CatalogError> {
        let mut tx = self.write().await?;
        let revoked: Option<Option<String>> =
            sqlx::query_scalar("SELECT revoked_at FROM host_credentials WHERE host_id = $1")
                .bind(host_id)
                .fetch_optional(&mut *tx)
                .await?;
        match revoked {
            None => return Err(CatalogError::HostNotEnrolled(host_id.to_string())),
            Some(Some(_)) => return Err(CatalogError::HostRevoked(host_id.to_string())),
            Some(None) => {}
        }
        sqlx::query("UPDATE host_credentials SET revoked_at = $1 WHERE host_id = $2")
            .bind(now())
            .bind(host_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every credential, valid and revoked, by host id.
    pub async fn host_credentials(&self) -> Result<Vec<CredentialRecord>, CatalogError> {
        let rows = sqlx::query(
            "SELECT host_id, role, token_sha256, enrolled_at, revoked_at, labels, address
             FROM host_credentials ORDER BY host_id",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|r| {
                let role: String = r.try_get("role")?;
                let labels: String = r.try_get("labels")?;
                let labels = serde_json::from_str(&labels).map_err(|_| {
                    CatalogError::Corrupt(blocklab_spec::state::UnknownName {
                        what: "host labels",
                        value: labels.clone(),
                        allowed: "a JSON array of strings".into(),
                    })
                })?;
                Ok(CredentialRecord {
                    host_id: r.try_get("host_id")?,
                    role: role.parse().map_err(CatalogError::Corrupt)?,
                    token_sha256: r.try_get("token_sha256")?,
                    enrolled_at: r.try_get("enrolled_at")?,
                    revoked_at: r.try_get("revoked_at")?,
                    labels,
                    address: r.try_get("address")?,
                })
            })
            .collect()
    }
}

fn labels_json(labels: &[String]) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "[]".into())
}
