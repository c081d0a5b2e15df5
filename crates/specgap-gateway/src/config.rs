//! What a gateway serves: the upstreams (one per protocol), the sandbox's token, retries, the
//! deadline and the journal.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::GatewayError;

/// A model protocol the gateway serves (issue 14 item 4, issue 15 item 2). Requests of one
/// protocol go only to the upstream configured for that protocol: nothing is translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// OpenAI chat completions: `POST /v1/chat/completions`, streamed (SSE) or not.
    OpenaiChat,
    /// The OpenAI Responses API: `POST /v1/responses` (and `/v1/responses/input_tokens`).
    OpenaiResponses,
    /// Anthropic Messages: `POST /v1/messages` (and `/v1/messages/count_tokens`).
    AnthropicMessages,
    /// The Gemini API: `POST /{v1,v1beta}/models/{model}:generateContent`,
    /// `:streamGenerateContent`, `:countTokens`.
    Gemini,
}

impl Protocol {
    /// Every protocol, in a fixed order.
    pub const ALL: [Protocol; 4] = [Protocol::OpenaiChat, Protocol::OpenaiResponses, Protocol::AnthropicMessages, Protocol::Gemini];

    /// The protocol's name as written in configuration and journals (`openai-chat`,
    /// `openai-responses`, `anthropic-messages`, `gemini`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenaiChat => "openai-chat",
            Protocol::OpenaiResponses => "openai-responses",
            Protocol::AnthropicMessages => "anthropic-messages",
            Protocol::Gemini => "gemini",
        }
    }

    /// Where the real key goes on the upstream request unless the upstream says otherwise:
    /// `Authorization: Bearer` for OpenAI, `x-api-key` for Anthropic, `x-goog-api-key` for
    /// Gemini.
    pub fn default_key_placement(self) -> KeyPlacement {
        match self {
            Protocol::OpenaiChat | Protocol::OpenaiResponses => KeyPlacement::Bearer,
            Protocol::AnthropicMessages => KeyPlacement::Header("x-api-key".into()),
            Protocol::Gemini => KeyPlacement::Header("x-goog-api-key".into()),
        }
    }

    /// The path prefix the gateway's base URL for this protocol carries, as the protocol's SDKs
    /// expect it: `/v1` for the OpenAI protocols (their SDKs append `/chat/completions`,
    /// `/responses`), nothing for Anthropic and Gemini (their SDKs append `/v1/messages`,
    /// `/v1beta/models/...`).
    pub fn base_path(self) -> &'static str {
        match self {
            Protocol::OpenaiChat | Protocol::OpenaiResponses => "/v1",
            Protocol::AnthropicMessages | Protocol::Gemini => "",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the gateway puts the real API key on an upstream request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPlacement {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// A header of this name (lowercase), e.g. `x-api-key`, `api-key`.
    Header(String),
    /// A query parameter of this name, e.g. `key`.
    Query(String),
}

/// A secret string (an API key or the sandbox's token): never printed by `Debug` or
/// `Display`, compared in constant time.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// A fresh random token for a sandbox: `sgw-` and 64 hex digits (256 bits from the
    /// operating system's generator; not derived from the run seed, so nothing in the run
    /// predicts it).
    ///
    /// # Errors
    /// [`GatewayError::Random`] when the operating system's generator fails.
    pub fn random_token() -> Result<Self, GatewayError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| GatewayError::Random(e.to_string()))?;
        let mut token = String::with_capacity(68);
        token.push_str("sgw-");
        for byte in bytes {
            token.push_str(&format!("{byte:02x}"));
        }
        Ok(Secret(token))
    }

    /// The secret itself; only for putting it where it belongs (the sandbox's configuration
    /// for a token, the upstream request for a key).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` equals the secret, in time independent of where they differ.
    pub fn matches(&self, candidate: &[u8]) -> bool {
        let secret = self.0.as_bytes();
        if secret.len() != candidate.len() {
            return false;
        }
        secret.iter().zip(candidate).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// One upstream: the model service requests of one protocol are forwarded to.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// The protocol it speaks; at most one upstream per protocol.
    pub protocol: Protocol,
    /// The URL the protocol's paths are appended to, `http` or `https`, without query,
    /// fragment or user info: for the OpenAI protocols the URL that ends where the SDKs'
    /// `base_url` ends (`https://api.openai.com/v1`, as `chat:`'s `--base-url`), for Anthropic
    /// and Gemini the host root (`https://api.anthropic.com`,
    /// `https://generativelanguage.googleapis.com`).
    pub base_url: String,
    /// The real API key (`None`: the upstream needs none, e.g. a local server).
    pub api_key: Option<Secret>,
    /// Where the key goes; `None` for the protocol's default
    /// ([`Protocol::default_key_placement`]).
    pub key_placement: Option<KeyPlacement>,
    /// The model names requests may name, exactly as the agent names them (at least one).
    /// They are listed locally by the model-listing endpoints.
    pub models: Vec<String>,
}

