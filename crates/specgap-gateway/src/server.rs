//! One request from the sandbox, from its first byte to its record: the target and host
//! checks, routing, the token, the query, the body, the model, classification, admission,
//! forwarding (`crate::upstream`) and the exchange record.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde_json::{Value, json};
use specgap_protocol::event::Usage;
use tokio::sync::mpsc;

use crate::body::TopLevel;
use crate::config::{GatewayConfig, KeyPlacement, Protocol, Upstream};
use crate::endpoint::{Endpoint, ListingHints, NoRoute, Route, route};
use crate::journal::{Blob, JournalEntry, KEY_PLACEHOLDER, MessageRef, Segment};
use crate::redact::Redactor;
use crate::response::ModelResponse;
use crate::state::{Backoff, GatewayFault, Shared, lock};
use crate::supervisor::{Admission, ExchangeRecord, Outcome, RefusalReason, RequestClass, RequestInfo, Supervisor};
use crate::upstream::{self, Forwarded, Prepared};

/// Request headers forwarded upstream (lowercase); everything else (credentials, cookies,
/// proxy and forwarding hints, hop-by-hop headers, `host`, `content-length`) is dropped.
const FORWARDED_HEADERS: &[&str] =
    &["content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta", "openai-beta", "x-goog-api-client"];
/// Forwarded request header prefixes (SDK metadata: language, version, retry count).
const FORWARDED_PREFIXES: &[&str] = &["x-stainless-"];
/// Response headers never handed to the client: hop-by-hop ones, the length (recomputed),
/// and the upstream's cookies and connection hints.
const DROPPED_RESPONSE_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "set-cookie",
    "set-cookie2",
    "alt-svc",
    "strict-transport-security",
];

/// Everything one gateway's requests share.
pub(crate) struct Ctx {
    pub(crate) config: GatewayConfig,
    /// Accepted `Host` values, lowercase.
    pub(crate) hosts: Vec<String>,
    pub(crate) client: reqwest::Client,
    pub(crate) supervisor: Arc<dyn Supervisor>,
    pub(crate) redactor: Redactor,
    pub(crate) shared: Arc<Shared>,
    pub(crate) seq: AtomicU64,
    pub(crate) backoff: std::sync::Mutex<Backoff>,
}

/// The body of a response to the sandbox: whole, or fed chunk by chunk by a stream task.
pub(crate) enum GwBody {
    Full(Option<Bytes>),
    Channel(mpsc::Receiver<Bytes>),
}

impl http_body::Body for GwBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            GwBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            GwBody::Channel(receiver) => receiver.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, GwBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            GwBody::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            GwBody::Full(None) => SizeHint::with_exact(0),
            GwBody::Channel(_) => SizeHint::default(),
        }
    }
}

/// One exchange being served; recorded exactly once, when finished or when dropped (a
/// client that went away while the gateway waited).
pub(crate) struct Exchange {
    ctx: Arc<Ctx>,
    seq: u64,
    started: Instant,
    started_unix_ms: u64,
    method: String,
    path: String,
    pub(crate) info: Option<RequestInfo>,
    class: RequestClass,
    upstream_url: Option<String>,
    headers: Vec<(String, String)>,
    body: Option<Vec<Segment>>,
    /// The part of the body received before the exchange ended, when it ended first.
    incomplete_body: Option<Blob>,
    messages: Vec<MessageRef>,
    new_blobs: Vec<Blob>,
    pub(crate) usage: Usage,
    pub(crate) cache_creation_tokens: u64,
    pub(crate) response: Option<ModelResponse>,
    status: u16,
    response_headers: Vec<(String, String)>,
    /// What the client got, for the journal.
    pub(crate) sent: Vec<u8>,
    /// Counted among the gateway's main-loop streams ([`Exchange::begin_main_stream`]).
    main_stream: bool,
    done: bool,
}

impl Exchange {
    fn begin(ctx: &Arc<Ctx>, method: &Method, path: &str) -> Self {
        ctx.shared.begin_exchange();
        let started_unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Exchange {
            ctx: ctx.clone(),
            seq: ctx.seq.fetch_add(1, Ordering::SeqCst),
            started: Instant::now(),
            started_unix_ms,
            method: method.as_str().to_string(),
            path: path.to_string(),
            info: None,
            class: RequestClass::Side,
            upstream_url: None,
            headers: Vec::new(),
            body: None,
            incomplete_body: None,
            messages: Vec::new(),
            new_blobs: Vec::new(),
            usage: Usage::default(),
            cache_creation_tokens: 0,
            response: None,
            status: 0,
            response_headers: Vec::new(),
            sent: Vec::new(),
            main_stream: false,
            done: false,
        }
    }

