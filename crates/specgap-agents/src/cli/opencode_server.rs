//! opencode's own question tool, answered through opencode's own server (`--ask-channel
//! native`; issue 15 item 4, seed 002 App. A.9.3).
//!
//! ## Why a server
//! opencode 1.18.33 offers its `question` tool to clients `cli`, `app` and `desktop` (its tool
//! registry), but `opencode run` creates its session with the permission rule `question: deny`
//! (unless it runs interactively, which needs a terminal), and a local `run` talks to an
//! in-process server nobody else can reach. A session created through the server's own API
//! (`POST /session` without rules) keeps the tool (the `build` agent allows it), and
//! `opencode run --attach <url> --session <id>` drives that session while printing the same
//! JSON events; its event loop ignores `question.asked`, so the question waits until someone
//! answers it through `POST /question/<request id>/reply`.
//!
//! ## How an episode uses it
//! 1. The adapter's command starts `opencode serve` on `127.0.0.1:`[`SERVER_PORT`] inside the
//!    sandbox (its own network namespace: the port is the sandbox's own), then waits for the
//!    harness's ready file ([`QuestionServer::ready_file`]) before it runs `opencode run
//!    --attach`, and stops the server when the run ends.
//! 2. [`QuestionWatcher`] (one per start of the program, on a thread of its own that enters the
//!    sandbox's network namespace, so its sockets are made there and reach nothing else) waits
//!    for the server, creates the session on the first start (`POST /session`, no rules) and
//!    keeps its id in the home (the resume continues it), writes the ready file, then polls
//!    `GET /question` (the pending requests: a state, so nothing is missed between polls).
//! 3. Each new request becomes one harness call `ask_user` with `questions` (one request = one
//!    clarification round, each question a question unit, as for `ask_user`;
//!    [`NativeRequest::tool_call`]): the customer gets each question's `question`, or its
//!    `header` when that is empty; the request as opencode sent it (options too) rides along
//!    as `native` and is kept in the trajectory's `bridge_call`, never shown to the customer.
//! 4. The engine's result becomes the reply `{"answers": [["…"], …]}`, one one-element array per
//!    question, free text kept as the customer wrote it (never forced into an option;
//!    [`NativeRequest::answers`]). Past the round limit the engine's result is its round-limit
//!    reply (`specgap_engine::episode::PROCEED_REPLY`, the text exchange's too), and every
//!    question gets it; when the call failed every question gets [`UNANSWERED`].
//!
//! The agent's own shell can reach its own server too (it runs in the same sandbox): it could
//! answer its own question, which is the same as not asking, and it reaches nothing it could
//! not reach already.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use specgap_engine::session::AgentError;
use specgap_protocol::event::ToolCall;

use super::harness::PendingCall;
use super::home;
use super::link::{Happened, Link};

/// The port `opencode serve` listens on inside the sandbox (its network namespace is its own,
/// and the gateway's port there is an ephemeral one, so this one is free).
pub const SERVER_PORT: u16 = 4096;
/// What every question gets when the harness call failed (bad arguments, a customer that could
/// not answer): our words, telling the agent to go on without the answer.
pub const UNANSWERED: &str = "No answer could be obtained for this question. Continue on your own best judgement.";
/// How often the pending questions are looked at.
const POLL: Duration = Duration::from_millis(25);
/// How long one request to the server may take.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest response read from the server.
const RESPONSE_LIMIT: u64 = 4 << 20;

/// A CLI's own question route through its local server, as an adapter declares it
/// ([`super::adapter::Adapter::question_server`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionServer {
    /// The server's port on the sandbox's loopback.
    pub port: u16,
    /// The file (relative to the home) that keeps the session id the harness created.
    pub session_file: &'static str,
    /// The stem of the ready files (relative to the home): `<stem>-<start>`.
    pub ready_stem: &'static str,
}

impl QuestionServer {
    /// The ready file of start `start`, relative to the home: `ready` once the session is
    /// there and questions are watched, else the reason the route failed.
    pub fn ready_file(&self, start: u32) -> String {
        format!("{}-{start}", self.ready_stem)
    }
}

/// One option of a native question (recorded, not shown to the customer).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NativeOption {
    /// The option's label.
    #[serde(default)]
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
}

/// One question of a native request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NativeQuestion {
    /// The question.
    #[serde(default)]
    pub question: String,
    /// Its short header.
    #[serde(default)]
    pub header: String,
    /// The options opencode offers (the customer may answer anything).
    #[serde(default)]
    pub options: Vec<NativeOption>,
}