impl Upstream {
    /// An upstream with the protocol's default key placement.
    pub fn new(protocol: Protocol, base_url: impl Into<String>, api_key: Option<Secret>, models: Vec<String>) -> Self {
        Upstream { protocol, base_url: base_url.into(), api_key, key_placement: None, models }
    }

    /// Where the key goes on requests to this upstream.
    pub fn placement(&self) -> KeyPlacement {
        self.key_placement.clone().unwrap_or_else(|| self.protocol.default_key_placement())
    }
}

/// Retries of upstream faults, as the built-in chat agent does them
/// (`crates/specgap-agents/src/chat/client.rs`; docs/decisions.md "Gateway: retries and cut
/// streams").
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first try (0: none).
    pub max_retries: u32,
    /// Base of the exponential backoff: `retry_base · 2^(n−1)`, capped at 60 s, times a jitter
    /// in [0.5, 1).
    pub retry_base: Duration,
    /// Seed of the jitter generator (ChaCha8); record it in the run.
    pub seed: u64,
    /// Longest wait for an upstream's response head, for each chunk of a streamed body, and
    /// for the whole of a non-streamed body; passing it is a retried fault.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    /// The chat agent's defaults: 6 retries, 1 s base, 600 s timeout, seed 0.
    fn default() -> Self {
        RetryPolicy { max_retries: 6, retry_base: Duration::from_secs(1), seed: 0, request_timeout: Duration::from_secs(600) }
    }
}

/// Everything one gateway serves.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The upstreams, at most one per protocol; protocols without one are not served (404).
    pub upstreams: Vec<Upstream>,
    /// The sandbox's token (at least 16 bytes); see [`Secret::random_token`].
    pub token: Secret,
    /// Retries of upstream faults.
    pub retry: RetryPolicy,
    /// When the episode's wall budget ends: the gateway then abandons as by
    /// [`crate::GatewayHandle::abandon`].
    pub deadline: Option<Instant>,
    /// A JSON-lines journal file to append every blob and exchange to
    /// ([`crate::journal`]); `None` keeps the journal in memory only.
    pub journal_path: Option<PathBuf>,
    /// Largest request body accepted, bytes (larger: 413).
    pub max_request_bytes: usize,
    /// Host header values accepted besides the listener's own address (lowercase, with port
    /// where the client sends one).
    pub extra_hosts: Vec<String>,
    /// Request headers forwarded upstream besides the built-in allow-list (lowercase names).
    pub extra_forward_headers: Vec<String>,
}

impl GatewayConfig {
    /// A configuration with the given upstreams and token, default retries, no deadline, no
    /// journal file, 32 MiB request limit.
    pub fn new(upstreams: Vec<Upstream>, token: Secret) -> Self {
        GatewayConfig {
            upstreams,
            token,
            retry: RetryPolicy::default(),
            deadline: None,
            journal_path: None,
            max_request_bytes: 32 << 20,
            extra_hosts: Vec::new(),
            extra_forward_headers: Vec::new(),
        }
    }

    /// The upstream of `protocol`, if configured.
    pub fn upstream(&self, protocol: Protocol) -> Option<&Upstream> {
        self.upstreams.iter().find(|u| u.protocol == protocol)
    }

