//! The HTTP side of the chat agent and the LLM user: one `POST {base_url}/chat/completions`
//! per completion, streamed (SSE) or not, with retries.
//!
//! # Faults (issue "chat agent" item 2)
//!
//! * HTTP 408, 425, 429 and 5xx, connection errors, timeouts (`request_timeout_sec`), a body
//!   that is not JSON, and a stream that ends before its last chunk are *retried* with
//!   exponential backoff (`retry_base_ms · 2^(n−1)`, at most 60 s, times a jitter in
//!   [0.5, 1) drawn from a seeded ChaCha8 generator); a `Retry-After: <seconds>` header
//!   replaces the computed delay. Retries are not turns. After `max_retries` retries the
//!   completion fails with [`ClientError::Exhausted`].
//! * HTTP 400 / 413 / 422 whose body speaks of the context length is
//!   [`ClientError::ContextOverflow`].
//! * Any other HTTP error (401, 404, a 400 about something else) is
//!   [`ClientError::Rejected`]: retrying the same request cannot help.
//!
//! # The episode's deadline and usage ([`ChatClient::attach`])
//!
//! Each try gets `request_timeout_sec`, shortened to the time the episode's [`Deadline`] has
//! left; each backoff sleep ends at the deadline too. While a try is in flight the client
//! looks at the deadline every [`DEADLINE_POLL`]; once it is over (the wall budget ended, or
//! a stop was requested) the request is dropped — its connection closed, so the server can
//! stop generating — and the completion fails with [`ClientError::Abandoned`]: not a fault,
//! never retried. The usage of every try (its answered requests, a retry, its latency, the
//! tokens and cost of a reply) goes to the [`UsageSink`] as soon as the try ends, so a
//! failing or abandoned completion loses nothing of what was spent.
//!
//! Requests run on a single-threaded tokio runtime owned by the client (on the caller's
//! thread), so abandoning one cancels it instead of leaving it to finish in the background.
//!
//! The API key is read from the environment variable the configuration names when the
//! client is made, sent only as `Authorization: Bearer …`, and never stored or logged.

use std::future::Future;
use std::time::{Duration, Instant};

use rand::Rng as _;
use rand::SeedableRng as _;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use specgap_engine::session::{DEADLINE_POLL, Deadline, SessionLink, UsageSink};
use specgap_protocol::event::{ToolCall, ToolSpec, Usage};
use specgap_protocol::request::ChatBody;
use specgap_store::Role;

use crate::chat::ChatConfig;
use crate::chat::price::Price;
use crate::chat::wire::{ChatResponse, WireMessage, WireUsage, arguments_value};

/// Longest computed backoff delay.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// One completed model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The assistant text (may be empty).
    pub text: String,
    /// Native tool calls, in order; ids as the server gave them (possibly empty).
    pub tool_calls: Vec<ToolCall>,
    /// `finish_reason` as sent (`""` when absent).
    pub finish_reason: String,
    /// A refusal text, when the server marks one.
    pub refusal: Option<String>,
    /// Usage of this completion, retries included.
    pub usage: Usage,
}