impl NativeQuestion {
    /// What the customer is asked: the question, or its header when the question is blank.
    pub fn customer_text(&self) -> &str {
        if self.question.trim().is_empty() { &self.header } else { &self.question }
    }
}

/// One pending request of opencode's question tool (`GET /question`'s items, the
/// `question.asked` event's properties).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeRequest {
    /// The request id (`que_…`), the reply route's.
    pub id: String,
    /// Its questions, in order.
    pub questions: Vec<NativeQuestion>,
    /// The request as opencode sent it.
    pub raw: Value,
}

impl NativeRequest {
    /// Reads one request; `None` without an id or a `questions` array.
    pub fn from_json(raw: &Value) -> Option<Self> {
        let id = raw["id"].as_str().filter(|id| !id.is_empty())?.to_string();
        let questions = Vec::<NativeQuestion>::deserialize(raw.get("questions")?).ok()?;
        Some(NativeRequest { id, questions, raw: raw.clone() })
    }

    /// The customer's questions, in order ([`NativeQuestion::customer_text`]).
    pub fn customer_questions(&self) -> Vec<String> {
        self.questions.iter().map(|q| q.customer_text().to_string()).collect()
    }

    /// The harness call it stands for: `ask_user` with the customer's questions as one list
    /// (one round), and the request itself as `native`.
    pub fn tool_call(&self, id: String) -> ToolCall {
        ToolCall { id, tool: "ask_user".into(), arguments: json!({ "questions": self.customer_questions(), "native": self.raw }) }
    }

    /// The reply's `answers` for the engine's result `text`: each question's own answer when
    /// `text` is the engine's answer message for these questions, else `text` for every
    /// question (the round-limit reply); [`UNANSWERED`] for every question when `is_error`.
    pub fn answers(&self, text: &str, is_error: bool) -> Vec<Vec<String>> {
        let every = |answer: &str| self.questions.iter().map(|_| vec![answer.to_string()]).collect();
        if is_error {
            return every(UNANSWERED);
        }
        match specgap_engine::text_channel::split_answer_message(&self.customer_questions(), text) {
            Some(answers) => answers.into_iter().map(|a| vec![a]).collect(),
            None => every(text),
        }
    }
}

/// A native request waiting for the engine's answer; the answer goes to the watcher, which
/// posts it (its sockets live in the sandbox's namespace).
#[derive(Debug)]
struct NativeCall {
    request: NativeRequest,
    replies: mpsc::Sender<(String, Vec<Vec<String>>)>,
}

impl PendingCall for NativeCall {
    fn tool_call(&self, id: String) -> ToolCall {
        self.request.tool_call(id)
    }

    fn answer(self: Box<Self>, text: String, is_error: bool, _end: bool) {
        let answers = self.request.answers(&text, is_error);
        // A watcher that is gone has a server that is gone: nobody is left to answer.
        let _ = self.replies.send((self.request.id.clone(), answers));
    }
}

/// Watches one start's server for questions (module guide). Dropping it stops the thread.
#[derive(Debug)]
pub(crate) struct QuestionWatcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What one watcher needs.
#[derive(Debug, Clone)]
pub(crate) struct WatchSpec {
    /// The sandbox's network namespace (`/proc/<pid>/ns/net`).
    pub(crate) namespace: PathBuf,
    /// The route.
    pub(crate) server: QuestionServer,
    /// The private home on the host.
    pub(crate) home: PathBuf,
    /// The start it watches.
    pub(crate) start: u32,
}

impl QuestionWatcher {
    /// Starts watching (module guide); calls go to `link`.
    ///
    /// # Errors
    /// [`AgentError`] when the namespace cannot be opened or the thread not started.
    pub(crate) fn start(spec: WatchSpec, link: Arc<Link>) -> Result<Self, AgentError> {
        let ready = PathBuf::from(spec.server.ready_file(spec.start));
        match std::fs::remove_file(spec.home.join(&ready)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(AgentError::with_source("cannot clear opencode's ready file", false, e));
            }
            _ => {}
        }
        let namespace = std::fs::File::open(&spec.namespace).map_err(|e| {
            AgentError::with_source(format!("cannot open the sandbox's network namespace {}", spec.namespace.display()), false, e)
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("opencode-questions".into())
            .spawn(move || {
                // SAFETY: setns of this thread only (CLONE_NEWNET is per thread), into a
                // namespace file held open; the thread only talks to the sandbox's server.
                if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    let why = std::io::Error::last_os_error();
                    write_ready(&spec.home, &ready, &format!("the harness cannot enter the sandbox's network namespace: {why}"));
                    return;
                }
                watch(&spec, &ready, &link, &stopped);
            })
            .map_err(|e| AgentError::with_source("cannot start the watcher of opencode's questions", false, e))?;
        Ok(QuestionWatcher { stop, thread: Some(thread) })
    }
}

