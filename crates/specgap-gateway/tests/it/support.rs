//! Shared set-up: a gateway in front of a scripted mock upstream, a supervisor that records
//! every exchange, requests of each protocol, and a raw HTTP client for requests no
//! well-behaved client sends.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use specgap_gateway::mock::{MockReply, MockUpstream};
use specgap_gateway::{
    Admission, ExchangeRecord, GatewayConfig, GatewayHandle, Protocol, RequestClass, RequestInfo, Secret, Supervisor, Upstream, serve_tcp,
};

/// The real key given to the gateway: it must arrive upstream and nowhere else.
pub const REAL_KEY: &str = "sk-canary-REAL-0123456789abcdefghij";
/// The sandbox's token.
pub const TOKEN: &str = "sgw-test-token-00112233445566778899";
/// The one configured model.
pub const MODEL: &str = "mock-model-1";
/// Longest a test waits for something that should happen at once (a bound, not a timing
/// assertion).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Records every exchange; refuses main-loop requests past `allow_main` when set; treats
/// requests without tools as side requests when `toolless_is_side`.
#[derive(Default)]
pub struct Recorder {
    pub records: Mutex<Vec<ExchangeRecord>>,
    pub infos: Mutex<Vec<RequestInfo>>,
    pub allow_main: Mutex<Option<usize>>,
    pub toolless_is_side: bool,
    pub admitted_main: Mutex<usize>,
    pub changed: Condvar,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }

    /// Waits until `n` exchanges are recorded and returns them in completion order.
    pub fn wait(&self, n: usize) -> Vec<ExchangeRecord> {
        let records = self.records.lock().unwrap();
        let (records, _) = self.changed.wait_timeout_while(records, PATIENCE, |r| r.len() < n).unwrap();
        assert!(records.len() >= n, "only {} of {n} exchanges recorded", records.len());
        records.clone()
    }

    /// The recorded exchanges so far.
    #[allow(dead_code)]
    pub fn records(&self) -> Vec<ExchangeRecord> {
        self.records.lock().unwrap().clone()
    }
}

impl Supervisor for Recorder {
    fn classify(&self, info: &RequestInfo, _body: &[u8]) -> RequestClass {
        if self.toolless_is_side && info.tool_count == 0 { RequestClass::Side } else { info.default_class() }
    }

    fn admit(&self, info: &RequestInfo) -> Admission {
        self.infos.lock().unwrap().push(info.clone());
        if info.class != RequestClass::Main {
            return Admission::Admit;
        }
        let mut admitted = self.admitted_main.lock().unwrap();
        if let Some(limit) = *self.allow_main.lock().unwrap()
            && *admitted >= limit
        {
            return Admission::refuse(format!("the turn budget of {limit} model requests is used up"));
        }
        *admitted += 1;
        Admission::Admit
    }

    fn price(&self, _model: &str, usage: &specgap_protocol::event::Usage, cache_creation_tokens: u64) -> f64 {
        // One dollar per million input tokens, two per million output tokens, cache writes
        // at 1.25 times the input price (so a test can see they were passed).
        (usage.input_tokens as f64 + 0.25 * cache_creation_tokens as f64 + 2.0 * usage.output_tokens as f64) / 1e6
    }

    fn exchange_done(&self, record: &ExchangeRecord) {
        self.records.lock().unwrap().push(record.clone());
        self.changed.notify_all();
    }
}

/// A gateway in front of a mock, with its journal file.
pub struct Setup {
    pub gateway: GatewayHandle,
    pub mock: MockUpstream,
    pub recorder: Arc<Recorder>,
    pub journal: PathBuf,
    pub protocol: Protocol,
    _dir: tempfile::TempDir,
}

/// The upstream base URL of `protocol` on the mock (the OpenAI protocols end in `/v1`).
pub fn upstream_base(mock: &MockUpstream, protocol: Protocol) -> String {
    match protocol {
        Protocol::OpenaiChat | Protocol::OpenaiResponses => format!("{}/v1", mock.url()),
        Protocol::AnthropicMessages | Protocol::Gemini => mock.url(),
    }
}

/// A configuration for `protocol` on `mock` with the test key and token, 3 retries of 1 ms.
pub fn config(mock: &MockUpstream, protocol: Protocol) -> GatewayConfig {
    let upstream = Upstream::new(protocol, upstream_base(mock, protocol), Some(Secret::new(REAL_KEY)), vec![MODEL.into()]);
    let mut config = GatewayConfig::new(vec![upstream], Secret::new(TOKEN));
    config.retry.retry_base = Duration::from_millis(1);
    config.retry.max_retries = 3;
    config.retry.seed = 11;
    config.retry.request_timeout = Duration::from_secs(20);
    config
}

impl Setup {
    pub fn new(protocol: Protocol, script: Vec<MockReply>) -> Self {
        Setup::with(protocol, script, Recorder::new(), |_| {})
    }

