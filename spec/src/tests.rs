use std::time::Duration;

use super::*;

const GOOD: &str = r#"
name = "demo"
repetitions = 2
[source]
tarball = "/var/cache/blocklab/src/postgresql-15.18.tar.bz2"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8, 16]
wal_block_size_kb = [8]
clients = [4]
[settings]
shared_buffers = "128MB"
fsync = false
[workload]
builtin = "tpcb-like"
scale = 1
duration = "5s"
"#;

fn err(text: &str) -> SpecError {
    Spec::parse(text).expect_err("spec should be refused")
}

#[test]
fn good_spec_parses_with_defaults() {
    let s = Spec::parse(GOOD).expect("valid");
    assert_eq!(s.block_sizes_kb, vec![8, 16]);
    assert_eq!(s.baseline, (8, 8));
    assert_eq!(s.order, RunOrder::Interleaved);
    assert_eq!(s.workload.duration, Duration::from_secs(5));
    assert_eq!(s.workload.protocol, "simple");
    assert_eq!(
        s.settings,
        vec![
            ("fsync".to_string(), "off".to_string()),
            ("shared_buffers".to_string(), "128MB".to_string())
        ]
    );
}

#[test]
fn host_wait_defaults_to_twelve_hours_and_is_bounded() {
    assert_eq!(
        Spec::parse(GOOD).expect("valid").host_wait,
        Duration::from_secs(12 * 3600)
    );
    let with = |v: &str| format!("{GOOD}[placement]\nhost_wait = \"{v}\"\n");
    assert_eq!(
        Spec::parse(&with("30min")).expect("valid").host_wait,
        Duration::from_secs(1800)
    );
    let e = err(&with("8days"));
    assert_eq!(e.field, "placement.host_wait");
    assert_eq!(e.message, "must be between 1s and 7days");
    let e = err(&with("soon"));
    assert_eq!(e.field, "placement.host_wait");
    assert!(
        e.message.starts_with("cannot parse \"soon\" as a duration"),
        "{e}"
    );
}

#[test]
fn db_hosts_need_a_multiple_of_repetitions() {
    assert_eq!(Spec::parse(GOOD).expect("valid").db_hosts, 1);
    let with = |v: &str| format!("{GOOD}[placement]\ndb_hosts = {v}\n");
    let s = Spec::parse(&with("2")).expect("valid");
    assert_eq!((s.db_hosts, s.same_hardware), (2, true));
    let e = err(&with("3"));
    assert_eq!(e.field, "placement.db_hosts");
    assert_eq!(
        e.message,
        "each host runs a full replicate of the cells: repetitions (2) must be a multiple of 3"
    );
    assert_eq!(err(&with("0")).message, "must be between 1 and 16");
}

#[test]
fn unknown_key_names_the_field() {
    let e = err(&GOOD.replace("clients = [4]", "clients = [4]\nblok_size = 3"));
    assert_eq!(e.field, "matrix.blok_size", "{e}");
    assert!(e.message.contains("unknown field"), "{e}");
    assert!(e.message.contains("line 11"), "{e}");
}

#[test]
fn disallowed_data_block_size_is_refused() {
    let e = err(&GOOD.replace("block_size_kb = [8, 16]", "block_size_kb = [8, 64]"));
    assert_eq!(e.field, "matrix.block_size_kb[1]");
    assert!(e.message.contains("1, 2, 4, 8, 16, 32"), "{e}");
}

#[test]
fn disallowed_wal_block_size_is_refused() {
    for bad in ["3", "128", "0"] {
        let e = err(&GOOD.replace(
            "wal_block_size_kb = [8]",
            &format!("wal_block_size_kb = [{bad}]"),
        ));
        assert_eq!(e.field, "matrix.wal_block_size_kb[0]", "{bad}: {e}");
        assert!(e.message.contains("64"), "{e}");
    }
}

#[test]
fn zero_clients_is_refused() {
    let e = err(&GOOD.replace("clients = [4]", "clients = [0]"));
    assert_eq!(e.field, "matrix.clients[0]");
}

#[test]
fn unparsable_duration_is_refused() {
    let e = err(&GOOD.replace("duration = \"5s\"", "duration = \"five seconds\""));
    assert_eq!(e.field, "workload.duration");
    assert!(e.message.contains("five seconds"), "{e}");
}

#[test]
fn wrong_type_names_the_field() {
    let e = err(&GOOD.replace("scale = 1", "scale = \"big\""));
    assert_eq!(e.field, "workload.scale", "{e}");
}

