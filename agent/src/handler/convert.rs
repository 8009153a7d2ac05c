//! Wire types (blocklab-proto) to the agent's domain types and back. Validation stays with
//! the domain modules; this only moves fields (and parses the names the wire carries as
//! strings, such as maintenance steps).

use blocklab_proto::{
    BuildInfo, BuildOptions, BuildResult, CheckSettingsResult, ConnInfo, EffectiveSetting,
    ProbeRow, ResetCachesResult, ResetCachesTask, RunMaintenanceResult, RunMaintenanceTask,
    RunProbeTask, Setting, SettingProblem, SourceSpec, WalStatsResult, WorkloadMetric,
};

use crate::build::BuildReport;
use crate::cache::CachedBuild;
use crate::cluster::{ConnParams, ResetDone, ResetPlan, ServerSetting};
use crate::conf::PgSetting;
use crate::error::AgentError;
use crate::fsutil::rfc3339;
use crate::maintenance::{self, MaintPlan, MaintReport, Step};
use crate::options::{BuildRequest, BuildSpec, SourceRequest};
use crate::probe;

/// The task's build options, validated.
pub fn build_spec(o: &BuildOptions) -> Result<BuildSpec, AgentError> {
    BuildSpec::from_request(&build_request(o))
}

pub fn build_request(o: &BuildOptions) -> BuildRequest {
    BuildRequest {
        source: o.source.as_ref().map(source_request),
        block_size_kb: o.block_size_kb,
        wal_block_size_kb: o.wal_block_size_kb,
        configure_flags: o.configure_flags.clone(),
        segsize_gb: o.segsize_gb,
        wal_segsize_mb: o.wal_segsize_mb,
        cflags: o.cflags.clone(),
    }
}

fn source_request(s: &SourceSpec) -> SourceRequest {
    SourceRequest {
        tarball: s.tarball.clone(),
        url: s.url.clone(),
        sha256: s.sha256.clone(),
        git_url: s.git_url.clone(),
        git_ref: s.git_ref.clone(),
    }
}

pub fn build_result(r: &BuildReport) -> BuildResult {
    BuildResult {
        build_key: r.build_key.clone(),
        source_sha256: r.source_sha256.clone(),
        reused: r.reused,
        build_seconds: r.build_seconds,
        pg_version: r.pg_version.clone(),
        install_dir: r.install_dir.clone(),
        compiler: r.compiler.clone(),
        git_commit: r.git_commit.clone(),
    }
}

pub fn build_info(b: &CachedBuild) -> BuildInfo {
    let m = &b.marker;
    BuildInfo {
        build_key: m.key.clone(),
        pg_version: m.pg_version.clone(),
        block_size_kb: m.block_size_kb,
        wal_block_size_kb: m.wal_block_size_kb,
        segsize_gb: m.segsize_gb,
        wal_segsize_mb: m.wal_segsize_mb,
        configure_flags: m.configure_flags.clone(),
        source_sha256: m.source_sha256.clone(),
        compiler: m.compiler.clone(),
        build_seconds: m.build_seconds,
        size_bytes: b.size_bytes,
        built_at: rfc3339(m.completed_at_unix),
        last_used_at: rfc3339(b.last_used_unix),
    }
}

pub fn pg_settings(settings: &[Setting]) -> Vec<PgSetting> {
    settings
        .iter()
        .map(|s| PgSetting {
            name: s.name.clone(),
            value: s.value.clone(),
        })
        .collect()
}

pub fn check_settings_result(
    build_key: &str,
    problems: Vec<crate::guc::SettingProblem>,
) -> CheckSettingsResult {
    CheckSettingsResult {
        problems: problems
            .into_iter()
            .map(|p| SettingProblem {
                name: p.name,
                value: p.value,
                reason: p.reason,
            })
            .collect(),
        build_key: build_key.to_string(),
    }
}

pub fn conninfo(c: ConnParams) -> ConnInfo {
    ConnInfo {
        host: c.host,
        port: u32::from(c.port),
        user: c.user,
        password: c.password,
        dbname: c.dbname,
    }
}

pub fn effective_settings(settings: Vec<ServerSetting>) -> Vec<EffectiveSetting> {
    settings
        .into_iter()
        .map(|s| EffectiveSetting {
            name: s.name,
            setting: s.setting,
            unit: s.unit,
            source: s.source,
        })
        .collect()
}

/// The task's scale and steps, checked; the step names parsed here, once.
pub fn maint_plan(t: &RunMaintenanceTask) -> Result<MaintPlan, AgentError> {
    let plan = maintenance::plan(t.scale, t.steps.iter().map(|s| s.parse::<Step>()))?;
    Ok(match &t.reset_after_load {
        Some(r) => plan.with_reset(reset_plan(r)),
        None => plan,
    })
}