/// Why a completion failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request does not fit the model's context window (server error or our estimate).
    #[error("the conversation no longer fits the model's context window")]
    ContextOverflow {
        /// Usage spent finding out.
        usage: Usage,
    },
    /// Retries are used up.
    #[error("model service failed after {attempts} attempts; last fault: {last}")]
    Exhausted {
        /// Requests tried.
        attempts: u32,
        /// The last fault, lowercase.
        last: String,
        /// Usage spent.
        usage: Usage,
    },
    /// The episode's deadline became over (wall budget ended, or a stop was requested) before
    /// a reply came; the request in flight was dropped. Not a fault of the service.
    #[error("the request was abandoned: the episode's time is up or a stop was requested")]
    Abandoned {
        /// Usage spent until then (requests answered before, retries, latency; no tokens of
        /// the abandoned try).
        usage: Usage,
    },
    /// The wall budget ended while the service was failing: every try of this completion failed
    /// for infrastructure reasons (the last one or its backoff was cut by the deadline). An
    /// infrastructure error, not the agent's end (docs/decisions.md "Failures are never the
    /// agent's: a service failing at the wall budget").
    #[error(
        "the model service was still failing when the wall budget ended ({attempts} failed {}); last fault: {last}",
        if *attempts == 1 { "try" } else { "tries" }
    )]
    FailingAtDeadline {
        /// Tries that failed.
        attempts: u32,
        /// The last fault, lowercase.
        last: String,
        /// Usage spent.
        usage: Usage,
    },
    /// The server refused the request in a way a retry cannot change.
    #[error("model service rejected the request with http {status}: {body}")]
    Rejected {
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
        /// Usage spent.
        usage: Usage,
    },
    /// The HTTP client cannot be built.
    #[error("cannot build the http client")]
    Build(#[source] reqwest::Error),
    /// The client's runtime cannot be started.
    #[error("cannot start the http client's runtime")]
    Runtime(#[source] std::io::Error),
}

impl ClientError {
    /// Usage spent on the failed completion.
    pub fn usage(&self) -> Usage {
        match self {
            ClientError::ContextOverflow { usage }
            | ClientError::Exhausted { usage, .. }
            | ClientError::FailingAtDeadline { usage, .. }
            | ClientError::Rejected { usage, .. }
            | ClientError::Abandoned { usage } => usage.clone(),
            ClientError::Build(_) | ClientError::Runtime(_) => Usage::default(),
        }
    }
}

/// One failed try.
enum Fault {
    Retry {
        message: String,
        retry_after: Option<Duration>,
    },
    ContextOverflow,
    Rejected {
        status: u16,
        body: String,
    },
    /// The deadline became over while the try was in flight.
    Abandoned,
}

/// A chat-completions client for one model.
pub struct ChatClient {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    request_timeout: Duration,
    link: SessionLink,
    url: String,
    api_key: Option<String>,
    model: String,
    model_args: Map<String, Value>,
    stream: bool,
    max_retries: u32,
    retry_base: Duration,
    price: Option<Price>,
    rng: ChaCha8Rng,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed.
        f.debug_struct("ChatClient").field("url", &self.url).field("model", &self.model).finish_non_exhaustive()
    }
}

/// Checks a model endpoint's base URL where it is configured (a flag or run.toml), so a bad
/// one is refused before the first episode instead of being found by retrying every request
/// (issue 31 item 9): it must parse, be `http` or `https`, name a host, and carry no query,
/// fragment or user info (the key goes in a header, never the URL).
///
/// # Errors
/// The reason, naming the URL.
pub fn check_base_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("the base URL {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("the base URL {url:?} must be http:// or https://, not {}://", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("the base URL {url:?} names no host"));
    }
    if !specgap_gateway::is_plain_http_url(&parsed) {
        return Err(format!("the base URL {url:?} must be http(s)://host[:port][/path], without query, fragment or user info"));
    }
    Ok(())
}

/// Says once per process and variable that `var`, named as an endpoint's API key variable by
/// `source` (a flag such as `--api-key-env`, or a file and key), is not set or empty, so
/// requests carry no `Authorization` header; nothing when it is set, or when it is the default
/// [`super::DEFAULT_API_KEY_ENV`] (local servers without keys leave that one unset). A
/// variable named on purpose but not set is most likely a mistake. Clients call it with a
/// generic source; a caller that knows where the name came from calls it first.
pub fn warn_unset_api_key(var: &str, source: &str) {
    static WARNED: std::sync::Mutex<std::collections::BTreeSet<String>> = std::sync::Mutex::new(std::collections::BTreeSet::new());
    if var == super::DEFAULT_API_KEY_ENV || std::env::var(var).is_ok_and(|k| !k.trim().is_empty()) {
        return;
    }
    if WARNED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(var.to_string()) {
        tracing::warn!("environment variable {var} ({source}) is not set or empty; requests carry no Authorization header");
    }
}

