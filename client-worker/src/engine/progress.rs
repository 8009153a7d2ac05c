//! `-P n`: a progress line on stderr every n seconds, in pgbench's form.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::engine::plan::Plan;

/// One progress line from the counters' deltas over `secs` seconds.
pub fn line(plan: &Plan, at_s: f64, secs: f64, d: [u64; 6]) -> String {
    let [n, sum, sumsq, failed, skipped, lag] = d;
    let tps = if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let (avg, sd) = if n == 0 {
        (0.0, 0.0)
    } else {
        let avg = sum as f64 / n as f64;
        let var = (sumsq as f64 / n as f64 - avg * avg).max(0.0);
        (avg / 1e3, var.sqrt() / 1e3)
    };
    let at = if plan.progress_timestamp {
        format!("{:.3}", crate::engine::txlog::epoch_us() as f64 / 1e6)
    } else {
        format!("{at_s:.1}")
    };
    let mut s =
        format!("progress: {at} s, {tps:.1} tps, lat {avg:.3} ms stddev {sd:.3}, {failed} failed");
    if plan.throttle_delay_us.is_some() {
        let lag_ms = if n == 0 {
            0.0
        } else {
            lag as f64 / n as f64 / 1e3
        };
        s.push_str(&format!(", lag {lag_ms:.3} ms"));
    }
    if plan.throttle_delay_us.is_some() && plan.latency_limit_us.is_some() {
        s.push_str(&format!(", {skipped} skipped"));
    }
    s
}

pub(crate) async fn report_every(plan: Arc<Plan>, start: Instant, every: Duration) {
    let l = &plan.live;
    let read = || {
        [
            l.transactions.load(Ordering::Relaxed),
            l.latency_sum_us.load(Ordering::Relaxed),
            l.latency_sumsq_us.load(Ordering::Relaxed),
            l.failures.load(Ordering::Relaxed),
            l.skipped.load(Ordering::Relaxed),
            l.lag_sum_us.load(Ordering::Relaxed),
        ]
    };
    let mut last = read();
    let mut tick = 1u32;
    loop {
        tokio::time::sleep_until(tokio::time::Instant::from_std(start + every * tick)).await;
        let now = read();
        let d = std::array::from_fn(|i| now[i].wrapping_sub(last[i]));
        eprintln!(
            "{}",
            line(&plan, (every * tick).as_secs_f64(), every.as_secs_f64(), d)
        );
        last = now;
        tick += 1;
    }
}
