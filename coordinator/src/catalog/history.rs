//! Read-only queries of the dashboard: where and on what each job's done runs ran (the
//! history pages' filters). Portable SQL with `$n` placeholders.

use std::collections::{BTreeSet, HashMap};

use sqlx::Row;

use super::{Catalog, CatalogError};

/// The database hosts and PostgreSQL versions of a job's done runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RanOn {
    pub hosts: BTreeSet<String>,
    pub versions: BTreeSet<String>,
}

const RAN_ON: &str = "SELECT job_id, db_host_id, server_version FROM runs
  WHERE state = 'done' AND db_host_id IS NOT NULL
  GROUP BY job_id, db_host_id, server_version";

impl Catalog {
    /// Every job's database hosts and server versions, from its done runs.
    pub async fn ran_on(&self) -> Result<HashMap<String, RanOn>, CatalogError> {
        let mut out: HashMap<String, RanOn> = HashMap::new();
        for row in sqlx::query(RAN_ON).fetch_all(self.reader()).await? {
            let e = out.entry(row.try_get("job_id")?).or_default();
            if let Some(h) = row.try_get::<Option<String>, _>("db_host_id")? {
                e.hosts.insert(h);
            }
            if let Some(v) = row
                .try_get::<Option<String>, _>("server_version")?
                .filter(|v| !v.is_empty())
            {
                e.versions.insert(v);
            }
        }
        Ok(out)
    }
}
