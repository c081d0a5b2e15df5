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
                for (call_id, content, is_error) in tool_results(&json_or_text(bytes)) {
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
            self.last_main = ids.clone();
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

    fn turn(&mut self, record: &ExchangeRecord) -> ObservedTurn {
        let (text, calls, stop) = match &record.response {
            Some(response) => (response.text.clone(), response.tool_calls.clone(), response.stop_reason.clone()),
            None => (String::new(), Vec::new(), String::new()),
        };
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

/// The JSON a message blob holds, or its text as a JSON string when it is not JSON.
fn json_or_text(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The tool results in one conversation element: (call id, text, is_error).
fn tool_results(message: &Value) -> Vec<(String, String, bool)> {
    let text_of = |v: &Value| -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                .collect::<Vec<_>>()
                .join(""),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    };
    // OpenAI chat: a tool message.
    if message.get("role").and_then(Value::as_str) == Some("tool")
        && let Some(id) = message.get("tool_call_id").and_then(Value::as_str)
    {
        return vec![(id.to_string(), text_of(message.get("content").unwrap_or(&Value::Null)), false)];
    }
    // OpenAI Responses: a function call's output item.
    if message.get("type").and_then(Value::as_str) == Some("function_call_output")
        && let Some(id) = message.get("call_id").and_then(Value::as_str)
    {
        return vec![(id.to_string(), text_of(message.get("output").unwrap_or(&Value::Null)), false)];
    }
    // Anthropic Messages: tool_result blocks in a user message.
    let Some(blocks) = message.get("content").and_then(Value::as_array) else { return Vec::new() };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter_map(|b| {
            let id = b.get("tool_use_id").and_then(Value::as_str)?;
            let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            Some((id.to_string(), text_of(b.get("content").unwrap_or(&Value::Null)), is_error))
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
    fn tool_results_are_read_from_each_protocols_shape() {
        assert_eq!(
            tool_results(&json!({"role": "tool", "tool_call_id": "c1", "content": "out"})),
            vec![("c1".to_string(), "out".to_string(), false)]
        );
        assert_eq!(
            tool_results(&json!({"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})),
            vec![("c2".to_string(), "ab".to_string(), false)]
        );
        assert_eq!(
            tool_results(&json!({"type": "function_call_output", "call_id": "r1", "output": "done"})),
            vec![("r1".to_string(), "done".to_string(), false)]
        );
        assert_eq!(
            tool_results(&json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no such file", "is_error": true}, {"type": "text", "text": "x"}]})),
            vec![("t1".to_string(), "no such file".to_string(), true)]
        );
        assert!(tool_results(&json!({"role": "user", "content": "hello"})).is_empty());
    }
}
