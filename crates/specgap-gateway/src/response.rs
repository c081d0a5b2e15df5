//! What a model's response said, in a protocol-neutral form: the assistant text, the tool
//! calls (name and arguments), the stop reason and the token usage, read from each protocol's
//! responses, streamed or not (issue 14 item 4; the engine counts a `cli:` agent's tool calls
//! and checks loop rules on them).
//!
//! | protocol | text and tool calls | usage |
//! | --- | --- | --- |
//! | OpenAI chat | `choices[0].message` (`content`, `tool_calls[].function`); streamed: `delta`s joined by tool-call `index` | `usage` (streamed: the final chunk under `stream_options.include_usage`): `prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens` |
//! | OpenAI Responses | `output[]` items: `message` (`output_text` parts), `function_call`, `custom_tool_call`, `local_shell_call`; streamed: the `response` of `response.completed` / `.incomplete` / `.failed`, else the `response.output_item.done` items | `usage.input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens` |
//! | Anthropic Messages | `content[]` blocks `text`, `tool_use` (`input`); streamed: `content_block_start` / `_delta` (`text_delta`, `input_json_delta`) | `message_start.message.usage` and `message_delta.usage` (cumulative; the later value wins): input = `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`, cached = `cache_read_input_tokens` |
//! | Gemini | `candidates[0].content.parts[]`: `text` (not `thought`), `functionCall` (`name`, `args`); streamed: the parts of every chunk | the last `usageMetadata`: input = `promptTokenCount` + `toolUsePromptTokenCount`, cached = `cachedContentTokenCount`, output = `candidatesTokenCount` + `thoughtsTokenCount`, reasoning = `thoughtsTokenCount` |
//!
//! Token-counting endpoints give [`ModelResponse::counted_tokens`] and no usage (counting is
//! not billed). Thinking / reasoning text is not part of [`ModelResponse::text`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use specgap_protocol::event::{ToolCall, Usage};

use crate::config::Protocol;
use crate::endpoint::Endpoint;
use crate::sse::{SseEvent, SseReader};

/// A response, protocol-neutral.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The assistant's visible text (thinking excluded), in order.
    pub text: String,
    /// Tool calls in order: id as the model gave it (`""` when none), name, arguments (a
    /// JSON-string argument that parses is given as its value, one that does not as the
    /// string, an empty one as `{}`).
    pub tool_calls: Vec<ToolCall>,
    /// The stop reason as sent (`finish_reason`, `stop_reason`, `status`, `finishReason`;
    /// `""` when absent).
    pub stop_reason: String,
    /// Whether the response reached its protocol's end (`[DONE]` or a finish reason,
    /// `response.completed`, `message_stop`, a Gemini `finishReason`; a whole JSON body).
    pub complete: bool,
    /// An error the upstream reported inside a 200 response (an error chunk or event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The count a token-counting endpoint answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_tokens: Option<u64>,
}

/// Tokens of one response. `input` counts every prompt token, cached and cache-written ones
/// included; `cached` and `cache_creation` are the parts read from and written to the
/// provider's prompt cache (Anthropic reports both; the others only reads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Prompt tokens, all of them.
    pub input: u64,
    /// Completion tokens, reasoning included.
    pub output: u64,
    /// Prompt tokens read from the cache.
    pub cached: u64,
    /// Prompt tokens written to the cache (Anthropic `cache_creation_input_tokens`).
    pub cache_creation: u64,
    /// Reasoning tokens (part of `output`).
    pub reasoning: u64,
}

impl TokenCounts {
    /// As the engine's [`Usage`] (requests, retries, latency and cost left 0).
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input,
            output_tokens: self.output,
            cached_tokens: self.cached,
            reasoning_tokens: self.reasoning,
            ..Usage::default()
        }
    }
}

/// Reads one response, fed as bytes arrive.
#[derive(Debug)]
pub(crate) struct ResponseParser {
    protocol: Protocol,
    endpoint: Endpoint,
    sse: Option<SseReader>,
    /// A non-SSE body, kept whole until [`ResponseParser::finish`].
    body: Vec<u8>,
    acc: Accumulated,
}

/// What the events so far said.
#[derive(Debug, Default)]
struct Accumulated {
    response: ModelResponse,
    tokens: TokenCounts,
    /// OpenAI chat: tool calls by index: (id, name, arguments text, arguments value).
    chat_calls: Vec<(String, String, String, Option<Value>)>,
    /// Anthropic: content blocks by index: (kind, id, name, input text, input value).
    blocks: Vec<Block>,
    /// Responses: items from `response.output_item.done`.
    items: Vec<Value>,
    /// Responses: the final `response` object, when one came.
    final_response: Option<Value>,
    /// Responses: text from `response.output_text.delta`, used when no item carried it.
    delta_text: String,
}

