//! Workload kinds beyond pgbench's scripts: a TPC-C-like mix (NOTPM), an AS3AP-like suite
//! (per-query seconds, multi-user tuples per second) and maintenance timings.

use super::raw::RawWorkload;
use crate::error::SpecError;
use crate::model::WorkloadKind;
use crate::state::WorkloadName;

/// AS3AP-like multi-user mixes.
pub const AS3AP_MIXES: [&str; 2] = ["mixed-ir", "mixed-oltp"];
/// Maintenance steps, in the order they run.
/// The agent's maintenance steps (`RunMaintenanceTask.steps`), in the order an empty list
/// runs them; specs name them the same way.
pub const MAINTENANCE_STEPS: [&str; 8] = [
    "copy",
    "create-index",
    "vacuum-analyze",
    "checkpoint",
    "count-warm",
    "count-cold",
    "dump",
    "restore",
];

fn only_for(prefix: &str, field: &str, kind: &str) -> SpecError {
    SpecError::new(
        format!("{prefix}.{field}"),
        format!("only applies to kind = \"{kind}\""),
    )
}

fn names(
    prefix: &str,
    field: &str,
    given: &[String],
    allowed: &[&str],
) -> Result<Vec<String>, SpecError> {
    for (i, s) in given.iter().enumerate() {
        if !allowed.contains(&s.as_str()) {
            return Err(SpecError::new(
                format!("{prefix}.{field}[{i}]"),
                format!("{s:?} is not allowed; use {}", allowed.join(", ")),
            ));
        }
        if given[..i].contains(s) {
            return Err(SpecError::new(
                format!("{prefix}.{field}[{i}]"),
                format!("{s:?} is listed twice"),
            ));
        }
    }
    Ok(given.to_vec())
}

