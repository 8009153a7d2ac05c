//! The executor's timer: one timerfd per load thread (the kernel's high-resolution timer),
//! registered with the thread's poller and armed at the earliest instant a task waits for.
//! The poller's own timeout is whole milliseconds (epoll_wait rounds it up); the timerfd
//! wakes the thread to within microseconds, as pgbench's wait with a microsecond timeout
//! does, which the `-R` schedule and `\sleep` need.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

pub(crate) struct Alarm {
    fd: TimerFd,
    /// The instant it goes off at, while armed.
    armed: Option<Instant>,
}

impl Alarm {
    pub fn new(registry: &Registry, token: Token) -> io::Result<Alarm> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        registry.register(
            &mut SourceFd(&fd.as_fd().as_raw_fd()),
            token,
            Interest::READABLE,
        )?;
        Ok(Alarm { fd, armed: None })
    }

    /// Arms the timer at `at` (later than `now`), unless it is armed there already. Setting
    /// it also clears an expiry not read, so the descriptor is never read.
    pub fn arm(&mut self, at: Instant, now: Instant) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        // A zero expiry would disarm the timer.
        let wait = at
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1));
        self.fd.set(
            Expiration::OneShot(TimeSpec::from_duration(wait)),
            TimerSetTimeFlags::empty(),
        )?;
        self.armed = Some(at);
        Ok(())
    }

    /// The timer went off.
    pub fn fired(&mut self) {
        self.armed = None;
    }
}
