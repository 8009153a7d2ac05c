//! One coordinator per SQLite catalog: an exclusive `flock` on `<catalog>.lock`, held while
//! the coordinator serves (two coordinators on one file would both lead and requeue each
//! other's runs). The holder's pid is written into the file for the message a second one
//! gives. The kernel drops the lock when its holder exits, however it exits.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::CatalogError;

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct CatalogLock {
    file: std::fs::File,
    path: PathBuf,
}

/// The lock file beside the catalog file `catalog`.
pub fn lock_path(catalog: &Path) -> PathBuf {
    let mut name = catalog.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the catalog's lock, or fails at once naming the coordinator that holds it.
pub fn lock(catalog: &Path) -> Result<CatalogLock, CatalogError> {
    let path = lock_path(catalog);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io(&path, e))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io(&path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(CatalogError::InUse {
                catalog: catalog.display().to_string(),
                holder: holder.trim().to_string(),
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(&path, e)),
    }
    let pid = std::process::id();
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{pid}"))
        .map_err(|e| io(&path, e))?;
    tracing::debug!(lock = %path.display(), pid, "catalog locked");
    Ok(CatalogLock { file, path })
}

impl CatalogLock {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CatalogLock {
    fn drop(&mut self) {
        // Emptied for the next holder; the lock itself goes with the descriptor.
        let _ = self.file.set_len(0);
    }
}

fn io(path: &Path, e: std::io::Error) -> CatalogError {
    CatalogError::Sql(sqlx::Error::Io(std::io::Error::new(
        e.kind(),
        format!("{}: {e}", path.display()),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        let first = lock(&db).expect("first");
        assert_eq!(first.path(), dir.path().join("catalog.db.lock"));
        match lock(&db) {
            Err(CatalogError::InUse { catalog, holder }) => {
                assert_eq!(catalog, db.display().to_string());
                assert_eq!(holder, std::process::id().to_string());
            }
            other => panic!("not refused: {other:?}"),
        }
        drop(first);
        lock(&db).expect("free again");
    }
}
