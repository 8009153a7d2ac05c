//! The connection to the coordinator and the CLI's error type, shared by [`crate::commands`]
//! and [`crate::progress`].

use blocklab_daemon::security::{Bearer, ClientAuth};
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
    #[error("{}", .0.message())]
    Rpc(#[from] tonic::Status),
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

/// Connects to the coordinator with the shared client endpoint (TLS, connect timeout).
pub async fn connect(addr: &str, auth: &ClientAuth) -> Result<Client, CliError> {
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
