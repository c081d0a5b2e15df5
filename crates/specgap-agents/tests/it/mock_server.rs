//! A hand-written OpenAI-compatible mock server on std::net (lighter than wiremock + tokio):
//! every request is captured, and a handler scripts each response from the request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

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

type Handler = dyn Fn(&Captured, usize) -> Scripted + Send + Sync;

pub struct MockServer {
    pub url: String,
    addr: std::net::SocketAddr,
    captured: Arc<Mutex<Vec<Captured>>>,
    stop: Arc<AtomicBool>,
}

impl MockServer {
    /// Starts a server; `handler(request, n)` answers the n-th (0-based) request.
    pub fn start(handler: impl Fn(&Captured, usize) -> Scripted + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        {
            let captured = Arc::clone(&captured);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let captured = Arc::clone(&captured);
                    let handler = Arc::clone(&handler);
                    let stop = Arc::clone(&stop);
                    thread::spawn(move || serve(stream, &captured, &*handler, &stop));
                }
            });
        }
        MockServer { url: format!("http://{addr}/v1"), addr, captured, stop }
    }

    /// A server answering the scripted responses in order (then 500s).
    pub fn sequence(responses: Vec<Scripted>) -> Self {
        let queue = Mutex::new(responses.into_iter().map(Some).collect::<Vec<_>>());
        MockServer::start(move |_, n| {
            queue.lock().unwrap().get_mut(n).and_then(Option::take).unwrap_or(Scripted::status(500, "script exhausted"))
        })
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut stream: TcpStream, captured: &Mutex<Vec<Captured>>, handler: &Handler, stop: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_lowercase(), value.trim().to_string()));
        }
    }
    let length: usize = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let raw_body = String::from_utf8_lossy(&body).to_string();
    let request = Captured { path, headers, body: serde_json::from_str(&raw_body).unwrap_or(Value::Null), raw_body };
    let n = {
        let mut all = captured.lock().unwrap();
        all.push(request.clone());
        all.len() - 1
    };
    let mut response = handler(&request, n);
    while let Scripted::Delay(delay, then) = response {
        let until = std::time::Instant::now() + delay;
        while std::time::Instant::now() < until {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        response = *then;
    }
    match response {
        Scripted::Delay(..) => unreachable!("delays are unwrapped above"),
        Scripted::Respond(status, extra, body) => {
            let content_type = if body.starts_with("data:") { "text/event-stream" } else { "application/json" };
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in extra {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        Scripted::Cut(partial) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(format!("{:x}\r\n{partial}\r\n", partial.len()).as_bytes());
            let _ = stream.flush();
            thread::sleep(Duration::from_millis(50));
            // Close without the terminating zero-length chunk.
        }
        Scripted::Hang => {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
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
    let offered: Vec<&str> = request.body["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap()).collect())
        .unwrap_or_default();
    assert_eq!(offered, tools, "tools offered");
}
