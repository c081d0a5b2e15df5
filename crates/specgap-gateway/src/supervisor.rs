//! The engine's side of the gateway: the [`Supervisor`] hooks (classify, admit, price, and
//! the record of each exchange) and the types they see.
//!
//! For every request that reaches routing the gateway calls, on its own thread and in this
//! order: [`Supervisor::classify`] (main-loop turn or side request), [`Supervisor::admit`]
//! (forward, or refuse with a status and a message the CLI reads as a normal API error), and,
//! once the exchange is over whatever happened, [`Supervisor::exchange_done`] with its
//! [`ExchangeRecord`] (usage priced by [`Supervisor::price`]). Requests refused before routing
//! (a wrong token, a foreign host, CONNECT, a path off the allow-list) and locally answered
//! model listings are not admitted (nothing is spent) but still recorded.
//!
//! The hooks run on the gateway's runtime thread (an admission that may wait, on its blocking
//! pool: [`Supervisor::admission_waits`]): keep them short and never block on the gateway itself ([`crate::GatewayHandle::shutdown`] from inside a hook would wait for
//! itself; [`crate::GatewayHandle::abandon`] is fine).

use std::time::Instant;

use serde::{Deserialize, Serialize};
use specgap_protocol::event::Usage;

use crate::config::Protocol;
use crate::endpoint::Endpoint;
use crate::journal::{Blob, MessageRef};
use crate::response::ModelResponse;

/// Whether a request is one of the agent's main-loop turns (issue 14 item 1: a `cli:`
/// agent's turn is one main-loop model request) or a side request (token counting, model
/// listing, titles, summaries), which is recorded and priced but is not a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestClass {
    /// A main-loop turn.
    Main,
    /// A side request.
    Side,
}

/// What the gateway knows of a routed request before forwarding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestInfo {
    /// 0-based number of the request in the gateway's arrival order (the journal's key).
    pub seq: u64,
    /// The protocol.
    pub protocol: Protocol,
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The model named (body `model`, or the Gemini path); `None` for a listing.
    pub model: Option<String>,
    /// Whether the client asked for a streamed response (`"stream": true`, or Gemini's
    /// `:streamGenerateContent`).
    pub stream: bool,
    /// Messages in the conversation sent (`messages`, `input` items, `contents`).
    pub message_count: usize,
    /// Tools offered (`tools` entries).
    pub tool_count: usize,
    /// Request body size, bytes.
    pub body_bytes: usize,
    /// The default class ([`RequestInfo::default_class`]) until [`Supervisor::classify`] has
    /// answered, then its answer.
    pub class: RequestClass,
}

impl RequestInfo {
    /// The rule used unless the supervisor decides otherwise: token counting and model
    /// listing are side requests, every generating request is a main-loop turn. Adapters
    /// whose CLI makes side generations (titles, summaries, a small model for quick tasks)
    /// refine it in [`Supervisor::classify`], e.g. by the model or the body.
    pub fn default_class(&self) -> RequestClass {
        if self.endpoint.generates() { RequestClass::Main } else { RequestClass::Side }
    }
}

/// The supervisor's answer before a request is forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Forward it.
    Admit,
    /// Refuse it: the client gets `status` with `message` in its protocol's error shape
    /// (never forwarded). Use a status the protocol's SDKs do not retry (400 or 403, not 429
    /// or 5xx), so the CLI stops instead of trying again.
    Refuse {
        /// HTTP status, 400–499.
        status: u16,
        /// The sentence the agent reads (lowercase, no key, no private detail).
        message: String,
    },
}

impl Admission {
    /// A refusal with status 400 (an `invalid_request_error`, which no SDK retries).
    pub fn refuse(message: impl Into<String>) -> Self {
        Admission::Refuse { status: 400, message: message.into() }
    }
}

/// Why the gateway refused a request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// CONNECT or another method off the list, an absolute-URI or `*` target, a missing or
    /// foreign `Host` (400 / 405).
    BadTarget,
    /// A path off the allow-list, or a protocol without an upstream (404 / 405).
    NotServed,
    /// No token, or a wrong one, in a credential header or `?key=` (401).
    Unauthorized,
    /// A query parameter off the list, a body that is not a JSON object, a duplicate
    /// top-level key, a missing or non-string model (400).
    BadRequest,
    /// A body larger than the limit (413).
    TooLarge,
    /// A model the configuration does not list (403).
    ModelNotAllowed,
    /// [`Supervisor::admit`] refused it (its status).
    Admission,
    /// The gateway was abandoned (deadline, [`crate::GatewayHandle::abandon`]) (403).
    Ended,
    /// An upstream was found dead earlier; nothing more is forwarded (503).
    UpstreamDead,
}

impl RefusalReason {
    /// The short code put into the error body (`bad_target`, `budget`, ...).
    pub fn code(self) -> &'static str {
        match self {
            RefusalReason::BadTarget => "bad_target",
            RefusalReason::NotServed => "not_served",
            RefusalReason::Unauthorized => "unauthorized",
            RefusalReason::BadRequest => "bad_request",
            RefusalReason::TooLarge => "too_large",
            RefusalReason::ModelNotAllowed => "model_not_allowed",
            RefusalReason::Admission => "budget",
            RefusalReason::Ended => "episode_ended",
            RefusalReason::UpstreamDead => "upstream_unavailable",
        }
    }
}