    /// Sets the response head the client gets.
    pub(crate) fn set_head(&mut self, status: u16, headers: &HeaderMap) {
        self.status = status;
        self.response_headers =
            headers.iter().filter_map(|(name, value)| value.to_str().ok().map(|v| (name.as_str().to_string(), v.to_string()))).collect();
    }

    /// A complete response: records it with `outcome` and returns it.
    fn reply(mut self, status: u16, headers: HeaderMap, body: Vec<u8>, outcome: Outcome) -> Response<GwBody> {
        self.set_head(status, &headers);
        self.sent = body.clone();
        self.finish(outcome);
        let mut response = Response::new(GwBody::Full(Some(Bytes::from(body))));
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        *response.headers_mut() = headers;
        response
    }

    /// Keeps the part of the request body received before the exchange ended (journalled as
    /// one blob, marked incomplete, and handed to the supervisor in the record).
    fn keep_incomplete_body(&mut self, received: &[u8]) {
        if received.is_empty() {
            return;
        }
        let stored = lock(&self.ctx.shared.journal).store_blob(received);
        match stored {
            Ok((id, new)) => {
                self.new_blobs.extend(new);
                self.body = Some(vec![Segment::Blob(id.clone())]);
                self.incomplete_body = Some(Blob { id, bytes: received.into() });
            }
            Err(e) => self.ctx.shared.set_fault(GatewayFault::Journal { message: specgap_protocol::text::error_chain(&e) }),
        }
    }

