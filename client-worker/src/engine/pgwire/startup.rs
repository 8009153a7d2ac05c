//! Opening a measured connection from the run's conninfo: the first host that answers
//! (TCP, `hostaddr` if given, or a Unix socket directory), the startup message, then
//! trust, cleartext, md5 or SCRAM-SHA-256 authentication, up to the first ReadyForQuery.
//! TLS is not offered (`sslmode=require` is refused), as the fleet's loopback and LAN
//! benchmarks run without it.
//!
//! [`connect_polled`] opens one for a load thread's executor (the pgbench engine's clients,
//! the TPC-C-like terminals, the AS3AP-like users): the socket connects blocking, as libpq's
//! connect does in pgbench, then turns non-blocking and the startup runs on the executor.
//! It gives up after the conninfo's connect timeout (15 s if none).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use tokio_postgres::config::{Host, SslMode};

use super::polled::Polled;
use super::{Conn, SqlError, Stream};
use crate::conn::Target;
use crate::engine::executor::within;

fn connect_timeout(target: &Target) -> Duration {
    target
        .config
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(15))
}

fn timed_out() -> SqlError {
    SqlError::Connection("timeout expired".into())
}

/// Where one host of the conninfo is reached.
enum Addr {
    Ip(IpAddr, u16),
    Name(String, u16),
    Socket(PathBuf),
}

/// The conninfo's hosts in order.
fn addresses(target: &Target) -> Result<Vec<Addr>, SqlError> {
    let c = &target.config;
    if c.get_ssl_mode() == SslMode::Require {
        return Err(SqlError::Connection(
            "sslmode=require is not supported by the load engine".into(),
        ));
    }
    let hosts = c.get_hosts();
    let ports = c.get_ports();
    let addrs = c.get_hostaddrs();
    let n = hosts.len().max(addrs.len()).max(1);
    Ok((0..n)
        .map(|i| {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match (addrs.get(i), hosts.get(i)) {
                (Some(ip), _) => Addr::Ip(*ip, port),
                (None, Some(Host::Tcp(h))) => Addr::Name(h.clone(), port),
                (None, Some(Host::Unix(dir))) => Addr::Socket(dir.join(format!(".s.PGSQL.{port}"))),
                (None, None) => Addr::Name("localhost".into(), port),
            }
        })
        .collect())
}

fn no_host() -> SqlError {
    SqlError::Connection("no host to connect to".into())
}

fn connect_error(e: &std::io::Error) -> SqlError {
    SqlError::Connection(format!("error connecting to server: {e}"))
}

/// Connects to `target` within its connect timeout, from a task of the load thread's
/// executor (the socket is registered with the thread's poller).
pub async fn connect_polled(target: &Target) -> Result<Conn, SqlError> {
    let deadline = Instant::now() + connect_timeout(target);
    let mut last = no_host();
    for addr in addresses(target)? {
        match connect_blocking(&addr, deadline) {
            Ok(s) => match within(deadline, startup(Conn::new(Stream::Polled(s)), target)).await {
                Some(Ok(conn)) => return Ok(conn),
                Some(Err(e)) => last = e,
                None => return Err(timed_out()),
            },
            Err(_) if Instant::now() >= deadline => return Err(timed_out()),
            Err(e) => last = connect_error(&e),
        }
    }
    Err(last)
}

/// A socket connected to `addr` before `deadline`, blocking the thread meanwhile.
fn connect_blocking(addr: &Addr, deadline: Instant) -> std::io::Result<Polled> {
    let resolved: Vec<SocketAddr> = match addr {
        Addr::Ip(ip, port) => vec![SocketAddr::new(*ip, *port)],
        Addr::Name(h, port) => (h.as_str(), *port).to_socket_addrs()?.collect(),
        Addr::Socket(path) => return Polled::unix(std::os::unix::net::UnixStream::connect(path)?),
    };
    let mut last = std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "the host name resolves to no address",
    );
    for a in resolved {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        match std::net::TcpStream::connect_timeout(&a, left) {
            Ok(s) => return Polled::tcp(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn encode(r: std::io::Result<()>) -> Result<(), SqlError> {
    r.map_err(|e| SqlError::Connection(format!("cannot encode a startup message: {e}")))
}

async fn startup(mut conn: Conn, target: &Target) -> Result<Conn, SqlError> {
    let c = &target.config;
    let user = c.get_user().unwrap_or_default();
    let mut params: Vec<(&str, &str)> = vec![("user", user), ("client_encoding", "UTF8")];
    if let Some(db) = c.get_dbname() {
        params.push(("database", db));
    }
    if let Some(app) = c.get_application_name() {
        params.push(("application_name", app));
    }
    if let Some(opts) = c.get_options() {
        params.push(("options", opts));
    }
    encode(frontend::startup_message(params, &mut conn.out))?;
    conn.flush().await?;
    authenticate(&mut conn, user.as_bytes(), c.get_password()).await?;
    loop {
        match conn.next().await? {
            Message::ReadyForQuery(_) => return Ok(conn),
            Message::ErrorResponse(b) => return Err(SqlError::from_fields(b.fields())),
            _ => {}
        }
    }
}

fn no_password() -> SqlError {
    SqlError::Connection("the server asked for a password and none was given".into())
}

async fn authenticate(
    conn: &mut Conn,
    user: &[u8],
    password: Option<&[u8]>,
) -> Result<(), SqlError> {
    let mut scram: Option<ScramSha256> = None;
    loop {
        match conn.next().await? {
            Message::AuthenticationOk => return Ok(()),
            Message::AuthenticationCleartextPassword => {
                let pw = password.ok_or_else(no_password)?;
                encode(frontend::password_message(pw, &mut conn.out))?;
            }
            Message::AuthenticationMd5Password(b) => {
                let pw = password.ok_or_else(no_password)?;
                let hash = md5_hash(user, pw, b.salt());
                encode(frontend::password_message(hash.as_bytes(), &mut conn.out))?;
            }
            Message::AuthenticationSasl(b) => {
                let mut mechanisms = b.mechanisms();
                let mut offered = false;
                while let Ok(Some(m)) = fallible_iterator::FallibleIterator::next(&mut mechanisms) {
                    offered |= m == SCRAM_SHA_256;
                }
                if !offered {
                    return Err(SqlError::Connection(
                        "the server offers no SASL mechanism the load engine supports".into(),
                    ));
                }
                let pw = password.ok_or_else(no_password)?;
                let s = ScramSha256::new(pw, ChannelBinding::unsupported());
                encode(frontend::sasl_initial_response(
                    SCRAM_SHA_256,
                    s.message(),
                    &mut conn.out,
                ))?;
                scram = Some(s);
            }
            Message::AuthenticationSaslContinue(b) => {
                let s = scram.as_mut().ok_or_else(unexpected)?;
                s.update(b.data()).map_err(scram_error)?;
                encode(frontend::sasl_response(s.message(), &mut conn.out))?;
            }
            Message::AuthenticationSaslFinal(b) => {
                let s = scram.as_mut().ok_or_else(unexpected)?;
                s.finish(b.data()).map_err(scram_error)?;
                continue;
            }
            Message::ErrorResponse(b) => return Err(SqlError::from_fields(b.fields())),
            Message::NoticeResponse(_) | Message::ParameterStatus(_) => continue,
            _ => return Err(unexpected()),
        }
        conn.flush().await?;
    }
}

fn unexpected() -> SqlError {
    SqlError::Connection("unexpected message during authentication".into())
}

fn scram_error(e: std::io::Error) -> SqlError {
    SqlError::Connection(format!("SCRAM authentication failed: {e}"))
}
