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

/// Build options as a task gives them, before validation (empty / 0 = not given).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildRequest {
    pub source: Option<SourceRequest>,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub configure_flags: Vec<String>,
    pub segsize_gb: u32,
    pub wal_segsize_mb: u32,
    pub cflags: Vec<String>,
}

/// A source as a task gives it: exactly one of `tarball`, `url`, `git_url` must be set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceRequest {
    pub tarball: String,
    pub url: String,
    pub sha256: String,
    pub git_url: String,
    pub git_ref: String,
}

/// Where the PostgreSQL source comes from, after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A local release tarball, optionally checked against a sha256.
    Tarball {
        path: PathBuf,
        sha256: Option<String>,
    },
    /// A tarball downloaded (once, cached by digest) and checked against its sha256.
    Url { url: String, sha256: String },
    /// A git repository at a ref (branch, tag or commit); the commit is recorded.
    Git { url: String, git_ref: String },
}

/// Build options after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildSpec {
    pub source: Source,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub configure_flags: Vec<String>,
    /// `--with-segsize` (0 = default).
    pub segsize_gb: u32,
    /// WAL segment size (0 = default): configure before PostgreSQL 11, initdb from 11 on.
    pub wal_segsize_mb: u32,
    /// Words of the `CFLAGS=` configure argument.
    pub cflags: Vec<String>,
}

impl BuildSpec {
    /// Validates the requested options. Spawns nothing and touches no file.
    pub fn from_request(opts: &BuildRequest) -> Result<Self, AgentError> {
        let source = Source::from_request(opts.source.as_ref())?;
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
        let has_flag = |name: &str| {
            opts.configure_flags
                .iter()
                .any(|f| f == name || f.starts_with(&format!("{name}=")))
        };
        if opts.segsize_gb != 0 {
            if !(1..=1024).contains(&opts.segsize_gb) || !opts.segsize_gb.is_power_of_two() {
                return Err(AgentError::invalid(
                    "segsize_gb",
                    format!("{} is not a power of two from 1 to 1024", opts.segsize_gb),
                ));
            }
            if has_flag("--with-segsize") {
                return Err(AgentError::invalid(
                    "segsize_gb",
                    "given twice: as segsize_gb and as the configure flag --with-segsize",
                ));
            }
        }
        if opts.wal_segsize_mb != 0 {
            if !(1..=1024).contains(&opts.wal_segsize_mb) || !opts.wal_segsize_mb.is_power_of_two()
            {
                return Err(AgentError::invalid(
                    "wal_segsize_mb",
                    format!(
                        "{} is not a power of two from 1 to 1024",
                        opts.wal_segsize_mb
                    ),
                ));
            }
            if has_flag("--with-wal-segsize") {
                return Err(AgentError::invalid(
                    "wal_segsize_mb",
                    "given twice: as wal_segsize_mb and as the configure flag --with-wal-segsize",
                ));
            }
        }
        validate_cflags(&opts.cflags)?;
        Ok(Self {
            source,
            block_size_kb: opts.block_size_kb,
            wal_block_size_kb: opts.wal_block_size_kb,
            configure_flags: opts.configure_flags.clone(),
            segsize_gb: opts.segsize_gb,
            wal_segsize_mb: opts.wal_segsize_mb,
            cflags: opts.cflags.clone(),
        })
    }

    /// A readable key prefix such as `pg15.18-b8-w8` (`-s2` with a segment size).
    pub fn readable_prefix(&self, version_hint: &str) -> String {
        let mut p = format!(
            "pg{}-b{}-w{}",
            version_hint, self.block_size_kb, self.wal_block_size_kb
        );
        if self.segsize_gb != 0 {
            p.push_str(&format!("-s{}", self.segsize_gb));
        }
        p
    }
}

impl Source {
    fn from_request(s: Option<&SourceRequest>) -> Result<Self, AgentError> {
        let s = s.ok_or_else(|| AgentError::invalid("source", "no source given"))?;
        let (tarball, url, git) = (s.tarball.trim(), s.url.trim(), s.git_url.trim());
        let given = [tarball, url, git].iter().filter(|v| !v.is_empty()).count();
        if given != 1 {
            return Err(AgentError::invalid(
                "source",
                "give exactly one of tarball, url and git_url",
            ));
        }
        let sha256 = match s.sha256.trim() {
            "" => None,
            h => Some(validate_sha256(h)?),
        };
        if !tarball.is_empty() {
            let path = PathBuf::from(tarball);
            if !path.is_absolute() {
                return Err(AgentError::invalid(
                    "source.tarball",
                    format!("{tarball} is not an absolute path"),
                ));
            }
            if !TAR_SUFFIXES.iter().any(|x| tarball.ends_with(x)) {
                return Err(AgentError::invalid(
                    "source.tarball",
                    format!("{tarball} is not a .tar.bz2, .tar.gz, .tgz, .tar.xz or .tar file"),
                ));
            }
            return Ok(Self::Tarball { path, sha256 });
        }
        if !url.is_empty() {
            validate_url("source.url", url, &["http://", "https://"])?;
            let sha256 = sha256.ok_or_else(|| {
                AgentError::invalid("source.sha256", "required for a tarball URL")
            })?;
            return Ok(Self::Url {
                url: url.to_string(),
                sha256,
            });
        }
        validate_url(
            "source.git_url",
            git,
            &["https://", "http://", "git://", "ssh://", "file:///"],
        )?;
        if sha256.is_some() {
            return Err(AgentError::invalid(
                "source.sha256",
                "not used with git_url (the commit identifies the source)",
            ));
        }
        let git_ref = match s.git_ref.trim() {
            "" => "HEAD".to_string(),
            r => validate_git_ref(r)?,
        };
        Ok(Self::Git {
            url: git.to_string(),
            git_ref,
        })
    }