    /// Refuses the request with a protocol-shaped error.
    fn refuse(self, protocol: Option<Protocol>, status: u16, reason: RefusalReason, message: String) -> Response<GwBody> {
        let body = crate::shape::error_body(protocol, status, reason.code(), &message);
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if status == 401 {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        self.reply(status, headers, body, Outcome::Refused { reason, message })
    }

    /// Counts a main-loop response that starts streaming to the client, until it is recorded.
    pub(crate) fn begin_main_stream(&mut self) {
        if self.class == RequestClass::Main && !self.main_stream && !self.done {
            self.main_stream = true;
            self.ctx.shared.begin_main_stream();
        }
    }

    /// Records the exchange (once).
    pub(crate) fn finish(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: Outcome) {
        if self.done {
            return;
        }
        self.done = true;
        let ctx = self.ctx.clone();
        if let Some(model) = self.info.as_ref().and_then(|i| i.model.as_deref()) {
            self.usage.cost_usd = ctx.supervisor.price(model, &self.usage, self.cache_creation_tokens);
        }
        let entry_status = if matches!(outcome, Outcome::ClientGone) && self.status == 0 { 499 } else { self.status };
        let journalled = {
            let mut journal = lock(&ctx.shared.journal);
            let response_body = if self.sent.is_empty() {
                Ok(None)
            } else {
                journal.store_blob(&self.sent).map(|(id, new)| {
                    self.new_blobs.extend(new);
                    Some(id)
                })
            };
            response_body.and_then(|response_body| {
                journal.append(JournalEntry {
                    seq: self.seq,
                    method: self.method.clone(),
                    path: self.path.clone(),
                    protocol: self.info.as_ref().map(|i| i.protocol),
                    endpoint: self.info.as_ref().map(|i| i.endpoint),
                    class: self.class,
                    model: self.info.as_ref().and_then(|i| i.model.clone()),
                    upstream_url: self.upstream_url.clone(),
                    headers: std::mem::take(&mut self.headers),
                    body: self.body.take(),
                    body_incomplete: self.incomplete_body.is_some(),
                    status: entry_status,
                    response_headers: self.response_headers.clone(),
                    response_body,
                    outcome: outcome.clone(),
                    usage: self.usage.clone(),
                    cache_creation_tokens: self.cache_creation_tokens,
                })
            })
        };
        if let Err(e) = journalled {
            ctx.shared.set_fault(GatewayFault::Journal { message: specgap_protocol::text::error_chain(&e) });
        }
        let record = ExchangeRecord {
            seq: self.seq,
            started_unix_ms: self.started_unix_ms,
            started_at: self.started,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            method: std::mem::take(&mut self.method),
            path: std::mem::take(&mut self.path),
            request: self.info.take(),
            class: self.class,
            outcome,
            status: entry_status,
            usage: std::mem::take(&mut self.usage),
            cache_creation_tokens: self.cache_creation_tokens,
            response: self.response.take(),
            messages: std::mem::take(&mut self.messages),
            new_blobs: std::mem::take(&mut self.new_blobs),
            incomplete_body: self.incomplete_body.take(),
        };
        ctx.shared.add_record(&record);
        ctx.supervisor.exchange_done(&record);
        // Only now, with the record handed over, does the stream stop counting.
        if self.main_stream {
            ctx.shared.end_main_stream();
        }
        ctx.shared.end_exchange();
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.record(Outcome::ClientGone);
    }
}

/// Serves one request.
pub(crate) async fn handle(ctx: Arc<Ctx>, request: Request<Incoming>) -> Result<Response<GwBody>, Infallible> {
    let exchange = Exchange::begin(&ctx, request.method(), request.uri().path());
    Ok(serve(ctx, exchange, request).await)
}

async fn serve(ctx: Arc<Ctx>, mut ex: Exchange, request: Request<Incoming>) -> Response<GwBody> {
    let (parts, body) = request.into_parts();
    if let Err(refusal) = check_target(&ctx, &parts.method, &parts.uri, &parts.headers) {
        return ex.refuse(None, refusal.0, RefusalReason::BadTarget, refusal.1);
    }
    let query = parts.uri.query().unwrap_or("");
    let pairs = query_pairs(query);
    let hints = ListingHints {
        gemini: parts.headers.contains_key("x-goog-api-key") || pairs.iter().any(|(k, _)| *k == "key"),
        anthropic: parts.headers.contains_key("x-api-key") || parts.headers.contains_key("anthropic-version"),
    };
    let path = parts.uri.path();
    let route = match route(&parts.method, path, hints) {
        Ok(route) => route,
        Err(NoRoute::NotServed) => {
            return ex.refuse(None, 404, RefusalReason::NotServed, format!("this gateway does not serve {} {path}", parts.method));
        }
        Err(NoRoute::WrongMethod) => {
            return ex.refuse(None, 405, RefusalReason::NotServed, format!("this gateway does not serve {} {path}", parts.method));
        }
    };
    let protocol = route.protocol;
    let served = if route.endpoint.is_local() {
        !listing_upstreams(&ctx.config, protocol).is_empty()
    } else {
        ctx.config.upstream(protocol).is_some()
    };
    if !served {
        return ex.refuse(Some(protocol), 404, RefusalReason::NotServed, format!("this gateway serves no {protocol} model"));
    };
    if let Err(message) = check_token(&ctx, &route, &parts.headers, &pairs) {
        return ex.refuse(Some(protocol), 401, RefusalReason::Unauthorized, message);
    }
    let forwarded_query = match forwarded_query(route.endpoint, &pairs) {
        Ok(q) => q,
        Err(message) => return ex.refuse(Some(protocol), 400, RefusalReason::BadRequest, message),
    };
    if ctx.shared.fault().is_some() {
        let message = "the model service is unavailable for the rest of this episode".to_string();
        return ex.refuse(Some(protocol), 503, RefusalReason::UpstreamDead, message);
    }
    if ctx.shared.is_abandoned() {
        return ex.refuse(Some(protocol), 403, RefusalReason::Ended, "the episode has ended; no more model requests are served".into());
    }
    if let Some(length) = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok())
        && length > ctx.config.max_request_bytes as u64
    {
        return too_large(ex, protocol, ctx.config.max_request_bytes);
    }
    let body = match read_body(&ctx, body).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::TooLarge => return too_large(ex, protocol, ctx.config.max_request_bytes),
        BodyRead::ClientGone(received) => {
            ex.keep_incomplete_body(&received);
            ex.finish(Outcome::ClientGone);
            return Response::new(GwBody::Full(None));
        }
        BodyRead::Abandoned(received) => {
            ex.keep_incomplete_body(&received);
            return abandoned_reply(ex, protocol);
        }
    };
    if route.endpoint.is_local() {
        return answer_listing(ex, &ctx.config, &route, &body);
    }
    serve_model_request(ctx, ex, route, &parts.method, &parts.headers, forwarded_query, body).await
}

