//! configure, make and `make install` of one build, as the builds user in the build's own
//! directory: configure out of tree (its cache from the source's object store), make of the
//! recipe's parts with the store's ccache, the share of objects compiled reported as make runs.

use std::path::Path;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_spec::{BuildProgress, BuildStep};

use super::objects::{Reuse, Store};
use super::source::Fetched;
use crate::error::AgentError;
use crate::options::BuildSpec;
use crate::process::{Cmd, RunAs};

const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
const MAKE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const INSTALL_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How often `make`'s objects are counted while it runs.
const MAKE_TICK: Duration = Duration::from_secs(2);

/// One build's configure, make and install.
#[derive(Clone, Copy)]
pub struct Maker<'a> {
    /// The build cache (the source's make history, the object stores).
    pub root: &'a Path,
    pub builder: &'a RunAs,
    pub make_jobs: usize,
    pub spec: &'a BuildSpec,
    pub fetched: &'a Fetched,
    /// The unpacked source's top directory.
    pub top: &'a Path,
    /// Where the install will live (`--prefix`).
    pub prefix: &'a Path,
    /// The out-of-tree build directory.
    pub scratch: &'a Path,
    /// `DESTDIR` of `make install`.
    pub dest: &'a Path,
    pub logs: &'a Path,
    /// Before PostgreSQL 11 (the WAL segment size is a configure option).
    pub old: bool,
    pub progress: Option<&'a ProgressSink>,
}

