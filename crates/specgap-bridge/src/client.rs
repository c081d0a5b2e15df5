//! The in-sandbox side of the socket: [`BridgeClient`] sends one request per connection and
//! reads its response line. Used by the commands and the MCP server.

use std::io::{self, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde_json::Value;
use specgap_protocol::event::ToolSpec;

use crate::endpoint::{LineError, read_line};
use crate::wire::{HarnessTool, MAX_RESPONSE_BYTES, Request, Response, SOCKET_ENV, TOKEN_ENV};

/// Why the harness could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The harness did not set up the bridge for this process.
    #[error("the harness tools are not set up here: {0} is not set (run this inside a specgap episode)")]
    NotConfigured(&'static str),
    /// Nothing listens at the socket: the episode has ended or was never served here.
    #[error("the specgap harness cannot be reached at {}; the episode has probably ended", socket.display())]
    Unreachable {
        /// The socket path.
        socket: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The connection broke before an answer came.
    #[error("the specgap harness closed the connection without answering; the episode has probably ended")]
    Gone(#[source] Option<io::Error>),
    /// The answer was not a response line.
    #[error("the specgap harness sent something that is not a bridge response: {0}")]
    BadResponse(String),
}

/// A client of one episode's bridge socket.
#[derive(Debug, Clone)]
pub struct BridgeClient {
    socket: PathBuf,
    token: String,
}

impl BridgeClient {
    /// A client of the socket at `socket`, sending `token`.
    pub fn new(socket: impl Into<PathBuf>, token: impl Into<String>) -> Self {
        BridgeClient { socket: socket.into(), token: token.into() }
    }

    /// The client the harness configured through [`SOCKET_ENV`] and [`TOKEN_ENV`].
    ///
    /// # Errors
    /// [`ClientError::NotConfigured`] naming the missing variable.
    pub fn from_env() -> Result<Self, ClientError> {
        let socket = std::env::var_os(SOCKET_ENV).filter(|v| !v.is_empty()).ok_or(ClientError::NotConfigured(SOCKET_ENV))?;
        let token = std::env::var(TOKEN_ENV).ok().filter(|v| !v.is_empty()).ok_or(ClientError::NotConfigured(TOKEN_ENV))?;
        Ok(BridgeClient::new(socket, token))
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The tools the harness offers now.
    ///
    /// # Errors
    /// [`ClientError`] when the harness cannot be asked or refuses.
    pub fn tools(&self) -> Result<Vec<ToolSpec>, ClientError> {
        let response = self.round_trip(&Request::tools(&self.token))?;
        if response.is_error {
            return Err(ClientError::BadResponse(response.text));
        }
        response.tools.ok_or_else(|| ClientError::BadResponse("the tool list is missing".into()))
    }

    /// Calls `tool` with `arguments` and waits for the harness's answer (which may take as
    /// long as the owner takes to reply).
    ///
    /// # Errors
    /// [`ClientError`] when the harness cannot be reached or answers nonsense; a refusal is an
    /// `Ok` response with `is_error`.
    pub fn call(&self, tool: HarnessTool, arguments: Value) -> Result<Response, ClientError> {
        self.round_trip(&Request::call(&self.token, tool.name(), arguments))
    }

    fn round_trip(&self, request: &Request) -> Result<Response, ClientError> {
        let mut stream =
            UnixStream::connect(&self.socket).map_err(|source| ClientError::Unreachable { socket: self.socket.clone(), source })?;
        let mut line = serde_json::to_vec(request).map_err(|e| ClientError::BadResponse(e.to_string()))?;
        line.push(b'\n');
        stream.write_all(&line).map_err(|e| ClientError::Gone(Some(e)))?;
        let mut reader = BufReader::new(stream);
        match read_line(&mut reader, MAX_RESPONSE_BYTES) {
            Ok(Some(line)) => serde_json::from_slice(&line).map_err(|e| ClientError::BadResponse(e.to_string())),
            Ok(None) => Err(ClientError::Gone(None)),
            Err(LineError::Io(e)) => Err(ClientError::Gone(Some(e))),
            Err(LineError::TooLong) => Err(ClientError::BadResponse(format!("a response longer than {MAX_RESPONSE_BYTES} bytes"))),
        }
    }
}