#[allow(clippy::too_many_arguments)]
async fn serve_model_request(
    ctx: Arc<Ctx>,
    mut ex: Exchange,
    route: Route,
    method: &Method,
    received: &HeaderMap,
    forwarded_query: String,
    body: Bytes,
) -> Response<GwBody> {
    let protocol = route.protocol;
    let Some(upstream) = ctx.config.upstream(protocol) else {
        return ex.refuse(Some(protocol), 404, RefusalReason::NotServed, format!("this gateway serves no {protocol} model"));
    };
    let top = TopLevel::read(&body);
    let (url, journal_url) = upstream_urls(upstream, &route.upstream_suffix, &forwarded_query);
    let (headers, journal_headers) = upstream_headers(&ctx.config, upstream, received);
    ex.upstream_url = Some(journal_url);
    ex.headers = journal_headers;
    let model = match &route.path_model {
        Some(model) => Some(model.clone()),
        None => top.as_ref().ok().and_then(|t| t.string("model")).and_then(Result::ok),
    };
    let top_ref = top.as_ref().ok();
    let stream = route.endpoint == Endpoint::StreamGenerateContent || top_ref.is_some_and(|t| t.is_true("stream"));
    // The journal cuts the body at its messages; their number is the message count.
    let stored = lock(&ctx.shared.journal).store_body(protocol, &body, top_ref);
    match stored {
        Ok(stored) => {
            ex.body = Some(stored.segments);
            ex.messages = stored.messages;
            ex.new_blobs = stored.new_blobs;
        }
        Err(e) => ctx.shared.set_fault(GatewayFault::Journal { message: specgap_protocol::text::error_chain(&e) }),
    }
    let tool_count = top_ref.and_then(|t| t.raw("tools")).map_or(0, |raw| count_elements(raw.get()));
    let mut info = RequestInfo {
        seq: ex.seq,
        protocol,
        endpoint: route.endpoint,
        model: model.clone(),
        stream,
        message_count: ex.messages.len(),
        tool_count,
        body_bytes: body.len(),
        class: RequestClass::Main,
    };
    info.class = info.default_class();
    ex.class = info.class;
    ex.info = Some(info.clone());
    let top = match top {
        Ok(top) => top,
        Err(e) => return ex.refuse(Some(protocol), 400, RefusalReason::BadRequest, e.to_string()),
    };
    let model = match (route.path_model.is_some(), top.string("model"), model) {
        (true, _, Some(model)) => model,
        (false, Some(Ok(model)), _) => model,
        (false, Some(Err(())), _) => {
            return ex.refuse(Some(protocol), 400, RefusalReason::BadRequest, "the request's \"model\" is not a string".into());
        }
        _ => return ex.refuse(Some(protocol), 400, RefusalReason::BadRequest, "the request names no model".into()),
    };
    if !upstream.models.contains(&model) {
        let message = format!("model {model:?} is not available here; available: {}", upstream.models.join(", "));
        return ex.refuse(Some(protocol), 403, RefusalReason::ModelNotAllowed, message);
    }
    let class = ctx.supervisor.classify(&info, &body);
    info.class = class;
    ex.class = class;
    ex.info = Some(info.clone());
    let admission = match admit(&ctx, &info).await {
        Some(admission) => admission,
        None => {
            return ex.refuse(Some(protocol), 403, RefusalReason::Ended, "the episode has ended; no more model requests are served".into());
        }
    };
    if let Admission::Refuse { status, message } = admission {
        let status = if (400..500).contains(&status) { status } else { 400 };
        return ex.refuse(Some(protocol), status, RefusalReason::Admission, message);
    }
    if ctx.shared.fault().is_some() {
        return ex.refuse(
            Some(protocol),
            503,
            RefusalReason::UpstreamDead,
            "the model service is unavailable for the rest of this episode".into(),
        );
    }
    let prepared = Prepared { method: method.clone(), url, headers, body, protocol, stream };
    let mut usage = Usage::default();
    let forwarded = upstream::forward(&ctx, &prepared, &mut usage).await;
    ex.usage = usage;
    match forwarded {
        Forwarded::Abandoned => {
            let body = crate::shape::error_body(
                Some(protocol),
                403,
                RefusalReason::Ended.code(),
                "the episode has ended; the model request was abandoned",
            );
            json_reply(ex, 403, body, Outcome::Abandoned)
        }
        Forwarded::Dead { attempts, fault } => {
            ctx.shared.set_fault(GatewayFault::UpstreamDead { seq: ex.seq, attempts, fault: fault.clone() });
            let message = format!("the model service failed after {attempts} attempts");
            let body = crate::shape::error_body(Some(protocol), 502, RefusalReason::UpstreamDead.code(), &message);
            json_reply(ex, 502, body, Outcome::UpstreamDead { attempts, fault })
        }
        Forwarded::Full { status, headers, body, event_stream } => {
            let body = ctx.redactor.redact(&body).into_owned();
            let outcome = if (200..300).contains(&status) {
                let mut parser = crate::response::ResponseParser::new(protocol, route.endpoint, event_stream);
                parser.feed(&body);
                let (response, tokens) = parser.finish();
                ex.usage.add(&tokens.usage());
                ex.cache_creation_tokens = tokens.cache_creation;
                ex.response = Some(response);
                Outcome::Completed
            } else {
                Outcome::UpstreamRejected
            };
            if ctx.shared.is_abandoned() {
                // The answer came in as the episode ended: its usage counts, the agent gets nothing of it.
                return abandoned_reply(ex, protocol);
            }
            let headers = client_headers(&ctx.redactor, &headers);
            ex.reply(status, headers, body, outcome)
        }
        Forwarded::Stream { status, headers, first, response, attempt_started } => {
            let headers = client_headers(&ctx.redactor, &headers);
            ex.set_head(status, &headers);
            let (sender, receiver) = mpsc::channel(16);
            tokio::spawn(upstream::pump(ctx.clone(), ex, response, first, sender, attempt_started));
            let mut reply = Response::new(GwBody::Channel(receiver));
            *reply.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            *reply.headers_mut() = headers;
            reply
        }
    }
}

