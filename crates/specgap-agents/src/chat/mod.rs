//! `chat:<model>` (DESIGN §5): the built-in tool-calling agent and the LLM owner / customer
//! over any OpenAI-compatible `/v1/chat/completions` endpoint (vLLM, llama.cpp server,
//! Ollama, hosted APIs).
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`agent`] | [`ChatAgent`]: the message history, native or emulated tool calls, refusals, context overflow |
//! | [`user`] | [`ChatUser`]: the owner (seed 000 F.4) or customer (seed 002 A.9.2) played by a model |
//! | [`client`] | [`ChatClient`]: HTTP, streaming (SSE), retries with seeded backoff, the episode's deadline, usage recorded per try |
//! | [`wire`] | tolerant request / response types |
//! | [`emulate`] | `--emulate-tools`: tools in the system prompt, calls in fenced blocks |
//! | [`price`] | `--prices FILE.toml` price tables |
//! | [`refusal`] | when a reply without a tool call is a plain-text refusal (DESIGN §3.5) |
//!
//! A [`ChatConfig`] is the whole configuration of one model endpoint. It is stored in
//! `run.toml` (through [`ChatConfig::to_table`]) and read back on `--resume`; it names the
//! environment variable that holds the API key, never the key itself.

pub mod agent;
pub mod client;
pub mod emulate;
pub mod price;
pub mod refusal;
pub mod user;
pub mod wire;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use agent::ChatAgent;
pub use client::{ChatClient, ClientError, Completion};
pub use price::{Price, PriceTable};
pub use user::{ChatUser, UserKnowledge, UserRole};

/// Default endpoint: a local vLLM server.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";
/// Default environment variable holding the API key.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Default request timeout, seconds.
pub const DEFAULT_REQUEST_TIMEOUT_SEC: f64 = 600.0;
/// Default retries of a failed request.
pub const DEFAULT_MAX_RETRIES: u32 = 6;
/// Default first backoff delay, milliseconds.
pub const DEFAULT_RETRY_BASE_MS: u64 = 1000;

fn default_base_url() -> String {
    DEFAULT_BASE_URL.into()
}
fn default_api_key_env() -> String {
    DEFAULT_API_KEY_ENV.into()
}
fn default_timeout() -> f64 {
    DEFAULT_REQUEST_TIMEOUT_SEC
}
fn default_retries() -> u32 {
    DEFAULT_MAX_RETRIES
}
fn default_retry_base() -> u64 {
    DEFAULT_RETRY_BASE_MS
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// The configuration of one model endpoint (agent or user).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatConfig {
    /// Model name sent as `model`.
    pub model: String,
    /// Base URL up to `/v1`; `/chat/completions` is appended.
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// Environment variable holding the API key (absent or empty: no `Authorization`).
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    /// Extra request fields (`temperature`, `max_tokens`, `seed`, `reasoning_effort`, …),
    /// passed through as given.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub model_args: Map<String, Value>,
    /// Streaming (SSE) responses.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stream: bool,
    /// Tools described in the system prompt and calls parsed from text ([`emulate`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub emulate_tools: bool,
    /// Context window in tokens for our estimate (characters / 4); none: only the server's
    /// error counts as overflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Request timeout in seconds.
    #[serde(default = "default_timeout")]
    pub request_timeout_sec: f64,
    /// Retries of a failed request before the episode is an infrastructure error.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First backoff delay in milliseconds (doubles per retry).
    #[serde(default = "default_retry_base")]
    pub retry_base_ms: u64,
    /// The model's price, from `--prices`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

/// Why a chat configuration cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum ChatConfigError {
    /// `--model-arg` is not `key=value`.
    #[error("bad model argument `{0}`; expected key=value, e.g. temperature=0")]
    BadModelArg(String),
    /// A model argument is JSON `null`, which run.toml cannot store.
    #[error("model argument `{0}` is null; leave it out instead")]
    NullModelArg(String),
    /// The configuration cannot be written as a TOML table.
    #[error("cannot store the chat configuration in run.toml")]
    ToToml(#[source] toml::ser::Error),
    /// A stored configuration is not a chat configuration.
    #[error("the stored agent configuration is not a chat configuration")]
    FromToml(#[source] toml::de::Error),
}

impl ChatConfig {
    /// A configuration with every default for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        ChatConfig {
            model: model.into(),
            base_url: default_base_url(),
            api_key_env: default_api_key_env(),
            model_args: Map::new(),
            stream: false,
            emulate_tools: false,
            context_tokens: None,
            request_timeout_sec: DEFAULT_REQUEST_TIMEOUT_SEC,
            max_retries: DEFAULT_MAX_RETRIES,
            retry_base_ms: DEFAULT_RETRY_BASE_MS,
            price: None,
        }
    }

    /// Adds `--model-arg key=value` items: a value that parses as JSON is that JSON value,
    /// otherwise the string itself.
    ///
    /// # Errors
    /// [`ChatConfigError`] for an item without `=` or a `null` value.
    pub fn with_model_args<S: AsRef<str>>(mut self, items: &[S]) -> Result<Self, ChatConfigError> {
        for item in items {
            let (key, value) = parse_model_arg(item.as_ref())?;
            self.model_args.insert(key, value);
        }
        Ok(self)
    }

    /// The configuration as a TOML table for `run.toml` (merged into the component's table).
    ///
    /// # Errors
    /// [`ChatConfigError::ToToml`].
    pub fn to_table(&self) -> Result<toml::Table, ChatConfigError> {
        toml::Table::try_from(self).map_err(ChatConfigError::ToToml)
    }

    /// Reads a configuration back from a stored table (other keys, such as `kind`, ignored).
    ///
    /// # Errors
    /// [`ChatConfigError::FromToml`].
    pub fn from_table(table: &toml::Table) -> Result<Self, ChatConfigError> {
        toml::Value::Table(table.clone()).try_into().map_err(ChatConfigError::FromToml)
    }
}

/// Parses one `key=value` model argument (see [`ChatConfig::with_model_args`]).
///
/// # Errors
/// [`ChatConfigError`] for an item without `=` or with an empty key, or a `null` value.
pub fn parse_model_arg(item: &str) -> Result<(String, Value), ChatConfigError> {
    let (key, raw) = item.split_once('=').ok_or_else(|| ChatConfigError::BadModelArg(item.into()))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(ChatConfigError::BadModelArg(item.into()));
    }
    let value = serde_json::from_str::<Value>(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_string()));
    if value.is_null() {
        return Err(ChatConfigError::NullModelArg(key.into()));
    }
    Ok((key.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_args_parse_as_json_or_string() {
        let c = ChatConfig::new("m")
            .with_model_args(&["temperature=0", "max_tokens=512", "reasoning_effort=low", "stop=[\"x\"]", "seed=7"])
            .unwrap();
        assert_eq!(
            Value::Object(c.model_args.clone()),
            json!({"temperature": 0, "max_tokens": 512, "reasoning_effort": "low", "stop": ["x"], "seed": 7})
        );
        assert!(matches!(parse_model_arg("temperature"), Err(ChatConfigError::BadModelArg(_))));
        assert!(matches!(parse_model_arg("x=null"), Err(ChatConfigError::NullModelArg(_))));
        let table = c.to_table().unwrap();
        assert_eq!(ChatConfig::from_table(&table).unwrap(), c);
        assert!(!table.contains_key("stream"));
    }
}
