//! What a host may send in one message, beyond the Fleet service's 64 MiB frame: a run's
//! result with at most so many samples, statements, metrics and transaction types, and a
//! hello with bounded facts and labels. Checked at the seam, before anything of it is kept
//! or written; a result beyond them fails its run, naming the count and the limit.

use blocklab_proto::v1 as pb;

/// Per-second samples in one host's result: 55 hours of a measured window.
pub const MAX_SAMPLES: usize = 200_000;
/// Statements (with their latencies) in one host's result.
pub const MAX_STATEMENTS: usize = 10_000;
/// Workload metrics in one host's result.
pub const MAX_METRICS: usize = 10_000;
/// Transaction types in one host's result.
pub const MAX_TXN_TYPES: usize = 1_000;
/// A hello's facts, as JSON.
pub const MAX_FACTS_BYTES: usize = 256 * 1024;
/// A hello's labels, and the length of each.
pub const MAX_LABELS: usize = 64;
pub const MAX_LABEL_BYTES: usize = 128;

/// What in `r` is beyond the limits, if anything.
pub fn load_result(r: &pb::RunLoadResult) -> Result<(), String> {
    for (what, n, max) in [
        ("per-second samples", r.samples.len(), MAX_SAMPLES),
        ("statements", r.statements.len(), MAX_STATEMENTS),
        ("workload metrics", r.metrics.len(), MAX_METRICS),
        ("transaction types", r.txn_types.len(), MAX_TXN_TYPES),
    ] {
        if n > max {
            return Err(format!(
                "the host's result holds {n} {what}, more than the {max} a result may hold"
            ));
        }
    }
    Ok(())
}

/// What in the hello's facts and labels is beyond the limits, if anything (the field named).
pub fn hello(h: &pb::Hello) -> Result<(), String> {
    if h.facts_json.len() > MAX_FACTS_BYTES {
        return Err(format!(
            "hello.facts_json: {} bytes, more than {MAX_FACTS_BYTES}",
            h.facts_json.len()
        ));
    }
    if h.labels.len() > MAX_LABELS {
        return Err(format!(
            "hello.labels: {} labels, more than {MAX_LABELS}",
            h.labels.len()
        ));
    }
    if let Some(l) = h.labels.iter().find(|l| l.len() > MAX_LABEL_BYTES) {
        return Err(format!(
            "hello.labels: a label of {} bytes, more than {MAX_LABEL_BYTES}",
            l.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_beyond_the_limits_are_named() {
        let mut r = pb::RunLoadResult {
            samples: vec![pb::PerSecondSample::default(); MAX_SAMPLES],
            ..Default::default()
        };
        assert_eq!(load_result(&r), Ok(()));
        r.samples.push(pb::PerSecondSample::default());
        assert_eq!(
            load_result(&r),
            Err(format!(
                "the host's result holds {} per-second samples, more than the {MAX_SAMPLES} a \
                 result may hold",
                MAX_SAMPLES + 1
            ))
        );
        let r = pb::RunLoadResult {
            statements: vec![pb::StatementStats::default(); MAX_STATEMENTS + 1],
            ..Default::default()
        };
        assert!(load_result(&r).unwrap_err().contains("10001 statements"));
    }

    #[test]
    fn hellos_beyond_the_limits_are_named() {
        let ok = pb::Hello {
            facts_json: format!("{{\"x\":\"{}\"}}", "a".repeat(MAX_FACTS_BYTES - 8)),
            labels: vec!["l".repeat(MAX_LABEL_BYTES); MAX_LABELS],
            ..Default::default()
        };
        assert_eq!(hello(&ok), Ok(()));
        let big = pb::Hello {
            facts_json: "a".repeat(MAX_FACTS_BYTES + 1),
            ..Default::default()
        };
        assert!(hello(&big).unwrap_err().starts_with("hello.facts_json: "));
        let many = pb::Hello {
            labels: vec!["l".into(); MAX_LABELS + 1],
            ..Default::default()
        };
        assert!(
            hello(&many)
                .unwrap_err()
                .starts_with("hello.labels: 65 labels")
        );
        let long = pb::Hello {
            labels: vec!["l".repeat(MAX_LABEL_BYTES + 1)],
            ..Default::default()
        };
        assert!(hello(&long).unwrap_err().contains("129 bytes"));
    }
}