    /// Checks the configuration before anything is served.
    ///
    /// # Errors
    /// [`GatewayError::Config`] naming what is wrong: two upstreams of one protocol, a base URL
    /// that is not plain `http(s)://host[:port][/path]`, no models or a model name with `/`,
    /// `?`, `#`, `%`, `:`, whitespace or control characters, a short token.
    pub fn validate(&self) -> Result<(), GatewayError> {
        let bad = |message: String| Err(GatewayError::Config(message));
        if self.token.expose().len() < 16 {
            return bad("the sandbox token must be at least 16 bytes long".into());
        }
        for (i, upstream) in self.upstreams.iter().enumerate() {
            if self.upstreams[..i].iter().any(|u| u.protocol == upstream.protocol) {
                return bad(format!("two upstreams for protocol {}", upstream.protocol));
            }
            let url = reqwest::Url::parse(&upstream.base_url)
                .map_err(|e| GatewayError::Config(format!("{} upstream base url {:?}: {e}", upstream.protocol, upstream.base_url)))?;
            if !is_plain_http_url(&url) {
                return bad(format!(
                    "{} upstream base url {:?} must be http(s)://host[:port][/path] without query, fragment or user info",
                    upstream.protocol, upstream.base_url
                ));
            }
            if upstream.models.is_empty() {
                return bad(format!("{} upstream lists no model", upstream.protocol));
            }
            if let Some(model) = upstream.models.iter().find(|m| !valid_model_name(upstream.protocol, m)) {
                return bad(format!(
                    "{} upstream model name {model:?} is empty or holds a character models may not have",
                    upstream.protocol
                ));
            }
            match upstream.placement() {
                KeyPlacement::Bearer => {}
                KeyPlacement::Header(name) | KeyPlacement::Query(name) => {
                    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                        return bad(format!(
                            "{} upstream key placement name {name:?} is not a plain header or parameter name",
                            upstream.protocol
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A model name the gateway can match exactly: non-empty, no whitespace or controls; for
/// Gemini, where the name is a path segment (`models/{model}:generateContent`), also no path,
/// query, escape or method separator characters. Names in bodies may hold `/` and `:`
/// (`Qwen/Qwen3-32B`, `qwen3:32b`).
fn valid_model_name(protocol: Protocol, name: &str) -> bool {
    let plain = !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c.is_control());
    match protocol {
        Protocol::Gemini => plain && name != "." && name != ".." && !name.chars().any(|c| matches!(c, '/' | '?' | '#' | '%' | ':' | '\\')),
        _ => plain,
    }
}

/// Whether `url` is a plain model endpoint, `http(s)://host[:port][/path]`: scheme `http` or
/// `https`, no query, no fragment, no user info (a key belongs in a header, never the URL). The
/// gateway's upstreams and every configured base URL (`specgap_agents::chat::client::
/// check_base_url`) are held to it.
pub fn is_plain_http_url(url: &reqwest::Url) -> bool {
    matches!(url.scheme(), "http" | "https")
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_printed_and_compare_exactly() {
        let secret = Secret::new("sk-canary-123456789");
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        assert!(secret.matches(b"sk-canary-123456789"));
        assert!(!secret.matches(b"sk-canary-123456780"));
        assert!(!secret.matches(b"sk-canary"));
        let token = Secret::random_token().unwrap();
        assert_eq!(token.expose().len(), 68);
        assert!(token.expose().starts_with("sgw-"));
        assert_ne!(token, Secret::random_token().unwrap());
    }

    #[test]
    fn invalid_configurations_are_named() {
        let token = Secret::new("t".repeat(20));
        let upstream =
            |url: &str, models: &[&str]| Upstream::new(Protocol::OpenaiChat, url, None, models.iter().map(|m| m.to_string()).collect());
        let check = |upstreams: Vec<Upstream>| GatewayConfig::new(upstreams, token.clone()).validate().map_err(|e| e.to_string());
        assert_eq!(check(vec![upstream("http://127.0.0.1:9/v1", &["m"])]), Ok(()));
        assert_eq!(
            check(vec![upstream("http://a/v1", &["m"]), upstream("http://b/v1", &["m"])]),
            Err("gateway configuration: two upstreams for protocol openai-chat".into())
        );
        assert!(check(vec![upstream("http://a/v1?x=1", &["m"])]).unwrap_err().contains("without query"));
        assert!(check(vec![upstream("ftp://a/v1", &["m"])]).unwrap_err().contains("must be http(s)"));
        assert!(check(vec![upstream("http://a/v1", &[])]).unwrap_err().contains("lists no model"));
        assert_eq!(check(vec![upstream("http://a/v1", &["Qwen/Qwen3-32B", "qwen3:32b"])]), Ok(()));
        assert!(check(vec![upstream("http://a/v1", &["a b"])]).unwrap_err().contains("\"a b\""));
        let gemini = |model: &str| {
            GatewayConfig::new(vec![Upstream::new(Protocol::Gemini, "http://g", None, vec![model.into()])], token.clone())
                .validate()
                .map_err(|e| e.to_string())
        };
        assert_eq!(gemini("gemini-2.5-flash"), Ok(()));
        assert!(gemini("../files").unwrap_err().contains("\"../files\""));
        assert!(gemini("m:generateContent").unwrap_err().contains("\"m:generateContent\""));
        let short = GatewayConfig::new(vec![], Secret::new("short")).validate().unwrap_err().to_string();
        assert_eq!(short, "gateway configuration: the sandbox token must be at least 16 bytes long");
    }
}