/// How reading a request body ended.
enum BodyRead {
    /// Every byte arrived.
    Whole(Bytes),
    /// More than [`GatewayConfig::max_request_bytes`] arrived.
    TooLarge,
    /// The client went away first; what it had sent.
    ClientGone(Vec<u8>),
    /// The gateway was abandoned first (a stalled or slow upload at the wall budget); what
    /// had arrived.
    Abandoned(Vec<u8>),
}

/// Reads a request body frame by frame, up to the size limit, until it ends or the gateway
/// is abandoned: a client that sends its headers and then stalls mid-body must not hold the
/// exchange (and the end of the episode) past the wall budget (issue 31 item 3).
async fn read_body(ctx: &Ctx, mut body: Incoming) -> BodyRead {
    let limit = ctx.config.max_request_bytes;
    let abandoned = ctx.shared.abandoned();
    tokio::pin!(abandoned);
    let mut received: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::select! {
            biased;
            () = &mut abandoned => return BodyRead::Abandoned(received),
            frame = body.frame() => frame,
        };
        match frame {
            None => return BodyRead::Whole(Bytes::from(received)),
            Some(Err(_)) => return BodyRead::ClientGone(received),
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    if received.len() + data.len() > limit {
                        return BodyRead::TooLarge;
                    }
                    received.extend_from_slice(data);
                }
            }
        }
    }
}

/// The supervisor's admission of `info`. A supervisor whose [`Supervisor::admit`] may wait
/// ([`Supervisor::admission_waits`]) is asked on the runtime's blocking pool, so the other
/// exchanges of the episode (a stream under way, a side request) keep being served meanwhile;
/// `None` when the gateway is abandoned first (the request is then refused as ended, whatever
/// the supervisor answers later).
async fn admit(ctx: &Arc<Ctx>, info: &RequestInfo) -> Option<Admission> {
    if !ctx.supervisor.admission_waits() {
        return Some(ctx.supervisor.admit(info));
    }
    let supervisor = Arc::clone(&ctx.supervisor);
    let owned = info.clone();
    let asked = tokio::task::spawn_blocking(move || supervisor.admit(&owned));
    tokio::select! {
        biased;
        () = ctx.shared.abandoned() => None,
        answered = asked => Some(answered.unwrap_or_else(|_| Admission::refuse("the harness could not decide on this request"))),
    }
}

/// The number of elements of a JSON array (0 for anything else), without building them.
fn count_elements(raw: &str) -> usize {
    serde_json::from_str::<Vec<serde::de::IgnoredAny>>(raw).map_or(0, |v| v.len())
}

fn json_reply(ex: Exchange, status: u16, body: Vec<u8>, outcome: Outcome) -> Response<GwBody> {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    ex.reply(status, headers, body, outcome)
}

/// The 403 a request abandoned at the episode's end gets, recorded as [`Outcome::Abandoned`].
fn abandoned_reply(ex: Exchange, protocol: Protocol) -> Response<GwBody> {
    let body = crate::shape::error_body(
        Some(protocol),
        403,
        RefusalReason::Ended.code(),
        "the episode has ended; the model request was abandoned",
    );
    json_reply(ex, 403, body, Outcome::Abandoned)
}

