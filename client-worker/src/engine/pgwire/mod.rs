//! The measured loop's own PostgreSQL connection: frames encoded and decoded with
//! `postgres-protocol`, one write buffer and one read buffer per connection reused for every
//! request, no connection task and no channel between the client and its socket. Each read
//! takes every byte the socket has (a short read also tells the runtime the socket is
//! drained, so the next wait goes straight to the poller).
//!
//! A connection's socket is driven by a load thread's executor ([`polled`]: the pgbench
//! engine's clients, the TPC-C-like terminals and the AS3AP-like users); the unit tests feed
//! the protocol code through a tokio socket pair instead.
//!
//! [`startup`] opens the connection (TCP or a Unix socket, trust, password, md5 or
//! SCRAM-SHA-256); [`request`] encodes a script's SQL commands; [`query`] runs the workload
//! drivers' prepared statements.

pub mod polled;
pub mod query;
pub mod request;
pub mod startup;

use bytes::{Buf, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::{ErrorFields, Header, Message};
use postgres_protocol::message::frontend;
#[cfg(test)]
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What one receive asks the socket for at least.
const READ_CHUNK: usize = 16 * 1024;

/// SQLSTATE of a serialization failure and of a deadlock.
pub const SERIALIZATION_FAILURE: &str = "40001";
pub const DEADLOCK_DETECTED: &str = "40P01";

/// An error of a command: the server's (an ErrorResponse) or the connection's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    #[error("{severity}: {message} (SQLSTATE {code}){}", detail.as_ref().map(|d| format!("; {d}")).unwrap_or_default())]
    Db {
        severity: String,
        code: String,
        message: String,
        detail: Option<String>,
        /// HINT and CONTEXT, when the server sent either.
        more: Option<Box<ErrorMore>>,
    },
    /// The connection failed or closed; it is broken from now on.
    #[error("{0}")]
    Connection(String),
}

/// The rarer fields of a server error (boxed: errors travel in `Result`s of the hot path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMore {
    pub hint: Option<String>,
    pub context: Option<String>,
}

impl SqlError {
    /// The SQLSTATE of a server error.
    pub fn code(&self) -> Option<&str> {
        match self {
            SqlError::Db { code, .. } => Some(code),
            SqlError::Connection(_) => None,
        }
    }

    /// A serialization failure or a deadlock: pgbench may retry these.
    pub fn is_retryable(&self) -> bool {
        matches!(self.code(), Some(SERIALIZATION_FAILURE | DEADLOCK_DETECTED))
    }

    pub(crate) fn from_fields(mut fields: ErrorFields<'_>) -> SqlError {
        let (mut severity, mut code, mut message, mut detail, mut hint, mut context) = (
            String::new(),
            String::new(),
            String::new(),
            None,
            None,
            None,
        );
        while let Ok(Some(f)) = fields.next() {
            let v = String::from_utf8_lossy(f.value_bytes()).into_owned();
            match f.type_() {
                b'S' => severity = v,
                b'C' => code = v,
                b'M' => message = v,
                b'D' => detail = Some(v),
                b'H' => hint = Some(v),
                b'W' => context = Some(v),
                _ => {}
            }
        }
        SqlError::Db {
            severity,
            code,
            message,
            detail,
            more: (hint.is_some() || context.is_some())
                .then(|| Box::new(ErrorMore { hint, context })),
        }
    }

    /// A server error as libpq's PQresultErrorMessage gives it (what pgbench prints with
    /// `--verbose-errors`): `SEVERITY:  message`, then DETAIL, HINT and CONTEXT lines; a
    /// connection error as it reads.
    pub fn libpq_message(&self) -> String {
        match self {
            SqlError::Db {
                severity,
                message,
                detail,
                more,
                ..
            } => {
                let mut s = format!("{severity}:  {message}");
                let (hint, context) = more
                    .as_deref()
                    .map_or((&None, &None), |m| (&m.hint, &m.context));
                for (label, field) in [("DETAIL", detail), ("HINT", hint), ("CONTEXT", context)] {
                    if let Some(text) = field {
                        s.push_str(&format!("\n{label}:  {text}"));
                    }
                }
                s
            }
            SqlError::Connection(m) => m.clone(),
        }
    }
}

