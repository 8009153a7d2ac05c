//! The arguments and results of the tasks a host runs, as the scheduler sees them, and their
//! one conversion from and to the task messages.

use blocklab_proto::v1 as pb;
use blocklab_spec::{BuildPoint, Spec};

use crate::catalog::{ProbeRow, Probed};

/// How a client reaches a run's server (libpq keywords).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnInfo {
    pub host: String,
    pub port: u32,
    pub user: String,
    pub password: String,
    pub dbname: String,
}

/// A PostgreSQL build of one source at one build point, as a build or a server asks for it.
#[derive(Debug, Clone, Copy)]
pub struct BuildOf<'a> {
    pub spec: &'a Spec,
    pub point: &'a BuildPoint,
}

/// A build the agent has: made now or found in its cache.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Built {
    pub build_key: String,
    pub source_sha256: String,
    pub reused: bool,
    pub build_seconds: f64,
    pub pg_version: String,
}

/// The server a run measures: its build, settings and where its client may connect from.
#[derive(Debug, Clone)]
pub struct ServerRequest<'a> {
    pub build: BuildOf<'a>,
    pub settings: Vec<(String, String)>,
    pub allowed_client_addresses: Vec<String>,
    pub separate_wal: bool,
    pub archive_wal: bool,
}

/// A setting as the live server resolved it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffectiveSetting {
    pub name: String,
    pub setting: String,
    pub unit: String,
    pub source: String,
}

/// A started server and the proof of what it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Server {
    pub conninfo: ConnInfo,
    pub build_key: String,
    pub build_reused: bool,
    pub server_version: String,
    /// `SHOW block_size`, in bytes.
    pub block_size: u32,
    /// `SHOW wal_block_size`, in bytes.
    pub wal_block_size: u32,
    pub effective_settings: Vec<EffectiveSetting>,
    pub wal_dir: String,
    pub postmaster_start_time: String,
}

/// What to reset: a clean restart (shared buffers start empty) and the OS page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reset {
    pub restart_server: bool,
    pub drop_os_cache: bool,
}

/// The timed maintenance steps of one run, and what they measured.
#[derive(Debug, Clone, Default)]
pub struct Maintained {
    /// One metric per step, in seconds, plus sizes.
    pub metrics: Vec<blocklab_measure::Metric>,
    /// Whether the count-cold step could drop the OS page cache.
    pub os_cache_dropped: bool,
    /// What the reset after the load did, when one was asked for and the table was loaded.
    pub reset: Option<CachesReset>,
}

/// An I/O probe of one target directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRequest {
    pub target: String,
    pub file_size_bytes: u64,
    pub chunk_sizes: Vec<u32>,
    pub buffered: bool,
    pub direct: bool,
    pub fsync_block_sizes: Vec<u32>,
    pub fsync_writes: u32,
}

/// The server's statistics at one instant, as the agent read them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// A JSON object of counters (`wal_lsn_bytes`, `wal.wal_fpi`, ...).
    pub stats_json: String,
    pub postmaster_start_time: String,
    /// The CHECKPOINT asked for before the snapshot was done.
    pub checkpoint_done: bool,
    pub taken_at: String,
}

/// What a cache reset did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CachesReset {
    pub server_restarted: bool,
    pub os_cache_dropped: bool,
    /// Why the OS cache could not be dropped, when it could not.
    pub os_cache_error: String,
    pub postmaster_start_time: String,
}

/// Full-page-image bytes of an LSN range, from `pg_waldump --stats`.
#[derive(Debug, Clone, PartialEq)]
pub enum WalStats {
    Complete {
        fpi_bytes: u64,
    },
    /// Part of the range is gone (its segments recycled): why.
    Incomplete {
        reason: String,
    },
}

/// A setting the build refuses: its name, the value given and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingProblem {
    pub name: String,
    pub value: String,
    pub reason: String,
}

impl From<ConnInfo> for pb::ConnInfo {
    fn from(c: ConnInfo) -> Self {
        pb::ConnInfo {
            host: c.host,
            port: c.port,
            user: c.user,
            password: c.password,
            dbname: c.dbname,
        }
    }
}

impl From<pb::ConnInfo> for ConnInfo {
    fn from(c: pb::ConnInfo) -> Self {
        ConnInfo {
            host: c.host,
            port: c.port,
            user: c.user,
            password: c.password,
            dbname: c.dbname,
        }
    }
}

impl From<BuildOf<'_>> for pb::BuildOptions {
    fn from(b: BuildOf<'_>) -> Self {
        let p = b.point;
        let src = b.spec.source(&p.source).cloned().unwrap_or_default();
        pb::BuildOptions {
            source: Some(pb::SourceSpec {
                tarball: src.tarball,
                url: src.url,
                sha256: src.sha256,
                git_url: src.git_url,
                git_ref: src.git_ref,
            }),
            block_size_kb: p.block_size_kb,
            wal_block_size_kb: p.wal_block_size_kb,
            configure_flags: src.configure,
            segsize_gb: p.segsize_gb,
            wal_segsize_mb: p.wal_segsize_mb,
            cflags: src.cflags,
        }
    }
}

