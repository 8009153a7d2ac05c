//! Where the catalog lives and what differs between its two backends: a SQLite file (the
//! default) or a PostgreSQL database. Every query is written once, with `$N` placeholders,
//! against sqlx's `Any` driver; this module holds the rest: locations, connection setup,
//! migrations and how a write transaction begins.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyConnection, AnyPool, Executor, Transaction};

use super::error::CatalogError;
use super::migrations::{POSTGRES_MIGRATOR, SQLITE_MIGRATOR};

/// Connections of a catalog's read pool.
pub const READERS: usize = 4;

/// The schemes a `--catalog` URL may have.
pub const SCHEMES: &str = "sqlite://PATH, postgres://USER@HOST:PORT/DB or postgresql://...";

/// The catalog a `--catalog` argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (a path, or `sqlite://PATH`).
    Sqlite(PathBuf),
    /// A PostgreSQL database, as a `postgres://` or `postgresql://` URL.
    Postgres(String),
}

/// Which backend a catalog is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Location {
    pub fn backend(&self) -> Backend {
        match self {
            Location::Sqlite(_) => Backend::Sqlite,
            Location::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite file, if the catalog is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Self {
        Location::Sqlite(p)
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Self {
        Location::Sqlite(p.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Self {
        Location::Sqlite(p.clone())
    }
}

impl FromStr for Location {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        parse_location(s)
    }
}

/// Shown in logs and reports: a file's path, or the URL without its password.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&without_password(url)),
        }
    }
}

/// The URL with every password masked: the userinfo's (the authority ends at the first `/`,
/// `?` or `#`, and the userinfo at its last `@`, as URLs are parsed) and the value of any
/// query parameter whose name holds "password" (`?password=`, `sslpassword=`).
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, format!("#{f}")),
                None => (query, String::new()),
            };
            let masked: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                        format!("{k}=***")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}{fragment}", masked.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The catalog a `--catalog` argument names: a file path or `sqlite://PATH` (SQLite), or a
/// `postgres://` / `postgresql://` URL. Anything else with a scheme (a typo, `mysql://`) is
/// refused naming the schemes supported, instead of becoming a file under a directory named
/// after the scheme.
pub fn parse_location(arg: &str) -> Result<Location, String> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Err(format!(
            "the catalog is a file path or a URL ({SCHEMES}); got an empty value"
        ));
    }
    match arg.split_once("://") {
        None => Ok(Location::Sqlite(arg.into())),
        Some(("sqlite", path)) if !path.is_empty() => Ok(Location::Sqlite(path.into())),
        Some(("postgres" | "postgresql", rest)) if !rest.is_empty() => {
            Ok(Location::Postgres(arg.to_string()))
        }
        Some((scheme, _)) => Err(format!(
            "{arg:?}: catalogs of scheme {scheme:?} are not supported; the catalog is a file \
             path or a URL: {SCHEMES}"
        )),
    }
}

/// A SQLite file as an `Any` URL (`mode` as SQLite's URI parameter).
fn sqlite_url(path: &Path, mode: &str) -> Result<AnyConnectOptions, CatalogError> {
    let abs = std::path::absolute(path).map_err(|e| CatalogError::Sql(sqlx::Error::Io(e)))?;
    let mut enc = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' | ' ' => enc.push_str(&format!("%{:02X}", c as u32)),
            c => enc.push(c),
        }
    }
    Ok(AnyConnectOptions::from_str(&format!(
        "sqlite://{enc}?mode={mode}"
    ))?)
}

/// The pools of an open catalog: one writer connection (writes are serialized, as SQLite
/// needs and as the catalog's read-then-write transactions assume), a read pool, and on
/// PostgreSQL one connection for the leader lease (the writer's on SQLite, which has none).
pub(super) struct Pools {
    pub writer: AnyPool,
    pub reader: AnyPool,
    pub lease: AnyPool,
}

/// Connects to the catalog at `location` (creating a SQLite file if missing) and applies the
/// backend's migrations.
pub(super) async fn connect(location: &Location) -> Result<Pools, CatalogError> {
    sqlx::any::install_default_drivers();
    match location {
        Location::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| CatalogError::Sql(sqlx::Error::Io(e)))?;
            }
            let writer = AnyPoolOptions::new()
                .max_connections(1)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;",
                        )
                        .await?;
                        Ok(())
                    })
                })
                .connect_with(sqlite_url(path, "rwc")?)
                .await?;
            SQLITE_MIGRATOR.run(&writer).await?;
            let reader = AnyPoolOptions::new()
                .max_connections(READERS as u32)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;")
                            .await?;
                        Ok(())
                    })
                })
                .connect_with(sqlite_url(path, "ro")?)
                .await?;
            let lease = writer.clone();
            Ok(Pools {
                writer,
                reader,
                lease,
            })
        }
        Location::Postgres(url) => {
            let opts = AnyConnectOptions::from_str(url)?;
            // One plain connection first: a server that is down or refuses says why here,
            // instead of as a pool that timed out.
            {
                use sqlx::Connection as _;
                AnyConnection::connect_with(&opts).await?.close().await?;
            }
            let writer = AnyPoolOptions::new()
                .max_connections(1)
                .connect_with(opts.clone())
                .await?;
            POSTGRES_MIGRATOR.run(&writer).await?;
            let reader = AnyPoolOptions::new()
                .max_connections(READERS as u32)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("SET default_transaction_read_only = on")
                            .await?;
                        Ok(())
                    })
                })
                .connect_with(opts.clone())
                .await?;
            let lease = AnyPoolOptions::new()
                .max_connections(1)
                .connect_lazy_with(opts);
            Ok(Pools {
                writer,
                reader,
                lease,
            })
        }
    }
}

