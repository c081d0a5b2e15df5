//! The live viewer's HTTP server (hyper, HTTP/1.1, one current-thread tokio runtime on its own
//! thread; store reads run on tokio's blocking pool).
//!
//! Every request passes, in order:
//! 1. the **Host check**: the `Host` header must name the address the viewer listens on
//!    (`127.0.0.1:<port>`, `localhost:<port>`, `[::1]:<port>`) — a page elsewhere that
//!    rebinds its own name to 127.0.0.1 (DNS rebinding) sends its own name and is refused;
//! 2. the **method**: GET and HEAD only;
//! 3. the **token** (random, 128 bits, printed in the URL): as the `token` query parameter,
//!    the `x-specgap-token` header, or the cookie the first page load sets (HttpOnly,
//!    SameSite=Strict, named after the port so two viewers do not overwrite each other's);
//! 4. **routing**: `/` (the page), `/assets/<name>` (embedded files, no filesystem), `/api/...`
//!    ([`crate::api`]); anything else is 404. Files are reached only through a run index and a
//!    validated episode id, and every path is checked to stay inside its run directory.
//!
//! Every response carries a Content-Security-Policy without inline scripts or styles
//! (`script-src 'self'`), `X-Content-Type-Options: nosniff`, no-referrer and no-store; file
//! bodies (diffs, trajectories) are served as `text/plain` under `sandbox`.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

use crate::access::Access;
use crate::api::{self, Query, Reply};
use crate::assets;
use crate::error::ViewError;
use crate::runs::RunSet;

/// The policy of every response: scripts and styles only from the viewer's own files, data
/// only from its own API, nothing inline, no frames, no forms, no base rewriting.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How to start a viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewerConfig {
    /// The run directories served (at least one).
    pub runs: Vec<PathBuf>,
    /// The address to listen on; loopback unless the user asks otherwise.
    pub ip: IpAddr,
    /// The port; 0 lets the system choose a free one.
    pub port: u16,
    /// The token; `None` draws a random one.
    pub token: Option<String>,
}

impl ViewerConfig {
    /// Loopback, a chosen port and a random token over `runs`.
    pub fn new(runs: Vec<PathBuf>) -> ViewerConfig {
        ViewerConfig { runs, ip: IpAddr::V4(Ipv4Addr::LOCALHOST), port: 0, token: None }
    }
}

/// A running viewer; dropping it stops the server.
#[derive(Debug)]
pub struct ViewerHandle {
    addr: SocketAddr,
    token: String,
    /// Runs and syntheses served.
    served: (usize, usize),
    stop: Mutex<Option<oneshot::Sender<()>>>,
    thread: Option<JoinHandle<()>>,
}

impl ViewerHandle {
    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Runs served (a synthesis's rollouts included) and syntheses served.
    pub fn served(&self) -> (usize, usize) {
        self.served
    }

    /// The token requests must carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The URL to open: `http://<host>:<port>/?token=<token>`.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", host_of(self.addr), self.token)
    }

    /// Blocks until the server stops (it stops only when told to, or on a fatal error).
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Stops the server and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = crate::runs::lock(&self.stop).take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ViewerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `addr` as a URL authority (`[::1]:8080` for IPv6).
fn host_of(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
        IpAddr::V4(ip) => format!("{ip}:{}", addr.port()),
    }
}

/// The `Host` values accepted for a server at `addr`, lowercase.
fn accepted_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![host_of(addr)];
    if addr.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
    }
    hosts
}

/// A fresh random token: 128 bits from the operating system, as 32 hex digits.
///
/// # Errors
/// [`ViewError::Random`] when the system has no randomness to give.
pub fn random_token() -> Result<String, ViewError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| ViewError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Opens the runs, binds, and serves on a thread of its own; returns once listening.
///
/// # Errors
/// [`ViewError::Run`] / [`ViewError::NoRuns`] for the runs, [`ViewError::Bind`],
/// [`ViewError::Runtime`], [`ViewError::Random`].
pub fn serve(config: ViewerConfig) -> Result<ViewerHandle, ViewError> {
    let runs = Arc::new(RunSet::open(&config.runs)?);
    let served = (runs.len(), runs.syntheses());
    let token = match config.token {
        Some(t) => t,
        None => random_token()?,
    };
    let wanted = SocketAddr::new(config.ip, config.port);
    let listener = std::net::TcpListener::bind(wanted).map_err(|source| ViewError::Bind { addr: wanted, source })?;
    let addr = listener.local_addr().map_err(ViewError::Runtime)?;
    listener.set_nonblocking(true).map_err(ViewError::Runtime)?;
    let ctx = Arc::new(Ctx { runs, token: token.clone(), hosts: accepted_hosts(addr), cookie: format!("specgap_view_{}", addr.port()) });
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), std::io::Error>>();
    let thread = std::thread::Builder::new()
        .name("specgap-view".into())
        .spawn(move || run(listener, ctx, stop_rx, ready_tx))
        .map_err(ViewError::Runtime)?;
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(ViewError::Runtime(e));
        }
        Err(_) => {
            let _ = thread.join();
            return Err(ViewError::Runtime(std::io::Error::other("the server thread ended before listening")));
        }
    }
    Ok(ViewerHandle { addr, token, served, stop: Mutex::new(Some(stop_tx)), thread: Some(thread) })
}