#[derive(Debug, Default, Clone)]
struct Block {
    kind: String,
    id: String,
    name: String,
    text: String,
    input_json: String,
    input: Option<Value>,
}

impl ResponseParser {
    /// A parser for a response to `endpoint` of `protocol`; `event_stream` when the response's
    /// content type is `text/event-stream`.
    pub(crate) fn new(protocol: Protocol, endpoint: Endpoint, event_stream: bool) -> Self {
        ResponseParser { protocol, endpoint, sse: event_stream.then(SseReader::default), body: Vec::new(), acc: Accumulated::default() }
    }

    /// Reads the next bytes of the body.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        match &mut self.sse {
            Some(reader) => {
                let (protocol, acc) = (self.protocol, &mut self.acc);
                reader.feed(chunk, |event| acc.event(protocol, &event));
            }
            None => self.body.extend_from_slice(chunk),
        }
    }

    /// Whether what was read so far is a complete response (a non-SSE body counts as
    /// complete once it parses, which [`ResponseParser::finish`] decides).
    pub(crate) fn complete(&self) -> bool {
        self.acc.response.complete || self.sse.is_none()
    }

    /// The response and its tokens.
    pub(crate) fn finish(mut self) -> (ModelResponse, TokenCounts) {
        if self.sse.is_none() {
            match serde_json::from_slice::<Value>(&self.body) {
                Ok(Value::Array(chunks)) => {
                    // Gemini's streamGenerateContent without `alt=sse`: a JSON array of chunks.
                    for chunk in &chunks {
                        self.acc.json_body(self.protocol, self.endpoint, chunk);
                    }
                }
                Ok(body) => self.acc.json_body(self.protocol, self.endpoint, &body),
                Err(_) => self.acc.response.complete = false,
            }
        }
        self.acc.finish(self.protocol)
    }
}

impl Accumulated {
    /// One SSE event.
    fn event(&mut self, protocol: Protocol, event: &SseEvent) {
        let data = event.data.trim();
        if protocol == Protocol::OpenaiChat && data == "[DONE]" {
            self.response.complete = true;
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else { return };
        match protocol {
            Protocol::OpenaiChat => self.chat_chunk(&value, true),
            Protocol::OpenaiResponses => self.responses_event(&value),
            Protocol::AnthropicMessages => self.anthropic_event(&value),
            Protocol::Gemini => self.gemini_chunk(&value),
        }
    }

    /// A whole JSON body (or one chunk of a Gemini JSON-array stream).
    fn json_body(&mut self, protocol: Protocol, endpoint: Endpoint, body: &Value) {
        if endpoint.is_token_count() {
            let key = if protocol == Protocol::Gemini { "totalTokens" } else { "input_tokens" };
            self.response.counted_tokens = body.get(key).and_then(Value::as_u64);
            self.response.complete = true;
            return;
        }
        match protocol {
            Protocol::OpenaiChat => {
                self.chat_chunk(body, false);
                self.response.complete = true;
            }
            Protocol::OpenaiResponses => {
                self.final_response = Some(body.clone());
                self.response.complete = true;
            }
            Protocol::AnthropicMessages => {
                self.anthropic_message(body);
                self.response.complete = true;
            }
            Protocol::Gemini => {
                let complete = self.response.complete;
                self.gemini_chunk(body);
                // A whole generateContent body is complete even without a finish reason.
                self.response.complete = complete || endpoint == Endpoint::GenerateContent || self.response.complete;
            }
        }
        if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
            self.response.error = Some(error_text(error));
        }
    }

    // ---- OpenAI chat ----

