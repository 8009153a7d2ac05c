//! Validation of build options and the build cache key. Pure functions, no I/O beyond
//! checking that the tarball exists.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::AgentError;

/// Data block sizes PostgreSQL accepts (`--with-blocksize`, in kB).
pub const DATA_BLOCK_SIZES_KB: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// WAL block sizes PostgreSQL accepts (`--with-wal-blocksize`, in kB).
pub const WAL_BLOCK_SIZES_KB: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Flags the agent sets itself, or that would move the install out of the cache.
const RESERVED_FLAGS: &[&str] = &[
    "--prefix",
    "--exec-prefix",
    "--with-blocksize",
    "--with-wal-blocksize",
    "--bindir",
    "--sbindir",
    "--libdir",
    "--libexecdir",
    "--includedir",
    "--datadir",
    "--datarootdir",
    "--sysconfdir",
    "--localstatedir",
    "--docdir",
    "--mandir",
    "--htmldir",
    "--localedir",
    "--srcdir",
    "--cache-file",
    "--config-cache",
];

/// Build options after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildSpec {
    pub tarball: PathBuf,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub configure_flags: Vec<String>,
}

impl BuildSpec {
    /// Validates the wire options. Spawns nothing; the tarball's existence is checked
    /// separately by [`check_tarball`].
    pub fn from_proto(opts: &blocklab_proto::BuildOptions) -> Result<Self, AgentError> {
        let tarball = opts
            .source
            .as_ref()
            .map(|s| s.tarball.trim())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| AgentError::invalid("source.tarball", "no tarball path given"))?;
        if !DATA_BLOCK_SIZES_KB.contains(&opts.block_size_kb) {
            return Err(AgentError::invalid(
                "block_size_kb",
                format!(
                    "{} is not one of {:?}",
                    opts.block_size_kb, DATA_BLOCK_SIZES_KB
                ),
            ));
        }
        if !WAL_BLOCK_SIZES_KB.contains(&opts.wal_block_size_kb) {
            return Err(AgentError::invalid(
                "wal_block_size_kb",
                format!(
                    "{} is not one of {:?}",
                    opts.wal_block_size_kb, WAL_BLOCK_SIZES_KB
                ),
            ));
        }
        for flag in &opts.configure_flags {
            validate_configure_flag(flag)?;
        }
        let tarball = PathBuf::from(tarball);
        let name = tarball.to_string_lossy();
        if ![".tar.bz2", ".tar.gz", ".tgz", ".tar.xz", ".tar"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            return Err(AgentError::invalid(
                "source.tarball",
                format!("{name} is not a .tar.bz2, .tar.gz or .tgz file"),
            ));
        }
        Ok(Self {
            tarball,
            block_size_kb: opts.block_size_kb,
            wal_block_size_kb: opts.wal_block_size_kb,
            configure_flags: opts.configure_flags.clone(),
        })
    }

    /// A readable key prefix such as `pg15.18-b8-w8`.
    pub fn readable_prefix(&self) -> String {
        format!(
            "pg{}-b{}-w{}",
            version_hint(&self.tarball),
            self.block_size_kb,
            self.wal_block_size_kb
        )
    }
}

/// Checks that the tarball is a readable regular file; the error names the path.
pub fn check_tarball(path: &Path) -> Result<(), AgentError> {
    let missing = |reason: String| AgentError::SourceMissing {
        path: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| missing(e.to_string()))?;
    if !meta.is_file() {
        return Err(missing("not a regular file".into()));
    }
    std::fs::File::open(path).map_err(|e| missing(e.to_string()))?;
    Ok(())
}

/// Accepts `--name` or `--name=value` with a conservative character set; refuses flags the
/// agent owns. Errors name the flag.
pub fn validate_configure_flag(flag: &str) -> Result<(), AgentError> {
    let bad = |reason: &str| AgentError::invalid(format!("configure flag {flag:?}"), reason);
    let (name, value) = match flag.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (flag, None),
    };
    let Some(body) = name.strip_prefix("--") else {
        return Err(bad("must start with --"));
    };
    let mut chars = body.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit() => {}
        _ => return Err(bad("name must start with a lowercase letter or digit")),
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return Err(bad("name may contain only a-z, 0-9 and -"));
    }
    if let Some(v) = value
        && !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./,:+-".contains(c))
    {
        return Err(bad("value may contain only A-Z a-z 0-9 _ . / , : + -"));
    }
    if RESERVED_FLAGS.contains(&name) {
        return Err(bad("is set by the agent and may not be given"));
    }
    Ok(())
}

/// The cache key: a readable prefix plus the first 16 hex digits of a sha256 over every
/// input that changes the binaries.
pub fn cache_key(spec: &BuildSpec, source_sha256: &str, compiler: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"blocklab-build-v1\n");
    h.update(format!("source={source_sha256}\n"));
    h.update(format!("block_size_kb={}\n", spec.block_size_kb));
    h.update(format!("wal_block_size_kb={}\n", spec.wal_block_size_kb));
    for f in &spec.configure_flags {
        h.update(format!("flag={f}\n"));
    }
    h.update(format!("compiler={compiler}\n"));
    let digest = hex::encode(h.finalize());
    format!("{}-{}", spec.readable_prefix(), &digest[..16])
}

