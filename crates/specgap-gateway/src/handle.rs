//! Starting a gateway on a listener, and the handle that abandons, inspects and stops it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

use crate::config::{GatewayConfig, Protocol, Secret};
use crate::error::GatewayError;
use crate::journal::{Journal, RebuiltRequest};
use crate::redact::Redactor;
use crate::server::{Ctx, tcp_hosts, unix_hosts};
use crate::state::{Backoff, GatewayFault, GatewayReport, Shared, lock};
use crate::supervisor::Supervisor;

/// Where a gateway listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (inside whichever network namespace the listener was bound in).
    Tcp(SocketAddr),
    /// A Unix socket (its path, when it has one).
    Unix(Option<PathBuf>),
}

enum Listener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

/// Serves `config` on an already bound TCP listener (for the sandbox: one from
/// [`crate::bind_loopback_in`]). Returns once the gateway is ready to accept.
///
/// # Errors
/// [`GatewayError::Config`] for an invalid configuration, [`GatewayError::Listener`],
/// [`GatewayError::Runtime`], [`GatewayError::Client`], [`GatewayError::Journal`] when it
/// cannot start.
pub fn serve_tcp(
    listener: std::net::TcpListener,
    config: GatewayConfig,
    supervisor: Arc<dyn Supervisor>,
) -> Result<GatewayHandle, GatewayError> {
    config.validate()?;
    let addr = listener.local_addr().map_err(GatewayError::Listener)?;
    listener.set_nonblocking(true).map_err(GatewayError::Listener)?;
    let hosts = tcp_hosts(addr, &config.extra_hosts);
    start(Listener::Tcp(listener), ListenAddr::Tcp(addr), hosts, config, supervisor)
}

/// Serves `config` on an already bound Unix-socket listener (clients send `Host: localhost`).
///
/// # Errors
/// As [`serve_tcp`].
pub fn serve_unix(
    listener: std::os::unix::net::UnixListener,
    config: GatewayConfig,
    supervisor: Arc<dyn Supervisor>,
) -> Result<GatewayHandle, GatewayError> {
    config.validate()?;
    let path = listener.local_addr().map_err(GatewayError::Listener)?.as_pathname().map(PathBuf::from);
    listener.set_nonblocking(true).map_err(GatewayError::Listener)?;
    let hosts = unix_hosts(&config.extra_hosts);
    start(Listener::Unix(listener), ListenAddr::Unix(path), hosts, config, supervisor)
}

fn start(
    listener: Listener,
    addr: ListenAddr,
    hosts: Vec<String>,
    config: GatewayConfig,
    supervisor: Arc<dyn Supervisor>,
) -> Result<GatewayHandle, GatewayError> {
    let journal = match &config.journal_path {
        Some(path) => Journal::create(path)?,
        None => Journal::default(),
    };
    let shared = Arc::new(Shared::new(journal));
    let token = config.token.clone();
    let protocols = config.upstreams.iter().map(|u| u.protocol).collect();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let thread_shared = shared.clone();
    let thread = std::thread::Builder::new()
        .name("specgap-gateway".into())
        .spawn(move || run(listener, hosts, config, supervisor, thread_shared, ready_tx, stop_rx))
        .map_err(GatewayError::Runtime)?;
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => {
            let _ = thread.join();
            return Err(GatewayError::Panicked);
        }
    }
    Ok(GatewayHandle { shared, addr, token, protocols, stop: Mutex::new(Some(stop_tx)), thread: Some(thread) })
}

