//! What a task of the load thread's executor waits on. While the executor polls a task, the
//! task's socket and timer futures say here why they return `Pending`: a socket that would
//! block ([`io_pending`]) or an instant to be woken at ([`sleep_until`], [`within`]). The
//! executor reads that back after the poll ([`end`]); a task that returned `Pending` without
//! either could never be woken, and the executor refuses it.
//!
//! Sockets are registered once, edge-triggered for reading and writing, under the token of
//! the task that opened them ([`register`]). The readiness the poller reported for a task
//! since its socket last blocked is kept per task, so that a socket that drained its data
//! knows whether a read is worth a system call ([`take_readiness`]).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use mio::event::Source;
use mio::{Interest, Registry, Token};

/// The readiness bits the poller reported for a task.
pub(crate) const READABLE: u8 = 1;
pub(crate) const WRITABLE: u8 = 2;
/// The peer closed its side or the socket has an error: what a read would return, end of
/// stream or the error, stays there however often it is read.
pub(crate) const READ_CLOSED: u8 = 4;

const NO_TASK: usize = usize::MAX;

thread_local! {
    /// The task being polled.
    static TASK: Cell<usize> = const { Cell::new(NO_TASK) };
    /// Its socket would block.
    static IO: Cell<bool> = const { Cell::new(false) };
    /// The earliest instant it asked to be woken at.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// A clock reading the executor took before this poll (none if it read no clock).
    static NOW: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Readiness reported for its socket and not yet used.
    static READY: Cell<u8> = const { Cell::new(0) };
    /// The thread's poller, while an executor runs.
    static REGISTRY: RefCell<Option<Registry>> = const { RefCell::new(None) };
}

/// The poller of a running executor, known to the thread until this is dropped.
pub(crate) struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        REGISTRY.with_borrow_mut(|r| *r = None);
        TASK.set(NO_TASK);
    }
}

pub(crate) fn install(registry: Registry) -> Installed {
    REGISTRY.with_borrow_mut(|r| *r = Some(registry));
    Installed(())
}

/// Why a task's poll returned `Pending`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Armed {
    pub io: bool,
    pub deadline: Option<Instant>,
    /// Readiness the task's socket did not use.
    pub ready: u8,
}

/// Starts the poll of `task`, with the readiness reported for it and the executor's last
/// clock reading.
pub(crate) fn begin(task: usize, ready: u8, now: Option<Instant>) {
    TASK.set(task);
    IO.set(false);
    DEADLINE.set(None);
    READY.set(ready);
    NOW.set(now);
}

/// Ends the poll of the current task: what it armed.
pub(crate) fn end() -> Armed {
    TASK.set(NO_TASK);
    Armed {
        io: IO.get(),
        deadline: DEADLINE.get(),
        ready: READY.get(),
    }
}

fn no_executor() -> io::Error {
    io::Error::other("no load thread executor is running on this thread")
}

/// Registers a new socket with the thread's poller, under the current task's token.
pub(crate) fn register(source: &mut dyn Source) -> io::Result<Token> {
    let task = TASK.get();
    if task == NO_TASK {
        return Err(no_executor());
    }
    let token = Token(task);
    REGISTRY.with_borrow(|r| {
        r.as_ref().ok_or_else(no_executor)?.register(
            source,
            token,
            Interest::READABLE | Interest::WRITABLE,
        )
    })?;
    // What was reported for the task's earlier socket is not this one's.
    READY.set(0);
    Ok(token)
}

/// The socket `source` (registered as `token`) would block: the current task waits for its
/// next readiness. A socket that passed to another task is registered again under its token.
pub(crate) fn io_pending(source: &mut dyn Source, token: &mut Token) -> io::Result<()> {
    let task = TASK.get();
    if task == NO_TASK {
        return Err(no_executor());
    }
    if token.0 != task {
        let t = Token(task);
        REGISTRY.with_borrow(|r| {
            r.as_ref().ok_or_else(no_executor)?.reregister(
                source,
                t,
                Interest::READABLE | Interest::WRITABLE,
            )
        })?;
        *token = t;
        READY.set(0);
    }
    IO.set(true);
    Ok(())
}

/// Takes the readiness `bit` reported for the current task since its socket last blocked.
pub(crate) fn take_readiness(bit: u8) -> bool {
    let r = READY.get();
    READY.set(r & !bit);
    r & bit != 0
}

/// The current task is woken at `at` (or earlier, for an earlier instant it also waits on).
fn arm_deadline(at: Instant) {
    DEADLINE.set(Some(DEADLINE.get().map_or(at, |d| d.min(at))));
}

/// `at` has come: the executor's reading shows it, or else the clock does.
fn reached(at: Instant) -> bool {
    NOW.get().is_some_and(|now| now >= at) || Instant::now() >= at
}

/// Sleeps until `at`: the executor's timer wakes the task to within microseconds.
pub(crate) fn sleep_until(at: Instant) -> Sleep {
    Sleep { at }
}

/// The future of [`sleep_until`].
#[derive(Debug)]
pub(crate) struct Sleep {
    at: Instant,
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if reached(self.at) {
            return Poll::Ready(());
        }
        arm_deadline(self.at);
        Poll::Pending
    }
}

/// `fut`'s output, or `None` if it has not finished by `deadline`.
pub(crate) async fn within<F: Future>(deadline: Instant, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if reached(deadline) {
            return Poll::Ready(None);
        }
        arm_deadline(deadline);
        Poll::Pending
    })
    .await
}
