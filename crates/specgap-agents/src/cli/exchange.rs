//! A `cli:` agent's model traffic as trajectory material (issue 14 items 4 and 8): each
//! gateway exchange becomes a `model_exchange` event that names the request's messages by
//! journal id and stores each message once, the first time it is sent; a forwarded main-loop
//! request is also a turn with the answer's text and tool calls; and the tool results the
//! agent appended to its conversation since its previous turn become the results of that
//! turn's calls.
//!
//! Results are read from the messages a request has beyond the longest common prefix with the
//! previous main-loop request (a conversation grows at its end; a CLI that trims or rewrites
//! its history simply starts a new prefix): OpenAI chat `role: "tool"` messages, Responses
//! `function_call_output` items and Anthropic `tool_result` blocks, each matched to its call
//! by id. Their text goes through the adapter ([`super::adapter::Adapter::tool_result`]),
//! which knows its tool's output format.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use specgap_engine::session::{ObservedResult, ObservedTurn};
use specgap_gateway::{ExchangeRecord, Outcome, RequestClass};
use specgap_protocol::event::EventKind;

use super::adapter::Adapter;
use crate::chat::refusal::is_plain_text_refusal;

/// What one exchange gives the engine.
#[derive(Debug)]
pub(crate) struct Reading {
    pub(crate) results: Vec<ObservedResult>,
    /// What the calls answered by this request did, in the normalized vocabulary, as the
    /// adapter maps its structured tools ([`Adapter::call_actions`]).
    pub(crate) actions: Vec<specgap_protocol::action::FileAction>,
    pub(crate) event: EventKind,
    pub(crate) turn: Option<ObservedTurn>,
}

/// The conversation as far as the agent's requests showed it.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    /// Every message blob seen, by id.
    blobs: HashMap<String, Arc<[u8]>>,
    /// The message ids of the last forwarded main-loop request.
    last_main: Vec<String>,
    /// Tool calls of the agent's turns by id: their tool names, and whether a result came.
    calls: HashMap<String, (String, bool)>,
    /// Call ids in order (for the results that never come back in a request).
    order: Vec<String>,
    /// The arguments of each call, by id (for the adapter's action mapping).
    arguments: HashMap<String, Value>,
    /// The text of the latest turn.
    last_text: Option<String>,
}

impl Conversation {
    /// Reads one exchange (module guide).
    pub(crate) fn read(&mut self, record: &ExchangeRecord, adapter: &dyn Adapter) -> Reading {
        let mut new_messages = Vec::new();
        for blob in &record.new_blobs {
            self.blobs.insert(blob.id.0.clone(), blob.bytes.clone());
        }
        for message in record.messages.iter().filter(|m| m.new) {
            if let Some(bytes) = self.blobs.get(&message.id.0) {
                new_messages.push((message.id.0.clone(), json_or_text(bytes)));
            }
        }
        let ids: Vec<String> = record.messages.iter().map(|m| m.id.0.clone()).collect();
        let forwarded = record.request.is_some() && !matches!(record.outcome, Outcome::Refused { .. } | Outcome::Local);
        let mut results = Vec::new();
        let mut actions = Vec::new();
        if record.class == RequestClass::Main && forwarded {
            let common = ids.iter().zip(&self.last_main).take_while(|(a, b)| a == b).count();
            for id in &ids[common..] {
                let Some(bytes) = self.blobs.get(id) else { continue };
                let message = json_or_text(bytes);
                self.take_results(&message, adapter, &mut results, &mut actions);
            }
            self.last_main = ids.clone();
        }
        if let Some(body) = &record.incomplete_body {
            // A request the end cut while it was being sent (issue 29 item 5): the results of
            // its complete messages are still the results of calls made before the end.
            for message in complete_elements(&body.bytes) {
                self.take_results(&message, adapter, &mut results, &mut actions);
            }
        }
        let turn = record.is_turn().then(|| self.turn(record));
        let (outcome, detail) = outcome_words(&record.outcome);
        let info = record.request.as_ref();
        let event = EventKind::ModelExchange {
            request: record.seq,
            class: match record.class {
                RequestClass::Main => "main".into(),
                RequestClass::Side => "side".into(),
            },
            method: record.method.clone(),
            path: record.path.clone(),
            model: info.and_then(|i| i.model.clone()),
            stream: info.is_some_and(|i| i.stream),
            status: record.status,
            outcome,
            detail,
            messages: ids,
            new_messages,
            usage: record.usage.clone(),
            duration_ms: record.duration_ms,
        };
        Reading { results, actions, event, turn }
    }

    /// The results `message` carries for calls of the agent's turns that have none yet.
    fn take_results(
        &mut self,
        message: &Value,
        adapter: &dyn Adapter,
        results: &mut Vec<ObservedResult>,
        actions: &mut Vec<specgap_protocol::action::FileAction>,
    ) {
        for (call_id, content, is_error) in self.with_call_ids(tool_results(message)) {
            let Some((tool, seen)) = self.calls.get_mut(&call_id) else { continue };
            if *seen {
                continue;
            }
            *seen = true;
            let arguments = self.arguments.get(&call_id).unwrap_or(&Value::Null);
            actions.extend(adapter.call_actions(tool, arguments, &content, is_error));
            let (output, blank_success) = adapter.tool_result(tool, &content);
            results.push(ObservedResult { call_id, tool: tool.clone(), output, is_error, blank_success });
        }
    }

