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
    assert_eq!(e.field, "duration", "{e}");
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

#[test]
fn matrix_product_and_builds() {
    let s = Spec::parse(
        &GOOD
            .replace("wal_block_size_kb = [8]", "wal_block_size_kb = [8, 16]")
            .replace("clients = [4]", "clients = [1, 4]"),
    )
    .expect("valid");
    assert_eq!(s.plan().cells.len(), 8);
    assert_eq!(s.builds(), vec![(8, 8), (8, 16), (16, 8), (16, 16)]);
}

#[test]
fn oversized_spec_is_refused() {
    let e = err(&"#".repeat(MAX_SPEC_BYTES + 1));
    assert_eq!(e.field, "spec");
}