    fn chat_chunk(&mut self, chunk: &Value, streamed: bool) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.tokens = TokenCounts {
                input: u64_at(usage, &["prompt_tokens"]),
                output: u64_at(usage, &["completion_tokens"]),
                cached: u64_at(usage, &["prompt_tokens_details", "cached_tokens"]),
                cache_creation: 0,
                reasoning: u64_at(usage, &["completion_tokens_details", "reasoning_tokens"]),
            };
        }
        if streamed && let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            self.response.error = Some(error_text(error));
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else { return };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.response.stop_reason = reason.to_string();
            self.response.complete = true;
        }
        let message = if streamed { choice.get("delta").or(choice.get("message")) } else { choice.get("message").or(choice.get("delta")) };
        let Some(message) = message else { return };
        match message.get("content") {
            Some(Value::String(text)) => self.response.text.push_str(text),
            Some(Value::Array(parts)) => {
                for part in parts {
                    if let Some(text) = part.get("text").and_then(Value::as_str) {
                        self.response.text.push_str(text);
                    }
                }
            }
            _ => {}
        }
        let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else { return };
        for (position, call) in calls.iter().enumerate() {
            let index = if streamed {
                call.get("index").and_then(Value::as_u64).map_or(position, |i| usize::try_from(i).unwrap_or(position))
            } else {
                self.chat_calls.len()
            };
            // A hostile index must not make us allocate without bound.
            if index > self.chat_calls.len() + 1024 {
                continue;
            }
            while self.chat_calls.len() <= index {
                self.chat_calls.push(Default::default());
            }
            let slot = &mut self.chat_calls[index];
            if let Some(id) = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
                slot.0 = id.to_string();
            }
            let function = call.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                slot.1.push_str(name);
            }
            match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(part)) => slot.2.push_str(part),
                Some(Value::Null) | None => {}
                Some(object) => slot.3 = Some(object.clone()),
            }
        }
    }

    // ---- OpenAI Responses ----

    fn responses_event(&mut self, event: &Value) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.output_text.delta" => {
                if let Some(delta) = event.get("delta").and_then(Value::as_str) {
                    self.delta_text.push_str(delta);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.get("item") {
                    self.items.push(item.clone());
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                if let Some(response) = event.get("response") {
                    self.final_response = Some(response.clone());
                }
                self.response.complete = true;
            }
            "error" => self.response.error = Some(error_text(event)),
            _ => {}
        }
    }

    fn responses_finish(&mut self) {
        let final_output =
            self.final_response.as_ref().and_then(|r| r.get("output")).and_then(Value::as_array).filter(|o| !o.is_empty()).cloned();
        if let Some(response) = self.final_response.take() {
            if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
                self.tokens = TokenCounts {
                    input: u64_at(usage, &["input_tokens"]),
                    output: u64_at(usage, &["output_tokens"]),
                    cached: u64_at(usage, &["input_tokens_details", "cached_tokens"]),
                    cache_creation: 0,
                    reasoning: u64_at(usage, &["output_tokens_details", "reasoning_tokens"]),
                };
            }
            if let Some(status) = response.get("status").and_then(Value::as_str) {
                self.response.stop_reason = status.to_string();
            }
            if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
                self.response.error = Some(error_text(error));
            }
        }
        let items = final_output.unwrap_or_else(|| std::mem::take(&mut self.items));
        let mut text = String::new();
        for item in &items {
            let id = || item.get("call_id").and_then(Value::as_str).unwrap_or("").to_string();
            match item.get("type").and_then(Value::as_str).unwrap_or("") {
                "message" => {
                    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                        if part.get("type").and_then(Value::as_str) == Some("output_text")
                            && let Some(t) = part.get("text").and_then(Value::as_str)
                        {
                            text.push_str(t);
                        }
                    }
                }
                "function_call" => self.response.tool_calls.push(ToolCall {
                    id: id(),
                    tool: item.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                    arguments: arguments_value(item.get("arguments")),
                }),
                "custom_tool_call" => self.response.tool_calls.push(ToolCall {
                    id: id(),
                    tool: item.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                    arguments: item.get("input").cloned().unwrap_or(Value::Null),
                }),
                "local_shell_call" => self.response.tool_calls.push(ToolCall {
                    id: id(),
                    tool: "local_shell".into(),
                    arguments: item.get("action").cloned().unwrap_or(Value::Null),
                }),
                _ => {}
            }
        }
        self.response.text = if text.is_empty() { std::mem::take(&mut self.delta_text) } else { text };
    }

    // ---- Anthropic Messages ----

    fn anthropic_usage(&mut self, usage: &Value) {
        // message_delta's usage is cumulative and may repeat the input fields; a field the
        // event does not carry keeps its earlier value.
        let field = |name: &str, old: u64| usage.get(name).and_then(Value::as_u64).unwrap_or(old);
        let uncached = field("input_tokens", self.tokens.input.saturating_sub(self.tokens.cached + self.tokens.cache_creation));
        let read = field("cache_read_input_tokens", self.tokens.cached);
        let written = field("cache_creation_input_tokens", self.tokens.cache_creation);
        self.tokens.input = uncached + read + written;
        self.tokens.cached = read;
        self.tokens.cache_creation = written;
        self.tokens.output = field("output_tokens", self.tokens.output);
    }

    fn anthropic_message(&mut self, message: &Value) {
        if let Some(usage) = message.get("usage").filter(|u| u.is_object()) {
            self.anthropic_usage(usage);
        }
        if let Some(reason) = message.get("stop_reason").and_then(Value::as_str) {
            self.response.stop_reason = reason.to_string();
        }
        if message.get("type").and_then(Value::as_str) == Some("error") {
            self.response.error = Some(error_text(message.get("error").unwrap_or(message)));
        }
        for block in message.get("content").and_then(Value::as_array).into_iter().flatten() {
            self.blocks.push(Block {
                kind: str_at(block, "type"),
                id: str_at(block, "id"),
                name: str_at(block, "name"),
                text: str_at(block, "text"),
                input_json: String::new(),
                input: block.get("input").cloned(),
            });
        }
    }

    fn anthropic_event(&mut self, event: &Value) {
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                if let Some(usage) = event.get("message").and_then(|m| m.get("usage")).filter(|u| u.is_object()) {
                    self.anthropic_usage(usage);
                }
            }
            "content_block_start" => {
                let index = index_at(event);
                let Some(block) = event.get("content_block") else { return };
                if let Some(slot) = self.block_slot(index) {
                    let input = block.get("input").cloned().filter(|i| i.as_object().is_none_or(|o| !o.is_empty()));
                    *slot = Block {
                        kind: str_at(block, "type"),
                        id: str_at(block, "id"),
                        name: str_at(block, "name"),
                        text: str_at(block, "text"),
                        input_json: String::new(),
                        input,
                    };
                }
            }
            "content_block_delta" => {
                let index = index_at(event);
                let Some(delta) = event.get("delta") else { return };
                let Some(slot) = self.block_slot(index) else { return };
                match delta.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text_delta" => slot.text.push_str(delta.get("text").and_then(Value::as_str).unwrap_or("")),
                    "input_json_delta" => slot.input_json.push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or("")),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str) {
                    self.response.stop_reason = reason.to_string();
                }
                if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
                    self.anthropic_usage(usage);
                }
            }
            "message_stop" => self.response.complete = true,
            "error" => self.response.error = Some(error_text(event.get("error").unwrap_or(event))),
            _ => {}
        }
    }

    fn block_slot(&mut self, index: usize) -> Option<&mut Block> {
        if index > self.blocks.len() + 1024 {
            return None;
        }
        while self.blocks.len() <= index {
            self.blocks.push(Block::default());
        }
        self.blocks.get_mut(index)
    }

    fn anthropic_finish(&mut self) {
        for block in std::mem::take(&mut self.blocks) {
            match block.kind.as_str() {
                "text" => self.response.text.push_str(&block.text),
                "tool_use" => {
                    let arguments = match block.input {
                        Some(input) if block.input_json.is_empty() => input,
                        _ => arguments_value(Some(&Value::String(block.input_json))),
                    };
                    self.response.tool_calls.push(ToolCall { id: block.id, tool: block.name, arguments });
                }
                _ => {}
            }
        }
    }

    // ---- Gemini ----

    fn gemini_chunk(&mut self, chunk: &Value) {
        if let Some(usage) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            let thoughts = u64_at(usage, &["thoughtsTokenCount"]);
            self.tokens = TokenCounts {
                input: u64_at(usage, &["promptTokenCount"]) + u64_at(usage, &["toolUsePromptTokenCount"]),
                output: u64_at(usage, &["candidatesTokenCount"]) + thoughts,
                cached: u64_at(usage, &["cachedContentTokenCount"]),
                cache_creation: 0,
                reasoning: thoughts,
            };
        }
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            self.response.error = Some(error_text(error));
        }
        let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else { return };
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.response.stop_reason = reason.to_string();
            self.response.complete = true;
        }
        let parts = candidate.get("content").and_then(|c| c.get("parts")).and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let thought = part.get("thought").and_then(Value::as_bool).unwrap_or(false);
            if let Some(text) = part.get("text").and_then(Value::as_str)
                && !thought
            {
                self.response.text.push_str(text);
            }
            if let Some(call) = part.get("functionCall") {
                self.response.tool_calls.push(ToolCall {
                    id: str_at(call, "id"),
                    tool: str_at(call, "name"),
                    arguments: call.get("args").cloned().unwrap_or_else(|| Value::Object(Default::default())),
                });
            }
        }
    }

    fn finish(mut self, protocol: Protocol) -> (ModelResponse, TokenCounts) {
        match protocol {
            Protocol::OpenaiChat => {
                for (id, name, text, object) in std::mem::take(&mut self.chat_calls) {
                    if name.is_empty() {
                        continue;
                    }
                    let arguments = object.unwrap_or_else(|| arguments_value(Some(&Value::String(text))));
                    self.response.tool_calls.push(ToolCall { id, tool: name, arguments });
                }
            }
            Protocol::OpenaiResponses => self.responses_finish(),
            Protocol::AnthropicMessages => self.anthropic_finish(),
            Protocol::Gemini => {}
        }
        (self.response, self.tokens)
    }
}

