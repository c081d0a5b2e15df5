//! The scripted model server of these tests: `specgap_gateway::mock::MockUpstream` (which
//! captures every request), answered by a handler that reads each request's body (the model
//! it names, the subject in its messages). One server plays every model of a panel; tests tell
//! the models apart by `model`.

use serde_json::{Value, json};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};

/// One captured request.
#[derive(Debug, Clone)]
pub struct Captured {
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    pub body: Value,
}

impl Captured {
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("")
    }
    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages array")
    }
    /// Every message's text, joined.
    pub fn text(&self) -> String {
        self.messages().iter().map(|m| m["content"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>().join("\n")
    }
    /// The last user message.
    pub fn user(&self) -> &str {
        self.messages().iter().rev().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or("")
    }
}

/// What the server does with one request.
pub enum Reply {
    /// 200 with a completion whose content is this text, and these token counts.
    Text(String, u64, u64),
    /// 200 with a completion holding tool calls `(id, name, arguments)`.
    Calls(Vec<(String, String, Value)>),
    /// This status and body.
    Status(u16, String),
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into(), 100, 10)
    }
    pub fn json(value: Value) -> Reply {
        Reply::text(value.to_string())
    }
}

/// A running mock; `url` is its OpenAI-compatible base (`http://127.0.0.1:<port>/v1`).
pub struct MockServer {
    pub url: String,
    upstream: MockUpstream,
}

impl MockServer {
    pub fn start(handler: impl Fn(&Captured) -> Reply + Send + Sync + 'static) -> Self {
        let upstream = MockUpstream::start([]).unwrap();
        upstream.set_responder(move |received| {
            let request = Captured::from(received);
            let (status, body) = match handler(&request) {
                Reply::Text(text, prompt, completion) => (200, completion_body(&request, Some(&text), &[], prompt, completion)),
                Reply::Calls(calls) => (200, completion_body(&request, None, &calls, 100, 10)),
                Reply::Status(status, body) => (status, body),
            };
            MockReply::json(status, body)
        });
        MockServer { url: format!("{}/v1", upstream.url()), upstream }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.upstream.requests().iter().map(Captured::from).collect()
    }

    pub fn requests_of(&self, model: &str) -> Vec<Captured> {
        self.requests().into_iter().filter(|r| r.model() == model).collect()
    }
}

impl From<&ReceivedRequest> for Captured {
    fn from(received: &ReceivedRequest) -> Self {
        Captured {
            path: received.target.clone(),
            authorization: received.header("authorization").map(str::to_string),
            body: serde_json::from_slice(&received.body).unwrap_or(Value::Null),
        }
    }
}

fn completion_body(request: &Captured, text: Option<&str>, calls: &[(String, String, Value)], prompt: u64, completion: u64) -> String {
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    json!({
        "id": "c1", "object": "chat.completion", "model": request.model(),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    })
    .to_string()
}
