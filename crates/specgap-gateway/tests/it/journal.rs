//! The journal: every request rebuilt byte for byte (audits resend them), whatever its key
//! order, spacing or escapes, streamed or not, in every protocol; each message of a growing
//! conversation stored once.

use serde_json::{Value, json};
use specgap_gateway::mock::replies::{self, Tokens};
use specgap_gateway::{Journal, Protocol, Segment};

use crate::support::*;

/// `value` written the way no serializer writes it: keys in reverse order, spaces before
/// colons, a newline and a tab after commas, every non-alphanumeric character of a string as
/// a `\u` escape (`/` as `\/`), numbers with an exponent where they allow one.
fn unusual(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map.iter().rev().map(|(k, v)| format!("{} :{}", unusual_string(k), unusual(v))).collect();
            format!("{{ {} }}", fields.join(",\n\t"))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(unusual).collect::<Vec<_>>().join(" ,  ")),
        Value::String(s) => unusual_string(s),
        Value::Number(n) if n.as_u64().is_some_and(|n| n >= 100) => format!("{}e0", n),
        other => other.to_string(),
    }
}

fn unusual_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '/' => out.push_str("\\/"),
            c if c.is_ascii_alphanumeric() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        }
    }
    out.push('"');
    out
}

fn replay_of(protocol: Protocol, stream: bool) -> specgap_gateway::mock::MockReply {
    let t = Tokens { input: 5, output: 1, ..Tokens::default() };
    match (protocol, stream) {
        (Protocol::OpenaiChat, false) => replies::openai_chat(MODEL, "ok", &[], t),
        (Protocol::OpenaiChat, true) => replies::openai_chat_stream(MODEL, "ok", &[], t),
        (Protocol::OpenaiResponses, false) => replies::responses(MODEL, "ok", &[], t),
        (Protocol::OpenaiResponses, true) => replies::responses_stream(MODEL, "ok", &[], t),
        (Protocol::AnthropicMessages, false) => replies::anthropic(MODEL, "ok", &[], t),
        (Protocol::AnthropicMessages, true) => replies::anthropic_stream(MODEL, "ok", &[], t),
        (Protocol::Gemini, false) => replies::gemini("ok", &[], t),
        (Protocol::Gemini, true) => replies::gemini_stream("ok", &[], t),
    }
}

#[test]
fn every_request_is_rebuilt_byte_for_byte_in_every_protocol_streamed_and_not() {
    for (protocol, stream) in every_case() {
        let case = format!("{protocol} stream={stream}");
        let setup = Setup::new(protocol, vec![replay_of(protocol, stream), replay_of(protocol, stream)]);
        let (path, mut standard) = request(protocol, stream, MODEL);
        let conversation = match protocol {
            Protocol::OpenaiChat | Protocol::AnthropicMessages => "messages",
            Protocol::OpenaiResponses => "input",
            Protocol::Gemini => "contents",
        };
        // Non-ASCII text, escapes, a large number, nested arrays.
        standard[conversation]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "Grüße — «¿ok?» 🎉 \"quoted\" \\ back/slash", "n": 12345}));
        let bodies = [standard.to_string(), format!("\n\t  {}  \r\n", unusual(&standard))];
        for (i, body) in bodies.iter().enumerate() {
            let got = setup.post(&path, body.clone().into_bytes(), &auth(protocol, TOKEN));
            assert_eq!(got.status, 200, "{case} body {i}: {}", got.text());
        }
        setup.recorder.wait(2);
        let received = setup.mock.requests();
        for (seq, upstream) in received.iter().enumerate() {
            assert_eq!(upstream.body, bodies[seq].as_bytes(), "{case}: forwarded as received");
            for journal in [None, Some(Journal::read(&setup.journal).unwrap())] {
                let rebuilt = match &journal {
                    None => setup.gateway.rebuild_request(seq as u64).unwrap(),
                    Some(file) => file.rebuild(seq as u64).unwrap(),
                };
                assert_eq!(rebuilt.body, upstream.body, "{case} request {seq}: rebuilt byte for byte");
                assert_eq!(rebuilt.method, "POST");
                assert_eq!(rebuilt.url, format!("{}{}", setup.mock.url(), upstream.target), "{case}");
                // Every journalled header arrived as journalled (the key where the placeholder is).
                for (name, value) in &rebuilt.headers {
                    let value = value.replace("[key]", REAL_KEY);
                    assert!(upstream.headers.contains(&(name.clone(), value.clone())), "{case}: {name}: {value} not sent");
                }
            }
        }
        // The unusual body was cut into messages too, not stored whole.
        let entry = setup.gateway.with_journal(|j| j.entry(1).unwrap().clone());
        let blobs = entry.body.as_ref().unwrap().iter().filter(|s| matches!(s, Segment::Blob(_))).count();
        assert!(blobs >= 3, "{case}: {blobs} blobs");
    }
}