fn too_large(ex: Exchange, protocol: Protocol, limit: usize) -> Response<GwBody> {
    ex.refuse(Some(protocol), 413, RefusalReason::TooLarge, format!("the request body is larger than {limit} bytes"))
}

/// Refuses CONNECT and every method but GET and POST, absolute-URI and `*` targets, and a
/// `Host` that is not the gateway's own.
fn check_target(ctx: &Ctx, method: &Method, uri: &http::Uri, headers: &HeaderMap) -> Result<(), (u16, String)> {
    if method != Method::GET && method != Method::POST {
        return Err((405, format!("this gateway does not serve the {method} method")));
    }
    if uri.scheme().is_some() || uri.authority().is_some() || !uri.path().starts_with('/') {
        return Err((400, "this gateway serves only origin-form request targets (a path), not absolute uris".into()));
    }
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Err((400, "the request needs exactly one host header".into()));
    };
    let host = host.to_str().map(str::to_ascii_lowercase).unwrap_or_default();
    if !ctx.hosts.contains(&host) {
        return Err((400, format!("this gateway does not serve host {host:?}")));
    }
    Ok(())
}

/// The raw `name=value` pairs of a query, in order (empty pieces skipped, nothing decoded).
fn query_pairs(query: &str) -> Vec<(&str, &str)> {
    query.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, ""))).collect()
}

/// The query forwarded upstream: the endpoint's allowed parameters in order, raw; `key`
/// (the token) is never forwarded. Any other parameter refuses the request (listings take
/// any: nothing is forwarded).
fn forwarded_query(endpoint: Endpoint, pairs: &[(&str, &str)]) -> Result<String, String> {
    let allowed: &[&str] = match endpoint {
        Endpoint::Messages | Endpoint::MessagesCountTokens => &["beta"],
        Endpoint::GenerateContent | Endpoint::StreamGenerateContent | Endpoint::CountTokens => &["alt", "key"],
        Endpoint::ListModels | Endpoint::GetModel => return Ok(String::new()),
        Endpoint::ChatCompletions | Endpoint::Responses | Endpoint::ResponsesInputTokens => &[],
    };
    let mut kept = Vec::new();
    for (name, value) in pairs {
        if !allowed.contains(name) {
            return Err(format!("this gateway does not accept the query parameter {name:?} on this endpoint"));
        }
        if *name != "key" {
            kept.push(format!("{name}={value}"));
        }
    }
    Ok(kept.join("&"))
}

/// Checks the sandbox's token: every credential presented (`Authorization: Bearer`,
/// `x-api-key`, `x-goog-api-key`, `api-key`, `?key=`) must be the token, and at least one must
/// be in a place the route's protocol uses.
fn check_token(ctx: &Ctx, route: &Route, headers: &HeaderMap, pairs: &[(&str, &str)]) -> Result<(), String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Place {
        Bearer,
        XApiKey,
        XGoogApiKey,
        ApiKey,
        Query,
    }
    let mut presented: Vec<(Place, &[u8])> = Vec::new();
    for value in headers.get_all(header::AUTHORIZATION) {
        let bytes = value.as_bytes();
        match bytes.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => presented.push((Place::Bearer, bytes[7..].trim_ascii())),
            _ => return Err("the authorization header must be a bearer token".into()),
        }
    }
    for (name, place) in [("x-api-key", Place::XApiKey), ("x-goog-api-key", Place::XGoogApiKey), ("api-key", Place::ApiKey)] {
        for value in headers.get_all(name) {
            presented.push((place, value.as_bytes()));
        }
    }
    for (name, value) in pairs {
        if *name == "key" {
            presented.push((Place::Query, value.as_bytes()));
        }
    }
    if presented.is_empty() {
        return Err("the request carries no api key".into());
    }
    if presented.iter().any(|(_, value)| !ctx.config.token.matches(value)) {
        return Err("the api key is not valid for this gateway".into());
    }
    let accepted: &[Place] = match (route.endpoint.is_local(), route.protocol) {
        (true, _) => &[Place::Bearer, Place::XApiKey, Place::XGoogApiKey, Place::ApiKey, Place::Query],
        (false, Protocol::OpenaiChat | Protocol::OpenaiResponses) => &[Place::Bearer],
        (false, Protocol::AnthropicMessages) => &[Place::XApiKey, Place::Bearer],
        (false, Protocol::Gemini) => &[Place::XGoogApiKey, Place::Query, Place::Bearer],
    };
    if !presented.iter().any(|(place, _)| accepted.contains(place)) {
        return Err(format!("the api key is not where {} clients send it", route.protocol));
    }
    Ok(())
}