/// The kind of `w`, refusing fields that belong to another kind.
pub(super) fn validate_kind(prefix: &str, w: &RawWorkload) -> Result<WorkloadKind, SpecError> {
    let kind: WorkloadName = w
        .kind
        .as_deref()
        .unwrap_or(WorkloadName::Pgbench.as_str())
        .parse()
        .map_err(|e: crate::state::UnknownName| {
            SpecError::new(
                format!("{prefix}.kind"),
                format!(
                    "{:?} is not a workload kind; use one of {}",
                    e.value, e.allowed
                ),
            )
        })?;
    let tpcc_only = [
        ("keying_thinking", w.keying_thinking.is_some()),
        ("time_scale", w.time_scale.is_some()),
        ("check", w.check.is_some()),
    ];
    let as3ap_only = [
        ("mixes", w.mixes.is_some()),
        ("single_user", w.single_user.is_some()),
    ];
    let maint_only = [("steps", w.steps.is_some())];
    let pgbench_only = [
        ("builtin", w.builtin.is_some()),
        ("protocol", w.protocol.is_some()),
        ("scripts", w.scripts.is_some()),
        ("variables", w.variables.is_some()),
        ("rate", w.rate.is_some()),
        ("latency_limit", w.latency_limit.is_some()),
        ("max_tries", w.max_tries.is_some()),
        ("retry_time_limit", w.retry_time_limit.is_some()),
        (
            "connect_per_transaction",
            w.connect_per_transaction.is_some(),
        ),
        ("transactions", w.transactions.is_some()),
        ("random_seed", w.random_seed.is_some()),
        ("statement_latencies", w.statement_latencies.is_some()),
        ("continue_on_error", w.continue_on_error.is_some()),
        ("init", w.init.is_some()),
        ("fillfactor", w.fillfactor.is_some()),
        ("partitions", w.partitions.is_some()),
        ("partition_method", w.partition_method.is_some()),
        ("unlogged", w.unlogged.is_some()),
        ("foreign_keys", w.foreign_keys.is_some()),
        ("init_steps", w.init_steps.is_some()),
    ];
    let groups: [(WorkloadName, &[(&str, bool)]); 4] = [
        (WorkloadName::Pgbench, &pgbench_only),
        (WorkloadName::Tpcc, &tpcc_only),
        (WorkloadName::As3ap, &as3ap_only),
        (WorkloadName::Maintenance, &maint_only),
    ];
    for (owner, fields) in groups {
        if owner == kind {
            continue;
        }
        if let Some((f, _)) = fields.iter().find(|(_, set)| *set) {
            return Err(only_for(prefix, f, owner.as_str()));
        }
    }
    Ok(match kind {
        WorkloadName::Tpcc => {
            let time_scale = w.time_scale.unwrap_or(1.0);
            if !(time_scale.is_finite() && (0.0..=100.0).contains(&time_scale)) || time_scale == 0.0
            {
                return Err(SpecError::new(
                    format!("{prefix}.time_scale"),
                    "must be a number above 0 and at most 100 (1.0 = the standard's keying and thinking times)",
                ));
            }
            WorkloadKind::Tpcc {
                keying_thinking: w.keying_thinking.unwrap_or(false),
                time_scale,
                check: w.check.unwrap_or(true),
            }
        }
        WorkloadName::As3ap => {
            let mixes = match &w.mixes {
                Some(m) => names(prefix, "mixes", m, &AS3AP_MIXES)?,
                None => AS3AP_MIXES.map(String::from).to_vec(),
            };
            let single_user = w.single_user.unwrap_or(true);
            if !single_user && mixes.is_empty() {
                return Err(SpecError::new(
                    format!("{prefix}.mixes"),
                    "with single_user = false, list at least one mix (mixed-ir, mixed-oltp)",
                ));
            }
            WorkloadKind::As3ap { single_user, mixes }
        }
        WorkloadName::Maintenance => {
            let steps = match &w.steps {
                Some(s) if s.is_empty() => {
                    return Err(SpecError::new(
                        format!("{prefix}.steps"),
                        format!("list at least one of {}", MAINTENANCE_STEPS.join(", ")),
                    ));
                }
                Some(s) => names(prefix, "steps", s, &MAINTENANCE_STEPS)?,
                None => MAINTENANCE_STEPS.map(String::from).to_vec(),
            };
            WorkloadKind::Maintenance { steps }
        }
        WorkloadName::Pgbench => WorkloadKind::Pgbench,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Spec;

    const HEAD: &str = "name = \"k\"\nrepetitions = 2\n[source]\ntarball = \"/tmp/pg.tar.bz2\"\n[matrix]\nblock_size_kb = [8, 16]\nclients = [4]\n";

    fn parse(workload: &str) -> Result<Spec, SpecError> {
        Spec::parse(&format!("{HEAD}[workload]\n{workload}"))
    }

    #[test]
    fn listings_name_the_workload() {
        let plan = |w: &str| {
            crate::JobPlan::parse(&format!("{HEAD}[workload]\n{w}"), None).expect("valid")
        };
        assert_eq!(plan("duration = \"5s\"").workload(), "pgbench");
        let tpcc = plan("kind = \"tpcc\"\nduration = \"5s\"");
        assert_eq!((tpcc.workload(), tpcc.headline_metric()), ("tpcc", "notpm"));
    }

    #[test]
    fn pgbench_is_the_default_kind() {
        let s = parse("duration = \"5s\"").unwrap();
        assert_eq!(s.workload.kind, WorkloadKind::Pgbench);
        assert_eq!(s.workload.kind.headline_metric(), "tps");
    }

    #[test]
    fn tpcc_takes_warehouses_from_scale_and_checks_by_default() {
        let s = parse("kind = \"tpcc\"\nscale = 2\nduration = \"10s\"\nkeying_thinking = true\ntime_scale = 0.01").unwrap();
        assert_eq!(
            s.workload.kind,
            WorkloadKind::Tpcc {
                keying_thinking: true,
                time_scale: 0.01,
                check: true
            }
        );
        assert_eq!(s.workload.scale, 2);
        assert_eq!(s.workload.kind.headline_metric(), "notpm");
    }

    #[test]
    fn as3ap_defaults_to_single_user_and_both_mixes() {
        let s = parse("kind = \"as3ap\"\nduration = \"5s\"").unwrap();
        assert_eq!(
            s.workload.kind,
            WorkloadKind::As3ap {
                single_user: true,
                mixes: vec!["mixed-ir".into(), "mixed-oltp".into()]
            }
        );
        // Single-user only needs no duration.
        let s = parse("kind = \"as3ap\"\nmixes = []").unwrap();
        assert!(!s.workload.kind.has_window());
        assert_eq!(s.workload.kind.headline_metric(), "as3ap.single_user_s");
    }

    #[test]
    fn maintenance_needs_no_duration_and_no_workers() {
        let s = parse("kind = \"maintenance\"\nsteps = [\"copy\", \"count-cold\"]").unwrap();
        assert_eq!(
            s.workload.kind,
            WorkloadKind::Maintenance {
                steps: vec!["copy".into(), "count-cold".into()]
            }
        );
        assert!(!s.workload.kind.has_workers());
        assert_eq!(s.workload.kind.headline_metric(), "maint.total_s");
    }

    #[test]
    fn bad_kinds_and_fields_name_the_field() {
        let cases = [
            (
                "kind = \"dbt3\"\nduration = \"5s\"",
                "workload.kind",
                "pgbench, tpcc, as3ap, maintenance",
            ),
            ("kind = \"tpcc\"", "workload.duration", "required"),
            (
                "kind = \"tpcc\"\nduration = \"5s\"\nmixes = [\"mixed-ir\"]",
                "workload.mixes",
                "as3ap",
            ),
            (
                "kind = \"tpcc\"\nduration = \"5s\"\nbuiltin = \"select-only\"",
                "workload.builtin",
                "pgbench",
            ),
            (
                "kind = \"tpcc\"\nduration = \"5s\"\ntime_scale = 0.0",
                "workload.time_scale",
                "above 0",
            ),
            (
                "kind = \"as3ap\"\nduration = \"5s\"\nmixes = [\"mixed-dss\"]",
                "workload.mixes[0]",
                "mixed-ir",
            ),
            (
                "kind = \"as3ap\"\nduration = \"5s\"\nmixes = [\"mixed-ir\", \"mixed-ir\"]",
                "workload.mixes[1]",
                "twice",
            ),
            (
                "kind = \"as3ap\"\nsingle_user = false\nmixes = []",
                "workload.mixes",
                "at least one",
            ),
            (
                "kind = \"maintenance\"\nsteps = [\"reindex\"]",
                "workload.steps[0]",
                "vacuum-analyze",
            ),
            (
                "kind = \"maintenance\"\nsteps = []",
                "workload.steps",
                "at least one",
            ),
            (
                "kind = \"maintenance\"\nscale = 20000",
                "workload.scale",
                "10000",
            ),
            (
                "duration = \"5s\"\nkeying_thinking = true",
                "workload.keying_thinking",
                "tpcc",
            ),
        ];
        for (text, field, words) in cases {
            let e = parse(text).expect_err(text);
            assert_eq!(e.field, field, "{text}: {e}");
            assert!(e.message.contains(words), "{text}: {e}");
        }
    }

    #[test]
    fn the_example_specs_in_deploy_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/specs");
        let mut kinds = Vec::new();
        for name in ["demo", "tpcc", "as3ap", "maintenance"] {
            let text = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            let spec = Spec::parse(&text).unwrap_or_else(|e| panic!("{name}.toml: {e}"));
            kinds.push(spec.workload.kind.name());
        }
        assert_eq!(kinds, ["pgbench", "tpcc", "as3ap", "maintenance"]);
    }
}
