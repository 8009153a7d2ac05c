use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use super::{Executor, sleep_until, within};
use crate::engine::pgwire::polled::Polled;

#[test]
fn a_task_waiting_on_its_socket_resumes_when_the_peer_writes() {
    let mut ex = Executor::new().unwrap();
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        theirs.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        theirs.write_all(b", world").unwrap();
        theirs
    });
    let out = ex
        .run([async move {
            let mut s = Polled::unix(ours).unwrap();
            let mut buf = BytesMut::new();
            while buf.len() < 12 {
                assert!(s.read_buf(&mut buf).await.unwrap() > 0);
            }
            s.write_all(b"bye").await.unwrap();
            buf
        }])
        .unwrap();
    assert_eq!(&out[0][..], b"hello, world");
    let mut theirs = writer.join().unwrap();
    let mut reply = [0u8; 3];
    std::io::Read::read_exact(&mut theirs, &mut reply).unwrap();
    assert_eq!(&reply, b"bye");
}

#[test]
fn the_end_of_stream_after_the_last_bytes_is_seen() {
    // The bytes and the end of stream come in one edge, while the task sleeps: the short
    // read of the bytes must not make the socket wait for another edge.
    let mut ex = Executor::new().unwrap();
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        theirs.write_all(b"last words").unwrap();
    });
    let out = ex
        .run([async move {
            let mut s = Polled::unix(ours).unwrap();
            let mut buf = BytesMut::new();
            let t = Instant::now();
            // Nothing yet: the socket would block.
            assert!(within(t, s.read_buf(&mut buf)).await.is_none());
            sleep_until(t + Duration::from_millis(60)).await;
            let read_all = async { while s.read_buf(&mut buf).await.unwrap() > 0 {} };
            let ended = within(Instant::now() + Duration::from_secs(5), read_all).await;
            (ended.is_some(), buf)
        }])
        .unwrap();
    writer.join().unwrap();
    let (ended, buf) = &out[0];
    assert!(ended, "the end of stream was not seen");
    assert_eq!(&buf[..], b"last words");
}

#[test]
fn a_deadline_wakes_a_sleeping_task_on_time() {
    let mut ex = Executor::new().unwrap();
    // Several tasks, each sleeping a few times for a fraction of a millisecond more than
    // whole milliseconds (where a millisecond poller timeout would be late by the rest).
    let late = ex
        .run((0..4u64).map(|i| async move {
            let mut late = Vec::new();
            for k in 0..5u64 {
                let at = Instant::now() + Duration::from_micros(2_300 + 170 * i + 50 * k);
                sleep_until(at).await;
                late.push(Instant::now() - at);
            }
            late
        }))
        .unwrap();
    let mut all: Vec<Duration> = late.into_iter().flatten().collect();
    all.sort();
    assert!(all.len() == 20);
    // Never early; on time as a rule even on a busy machine.
    assert!(
        all[all.len() / 2] < Duration::from_micros(500),
        "median lateness {:?}",
        all[all.len() / 2]
    );
    assert!(all[all.len() - 1] < Duration::from_millis(200), "{all:?}");
}

#[test]
fn a_task_that_waits_on_a_socket_and_a_deadline_ends_at_the_deadline() {
    let mut ex = Executor::new().unwrap();
    let (ours, _theirs) = UnixStream::pair().unwrap();
    let out = ex
        .run([async move {
            let mut s = Polled::unix(ours).unwrap();
            let mut buf = BytesMut::new();
            let t = Instant::now();
            let r = within(t + Duration::from_millis(20), s.read_buf(&mut buf)).await;
            (r.is_none(), t.elapsed())
        }])
        .unwrap();
    let (timed_out, took) = out[0];
    assert!(timed_out);
    assert!(took >= Duration::from_millis(20), "{took:?}");
}

#[test]
fn tasks_finish_in_any_order_and_outputs_keep_theirs() {
    let mut ex = Executor::new().unwrap();
    let out = ex
        .run((0..5u64).map(|i| async move {
            sleep_until(Instant::now() + Duration::from_millis(10 * (5 - i))).await;
            i
        }))
        .unwrap();
    assert_eq!(out, vec![0, 1, 2, 3, 4]);
    // The executor runs again after a run.
    assert_eq!(ex.run([async { 7 }]).unwrap(), vec![7]);
}

#[test]
fn a_socket_passed_to_another_task_wakes_that_task() {
    let mut ex = Executor::new().unwrap();
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    // Opened by the first task of one run (token 0), read by the second of the next.
    let mut opened = ex
        .run([async move { Some(Polled::unix(ours).unwrap()) }])
        .unwrap();
    let s = opened.pop().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        theirs.write_all(b"ping").unwrap();
        theirs
    });
    let out = ex
        .run([None, s].into_iter().map(|s| async move {
            let Some(mut s) = s else {
                sleep_until(Instant::now() + Duration::from_millis(5)).await;
                return BytesMut::new();
            };
            let mut buf = BytesMut::new();
            while buf.len() < 4 {
                s.read_buf(&mut buf).await.unwrap();
            }
            buf
        }))
        .unwrap();
    drop(writer.join().unwrap());
    assert_eq!(&out[1][..], b"ping");
}

#[test]
#[should_panic(expected = "pending with neither a socket nor a deadline")]
fn a_task_pending_on_nothing_is_caught() {
    let mut ex = Executor::new().unwrap();
    let _ = ex.run([std::future::pending::<()>()]);
}

#[test]
fn a_socket_outside_the_executor_is_refused() {
    let (ours, _theirs) = UnixStream::pair().unwrap();
    assert!(Polled::unix(ours).is_err());
}