impl Maker<'_> {
    /// configure (out of tree, in `scratch`), make, `make install` into `dest` (`DESTDIR`),
    /// as the builds user; each stage logged. Returns the objects taken from the source's
    /// store and compiled (when ccache counted them).
    pub async fn run(&self) -> Result<Option<Reuse>, AgentError> {
        report(self.progress, self.spec, BuildStep::Configure).await;
        let store = Store::open(self.root, &self.fetched.family(), self.builder).await?;
        let outcome = self.with_store(&store).await;
        if let Err(e) = store.close().await {
            tracing::warn!(error = %e, "could not hand the object store back to the agent");
        }
        outcome
    }

    async fn with_store(&self, store: &Store) -> Result<Option<Reuse>, AgentError> {
        let Maker {
            spec,
            top,
            prefix,
            scratch,
            dest,
            logs,
            old,
            progress,
            ..
        } = *self;
        let mut cached_args = spec.configure_flags.clone();
        if !spec.cflags.is_empty() {
            cached_args.push(format!("CFLAGS={}", spec.cflags.join(" ")));
        }
        if old && spec.wal_segsize_mb != 0 {
            cached_args.push(format!("--with-wal-segsize={}", spec.wal_segsize_mb));
        }
        let mut cache_arg = std::ffi::OsString::from("--cache-file=");
        cache_arg.push(store.configure_cache(&top.join("configure"), &cached_args)?);
        let mut prefix_arg = std::ffi::OsString::from("--prefix=");
        prefix_arg.push(prefix);
        let mut configure = Cmd::new("configure", top.join("configure"), CONFIGURE_TIMEOUT)
            .arg(prefix_arg)
            .arg(cache_arg)
            .arg(format!("--with-blocksize={}", spec.block_size_kb))
            .arg(format!("--with-wal-blocksize={}", spec.wal_block_size_kb));
        if spec.segsize_gb != 0 {
            configure = configure.arg(format!("--with-segsize={}", spec.segsize_gb));
        }
        if old && spec.wal_segsize_mb != 0 {
            configure = configure.arg(format!("--with-wal-segsize={}", spec.wal_segsize_mb));
        }
        configure = configure.args(&spec.configure_flags);
        if !spec.cflags.is_empty() {
            configure = configure.arg(format!("CFLAGS={}", spec.cflags.join(" ")));
        }
        let base = scratch.parent().unwrap_or(scratch).to_path_buf();
        let store_env = store.env(&base);
        let as_builder = |c: Cmd| {
            let mut c = c
                .cwd(scratch)
                .env("HOME", &scratch.to_string_lossy())
                .run_as(Some(self.builder));
            for (k, v) in &store_env {
                c = c.env(k, v);
            }
            c
        };
        let configure_log = logs.join("configure.log");
        let configure_started = Instant::now();
        as_builder(configure)
            .run_logged(&configure_log)
            .await
            .map_err(|e| {
                let log = std::fs::read_to_string(&configure_log).unwrap_or_default();
                e.with_cause(configure_error(&log))
            })?;
        let seconds = configure_started.elapsed().as_secs_f64();
        tracing::info!(seconds, "configure finished");
        let parts = super::recipe::parts(top, &spec.configure_flags);
        let makefile = scratch.join(super::recipe::MAKEFILE);
        std::fs::write(
            &makefile,
            super::recipe::makefile(
                &parts,
                &super::recipe::installed(&parts),
                super::recipe::has_generated_headers(top),
            ),
        )
        .and_then(|()| crate::fsutil::chmod_nofollow(&makefile, 0o644))
        .map_err(|e| AgentError::io(format!("write {}", makefile.display()), e))?;
        let make = as_builder(
            Cmd::new("make", "make", MAKE_TIMEOUT)
                .arg("-f")
                .arg(super::recipe::MAKEFILE)
                .arg(format!("-j{}", self.make_jobs))
                .args(store.make_args().iter().copied())
                .arg("all"),
        );
        store.zero_stats().await;
        self.make_with_progress(make, &parts, &logs.join("build.log"))
            .await?;
        let reuse = store.reuse().await;
        if let Some(r) = reuse {
            tracing::info!(
                objects_reused = r.hits,
                objects_compiled = r.misses,
                "objects taken from the source's earlier builds"
            );
        }
        report(progress, spec, BuildStep::Install).await;
        let mut destdir = std::ffi::OsString::from("DESTDIR=");
        destdir.push(dest);
        as_builder(
            Cmd::new("make install", "make", INSTALL_TIMEOUT)
                .arg("-f")
                .arg(super::recipe::MAKEFILE)
                .arg("install")
                .arg(destdir),
        )
        .run_logged(&logs.join("install.log"))
        .await?;
        Ok(reuse)
    }
    /// Runs `make`, reporting the share of objects compiled (see [`progress`]) each time its
    /// whole percent changes; records the object count and duration for the next build.
    async fn make_with_progress(
        &self,
        make: Cmd,
        parts: &[&'static str],
        log: &Path,
    ) -> Result<(), AgentError> {
        let Maker {
            spec,
            fetched,
            top,
            scratch,
            progress: sink,
            ..
        } = *self;
        let history = super::progress::read_history(self.root, &fetched.digest);
        let meter = {
            let dir = top.to_path_buf();
            let h = history.clone();
            let parts = parts.to_vec();
            tokio::task::spawn_blocking(move || {
                super::progress::MakeMeter::new(h.as_ref(), &dir, &parts)
            })
            .await
            .map_err(|e| AgentError::Other(format!("object estimate panicked: {e}")))?
        };
        tracing::info!(expected_objects = meter.expected_objects, estimated = meter.estimated, earlier_seconds = ?meter.earlier_seconds, "make started");
        let started = Instant::now();
        let run = make.run_logged(log);
        tokio::pin!(run);
        let mut tick = tokio::time::interval(MAKE_TICK);
        let mut last_percent = None;
        let outcome = loop {
            tokio::select! {
                r = &mut run => break r,
                _ = tick.tick() => {
                    let done = count_objects_of(scratch).await;
                    let (percent, eta) = meter.reading(done, started.elapsed().as_secs_f64());
                    let whole = percent.floor() as u64;
                    if last_percent != Some(whole) {
                        last_percent = Some(whole);
                        let p = BuildProgress {
                            block_size_kb: spec.block_size_kb,
                            wal_block_size_kb: spec.wal_block_size_kb,
                            step: BuildStep::Make,
                            percent: Some(percent),
                            estimated: meter.estimated,
                            eta_seconds: eta,
                        };
                        tracing::debug!(objects = done, percent, eta_seconds = ?eta, "make progress");
                        if let Some(s) = sink {
                            s.build(&p).await;
                        }
                    }
                }
            }
        };
        outcome?;
        let objects = count_objects_of(scratch).await;
        let seconds = started.elapsed().as_secs_f64();
        tracing::info!(objects, seconds, "make finished");
        super::progress::record_make(self.root, &fetched.digest, objects, seconds);
        Ok(())
    }
}

async fn count_objects_of(dir: &Path) -> u64 {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || super::progress::count_objects(&dir))
        .await
        .unwrap_or(0)
}

/// What configure said stopped it (`bison not found`, `ICU library not found ...`), from
/// its log's last `configure: error:` line.
pub fn configure_error(log: &str) -> Option<String> {
    log.lines()
        .rev()
        .find_map(|l| l.strip_prefix("configure: error: "))
        .map(|m| m.trim().to_string())
}

/// Reports a build's step (without a percentage).
pub async fn report(sink: Option<&ProgressSink>, spec: &BuildSpec, step: BuildStep) {
    if let Some(s) = sink {
        s.build(&BuildProgress {
            block_size_kb: spec.block_size_kb,
            wal_block_size_kb: spec.wal_block_size_kb,
            step,
            percent: None,
            estimated: false,
            eta_seconds: None,
        })
        .await;
    }
}