/// One read-only connection to an existing catalog, without migrating it.
pub(super) async fn connect_read_only(location: &Location) -> Result<AnyConnection, CatalogError> {
    use sqlx::Connection as _;
    sqlx::any::install_default_drivers();
    let opts = match location {
        Location::Sqlite(path) => sqlite_url(path, "ro")?,
        Location::Postgres(url) => AnyConnectOptions::from_str(url)?,
    };
    Ok(AnyConnection::connect_with(&opts).await?)
}

/// Begins a write transaction: on SQLite `BEGIN IMMEDIATE` (the write lock is taken at once,
/// so a transaction that reads first never fails to upgrade); on PostgreSQL a plain `BEGIN`
/// (the single writer connection serializes the catalog's writes).
pub(super) async fn begin_write(
    backend: Backend,
    writer: &AnyPool,
) -> Result<Transaction<'static, Any>, CatalogError> {
    Ok(match backend {
        Backend::Sqlite => writer.begin_with("BEGIN IMMEDIATE").await?,
        Backend::Postgres => writer.begin().await?,
    })
}

/// Rows per multi-row INSERT: well under SQLite's 32 766 and PostgreSQL's 65 535 bound
/// parameters at eight columns.
pub(crate) const ROWS_PER_INSERT: usize = 500;

/// `($1, $2), ($3, $4), ...`: the VALUES of a multi-row INSERT of `rows` rows of `cols`
/// columns, numbered as both backends read them.
pub(crate) fn values_placeholders(rows: usize, cols: usize) -> String {
    let mut out = String::with_capacity(rows * cols * 5);
    for r in 0..rows {
        out.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..cols {
            if c > 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("${}", r * cols + c + 1));
        }
        out.push(')');
    }
    out
}

/// A flag as the catalog stores it: 0 or 1 in an integer column on both backends.
pub(crate) fn flag(b: bool) -> i64 {
    i64::from(b)
}

/// An optional flag as stored (NULL = not known).
pub(crate) fn opt_flag(b: Option<bool>) -> Option<i64> {
    b.map(flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_row_placeholders_are_numbered_in_order() {
        assert_eq!(values_placeholders(1, 2), "($1, $2)");
        assert_eq!(values_placeholders(3, 2), "($1, $2), ($3, $4), ($5, $6)");
    }

    /// No form of a catalog URL shows its password: in the userinfo (with `@` or `:` in it)
    /// or as a query parameter.
    #[test]
    fn passwords_are_masked_wherever_the_url_carries_them() {
        for (url, shown) in [
            (
                "postgres://lab:p@ss@db1:5432/blocklab",
                "postgres://lab:***@db1:5432/blocklab",
            ),
            (
                "postgres://lab:a:b@db1/blocklab?sslmode=require",
                "postgres://lab:***@db1/blocklab?sslmode=require",
            ),
            (
                "postgres://lab@db1/blocklab?password=s3cret&sslmode=require",
                "postgres://lab@db1/blocklab?password=***&sslmode=require",
            ),
            (
                "postgresql://db1/blocklab?user=lab&PassWord=x#frag",
                "postgresql://db1/blocklab?user=lab&PassWord=***#frag",
            ),
            (
                "postgres://db1?sslpassword=k",
                "postgres://db1?sslpassword=***",
            ),
            ("postgres://lab@db1/blocklab", "postgres://lab@db1/blocklab"),
        ] {
            assert_eq!(Location::Postgres(url.into()).to_string(), shown, "{url}");
        }
    }

    #[test]
    fn catalog_locations_are_paths_sqlite_or_postgres_urls() {
        let sqlite = |p: &str| Location::Sqlite(PathBuf::from(p));
        assert_eq!(
            parse_location("/var/lib/x.db").unwrap(),
            sqlite("/var/lib/x.db")
        );
        assert_eq!(parse_location("rel/x.db").unwrap(), sqlite("rel/x.db"));
        assert_eq!(
            parse_location("sqlite:///tmp/x.db").unwrap(),
            sqlite("/tmp/x.db")
        );
        let pg = "postgres://postgres@127.0.0.1:5494/postgres";
        assert_eq!(parse_location(pg).unwrap(), Location::Postgres(pg.into()));
        let pgl = "postgresql://lab:secret@db1/blocklab";
        assert_eq!(parse_location(pgl).unwrap(), Location::Postgres(pgl.into()));
        assert_eq!(
            parse_location(pgl).unwrap().to_string(),
            "postgresql://lab:***@db1/blocklab"
        );
        let e = parse_location("mysql://root@127.0.0.1/lab").unwrap_err();
        assert_eq!(
            e,
            "\"mysql://root@127.0.0.1/lab\": catalogs of scheme \"mysql\" are not supported; \
             the catalog is a file path or a URL: sqlite://PATH, postgres://USER@HOST:PORT/DB \
             or postgresql://..."
        );
        assert!(parse_location("sqlite://").is_err());
        assert!(parse_location("postgres://").is_err());
        assert!(parse_location("  ").is_err());
    }
}