impl Drop for QuestionWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_ready(home_dir: &Path, ready: &Path, state: &str) {
    if let Err(e) = home::write_file(home_dir, ready, format!("{state}\n").as_bytes()) {
        tracing::warn!("cannot write opencode's ready file: {e}");
    }
}

/// The watcher's loop (module guide).
fn watch(spec: &WatchSpec, ready: &Path, link: &Link, stop: &AtomicBool) {
    let port = spec.server.port;
    let server_up = || matches!(request(port, "GET", "/question", None), Ok((200, _)));
    while !server_up() {
        if stop.load(Ordering::SeqCst) || link.is_ended() {
            return;
        }
        std::thread::sleep(POLL);
    }
    if let Err(why) = ensure_session(spec) {
        write_ready(&spec.home, ready, &why);
        return;
    }
    write_ready(&spec.home, ready, "ready");
    let (replies, answered) = mpsc::channel::<(String, Vec<Vec<String>>)>();
    let mut seen = BTreeSet::new();
    while !stop.load(Ordering::SeqCst) {
        while let Ok((id, answers)) = answered.try_recv() {
            post_reply(port, &id, &answers);
        }
        if let Ok((200, body)) = request(port, "GET", "/question", None) {
            let pending: Vec<Value> = serde_json::from_slice(&body).unwrap_or_default();
            for request in pending.iter().filter_map(NativeRequest::from_json) {
                if !seen.insert(request.id.clone()) {
                    continue;
                }
                if link.is_ended() {
                    post_reply(port, &request.id, &request.answers(super::EPISODE_OVER, false));
                } else {
                    link.push(Happened::Call(Box::new(NativeCall { request, replies: replies.clone() })));
                }
            }
        }
        std::thread::sleep(POLL);
    }
}

fn post_reply(port: u16, id: &str, answers: &[Vec<String>]) {
    let path = format!("/question/{}/reply", url_segment(id));
    match request(port, "POST", &path, Some(&json!({ "answers": answers }))) {
        Ok((200, _)) => {}
        Ok((status, body)) => tracing::warn!("opencode refused the answer to {id} ({status}): {}", String::from_utf8_lossy(&body)),
        Err(e) => tracing::warn!("cannot answer opencode's question {id}: {e}"),
    }
}

/// The session the run continues: the one in the home, else a new one made through the
/// server's API without permission rules (so its question tool stays offered).
fn ensure_session(spec: &WatchSpec) -> Result<(), String> {
    let file = Path::new(spec.server.session_file);
    match home::read_file(&spec.home, file, 4096) {
        Ok(id) if !id.is_empty() => return Ok(()),
        Ok(_) | Err(home::HomeError::Missing(_)) => {}
        Err(e) => return Err(format!("cannot read opencode's session id: {e}")),
    }
    let (status, body) =
        request(spec.server.port, "POST", "/session", Some(&json!({}))).map_err(|e| format!("cannot create opencode's session: {e}"))?;
    let created: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = created["id"]
        .as_str()
        .filter(|_| status == 200)
        .ok_or_else(|| format!("opencode did not create a session ({status}): {}", String::from_utf8_lossy(&body)))?;
    home::write_file(&spec.home, file, id.as_bytes()).map_err(|e| format!("cannot keep opencode's session id: {e}"))
}

/// `text` with every byte outside `[A-Za-z0-9_-]` percent-encoded (request ids are plain).
fn url_segment(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// One HTTP/1.1 request to `127.0.0.1:port`, the connection closed after it: the status and
/// the body (at most [`RESPONSE_LIMIT`] bytes), all within [`IO_TIMEOUT`]. The connection is
/// made here, in the calling thread's network namespace (the sandbox's, which a runtime's
/// worker thread would not be in); hyper's client then speaks HTTP on it.
fn request(port: u16, method: &str, path: &str, body: Option<&Value>) -> std::io::Result<(u16, Vec<u8>)> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&address, IO_TIMEOUT)?;
    stream.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    let payload = body.map(Value::to_string);
    runtime.block_on(async {
        let exchange = exchange(stream, port, method, path, payload);
        match tokio::time::timeout(IO_TIMEOUT, exchange).await {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "opencode's server did not answer in time")),
        }
    })
}