    /// How errors and logs name this source.
    pub fn describe(&self) -> String {
        match self {
            Self::Tarball { path, .. } => path.display().to_string(),
            Self::Url { url, .. } => url.clone(),
            Self::Git { url, git_ref } => format!("{url} at {git_ref}"),
        }
    }
}

pub const TAR_SUFFIXES: [&str; 5] = [".tar.bz2", ".tar.gz", ".tgz", ".tar.xz", ".tar"];

/// 64 hex digits, returned lower-case.
pub fn validate_sha256(h: &str) -> Result<String, AgentError> {
    if h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(h.to_ascii_lowercase())
    } else {
        Err(AgentError::invalid(
            "source.sha256",
            format!("{h:?} is not 64 hex digits"),
        ))
    }
}

fn validate_url(field: &str, url: &str, schemes: &[&str]) -> Result<(), AgentError> {
    if !schemes.iter().any(|s| url.starts_with(s)) {
        return Err(AgentError::invalid(
            field,
            format!("{url:?} must start with one of {schemes:?}"),
        ));
    }
    if url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AgentError::invalid(
            field,
            format!("{url:?} contains whitespace or control characters, or is too long"),
        ));
    }
    Ok(())
}

/// Branch, tag or commit: `[A-Za-z0-9._/-]`, not starting with `-`, no `..`.
pub fn validate_git_ref(r: &str) -> Result<String, AgentError> {
    let ok = r.len() <= 200
        && !r.starts_with('-')
        && !r.contains("..")
        && r.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
    if ok {
        Ok(r.to_string())
    } else {
        Err(AgentError::invalid(
            "source.git_ref",
            format!(
                "{r:?} must be 1-200 characters of A-Z a-z 0-9 . _ / -, not starting with - and without .."
            ),
        ))
    }
}

/// CFLAGS words: each starts with `-` and uses `A-Z a-z 0-9 _ = . , : + / -`; at most 64.
pub fn validate_cflags(words: &[String]) -> Result<(), AgentError> {
    if words.len() > 64 {
        return Err(AgentError::invalid("cflags", "more than 64 words"));
    }
    for w in words {
        let ok = w.len() > 1
            && w.len() <= 200
            && w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_=.,:+/-".contains(c));
        if !ok {
            return Err(AgentError::invalid(
                format!("cflags word {w:?}"),
                "must start with - and contain only A-Z a-z 0-9 _ = . , : + / -",
            ));
        }
    }
    Ok(())
}

/// The major version of `15.18`, `9.6.24`, `17devel`, `16beta1` (0 if unreadable).
pub fn major_version(version: &str) -> u32 {
    let digits: String = version.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or(0)
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
/// input that changes the binaries. Options at their default add nothing, so keys made
/// before they existed stay valid. `wal_segsize_in_configure`: the source is older than
/// PostgreSQL 11, where the WAL segment size is compiled in.
pub fn cache_key(
    spec: &BuildSpec,
    source_sha256: &str,
    compiler: &str,
    version_hint: &str,
    wal_segsize_in_configure: bool,
) -> String {
    let mut h = Sha256::new();
    h.update(b"blocklab-build-v1\n");
    h.update(format!("source={source_sha256}\n"));
    h.update(format!("block_size_kb={}\n", spec.block_size_kb));
    h.update(format!("wal_block_size_kb={}\n", spec.wal_block_size_kb));
    for f in &spec.configure_flags {
        h.update(format!("flag={f}\n"));
    }
    h.update(format!("compiler={compiler}\n"));
    if spec.segsize_gb != 0 {
        h.update(format!("segsize_gb={}\n", spec.segsize_gb));
    }
    if wal_segsize_in_configure && spec.wal_segsize_mb != 0 {
        h.update(format!("wal_segsize_mb={}\n", spec.wal_segsize_mb));
    }
    if !spec.cflags.is_empty() {
        h.update(format!("cflags={}\n", spec.cflags.join(" ")));
    }
    // What the build makes (see `build::recipe`): a build of other parts is another build.
    h.update(format!("recipe={}\n", crate::build::recipe::RECIPE));
    let digest = hex::encode(h.finalize());
    format!("{}-{}", spec.readable_prefix(version_hint), &digest[..16])
}

/// `postgresql-15.18.tar.bz2` → `15.18`; anything unrecognisable → `src`.
pub fn version_hint(file_name: &str) -> String {
    let name = file_name.rsplit('/').next().unwrap_or_default();
    let mut stem = name;
    for suffix in TAR_SUFFIXES {
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
mod tests;