/// The gateway's thread: a current-thread tokio runtime serving every connection.
fn run(
    listener: Listener,
    hosts: Vec<String>,
    config: GatewayConfig,
    supervisor: Arc<dyn Supervisor>,
    shared: Arc<Shared>,
    ready: std::sync::mpsc::Sender<Result<(), GatewayError>>,
    stop: oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(GatewayError::Runtime(e)));
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match listener {
            Listener::Tcp(l) => tokio::net::TcpListener::from_std(l).map(AsyncListener::Tcp),
            Listener::Unix(l) => tokio::net::UnixListener::from_std(l).map(AsyncListener::Unix),
        };
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(GatewayError::Listener(e)));
                return;
            }
        };
        let timeout = config.retry.request_timeout;
        // Redirects are not followed: a redirect would carry the key's header to wherever the
        // upstream points (reqwest drops only `authorization` across hosts, not `x-api-key`).
        let client = reqwest::Client::builder()
            .connect_timeout(timeout.min(std::time::Duration::from_secs(30)))
            .redirect(reqwest::redirect::Policy::none())
            .build();
        let client = match client {
            Ok(client) => client,
            Err(e) => {
                let _ = ready.send(Err(GatewayError::Client(e)));
                return;
            }
        };
        let mut secrets: Vec<&str> = config.upstreams.iter().filter_map(|u| u.api_key.as_ref().map(Secret::expose)).collect();
        secrets.push(config.token.expose());
        let redactor = Redactor::new(secrets);
        let backoff = std::sync::Mutex::new(Backoff::new(config.retry.seed, config.retry.retry_base));
        let deadline = config.deadline;
        let ctx = Arc::new(Ctx { config, hosts, client, supervisor, redactor, shared: shared.clone(), seq: Default::default(), backoff });
        if let Some(deadline) = deadline {
            let shared = shared.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await;
                shared.abandon();
            });
        }
        let _ = ready.send(Ok(()));
        accept_loop(&listener, &ctx, stop).await;
        // Stopping abandons whatever is still in flight; each exchange records itself at once
        // (every wait of an exchange — its body, its admission, its upstream, its stream —
        // ends on abandonment), so this bound only guards against a hook that hangs.
        shared.abandon();
        let _ = tokio::time::timeout(STOP_BOUND, shared.idle()).await;
    });
    // Connections and exchanges still there are dropped (an exchange dropped unrecorded
    // records itself as the client gone); a blocking admission still deciding is not waited for.
    runtime.shutdown_timeout(STOP_BOUND);
}

/// The longest a stop waits for the exchanges in flight to record themselves, and then for
/// the runtime's blocking tasks: well within the second the wall budget may overrun
/// (issue 31 item 3).
const STOP_BOUND: std::time::Duration = std::time::Duration::from_millis(500);

enum AsyncListener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

