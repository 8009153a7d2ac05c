//! The gallery's specs (`deploy/specs/seeds/`): every one parses and validates with the
//! files it names, and each is the experiment of its source, scaled down.

use std::path::{Path, PathBuf};

use blocklab_spec::{Files, JobSpec, Spec, referenced_files};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/specs/seeds")
}

/// Every spec of the gallery, by file name, parsed with the files it names (read beside it).
fn gallery() -> Vec<(String, JobSpec)> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("deploy/specs/seeds")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir().join(&name)).unwrap();
            let mut files = Files::new();
            for f in referenced_files(&text).unwrap_or_else(|e| panic!("{name}: {e}")) {
                let body = std::fs::read_to_string(dir().join(&f))
                    .unwrap_or_else(|e| panic!("{name} names {f}: {e}"));
                files.insert(f, body);
            }
            let spec =
                JobSpec::parse_with(&text, None, &files).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, spec)
        })
        .collect()
}

fn bench<'a>(g: &'a [(String, JobSpec)], prefix: &str) -> &'a Spec {
    match g.iter().find(|(n, _)| n.starts_with(prefix)) {
        Some((_, JobSpec::Benchmark(s))) => s,
        other => panic!("{prefix}: {other:?}"),
    }
}

#[test]
fn every_seed_spec_validates_and_names_its_seed() {
    let g = gallery();
    let names: Vec<&str> = g.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "000-osdb-8k-vs-16k.toml",
            "001-dbt2-wal-block-sizes.toml",
            "002-freebsd-restore-vacuum.toml",
            "003-direct-io-chunk-sizes.toml",
            "004-pgbench-many-clients.toml",
            "005-wal-4k-vs-8k-inserts.toml",
            "006-ssd-4k-vs-8k-updates.toml",
            "007-wal-4k-race-inserts.toml",
            "008-wal-4k-race-tpcb.toml",
            "009-wal-4k-vs-8k-over-versions.toml",
            "010-pg18-io-methods-cold-scans.toml",
        ]
    );
    for (file, spec) in &g {
        let stem = file.trim_end_matches(".toml");
        assert_eq!(spec.name(), format!("seed-{stem}"), "{file}");
    }
}

#[test]
fn each_seed_spec_is_its_sources_experiment() {
    let g = gallery();
    let kinds: Vec<&str> = g
        .iter()
        .map(|(_, s)| match s {
            JobSpec::Benchmark(s) => s.workload.kind.name(),
            JobSpec::Probe(_) => "probe",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "as3ap",
            "tpcc",
            "maintenance",
            "probe",
            "pgbench",
            "pgbench",
            "pgbench",
            "pgbench",
            "pgbench",
            "pgbench",
            "pgbench"
        ]
    );

    let osdb = bench(&g, "000");
    assert_eq!(osdb.block_sizes_kb, [8, 16]);
    assert_eq!(osdb.clients, [10]);
    assert!(osdb.layout.separate_wal);
    assert_eq!(osdb.workload.kind.headline_metric(), "mixed_ir.tup_per_s");

    let dbt2 = bench(&g, "001");
    assert_eq!(dbt2.block_sizes_kb, [8]);
    assert_eq!(dbt2.wal_block_sizes_kb, [1, 2, 4, 8, 16, 32, 64]);
    assert_eq!(dbt2.baseline, (8, 8));
    // Every WAL size is compared with the default, 8K.
    assert_eq!(dbt2.plan().cells.len(), 7);

    assert_eq!(bench(&g, "002").block_sizes_kb, [8, 16]);

    match &g[3].1 {
        JobSpec::Probe(p) => {
            assert_eq!(p.chunk_sizes_kb.first(), Some(&4));
            assert_eq!(p.chunk_sizes_kb.last(), Some(&8192));
            assert_eq!(p.chunk_sizes_kb.len(), 12);
            assert!(p.buffered && p.direct);
        }
        other => panic!("003: {other:?}"),
    }

    let many = bench(&g, "004");
    assert_eq!(many.clients, [50]);
    assert_eq!(many.workload.pgbench.transactions, 100);
    assert!(many.layout.separate_wal);

    let wal = bench(&g, "005");
    assert_eq!(wal.wal_block_sizes_kb, [4, 8]);
    assert_eq!(wal.block_sizes_kb, [8]);
    assert_eq!(wal.clients, [1, 4, 16]);

    let ssd = bench(&g, "006");
    assert_eq!(ssd.block_sizes_kb, [4, 8]);
    assert_eq!(ssd.workload.builtin, "simple-update");
    assert_eq!(ssd.workload.protocol, "prepared");

    // Should WAL pages default to 4K: a race per client count over 2K-16K WAL pages, each with
    // wal_buffers automatic and held, for inserts and for TPC-B-like.
    for (seed, scripts) in [("007", 1), ("008", 0)] {
        let race = bench(&g, seed);
        assert_eq!(race.search, blocklab_spec::Search::Race, "{seed}");
        assert_eq!(race.wal_block_sizes_kb, [2, 4, 8, 16]);
        assert_eq!(race.clients, [1, 8, 32]);
        assert_eq!(race.settings_variants.len(), 2);
        assert_eq!(race.workload.pgbench.scripts.len(), scripts, "{seed}");
        let plan = race.plan();
        assert_eq!(plan.cells.len(), 4 * 2 * 3);
        assert_eq!(plan.cells.iter().filter(|c| c.is_baseline).count(), 3);
    }

    // WAL 4K against 8K within each of 15, 17 and 18, as a series in that order.
    let versions = bench(&g, "009");
    assert_eq!(versions.series, ["pg15", "pg17", "pg18"]);
    let names: Vec<&str> = versions.sources.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), 3);
    for n in ["pg15", "pg17", "pg18"] {
        assert!(names.contains(&n), "{names:?}");
    }
    assert_eq!(versions.wal_block_sizes_kb, [4, 8]);
    assert_eq!(versions.clients, [1]);
    assert_eq!(versions.plan().cells.len(), 6);

    // PostgreSQL 18's io_method as settings variants x 8K, 16K and 32K data pages.
    let io = bench(&g, "010");
    assert_eq!(io.block_sizes_kb, [8, 16, 32]);
    let methods: Vec<String> = io
        .settings_variants
        .iter()
        .map(|(name, settings)| {
            assert_eq!(settings, &[("io_method".to_string(), name.clone())]);
            name.clone()
        })
        .collect();
    assert_eq!(methods.len(), 3);
    for m in ["sync", "worker", "io_uring"] {
        assert!(methods.iter().any(|n| n == m), "{methods:?}");
    }
    assert!(io.layout.cold && io.layout.drop_os_cache);
    assert_eq!(io.plan().cells.len(), 9);
}