impl ChatClient {
    /// A client for `config`, reading the API key from `config.api_key_env` now (absent or
    /// empty: no `Authorization` header); `seed` seeds the backoff jitter.
    ///
    /// # Errors
    /// [`ClientError::Build`] when the HTTP client cannot be built.
    pub fn new(config: &ChatConfig, seed: u64) -> Result<Self, ClientError> {
        let timeout = Duration::from_secs_f64(config.request_timeout_sec.max(0.001));
        // The whole try is timed by `send_once` (capped by the deadline); only connecting
        // has a limit of its own.
        let http = reqwest::Client::builder().connect_timeout(timeout.min(Duration::from_secs(30))).build().map_err(ClientError::Build)?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(ClientError::Runtime)?;
        let api_key = std::env::var(&config.api_key_env).ok().filter(|k| !k.trim().is_empty());
        // Quiet when the caller already warned with where the name came from.
        warn_unset_api_key(&config.api_key_env, "the endpoint's api_key_env");
        Ok(ChatClient {
            http,
            runtime,
            request_timeout: timeout,
            link: SessionLink::detached(Role::Agent),
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            api_key,
            model: config.model.clone(),
            model_args: config.model_args.clone(),
            stream: config.stream,
            max_retries: config.max_retries,
            retry_base: Duration::from_millis(config.retry_base_ms),
            price: config.price,
            rng: ChaCha8Rng::seed_from_u64(seed),
        })
    }

    /// Takes the episode's deadline and usage sink (module guide); until then requests have
    /// no deadline and their usage is only summed.
    pub fn attach(&mut self, link: &SessionLink) {
        self.link = link.clone();
    }

    /// The deadline requests are held to.
    pub fn deadline(&self) -> &Deadline {
        &self.link.deadline
    }

    /// The sink every try's usage goes to.
    pub fn usage_sink(&self) -> &UsageSink {
        &self.link.usage
    }

    /// The request body: model, messages, tools (when any), stream flags, then the model
    /// arguments, which may override anything but the messages and tools.
    pub fn request_body(&self, messages: &[WireMessage], tools: &[ToolSpec]) -> Value {
        let mut body = self.request_fields(tools);
        body.insert("messages".into(), json!(messages));
        Value::Object(body)
    }

    /// The request body as the bytes [`ChatClient::complete`] sends, and cut into segments
    /// with each message by its content address ([`specgap_protocol::request`]): the
    /// members of [`ChatClient::request_body`], in key order, compact.
    pub fn prepare(&self, messages: &[WireMessage], tools: &[ToolSpec]) -> ChatBody {
        let texts = messages.iter().map(|m| json!(m).to_string()).collect();
        ChatBody::build(&self.request_fields(tools), "messages", texts)
    }