async fn accept_loop(listener: &AsyncListener, ctx: &Arc<Ctx>, mut stop: oneshot::Receiver<()>) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = &mut stop => return,
            accepted = accept(listener) => accepted,
        };
        match accepted {
            Ok(connection) => {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| crate::server::handle(ctx.clone(), request));
                    let served = match connection {
                        Connection::Tcp(stream) => {
                            let _ = stream.set_nodelay(true);
                            http1::Builder::new().serve_connection(TokioIo::new(stream), service).await
                        }
                        Connection::Unix(stream) => http1::Builder::new().serve_connection(TokioIo::new(stream), service).await,
                    };
                    if let Err(e) = served {
                        tracing::debug!("gateway connection ended: {e}");
                    }
                });
            }
            Err(e) => {
                // Out of descriptors and the like: wait a moment instead of spinning.
                tracing::warn!("gateway cannot accept a connection: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
}

enum Connection {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

async fn accept(listener: &AsyncListener) -> std::io::Result<Connection> {
    match listener {
        AsyncListener::Tcp(l) => l.accept().await.map(|(s, _)| Connection::Tcp(s)),
        AsyncListener::Unix(l) => l.accept().await.map(|(s, _)| Connection::Unix(s)),
    }
}

/// A running gateway. Dropping it stops the gateway as [`GatewayHandle::shutdown`] does.
#[derive(Debug)]
pub struct GatewayHandle {
    shared: Arc<Shared>,
    addr: ListenAddr,
    token: Secret,
    protocols: Vec<Protocol>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl GatewayHandle {
    /// Where it listens.
    pub fn addr(&self) -> &ListenAddr {
        &self.addr
    }

    /// The base URL a client of `protocol` is given (its SDK's `base_url`): for a TCP
    /// listener `http://127.0.0.1:<port>/v1` for the OpenAI protocols and
    /// `http://127.0.0.1:<port>` for Anthropic and Gemini; for a Unix socket the same with host
    /// `localhost`. `None` when the gateway serves no upstream of that protocol.
    pub fn base_url(&self, protocol: Protocol) -> Option<String> {
        if !self.protocols.contains(&protocol) {
            return None;
        }
        let host = match &self.addr {
            ListenAddr::Tcp(SocketAddr::V4(v4)) if v4.ip().is_unspecified() => format!("127.0.0.1:{}", v4.port()),
            ListenAddr::Tcp(SocketAddr::V6(v6)) if v6.ip().is_unspecified() => format!("[::1]:{}", v6.port()),
            ListenAddr::Tcp(addr) => addr.to_string(),
            ListenAddr::Unix(_) => "localhost".into(),
        };
        Some(format!("http://{host}{}", protocol.base_path()))
    }

    /// The sandbox's token (what the CLI is given as its API key).
    pub fn token(&self) -> &Secret {
        &self.token
    }

    /// Abandons the gateway now (the episode's wall budget ended, or the run is
    /// interrupted): in-flight upstream requests are dropped at once, nothing they return
    /// reaches the agent (a stream already under way ends with the protocol's error event, a
    /// waiting request gets a 403 error), later requests are refused, and every exchange is
    /// still recorded with the usage seen so far. Idempotent; callable from any thread and
    /// from inside a hook.
    pub fn abandon(&self) {
        self.shared.abandon();
    }

    /// Whether the gateway was abandoned (by [`GatewayHandle::abandon`] or the deadline).
    pub fn is_abandoned(&self) -> bool {
        self.shared.is_abandoned()
    }

    /// The fault that stopped forwarding (a dead upstream, an unwritable journal), if any:
    /// the engine ends the episode with an infrastructure error.
    pub fn fault(&self) -> Option<GatewayFault> {
        self.shared.fault()
    }

    /// Exchanges begun and not yet recorded (an answer being written, a request held by the
    /// supervisor, an upstream request under way).
    pub fn in_flight(&self) -> u64 {
        self.shared.in_flight()
    }

    /// Main-loop responses streaming to the client whose exchanges are not recorded yet. A
    /// CLI may act on a tool call as soon as it has streamed in; the supervisor's
    /// `exchange_done` for the exchange that carried it comes when the stream ends, and this
    /// count drops only after it.
    pub fn main_streams(&self) -> u64 {
        self.shared.main_streams()
    }

    /// The totals so far.
    pub fn report(&self) -> GatewayReport {
        self.shared.report()
    }

    /// Request `seq` rebuilt from the journal, byte for byte ([`Journal::rebuild`]).
    pub fn rebuild_request(&self, seq: u64) -> Option<RebuiltRequest> {
        lock(&self.shared.journal).rebuild(seq)
    }

    /// Runs `f` on the journal (e.g. to read a blob); the gateway waits meanwhile, so keep it
    /// short.
    pub fn with_journal<T>(&self, f: impl FnOnce(&Journal) -> T) -> T {
        f(&lock(&self.shared.journal))
    }

    /// Stops the gateway: stops accepting, abandons what is in flight, waits (at most 0.5 s)
    /// until every exchange is recorded, and returns the totals.
    ///
    /// # Errors
    /// [`GatewayError::Panicked`] when the gateway's thread panicked.
    pub fn shutdown(mut self) -> Result<GatewayReport, GatewayError> {
        self.stop_and_join()?;
        Ok(self.shared.report())
    }

    fn stop_and_join(&mut self) -> Result<(), GatewayError> {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|_| GatewayError::Panicked),
            None => Ok(()),
        }
    }
}

impl Drop for GatewayHandle {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
