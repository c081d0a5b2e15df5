//! The harness side: [`BridgeEndpoint`] listens on an episode's Unix socket, checks each
//! request (token, tool, arguments shape) and hands calls one at a time to the engine as
//! [`PendingCall`]s on a [`CallReceiver`].
//!
//! Rules:
//! * only the offered harness tools ([`Offer`]) are accepted; any other name is refused by the
//!   endpoint itself, without reaching the engine;
//! * one call at a time: a call arriving while another waits for its answer waits its turn
//!   (calls are answered in the order they took the turn). Refusing it instead would make an
//!   episode's outcome depend on how two processes inside the sandbox happened to race;
//! * a request with a wrong token, or a line over [`MAX_REQUEST_BYTES`], gets an error and the
//!   connection is closed; any other malformed line gets an error and the connection stays
//!   open; nothing a client sends can panic the endpoint;
//! * after a response marked `end` (or [`BridgeEndpoint::end_episode`]) every later call is
//!   answered "the episode is over" without reaching the engine; once the endpoint is dropped,
//!   or the [`CallReceiver`] or a [`PendingCall`] is dropped unanswered, waiting clients are
//!   told the harness is gone.

use std::io::{self, BufRead as _, BufReader, Read as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use specgap_protocol::event::ToolCall;

use crate::tools::Offer;
use crate::wire::{HarnessTool, MAX_REQUEST_BYTES, Op, Request, Response, WIRE_VERSION};

/// Most connections served at once; a further one gets an error and is closed.
pub const MAX_CONNECTIONS: usize = 16;
/// How often a client waiting for the engine's answer checks that the endpoint still serves.
const POLL: Duration = Duration::from_millis(50);
/// Longest socket path the kernel accepts (`sun_path` minus the terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The text of a call refused because the episode is over.
pub const EPISODE_OVER: &str = "the episode is over: nothing more is accepted; stop working";
/// The text of a call that the harness stopped serving before answering it.
pub const HARNESS_GONE: &str = "the harness is no longer serving this episode (it ended or was stopped); stop working";

const OPEN: u8 = 0;
const ENDED: u8 = 1;
const CLOSED: u8 = 2;

/// Why an endpoint cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The socket path is longer than a Unix socket address holds.
    #[error("the bridge socket path {} is {len} bytes long; Unix sockets allow at most {MAX_SOCKET_PATH}", path.display())]
    PathTooLong {
        /// The path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
    },
    /// Something already exists at the socket path (never replaced: the harness makes the
    /// socket in a fresh private directory).
    #[error("cannot make the bridge socket {}: something already exists there", path.display())]
    Exists {
        /// The path.
        path: PathBuf,
    },
    /// Binding or starting the accept thread failed.
    #[error("cannot listen on the bridge socket {}", path.display())]
    Bind {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// A harness tool call waiting for the engine's answer. Answer it with
/// [`PendingCall::respond`]; dropping it unanswered tells the caller the harness is gone.
#[derive(Debug)]
pub struct PendingCall {
    tool: HarnessTool,
    arguments: Value,
    reply: mpsc::SyncSender<Response>,
}

impl PendingCall {
    /// The tool called.
    pub fn tool(&self) -> HarnessTool {
        self.tool
    }

    /// The arguments object as the agent sent it (always a JSON object; its fields are the
    /// engine's to check, so a bad argument is a tool error in the trajectory like any other).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The call as a [`ToolCall`] with `id`, for the engine's dispatch.
    pub fn to_tool_call(&self, id: impl Into<String>) -> ToolCall {
        ToolCall { id: id.into(), tool: self.tool.name().to_string(), arguments: self.arguments.clone() }
    }

    /// Sends the answer back to the waiting client (a client that has gone meanwhile is
    /// ignored).
    pub fn respond(self, response: Response) {
        let _ = self.reply.send(response);
    }
}

/// Where the engine receives the calls of one episode, in turn order.
#[derive(Debug)]
pub struct CallReceiver {
    calls: mpsc::Receiver<PendingCall>,
}

impl CallReceiver {
    /// Waits for the next call; `None` once the endpoint is closed.
    pub fn recv(&self) -> Option<PendingCall> {
        self.calls.recv().ok()
    }

    /// Waits at most `timeout` for the next call.
    ///
    /// # Errors
    /// [`RecvTimeoutError::Timeout`] when none came, [`RecvTimeoutError::Disconnected`] once
    /// the endpoint is closed.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<PendingCall, RecvTimeoutError> {
        self.calls.recv_timeout(timeout)
    }

    /// Answers every call with `answer` until the endpoint is closed (tests, benchmarks and
    /// simple harnesses; the engine answers through its own loop instead).
    pub fn serve(self, mut answer: impl FnMut(&PendingCall) -> Response) {
        while let Some(call) = self.recv() {
            let response = answer(&call);
            call.respond(response);
        }
    }
}

struct Shared {
    path: PathBuf,
    token: String,
    offer: RwLock<Offer>,
    calls: Mutex<Option<mpsc::Sender<PendingCall>>>,
    /// Held by the connection whose call the engine is answering.
    turnstile: Mutex<()>,
    state: AtomicU8,
    connections: Mutex<Vec<Connection>>,
}

struct Connection {
    stream: UnixStream,
    thread: Option<JoinHandle<()>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The harness's end of an episode's bridge socket (module guide). Dropping it stops
/// listening, closes every connection, tells waiting clients the harness is gone and removes
/// the socket file.
pub struct BridgeEndpoint {
    shared: Arc<Shared>,
    /// A second handle on the listening socket, to wake the accept loop at the end.
    listener: UnixListener,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for BridgeEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeEndpoint").field("path", &self.shared.path).finish_non_exhaustive()
    }
}

impl BridgeEndpoint {
    /// Listens on a new Unix socket at `path` (which must not exist; mode 0600) for requests
    /// carrying `token`, offering `offer`.
    ///
    /// # Errors
    /// [`EndpointError`] when the path is too long, taken, or cannot be bound.
    pub fn bind(path: &Path, token: impl Into<String>, offer: Offer) -> Result<(BridgeEndpoint, CallReceiver), EndpointError> {
        use std::os::unix::ffi::OsStrExt as _;
        use std::os::unix::fs::PermissionsExt as _;
        let len = path.as_os_str().as_bytes().len();
        if len > MAX_SOCKET_PATH {
            return Err(EndpointError::PathTooLong { path: path.to_path_buf(), len });
        }
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(EndpointError::Exists { path: path.to_path_buf() });
        }
        let bind_error = |source| EndpointError::Bind { path: path.to_path_buf(), source };
        let listener = UnixListener::bind(path).map_err(bind_error)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind_error)?;
        let (sender, receiver) = mpsc::channel();
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            token: token.into(),
            offer: RwLock::new(offer),
            calls: Mutex::new(Some(sender)),
            turnstile: Mutex::new(()),
            state: AtomicU8::new(OPEN),
            connections: Mutex::new(Vec::new()),
        });
        let wake = listener.try_clone().map_err(bind_error)?;
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("bridge-accept".into())
            .spawn(move || accept_loop(&accept_shared, &listener))
            .map_err(|source| {
                let _ = std::fs::remove_file(path);
                bind_error(source)
            })?;
        Ok((BridgeEndpoint { shared, listener: wake, accept: Some(accept) }, CallReceiver { calls: receiver }))
    }

    /// The socket's path on the host.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The tools offered now.
    pub fn offer(&self) -> Offer {
        self.shared.offer.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Changes the tools offered (plan mode's switch after `write_plan`); later `tools`
    /// requests and calls see the new offer.
    pub fn set_offer(&self, offer: Offer) {
        *self.shared.offer.write().unwrap_or_else(PoisonError::into_inner) = offer;
    }

    /// Marks the episode as over: every later call is answered [`EPISODE_OVER`] with `end`.
    pub fn end_episode(&self) {
        let _ = self.shared.state.compare_exchange(OPEN, ENDED, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Whether the episode was marked over (by [`BridgeEndpoint::end_episode`] or an answer
    /// with `end`).
    pub fn is_ended(&self) -> bool {
        self.shared.state.load(Ordering::SeqCst) != OPEN
    }
}

impl Drop for BridgeEndpoint {
    fn drop(&mut self) {
        self.shared.state.store(CLOSED, Ordering::SeqCst);
        // The receiver now sees the channel closed; waiting clients see CLOSED within POLL.
        lock(&self.shared.calls).take();
        // Wake the accept loop, which then sees CLOSED and stops: shutting a listening socket
        // down makes a blocked accept return on Linux (even when the socket file is gone).
        // SAFETY: the descriptor is owned by `self.listener` and valid.
        unsafe { libc::shutdown(std::os::fd::AsRawFd::as_raw_fd(&self.listener), libc::SHUT_RDWR) };
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        // Shutting down the read side wakes connections waiting for a request; a connection
        // whose call is waiting still writes its "harness gone" answer before it ends.
        for connection in &connections {
            let _ = connection.stream.shutdown(std::net::Shutdown::Read);
        }
        for mut connection in connections {
            if let Some(thread) = connection.thread.take() {
                let _ = thread.join();
            }
        }
        let _ = std::fs::remove_file(&self.shared.path);
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &UnixListener) {
    for stream in listener.incoming() {
        if shared.state.load(Ordering::SeqCst) == CLOSED {
            break;
        }
        let Ok(mut stream) = stream else {
            // Out of descriptors or a connection reset before it was accepted: go on.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let mut connections = lock(&shared.connections);
        connections.retain(|c| c.thread.as_ref().is_some_and(|t| !t.is_finished()));
        if connections.len() >= MAX_CONNECTIONS {
            drop(connections);
            let _ =
                write_response(&mut stream, &Response::error(format!("too many bridge connections at once (at most {MAX_CONNECTIONS})")));
            continue;
        }
        let Ok(registered) = stream.try_clone() else { continue };
        let connection_shared = Arc::clone(shared);
        let thread =
            std::thread::Builder::new().name("bridge-connection".into()).spawn(move || serve_connection(&connection_shared, stream));
        if let Ok(thread) = thread {
            connections.push(Connection { stream: registered, thread: Some(thread) });
        }
    }
}

/// Reads request lines from one connection and answers each in order.
fn serve_connection(shared: &Shared, stream: UnixStream) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        let line = match read_line(&mut reader, MAX_REQUEST_BYTES) {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Io(_)) => break,
            Err(LineError::TooLong) => {
                let _ = write_response(&mut writer, &Response::error(format!("request line longer than {MAX_REQUEST_BYTES} bytes")));
                break;
            }
        };
        let (response, keep_open) = answer(shared, &line);
        if write_response(&mut writer, &response).is_err() || !keep_open {
            break;
        }
    }
    // The endpoint keeps a handle on every connection (to end it at close), so dropping ours
    // would not close it: shut it down.
    let _ = writer.shutdown(std::net::Shutdown::Both);
}

/// The response to one request line, and whether the connection stays open after it.
fn answer(shared: &Shared, line: &[u8]) -> (Response, bool) {
    let request: Request = match serde_json::from_slice(line) {
        Ok(request) => request,
        Err(e) => return (Response::error(format!("bad bridge request: {e}")), true),
    };
    if request.v != WIRE_VERSION {
        return (
            Response::error(format!("bridge protocol version {} is not served (this harness speaks {WIRE_VERSION})", request.v)),
            true,
        );
    }
    if !same_token(request.token.as_bytes(), shared.token.as_bytes()) {
        return (Response::error("wrong bridge token"), false);
    }
    match request.op {
        Op::Tools => {
            let offer = shared.offer.read().unwrap_or_else(PoisonError::into_inner);
            (Response { tools: Some(offer.specs().to_vec()), ..Response::ok("") }, true)
        }
        Op::Call => (call(shared, request.tool.as_deref(), request.arguments), true),
    }
}

fn call(shared: &Shared, tool: Option<&str>, arguments: Option<Value>) -> Response {
    let Some(name) = tool else { return Response::error("a call must name its tool") };
    let Some(tool) = HarnessTool::from_name(name) else {
        return Response::error(format!("the bridge serves only ask_user, submit and write_plan; `{name}` is not one of them"));
    };
    if !shared.offer.read().unwrap_or_else(PoisonError::into_inner).offers(tool) {
        return Response::error(format!("`{name}` is not available in this episode"));
    }
    let arguments = arguments.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    if !arguments.is_object() {
        return Response::error(format!("the arguments of `{name}` must be a JSON object"));
    }
    let _turn = lock(&shared.turnstile);
    match shared.state.load(Ordering::SeqCst) {
        OPEN => {}
        ENDED => return Response::error(EPISODE_OVER).ended(),
        _ => return Response::error(HARNESS_GONE).ended(),
    }
    let (reply, answer) = mpsc::sync_channel(1);
    let sent = lock(&shared.calls).as_ref().is_some_and(|calls| calls.send(PendingCall { tool, arguments, reply }).is_ok());
    if !sent {
        return Response::error(HARNESS_GONE).ended();
    }
    loop {
        match answer.recv_timeout(POLL) {
            Ok(response) => {
                if response.end {
                    let _ = shared.state.compare_exchange(OPEN, ENDED, Ordering::SeqCst, Ordering::SeqCst);
                }
                return response;
            }
            Err(RecvTimeoutError::Timeout) if shared.state.load(Ordering::SeqCst) != CLOSED => {}
            Err(_) => return Response::error(HARNESS_GONE).ended(),
        }
    }
}

/// Compares tokens in time independent of where they differ.
fn same_token(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Why a line could not be read.
#[derive(Debug)]
pub(crate) enum LineError {
    /// Longer than the limit.
    TooLong,
    /// The connection failed.
    Io(io::Error),
}

/// Reads one `\n`-terminated line of at most `limit` bytes (the newline excluded); `None` at
/// the end of the stream. A last line without a newline counts as a line.
pub(crate) fn read_line(reader: &mut impl io::BufRead, limit: usize) -> Result<Option<Vec<u8>>, LineError> {
    let mut line = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let read = reader.by_ref().take(cap).read_until(b'\n', &mut line).map_err(LineError::Io)?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > limit {
        return Err(LineError::TooLong);
    }
    Ok(Some(line))
}

pub(crate) fn write_response(writer: &mut impl io::Write, response: &Response) -> io::Result<()> {
    let mut line = serde_json::to_vec(response).map_err(io::Error::other)?;
    line.push(b'\n');
    writer.write_all(&line)?;
    writer.flush()
}

/// A fresh random token for one episode: 32 lowercase hex digits from the kernel's random
/// source.
///
/// # Errors
/// When `/dev/urandom` cannot be read.
pub fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_exactly() {
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abd", b"abc"));
        assert!(!same_token(b"ab", b"abc"));
        assert!(!same_token(b"", b"abc"));
        let token = new_token().unwrap();
        assert_eq!(token.len(), 32);
        assert_ne!(token, new_token().unwrap());
    }

    #[test]
    fn lines_are_capped() {
        let mut input: &[u8] = b"abc\nlonger line\nend";
        assert_eq!(read_line(&mut input, 11).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_line(&mut input, 11).unwrap(), Some(b"longer line".to_vec()));
        assert_eq!(read_line(&mut input, 11).unwrap(), Some(b"end".to_vec()));
        assert_eq!(read_line(&mut input, 11).unwrap(), None);
        let mut long: &[u8] = b"0123456789ab\n";
        assert!(matches!(read_line(&mut long, 11), Err(LineError::TooLong)));
    }
}
