//! # specgap-gateway
//!
//! The per-episode **model gateway** (issue 14 item 4): a `cli:` agent running inside the
//! episode's sandbox reaches its model only through this HTTP server, which the harness
//! serves on a listener only that sandbox can reach. The gateway holds the real API key (the
//! sandbox gets a random per-episode token instead), forwards only the configured models on
//! an allow-list of endpoints, lets the engine classify, admit and refuse each request
//! (budgets and loop rules), retries upstream faults as the chat agent does, parses every
//! answer into text, tool calls and usage, and journals every exchange so each request can be
//! rebuilt byte for byte with each conversation message stored once.
//!
//! ## Protocols (pass-through, never translated)
//!
//! | protocol ([`Protocol`]) | paths served ([`endpoint`]) | token accepted in | key sent upstream as |
//! | --- | --- | --- | --- |
//! | OpenAI chat completions | `POST /v1/chat/completions` | `Authorization: Bearer` | `Authorization: Bearer` |
//! | OpenAI Responses | `POST /v1/responses`, `/v1/responses/input_tokens` | `Authorization: Bearer` | `Authorization: Bearer` |
//! | Anthropic Messages | `POST /v1/messages`, `/v1/messages/count_tokens` (`?beta=`) | `x-api-key`, `Authorization: Bearer` | `x-api-key` |
//! | Gemini | `POST /{v1,v1beta}/models/{m}:generateContent`, `:streamGenerateContent`, `:countTokens` (`?alt=`) | `x-goog-api-key`, `?key=`, `Authorization: Bearer` | `x-goog-api-key` |
//! | (local) | `GET /v1/models[/{m}]`, `GET /v1beta/models[/{m}]` — answered from the configuration | any of the above | — |
//!
//! The key's place upstream can be changed per upstream ([`KeyPlacement`]). Each request
//! goes to the upstream of its own protocol; a CLI speaking Anthropic Messages needs an
//! upstream that speaks it.
//!
//! ## Interface for the engine
//!
//! ```no_run
//! use std::sync::Arc;
//! use specgap_gateway::{GatewayConfig, Protocol, Secret, Supervisor, Upstream, bind_loopback_in_path, serve_tcp};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let sandbox_pid = 1; struct Rules; impl Supervisor for Rules {}
//! let key = std::env::var("OPENAI_API_KEY").ok().map(Secret::new); // read on the host only
//! let upstream = Upstream::new(Protocol::OpenaiChat, "https://api.openai.com/v1", key, vec!["gpt-5-mini".into()]);
//! let mut config = GatewayConfig::new(vec![upstream], Secret::random_token()?);
//! config.deadline = Some(std::time::Instant::now() + std::time::Duration::from_secs(1800));
//! config.journal_path = Some("episode/gateway.jsonl".into());
//! // A listener inside the sandbox's network namespace: only the sandbox can connect.
//! let listener = bind_loopback_in_path(format!("/proc/{sandbox_pid}/ns/net").as_ref())?;
//! let gateway = serve_tcp(listener, config, Arc::new(Rules))?;
//! let base_url = gateway.base_url(Protocol::OpenaiChat); // goes into the CLI's configuration
//! let token = gateway.token().expose().to_string();     // the CLI's "API key"
//! // ... the agent runs; Rules::admit refuses past a budget; on the wall budget:
//! gateway.abandon();
//! let report = gateway.shutdown()?;                     // usage by class, tool calls, fault
//! # let _ = (base_url, token, report); Ok(()) }
//! ```
//!
//! * [`Supervisor`] (implemented by the engine): [`Supervisor::classify`] says whether a
//!   request is a main-loop turn or a side request (default: token counting and listings are
//!   side, generations are turns); [`Supervisor::admit`] admits or refuses it before
//!   anything is forwarded (a refusal reaches the CLI as its protocol's error body, status
//!   400 by default, which SDKs do not retry); [`Supervisor::price`] prices usage (the
//!   engine's `--prices` table; the gateway does not depend on the agents crate);
//!   [`Supervisor::exchange_done`] gets one [`ExchangeRecord`] per request: outcome, status,
//!   [`Usage`](specgap_protocol::event::Usage) (input, output, cached, reasoning tokens,
//!   requests, retries, latency, cost), the answer's text and tool calls
//!   ([`ModelResponse`]), the request's messages by journal id (each marked new or not) and
//!   the blobs first stored by it (and, for a body the end cut mid-upload, what arrived of it:
//!   [`ExchangeRecord::incomplete_body`]); [`ExchangeRecord::is_turn`] says whether it counts as a
//!   turn (a forwarded main-loop request).
//! * [`GatewayHandle`]: [`GatewayHandle::abandon`] (wall budget or interruption; also
//!   triggered by [`GatewayConfig::deadline`], a plain [`std::time::Instant`]),
//!   [`GatewayHandle::fault`] (a dead upstream or unwritable journal: an infrastructure
//!   error, never a task failure; afterwards every request gets 503),
//!   [`GatewayHandle::report`], [`GatewayHandle::rebuild_request`],
//!   [`GatewayHandle::shutdown`].
//! * Listeners: [`serve_tcp`] and [`serve_unix`] take a listener the caller bound;
//!   [`bind_loopback_in`] / [`bind_loopback_in_path`] bind `127.0.0.1:0` inside a network
//!   namespace ([`netns`]).
//! * [`tripwire`]: the network tripwire ([`Tripwire::arm_in_path`]): a DNS responder and TCP
//!   listeners inside the same namespace that record every attempt to reach anything but the
//!   gateway ([`NetworkAttempt`]), for the agent's trajectory.
//! * [`journal`]: the content-addressed journal and its JSON-lines file; [`Journal::read`]
//!   and [`Journal::rebuild`] for audits.
//! * `mock` (cargo feature `mock`): a scripted mock upstream that records every request, with
//!   well-formed answers of each protocol, for this crate's tests and the engine's;
//!   [`mock_model`] (same feature) serves a user's versioned script of turns in whichever
//!   protocol a request arrives in (`specgap mock-model`).
//!
//! ## Threading model
//!
//! Each gateway owns one thread running a current-thread tokio runtime (hyper 1 HTTP/1.1
//! server, reqwest async client with rustls, HTTP/1.1 to the upstream): requests of one
//! episode are served concurrently on it; the only locks are short ones (the journal, the
//! totals, the backoff generator). Supervisor hooks run on that thread (keep them short; a
//! panicking hook loses that connection and delays shutdown by at most 0.5 s). [`serve_tcp`]
//! returns once it accepts;
//! [`GatewayHandle::shutdown`] (or dropping the handle) stops accepting, abandons in-flight
//! exchanges, waits until each is recorded (at most 0.5 s; a request body still being received counts as in flight and is cut too) and joins the thread.
//!
//! ## Security rules
//!
//! * The real key lives only in this process: it is added to the upstream request (header or
//!   query) and nowhere else; it is redacted (`[redacted]`) from every body, streamed chunk
//!   and header value handed back to the client, together with the token ([`redact`]), and the
//!   journal writes `[key]` where it went.
//! * Every request must carry the token, and every credential it carries must be the token
//!   (401 otherwise).
//! * Only GET and POST with origin-form targets (a path) are served: CONNECT, other methods,
//!   absolute URIs and `*` are refused, as is any `Host` but the listener's own address (or
//!   `localhost` at its port; `localhost` on a Unix socket; [`GatewayConfig::extra_hosts`]).
//! * Paths match the allow-list exactly, without normalization; file, batch, fine-tune,
//!   upload and stored-object endpoints are not on it. Query parameters other than the
//!   endpoint's own (`beta`, `alt`, `key`) are refused; `key` is never forwarded.
//! * A body must be a JSON object without duplicate top-level keys naming a configured model
//!   (Gemini: in the path); another model is refused with 403 before anything is sent.
//! * Client headers are forwarded from an allow-list only (content type, accept, user agent,
//!   `anthropic-version` / `-beta`, `openai-beta`, `x-goog-api-client`, `x-stainless-*`, plus
//!   [`GatewayConfig::extra_forward_headers`]); credentials, cookies, proxy and forwarding
//!   hints and hop-by-hop headers never are. `accept-encoding: identity` is sent so answers
//!   can be parsed. Upstream cookies, hop-by-hop and connection hints are not returned, and
//!   upstream redirects are handed back, never followed (they would carry the key).
//! * The request body is forwarded as received (byte for byte): an agent that writes its
//!   token into a message sends it upstream as text; the token is worthless outside this
//!   gateway.
#![deny(missing_docs)]

mod body;
mod config;
pub mod endpoint;
mod error;
mod handle;
pub mod journal;
#[cfg(feature = "mock")]
pub mod mock;
#[cfg(feature = "mock")]
pub mod mock_model;
pub mod netns;
pub mod redact;
mod response;
mod server;
mod shape;
mod sse;
mod state;
mod supervisor;
pub mod tripwire;
mod upstream;

pub use config::{GatewayConfig, KeyPlacement, Protocol, RetryPolicy, Secret, Upstream, is_plain_http_url};
pub use endpoint::Endpoint;
pub use error::GatewayError;
pub use handle::{GatewayHandle, ListenAddr, serve_tcp, serve_unix};
pub use journal::{Blob, BlobId, Journal, JournalEntry, MessageRef, RebuiltRequest, Segment};
pub use netns::{bind_loopback_in, bind_loopback_in_path};
pub use response::{ModelResponse, TokenCounts};
pub use state::{GatewayFault, GatewayReport};
pub use supervisor::{Admission, AdmitAll, ExchangeRecord, Outcome, RefusalReason, RequestClass, RequestInfo, Supervisor};
pub use tripwire::{AttemptProtocol, NetworkAttempt, Tripwire};
