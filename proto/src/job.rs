//! A job's results (blocklab-measure's `job`) to and from their wire form: `JobExport` and its
//! job, cells, runs, builds and hosts; the per-cell statistics (`CellResult`, `MetricResults`),
//! own-workload figures, host warnings and the results, comparison and probe answers. The only
//! place they convert.

use blocklab_measure::job as d;

use crate::all;
use crate::v1 as w;

both_ways!(
    d::JobSummary,
    w::JobSummary,
    [
        job_id,
        name,
        state,
        created_at,
        runs_total,
        runs_done,
        runs_failed,
        db_host_id,
        error,
        kind,
        workload,
        headline_metric,
        waiting,
        rerun_of
    ],
    [],
    [build]
);

both_ways!(
    d::BuildProgress,
    w::BuildProgress,
    [
        block_size_kb,
        wal_block_size_kb,
        step,
        percent,
        estimated,
        eta_seconds
    ],
    [],
    []
);

both_ways!(
    d::JobExport,
    w::JobExport,
    [
        spec_toml,
        run_order,
        seed,
        started_at,
        finished_at,
        metric,
        catalog_path
    ],
    [cells, runs, builds, hosts, results],
    [job, analysis]
);

both_ways!(
    d::AnalysisOptions,
    w::AnalysisOptions,
    [
        equivalence_pct,
        exclude_suspect,
        target_ci_pct,
        min_repetitions,
        max_repetitions,
        until_decided,
        budget_seconds,
        race
    ],
    [],
    []
);

both_ways!(
    d::ExportCell,
    w::ExportCell,
    [
        cell_index,
        label,
        block_size_kb,
        wal_block_size_kb,
        clients,
        is_baseline,
        dims_json,
        baseline_cell_index,
        compared_on,
        replicate,
        series_point
    ],
    [],
    []
);

both_ways!(
    d::ExportRun,
    w::ExportRun,
    [
        run_id,
        cell_index,
        repetition,
        sequence,
        attempt,
        state,
        stage,
        error,
        started_at,
        finished_at,
        db_host_id,
        worker_host_id,
        build_key,
        build_reused,
        server_version,
        block_size,
        wal_block_size,
        suspect_reasons
    ],
    [samples, settings, server_stats],
    [result]
);

both_ways!(
    d::RunMetrics,
    w::RunMetrics,
    [
        transactions,
        failures,
        retries,
        tps,
        tps_incl_conn,
        latency_avg_ms,
        latency_stddev_ms,
        latency_p50_ms,
        latency_p90_ms,
        latency_p99_ms,
        latency_p999_ms,
        latency_max_ms,
        connection_time_ms,
        measured_seconds,
        client_cpu_user_s,
        client_cpu_system_s,
        schedule_lag_avg_ms,
        schedule_lag_max_ms,
        late,
        skipped
    ],
    [extra, statements],
    []
);

both_ways!(
    d::StatementLatency,
    w::StatementLatency,
    [script, position, command, count, latency_avg_ms, failures],
    [],
    []
);

both_ways!(
    d::EffectiveSetting,
    w::EffectiveSetting,
    [name, setting, unit, source],
    [],
    []
);

both_ways!(
    d::ServerStatDelta,
    w::ServerStatDelta,
    [name, delta],
    [],
    []
);

both_ways!(
    d::ExportBuild,
    w::ExportBuild,
    [
        host_id,
        build_key,
        block_size_kb,
        wal_block_size_kb,
        source_sha256,
        pg_version,
        reused,
        build_seconds,
        recorded_at
    ],
    [],
    []
);

both_ways!(
    d::ExportHost,
    w::ExportHost,
    [
        host_id,
        role,
        labels,
        address,
        version,
        facts_json,
        facts_seen_at,
        is_job_db_host
    ],
    [],
    []
);

both_ways!(
    d::CellResult,
    w::CellResult,
    [
        cell_index,
        label,
        block_size_kb,
        wal_block_size_kb,
        clients,
        proven_block_size,
        proven_wal_block_size,
        runs_ok,
        runs_total,
        tps_mean,
        tps_stddev,
        latency_avg_ms_mean,
        is_baseline,
        pct_change_vs_baseline,
        metric,
        mean,
        stddev,
        cv,
        ci95_low,
        ci95_high,
        pct_change_ci95_low,
        pct_change_ci95_high,
        p_value,
        verdict,
        runs_suspect,
        runs_excluded,
        n,
        suspect_included,
        dims_json,
        baseline_label,
        baseline_mean,
        welch_df,
        suspect_reasons,
        higher_is_better,
        unit,
        held_constant,
        q_value,
        tost_p_value,
        tost_q_value,
        equivalence_pct,
        pct_change_ci90_low,
        pct_change_ci90_high,
        zero_variance,
        baseline_cell_index,
        compared_on,
        replicate,
        ci95_half_width_pct,
        target_ci_pct,
        target_status,
        model,
        mde_pct,
        extra_rounds,
        extra_rounds_cannot,
        series_point
    ],
    [hosts],
    [all_runs, race]
);

both_ways!(
    d::RaceStanding,
    w::RaceStanding,
    [
        standing,
        dropped_round,
        vs_best_pct,
        vs_best_ci95_low,
        vs_best_ci95_high,
        vs_best_p_worse,
        best_label,
        rounds,
        runs_spent,
        full_grid_runs,
        end,
        default_label
    ],
    []
);

both_ways!(
    d::CellStats,
    w::CellStats,
    [
        n,
        mean,
        stddev,
        cv,
        ci95_low,
        ci95_high,
        ci95_half_width_pct,
        pct_change_vs_baseline,
        pct_change_ci95_low,
        pct_change_ci95_high,
        p_value,
        q_value,
        tost_p_value,
        tost_q_value,
        welch_df,
        zero_variance,
        verdict,
        pct_change_ci90_low,
        pct_change_ci90_high,
        baseline_mean,
        model,
        mde_pct,
        extra_rounds,
        extra_rounds_cannot
    ],
    [],
    []
);

both_ways!(
    d::HostResult,
    w::HostResult,
    [host_id, n, mean, pct_change_vs_baseline],
    [],
    []
);

both_ways!(
    d::MetricResults,
    w::MetricResults,
    [name, unit, higher_is_better],
    [cells],
    []
);

both_ways!(
    d::OwnWorkloadCell,
    w::OwnWorkloadCell,
    [
        cell_index,
        cell,
        runs,
        schedule_lag_median_ms,
        schedule_lag_max_ms,
        late,
        skipped
    ],
    [statements],
    []
);

both_ways!(
    d::CellStatement,
    w::CellStatement,
    [
        script,
        position,
        command,
        count,
        failures,
        latency_median_ms
    ],
    [],
    []
);

both_ways!(d::HostWarning, w::HostWarning, [warning, runs], [], []);

both_ways!(
    d::QueryResults,
    w::QueryResultsResponse,
    [job_id, catalog_path, runs_done],
    [cells, by_metric, own_workload, host_warnings],
    []
);

both_ways!(
    d::Comparison,
    w::CompareJobsResponse,
    [metric],
    [cells, by_metric],
    [job_a, job_b]
);

both_ways!(
    d::ProbeResults,
    w::ProbeResultsResponse,
    [job_id, db_host_id],
    [rows],
    []
);

both_ways!(
    d::ProbeSummary,
    w::ProbeSummary,
    [
        target,
        mode,
        chunk_bytes,
        mb_per_s,
        system_cpu_s,
        latency_avg_us,
        latency_p99_us,
        runs
    ],
    [],
    []
);