    /// Every member of the body but the messages.
    fn request_fields(&self, tools: &[ToolSpec]) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("stream".into(), json!(self.stream));
        if self.stream {
            body.insert("stream_options".into(), json!({ "include_usage": true }));
        }
        for (key, value) in &self.model_args {
            body.insert(key.clone(), value.clone());
        }
        body.remove("messages");
        if !tools.is_empty() {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| json!({ "type": "function", "function": { "name": t.name, "description": t.description, "parameters": t.parameters } }))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body
    }

    /// One completion, with retries (module guide).
    ///
    /// # Errors
    /// [`ClientError`] as the module guide says.
    pub fn complete(&mut self, messages: &[WireMessage], tools: &[ToolSpec]) -> Result<Completion, ClientError> {
        let body = self.prepare(messages, tools);
        self.complete_body(&body.bytes)
    }

    /// One completion of a body given as bytes, sent exactly as given (`Content-Type:
    /// application/json`), with the retries, deadline and usage of [`ChatClient::complete`]:
    /// for a request stored earlier and sent again (`specgap resample`). The body's own
    /// `stream` member should match the configuration's, which decides how the answer is read.
    ///
    /// # Errors
    /// [`ClientError`] as the module guide says.
    pub fn complete_body(&mut self, body: &[u8]) -> Result<Completion, ClientError> {
        // Summed over the tries, for the completion or the error; each try is also recorded.
        let mut usage = Usage::default();
        let mut attempt = 0u32;
        // The fault of the last failed try, while every try so far failed.
        let mut failing: Option<String> = None;
        loop {
            if self.link.deadline.is_over() {
                return Err(self.abandoned(attempt, failing, usage));
            }
            let mut spent = Usage::default();
            let started = Instant::now();
            let outcome = self.send_once(body, &mut spent);
            spent.latency_ms += u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let fault = match outcome {
                Ok(mut completion) => {
                    if let Some(price) = &self.price {
                        spent.cost_usd += price.cost(&completion.usage);
                    }
                    spent.add(&completion.usage);
                    self.spend(&spent, &mut usage);
                    completion.usage = usage;
                    return Ok(completion);
                }
                Err(fault) => fault,
            };
            match fault {
                Fault::Abandoned => {
                    self.spend(&spent, &mut usage);
                    return Err(self.abandoned(attempt, failing, usage));
                }
                Fault::ContextOverflow => {
                    self.spend(&spent, &mut usage);
                    return Err(ClientError::ContextOverflow { usage });
                }
                Fault::Rejected { status, body } => {
                    self.spend(&spent, &mut usage);
                    return Err(ClientError::Rejected { status, body, usage });
                }
                Fault::Retry { message, retry_after } => {
                    if attempt >= self.max_retries {
                        self.spend(&spent, &mut usage);
                        return Err(ClientError::Exhausted { attempts: attempt + 1, last: message, usage });
                    }
                    attempt += 1;
                    spent.retries += 1;
                    self.spend(&spent, &mut usage);
                    failing = Some(message.clone());
                    let delay = retry_after.map_or_else(|| self.backoff(attempt), |d| d.min(MAX_RETRY_AFTER));
                    tracing::warn!("model request failed ({message}); retry {attempt} of {} in {delay:?}", self.max_retries);
                    // Cut short at the deadline; the check above then abandons the completion.
                    self.link.deadline.sleep(delay);
                }
            }
        }
    }

    /// The error of a completion the deadline cut after `failed` tries had failed with `last`:
    /// [`ClientError::FailingAtDeadline`] when the wall budget ended while the service was
    /// failing, else (nothing failed yet, or a stop was requested) [`ClientError::Abandoned`].
    fn abandoned(&self, failed: u32, last: Option<String>, usage: Usage) -> ClientError {
        match last {
            Some(last) if !self.link.deadline.stop_requested() => ClientError::FailingAtDeadline { attempts: failed, last, usage },
            _ => ClientError::Abandoned { usage },
        }
    }

    /// Records one try's usage in the sink and adds it to the completion's sum.
    fn spend(&self, spent: &Usage, total: &mut Usage) {
        self.link.usage.record(spent);
        total.add(spent);
    }

    /// `retry_base · 2^(attempt−1)`, capped, times a seeded jitter in [0.5, 1).
    fn backoff(&mut self, attempt: u32) -> Duration {
        let exponential = self.retry_base.saturating_mul(1u32 << (attempt - 1).min(16)).min(MAX_BACKOFF);
        exponential.mul_f64(self.rng.random_range(0.5..1.0))
    }

    /// One try: the exchange under the request timeout shortened to the deadline, dropped
    /// once the deadline is over.
    fn send_once(&self, body: &[u8], usage: &mut Usage) -> Result<Completion, Fault> {
        let deadline = &self.link.deadline;
        let limit = deadline.cap(self.request_timeout);
        if limit.is_zero() {
            return Err(Fault::Abandoned);
        }
        self.runtime.block_on(async {
            match until_over(tokio::time::timeout(limit, self.exchange(body, usage)), deadline).await {
                None => Err(Fault::Abandoned),
                Some(Err(_elapsed)) if deadline.is_over() => Err(Fault::Abandoned),
                Some(Err(_elapsed)) => Err(Fault::Retry { message: "the request timed out".into(), retry_after: None }),
                Some(Ok(result)) => result,
            }
        })
    }

    async fn exchange(&self, body: &[u8], usage: &mut Usage) -> Result<Completion, Fault> {
        let mut request = self.http.post(&self.url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.to_vec());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| Fault::Retry { message: transport_message(&e), retry_after: None })?;
        usage.requests += 1;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
            let text = response.text().await.unwrap_or_default();
            return Err(classify_status(status.as_u16(), &text, retry_after));
        }
        if self.stream { read_stream(response).await } else { read_body(response).await }
    }
}

/// Runs `future` to its end, or until `deadline` is over (looked at every
/// [`DEADLINE_POLL`]); `None` then, and the future is dropped with whatever it had open.
async fn until_over<F: Future>(future: F, deadline: &Deadline) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    loop {
        if let Ok(output) = tokio::time::timeout(DEADLINE_POLL, &mut future).await {
            return Some(output);
        }
        if deadline.is_over() {
            return None;
        }
    }
}