    /// Results named by tool rather than by call id (Gemini's `functionResponse`, whose `id`
    /// the CLI made up itself when the answer's `functionCall` had none) go to the oldest call
    /// of that tool still without a result; results with a known call id are kept as they are.
    fn with_call_ids(&self, results: Vec<WireResult>) -> Vec<(String, String, bool)> {
        let mut taken: Vec<String> = Vec::new();
        results
            .into_iter()
            .filter_map(|result| {
                let Some(tool) = result.tool.filter(|_| !self.calls.contains_key(&result.id)) else {
                    return Some((result.id, result.content, result.is_error));
                };
                let found = self
                    .order
                    .iter()
                    .find(|c| !taken.contains(c) && self.calls.get(*c).is_some_and(|(t, seen)| *t == tool && !seen))?
                    .clone();
                taken.push(found.clone());
                Some((found, result.content, result.is_error))
            })
            .collect()
    }

    fn turn(&mut self, record: &ExchangeRecord) -> ObservedTurn {
        let (text, mut calls, stop) = match &record.response {
            Some(response) => (response.text.clone(), response.tool_calls.clone(), response.stop_reason.clone()),
            None => (String::new(), Vec::new(), String::new()),
        };
        // A call without an id on the wire (Gemini's function calls usually have none) gets
        // one of the harness's: `r<request>-<index>`.
        for (index, call) in calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("r{}-{index}", record.seq);
            }
        }
        for call in &calls {
            if !call.id.is_empty() && !self.calls.contains_key(&call.id) {
                self.calls.insert(call.id.clone(), (call.tool.clone(), false));
                self.arguments.insert(call.id.clone(), call.arguments.clone());
                self.order.push(call.id.clone());
            }
        }
        let refusal = calls.is_empty() && (stop == "content_filter" || is_plain_text_refusal(&text));
        let text = (!text.trim().is_empty()).then_some(text);
        self.last_text = text.clone();
        ObservedTurn { text, tool_calls: calls, usage: Some(record.usage.clone()), refusal }
    }

    /// The calls of the agent's turns whose result no request showed, in order.
    pub(crate) fn unanswered(&self) -> Vec<(String, String)> {
        self.order
            .iter()
            .filter_map(|id| self.calls.get(id).filter(|(_, seen)| !seen).map(|(tool, _)| (id.clone(), tool.clone())))
            .collect()
    }

    /// Marks a call's result as recorded (from the adapter's log).
    pub(crate) fn answered(&mut self, call_id: &str) {
        if let Some((_, seen)) = self.calls.get_mut(call_id) {
            *seen = true;
        }
    }

    /// The text of the agent's latest turn.
    pub(crate) fn last_text(&self) -> Option<String> {
        self.last_text.clone()
    }
}

/// A tool result as a request carries it: the call id on the wire, the tool it names when
/// the protocol matches results by tool (Gemini), its text and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
struct WireResult {
    id: String,
    tool: Option<String>,
    content: String,
    is_error: bool,
}

impl WireResult {
    fn by_id(id: &str, content: String, is_error: bool) -> Self {
        WireResult { id: id.to_string(), tool: None, content, is_error }
    }
}

/// The top-level arrays that hold a request's conversation: OpenAI chat's and Anthropic's
/// `messages`, Responses' `input`, Gemini's `contents`.
const CONVERSATION_ARRAYS: &[&[u8]] = &[b"messages", b"input", b"contents"];

/// The conversation elements a request body cut short still holds whole: each object or
/// array element of its top-level conversation array ([`CONVERSATION_ARRAYS`]) that arrived
/// complete, parsed, in order. A scan of strings and nesting, so it reads a body whose end
/// never came (no JSON parser accepts one).
fn complete_elements(body: &[u8]) -> Vec<Value> {
    let mut elements = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut string_start = 0;
    // The last string read at the top level: the key of the value that follows it.
    let mut last_top_string: &[u8] = b"";
    let mut in_conversation = false;
    let mut element_start: Option<usize> = None;
    for (i, &byte) in body.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
                if depth == 1 {
                    last_top_string = &body[string_start..i];
                }
            }
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                string_start = i + 1;
            }
            b'{' | b'[' => {
                if depth == 1 && byte == b'[' {
                    in_conversation = CONVERSATION_ARRAYS.contains(&last_top_string);
                } else if depth == 2 && in_conversation {
                    element_start = Some(i);
                }
                depth += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 2
                    && in_conversation
                    && let Some(start) = element_start.take()
                    && let Ok(element) = serde_json::from_slice::<Value>(&body[start..=i])
                {
                    elements.push(element);
                }
                if depth <= 1 {
                    in_conversation = false;
                }
            }
            _ => {}
        }
    }
    elements
}