/// The upstream URL, and the same with a query-placed key as the placeholder (the journal's).
fn upstream_urls(upstream: &Upstream, suffix: &str, query: &str) -> (String, String) {
    let base = format!("{}{suffix}", upstream.base_url.trim_end_matches('/'));
    let with = |key: Option<&str>| {
        let mut query = query.to_string();
        if let (KeyPlacement::Query(name), Some(key)) = (upstream.placement(), key)
            && upstream.api_key.is_some()
        {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(&format!("{name}={key}"));
        }
        if query.is_empty() { base.clone() } else { format!("{base}?{query}") }
    };
    (with(upstream.api_key.as_ref().map(|k| k.expose())), with(Some(KEY_PLACEHOLDER)))
}

/// The headers sent upstream (allow-listed client headers, `accept-encoding: identity`, the
/// key), and the same for the journal with the key as the placeholder.
fn upstream_headers(config: &GatewayConfig, upstream: &Upstream, client: &HeaderMap) -> (HeaderMap, Vec<(String, String)>) {
    let mut headers = HeaderMap::new();
    let mut journal = Vec::new();
    for (name, value) in client {
        let name_str = name.as_str();
        let allowed = FORWARDED_HEADERS.contains(&name_str)
            || FORWARDED_PREFIXES.iter().any(|p| name_str.starts_with(p))
            || config.extra_forward_headers.iter().any(|h| h.eq_ignore_ascii_case(name_str));
        let Ok(text) = value.to_str() else { continue };
        if allowed && !is_credential_header(name_str) {
            headers.append(name.clone(), value.clone());
            journal.push((name_str.to_string(), text.to_string()));
        }
    }
    headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    journal.push(("accept-encoding".into(), "identity".into()));
    if let Some(key) = &upstream.api_key {
        let (name, value, placeholder) = match upstream.placement() {
            KeyPlacement::Bearer => (Some(header::AUTHORIZATION), format!("Bearer {}", key.expose()), format!("Bearer {KEY_PLACEHOLDER}")),
            KeyPlacement::Header(name) => {
                (HeaderName::from_bytes(name.as_bytes()).ok(), key.expose().to_string(), KEY_PLACEHOLDER.to_string())
            }
            KeyPlacement::Query(_) => (None, String::new(), String::new()),
        };
        if let (Some(name), Ok(mut value)) = (name, HeaderValue::from_str(&value)) {
            value.set_sensitive(true);
            journal.push((name.as_str().to_string(), placeholder));
            headers.insert(name, value);
        }
    }
    (headers, journal)
}

/// Headers that carry credentials, which no allow-list entry may forward.
fn is_credential_header(name: &str) -> bool {
    matches!(name, "authorization" | "proxy-authorization" | "x-api-key" | "x-goog-api-key" | "api-key" | "cookie" | "x-goog-user-project")
}

/// The upstream's response headers as the client gets them: hop-by-hop, length, cookies and
/// connection hints dropped, secrets in values redacted.
pub(crate) fn client_headers(redactor: &Redactor, upstream: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in upstream {
        if DROPPED_RESPONSE_HEADERS.contains(&name.as_str()) {
            continue;
        }
        let value = if redactor.contains_secret(value.as_bytes()) {
            match HeaderValue::from_bytes(&redactor.redact(value.as_bytes())) {
                Ok(v) => v,
                Err(_) => continue,
            }
        } else {
            value.clone()
        };
        headers.append(name.clone(), value);
    }
    headers
}

/// The upstreams whose models a listing in `protocol`'s shape lists (both OpenAI protocols
/// for the OpenAI shape).
fn listing_upstreams(config: &GatewayConfig, protocol: Protocol) -> Vec<&Upstream> {
    let wanted: &[Protocol] = match protocol {
        Protocol::OpenaiChat | Protocol::OpenaiResponses => &[Protocol::OpenaiChat, Protocol::OpenaiResponses],
        Protocol::AnthropicMessages => &[Protocol::AnthropicMessages],
        Protocol::Gemini => &[Protocol::Gemini],
    };
    config.upstreams.iter().filter(|u| wanted.contains(&u.protocol)).collect()
}