    pub fn with(protocol: Protocol, script: Vec<MockReply>, recorder: Arc<Recorder>, adjust: impl FnOnce(&mut GatewayConfig)) -> Self {
        let mock = MockUpstream::start(script).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("gateway.jsonl");
        let mut config = config(&mock, protocol);
        config.journal_path = Some(journal.clone());
        adjust(&mut config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let gateway = serve_tcp(listener, config, recorder.clone()).unwrap();
        Setup { gateway, mock, recorder, journal, protocol, _dir: dir }
    }

    pub fn addr(&self) -> SocketAddr {
        match self.gateway.addr() {
            specgap_gateway::ListenAddr::Tcp(addr) => *addr,
            other => panic!("not tcp: {other:?}"),
        }
    }

    /// `http://127.0.0.1:<port>` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr())
    }

    /// Sends the standard request of the set-up's protocol.
    pub fn send(&self, stream: bool) -> Reply {
        let (path, body) = request(self.protocol, stream, MODEL);
        self.post(&path, body.to_string().into_bytes(), &auth(self.protocol, TOKEN))
    }

    /// POSTs raw bytes with the given headers.
    pub fn post(&self, path: &str, body: Vec<u8>, headers: &[(&str, String)]) -> Reply {
        let mut request = client().post(self.url(path)).body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        Reply::from(request.send().unwrap())
    }

    /// The journal file's text.
    pub fn journal_text(&self) -> String {
        std::fs::read_to_string(&self.journal).unwrap()
    }
}

/// A blocking HTTP client that ignores the environment's proxies.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().no_proxy().timeout(PATIENCE).build().unwrap()
}

/// What a client received.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl From<reqwest::blocking::Response> for Reply {
    fn from(response: reqwest::blocking::Response) -> Self {
        let status = response.status().as_u16();
        let headers =
            response.headers().iter().map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect();
        let body = response.bytes().map(|b| b.to_vec()).unwrap_or_default();
        Reply { status, headers, body }
    }
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not json ({e}): {}", self.text()))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Whether `needle` occurs in the status line's parts the client sees: headers or body.
    pub fn contains(&self, needle: &str) -> bool {
        self.text().contains(needle) || self.headers.iter().any(|(n, v)| n.contains(needle) || v.contains(needle))
    }
}

/// The credential header a client of `protocol` sends.
pub fn auth(protocol: Protocol, token: &str) -> Vec<(&'static str, String)> {
    match protocol {
        Protocol::OpenaiChat | Protocol::OpenaiResponses => vec![("authorization", format!("Bearer {token}"))],
        Protocol::AnthropicMessages => vec![("x-api-key", token.to_string()), ("anthropic-version", "2023-06-01".into())],
        Protocol::Gemini => vec![("x-goog-api-key", token.to_string())],
    }
}

/// The path and body of a standard request of `protocol` (a system prompt, one user
/// message, one tool).
pub fn request(protocol: Protocol, stream: bool, model: &str) -> (String, Value) {
    match protocol {
        Protocol::OpenaiChat => {
            let mut body = json!({
                "model": model,
                "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "List the files."}],
                "tools": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}],
                "stream": stream,
            });
            if stream {
                body["stream_options"] = json!({"include_usage": true});
            }
            ("/v1/chat/completions".into(), body)
        }
        Protocol::OpenaiResponses => (
            "/v1/responses".into(),
            json!({
                "model": model, "instructions": "You are terse.",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "List the files."}]}],
                "tools": [{"type": "function", "name": "bash", "parameters": {"type": "object"}}],
                "stream": stream, "store": false,
            }),
        ),
        Protocol::AnthropicMessages => (
            "/v1/messages".into(),
            json!({
                "model": model, "max_tokens": 256, "system": "You are terse.",
                "messages": [{"role": "user", "content": "List the files."}],
                "tools": [{"name": "bash", "input_schema": {"type": "object"}}],
                "stream": stream,
            }),
        ),
        Protocol::Gemini => {
            let path = if stream {
                format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
            } else {
                format!("/v1beta/models/{model}:generateContent")
            };
            (
                path,
                json!({
                    "systemInstruction": {"parts": [{"text": "You are terse."}]},
                    "contents": [{"role": "user", "parts": [{"text": "List the files."}]}],
                    "tools": [{"functionDeclarations": [{"name": "bash", "parameters": {"type": "object"}}]}],
                }),
            )
        }
    }
}

/// The upstream target the standard request must arrive at.
pub fn upstream_target(protocol: Protocol, stream: bool) -> String {
    match protocol {
        Protocol::OpenaiChat => "/v1/chat/completions".into(),
        Protocol::OpenaiResponses => "/v1/responses".into(),
        Protocol::AnthropicMessages => "/v1/messages".into(),
        Protocol::Gemini if stream => format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"),
        Protocol::Gemini => format!("/v1beta/models/{MODEL}:generateContent"),
    }
}

/// The header and value the real key must arrive in.
pub fn key_header(protocol: Protocol) -> (&'static str, String) {
    match protocol {
        Protocol::OpenaiChat | Protocol::OpenaiResponses => ("authorization", format!("Bearer {REAL_KEY}")),
        Protocol::AnthropicMessages => ("x-api-key", REAL_KEY.to_string()),
        Protocol::Gemini => ("x-goog-api-key", REAL_KEY.to_string()),
    }
}

/// Sends `request` (a whole HTTP/1.1 request, head and body) over a fresh connection and
/// returns the status and the raw response text.
pub fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

/// Every protocol, streamed and not.
pub fn every_case() -> Vec<(Protocol, bool)> {
    Protocol::ALL.iter().flat_map(|p| [(*p, false), (*p, true)]).collect()
}
