//! A socket of a measured loop (the pgbench engine's clients, the TPC-C-like terminals, the
//! AS3AP-like users), driven by its load thread's executor
//! ([`crate::engine::executor`]) instead of a tokio runtime: a non-blocking `mio` TCP or Unix
//! stream, registered once with the thread's poller (edge-triggered, readable and writable)
//! under the token of the client's task. A read or a write that would block returns `Pending`
//! and tells the executor the task waits on its socket.
//!
//! After a read that drained the socket (it returned less than it asked for) or one that
//! would block, the socket is not read again until the poller reports it readable, so a
//! client waiting for a reply goes straight to the poller, without a read system call that
//! could only block. Once the poller reported the peer's end of stream (or an error), the
//! socket is always read: that edge comes once, and a short read of the last bytes does not
//! consume it. Bytes are read into a buffer of the connection's own, initialized once,
//! and copied to the connection's input: only what arrived is copied.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream as StdUnix;
use std::task::Poll;

use bytes::BytesMut;
use mio::Token;
use mio::event::Source;
use mio::net::{TcpStream, UnixStream};

use crate::engine::executor::{
    READ_CLOSED, READABLE, WRITABLE, io_pending, register, take_readiness,
};

/// What one read asks the socket for.
const READ_CHUNK: usize = 16 * 1024;

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn source(&mut self) -> &mut dyn Source {
        match self {
            Sock::Tcp(s) => s,
            Sock::Unix(s) => s,
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
}

/// A connected socket registered with the load thread's poller.
pub struct Polled {
    sock: Sock,
    token: Token,
    /// The socket may have bytes to read (false once a read drained it).
    readable: bool,
    /// The socket may take bytes (false once a write would block).
    writable: bool,
    /// The peer's end of stream or an error was reported: reads never wait.
    read_closed: bool,
    scratch: Box<[u8]>,
}

impl std::fmt::Debug for Polled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.sock {
            Sock::Tcp(_) => "tcp",
            Sock::Unix(_) => "unix",
        };
        f.debug_struct("Polled")
            .field("kind", &kind)
            .field("token", &self.token)
            .finish()
    }
}

impl Polled {
    /// A connected TCP socket, made non-blocking (requests go out at once, as libpq's).
    /// Registered under the current task's token: call it from a task of the executor.
    pub fn tcp(s: std::net::TcpStream) -> io::Result<Polled> {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        Polled::new(Sock::Tcp(TcpStream::from_std(s)))
    }

    /// A connected Unix socket, made non-blocking and registered as [`Polled::tcp`].
    pub fn unix(s: StdUnix) -> io::Result<Polled> {
        s.set_nonblocking(true)?;
        Polled::new(Sock::Unix(UnixStream::from_std(s)))
    }

    fn new(mut sock: Sock) -> io::Result<Polled> {
        let token = register(sock.source())?;
        Ok(Polled {
            sock,
            token,
            readable: true,
            writable: true,
            read_closed: false,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
        })
    }

    /// The socket would block: the task waits for the poller.
    fn block(&mut self) -> Poll<io::Result<()>> {
        match io_pending(self.sock.source(), &mut self.token) {
            Ok(()) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    /// Appends what the socket holds to `buf` (at least one byte, or 0 at the end of the
    /// stream).
    pub async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        std::future::poll_fn(|_| {
            loop {
                if !self.readable {
                    if !take_readiness(READABLE) {
                        return self.block().map_ok(|()| 0);
                    }
                    self.readable = true;
                }
                match self.sock.read(&mut self.scratch) {
                    Ok(n) => {
                        self.read_closed |= take_readiness(READ_CLOSED);
                        self.readable = n == self.scratch.len() || self.read_closed;
                        buf.extend_from_slice(&self.scratch[..n]);
                        return Poll::Ready(Ok(n));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        })
        .await
    }

    /// Sends all of `data`.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        let mut sent = 0;
        std::future::poll_fn(|_| {
            while sent < data.len() {
                if !self.writable {
                    if !take_readiness(WRITABLE) {
                        return self.block();
                    }
                    self.writable = true;
                }
                match self.sock.write(&data[sent..]) {
                    Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            Poll::Ready(Ok(()))
        })
        .await
    }

    /// Closes the sending side.
    pub fn shutdown(&self) -> io::Result<()> {
        match &self.sock {
            Sock::Tcp(s) => s.shutdown(Shutdown::Write),
            Sock::Unix(s) => s.shutdown(Shutdown::Write),
        }
    }
}