/// Answers `GET .../models[/{model}]` from the configuration, in the protocol's shape.
fn answer_listing(mut ex: Exchange, config: &GatewayConfig, route: &Route, body: &[u8]) -> Response<GwBody> {
    let protocol = route.protocol;
    let mut models: Vec<&str> = Vec::new();
    for upstream in listing_upstreams(config, protocol) {
        for model in &upstream.models {
            if !models.contains(&model.as_str()) {
                models.push(model);
            }
        }
    }
    ex.info = Some(RequestInfo {
        seq: ex.seq,
        protocol,
        endpoint: route.endpoint,
        model: route.path_model.clone(),
        stream: false,
        message_count: 0,
        tool_count: 0,
        body_bytes: body.len(),
        class: RequestClass::Side,
    });
    let entry = |model: &str| match protocol {
        Protocol::AnthropicMessages => json!({"type": "model", "id": model, "display_name": model, "created_at": "1970-01-01T00:00:00Z"}),
        Protocol::Gemini => json!({
            "name": format!("models/{model}"),
            "displayName": model,
            "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
        }),
        Protocol::OpenaiChat | Protocol::OpenaiResponses => {
            json!({"id": model, "object": "model", "created": 0, "owned_by": "specgap-gateway"})
        }
    };
    let value: Value = match &route.path_model {
        Some(asked) => {
            let name = asked.strip_prefix("models/").unwrap_or(asked);
            if !models.contains(&name) {
                let message = format!("model {name:?} is not available here");
                return ex.refuse(Some(protocol), 404, RefusalReason::ModelNotAllowed, message);
            }
            entry(name)
        }
        None => {
            let data: Vec<Value> = models.iter().map(|m| entry(m)).collect();
            match protocol {
                Protocol::AnthropicMessages => json!({
                    "data": data, "has_more": false,
                    "first_id": models.first(), "last_id": models.last(),
                }),
                Protocol::Gemini => json!({"models": data}),
                Protocol::OpenaiChat | Protocol::OpenaiResponses => json!({"object": "list", "data": data}),
            }
        }
    };
    let body = value.to_string().into_bytes();
    json_reply(ex, 200, body, Outcome::Local)
}

/// The `Host` values a TCP listener at `addr` accepts: its own address and `localhost` at its
/// port (`127.0.0.1` too when it listens on every address), plus the configured extras.
pub(crate) fn tcp_hosts(addr: std::net::SocketAddr, extra: &[String]) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![format!("localhost:{port}")];
    match addr {
        std::net::SocketAddr::V4(v4) => {
            hosts.push(format!("{}:{port}", v4.ip()));
            if v4.ip().is_unspecified() {
                hosts.push(format!("127.0.0.1:{port}"));
            }
        }
        std::net::SocketAddr::V6(v6) => {
            hosts.push(format!("[{}]:{port}", v6.ip()));
            if v6.ip().is_unspecified() {
                hosts.push(format!("[::1]:{port}"));
            }
        }
    }
    hosts.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
    hosts
}

/// The `Host` values a Unix-socket listener accepts: `localhost` and the configured extras.
pub(crate) fn unix_hosts(extra: &[String]) -> Vec<String> {
    let mut hosts = vec!["localhost".to_string()];
    hosts.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_keeps_only_allowed_parameters_and_never_the_key() {
        assert_eq!(forwarded_query(Endpoint::StreamGenerateContent, &query_pairs("alt=sse&key=t")), Ok("alt=sse".into()));
        assert_eq!(forwarded_query(Endpoint::Messages, &query_pairs("beta=true")), Ok("beta=true".into()));
        assert!(forwarded_query(Endpoint::ChatCompletions, &query_pairs("beta=true")).is_err());
        assert!(forwarded_query(Endpoint::GenerateContent, &query_pairs("%6Bey=t")).is_err());
        assert_eq!(forwarded_query(Endpoint::ChatCompletions, &query_pairs("")), Ok(String::new()));
    }

    #[test]
    fn host_lists_name_the_listener() {
        let hosts = tcp_hosts("127.0.0.1:4000".parse().unwrap(), &["Gateway.Local:4000".into()]);
        assert_eq!(hosts, vec!["localhost:4000", "127.0.0.1:4000", "gateway.local:4000"]);
        assert_eq!(tcp_hosts("[::1]:5".parse().unwrap(), &[]), vec!["localhost:5", "[::1]:5"]);
    }
}
