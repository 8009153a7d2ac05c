//! Listing the build cache and keeping it under a size cap by removing the least recently
//! used complete builds that nobody uses.

use std::path::{Path, PathBuf};

use crate::build::{Marker, last_used_path, read_marker};
use crate::error::AgentError;
use crate::fsutil::{disk_usage, rfc3339, try_lock_file};

/// One complete build in the cache.
#[derive(Clone, Debug)]
pub struct CachedBuild {
    pub marker: Marker,
    pub prefix: PathBuf,
    /// Install prefix plus its logs.
    pub size_bytes: u64,
    /// Unix seconds of the last use (the completion time if never used since).
    pub last_used_unix: u64,
}

/// The complete builds under `root`, most recently used first. Directories without a
/// readable marker (sources, downloads, half-finished builds) are not builds.
pub fn list(root: &Path) -> Vec<CachedBuild> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let prefix = e.path();
        if !e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let Some(marker) = read_marker(&prefix) else {
            continue;
        };
        let last_used_unix = std::fs::read_to_string(last_used_path(&prefix))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(marker.completed_at_unix);
        let size_bytes = disk_usage(&prefix) + disk_usage(&logs_dir(&prefix));
        out.push(CachedBuild {
            marker,
            prefix,
            size_bytes,
            last_used_unix,
        });
    }
    out.sort_by(|a, b| {
        b.last_used_unix
            .cmp(&a.last_used_unix)
            .then_with(|| a.marker.key.cmp(&b.marker.key))
    });
    out
}

