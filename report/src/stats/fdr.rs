//! Many comparisons: Benjamini–Hochberg q-values (the false discovery rate step-up).
//!
//! For m p-values sorted ascending, `q_(i) = min over j ≥ i of m·p_(j)/j`, capped at 1; a
//! comparison is a discovery at level α when its q-value is below α, which keeps the expected
//! share of false discoveries among the discoveries at most α (for independent or positively
//! dependent tests). This is `scipy.stats.false_discovery_control(p, method="bh")` and
//! `statsmodels.stats.multitest.multipletests(p, method="fdr_bh")[1]`.

/// The q-value of each p-value, in the given order. NaN p-values get NaN and do not count
/// in the family.
pub fn bh_q_values(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let m = order.len() as f64;
    let mut q = vec![f64::NAN; p.len()];
    let mut running = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(m * p[i] / (rank as f64 + 1.0));
        q[i] = running.clamp(0.0, 1.0);
    }
    q
}
