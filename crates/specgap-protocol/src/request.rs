//! Model requests stored once per message: a request body as *segments* — literal JSON text
//! and conversation messages named by content address — so a trajectory that records every
//! request of a conversation grows with the conversation, not with its square.
//!
//! A chat-completions request re-sends the whole conversation each time. [`ChatBody`] writes a
//! body (a JSON object whose `messages` member is the conversation) as the bytes that are sent
//! and, alongside, as segments: the text before the first message, each message by its id
//! ([`message_id`]: `sha256:` and the hex SHA-256 of the message's exact JSON text), the commas
//! between them, and the text after the last. Concatenating the segments, with each id
//! replaced by its message text, gives the bytes sent, byte for byte ([`rebuild`]). The
//! object's members are written in key order, compact, as `serde_json` writes a `Value` (the
//! client sends exactly these bytes, so nothing is re-serialized between recording and
//! sending).
//!
//! The chat user records each of its requests this way in the trajectory
//! ([`crate::event::EventKind::UserRequest`]): a message first sent by a request is stored with
//! that request, later requests only name it; `specgap resample` rebuilds and re-sends the
//! stored bytes (seed 000 §5.6, App. G: "replayed unchanged").

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The content address of a message's exact JSON text: `sha256:<64 hex digits>`.
pub fn message_id(json: &str) -> String {
    let digest = Sha256::digest(json.as_bytes());
    let mut id = String::with_capacity(71);
    id.push_str("sha256:");
    for byte in digest {
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// A piece of a stored request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodySegment {
    /// Literal text of the body.
    Text(String),
    /// A conversation message, by [`message_id`].
    Message(String),
}

/// A conversation message and its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// [`message_id`] of `json`.
    pub id: String,
    /// The message's exact JSON text as sent.
    pub json: String,
}

impl StoredMessage {
    /// The message of `json` with its id.
    pub fn of(json: String) -> Self {
        StoredMessage { id: message_id(&json), json }
    }
}

/// A request body written for sending and cut for storing (module guide).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatBody {
    /// The bytes to send.
    pub bytes: Vec<u8>,
    /// The same bytes as segments.
    pub segments: Vec<BodySegment>,
    /// The conversation messages, in order (ids may repeat when a message does).
    pub messages: Vec<StoredMessage>,
}

impl ChatBody {
    /// Writes the object of `fields` with `conversation_key` holding `messages` (each already
    /// serialized compactly; the key is inserted in its sorted place, replacing a member of
    /// that name in `fields`).
    pub fn build(fields: &Map<String, Value>, conversation_key: &str, messages: Vec<String>) -> ChatBody {
        let messages: Vec<StoredMessage> = messages.into_iter().map(StoredMessage::of).collect();
        let mut keys: Vec<&str> = fields.keys().map(String::as_str).filter(|k| *k != conversation_key).collect();
        keys.push(conversation_key);
        keys.sort_unstable();
        let mut segments = Vec::new();
        let mut text = String::from("{");
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&Value::String((*key).to_string()).to_string());
            text.push(':');
            if *key == conversation_key {
                text.push('[');
                for (j, message) in messages.iter().enumerate() {
                    if j > 0 {
                        text.push(',');
                    }
                    segments.push(BodySegment::Text(std::mem::take(&mut text)));
                    segments.push(BodySegment::Message(message.id.clone()));
                }
                text.push(']');
            } else if let Some(value) = fields.get(*key) {
                text.push_str(&value.to_string());
            }
        }
        text.push('}');
        segments.push(BodySegment::Text(text));
        segments.retain(|s| !matches!(s, BodySegment::Text(t) if t.is_empty()));
        let lookup: HashMap<&str, &str> = messages.iter().map(|m| (m.id.as_str(), m.json.as_str())).collect();
        // Every id was just made from its message, so the rebuild cannot miss one.
        let bytes = rebuild(&segments, |id| lookup.get(id).copied()).unwrap_or_default();
        ChatBody { bytes, segments, messages }
    }
}

/// Why a stored body cannot be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebuildError {
    /// A segment names a message that was never stored.
    #[error("the stored request names message {0}, which no earlier request stored")]
    MissingMessage(String),
    /// A stored message does not hash to its id.
    #[error("stored message {0} does not hash to its id; the trajectory was altered")]
    Altered(String),
}

/// The bytes of a stored body: `segments` with each message id replaced by the text `lookup`
/// gives for it, checked against its id.
///
/// # Errors
/// [`RebuildError`] for an id `lookup` does not know or a text that does not hash to it.
pub fn rebuild<'a>(segments: &[BodySegment], lookup: impl Fn(&str) -> Option<&'a str>) -> Result<Vec<u8>, RebuildError> {
    let mut bytes = Vec::new();
    for segment in segments {
        match segment {
            BodySegment::Text(text) => bytes.extend_from_slice(text.as_bytes()),
            BodySegment::Message(id) => {
                let json = lookup(id).ok_or_else(|| RebuildError::MissingMessage(id.clone()))?;
                if message_id(json) != *id {
                    return Err(RebuildError::Altered(id.clone()));
                }
                bytes.extend_from_slice(json.as_bytes());
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_bytes_are_the_json_serde_writes_for_the_same_object() {
        let f = fields(json!({"model": "m", "stream": false, "temperature": 0.7, "max_tokens": 5, "zeta": "x\"\n"}));
        let messages = vec![r#"{"role":"system","content":"s"}"#.to_string(), r#"{"role":"user","content":"é\u0001"}"#.to_string()];
        let body = ChatBody::build(&f, "messages", messages.clone());
        let mut whole = f.clone();
        whole.insert("messages".into(), Value::Array(messages.iter().map(|m| serde_json::from_str(m).unwrap()).collect()));
        let parsed: Value = serde_json::from_slice(&body.bytes).unwrap();
        assert_eq!(parsed, Value::Object(whole));
        let text = String::from_utf8(body.bytes.clone()).unwrap();
        assert!(text.starts_with(r#"{"max_tokens":5,"messages":[{"role":"system","content":"s"},"#), "{text}");
        assert_eq!(body.segments.iter().filter(|s| matches!(s, BodySegment::Message(_))).count(), 2);
    }

    #[test]
    fn an_empty_conversation_and_a_replaced_member() {
        let body = ChatBody::build(&fields(json!({"messages": "old", "a": 1})), "messages", Vec::new());
        assert_eq!(body.bytes, br#"{"a":1,"messages":[]}"#);
        assert_eq!(body.segments, vec![BodySegment::Text(r#"{"a":1,"messages":[]}"#.into())]);
    }

    #[test]
    fn rebuild_checks_every_message_against_its_id() {
        let body = ChatBody::build(&Map::new(), "messages", vec!["{\"a\":1}".into()]);
        let id = body.messages[0].id.clone();
        assert_eq!(rebuild(&body.segments, |i| (i == id).then_some("{\"a\":1}")).unwrap(), body.bytes);
        assert_eq!(rebuild(&body.segments, |_| Some("{\"a\":2}")), Err(RebuildError::Altered(id.clone())));
        assert_eq!(rebuild(&body.segments, |_| None), Err(RebuildError::MissingMessage(id)));
    }
}
