//! `submit --dry-run`: the job's plan, cells and runs, nothing sent anywhere.

use std::fmt::Write as _;

use blocklab_spec::{JobSpec, Plan, Spec, WorkloadKind};

use super::table::table;

/// What `submit --dry-run` prints for either kind of job.
pub fn render_job_plan(spec: &JobSpec) -> String {
    match spec {
        JobSpec::Benchmark(s) => render_plan(s, &s.plan()),
        JobSpec::Probe(p) => format!(
            "probe job {:?}: targets {}, file {} MB, chunks {:?} KB, modes{}{}, fsync block sizes {:?} KB x {} writes, {} repetition(s)\n",
            p.name,
            p.targets.join(", "),
            p.file_size_bytes >> 20,
            p.chunk_sizes_kb,
            if p.buffered { " buffered" } else { "" },
            if p.direct { " direct" } else { "" },
            p.fsync_block_sizes_kb,
            p.fsync_writes,
            p.repetitions
        ),
    }
}

/// One workload variant in the words of its kind.
fn variant_line(w: &blocklab_spec::Workload) -> String {
    match w.kind {
        WorkloadKind::Pgbench => format!(
            "{} for {} (warm-up {}) protocol {}, {} thread(s)",
            w.pgbench.describe(&w.builtin),
            humantime::format_duration(w.duration),
            humantime::format_duration(w.warmup),
            w.protocol,
            w.threads
        ),
        _ => w.describe(),
    }
}

/// What a run costs besides its warm-up and window, as the plan estimates it before any
/// history: initdb, starting the server, loading the data, stopping.
const RUN_OVERHEAD_SECS: f64 = 3.0;

/// The budget's rounds, and the change the job's design can expect to resolve.
fn resolution_lines(spec: &Spec, plan: &Plan) -> String {
    let mut out = String::new();
    let cells = u32::try_from(plan.cells.len()).unwrap_or(u32::MAX);
    let w = &spec.workload;
    let run_secs = (w.warmup + w.duration).as_secs_f64() + RUN_OVERHEAD_SECS;
    let (min, max) = (
        spec.repetitions,
        spec.adaptive.map_or(spec.repetitions, |a| a.max),
    );
    let mut rounds = max;
    if let Some(budget) = spec.adaptive.and_then(|a| a.budget) {
        let round_secs = run_secs * f64::from(cells.max(1));
        let fit = (budget.as_secs_f64() / round_secs).floor();
        rounds = if fit < f64::from(min) {
            min
        } else {
            (fit as u32).min(max)
        };
        let _ = writeln!(
            out,
            "budget: {} of measured runs; about {run_secs:.0}s a run (warm-up {} + window {} + about {RUN_OVERHEAD_SECS:.0}s to start a server, load the data and stop: an estimate from the spec), {cells} runs a round: about {rounds} rounds fit (the minimum of {min} always runs; at most {max})",
            humantime::format_duration(budget),
            humantime::format_duration(w.warmup),
            humantime::format_duration(w.duration),
        );
        let _ = writeln!(
            out,
            "the scheduler reads no history: the job's first round is its pilot; after each round another is added only while it fits at the time a round has taken so far"
        );
    }
    let alpha = if spec.adaptive.is_some_and(|a| a.until_decided) {
        blocklab_report::stats::sequential::look_alpha(min, max)
    } else {
        blocklab_report::stats::ALPHA
    };
    let mdes: Vec<String> = [1.0, 2.0, 3.0]
        .into_iter()
        .filter_map(|cv| {
            blocklab_report::stats::planned_mde_pct(cv, rounds, cells, alpha)
                .map(|m| format!("{m:.1}% at a per-run CV of {cv:.0}%"))
        })
        .collect();
    if !mdes.is_empty() {
        let _ = writeln!(
            out,
            "expected to resolve (80% power, {rounds} rounds within rounds, alpha {alpha:.4}): a change of {}; a job's own CV is in its results (the CV column)",
            mdes.join(", ")
        );
    }
    out
}

/// The expanded plan, as `submit --dry-run` prints it.
pub fn render_plan(spec: &Spec, plan: &Plan) -> String {
    let mut out = String::new();
    let repetitions = match spec.adaptive {
        Some(a) => match a.target_ci_pct {
            Some(t) => format!(
                "{} to {} repetitions (until every 95% CI is within {t}% of its mean)",
                spec.repetitions, a.max
            ),
            None => format!(
                "{} to {} repetitions (until every cell is decided, sequential boundary)",
                spec.repetitions, a.max
            ),
        },
        None => format!("{} repetitions", spec.repetitions),
    };
    let _ = writeln!(
        out,
        "job {:?}: {} cells x {repetitions} = {} runs, order {}, {} builds, {} client worker(s)",
        spec.name,
        plan.cells.len(),
        plan.runs.len(),
        spec.order,
        spec.builds().len(),
        if spec.workload.kind.has_workers() {
            spec.client_workers
        } else {
            0
        }
    );
    if spec.search == blocklab_spec::Search::Race
        && let Some(a) = spec.adaptive
    {
        let cells = plan.cells.len() as u32;
        let _ = writeln!(
            out,
            "race: every cell runs {min} rounds ({} runs); after each round from {min} to {max}, a cell significantly worse than the best (at {:.4} per look over {} looks, shared among the cells compared) leaves, the default stays; at most {} runs, fewer as cells leave",
            cells * spec.repetitions,
            blocklab_report::stats::sequential::look_alpha(spec.repetitions, a.max),
            blocklab_report::stats::sequential::looks(spec.repetitions, a.max),
            cells * a.max,
            min = spec.repetitions,
            max = a.max,
        );
    }
    let _ = writeln!(out, "workload: {}", spec.workload.describe());
    out.push_str(&resolution_lines(spec, plan));
    let mut cells = table(&[
        "cell",
        "label",
        "block size",
        "WAL block size",
        "clients",
        "scale",
        "source",
        "compared with",
    ]);
    for c in &plan.cells {
        cells.add_row(vec![
            c.index.to_string(),
            c.label_in(spec),
            format!("{}K", c.block_size_kb),
            format!("{}K", c.wal_block_size_kb),
            c.clients.to_string(),
            c.scale.to_string(),
            c.source.clone(),
            match (c.baseline_cell, c.compared_on) {
                (Some(b), Some(axis)) => format!("cell {b} ({})", axis.as_str()),
                _ => "baseline".into(),
            },
        ]);
    }
    let _ = writeln!(out, "{cells}");
    let mut runs = table(&["#", "cell", "repetition"]);
    for r in &plan.runs {
        runs.add_row(vec![
            (r.sequence + 1).to_string(),
            plan.cells[r.cell_index as usize].label_in(spec),
            (r.repetition + 1).to_string(),
        ]);
    }
    let _ = writeln!(out, "{runs}");
    for (name, w) in &spec.workload_variants {
        let _ = writeln!(out, "workload {name}: {}", variant_line(w));
    }
    for (name, src) in &spec.sources {
        let _ = writeln!(out, "source {name}: {}", src.describe());
    }
    let plan = blocklab_spec::JobPlan::Benchmark {
        spec: Box::new(spec.clone()),
        plan: plan.clone(),
    };
    for (role, f) in plan.user_files() {
        let _ = writeln!(
            out,
            "{role} {}: {} bytes, sha256 {}",
            f.name,
            f.text.len(),
            f.sha256
        );
    }
    out
}
