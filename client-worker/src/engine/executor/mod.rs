//! The load thread's executor: the thread's clients as futures over one `mio` poller, each
//! polled only when its own socket reported readiness or its own deadline came. There is no
//! waker to wake a task from elsewhere (the futures get a no-op one): a task waits on its
//! socket or on an instant, and says which while it is polled ([`waits`]). A task that
//! returns `Pending` having armed neither is a bug that would hang the thread, and the
//! executor stops on it at once.
//!
//! One round: poll the tasks made ready, wake those whose deadline has come (one clock read,
//! and only while some task waits on an instant), arm the thread's timer at the earliest
//! deadline ([`alarm`]), and wait in the poller for socket readiness or the timer.

mod alarm;
mod waits;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use mio::{Events, Token};

pub(crate) use waits::{io_pending, register, sleep_until, take_readiness, within};

/// Readiness bits a socket's futures use ([`take_readiness`]).
pub(crate) use waits::{READ_CLOSED, READABLE, WRITABLE};

/// The timer's token; sockets take their task's index.
const ALARM: Token = Token(usize::MAX - 1);

/// Events one wait returns at most.
const EVENTS: usize = 256;

/// One load thread's poller and timer.
pub(crate) struct Executor {
    poll: mio::Poll,
    events: Events,
    alarm: alarm::Alarm,
}

/// A task's state between polls.
struct Task<F> {
    fut: Option<Pin<Box<F>>>,
    /// Queued to be polled this round.
    queued: bool,
    /// Readiness reported for its socket and not yet used.
    ready: u8,
    /// The instant it waits for, if any.
    deadline: Option<Instant>,
}

impl Executor {
    pub fn new() -> io::Result<Executor> {
        let poll = mio::Poll::new()?;
        let alarm = alarm::Alarm::new(poll.registry(), ALARM)?;
        Ok(Executor {
            poll,
            events: Events::with_capacity(EVENTS),
            alarm,
        })
    }

    /// Runs `futures` to completion, each as a task of the thread; their outputs in order.
    /// A socket opened by the task at index `i` is registered under token `i`. An error of
    /// the poller or the timer ends the run (the tasks left are dropped).
    pub fn run<F: Future>(
        &mut self,
        futures: impl IntoIterator<Item = F>,
    ) -> io::Result<Vec<F::Output>> {
        let mut tasks: Vec<Task<F>> = futures
            .into_iter()
            .map(|f| Task {
                fut: Some(Box::pin(f)),
                queued: true,
                // Readiness reported after an earlier run's task finished is not known: a
                // socket carried over tries its first read and write.
                ready: READABLE | WRITABLE,
                deadline: None,
            })
            .collect();
        let mut outputs: Vec<Option<F::Output>> = tasks.iter().map(|_| None).collect();
        let mut left = tasks.len();
        let mut runnable: Vec<usize> = (0..tasks.len()).collect();
        let mut deadlines: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
        let _installed = waits::install(self.poll.registry().try_clone()?);
        let mut cx = Context::from_waker(Waker::noop());
        let mut now: Option<Instant> = None;
        while left > 0 {
            for i in runnable.drain(..) {
                let task = &mut tasks[i];
                task.queued = false;
                let Some(fut) = task.fut.as_mut() else {
                    continue;
                };
                waits::begin(i, std::mem::take(&mut task.ready), now);
                let polled = fut.as_mut().poll(&mut cx);
                let armed = waits::end();
                task.ready = armed.ready;
                if let Poll::Ready(out) = polled {
                    outputs[i] = Some(out);
                    task.fut = None;
                    task.deadline = None;
                    left -= 1;
                    continue;
                }
                assert!(
                    armed.io || armed.deadline.is_some(),
                    "load thread task {i} is pending with neither a socket nor a deadline to wake it"
                );
                if armed.deadline != task.deadline {
                    task.deadline = armed.deadline;
                    if let Some(at) = armed.deadline {
                        deadlines.push(Reverse((at, i)));
                    }
                }
            }
            if left == 0 {
                break;
            }
            now = None;
            // Tasks whose deadline has come; entries of deadlines given up are dropped.
            let mut next = None;
            while let Some(&Reverse((at, i))) = deadlines.peek() {
                if tasks[i].deadline != Some(at) {
                    deadlines.pop();
                    continue;
                }
                let t = *now.get_or_insert_with(Instant::now);
                if at > t {
                    next = Some((at, t));
                    break;
                }
                deadlines.pop();
                let task = &mut tasks[i];
                task.deadline = None;
                if !task.queued {
                    task.queued = true;
                    runnable.push(i);
                }
            }
            if !runnable.is_empty() {
                continue;
            }
            if let Some((at, t)) = next {
                self.alarm.arm(at, t)?;
            }
            match self.poll.poll(&mut self.events, None) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            now = None;
            for ev in self.events.iter() {
                let token = ev.token();
                if token == ALARM {
                    self.alarm.fired();
                    continue;
                }
                let Some(task) = tasks.get_mut(token.0) else {
                    continue;
                };
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    task.ready |= READABLE;
                }
                if ev.is_read_closed() || ev.is_error() {
                    task.ready |= READ_CLOSED;
                }
                if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
                    task.ready |= WRITABLE;
                }
                if !task.queued && task.fut.is_some() {
                    task.queued = true;
                    runnable.push(token.0);
                }
            }
        }
        Ok(outputs
            .into_iter()
            .map(|o| o.expect("every task finished"))
            .collect())
    }
}

#[cfg(test)]
mod tests;