fn transport_message(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "the request timed out".into()
    } else if e.is_connect() {
        match e.url() {
            Some(url) => format!("cannot connect to the model service at {}", redacted_url(url)),
            None => "cannot connect to the model service".into(),
        }
    } else {
        format!("transport error: {e}")
    }
}

/// The URL a request went to, without user info or query string, so an error message can name
/// the endpoint without carrying a credential (the API key itself travels only in a header).
fn redacted_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    // Both setters fail only for URLs that cannot have credentials; then there is nothing to hide.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// Whether an error body speaks of the context window.
fn mentions_context(body: &str) -> bool {
    let lower = body.to_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "too many tokens",
        "prompt is too long",
        "maximum input length",
        "reduce the length",
        "input is too long",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

fn classify_status(status: u16, body: &str, retry_after: Option<Duration>) -> Fault {
    let short: String = body.chars().take(300).collect();
    match status {
        400 | 413 | 422 if mentions_context(body) => Fault::ContextOverflow,
        408 | 425 | 429 | 500..=599 => Fault::Retry { message: format!("http {status}: {short}"), retry_after },
        _ => Fault::Rejected { status, body: short },
    }
}

async fn read_body(response: reqwest::Response) -> Result<Completion, Fault> {
    let text = response.text().await.map_err(|e| Fault::Retry { message: transport_message(&e), retry_after: None })?;
    let parsed: ChatResponse = serde_json::from_str(&text)
        .map_err(|e| Fault::Retry { message: format!("the response body is not the expected json: {e}"), retry_after: None })?;
    if parsed.choices.is_empty() {
        return Err(body_error(parsed.error.as_ref()));
    }
    let mut acc = Accumulator::default();
    acc.absorb(parsed, false);
    Ok(acc.finish())
}

/// A fault for a body that carries an error object (or nothing) instead of choices.
fn body_error(error: Option<&Value>) -> Fault {
    let text = error.map(Value::to_string).unwrap_or_else(|| "a response without choices".into());
    if mentions_context(&text) {
        Fault::ContextOverflow
    } else {
        Fault::Retry {
            message: format!("the service answered with an error: {}", text.chars().take(300).collect::<String>()),
            retry_after: None,
        }
    }
}

async fn read_stream(mut response: reqwest::Response) -> Result<Completion, Fault> {
    let broke = |e: &dyn std::fmt::Display| Fault::Retry { message: format!("the stream broke: {e}"), retry_after: None };
    let mut acc = Accumulator::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut ended = false;
    while !ended {
        match response.chunk().await.map_err(|e| broke(&e))? {
            Some(chunk) => pending.extend_from_slice(&chunk),
            // The last line may lack its newline.
            None => {
                ended = true;
                pending.push(b'\n');
            }
        }
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = std::str::from_utf8(&line).map_err(|e| broke(&e))?;
            if stream_line(&mut acc, line)? {
                return Ok(acc.finish());
            }
        }
    }
    if acc.finish_reason.is_none() {
        return Err(Fault::Retry { message: "the stream ended before the completion did".into(), retry_after: None });
    }
    Ok(acc.finish())
}

/// Takes one SSE line into `acc`; `true` at `data: [DONE]`.
fn stream_line(acc: &mut Accumulator, line: &str) -> Result<bool, Fault> {
    let Some(data) = line.trim().strip_prefix("data:") else { return Ok(false) };
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(true);
    }
    let chunk: ChatResponse = serde_json::from_str(data)
        .map_err(|e| Fault::Retry { message: format!("a stream chunk is not the expected json: {e}"), retry_after: None })?;
    if chunk.choices.is_empty() && chunk.usage.is_none() {
        return Err(body_error(chunk.error.as_ref()));
    }
    acc.absorb(chunk, true);
    Ok(false)
}

/// Collects a response or streamed chunks into a [`Completion`].
#[derive(Default)]
struct Accumulator {
    text: String,
    refusal: String,
    finish_reason: Option<String>,
    /// (id, name, arguments text or value) by index.
    calls: Vec<(String, String, String, Option<Value>)>,
    usage: Option<WireUsage>,
}