fn io_error(e: &std::io::Error) -> SqlError {
    SqlError::Connection(format!("error communicating with the server: {e}"))
}

/// A socket to the server.
#[derive(Debug)]
pub enum Stream {
    /// One end of a socket pair (the unit tests').
    #[cfg(test)]
    Unix(tokio::net::UnixStream),
    /// A socket of a load thread's executor.
    Polled(polled::Polled),
}

/// One connection after its startup: the socket and its two buffers.
#[derive(Debug)]
pub struct Conn {
    stream: Stream,
    /// Requests not sent yet.
    pub out: BytesMut,
    input: BytesMut,
    broken: bool,
}

impl Conn {
    pub(crate) fn new(stream: Stream) -> Conn {
        Conn {
            stream,
            out: BytesMut::with_capacity(4096),
            input: BytesMut::with_capacity(READ_CHUNK),
            broken: false,
        }
    }

    /// The connection failed or the server closed it.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    fn fail(&mut self, e: SqlError) -> SqlError {
        self.broken = true;
        e
    }

    /// Sends everything in the write buffer.
    pub async fn flush(&mut self) -> Result<(), SqlError> {
        if self.broken {
            self.out.clear();
            return Err(SqlError::Connection("the connection is closed".into()));
        }
        let r = match &mut self.stream {
            #[cfg(test)]
            Stream::Unix(s) => s.write_all(&self.out).await,
            Stream::Polled(s) => s.write_all(&self.out).await,
        };
        self.out.clear();
        r.map_err(|e| {
            let e = io_error(&e);
            self.fail(e)
        })
    }

    /// The header of the next message, once the whole message is in the buffer (reading
    /// as much as the socket holds while it is not). The message stays in the buffer:
    /// [`Conn::skip`] drops it undecoded, [`Conn::next`] decodes it.
    pub async fn header(&mut self) -> Result<Header, SqlError> {
        loop {
            match Header::parse(&self.input) {
                Ok(Some(h)) if self.input.len() > h.len() as usize => return Ok(h),
                Ok(_) => {}
                Err(e) => {
                    let e = SqlError::Connection(format!("invalid message from the server: {e}"));
                    return Err(self.fail(e));
                }
            }
            if self.broken {
                return Err(SqlError::Connection("the connection is closed".into()));
            }
            self.input.reserve(READ_CHUNK);
            let r = match &mut self.stream {
                #[cfg(test)]
                Stream::Unix(s) => s.read_buf(&mut self.input).await,
                Stream::Polled(s) => s.read_buf(&mut self.input).await,
            };
            match r {
                Ok(0) => {
                    let e =
                        SqlError::Connection("server closed the connection unexpectedly".into());
                    return Err(self.fail(e));
                }
                Ok(_) => {}
                Err(e) => {
                    let e = io_error(&e);
                    return Err(self.fail(e));
                }
            }
        }
    }

    /// Drops the message `header` heads, undecoded.
    pub fn skip(&mut self, header: Header) {
        self.input.advance(header.len() as usize + 1);
    }

    /// The next message from the server, decoded.
    pub async fn next(&mut self) -> Result<Message, SqlError> {
        self.header().await?;
        match Message::parse(&mut self.input) {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err(SqlError::Connection("incomplete message".into())),
            Err(e) => {
                let e = SqlError::Connection(format!("invalid message from the server: {e}"));
                Err(self.fail(e))
            }
        }
    }

    /// Sends a Terminate and closes the socket.
    pub async fn close(mut self) {
        if self.broken {
            return;
        }
        self.out.clear();
        frontend::terminate(&mut self.out);
        let _ = self.flush().await;
        let _ = match &mut self.stream {
            #[cfg(test)]
            Stream::Unix(s) => s.shutdown().await,
            Stream::Polled(s) => s.shutdown(),
        };
    }
}