/// How an exchange ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The upstream answered 2xx and the answer was forwarded whole.
    Completed,
    /// The upstream answered an error status that is not retried (4xx other than 408 / 425 /
    /// 429); it was forwarded (redacted).
    UpstreamRejected,
    /// Answered by the gateway (model listing).
    Local,
    /// Refused by the gateway; never forwarded.
    Refused {
        /// Why.
        reason: RefusalReason,
        /// What the client was told.
        message: String,
    },
    /// A streamed answer broke after bytes had reached the client: the client's stream was
    /// ended with the protocol's error event (docs/decisions.md "Gateway: retries and cut
    /// streams").
    StreamCut {
        /// What broke, lowercase.
        fault: String,
    },
    /// The deadline passed or the gateway was abandoned while the exchange was in flight:
    /// nothing more of the upstream's answer reached the client.
    Abandoned,
    /// The client closed the connection first.
    ClientGone,
    /// Every try failed (retries used up): an infrastructure error, never the agent's fault.
    /// The gateway forwards nothing more afterwards.
    UpstreamDead {
        /// Tries made.
        attempts: u32,
        /// The last fault, lowercase.
        fault: String,
    },
}

/// One request and what came of it, for the trajectory. Refers to the request's messages by
/// journal id: the history a request re-sends is not repeated here.
#[derive(Debug, Clone, PartialEq)]
pub struct ExchangeRecord {
    /// 0-based arrival number (the journal's key; [`RequestInfo::seq`]).
    pub seq: u64,
    /// Arrival time, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Arrival time on the monotonic clock: what happened before it (a tripwire's attempts)
    /// can be ordered against the exchange exactly.
    pub started_at: Instant,
    /// Arrival to the last byte sent to the client, milliseconds.
    pub duration_ms: u64,
    /// The method as received.
    pub method: String,
    /// The path as received (no query).
    pub path: String,
    /// The routed request (`None` when refused before routing).
    pub request: Option<RequestInfo>,
    /// The class (the supervisor's answer; side for unrouted requests).
    pub class: RequestClass,
    /// How it ended.
    pub outcome: Outcome,
    /// The HTTP status the client got.
    pub status: u16,
    /// Usage: tokens of the answer, `requests` = upstream answers received (retries
    /// included), `retries`, `latency_ms` = summed upstream time, `cost_usd` from
    /// [`Supervisor::price`]. Abandoned or cut exchanges carry what was seen before.
    pub usage: Usage,
    /// Prompt tokens written to the provider's cache (Anthropic), part of
    /// `usage.input_tokens`; [`Usage`] has no field for them.
    pub cache_creation_tokens: u64,
    /// The answer, protocol-neutral (forwarded exchanges that got a 2xx head).
    pub response: Option<ModelResponse>,
    /// The request's conversation messages, in order, by journal id, each marked new when
    /// this request stored it first.
    pub messages: Vec<MessageRef>,
    /// Blobs this exchange stored first (messages, tools, system prompts, the response
    /// body): with them the caller can persist the journal itself.
    pub new_blobs: Vec<Blob>,
    /// The request body as far as it was received, when the exchange ended before the
    /// client finished sending it (a stalled or slow upload cut by the wall budget, or a
    /// client that went away): the caller can still read what it holds (e.g. the tool
    /// results of complete messages). `None` for a body received whole or never begun.
    pub incomplete_body: Option<Blob>,
}

impl ExchangeRecord {
    /// Whether the exchange is one of the agent's turns: a main-loop request that was
    /// forwarded (admitted), whatever came of it. Refused requests (by the allow-list or by
    /// [`Supervisor::admit`]) and local answers are not turns.
    pub fn is_turn(&self) -> bool {
        self.class == RequestClass::Main && !matches!(self.outcome, Outcome::Refused { .. } | Outcome::Local)
    }
}

/// The engine's hooks (module guide). Every method has a default, so a supervisor
/// implements only what it needs.
pub trait Supervisor: Send + Sync + 'static {
    /// The class of a routed request; `body` is the request body as received. Default:
    /// [`RequestInfo::default_class`].
    fn classify(&self, info: &RequestInfo, body: &[u8]) -> RequestClass {
        let _ = body;
        info.default_class()
    }

    /// Whether to forward a request (`info.class` is the classification). Default: admit.
    /// It may block only when [`Supervisor::admission_waits`] says so.
    fn admit(&self, info: &RequestInfo) -> Admission {
        let _ = info;
        Admission::Admit
    }

    /// Whether [`Supervisor::admit`] may wait (for the engine to take the previous exchange
    /// into account before the next turn is forwarded, say). Such admissions run on a thread of
    /// the runtime's blocking pool, not on the gateway's own thread, and the gateway gives up
    /// waiting when it is abandoned (the request is refused as ended); a waiting `admit` must
    /// return by itself soon after the episode ends. Default: `false` (called inline: keep it
    /// short).
    fn admission_waits(&self) -> bool {
        false
    }

    /// The cost in US dollars of `usage`'s tokens for `model` (the engine's price table,
    /// `--prices`); `cache_creation_tokens` is the part of `usage.input_tokens` written to
    /// the cache. Default: 0.
    fn price(&self, model: &str, usage: &Usage, cache_creation_tokens: u64) -> f64 {
        let _ = (model, usage, cache_creation_tokens);
        0.0
    }

    /// An exchange is over. Called exactly once per request, refused ones included.
    fn exchange_done(&self, record: &ExchangeRecord) {
        let _ = record;
    }
}

/// A supervisor that admits everything and keeps nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdmitAll;

impl Supervisor for AdmitAll {}
