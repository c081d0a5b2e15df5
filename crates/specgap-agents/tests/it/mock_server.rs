//! The scripted model server of these tests: `specgap_gateway::mock::MockUpstream` (which
//! captures every request), answered by a handler that scripts each response from the
//! request and its 0-based arrival number.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use specgap_gateway::mock::{MockBody, MockReply, MockUpstream, ReceivedRequest};

/// One captured request.
#[derive(Debug, Clone)]
pub struct Captured {
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub raw_body: String,
    pub body: Value,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages array")
    }
    /// The system prompt of the request.
    pub fn system(&self) -> &str {
        self.messages()[0]["content"].as_str().unwrap_or("")
    }
}

/// What the server does with one request.
pub enum Scripted {
    /// Status, extra headers, body.
    Respond(u16, Vec<(String, String)>, String),
    /// A streamed 200 whose body is cut after these bytes (no terminating chunk).
    Cut(String),
    /// Read the request and never answer.
    Hang,
    /// Wait this long (or until the server stops), then answer as the inner response says.
    Delay(Duration, Box<Scripted>),
}

impl Scripted {
    pub fn json(body: Value) -> Self {
        Scripted::Respond(200, vec![], body.to_string())
    }
    pub fn status(status: u16, body: &str) -> Self {
        Scripted::Respond(status, vec![], body.to_string())
    }
    pub fn after(delay: Duration, then: Scripted) -> Self {
        Scripted::Delay(delay, Box::new(then))
    }
}

/// A running mock; `url` is its OpenAI-compatible base (`http://127.0.0.1:<port>/v1`).
pub struct MockServer {
    pub url: String,
    upstream: MockUpstream,
}

impl MockServer {
    /// Starts a server; `handler(request, n)` answers the n-th (0-based) request.
    pub fn start(handler: impl Fn(&Captured, usize) -> Scripted + Send + Sync + 'static) -> Self {
        let upstream = MockUpstream::start([]).unwrap();
        let arrivals = AtomicUsize::new(0);
        upstream.set_responder(move |received| {
            let n = arrivals.fetch_add(1, Ordering::SeqCst);
            handler(&Captured::from(received), n).into_reply()
        });
        MockServer { url: format!("{}/v1", upstream.url()), upstream }
    }

    /// A server answering the scripted responses in order (then 500s).
    pub fn sequence(responses: Vec<Scripted>) -> Self {
        let queue = Mutex::new(responses.into_iter().map(Some).collect::<Vec<_>>());
        MockServer::start(move |_, n| {
            queue.lock().unwrap().get_mut(n).and_then(Option::take).unwrap_or(Scripted::status(500, "script exhausted"))
        })
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.upstream.requests().iter().map(Captured::from).collect()
    }
}

impl From<&ReceivedRequest> for Captured {
    fn from(received: &ReceivedRequest) -> Self {
        let raw_body = String::from_utf8_lossy(&received.body).to_string();
        Captured {
            path: received.target.clone(),
            headers: received.headers.clone(),
            body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
            raw_body,
        }
    }
}

impl Scripted {
    /// The gateway mock's reply for this script: delays add up before the head; a body
    /// starting `data:` is an event stream sent whole.
    fn into_reply(self) -> MockReply {
        match self {
            Scripted::Respond(status, extra, body) => {
                let content_type = if body.starts_with("data:") { "text/event-stream" } else { "application/json" };
                let mut reply = MockReply::json(status, body);
                reply.headers = vec![("content-type".into(), content_type.into())];
                extra.iter().fold(reply, |reply, (name, value)| reply.with_header(name, value))
            }
            Scripted::Cut(partial) => MockReply::sse(Vec::new()).with_body(MockBody::CutAfter(vec![partial.into_bytes()])),
            Scripted::Hang => MockReply::json(200, Vec::new()).with_body(MockBody::Hang),
            Scripted::Delay(delay, then) => {
                let reply = then.into_reply();
                let total = reply.delay + delay;
                reply.with_delay(total)
            }
        }
    }
}

// ---- response builders ----

/// A non-streaming completion with text and tool calls `(id, name, arguments)`.
pub fn completion(text: Option<&str>, calls: &[(&str, &str, Value)], finish: &str) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": text});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                  "prompt_tokens_details": {"cached_tokens": 40}, "completion_tokens_details": {"reasoning_tokens": 5}}
    })
}

/// A streamed completion (SSE) of the same shape, split into several chunks.
pub fn sse(text: &str, calls: &[(&str, &str, Value)], finish: &str) -> String {
    let mut chunks = Vec::new();
    let half = text.len() / 2;
    for part in [&text[..half], &text[half..]] {
        chunks.push(json!({"choices": [{"index": 0, "delta": {"content": part}}]}));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": a}}]}}]}));
        chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": b}}]}}]}));
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    chunks.push(json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}}));
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

// ---- request invariants ----

/// Checks one request body: each assistant tool call is answered by exactly one `tool`
/// message with the same id before the next assistant message; no tool message answers a
/// call that was not made; the tool names offered equal `tools` (in order).
pub fn check_request(request: &Captured, tools: &[&str]) {
    let messages = request.messages();
    assert_eq!(messages[0]["role"], "system", "the first message is the system prompt");
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        match message["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "calls {open:?} were not answered before the next assistant message");
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    open.push(call["id"].as_str().unwrap().to_string());
                }
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap();
                let position = open.iter().position(|o| o == id).unwrap_or_else(|| panic!("orphan tool result {id}"));
                assert_eq!(position, 0, "tool results come in call order");
                open.remove(position);
            }
            "user" => assert!(open.is_empty(), "a user message came before the results of {open:?}"),
            _ => {}
        }
    }
    assert!(open.is_empty(), "calls {open:?} are unanswered in the request");
    let offered: Vec<&str> =
        request.body["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap()).collect()).unwrap_or_default();
    assert_eq!(offered, tools, "tools offered");
}
