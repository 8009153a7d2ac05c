//! The live throughput of a measured window, for the coordinator's display: every second,
//! the transactions (or queries) completed in the last second, as the progress message's
//! `live_tps`. One reporter for every workload kind.

use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;

/// Every second, the rate of `completed` (a running count of completed transactions or
/// queries) over the last second, to `sink`. Runs until aborted.
pub async fn report_live(completed: impl Fn() -> u64, sink: ProgressSink) {
    let mut last = completed();
    let mut at = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = completed();
        let secs = at.elapsed().as_secs_f64();
        at = Instant::now();
        let tps = now.wrapping_sub(last) as f64 / secs.max(1e-3);
        last = now;
        sink.live(tps).await;
    }
}

/// [`report_live`] from `from` on (the start of the measured window).
pub async fn report_live_from(completed: impl Fn() -> u64, sink: ProgressSink, from: Instant) {
    tokio::time::sleep_until(tokio::time::Instant::from_std(from)).await;
    report_live(completed, sink).await;
}
