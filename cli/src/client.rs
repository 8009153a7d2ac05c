//! The connection to the coordinator and the CLI's error type, shared by [`crate::commands`]
//! and [`crate::progress`].

use blocklab_daemon::security::{Bearer, ClientAuth, is_loopback_target};
use blocklab_proto::v1::control_client::ControlClient;
use tonic::codegen::{Body, Bytes, InterceptedService, StdError};
use tonic::transport::Channel;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: {error}")]
    Spec {
        path: String,
        error: blocklab_spec::SpecError,
    },
    #[error("{error} (set --coordinator or BLOCKLAB_COORDINATOR; with TLS, --ca-cert)")]
    Connect {
        addr: String,
        error: blocklab_daemon::security::SecurityError,
    },
    #[error(
        "refusing to send the API token to {addr} over plain http: it is not a loopback address; \
         give the coordinator's CA with --ca-cert FILE (or BLOCKLAB_CA_CERT) to connect with \
         https, or run without a token (--token-file, BLOCKLAB_TOKEN)"
    )]
    PlaintextToken { addr: String },
    /// A call that failed: the coordinator's message once (not the gRPC code's wording), and
    /// the next step where one helps.
    #[error("{message}{hint}")]
    Rpc { message: String, hint: &'static str },
    #[error(
        "{given:?} is not a job id: give the job's id or at least its first 4 characters \
         (see `blocklab jobs`)"
    )]
    NotAJobId { given: String },
    #[error("no job starts with {prefix}, see `blocklab jobs`")]
    NoSuchJob { prefix: String },
    #[error(
        "{prefix} is the start of {} jobs' ids; give more of the id:\n{}",
        .candidates.len(),
        .candidates.join("\n")
    )]
    AmbiguousJob {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error("run: this job has runs 1 to {runs}, not {given}")]
    NoSuchRun { runs: u32, given: u32 },
    /// Reading a repository's history (`[commits]`, `bisect`) failed.
    #[error("git {what}: {message}")]
    Git { what: String, message: String },
    #[error("bisect: {0}")]
    Bisect(String),
}

impl From<tonic::Status> for CliError {
    fn from(status: tonic::Status) -> Self {
        let message = match status.message() {
            "" => status.code().description().to_string(),
            m => m.to_string(),
        };
        // A status with a source was made here, by the transport: no coordinator answered.
        let unreached = status.code() == tonic::Code::Unavailable
            && std::error::Error::source(&status).is_some();
        let hint = match status.code() {
            tonic::Code::NotFound => "; see `blocklab jobs`",
            _ if unreached => {
                " (is the coordinator up? set --coordinator or BLOCKLAB_COORDINATOR; with TLS, \
                 --ca-cert)"
            }
            _ => "",
        };
        CliError::Rpc { message, hint }
    }
}

/// A Control call's answer, or its failure as a [`CliError`].
pub fn answer<T>(reply: Result<tonic::Response<T>, tonic::Status>) -> Result<T, CliError> {
    reply
        .map(tonic::Response::into_inner)
        .map_err(CliError::from)
}

/// The CLI's client: TLS when a CA is given, the API token on every request.
pub type Client = ControlClient<InterceptedService<Channel, Bearer>>;

/// Any transport a [`ControlClient`] can run on (a plain or an authenticated channel).
pub trait Transport:
    tonic::client::GrpcService<
        tonic::body::Body,
        Error: Into<StdError>,
        ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
    >
{
}

impl<T> Transport for T where
    T: tonic::client::GrpcService<
            tonic::body::Body,
            Error: Into<StdError>,
            ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
        >
{
}

/// Connects to the coordinator with the shared client endpoint (TLS, connect timeout). A token
/// goes over plain http only to a loopback address. Given several addresses (separated by
/// commas), connects to the one that leads (`GetLeader`); while none leads, to the first that
/// answers (a standby answers reads and refuses writes, naming the leader).
pub async fn connect(addrs: &str, auth: &ClientAuth) -> Result<Client, CliError> {
    let list = blocklab_daemon::fleet::coordinator_addresses(addrs);
    if list.len() == 1 {
        return connect_one(&list[0], auth).await;
    }
    let mut first: Option<Client> = None;
    let mut last_error = None;
    for addr in &list {
        match connect_one(addr, auth).await {
            Ok(mut c) => match c.get_leader(blocklab_proto::v1::GetLeaderRequest {}).await {
                Ok(r) if r.get_ref().leading => return Ok(c),
                Ok(_) => {
                    first.get_or_insert(c);
                }
                Err(e) => last_error = Some(CliError::from(e)),
            },
            Err(e) => last_error = Some(e),
        }
    }
    match (first, last_error) {
        (Some(c), _) => Ok(c),
        (None, Some(e)) => Err(e),
        (None, None) => connect_one(addrs, auth).await,
    }
}

async fn connect_one(addr: &str, auth: &ClientAuth) -> Result<Client, CliError> {
    if auth.token.is_some() && auth.tls.is_none() && !is_loopback_target(addr) {
        return Err(CliError::PlaintextToken {
            addr: addr.to_string(),
        });
    }
    let channel = blocklab_daemon::security::connect_channel(addr, auth.tls.as_ref())
        .await
        .map_err(|error| CliError::Connect {
            addr: addr.to_string(),
            error,
        })?;
    Ok(
        ControlClient::with_interceptor(channel, Bearer::new(auth.token.as_ref()))
            .max_decoding_message_size(blocklab_daemon::security::CLIENT_MAX_MESSAGE_BYTES),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_daemon::security::Secret;

    #[tokio::test]
    async fn a_token_goes_over_plain_http_only_to_loopback() {
        let auth = ClientAuth {
            tls: None,
            token: Some(Secret::new("api-token-0123456789abcdef", "test").expect("token")),
        };
        for addr in ["10.0.0.1:7400", "http://192.0.2.7:7400", "lab1:7400"] {
            let e = connect(addr, &auth).await.expect_err(addr).to_string();
            assert!(
                e.starts_with(&format!(
                    "refusing to send the API token to {addr} over plain http"
                )),
                "{e}"
            );
            assert!(e.contains("--ca-cert") && e.contains("https"), "{e}");
            assert!(!e.contains("api-token-0123456789abcdef"), "{e}");
        }
        // Loopback is allowed: the refusal is a connection error, not the token check.
        let e = connect("127.0.0.1:1", &auth)
            .await
            .expect_err("nothing listens");
        assert!(matches!(e, CliError::Connect { .. }), "{e}");
        // Without a token there is nothing to refuse.
        let e = connect("127.0.0.1:1", &ClientAuth::default()).await.err();
        assert!(matches!(e, Some(CliError::Connect { .. })), "{e:?}");
    }
}