fn sidecar(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

fn logs_dir(prefix: &Path) -> PathBuf {
    sidecar(prefix, ".logs")
}

/// Removes least recently used builds until the complete builds total at most `max_bytes`.
/// A build is skipped while anyone builds or checks it (`<key>.lock`) or uses it
/// (`<key>.inuse`, held shared by running clusters, in this process or another). Returns
/// the keys removed.
pub fn evict_lru(root: &Path, max_bytes: u64) -> Result<Vec<String>, AgentError> {
    let builds = list(root);
    let mut total: u64 = builds.iter().map(|b| b.size_bytes).sum();
    let mut removed = Vec::new();
    for b in builds.iter().rev() {
        if total <= max_bytes {
            break;
        }
        let Some(_build_lock) = try_lock_file(&sidecar(&b.prefix, ".lock"))? else {
            continue;
        };
        let Some(_use_lock) = try_lock_file(&sidecar(&b.prefix, ".inuse"))? else {
            tracing::debug!(key = %b.marker.key, "build in use; not evicting");
            continue;
        };
        tracing::info!(
            key = %b.marker.key,
            size_bytes = b.size_bytes,
            last_used = %rfc3339(b.last_used_unix),
            "evicting least recently used build"
        );
        // The marker goes first: a crash half-way leaves an unfinished build, never a
        // trusted partial one.
        let _ = std::fs::remove_file(b.prefix.join(crate::build::MARKER));
        std::fs::remove_dir_all(&b.prefix)
            .map_err(|e| AgentError::io(format!("remove {}", b.prefix.display()), e))?;
        let _ = std::fs::remove_dir_all(logs_dir(&b.prefix));
        let _ = std::fs::remove_file(last_used_path(&b.prefix));
        total = total.saturating_sub(b.size_bytes);
        removed.push(b.marker.key.clone());
    }
    Ok(removed)
}

/// Removes the object stores (`<root>/.objects/<family>/`) of sources no cached build was made
/// from, unless a build of that source holds the store. Returns the families removed.
pub fn evict_stores(root: &Path) -> Result<Vec<String>, AgentError> {
    let objects = root.join(crate::build::objects::OBJECTS);
    let Ok(rd) = std::fs::read_dir(&objects) else {
        return Ok(Vec::new());
    };
    let kept: std::collections::BTreeSet<String> = list(root)
        .into_iter()
        .map(|b| b.marker.object_family)
        .collect();
    let mut removed = Vec::new();
    for e in rd.flatten() {
        let family = e.file_name().to_string_lossy().into_owned();
        if !e.file_type().is_ok_and(|t| t.is_dir()) || kept.contains(&family) {
            continue;
        }
        let Some(_held) = try_lock_file(&objects.join(format!("{family}.lock")))? else {
            continue;
        };
        tracing::info!(family = %family, "removing the object store of a source no build is left of");
        std::fs::remove_dir_all(e.path())
            .map_err(|err| AgentError::io(format!("remove {}", e.path().display()), err))?;
        removed.push(family);
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::write_marker;

    fn fake_build(root: &Path, key: &str, kib: usize, last_used: u64) -> PathBuf {
        let prefix = root.join(key);
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(prefix.join("bin/postgres"), vec![7u8; kib * 1024]).unwrap();
        std::fs::create_dir_all(logs_dir(&prefix)).unwrap();
        std::fs::write(logs_dir(&prefix).join("build.log"), b"ok").unwrap();
        let m = Marker {
            key: key.into(),
            source_sha256: "ab".repeat(32),
            pg_version: "15.18".into(),
            block_size_kb: 8,
            wal_block_size_kb: 8,
            configure_flags: vec!["--without-icu".into()],
            compiler: "gcc".into(),
            build_seconds: 100.0,
            completed_at_unix: 1_700_000_000,
            segsize_gb: 0,
            wal_segsize_mb: 0,
            cflags: vec![],
            source: "/src/postgresql-15.18.tar.bz2".into(),
            git_commit: String::new(),
            object_family: format!("src-{key}"),
            objects_reused: 0,
            objects_compiled: 0,
        };
        write_marker(&prefix, &m).unwrap();
        std::fs::write(last_used_path(&prefix), last_used.to_string()).unwrap();
        prefix
    }

    #[test]
    fn lists_builds_most_recent_first_and_ignores_other_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fake_build(root, "pg15.18-b8-w8-aaaa", 64, 1_700_000_100);
        fake_build(root, "pg15.18-b16-w8-bbbb", 64, 1_700_000_300);
        std::fs::create_dir_all(root.join("sources/abc")).unwrap();
        std::fs::create_dir_all(root.join("pg15-b4-w8-half/bin")).unwrap();
        let got = list(root);
        let keys: Vec<&str> = got.iter().map(|b| b.marker.key.as_str()).collect();
        assert_eq!(keys, ["pg15.18-b16-w8-bbbb", "pg15.18-b8-w8-aaaa"]);
        let b = &got[0];
        assert_eq!(
            (b.marker.key.as_str(), b.marker.block_size_kb),
            ("pg15.18-b16-w8-bbbb", 8)
        );
        assert!(b.size_bytes >= 64 * 1024, "{b:?}");
        assert_eq!(rfc3339(b.last_used_unix), "2023-11-14T22:18:20Z");
        assert_eq!(rfc3339(b.marker.completed_at_unix), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn evicts_least_recently_used_first_and_spares_builds_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let oldest = fake_build(root, "k-oldest", 256, 100);
        let old_in_use = fake_build(root, "k-old-in-use", 256, 200);
        let middle = fake_build(root, "k-middle", 256, 300);
        let newest = fake_build(root, "k-newest", 256, 400);
        let one = list(root)[0].size_bytes;
        // A running cluster holds a shared lock on <key>.inuse.
        let guard = std::fs::File::create(sidecar(&old_in_use, ".inuse")).unwrap();
        guard.lock_shared().unwrap();

        // Under the cap: nothing happens.
        assert!(evict_lru(root, 4 * one).unwrap().is_empty());
        // Room for two: the oldest goes, the one in use is skipped, then the middle one.
        let removed = evict_lru(root, 2 * one).unwrap();
        assert_eq!(removed, ["k-oldest", "k-middle"]);
        assert!(!oldest.exists() && !middle.exists());
        assert!(!logs_dir(&oldest).exists() && !last_used_path(&oldest).exists());
        assert!(old_in_use.exists() && newest.exists());
        // Once unused it can go too.
        drop(guard);
        assert_eq!(evict_lru(root, one).unwrap(), ["k-old-in-use"]);
        assert_eq!(list(root).len(), 1);
        // A build being checked or built (its .lock held) is not touched either.
        let building = std::fs::File::create(sidecar(&newest, ".lock")).unwrap();
        building.lock().unwrap();
        assert!(evict_lru(root, 0).unwrap().is_empty());
        drop(building);
        assert_eq!(evict_lru(root, 0).unwrap(), ["k-newest"]);
    }

    #[test]
    fn object_stores_go_with_the_last_build_of_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fake_build(root, "k-kept", 4, 100);
        let objects = root.join(crate::build::objects::OBJECTS);
        for family in ["src-k-kept", "src-k-gone", "src-k-building"] {
            std::fs::create_dir_all(objects.join(family).join("ccache/0")).unwrap();
        }
        std::fs::write(objects.join("src-k-kept.lock"), "").unwrap();
        let building = std::fs::File::create(objects.join("src-k-building.lock")).unwrap();
        building.lock().unwrap();
        assert_eq!(evict_stores(root).unwrap(), ["src-k-gone"]);
        assert!(objects.join("src-k-kept/ccache").is_dir());
        assert!(objects.join("src-k-building").is_dir());
        assert!(!objects.join("src-k-gone").exists());
        drop(building);
        assert_eq!(evict_stores(root).unwrap(), ["src-k-building"]);
    }
}
