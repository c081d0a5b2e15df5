//! A scripted mock model server (feature `mock`): plain HTTP/1.1 on `127.0.0.1`, one thread
//! per connection, keep-alive, that answers each request with the next scripted
//! [`MockReply`] and records every request it receives ([`ReceivedRequest`]) so a test can
//! check each one (the key that arrived, the path, the model, the body bytes). Replies can be
//! whole, chunked, cut (the connection closed before the last chunk), stalled (head and
//! chunks, then nothing until the client goes away) or hanging (nothing at all).
//!
//! [`replies`] builds well-formed answers of each protocol, streamed and not.

use std::collections::VecDeque;
use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a reply's body is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockBody {
    /// One body with `Content-Length`.
    Full(Vec<u8>),
    /// Chunked transfer, each element one chunk, then the terminating chunk.
    Chunks(Vec<Vec<u8>>),
    /// Chunked transfer of these chunks, then the connection is closed without the
    /// terminating chunk (a cut stream).
    CutAfter(Vec<Vec<u8>>),
    /// Chunked transfer of these chunks, then nothing until the client closes the connection
    /// (a slow upstream mid-answer).
    Stall(Vec<Vec<u8>>),
    /// No answer at all until the client closes the connection.
    Hang,
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockReply {
    /// HTTP status.
    pub status: u16,
    /// Headers besides `Content-Length` / `Transfer-Encoding`.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: MockBody,
    /// Wait before the response head.
    pub delay: Duration,
    /// Wait before each chunk after the first.
    pub chunk_delay: Duration,
}

impl MockReply {
    /// A whole JSON answer.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        MockReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: MockBody::Full(body.into()),
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
        }
    }

    /// A complete SSE stream, one chunk per element.
    pub fn sse(chunks: Vec<Vec<u8>>) -> Self {
        MockReply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: MockBody::Chunks(chunks),
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
        }
    }

    /// The same reply with another body kind built from its chunks (e.g. `MockBody::CutAfter`).
    pub fn with_body(mut self, body: MockBody) -> Self {
        self.body = body;
        self
    }

    /// The same reply with a header added.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same reply after a wait.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The reply's chunks (a `Full` body is one chunk).
    pub fn chunks(&self) -> Vec<Vec<u8>> {
        match &self.body {
            MockBody::Full(body) => vec![body.clone()],
            MockBody::Chunks(c) | MockBody::CutAfter(c) | MockBody::Stall(c) => c.clone(),
            MockBody::Hang => Vec::new(),
        }
    }
}

/// A request as the mock received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedRequest {
    /// Method.
    pub method: String,
    /// Request target as sent (path and query).
    pub target: String,
    /// Headers in order, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, as received (chunked bodies de-chunked).
    pub body: Vec<u8>,
}

impl ReceivedRequest {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The path (target without query).
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    /// The query (`""` without one).
    pub fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }

    /// Whether `needle` occurs anywhere in the request (target, header names and values, body).
    pub fn contains(&self, needle: &str) -> bool {
        let n = needle.as_bytes();
        let has = |hay: &[u8]| !n.is_empty() && hay.windows(n.len()).any(|w| w == n);
        has(self.target.as_bytes()) || self.headers.iter().any(|(k, v)| has(k.as_bytes()) || has(v.as_bytes())) || has(&self.body)
    }
}

/// A function answering a request.
type Responder = Arc<dyn Fn(&ReceivedRequest) -> MockReply + Send + Sync>;

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<MockReply>>,
    responder: Mutex<Option<Responder>>,
    fallback: Mutex<Option<MockReply>>,
    received: Mutex<Vec<ReceivedRequest>>,
    arrived: Condvar,
    /// Replies written whole to their clients (stalled and hanging ones never are).
    written: Mutex<usize>,
    replied: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running mock server; stopped when dropped.
pub struct MockUpstream {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MockUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockUpstream").field("addr", &self.addr).finish_non_exhaustive()
    }
}

/// Status the mock answers when its script is used up and it has no fallback (not retried by
/// the gateway, so a test sees it at once).
pub const SCRIPT_EXHAUSTED_STATUS: u16 = 418;