impl Accumulator {
    fn absorb(&mut self, response: ChatResponse, streamed: bool) {
        if response.usage.is_some() {
            self.usage = response.usage;
        }
        let Some(choice) = response.choices.into_iter().next() else { return };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason);
        }
        let Some(message) = (if streamed { choice.delta.or(choice.message) } else { choice.message.or(choice.delta) }) else {
            return;
        };
        self.text.push_str(&message.text());
        if let Some(refusal) = &message.refusal {
            self.refusal.push_str(refusal);
        }
        for (position, call) in message.tool_calls.into_iter().enumerate() {
            let index = if streamed { call.index.map_or(position, |i| i as usize) } else { self.calls.len() };
            while self.calls.len() <= index {
                self.calls.push(Default::default());
            }
            let slot = &mut self.calls[index];
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                slot.0 = id;
            }
            if let Some(name) = call.function.name.filter(|n| !n.is_empty()) {
                slot.1.push_str(&name);
            }
            match call.function.arguments {
                Some(Value::String(part)) => slot.2.push_str(&part),
                Some(Value::Null) | None => {}
                Some(object) => slot.3 = Some(object),
            }
        }
    }

    fn finish(self) -> Completion {
        let tool_calls = self
            .calls
            .into_iter()
            .filter(|(_, name, _, _)| !name.is_empty())
            .map(|(id, name, text, object)| ToolCall {
                id,
                tool: name,
                arguments: object.unwrap_or_else(|| arguments_value(Some(&Value::String(text)))),
            })
            .collect();
        let usage = self.usage.map(|u| Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cached_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            reasoning_tokens: u.completion_tokens_details.map_or(0, |d| d.reasoning_tokens),
            ..Usage::default()
        });
        Completion {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason.unwrap_or_default(),
            refusal: Some(self.refusal).filter(|r| !r.trim().is_empty()),
            usage: usage.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_that_cannot_reach_a_model_server_are_refused_with_the_reason() {
        assert_eq!(check_base_url("http://localhost:8000/v1"), Ok(()));
        assert_eq!(check_base_url("https://api.example.com/v1/"), Ok(()));
        assert_eq!(
            check_base_url("file:///etc/passwd"),
            Err("the base URL \"file:///etc/passwd\" must be http:// or https://, not file://".into())
        );
        assert_eq!(check_base_url("http://[::1"), Err("the base URL \"http://[::1\" is not a URL: invalid IPv6 address".into()));
        assert_eq!(
            check_base_url("http://user:pw@host/v1"),
            Err("the base URL \"http://user:pw@host/v1\" must be http(s)://host[:port][/path], without query, fragment or user info".into())
        );
        assert!(check_base_url("localhost:8000").is_err());
    }

    #[test]
    fn statuses_are_classified() {
        assert!(matches!(classify_status(400, "This model's maximum context length is 8192 tokens", None), Fault::ContextOverflow));
        assert!(matches!(classify_status(400, "bad temperature", None), Fault::Rejected { status: 400, .. }));
        assert!(matches!(classify_status(429, "slow down", Some(Duration::from_secs(2))), Fault::Retry { retry_after: Some(_), .. }));
        assert!(matches!(classify_status(503, "", None), Fault::Retry { .. }));
        assert!(matches!(classify_status(401, "no key", None), Fault::Rejected { status: 401, .. }));
    }

    #[test]
    fn a_refused_connection_names_the_url_without_credentials() {
        // Port 1 on the loopback interface has no listener: the connection is refused locally.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let request = reqwest::Client::new()
            .post("http://user:secret@127.0.0.1:1/v1/chat/completions?api-key=secret")
            .bearer_auth("sk-secret")
            .send();
        let error = runtime.block_on(request).unwrap_err();
        assert_eq!(transport_message(&error), "cannot connect to the model service at http://127.0.0.1:1/v1/chat/completions");
    }

    #[test]
    fn streamed_tool_call_deltas_join() {
        let mut acc = Accumulator::default();
        for chunk in [
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo","tool_calls":[{"index":0,"id":"c1","function":{"name":"read_text","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}"#,
        ] {
            acc.absorb(serde_json::from_str(chunk).unwrap(), true);
        }
        let c = acc.finish();
        assert_eq!(c.text, "Hello");
        assert_eq!(c.tool_calls, vec![ToolCall { id: "c1".into(), tool: "read_text".into(), arguments: json!({"path": "a"}) }]);
        assert_eq!(c.finish_reason, "tool_calls");
        assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (5, 3));
    }
}
