//! `submit --dry-run` describes each workload kind in its own words: the example specs under
//! deploy/specs/ render a `workload default:` line naming their kind's choices.

use blocklab_spec::JobSpec;

fn variant_line(spec_file: &str) -> String {
    let path = format!("{}/../deploy/specs/{spec_file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("example spec");
    let spec = JobSpec::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let plan = blocklab_cli::render_job_plan(&spec);
    plan.lines()
        .find(|l| l.starts_with("workload default: "))
        .unwrap_or_else(|| panic!("no variant line in:\n{plan}"))
        .to_string()
}

#[test]
fn every_kind_has_its_own_summary_line() {
    for (file, line) in [
        (
            "tpcc.toml",
            "workload default: tpcc, 4 warehouse(s), clients = terminals, 300s measured after 60s warm-up, keying/thinking off, consistency checks on",
        ),
        (
            "as3ap.toml",
            "workload default: as3ap, 100000 rows per table, single-user queries on, mixes [mixed-ir, mixed-oltp] with clients = users, 60s measured after 10s warm-up each",
        ),
        (
            "maintenance.toml",
            "workload default: maintenance on 2000000 rows: copy, create-index, vacuum-analyze, checkpoint, count-warm, count-cold, dump, restore (done by the agent; no client workers)",
        ),
        (
            "demo.toml",
            "workload default: tpcb-like for 10s (warm-up 3s) protocol prepared, 1 thread(s)",
        ),
    ] {
        assert_eq!(variant_line(file), line, "{file}");
    }
}