/// The request and its whole response on a connected stream.
async fn exchange(stream: TcpStream, port: u16, method: &str, path: &str, payload: Option<String>) -> std::io::Result<(u16, Vec<u8>)> {
    use http_body_util::BodyExt as _;
    let stream = tokio::net::TcpStream::from_std(stream)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, format!("127.0.0.1:{port}"))
        .header(hyper::header::ACCEPT, "application/json");
    if payload.is_some() {
        builder = builder.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    let body = http_body_util::Full::new(bytes::Bytes::from(payload.unwrap_or_default()));
    let request = builder.body(body).map_err(std::io::Error::other)?;
    let response = sender.send_request(request).await.map_err(std::io::Error::other)?;
    let status = response.status().as_u16();
    let limited = http_body_util::Limited::new(response.into_body(), RESPONSE_LIMIT as usize);
    let collected = limited.collect().await.map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok((status, collected.to_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;

    fn request_json() -> Value {
        json!({
            "id": "que_1",
            "sessionID": "ses_1",
            "questions": [
                { "question": "Does the 10 kg limit include the box?", "header": "Box", "options": [{ "label": "Yes", "description": "the box counts" }, { "label": "No", "description": "goods only" }] },
                { "question": "", "header": "Which carrier do you use?", "options": [] }
            ],
            "tool": { "messageID": "msg_1", "callID": "call-q" }
        })
    }

    #[test]
    fn a_native_request_asks_each_question_or_its_header_and_records_the_options_without_appending_them() {
        let request = NativeRequest::from_json(&request_json()).unwrap();
        assert_eq!(request.customer_questions(), ["Does the 10 kg limit include the box?", "Which carrier do you use?"]);
        assert_eq!(request.questions[0].options[1], NativeOption { label: "No".into(), description: "goods only".into() });
        let call = request.tool_call("bridge-1".into());
        assert_eq!(call.tool, "ask_user");
        assert_eq!(call.arguments["questions"], json!(["Does the 10 kg limit include the box?", "Which carrier do you use?"]));
        assert_eq!(call.arguments["native"], request_json(), "the request as opencode sent it, options too");
        let parsed =
            specgap_engine::tools::parse_args::<specgap_engine::tools::AskUserArgs>("ask_user", &call.arguments).unwrap().asked().unwrap();
        assert_eq!((parsed.questions.len(), parsed.listed), (2, true), "one round of two question units");
        assert!(NativeRequest::from_json(&json!({ "id": "que_2" })).is_none());
        assert!(NativeRequest::from_json(&json!({ "questions": [] })).is_none());
    }

    #[test]
    fn the_engines_answers_become_one_free_text_answer_per_question() {
        let request = NativeRequest::from_json(&request_json()).unwrap();
        let pairs = vec![
            ("Does the 10 kg limit include the box?".to_string(), "Yes: the packed box is weighed.\nAt most 9.5 kg of goods.".to_string()),
            ("Which carrier do you use?".to_string(), "Only ParcelCo.".to_string()),
        ];
        let message = specgap_engine::text_channel::answer_message(&pairs);
        assert_eq!(
            request.answers(&message, false),
            vec![vec!["Yes: the packed box is weighed.\nAt most 9.5 kg of goods.".to_string()], vec!["Only ParcelCo.".to_string()]]
        );
        let proceed = specgap_engine::episode::PROCEED_REPLY;
        assert_eq!(request.answers(proceed, false), vec![vec![proceed.to_string()], vec![proceed.to_string()]], "past the round limit");
        assert_eq!(request.answers("the customer is gone", true), vec![vec![UNANSWERED.to_string()], vec![UNANSWERED.to_string()]]);
    }

    /// A scripted stand-in for `opencode serve`'s three routes that records every request
    /// (method, path, body): `GET /question` lists `pending` until it is answered, `POST
    /// /session` makes `ses_T`, `POST /question/<id>/reply` takes the answer.
    struct FakeServer {
        port: u16,
        seen: Arc<std::sync::Mutex<Vec<(String, String, String)>>>,
    }

    impl FakeServer {
        fn start(pending: Value) -> Self {
            let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            let port = listener.local_addr().unwrap().port();
            let seen: Arc<std::sync::Mutex<Vec<(String, String, String)>>> = Arc::default();
            let log = seen.clone();
            std::thread::spawn(move || {
                let mut pending = pending;
                for stream in listener.incoming() {
                    let mut stream = stream.unwrap();
                    let mut raw = Vec::new();
                    let mut buf = [0u8; 4096];
                    let (method, path, body) = loop {
                        let n = stream.read(&mut buf).unwrap();
                        raw.extend_from_slice(&buf[..n]);
                        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                        let head = String::from_utf8_lossy(&raw[..split]).to_string();
                        // Header names are case-insensitive (hyper writes them in lower case).
                        let length: usize = head
                            .lines()
                            .filter_map(|l| l.split_once(':'))
                            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
                            .map_or(0, |(_, v)| v.trim().parse().unwrap());
                        if raw.len() < split + 4 + length {
                            continue;
                        }
                        let mut words = head.split_whitespace();
                        let (method, path) = (words.next().unwrap().to_string(), words.next().unwrap().to_string());
                        break (method, path, String::from_utf8_lossy(&raw[split + 4..split + 4 + length]).to_string());
                    };
                    let reply = match (method.as_str(), path.as_str()) {
                        ("GET", "/question") => pending.to_string(),
                        ("POST", "/session") => json!({ "id": "ses_T" }).to_string(),
                        ("POST", p) if p.starts_with("/question/") => {
                            pending = json!([]);
                            "true".to_string()
                        }
                        _ => "null".to_string(),
                    };
                    log.lock().unwrap().push((method, path, body));
                    let _ = stream.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{reply}", reply.len()).as_bytes());
                }
            });
            FakeServer { port, seen }
        }

        fn requests(&self) -> Vec<(String, String, String)> {
            self.seen.lock().unwrap().clone()
        }
    }

    fn spec(home: &Path, port: u16) -> WatchSpec {
        WatchSpec {
            namespace: PathBuf::new(),
            server: QuestionServer { port, session_file: ".specgap/session", ready_stem: ".specgap/ready" },
            home: home.to_path_buf(),
            start: 1,
        }
    }

    #[test]
    fn the_watcher_makes_the_session_says_ready_hands_each_request_over_once_and_posts_the_reply() {
        let home_dir = tempfile::tempdir().unwrap();
        let server = FakeServer::start(json!([request_json()]));
        let link = Arc::new(Link::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (spec, watching, stopping) = (spec(home_dir.path(), server.port), link.clone(), stop.clone());
        let thread = std::thread::spawn(move || watch(&spec, Path::new(".specgap/ready-1"), &watching, &stopping));
        let Some(Happened::Call(call)) = link.next(std::time::Instant::now() + Duration::from_secs(20)) else { panic!("no call") };
        assert_eq!(std::fs::read_to_string(home_dir.path().join(".specgap/session")).unwrap(), "ses_T");
        assert_eq!(std::fs::read_to_string(home_dir.path().join(".specgap/ready-1")).unwrap(), "ready\n");
        assert_eq!(
            call.tool_call("bridge-1".into()).arguments["questions"],
            json!(["Does the 10 kg limit include the box?", "Which carrier do you use?"])
        );
        // Three more polls list the same pending request while the engine is answering it.
        let gets = |server: &FakeServer| server.requests().iter().filter(|(m, _, _)| m == "GET").count();
        let before = gets(&server);
        while gets(&server) < before + 3 {
            std::thread::sleep(POLL);
        }
        call.answer("- Does the 10 kg limit include the box?\n  Yes.\n- Which carrier do you use?\n  ParcelCo.".into(), false, false);
        while server.requests().iter().filter(|(m, _, _)| m == "POST").count() < 2 {
            std::thread::sleep(POLL);
        }
        stop.store(true, Ordering::SeqCst);
        thread.join().unwrap();
        assert!(link.next(std::time::Instant::now()).is_none(), "one call for one request");
        let posts: Vec<(String, String)> = server.requests().into_iter().filter(|(m, _, _)| m == "POST").map(|(_, p, b)| (p, b)).collect();
        assert_eq!(
            posts,
            vec![
                ("/session".to_string(), "{}".to_string()),
                ("/question/que_1/reply".to_string(), json!({ "answers": [["Yes."], ["ParcelCo."]] }).to_string())
            ]
        );
        assert!(server.requests().iter().all(|(m, p, _)| m == "POST" || p == "/question"), "{:?}", server.requests());
    }

    #[test]
    fn a_link_planted_at_the_session_file_fails_the_route_with_its_reason_and_makes_no_session() {
        let home_dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home_dir.path().join(".specgap")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", home_dir.path().join(".specgap/session")).unwrap();
        let server = FakeServer::start(json!([]));
        let link = Link::default();
        watch(&spec(home_dir.path(), server.port), Path::new(".specgap/ready-1"), &link, &AtomicBool::new(false));
        let ready = std::fs::read_to_string(home_dir.path().join(".specgap/ready-1")).unwrap();
        assert!(ready.starts_with("cannot read opencode's session id: "), "{ready}");
        assert!(server.requests().iter().all(|(m, _, _)| m == "GET"), "no session was made: {:?}", server.requests());
    }
}
