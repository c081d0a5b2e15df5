//! A scripted OpenAI-compatible mock server on std::net: every request is captured, and a
//! handler answers each one from its body (the model it names, the subject in its messages).
//! One server plays every model of a panel; tests tell the models apart by `model`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

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

type Handler = dyn Fn(&Captured) -> Reply + Send + Sync;

pub struct MockServer {
    pub url: String,
    addr: std::net::SocketAddr,
    captured: Arc<Mutex<Vec<Captured>>>,
    stop: Arc<AtomicBool>,
}

impl MockServer {
    pub fn start(handler: impl Fn(&Captured) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        {
            let (captured, stop) = (Arc::clone(&captured), Arc::clone(&stop));
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (captured, handler) = (Arc::clone(&captured), Arc::clone(&handler));
                    thread::spawn(move || serve(stream, &captured, &*handler));
                }
            });
        }
        MockServer { url: format!("http://{addr}/v1"), addr, captured, stop }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }

    pub fn requests_of(&self, model: &str) -> Vec<Captured> {
        self.requests().into_iter().filter(|r| r.model() == model).collect()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut stream: TcpStream, captured: &Mutex<Vec<Captured>>, handler: &Handler) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0usize;
    let mut authorization = None;
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
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            } else if name.trim().eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = Captured { path, authorization, body: serde_json::from_slice(&body).unwrap_or(Value::Null) };
    captured.lock().unwrap().push(request.clone());
    let (status, body) = match handler(&request) {
        Reply::Text(text, prompt, completion) => (200, completion_body(&request, Some(&text), &[], prompt, completion)),
        Reply::Calls(calls) => (200, completion_body(&request, None, &calls, 100, 10)),
        Reply::Status(status, body) => (status, body),
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
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