#[test]
fn missing_field_is_named() {
    let e = err(&GOOD.replace("duration = \"5s\"", ""));
    assert_eq!(e.field, "workload.duration", "{e}");
    assert!(e.message.contains("required"), "{e}");
}

#[test]
fn configure_flags_are_plain() {
    assert!(validate_configure_flag("--without-icu").is_ok());
    assert!(validate_configure_flag("--with-segsize=2").is_ok());
    assert!(validate_configure_flag("--with-blocksize=16").is_err());
    assert!(validate_configure_flag("--foo; rm -rf /").is_err());
    assert!(validate_configure_flag("CFLAGS=-O0").is_err());
    let e = err(&GOOD.replace("[\"--without-icu\"]", "[\"--without-icu\", \"--x=$(id)\"]"));
    assert_eq!(e.field, "source.configure[1]");
}

#[test]
fn settings_names_and_values_are_checked() {
    let e = err(&GOOD.replace("fsync = false", "\"Bad-Name\" = 1"));
    assert_eq!(e.field, "settings.Bad-Name");
    let e = err(&GOOD.replace("fsync = false", "work_mem = \"4MB\\nfsync=off\""));
    assert_eq!(e.field, "settings.work_mem");
}

#[test]
fn baseline_must_be_a_cell() {
    let e = err(&GOOD.replace(
        "repetitions = 2",
        "repetitions = 2\nbaseline = { block_size_kb = 32 }",
    ));
    assert_eq!(e.field, "baseline");
}

