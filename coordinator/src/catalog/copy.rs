//! `blocklab-coordinator catalog copy`: a lab's history from one catalog into another (a
//! SQLite file into a PostgreSQL database, or back). Both are migrated to the same schema
//! first; every table is copied in foreign-key order in one transaction on the target, which
//! must hold no rows.

use sqlx::any::AnyRow;
use sqlx::{Any, AssertSqlSafe, Row, Transaction};

use super::{Backend, Catalog, CatalogError, Location};

/// Every table of the catalog, parents before children.
pub const TABLES: &[&str] = &[
    "hosts",
    "host_facts",
    "host_credentials",
    "jobs",
    "cells",
    "job_scripts",
    "job_hosts",
    "builds",
    "runs",
    "results",
    "run_samples",
    "run_series",
    "run_settings",
    "result_shares",
    "run_stats",
    "probe_results",
    "run_metrics",
    "run_statements",
];

/// Values bound per INSERT (both backends allow more; this keeps statements small).
const PARAMS_PER_INSERT: usize = 8_000;

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("--from {0}: {1}")]
    From(String, CatalogError),
    #[error("--to {0}: {1}")]
    To(String, CatalogError),
    #[error(
        "--to {location}: the target catalog is not empty (table {table} holds {rows} rows); \
         copy into a new, empty database or file"
    )]
    NotEmpty {
        location: String,
        table: &'static str,
        rows: i64,
    },
    #[error("--from and --to name the same catalog ({0})")]
    Same(String),
}

/// How a column's values are read and bound.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Real,
    Text,
    Blob,
}

/// Copies every table of `from` into `to`. Returns the rows copied per table, in order.
pub async fn copy(from: &Location, to: &Location) -> Result<Vec<(&'static str, u64)>, CopyError> {
    if from == to {
        return Err(CopyError::Same(from.to_string()));
    }
    let source = Catalog::connect(from)
        .await
        .map_err(|e| CopyError::From(from.to_string(), e))?;
    // Nothing serves the target while it is written.
    let _target_lock = match to {
        Location::Sqlite(path) => {
            Some(super::lock::lock(path).map_err(|e| CopyError::To(to.to_string(), e))?)
        }
        Location::Postgres(_) => None,
    };
    let target = Catalog::connect(to)
        .await
        .map_err(|e| CopyError::To(to.to_string(), e))?;
    let to_err = |e: CatalogError| CopyError::To(to.to_string(), e);
    for &table in TABLES {
        let rows: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&target.reader)
            .await
            .map_err(|e| to_err(e.into()))?;
        if rows > 0 {
            return Err(CopyError::NotEmpty {
                location: to.to_string(),
                table,
                rows,
            });
        }
    }
    let mut tx = target.write().await.map_err(to_err)?;
    let mut copied = Vec::new();
    for &table in TABLES {
        let columns = target.columns(table).await.map_err(to_err)?;
        let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
        // Names from the catalog's own schema and TABLES, never from input.
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {} FROM {table} ORDER BY {}",
            names.join(", "),
            (1..=names.len().min(3))
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )))
        .fetch_all(&source.reader)
        .await
        .map_err(|e| CopyError::From(from.to_string(), e.into()))?;
        let per = (PARAMS_PER_INSERT / columns.len().max(1)).max(1);
        for chunk in rows.chunks(per) {
            insert(&mut tx, table, &columns, chunk)
                .await
                .map_err(to_err)?;
        }
        copied.push((table, rows.len() as u64));
    }
    tx.commit().await.map_err(|e| to_err(e.into()))?;
    // A SQLite target is then one self-contained file (its log checkpointed into it).
    let grace = std::time::Duration::from_secs(5);
    target.close(grace).await;
    source.close(grace).await;
    tracing::info!(from = %from, to = %to, tables = copied.len(), "catalog copied");
    Ok(copied)
}

async fn insert(
    tx: &mut Transaction<'static, Any>,
    table: &str,
    columns: &[(String, Kind)],
    rows: &[AnyRow],
) -> Result<(), CatalogError> {
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    let mut sql = format!("INSERT INTO {table} ({}) VALUES ", names.join(", "));
    let mut n = 0;
    for (i, _) in rows.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let params: Vec<String> = (0..columns.len())
            .map(|_| {
                n += 1;
                format!("${n}")
            })
            .collect();
        sql.push('(');
        sql.push_str(&params.join(", "));
        sql.push(')');
    }
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for row in rows {
        for (i, (_, kind)) in columns.iter().enumerate() {
            q = match kind {
                Kind::Int => q.bind(row.try_get::<Option<i64>, _>(i)?),
                Kind::Real => q.bind(row.try_get::<Option<f64>, _>(i)?),
                Kind::Text => q.bind(row.try_get::<Option<String>, _>(i)?),
                Kind::Blob => q.bind(row.try_get::<Option<Vec<u8>>, _>(i)?),
            };
        }
    }
    q.execute(&mut **tx).await?;
    Ok(())
}

impl Catalog {
    /// A table's columns (name, kind) in order, as this catalog's schema declares them.
    async fn columns(&self, table: &str) -> Result<Vec<(String, Kind)>, CatalogError> {
        let sql = match self.backend {
            Backend::Sqlite => "SELECT name, type FROM pragma_table_info($1) ORDER BY cid",
            Backend::Postgres => {
                "SELECT column_name::text, data_type::text FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = $1
                 ORDER BY ordinal_position"
            }
        };
        let rows: Vec<(String, String)> = sqlx::query_as(sql)
            .bind(table)
            .fetch_all(&self.reader)
            .await?;
        rows.into_iter()
            .map(|(name, ty)| {
                let ty = ty.to_ascii_lowercase();
                let kind = match ty.as_str() {
                    "integer" | "bigint" => Kind::Int,
                    "real" | "double precision" => Kind::Real,
                    "text" => Kind::Text,
                    "blob" | "bytea" => Kind::Blob,
                    _ => {
                        return Err(CatalogError::Corrupt(blocklab_spec::state::UnknownName {
                            what: "column type",
                            value: format!("{table}.{name}: {ty}"),
                            allowed: "integer, real, text or blob".into(),
                        }));
                    }
                };
                Ok((name, kind))
            })
            .collect()
    }
}
