//! Waiting until an instant to within microseconds, as pgbench's wait with a microsecond
//! timeout does: a one-shot timerfd (the kernel's high-resolution timer) watched by the
//! runtime, not the runtime's own timer (1 ms ticks, rounded up). A thread woken by the
//! kernel at its time is also scheduled promptly on a busy machine, where a spinning one
//! has used up its share.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A timer going off after `wait`, watched by the runtime.
fn armed(wait: Duration) -> std::io::Result<AsyncFd<Timer>> {
    let fd = TimerFd::new(
        ClockId::CLOCK_MONOTONIC,
        TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
    )?;
    fd.set(
        Expiration::OneShot(TimeSpec::from_duration(wait)),
        TimerSetTimeFlags::empty(),
    )?;
    // Sound: the descriptor belongs to the `TimerFd` the `AsyncFd` owns until it is dropped,
    // which is the condition of the unsafe `AsyncFd::register` that replaces `new`.
    #[allow(deprecated)]
    AsyncFd::new(Timer(fd))
}

/// Sleeps until `at`. Should no timerfd be had, the runtime's timer brings it to the last
/// millisecond and the rest is spent yielding to the thread's other clients.
pub(crate) async fn sleep_until(at: Instant) {
    let now = Instant::now();
    if now >= at {
        return;
    }
    match armed(at - now) {
        Ok(timer) => {
            if let Ok(mut ready) = timer.readable().await {
                ready.clear_ready();
            }
        }
        _ => {
            if let Some(early) = at.checked_sub(Duration::from_millis(1))
                && Instant::now() < early
            {
                tokio::time::sleep_until(tokio::time::Instant::from_std(early)).await;
            }
        }
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}