#[test]
fn interleaved_plan_alternates_cells() {
    let plan = Spec::parse(GOOD).expect("valid").plan();
    assert_eq!(plan.cells.len(), 2);
    assert!(plan.cells[0].is_baseline && !plan.cells[1].is_baseline);
    let order: Vec<(u32, u32)> = plan
        .runs
        .iter()
        .map(|r| (r.cell_index, r.repetition))
        .collect();
    assert_eq!(order, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
}

#[test]
fn sequential_and_shuffled_orders() {
    let seq =
        Spec::parse(&GOOD.replace("repetitions = 2", "repetitions = 2\norder = \"sequential\""))
            .expect("valid")
            .plan();
    let order: Vec<u32> = seq.runs.iter().map(|r| r.cell_index).collect();
    assert_eq!(order, vec![0, 0, 1, 1]);
    let text = GOOD.replace(
        "repetitions = 2",
        "repetitions = 5\norder = \"shuffled\"\nseed = 7",
    );
    let a = Spec::parse(&text).expect("valid").plan();
    let b = Spec::parse(&text).expect("valid").plan();
    assert_eq!(a.runs, b.runs, "same seed, same order");
    let mut seen: Vec<(u32, u32)> = a
        .runs
        .iter()
        .map(|r| (r.cell_index, r.repetition))
        .collect();
    seen.sort();
    assert_eq!(seen.len(), 10);
    seen.dedup();
    assert_eq!(seen.len(), 10, "every run exactly once");
}

fn points(s: &Spec) -> Vec<(u32, u32)> {
    s.builds()
        .iter()
        .map(|b| (b.block_size_kb, b.wal_block_size_kb))
        .collect()
}

#[test]
fn page_sizes_vary_one_at_a_time_by_default() {
    let text = GOOD
        .replace("wal_block_size_kb = [8]", "wal_block_size_kb = [8, 16]")
        .replace("clients = [4]", "clients = [1, 4]");
    let s = Spec::parse(&text).expect("valid");
    assert_eq!(s.vary, Vary::OneAtATime);
    assert_eq!(points(&s), vec![(8, 8), (16, 8), (8, 16)]);
    assert_eq!(s.plan().cells.len(), 6);
    let all = Spec::parse(&text.replace("clients = [1, 4]", "clients = [1, 4]\nvary = \"all\""))
        .expect("valid");
    assert_eq!(points(&all), vec![(8, 8), (8, 16), (16, 8), (16, 16)]);
    assert_eq!(all.plan().cells.len(), 8);
    let e = err(&text.replace("clients = [1, 4]", "clients = [1, 4]\nvary = \"some\""));
    assert_eq!(e.field, "matrix.vary");
}

#[test]
fn bare_page_counts_follow_the_memory_policy() {
    let refused = err(&GOOD.replace("shared_buffers = \"128MB\"", "shared_buffers = 16384"));
    assert_eq!(refused.field, "settings.shared_buffers");
    assert!(refused.message.contains("BLCKSZ"), "{refused}");
    let converted = Spec::parse(
        &GOOD
            .replace("shared_buffers = \"128MB\"", "shared_buffers = 16384")
            .replace(
                "repetitions = 2",
                "repetitions = 2\nmemory_policy = \"convert\"",
            ),
    )
    .expect("valid");
    assert!(
        converted
            .settings
            .contains(&("shared_buffers".into(), "131072kB".into()))
    );
    let e = err(&GOOD.replace(
        "repetitions = 2",
        "repetitions = 2\nmemory_policy = \"maybe\"",
    ));
    assert_eq!(e.field, "memory_policy");
}

const MULTI: &str = r#"
name = "multi"
baseline = { block_size_kb = 8, source = "pg15" }
[sources.pg15]
tarball = "/src/postgresql-15.tar.bz2"
[sources.head]
git = "https://git.postgresql.org/git/postgresql.git"
ref = "REL_16_STABLE"
[matrix]
block_size_kb = [8, 16]
segsize_gb = [1, 2]
clients = [2]
scale = [1, 5]
[settings]
shared_buffers = "64MB"
[settings_variants.big]
shared_buffers = "256MB"
[settings_variants.small]
work_mem = "1MB"
[workload]
duration = "10s"
[workload_variants.ro]
builtin = "select-only"
[workload_variants.rw]
builtin = "tpcb-like"
duration = "20s"
[layout]
separate_wal = true
cold = true
"#;

#[test]
fn every_axis_multiplies_cells() {
    let s = Spec::parse(MULTI).expect("valid");
    let plan = s.plan();
    // 2 sources x 2 page points x 2 segsizes x 2 scales x 2 settings x 2 workloads
    assert_eq!(plan.cells.len(), 64);
    assert_eq!(
        s.builds().len(),
        8,
        "builds ignore scale, settings and workload"
    );
    let baselines: Vec<&Cell> = plan.cells.iter().filter(|c| c.is_baseline).collect();
    // Compared axes collapse onto their first values; source (not compared by default) and
    // scale (never compared) keep their own baselines.
    assert_eq!(baselines.len(), 4, "one baseline per source and scale");
    assert!(baselines.iter().all(|c| c.block_size_kb == 8
        && c.segsize_gb == 1
        && c.settings_variant == "big"
        && c.workload_variant == "ro"));
    for c in plan.cells.iter().filter(|c| !c.is_baseline) {
        let b = &plan.cells[c.baseline_cell.expect("compared") as usize];
        let differs = [
            (c.block_size_kb != b.block_size_kb, Axis::PageSize),
            (c.segsize_gb != b.segsize_gb, Axis::Segsize),
            (
                c.settings_variant != b.settings_variant,
                Axis::SettingsVariant,
            ),
            (
                c.workload_variant != b.workload_variant,
                Axis::WorkloadVariant,
            ),
            (c.source != b.source, Axis::Source),
            (c.scale != b.scale, Axis::Replicate),
        ];
        let on: Vec<Axis> = differs.iter().filter(|d| d.0).map(|d| d.1).collect();
        assert_eq!(on, vec![c.compared_on.expect("axis")], "{c:?} vs {b:?}");
        let m = &plan.cells[c.memory_reference.expect("reference") as usize];
        assert_eq!((m.block_size_kb, m.wal_block_size_kb), s.baseline);
        assert_eq!(
            (m.source.as_str(), m.scale, &m.settings_variant),
            (c.source.as_str(), c.scale, &c.settings_variant)
        );
    }
    let big = plan
        .cells
        .iter()
        .find(|c| c.settings_variant == "big")
        .expect("big");
    assert!(
        s.cell_settings(big)
            .contains(&("shared_buffers".into(), "256MB".into()))
    );
    let small = plan
        .cells
        .iter()
        .find(|c| c.settings_variant == "small")
        .expect("small");
    let st = s.cell_settings(small);
    assert!(
        st.contains(&("shared_buffers".into(), "64MB".into()))
            && st.contains(&("work_mem".into(), "1MB".into()))
    );
    let rw = plan
        .cells
        .iter()
        .find(|c| c.workload_variant == "rw")
        .expect("rw");
    assert_eq!(s.cell_workload(rw).duration, Duration::from_secs(20));
    assert!(s.layout.separate_wal && s.layout.checkpoint_before && s.layout.cold);
    assert!(!s.layout.drop_os_cache);
    let label = plan.cells[0].label_in(&s);
    assert!(
        label.contains("src=")
            && label.contains("seg=")
            && label.contains("s=")
            && label.contains("set=")
            && label.contains("wl="),
        "{label}"
    );
    let dims: serde_json::Value = serde_json::from_str(&plan.cells[0].dims_json()).expect("json");
    assert_eq!(dims["source"], "head");
}

#[test]
fn sources_are_checked() {
    let e = err(&MULTI.replace("ref = \"REL_16_STABLE\"", ""));
    assert_eq!(e.field, "sources.head.ref");
    let e = err(&MULTI.replace(
        "tarball = \"/src/postgresql-15.tar.bz2\"",
        "url = \"https://ftp.postgresql.org/x.tar.bz2\"",
    ));
    assert_eq!(e.field, "sources.pg15.sha256");
    let e = err(&MULTI.replace(
        "baseline = { block_size_kb = 8, source = \"pg15\" }",
        "baseline = { source = \"pg9\" }",
    ));
    assert_eq!(e.field, "baseline.source");
    let e = err(&GOOD.replace("[source]", "[sources.x]\ntarball = \"/a\"\n[source]"));
    assert_eq!(e.field, "sources");
    let e = err(&GOOD.replace(
        "tarball = \"/var/cache/blocklab/src/postgresql-15.18.tar.bz2\"",
        "tarball = \"/a\"\ngit = \"/b\"",
    ));
    assert_eq!(e.field, "source");
}

#[test]
fn shuffled_seed_can_be_restored() {
    let text = GOOD.replace("repetitions = 2", "repetitions = 3\norder = \"shuffled\"");
    let a = Spec::parse(&text).expect("valid");
    let seed = a.order.seed().expect("a seed was chosen");
    let b = Spec::parse_with_seed(&text, Some(seed)).expect("valid");
    assert_eq!(a.plan().runs, b.plan().runs);
}

#[test]
fn oversized_spec_is_refused() {
    let e = err(&"#".repeat(MAX_SPEC_BYTES + 1));
    assert_eq!(e.field, "spec");
}

#[test]
fn sources_compare_only_when_asked_and_replicates_twin_each_baseline() {
    let text = MULTI.replace(
        "source = \"pg15\" }",
        "source = \"pg15\", compare_sources = true }",
    );
    let text = text.replace(
        "scale = [1, 5]",
        "scale = [1, 5]\nreplicate_baseline = true",
    );
    let s = Spec::parse(&text).expect("valid");
    let plan = s.plan();
    let roots: Vec<&Cell> = plan.cells.iter().filter(|c| c.is_baseline).collect();
    assert_eq!(roots.len(), 2, "pg16 is compared with pg15");
    assert!(roots.iter().all(|c| c.source == "pg15"));
    assert!(
        plan.cells
            .iter()
            .any(|c| c.compared_on == Some(Axis::Source))
    );
    let twins: Vec<&Cell> = plan.cells.iter().filter(|c| c.replicate).collect();
    assert_eq!(twins.len(), 2);
    for t in twins {
        let b = &plan.cells[t.baseline_cell.expect("twin") as usize];
        assert!(b.is_baseline && t.compared_on == Some(Axis::Replicate));
        assert_eq!(t.build_point(), b.build_point());
        assert_eq!(
            (&t.settings_variant, t.scale),
            (&b.settings_variant, b.scale)
        );
        assert!(t.label_in(&s).ends_with(" A/A") && t.dims_json() != b.dims_json());
    }
    assert_eq!(plan.runs.len(), plan.cells.len());
}

#[test]
fn adaptive_repetitions_and_analysis_options() {
    let base = "name = \"x\"\n[source]\ntarball = \"/x.tar.bz2\"\n[matrix]\nblock_size_kb = [8, 16]\n[workload]\nduration = \"5s\"\n";
    let s = Spec::parse(&format!(
        "repetitions = {{ min = 3, max = 12, target_ci_pct = 1.5 }}\nequivalence_pct = 3\nsuspect_runs = \"exclude\"\norder = \"randomized-block\"\nseed = 9\n{base}"
    ))
    .expect("valid");
    assert_eq!(s.repetitions, 3);
    assert_eq!(
        s.adaptive,
        Some(Adaptive {
            max: 12,
            target_ci_pct: Some(1.5),
            until_decided: false,
            budget: None
        })
    );
    assert_eq!(
        s.analysis,
        Analysis {
            equivalence_pct: 3.0,
            exclude_suspect: true
        }
    );
    assert_eq!(s.order, RunOrder::RandomizedBlock { seed: 9 });
    assert_eq!(s.plan().runs.len(), 6);
    let d = Spec::parse(base).expect("valid");
    assert_eq!((d.repetitions, d.adaptive), (1, None));
    assert_eq!(
        d.analysis,
        Analysis {
            equivalence_pct: 2.0,
            exclude_suspect: false
        }
    );
    for (text, field) in [
        ("repetitions = 0", "repetitions"),
        (
            "repetitions = { min = 1, max = 5, target_ci_pct = 1 }",
            "repetitions.min",
        ),
        (
            "repetitions = { min = 5, max = 4, target_ci_pct = 1 }",
            "repetitions.max",
        ),
        (
            "repetitions = { min = 3, max = 5 }",
            "repetitions.target_ci_pct",
        ),
        (
            "repetitions = { min = 3, max = 5, target_ci_pct = -1 }",
            "repetitions.target_ci_pct",
        ),
        ("equivalence_pct = 0", "equivalence_pct"),
        ("suspect_runs = \"drop\"", "suspect_runs"),
    ] {
        let e = Spec::parse(&format!("{text}\n{base}")).expect_err(text);
        assert_eq!(e.field, field, "{text}: {e}");
    }
}

#[test]
fn repetitions_until_decided() {
    let base = "name = \"x\"\n[source]\ntarball = \"/x.tar.bz2\"\n[matrix]\nblock_size_kb = [8, 16]\n[workload]\nduration = \"5s\"\n";
    let s = Spec::parse(&format!(
        "repetitions = {{ min = 3, max = 20, until = \"decided\" }}\norder = \"interleaved\"\n{base}"
    ))
    .expect("valid");
    assert_eq!(s.repetitions, 3);
    assert_eq!(
        s.adaptive,
        Some(Adaptive {
            max: 20,
            target_ci_pct: None,
            until_decided: true,
            budget: None
        })
    );
    // The minimum is queued; the scheduler adds the rest one round at a time.
    assert_eq!(s.plan().runs.len(), 6);
    for (text, field) in [
        (
            "repetitions = { min = 3, max = 20, until = \"significant\" }",
            "repetitions.until",
        ),
        (
            "repetitions = { min = 3, max = 20, until = \"decided\", target_ci_pct = 1 }",
            "repetitions.until",
        ),
        (
            "repetitions = { min = 1, max = 20, until = \"decided\" }",
            "repetitions.min",
        ),
        (
            "repetitions = { min = 8, max = 5, until = \"decided\" }",
            "repetitions.max",
        ),
    ] {
        let e = Spec::parse(&format!("{text}\n{base}")).expect_err(text);
        assert_eq!(e.field, field, "{text}: {e}");
    }
}

#[test]
fn adaptive_plans_stored_before_until_read_as_a_target() {
    let a: Adaptive = serde_json::from_str(r#"{"max":12,"target_ci_pct":1.5}"#).expect("old plan");
    assert_eq!(
        a,
        Adaptive {
            max: 12,
            target_ci_pct: Some(1.5),
            until_decided: false,
            budget: None
        }
    );
}

#[test]
fn a_budget_bounds_adaptive_repetitions() {
    let base = "name = \"x\"\n[source]\ntarball = \"/x.tar.bz2\"\n[matrix]\nblock_size_kb = [8, 16]\n[workload]\nduration = \"5s\"\n";
    let s = Spec::parse(&format!(
        "repetitions = {{ min = 3, max = 20, until = \"decided\" }}\nbudget = \"10m\"\n{base}"
    ))
    .expect("valid");
    assert_eq!(
        s.adaptive.and_then(|a| a.budget),
        Some(std::time::Duration::from_secs(600))
    );
    // `duration = "auto"`: the pilot window until the coordinator chooses one.
    let auto = base.replace("duration = \"5s\"", "duration = \"auto\"");
    let s = Spec::parse(&format!(
        "repetitions = {{ min = 3, max = 20, until = \"decided\" }}\nbudget = \"10m\"\n{auto}"
    ))
    .expect("valid");
    assert!(s.workload.auto_window);
    assert_eq!(s.workload.duration, crate::model::AUTO_PILOT_WINDOW);
    let e = Spec::parse(&format!("repetitions = 3\n{auto}")).expect_err("auto without a budget");
    assert_eq!(e.field, "workload.duration", "{e}");
    for (text, want) in [
        (
            "budget = \"10m\"",
            "budget: a budget bounds the rounds adaptive repetitions add",
        ),
        (
            "repetitions = { min = 3, max = 20, until = \"decided\" }\nbudget = \"soon\"",
            "budget: cannot parse \"soon\" as a duration",
        ),
        (
            "repetitions = { min = 3, max = 20, until = \"decided\" }\nbudget = \"5s\"",
            "budget: must be between 10s and 7days",
        ),
    ] {
        let e = Spec::parse(&format!("{text}\n{base}")).expect_err(text);
        assert!(e.to_string().starts_with(want), "{text}: {e}");
    }
}