#[test]
fn a_growing_conversation_stores_each_message_once() {
    let turns = 8;
    let script = (0..turns).map(|_| replies::anthropic(MODEL, "ok", &[], Tokens::default())).collect();
    let setup = Setup::new(Protocol::AnthropicMessages, script);
    // Messages of 2 kB each, so the history a request re-sends dominates its size.
    let filler = "lorem ipsum ".repeat(170);
    let mut messages = vec![json!({"role": "user", "content": format!("message-0 start the task {filler}")})];
    let mut sizes = Vec::new();
    for turn in 1..=turns {
        let body = json!({
            "model": MODEL, "max_tokens": 100, "system": "system-prompt-marker",
            "tools": [{"name": "bash", "description": "tools-marker", "input_schema": {"type": "object"}}],
            "messages": messages,
        })
        .to_string();
        sizes.push(body.len());
        assert_eq!(setup.post("/v1/messages", body.into_bytes(), &auth(Protocol::AnthropicMessages, TOKEN)).status, 200);
        messages.push(json!({"role": "assistant", "content": format!("message-{turn}a reply {filler}")}));
        messages.push(json!({"role": "user", "content": format!("message-{turn}u result {filler}")}));
    }
    let records = setup.recorder.wait(turns);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.messages.len(), 1 + 2 * i, "turn {i}");
        let new: Vec<bool> = record.messages.iter().map(|m| m.new).collect();
        let expected: Vec<bool> = (0..record.messages.len()).map(|m| i == 0 || m + 2 >= record.messages.len()).collect();
        assert_eq!(new, expected, "turn {i}: only the messages added since the last request are new");
    }
    let journal = setup.journal_text();
    for marker in ["message-0 start", "message-1a", "message-1u", "message-4u", "system-prompt-marker", "tools-marker"] {
        assert_eq!(journal.matches(marker).count(), 1, "{marker} must be stored exactly once");
    }
    // Linear, not quadratic: the 15 distinct messages once, plus a skeleton, a response and
    // headers per request, well under the 64 messages the requests carried in all.
    let total_sent: usize = sizes.iter().sum();
    let distinct = (2 * turns - 1) * (filler.len() + 40);
    assert!(journal.len() < distinct + turns * 2000, "journal {} bytes for {} distinct message bytes", journal.len(), distinct);
    assert!(journal.len() * 2 < total_sent, "journal {} bytes for {total_sent} bytes sent", journal.len());
}

#[test]
fn refused_requests_are_journalled_too() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let (path, body) = request(Protocol::OpenaiChat, false, "gpt-other");
    let body = format!(" {} ", body);
    assert_eq!(setup.post(&path, body.clone().into_bytes(), &auth(Protocol::OpenaiChat, TOKEN)).status, 403);
    let not_json = b"{\"model\": not json".to_vec();
    assert_eq!(setup.post(&path, not_json.clone(), &auth(Protocol::OpenaiChat, TOKEN)).status, 400);
    setup.recorder.wait(2);
    assert_eq!(setup.gateway.rebuild_request(0).unwrap().body, body.as_bytes());
    assert_eq!(setup.gateway.rebuild_request(1).unwrap().body, not_json, "a body that is not json is stored whole");
    assert_eq!(setup.mock.request_count(), 0);
}