/// Tool-call arguments as the engine takes them (as the chat agent reads them).
fn arguments_value(raw: Option<&Value>) -> Value {
    match raw {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        Some(other) => other.clone(),
    }
}

fn u64_at(value: &Value, path: &[&str]) -> u64 {
    let mut at = value;
    for key in path {
        match at.get(key) {
            Some(next) => at = next,
            None => return 0,
        }
    }
    at.as_u64().unwrap_or(0)
}

fn str_at(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn index_at(event: &Value) -> usize {
    event.get("index").and_then(Value::as_u64).and_then(|i| usize::try_from(i).ok()).unwrap_or(0)
}

fn error_text(error: &Value) -> String {
    let text = error.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| error.to_string());
    text.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(protocol: Protocol, endpoint: Endpoint, sse: bool, chunks: &[&str]) -> (ModelResponse, TokenCounts) {
        let mut parser = ResponseParser::new(protocol, endpoint, sse);
        for chunk in chunks {
            parser.feed(chunk.as_bytes());
        }
        parser.finish()
    }

    #[test]
    fn anthropic_usage_adds_cache_reads_and_writes_to_the_input() {
        let (response, tokens) = parse(
            Protocol::AnthropicMessages,
            Endpoint::Messages,
            true,
            &[
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":100,\"cache_creation_input_tokens\":20,\"output_tokens\":1}}}\n\n",
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"bash\",\"input\":{}}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"cmd\\\":\"}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"ls\\\"}\"}}\n\n",
                "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n",
            ],
        );
        assert_eq!(tokens, TokenCounts { input: 130, output: 42, cached: 100, cache_creation: 20, reasoning: 0 });
        assert_eq!(response.tool_calls, vec![ToolCall { id: "t1".into(), tool: "bash".into(), arguments: json!({"cmd": "ls"}) }]);
        assert_eq!(response.text, "");
        assert_eq!(response.stop_reason, "tool_use");
        assert!(!response.complete, "no message_stop yet");
    }

    #[test]
    fn responses_stream_without_a_final_output_uses_the_done_items() {
        let (response, tokens) = parse(
            Protocol::OpenaiResponses,
            Endpoint::Responses,
            true,
            &[
                "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n",
                "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":[\\\"ls\\\"]}\"}}\n\n",
                "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":7,\"output_tokens\":3,\"input_tokens_details\":{\"cached_tokens\":2},\"output_tokens_details\":{\"reasoning_tokens\":1}}}}\n\n",
            ],
        );
        assert_eq!(tokens, TokenCounts { input: 7, output: 3, cached: 2, cache_creation: 0, reasoning: 1 });
        assert_eq!(response.text, "Hi");
        assert_eq!(response.tool_calls, vec![ToolCall { id: "c1".into(), tool: "shell".into(), arguments: json!({"command": ["ls"]}) }]);
        assert!(response.complete);
        assert_eq!(response.stop_reason, "completed");
    }

    #[test]
    fn gemini_json_array_stream_and_thoughts() {
        let (response, tokens) = parse(
            Protocol::Gemini,
            Endpoint::StreamGenerateContent,
            false,
            &[r#"[{"candidates":[{"content":{"parts":[{"text":"plan","thought":true},{"text":"Hel"}]}}]},
                 {"candidates":[{"content":{"parts":[{"text":"lo"},{"functionCall":{"name":"run","args":{"c":1}}}]},"finishReason":"STOP"}],
                  "usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":4,"cachedContentTokenCount":3}}]"#],
        );
        assert_eq!(response.text, "Hello");
        assert_eq!(response.tool_calls, vec![ToolCall { id: "".into(), tool: "run".into(), arguments: json!({"c": 1}) }]);
        assert_eq!(tokens, TokenCounts { input: 11, output: 9, cached: 3, cache_creation: 0, reasoning: 4 });
        assert!(response.complete);
    }

    #[test]
    fn token_counts_are_not_usage() {
        let (response, tokens) = parse(Protocol::AnthropicMessages, Endpoint::MessagesCountTokens, false, &[r#"{"input_tokens":1234}"#]);
        assert_eq!(response.counted_tokens, Some(1234));
        assert_eq!(tokens, TokenCounts::default());
    }
}