struct Ctx {
    runs: Arc<RunSet>,
    token: String,
    hosts: Vec<String>,
    cookie: String,
}

fn run(
    listener: std::net::TcpListener,
    ctx: Arc<Ctx>,
    mut stop: oneshot::Receiver<()>,
    ready: std::sync::mpsc::Sender<Result<(), std::io::Error>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().enable_time().max_blocking_threads(4).build() {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            tokio::select! {
                _ = &mut stop => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let ctx = Arc::clone(&ctx);
                    tokio::spawn(async move {
                        let service = service_fn(move |request| {
                            let ctx = Arc::clone(&ctx);
                            async move { Ok::<_, Infallible>(handle(ctx, request).await) }
                        });
                        let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                    });
                }
            }
        }
    });
}

type Body = Full<Bytes>;

/// A response with the viewer's security headers.
fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    let set = |headers: &mut http::HeaderMap, name: header::HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    };
    set(headers, header::CONTENT_TYPE, content_type);
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::CACHE_CONTROL, "no-store");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::HeaderName::from_static("cross-origin-resource-policy"), "same-origin");
    set(headers, header::HeaderName::from_static("cross-origin-opener-policy"), "same-origin");
    response
}

fn text(status: StatusCode, words: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", format!("{words}\n"))
}

/// Bytes compared in time independent of where they first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Where the request's token came from, if it carries the right one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presented {
    Query,
    Elsewhere,
}

fn token_of(ctx: &Ctx, request: &Request<Incoming>, query: &Query) -> Option<Presented> {
    let token = ctx.token.as_bytes();
    if query.get("token").is_some_and(|t| same(t.as_bytes(), token)) {
        return Some(Presented::Query);
    }
    let headers = request.headers();
    if headers.get("x-specgap-token").is_some_and(|v| same(v.as_bytes(), token)) {
        return Some(Presented::Elsewhere);
    }
    for value in headers.get_all(header::COOKIE) {
        let Ok(value) = value.to_str() else { continue };
        for pair in value.split(';') {
            if let Some((name, v)) = pair.trim().split_once('=')
                && name == ctx.cookie
                && same(v.as_bytes(), token)
            {
                return Some(Presented::Elsewhere);
            }
        }
    }
    None
}

async fn handle(ctx: Arc<Ctx>, request: Request<Incoming>) -> Response<Body> {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_ascii_lowercase);
    if !host.as_ref().is_some_and(|h| ctx.hosts.contains(h)) {
        return text(
            StatusCode::FORBIDDEN,
            "refused: the Host header does not name this viewer's address (open the URL `specgap view` printed)",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "the viewer is read-only: GET and HEAD only");
    }
    let query: Query = request.uri().query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let Some(presented) = token_of(&ctx, &request, &query) else {
        return text(StatusCode::UNAUTHORIZED, "refused: this viewer needs the token of the URL `specgap view` printed");
    };
    let raw_path = request.uri().path().to_string();
    let segments: Vec<String> = raw_path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let mut response = match segments.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["index.html"] => respond(StatusCode::OK, "text/html; charset=utf-8", assets::index_html(false)),
        // Browsers ask for it on their own; an empty answer keeps their console clean.
        ["favicon.ico"] => respond(StatusCode::NO_CONTENT, "image/x-icon", Bytes::new()),
        ["assets", name] => match assets::asset(name) {
            Some((content_type, body)) => respond(StatusCode::OK, content_type, body),
            None => text(StatusCode::NOT_FOUND, "no such asset"),
        },
        ["api", rest @ ..] => {
            let runs = Arc::clone(&ctx.runs);
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            let joined = tokio::task::spawn_blocking(move || {
                let parts: Vec<&str> = rest.iter().map(String::as_str).collect();
                api::answer(&runs, Access::PRIVATE, &parts, &query)
            })
            .await;
            match joined {
                Ok(reply) => reply_response(reply),
                Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "the request failed inside the viewer"),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "no such page"),
    };
    if presented == Presented::Query
        && let Ok(cookie) = HeaderValue::from_str(&format!("{}={}; HttpOnly; SameSite=Strict; Path=/", ctx.cookie, ctx.token))
    {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    if request.method() == Method::HEAD {
        *response.body_mut() = Full::new(Bytes::new());
    }
    response
}

fn reply_response(reply: Reply) -> Response<Body> {
    match reply {
        Reply::Json(value) => match serde_json::to_vec(&value) {
            Ok(bytes) => respond(StatusCode::OK, "application/json", bytes),
            Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "cannot serialize the answer"),
        },
        Reply::Bytes { body, content_type } => {
            let mut response = respond(StatusCode::OK, content_type, body);
            // A file the agent or a model wrote: never rendered as anything but text.
            if let Ok(v) = HeaderValue::from_str(&format!("{CSP}; sandbox")) {
                response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, v);
            }
            response
        }
        Reply::NotFound(words) => text(StatusCode::NOT_FOUND, &words),
        Reply::BadRequest(words) => text(StatusCode::BAD_REQUEST, &words),
        Reply::Forbidden(words) => text(StatusCode::FORBIDDEN, &words),
    }
}