/// The JSON a message blob holds, or its text as a JSON string when it is not JSON.
fn json_or_text(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The tool results in one conversation element.
fn tool_results(message: &Value) -> Vec<WireResult> {
    let text_of = |v: &Value| -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str())).collect::<Vec<_>>().join("")
            }
            Value::Null => String::new(),
            other => other.to_string(),
        }
    };
    // OpenAI chat: a tool message.
    if message.get("role").and_then(Value::as_str) == Some("tool")
        && let Some(id) = message.get("tool_call_id").and_then(Value::as_str)
    {
        return vec![WireResult::by_id(id, text_of(message.get("content").unwrap_or(&Value::Null)), false)];
    }
    // OpenAI Responses: a function call's output item.
    if message.get("type").and_then(Value::as_str) == Some("function_call_output")
        && let Some(id) = message.get("call_id").and_then(Value::as_str)
    {
        return vec![WireResult::by_id(id, text_of(message.get("output").unwrap_or(&Value::Null)), false)];
    }
    // Gemini: functionResponse parts of a content item, matched by tool name
    // ([`Conversation::with_call_ids`]).
    if let Some(parts) = message.get("parts").and_then(Value::as_array) {
        return parts
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .map(|r| {
                let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
                let wire_id = r.get("id").and_then(Value::as_str).unwrap_or_default();
                let response = r.get("response").unwrap_or(&Value::Null);
                let (content, is_error) = match (response.get("output"), response.get("error")) {
                    (_, Some(error)) => (text_of(error), true),
                    (Some(output), None) => (text_of(output), false),
                    (None, None) => (text_of(response), false),
                };
                WireResult { id: wire_id.to_string(), tool: Some(name.to_string()), content, is_error }
            })
            .collect();
    }
    // Anthropic Messages: tool_result blocks in a user message.
    let Some(blocks) = message.get("content").and_then(Value::as_array) else { return Vec::new() };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter_map(|b| {
            let id = b.get("tool_use_id").and_then(Value::as_str)?;
            let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            Some(WireResult::by_id(id, text_of(b.get("content").unwrap_or(&Value::Null)), is_error))
        })
        .collect()
}

/// The outcome's name and what the gateway said about it.
fn outcome_words(outcome: &Outcome) -> (String, String) {
    match outcome {
        Outcome::Completed => ("completed".into(), String::new()),
        Outcome::UpstreamRejected => ("upstream_rejected".into(), String::new()),
        Outcome::Local => ("local".into(), String::new()),
        Outcome::Refused { reason, message } => ("refused".into(), format!("{}: {message}", reason.code())),
        Outcome::StreamCut { fault } => ("stream_cut".into(), fault.clone()),
        Outcome::Abandoned => ("abandoned".into(), String::new()),
        Outcome::ClientGone => ("client_gone".into(), String::new()),
        Outcome::UpstreamDead { attempts, fault } => ("upstream_dead".into(), format!("{attempts} attempts: {fault}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_cut_short_gives_its_complete_conversation_elements() {
        let whole = br#"{"model":"m","messages":[{"role":"user","content":"a [\"}"},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"tool","tool_call_id":"c2","content":"cut"#;
        assert_eq!(
            complete_elements(whole),
            vec![json!({"role": "user", "content": "a [\"}"}), json!({"role": "tool", "tool_call_id": "c1", "content": "ok"})]
        );
        assert_eq!(complete_elements(br#"{"model":"messages","tools":[{"a":1}],"contents":[{"parts":[]}"#), vec![json!({"parts": []})]);
        assert_eq!(complete_elements(b"{"), Vec::<Value>::new());
        assert_eq!(complete_elements(br#"{"input":["text",{"type":"function_call_output","call_id":"r","output":"x"}]}"#).len(), 1);
    }

    #[test]
    fn tool_results_are_read_from_each_protocols_shape() {
        assert_eq!(
            tool_results(&json!({"role": "tool", "tool_call_id": "c1", "content": "out"})),
            vec![WireResult::by_id("c1", "out".into(), false)]
        );
        assert_eq!(
            tool_results(
                &json!({"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
            ),
            vec![WireResult::by_id("c2", "ab".into(), false)]
        );
        assert_eq!(
            tool_results(&json!({"type": "function_call_output", "call_id": "r1", "output": "done"})),
            vec![WireResult::by_id("r1", "done".into(), false)]
        );
        assert_eq!(
            tool_results(
                &json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no such file", "is_error": true}, {"type": "text", "text": "x"}]})
            ),
            vec![WireResult::by_id("t1", "no such file".into(), true)]
        );
        assert_eq!(
            tool_results(&json!({"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "id": "read_file_1_0", "response": {"output": "hello"}}},
                {"functionResponse": {"name": "glob", "response": {"error": "no match"}}}
            ]})),
            vec![
                WireResult { id: "read_file_1_0".into(), tool: Some("read_file".into()), content: "hello".into(), is_error: false },
                WireResult { id: String::new(), tool: Some("glob".into()), content: "no match".into(), is_error: true },
            ]
        );
        assert!(tool_results(&json!({"role": "user", "content": "hello"})).is_empty());
    }
}
