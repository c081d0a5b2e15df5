//! Our own view of the OpenAI-compatible `/v1/chat/completions` wire format.
//!
//! Requests are built from [`WireMessage`]s; responses are parsed tolerantly so real servers
//! (vLLM, llama.cpp, Ollama, hosted APIs) that leave fields out, send `null` for lists, use
//! unknown `finish_reason` values (`""`, `"eos"`) or give tool-call arguments as an object
//! instead of a JSON string are all accepted. Unknown fields are ignored.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use specgap_protocol::event::ToolCall;

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// Text; `null` for an assistant message that only calls tools.
    pub content: Option<String>,
    /// The assistant's tool calls (native tool calls only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall>,
    /// The call a `tool` message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl WireMessage {
    /// A message with text only.
    pub fn text(role: &'static str, content: impl Into<String>) -> Self {
        WireMessage { role, content: Some(content.into()), tool_calls: Vec::new(), tool_call_id: None }
    }

    /// A `tool` message answering `call_id`.
    pub fn tool(call_id: &str, content: impl Into<String>) -> Self {
        WireMessage { role: "tool", content: Some(content.into()), tool_calls: Vec::new(), tool_call_id: Some(call_id.into()) }
    }

    /// An assistant message with optional text and native tool calls.
    pub fn assistant(content: Option<String>, calls: &[ToolCall]) -> Self {
        WireMessage { role: "assistant", content, tool_calls: calls.iter().map(WireToolCall::from_call).collect(), tool_call_id: None }
    }

    /// Characters of the message, for the context estimate (chars / 4 tokens).
    pub fn chars(&self) -> usize {
        self.content.as_deref().map_or(0, str::len)
            + self.tool_calls.iter().map(|c| c.function.name.len() + c.function.arguments.len() + c.id.len()).sum::<usize>()
    }
}

/// A tool call as sent back to the server in the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireToolCall {
    /// Call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Name and arguments.
    pub function: WireFunction,
}

/// Function name and arguments (a JSON string, as the OpenAI format wants).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireFunction {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON string.
    pub arguments: String,
}

impl WireToolCall {
    fn from_call(call: &ToolCall) -> Self {
        let arguments = match &call.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        WireToolCall { id: call.id.clone(), kind: "function", function: WireFunction { name: call.tool.clone(), arguments } }
    }
}

/// `null` or absent → `T::default()`.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A response body (non-streaming) or one streamed chunk.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ChatResponse {
    /// Choices; the first is used.
    #[serde(deserialize_with = "null_default")]
    pub choices: Vec<Choice>,
    /// Token usage, when the server reports it.
    pub usage: Option<WireUsage>,
    /// An error object some servers put in a 200 body or a stream.
    pub error: Option<Value>,
}

/// One choice.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Choice {
    /// The message (non-streaming).
    pub message: Option<ResponseMessage>,
    /// The delta (streaming).
    pub delta: Option<ResponseMessage>,
    /// Any string: `stop`, `tool_calls`, `length`, `content_filter`, `""`, `eos`, …
    pub finish_reason: Option<String>,
}

/// The assistant message or delta.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResponseMessage {
    /// Text: a string, or an array of `{ "type": "text", "text": … }` parts.
    pub content: Option<Value>,
    /// Tool calls (with `index` in streamed deltas).
    #[serde(deserialize_with = "null_default")]
    pub tool_calls: Vec<ResponseToolCall>,
    /// A refusal text (OpenAI).
    pub refusal: Option<String>,
}

impl ResponseMessage {
    /// The text of `content`, joining text parts.
    pub fn text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str())).collect::<Vec<_>>().join("")
            }
            _ => String::new(),
        }
    }
}

/// A tool call in a response or delta.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResponseToolCall {
    /// Position (streaming deltas).
    pub index: Option<u64>,
    /// Call id.
    pub id: Option<String>,
    /// Name and arguments.
    pub function: ResponseFunction,
}

/// Name and arguments of a response tool call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResponseFunction {
    /// Tool name.
    pub name: Option<String>,
    /// A JSON string, an object, or absent.
    pub arguments: Option<Value>,
}

/// Usage as OpenAI-compatible servers report it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WireUsage {
    /// Prompt tokens.
    #[serde(deserialize_with = "null_default")]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(deserialize_with = "null_default")]
    pub completion_tokens: u64,
    /// Cached prompt tokens.
    pub prompt_tokens_details: Option<PromptDetails>,
    /// Reasoning tokens.
    pub completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PromptDetails {
    /// Tokens served from the cache.
    #[serde(deserialize_with = "null_default")]
    pub cached_tokens: u64,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CompletionDetails {
    /// Reasoning tokens.
    #[serde(deserialize_with = "null_default")]
    pub reasoning_tokens: u64,
}

/// Tool-call arguments as the engine wants them: an object parsed from a JSON string, the
/// object itself, `{}` when absent or blank; a string that is not JSON stays a string, so the
/// engine answers it with a tool error as a model would get.
pub fn arguments_value(raw: Option<&Value>) -> Value {
    match raw {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        Some(other) => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerant_parsing() {
        let body = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"a","type":"function","function":{"name":"list_files","arguments":{"path":"."}}},
                          {"id":"b","function":{"name":"submit","arguments":"{\"summary\":\"ok\"}"}},
                          {"id":"c","function":{"name":"submit"}}]},
            "finish_reason":"eos","weird":1}],"usage":{"prompt_tokens":10,"completion_tokens":null,
            "prompt_tokens_details":null}}"#;
        let r: ChatResponse = serde_json::from_str(body).unwrap();
        let m = r.choices[0].message.as_ref().unwrap();
        assert_eq!(m.text(), "");
        assert_eq!(arguments_value(m.tool_calls[0].function.arguments.as_ref()), serde_json::json!({"path": "."}));
        assert_eq!(arguments_value(m.tool_calls[1].function.arguments.as_ref()), serde_json::json!({"summary": "ok"}));
        assert_eq!(arguments_value(m.tool_calls[2].function.arguments.as_ref()), serde_json::json!({}));
        assert_eq!(r.choices[0].finish_reason.as_deref(), Some("eos"));
        assert_eq!(r.usage.unwrap().prompt_tokens, 10);
        let empty: ChatResponse = serde_json::from_str(r#"{"choices":null}"#).unwrap();
        assert!(empty.choices.is_empty());
        assert_eq!(arguments_value(Some(&Value::String("{bad".into()))), Value::String("{bad".into()));
    }
}
