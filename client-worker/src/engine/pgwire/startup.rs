//! Opening a measured connection from the run's conninfo: the first host that answers
//! (TCP, `hostaddr` if given, or a Unix socket directory), the startup message, then
//! trust, cleartext, md5 or SCRAM-SHA-256 authentication, up to the first ReadyForQuery.
//! TLS is not offered (`sslmode=require` is refused), as the fleet's loopback and LAN
//! benchmarks run without it.

use std::time::Duration;

use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::{Host, SslMode};

use super::{Conn, SqlError, Stream};
use crate::conn::Target;

/// Connects to `target` within its connect timeout.
pub async fn connect(target: &Target) -> Result<Conn, SqlError> {
    let timeout = target
        .config
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(15));
    match tokio::time::timeout(timeout, connect_any(target)).await {
        Ok(r) => r,
        Err(_) => Err(SqlError::Connection("timeout expired".into())),
    }
}

async fn connect_any(target: &Target) -> Result<Conn, SqlError> {
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
    let mut last = SqlError::Connection("no host to connect to".into());
    for i in 0..n {
        let port = ports
            .get(i)
            .or_else(|| ports.first())
            .copied()
            .unwrap_or(5432);
        let stream = match (addrs.get(i), hosts.get(i)) {
            (Some(ip), _) => TcpStream::connect((*ip, port)).await.map(tcp),
            (None, Some(Host::Tcp(h))) => TcpStream::connect((h.as_str(), port)).await.map(tcp),
            (None, Some(Host::Unix(dir))) => {
                UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))
                    .await
                    .map(Stream::Unix)
            }
            (None, None) => TcpStream::connect(("localhost", port)).await.map(tcp),
        };
        match stream {
            Ok(s) => match startup(Conn::new(s), target).await {
                Ok(conn) => return Ok(conn),
                Err(e) => last = e,
            },
            Err(e) => last = SqlError::Connection(format!("error connecting to server: {e}")),
        }
    }
    Err(last)
}

fn tcp(s: TcpStream) -> Stream {
    // As libpq: requests go out at once.
    let _ = s.set_nodelay(true);
    Stream::Tcp(s)
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