impl MockUpstream {
    /// Starts a mock on `127.0.0.1:0` that answers with `script`, in order.
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub fn start(script: impl IntoIterator<Item = MockReply>) -> io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script)
    }

    /// Starts a mock on `addr` that answers with `script`, in order.
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub fn start_on(addr: SocketAddr, script: impl IntoIterator<Item = MockReply>) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        lock(&state.script).extend(script);
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_state, thread_stop) = (state.clone(), stop.clone());
        let thread = std::thread::Builder::new().name("mock-upstream".into()).spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = thread_state.clone();
                let _ = std::thread::Builder::new().name("mock-connection".into()).spawn(move || serve_connection(stream, &state));
            }
        })?;
        Ok(MockUpstream { addr, state, stop, thread: Some(thread) })
    }

    /// Answers with `reply` whenever the script is used up.
    pub fn set_fallback(&self, reply: MockReply) {
        *lock(&self.state.fallback) = Some(reply);
    }

    /// Answers with `respond(request)` whenever the script is used up (before any fallback):
    /// for tests whose answers depend on the request, such as the step of a conversation.
    pub fn set_responder(&self, respond: impl Fn(&ReceivedRequest) -> MockReply + Send + Sync + 'static) {
        *lock(&self.state.responder) = Some(Arc::new(respond));
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: MockReply) {
        lock(&self.state.script).push_back(reply);
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<ReceivedRequest> {
        lock(&self.state.received).clone()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        lock(&self.state.received).len()
    }

    /// Waits until at least `n` requests arrived (or `limit` passed); returns the count.
    pub fn wait_for_requests(&self, n: usize, limit: Duration) -> usize {
        let end = Instant::now() + limit;
        let mut received = lock(&self.state.received);
        while received.len() < n {
            let now = Instant::now();
            if now >= end {
                break;
            }
            received = self.state.arrived.wait_timeout(received, end - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        received.len()
    }

    /// Waits until at least `n` replies were written whole to their clients (or `limit`
    /// passed); returns the count.
    pub fn wait_for_replies(&self, n: usize, limit: Duration) -> usize {
        let end = Instant::now() + limit;
        let mut written = lock(&self.state.written);
        while *written < n {
            let now = Instant::now();
            if now >= end {
                break;
            }
            written = self.state.replied.wait_timeout(written, end - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        *written
    }
}

impl Drop for MockUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve_connection(stream: TcpStream, state: &State) {
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut writer = write_half;
    loop {
        let request = match read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => return,
        };
        {
            let mut received = lock(&state.received);
            received.push(request.clone());
            state.arrived.notify_all();
        }
        let scripted = lock(&state.script).pop_front();
        // The responder sees this connection's request, not the latest arrival (another
        // connection may have pushed one since).
        let answered = || {
            let respond = lock(&state.responder).clone()?;
            Some(respond(&request))
        };
        let reply = scripted.or_else(answered).or_else(|| lock(&state.fallback).clone()).unwrap_or_else(|| {
            MockReply::json(SCRIPT_EXHAUSTED_STATUS, &b"{\"error\":{\"message\":\"the mock has no scripted reply left\"}}"[..])
        });
        match write_reply(&mut writer, &reply) {
            Ok(true) => {
                *lock(&state.written) += 1;
                state.replied.notify_all();
            }
            Ok(false) => {
                // Stall or hang: wait for the client to go away, then close.
                let mut sink = [0u8; 1024];
                while matches!(reader.get_mut().read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
            Err(_) => return,
        }
        if matches!(reply.body, MockBody::CutAfter(_)) {
            let _ = writer.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// Reads one request; `None` at a clean end of the connection.
fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<Option<ReceivedRequest>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.trim_end().splitn(3, ' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(io::Error::other("bad request line"));
    };
    let (method, target) = (method.to_string(), target.to_string());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            return Err(io::Error::other("connection closed in the head"));
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let get = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v): &(String, String)| v.clone());
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16).map_err(io::Error::other)?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = get("content-length") {
        let length: usize = length.parse().map_err(io::Error::other)?;
        body = vec![0; length];
        reader.read_exact(&mut body)?;
    }
    Ok(Some(ReceivedRequest { method, target, headers, body }))
}

/// Writes a reply; `Ok(false)` when the reply stalls or hangs (the connection is then held).
fn write_reply(writer: &mut TcpStream, reply: &MockReply) -> io::Result<bool> {
    if reply.delay > Duration::ZERO {
        std::thread::sleep(reply.delay);
    }
    if reply.body == MockBody::Hang {
        return Ok(false);
    }
    let mut head = format!("HTTP/1.1 {} Mock\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match &reply.body {
        MockBody::Full(body) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            let mut out = head.into_bytes();
            out.extend_from_slice(body);
            writer.write_all(&out)?;
            Ok(true)
        }
        MockBody::Chunks(chunks) | MockBody::CutAfter(chunks) | MockBody::Stall(chunks) => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            writer.write_all(head.as_bytes())?;
            for (i, chunk) in chunks.iter().enumerate() {
                if i > 0 && reply.chunk_delay > Duration::ZERO {
                    std::thread::sleep(reply.chunk_delay);
                }
                if chunk.is_empty() {
                    continue;
                }
                let mut out = format!("{:x}\r\n", chunk.len()).into_bytes();
                out.extend_from_slice(chunk);
                out.extend_from_slice(b"\r\n");
                writer.write_all(&out)?;
                writer.flush()?;
            }
            match &reply.body {
                MockBody::Chunks(_) => {
                    writer.write_all(b"0\r\n\r\n")?;
                    Ok(true)
                }
                MockBody::Stall(_) => Ok(false),
                _ => Ok(true),
            }
        }
        MockBody::Hang => Ok(false),
    }
}

/// Well-formed answers of each protocol, streamed (one SSE event per chunk) and not.
pub mod replies {
    use serde_json::{Value, json};

    use super::MockReply;

    /// A tool call in a scripted answer.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Call {
        /// Call id.
        pub id: String,
        /// Tool name.
        pub name: String,
        /// Arguments object.
        pub arguments: Value,
        /// The Responses API's `namespace` of the called tool (how Codex CLI offers MCP tools:
        /// the namespace `mcp__specgap`); ignored by the other protocols.
        pub namespace: Option<String>,
    }

    impl Call {
        /// A call.
        pub fn new(id: &str, name: &str, arguments: Value) -> Self {
            Call { id: id.into(), name: name.into(), arguments, namespace: None }
        }

        /// The same call of a tool in `namespace` (Responses only).
        pub fn in_namespace(mut self, namespace: &str) -> Self {
            self.namespace = Some(namespace.into());
            self
        }
    }

    /// Token counts as the scripted answer reports them. `input` is every prompt token,
    /// `cached` the cache reads, `cache_creation` the cache writes (Anthropic only), `reasoning`
    /// part of `output`.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Tokens {
        /// Prompt tokens, all.
        pub input: u64,
        /// Completion tokens.
        pub output: u64,
        /// Cache reads.
        pub cached: u64,
        /// Cache writes (Anthropic).
        pub cache_creation: u64,
        /// Reasoning tokens.
        pub reasoning: u64,
    }

    fn sse_line(event: Option<&str>, data: &Value) -> Vec<u8> {
        match event {
            Some(name) => format!("event: {name}\ndata: {data}\n\n").into_bytes(),
            None => format!("data: {data}\n\n").into_bytes(),
        }
    }

    /// OpenAI chat completion (JSON).
    pub fn openai_chat(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
            .collect();
        let mut message = json!({"role": "assistant", "content": text});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        let body = json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
            "usage": openai_usage(tokens),
        });
        MockReply::json(200, body.to_string())
    }

    fn openai_usage(t: Tokens) -> Value {
        json!({
            "prompt_tokens": t.input, "completion_tokens": t.output, "total_tokens": t.input + t.output,
            "prompt_tokens_details": {"cached_tokens": t.cached},
            "completion_tokens_details": {"reasoning_tokens": t.reasoning},
        })
    }

    /// OpenAI chat completion streamed: text in two deltas, each call's arguments in two
    /// deltas, a finish chunk, the usage chunk (`stream_options.include_usage`), `[DONE]`.
    pub fn openai_chat_stream(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let mut chunks = vec![sse_line(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
        let (a, b) = split(text);
        for part in [a, b] {
            chunks.push(sse_line(None, &chunk(json!({"content": part}), Value::Null)));
        }
        for (i, call) in calls.iter().enumerate() {
            let arguments = call.arguments.to_string();
            let (x, y) = split(&arguments);
            chunks.push(sse_line(
                None,
                &chunk(json!({"tool_calls": [{"index": i, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": x}}]}), Value::Null),
            ));
            chunks.push(sse_line(None, &chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": y}}]}), Value::Null)));
        }
        chunks.push(sse_line(None, &chunk(json!({}), json!(if calls.is_empty() { "stop" } else { "tool_calls" }))));
        chunks.push(sse_line(
            None,
            &json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": openai_usage(tokens)}),
        ));
        chunks.push(b"data: [DONE]\n\n".to_vec());
        MockReply::sse(chunks)
    }

    fn split(text: &str) -> (&str, &str) {
        let mut at = text.len() / 2;
        while !text.is_char_boundary(at) {
            at += 1;
        }
        text.split_at(at)
    }

    fn responses_object(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> Value {
        let mut output = Vec::new();
        if !text.is_empty() {
            output.push(json!({"type": "message", "id": "msg_mock", "role": "assistant", "status": "completed",
                               "content": [{"type": "output_text", "text": text, "annotations": []}]}));
        }
        for call in calls {
            let mut item = json!({"type": "function_call", "id": format!("fc_{}", call.id), "call_id": call.id, "name": call.name,
                                  "arguments": call.arguments.to_string(), "status": "completed"});
            if let Some(namespace) = &call.namespace {
                item["namespace"] = json!(namespace);
            }
            output.push(item);
        }
        json!({
            "id": "resp_mock", "object": "response", "created_at": 0, "status": "completed", "model": model, "output": output,
            "usage": {"input_tokens": tokens.input, "output_tokens": tokens.output, "total_tokens": tokens.input + tokens.output,
                      "input_tokens_details": {"cached_tokens": tokens.cached},
                      "output_tokens_details": {"reasoning_tokens": tokens.reasoning}},
        })
    }

    /// OpenAI Responses (JSON).
    pub fn responses(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        MockReply::json(200, responses_object(model, text, calls, tokens).to_string())
    }

    /// OpenAI Responses streamed: `response.created`, text deltas, `response.output_item.done`
    /// per item, `response.completed` with the whole response.
    pub fn responses_stream(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let done = responses_object(model, text, calls, tokens);
        let mut created = done.clone();
        created["status"] = json!("in_progress");
        created["output"] = json!([]);
        created["usage"] = Value::Null;
        let mut chunks =
            vec![sse_line(Some("response.created"), &json!({"type": "response.created", "sequence_number": 0, "response": created}))];
        let (a, b) = split(text);
        for part in [a, b] {
            if !part.is_empty() {
                chunks.push(sse_line(
                    Some("response.output_text.delta"),
                    &json!({"type": "response.output_text.delta", "item_id": "msg_mock", "output_index": 0, "content_index": 0, "delta": part}),
                ));
            }
        }
        for (i, item) in done["output"].as_array().cloned().unwrap_or_default().into_iter().enumerate() {
            chunks.push(sse_line(
                Some("response.output_item.done"),
                &json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            ));
        }
        chunks.push(sse_line(Some("response.completed"), &json!({"type": "response.completed", "response": done})));
        MockReply::sse(chunks)
    }

    fn anthropic_usage(t: Tokens) -> Value {
        json!({"input_tokens": t.input - t.cached - t.cache_creation, "output_tokens": t.output,
               "cache_read_input_tokens": t.cached, "cache_creation_input_tokens": t.cache_creation})
    }

    /// Anthropic Messages (JSON).
    pub fn anthropic(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for call in calls {
            content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
        }
        let body = json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" }, "stop_sequence": null,
            "usage": anthropic_usage(tokens),
        });
        MockReply::json(200, body.to_string())
    }

    /// Anthropic Messages streamed: `message_start` (input usage), blocks with
    /// `text_delta` / `input_json_delta`, `message_delta` (output usage), `message_stop`.
    pub fn anthropic_stream(model: &str, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let mut start_usage = anthropic_usage(tokens);
        start_usage["output_tokens"] = json!(1);
        let mut chunks = vec![sse_line(
            Some("message_start"),
            &json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": null, "usage": start_usage}}),
        )];
        let mut index = 0;
        if !text.is_empty() {
            chunks.push(sse_line(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            ));
            let (a, b) = split(text);
            for part in [a, b] {
                chunks.push(sse_line(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": part}}),
                ));
            }
            chunks.push(sse_line(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        for call in calls {
            chunks.push(sse_line(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
            ));
            let arguments = call.arguments.to_string();
            let (a, b) = split(&arguments);
            for part in [a, b] {
                chunks.push(sse_line(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
                ));
            }
            chunks.push(sse_line(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        chunks.push(sse_line(
            Some("message_delta"),
            &json!({"type": "message_delta", "delta": {"stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" }},
                    "usage": {"output_tokens": tokens.output}}),
        ));
        chunks.push(sse_line(Some("message_stop"), &json!({"type": "message_stop"})));
        MockReply::sse(chunks)
    }

    fn gemini_usage(t: Tokens) -> Value {
        json!({"promptTokenCount": t.input, "candidatesTokenCount": t.output - t.reasoning, "thoughtsTokenCount": t.reasoning,
               "cachedContentTokenCount": t.cached, "totalTokenCount": t.input + t.output})
    }

    fn gemini_parts(text: &str, calls: &[Call]) -> Vec<Value> {
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(json!({"text": text}));
        }
        for call in calls {
            parts.push(json!({"functionCall": {"name": call.name, "args": call.arguments}}));
        }
        parts
    }

    /// Gemini generateContent (JSON).
    pub fn gemini(text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let body = json!({
            "candidates": [{"content": {"role": "model", "parts": gemini_parts(text, calls)}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": gemini_usage(tokens), "modelVersion": "mock",
        });
        MockReply::json(200, body.to_string())
    }

    /// Gemini streamGenerateContent with `alt=sse`: the text in two chunks, the calls and the
    /// finish reason and usage in the last.
    pub fn gemini_stream(text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
        let (a, b) = split(text);
        let partial = Tokens { output: 0, reasoning: 0, ..tokens };
        let mut chunks = vec![sse_line(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": a}]}, "index": 0}], "usageMetadata": gemini_usage(partial)}),
        )];
        chunks.push(sse_line(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": gemini_parts(b, calls)}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": gemini_usage(tokens)}),
        ));
        MockReply::sse(chunks)
    }
}