pub fn reset_plan(t: &ResetCachesTask) -> ResetPlan {
    ResetPlan {
        restart_server: t.restart_server,
        drop_os_cache: t.drop_os_cache,
    }
}

pub fn reset_result(r: ResetDone) -> ResetCachesResult {
    ResetCachesResult {
        server_restarted: r.server_restarted,
        os_cache_dropped: r.os_cache.dropped(),
        os_cache_error: r.os_cache.reason().to_string(),
        postmaster_start_time: r.postmaster_start_time,
    }
}

pub fn maint_result(r: MaintReport) -> RunMaintenanceResult {
    RunMaintenanceResult {
        metrics: r
            .metrics
            .into_iter()
            .map(|m| WorkloadMetric {
                name: m.name,
                value: m.value,
                unit: m.unit,
                higher_is_better: false,
            })
            .collect(),
        notes: r.notes,
        os_cache_dropped: r.os_cache_dropped,
        reset: r.reset.map(reset_result),
    }
}

pub fn wal_stats_result(w: crate::waldump::WalRange) -> WalStatsResult {
    match w {
        crate::waldump::WalRange::Read(s) => WalStatsResult {
            complete: true,
            records: s.records,
            record_bytes: s.record_bytes,
            fpi_bytes: s.fpi_bytes,
            reason: String::new(),
        },
        crate::waldump::WalRange::Unreadable(reason) => WalStatsResult {
            complete: false,
            reason,
            ..WalStatsResult::default()
        },
    }
}

pub fn probe_request(t: &RunProbeTask) -> probe::ProbeRequest {
    probe::ProbeRequest {
        file_size_bytes: t.file_size_bytes,
        chunk_sizes: t.chunk_sizes.clone(),
        buffered: t.buffered,
        direct: t.direct,
        fsync_block_sizes: t.fsync_block_sizes.clone(),
        fsync_writes: t.fsync_writes,
    }
}

pub fn probe_row(r: probe::ProbeRow) -> ProbeRow {
    ProbeRow {
        mode: r.mode.as_str().to_string(),
        chunk_bytes: r.chunk_bytes,
        mb_per_s: r.mb_per_s,
        user_cpu_s: r.user_cpu_s,
        system_cpu_s: r.system_cpu_s,
        latency_avg_us: r.latency_avg_us,
        latency_p99_us: r.latency_p99_us,
        cache_dropped: r.cache_dropped,
        bytes: r.bytes,
    }
}

/// A restored dump in the wire form.
pub(super) fn restore_result(r: crate::maintenance::Restored) -> blocklab_proto::RestoreDumpResult {
    blocklab_proto::RestoreDumpResult {
        seconds: r.seconds,
        bytes: r.bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_options_keep_every_field() {
        let o = BuildOptions {
            source: Some(SourceSpec {
                git_url: "https://example.org/pg.git".into(),
                git_ref: "REL_15_STABLE".into(),
                ..Default::default()
            }),
            block_size_kb: 16,
            wal_block_size_kb: 8,
            configure_flags: vec!["--without-icu".into()],
            segsize_gb: 2,
            wal_segsize_mb: 64,
            cflags: vec!["-O2".into()],
        };
        let r = build_request(&o);
        assert_eq!(r.source.as_ref().unwrap().git_ref, "REL_15_STABLE");
        assert_eq!(
            (
                r.block_size_kb,
                r.wal_block_size_kb,
                r.segsize_gb,
                r.wal_segsize_mb
            ),
            (16, 8, 2, 64)
        );
        assert_eq!((r.configure_flags, r.cflags), (o.configure_flags, o.cflags));
    }

    #[test]
    fn maintenance_steps_are_parsed_once_and_checked() {
        let t = RunMaintenanceTask {
            scale: 2,
            steps: vec!["dump".into(), "restore".into()],
            reset_after_load: Some(ResetCachesTask {
                restart_server: true,
                drop_os_cache: false,
            }),
        };
        let p = maint_plan(&t).unwrap();
        assert_eq!(p.steps(), [Step::Dump, Step::Restore]);
        assert_eq!(p.scale(), 2);
        assert!(p.reset().restart_server && !p.reset().drop_os_cache);
        let bad = RunMaintenanceTask {
            scale: 1,
            steps: vec!["reindex".into()],
            reset_after_load: None,
        };
        assert!(
            maint_plan(&bad)
                .unwrap_err()
                .to_string()
                .contains("reindex")
        );
        let r = maint_result(MaintReport {
            metrics: vec![maintenance::Metric {
                name: "maint.copy".into(),
                value: 1.5,
                unit: "s".into(),
            }],
            notes: vec!["n".into()],
            os_cache_dropped: true,
            reset: None,
        });
        assert_eq!(r.metrics[0].name, "maint.copy");
        assert!(!r.metrics[0].higher_is_better && r.os_cache_dropped);
    }
}