/// `postgresql-15.18.tar.bz2` → `15.18`; anything unrecognisable → `src`.
fn version_hint(tarball: &Path) -> String {
    let name = tarball
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut stem = name.as_str();
    for suffix in [".tar.bz2", ".tar.gz", ".tgz", ".tar.xz", ".tar"] {
        if let Some(s) = stem.strip_suffix(suffix) {
            stem = s;
            break;
        }
    }
    let stem = stem.strip_prefix("postgresql-").unwrap_or(stem);
    let clean: String = stem
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .take(20)
        .collect();
    if clean.is_empty() {
        "src".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_proto::{BuildOptions, SourceSpec};

    fn opts(b: u32, w: u32, flags: &[&str]) -> BuildOptions {
        BuildOptions {
            source: Some(SourceSpec {
                tarball: "/src/postgresql-15.18.tar.bz2".into(),
                ..Default::default()
            }),
            block_size_kb: b,
            wal_block_size_kb: w,
            configure_flags: flags.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn cache_key_is_stable_and_changes_with_each_input() {
        let base = BuildSpec::from_proto(&opts(8, 8, &["--without-icu"])).unwrap();
        let k = cache_key(&base, "aa", "gcc 12");
        assert_eq!(k, cache_key(&base.clone(), "aa", "gcc 12"));
        assert!(k.starts_with("pg15.18-b8-w8-"), "{k}");
        assert_eq!(k.len(), "pg15.18-b8-w8-".len() + 16);
        let mut seen = std::collections::HashSet::from([k.clone()]);
        let variants = [
            cache_key(&base, "ab", "gcc 12"),
            cache_key(&base, "aa", "gcc 13"),
            cache_key(
                &BuildSpec::from_proto(&opts(16, 8, &["--without-icu"])).unwrap(),
                "aa",
                "gcc 12",
            ),
            cache_key(
                &BuildSpec::from_proto(&opts(8, 16, &["--without-icu"])).unwrap(),
                "aa",
                "gcc 12",
            ),
            cache_key(
                &BuildSpec::from_proto(&opts(8, 8, &[])).unwrap(),
                "aa",
                "gcc 12",
            ),
            cache_key(
                &BuildSpec::from_proto(&opts(8, 8, &["--without-icu", "--enable-debug"])).unwrap(),
                "aa",
                "gcc 12",
            ),
            cache_key(
                &BuildSpec::from_proto(&opts(8, 8, &["--enable-debug", "--without-icu"])).unwrap(),
                "aa",
                "gcc 12",
            ),
        ];
        for v in variants {
            assert!(seen.insert(v.clone()), "duplicate key {v}");
        }
    }

    #[test]
    fn good_configure_flags_pass() {
        for f in [
            "--without-icu",
            "--enable-debug",
            "--with-segsize=2",
            "--with-extra-version=-lab",
            "--with-includes=/usr/include/x:/opt/y",
            "--enable-cassert",
        ] {
            validate_configure_flag(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
    }

    #[test]
    fn bad_configure_flags_are_refused_naming_the_flag() {
        for f in [
            "--with-blocksize=16; rm -rf /",
            "--with-blocksize=16",
            "--with-wal-blocksize=8",
            "--prefix=/tmp/x",
            "--bindir=/usr/bin",
            "-O2",
            "without-icu",
            "--Foo",
            "--with-x=$(id)",
            "--with-x=a b",
            "--",
            "--with-x=`id`",
            "--foo\n",
        ] {
            let err = validate_configure_flag(f).expect_err(f).to_string();
            assert!(err.contains(&format!("{f:?}")), "{f}: {err}");
        }
    }

    #[test]
    fn block_sizes_are_validated() {
        assert!(BuildSpec::from_proto(&opts(3, 8, &[])).is_err());
        assert!(BuildSpec::from_proto(&opts(64, 8, &[])).is_err());
        assert!(BuildSpec::from_proto(&opts(8, 128, &[])).is_err());
        assert!(BuildSpec::from_proto(&opts(8, 0, &[])).is_err());
        assert!(BuildSpec::from_proto(&opts(32, 64, &[])).is_ok());
        assert!(BuildSpec::from_proto(&opts(1, 1, &[])).is_ok());
        let err = BuildSpec::from_proto(&opts(8, 8, &["--prefix=/x"])).unwrap_err();
        assert!(err.to_string().contains("--prefix=/x"), "{err}");
    }

    #[test]
    fn missing_tarball_names_the_path() {
        let err = check_tarball(Path::new("/nope/postgresql-1.tar.bz2")).unwrap_err();
        assert!(
            err.to_string().contains("/nope/postgresql-1.tar.bz2"),
            "{err}"
        );
    }
}