pub(super) fn settings(settings: &[(String, String)]) -> Vec<pb::Setting> {
    settings
        .iter()
        .map(|(name, value)| pb::Setting {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

impl From<ServerRequest<'_>> for pb::PrepareServerTask {
    fn from(r: ServerRequest<'_>) -> Self {
        pb::PrepareServerTask {
            build: Some(r.build.into()),
            settings: settings(&r.settings),
            allowed_client_addresses: r.allowed_client_addresses,
            separate_wal: r.separate_wal,
            archive_wal: r.archive_wal,
        }
    }
}

impl From<Reset> for pb::ResetCachesTask {
    fn from(r: Reset) -> Self {
        pb::ResetCachesTask {
            restart_server: r.restart_server,
            drop_os_cache: r.drop_os_cache,
        }
    }
}

impl From<pb::RunMaintenanceResult> for Maintained {
    fn from(r: pb::RunMaintenanceResult) -> Self {
        Maintained {
            metrics: r.metrics.into_iter().map(Into::into).collect(),
            os_cache_dropped: r.os_cache_dropped,
            reset: r.reset.map(Into::into),
        }
    }
}

impl From<ProbeRequest> for pb::RunProbeTask {
    fn from(p: ProbeRequest) -> Self {
        pb::RunProbeTask {
            target: p.target,
            file_size_bytes: p.file_size_bytes,
            chunk_sizes: p.chunk_sizes,
            buffered: p.buffered,
            direct: p.direct,
            fsync_block_sizes: p.fsync_block_sizes,
            fsync_writes: p.fsync_writes,
        }
    }
}

impl From<pb::RunProbeResult> for Probed {
    fn from(r: pb::RunProbeResult) -> Self {
        Probed {
            rows: r
                .rows
                .into_iter()
                .map(|row| ProbeRow {
                    mode: row.mode,
                    chunk_bytes: row.chunk_bytes,
                    mb_per_s: row.mb_per_s,
                    user_cpu_s: row.user_cpu_s,
                    system_cpu_s: row.system_cpu_s,
                    latency_avg_us: row.latency_avg_us,
                    latency_p99_us: row.latency_p99_us,
                    cache_dropped: row.cache_dropped,
                    bytes: row.bytes,
                })
                .collect(),
            device: r.device,
            filesystem: r.filesystem,
        }
    }
}

impl From<pb::SnapshotStatsResult> for Snapshot {
    fn from(s: pb::SnapshotStatsResult) -> Self {
        Snapshot {
            stats_json: s.stats_json,
            postmaster_start_time: s.postmaster_start_time,
            checkpoint_done: s.checkpoint_done,
            taken_at: s.taken_at,
        }
    }
}

impl From<pb::BuildResult> for Built {
    fn from(b: pb::BuildResult) -> Self {
        Built {
            build_key: b.build_key,
            source_sha256: b.source_sha256,
            reused: b.reused,
            build_seconds: b.build_seconds,
            pg_version: b.pg_version,
        }
    }
}

impl From<pb::PrepareServerResult> for Server {
    fn from(p: pb::PrepareServerResult) -> Self {
        Server {
            conninfo: p.conninfo.unwrap_or_default().into(),
            build_key: p.build_key,
            build_reused: p.build_reused,
            server_version: p.server_version,
            block_size: p.block_size,
            wal_block_size: p.wal_block_size,
            effective_settings: p
                .effective_settings
                .into_iter()
                .map(|s| EffectiveSetting {
                    name: s.name,
                    setting: s.setting,
                    unit: s.unit,
                    source: s.source,
                })
                .collect(),
            wal_dir: p.wal_dir,
            postmaster_start_time: p.postmaster_start_time,
        }
    }
}

impl From<pb::ResetCachesResult> for CachesReset {
    fn from(r: pb::ResetCachesResult) -> Self {
        CachesReset {
            server_restarted: r.server_restarted,
            os_cache_dropped: r.os_cache_dropped,
            os_cache_error: r.os_cache_error,
            postmaster_start_time: r.postmaster_start_time,
        }
    }
}

impl From<pb::WalStatsResult> for WalStats {
    fn from(r: pb::WalStatsResult) -> Self {
        if r.complete {
            WalStats::Complete {
                fpi_bytes: r.fpi_bytes,
            }
        } else {
            WalStats::Incomplete { reason: r.reason }
        }
    }
}

impl From<pb::SettingProblem> for SettingProblem {
    fn from(p: pb::SettingProblem) -> Self {
        SettingProblem {
            name: p.name,
            value: p.value,
            reason: p.reason,
        }
    }
}
