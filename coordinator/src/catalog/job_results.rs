//! A finished job's results (`job_results`, migration 0019) and its dashboard page
//! (`job_pages`, migration 0020), kept in the catalog so the first read after a coordinator's
//! start does not compute them from every run again. The rows belong to the binary that
//! computed them ([`analysis`]): another build's analysis may differ, so it reads none of
//! them and writes its own.

use std::sync::OnceLock;

use super::{Catalog, CatalogError};

/// The identity of this binary's analysis: the executable's size and modification time
/// (any change to the code is another executable). Empty when the executable cannot be
/// read: then nothing is stored or read.
pub fn analysis() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let meta = std::env::current_exe().and_then(std::fs::metadata);
        match meta {
            Ok(m) => {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{}-{}-{modified}", env!("CARGO_PKG_VERSION"), m.len())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the executable cannot be read: finished jobs' results are not kept in the catalog");
                String::new()
            }
        }
    })
}

impl Catalog {
    /// The kept results of `job_id`'s `metric` by this binary's analysis, as JSON.
    pub async fn stored_results(
        &self,
        job_id: &str,
        metric: &str,
    ) -> Result<Option<String>, CatalogError> {
        if analysis().is_empty() {
            return Ok(None);
        }
        Ok(sqlx::query_scalar(
            "SELECT results_json FROM job_results WHERE job_id = $1 AND metric = $2 AND analysis = $3",
        )
        .bind(job_id)
        .bind(metric)
        .bind(analysis())
        .fetch_optional(self.reader())
        .await?)
    }

    /// Keeps a finished job's results of `metric` (a row already kept stays).
    pub async fn store_results(
        &self,
        job_id: &str,
        metric: &str,
        json: &str,
    ) -> Result<(), CatalogError> {
        if analysis().is_empty() {
            return Ok(());
        }
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT INTO job_results (job_id, metric, analysis, results_json) VALUES ($1, $2, $3, $4)
             ON CONFLICT (job_id, metric, analysis) DO NOTHING",
        )
        .bind(job_id)
        .bind(metric)
        .bind(analysis())
        .bind(json)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The kept dashboard page of `job_id` by this binary for the catalog `catalog_path`.
    pub async fn stored_page(
        &self,
        job_id: &str,
        catalog_path: &str,
    ) -> Result<Option<String>, CatalogError> {
        if analysis().is_empty() {
            return Ok(None);
        }
        Ok(sqlx::query_scalar(
            "SELECT page_html FROM job_pages WHERE job_id = $1 AND analysis = $2 AND catalog_path = $3",
        )
        .bind(job_id)
        .bind(analysis())
        .bind(catalog_path)
        .fetch_optional(self.reader())
        .await?)
    }

    /// Keeps a finished job's dashboard page (a page already kept stays).
    pub async fn store_page(
        &self,
        job_id: &str,
        catalog_path: &str,
        html: &str,
    ) -> Result<(), CatalogError> {
        if analysis().is_empty() {
            return Ok(());
        }
        let mut tx = self.write().await?;
        sqlx::query(
            "INSERT INTO job_pages (job_id, analysis, catalog_path, page_html) VALUES ($1, $2, $3, $4)
             ON CONFLICT (job_id, analysis, catalog_path) DO NOTHING",
        )
        .bind(job_id)
        .bind(analysis())
        .bind(catalog_path)
        .bind(html)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
