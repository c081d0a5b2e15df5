//! A scripted model server for users (`specgap mock-model`, issue 29 item 7; feature `mock`),
//! built on the test mock ([`crate::mock::MockUpstream`]): it answers each *generation* request
//! with the next turn of a [`MockModelScript`], in the protocol the request arrived in (OpenAI
//! chat completions, OpenAI Responses, Anthropic Messages, Gemini; streamed when the request
//! asks for a stream), so any adapter can be dry-run end to end without a model.
//!
//! Token counting (`/messages/count_tokens`, `/responses/input_tokens`, `:countTokens`) and
//! model listings are answered without using a turn. A turn may name `expect`ed substrings of
//! the request; a request missing one is answered with a 400 naming the turn and the text (not
//! retried by SDKs, so a dry run fails at the step that went wrong). Every request is reported
//! as a [`ServedRequest`].
//!
//! The script format is versioned ([`MOCK_MODEL_FORMAT`]); docs/mock-model.md documents it and
//! what each adapter's requests look like.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::mock::replies::{self, Call, Tokens};
use crate::mock::{MockReply, MockUpstream, ReceivedRequest, SCRIPT_EXHAUSTED_STATUS};

/// The script format this server reads (`format = 1` in the script).
pub const MOCK_MODEL_FORMAT: u32 = 1;

/// A mock model's script: the model name it reports and the turns it answers with, in order.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MockModelScript {
    /// Script format version; must be [`MOCK_MODEL_FORMAT`].
    pub format: u32,
    /// The model name put in answers (default `"mock-model"`).
    #[serde(default = "default_model")]
    pub model: String,
    /// The answers to generation requests, one per request, in order (`[[turn]]` in TOML).
    #[serde(rename = "turn", default)]
    pub turns: Vec<ScriptedTurn>,
}

fn default_model() -> String {
    "mock-model".into()
}

/// One answer: text, tool calls, reported token counts; or an HTTP error (`status`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    /// The answer's text (may be empty when it calls tools).
    #[serde(default)]
    pub text: String,
    /// Tool calls, in order (`[[turn.call]]` in TOML).
    #[serde(rename = "call", default)]
    pub calls: Vec<ScriptedCall>,
    /// Token counts the answer reports (default: 10 input, 5 output).
    #[serde(default)]
    pub tokens: ScriptedTokens,
    /// Substrings the request (target, headers or body) must contain; a request missing one
    /// gets a 400 instead of this turn.
    #[serde(default)]
    pub expect: Vec<String>,
    /// Answer with this HTTP error status instead (e.g. 500 to exercise retries); the turn's
    /// text, if any, becomes the error message.
    #[serde(default)]
    pub status: Option<u16>,
}

/// A tool call in a turn.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool's name as the CLI offers it (e.g. `Bash` for Claude Code, `exec_command` for
    /// Codex, `mcp__specgap__submit` for the harness's MCP tools under Claude Code).
    pub name: String,
    /// The call's arguments (a JSON object; a TOML table).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call's id (default `call_<turn>_<index>`, both from 1).
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's namespace, for the Responses API (Codex CLI shows the harness's MCP tools
    /// as the namespace `mcp__specgap`: `name = "submit"`, `namespace = "mcp__specgap"`).
    #[serde(default)]
    pub namespace: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Token counts an answer reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScriptedTokens {
    /// Prompt tokens (all of them).
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Cache reads, part of `input`.
    pub cached: u64,
}

impl Default for ScriptedTokens {
    fn default() -> Self {
        ScriptedTokens { input: 10, output: 5, cached: 0 }
    }
}

/// What is wrong with a script (found before the server starts).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MockScriptError {
    /// `format` is not [`MOCK_MODEL_FORMAT`].
    #[error("format {found} is not one this server reads (format = {MOCK_MODEL_FORMAT})")]
    Format {
        /// The script's value.
        found: u32,
    },
    /// The script has no turn.
    #[error("the script has no [[turn]]")]
    NoTurns,
    /// A call's arguments are not an object.
    #[error("turn {turn}, call {call} ({name}): arguments must be a table (a JSON object)")]
    Arguments {
        /// Turn number, from 1.
        turn: usize,
        /// Call number within the turn, from 1.
        call: usize,
        /// The tool's name.
        name: String,
    },
    /// An error turn that also has calls, or a status that is not an error.
    #[error("turn {turn}: status {status} must be an HTTP error (400–599) and the turn must have no calls")]
    Status {
        /// Turn number, from 1.
        turn: usize,
        /// The status given.
        status: u16,
    },
}

impl MockModelScript {
    /// Checks what serde cannot: the format version, at least one turn, object arguments,
    /// error turns.
    ///
    /// # Errors
    /// The first problem found, naming the turn and call (both from 1).
    pub fn validate(&self) -> Result<(), MockScriptError> {
        if self.format != MOCK_MODEL_FORMAT {
            return Err(MockScriptError::Format { found: self.format });
        }
        if self.turns.is_empty() {
            return Err(MockScriptError::NoTurns);
        }
        for (t, turn) in self.turns.iter().enumerate() {
            if let Some(status) = turn.status
                && (!(400..=599).contains(&status) || !turn.calls.is_empty())
            {
                return Err(MockScriptError::Status { turn: t + 1, status });
            }
            for (c, call) in turn.calls.iter().enumerate() {
                if !call.arguments.is_object() {
                    return Err(MockScriptError::Arguments { turn: t + 1, call: c + 1, name: call.name.clone() });
                }
            }
        }
        Ok(())
    }
}

/// The wire protocol of a generation request, from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    /// `…/chat/completions`.
    OpenaiChat,
    /// `…/responses`.
    Responses,
    /// `…/messages`.
    Anthropic,
    /// `…:generateContent` / `…:streamGenerateContent`.
    Gemini,
}

/// What a request was, as the server classified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RequestKind {
    /// A generation: answered with a turn.
    Generation {
        /// Its protocol.
        wire: Wire,
        /// Whether it asked for a stream.
        streamed: bool,
    },
    /// Token counting: answered with a count, no turn used.
    CountTokens,
    /// A model listing: answered with the script's model, no turn used.
    Models,
    /// Anything else: 404.
    Unknown,
}

/// How the server answered one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Answer {
    /// With turn `turn` (from 1).
    Turn {
        /// Turn number, from 1.
        turn: usize,
    },
    /// With a 400: turn `turn` expected `missing` in the request.
    Unmet {
        /// Turn number, from 1.
        turn: usize,
        /// The expected text the request lacked.
        missing: String,
    },
    /// With [`SCRIPT_EXHAUSTED_STATUS`]: every turn was used.
    Exhausted,
    /// Without a turn (token counts, listings, 404s).
    Local,
}

/// One request the server received and how it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServedRequest {
    /// Arrival number, from 1.
    pub number: usize,
    /// Method.
    pub method: String,
    /// Path and query.
    pub target: String,
    /// What it was.
    pub request: RequestKind,
    /// How it was answered.
    pub answer: Answer,
}

/// A callback told of every request as it is answered.
pub type OnRequest = Box<dyn Fn(&ServedRequest) + Send + Sync>;

struct Progress {
    next_turn: usize,
    served: Vec<ServedRequest>,
}

/// A running scripted model server; stops when dropped.
pub struct MockModel {
    upstream: MockUpstream,
    progress: Arc<Mutex<Progress>>,
    turns: usize,
}

impl std::fmt::Debug for MockModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModel").field("url", &self.upstream.url()).field("turns", &self.turns).finish_non_exhaustive()
    }
}

impl MockModel {
    /// Starts serving `script` on `addr` (port 0: any free port), calling `on_request` for
    /// every request.
    ///
    /// # Errors
    /// An invalid script ([`MockScriptError`], as `InvalidInput`) or a listener that cannot
    /// be bound.
    pub fn start(script: MockModelScript, addr: SocketAddr, on_request: Option<OnRequest>) -> io::Result<Self> {
        script.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let upstream = MockUpstream::start_on(addr, [])?;
        let progress = Arc::new(Mutex::new(Progress { next_turn: 0, served: Vec::new() }));
        let turns = script.turns.len();
        let state = progress.clone();
        upstream.set_responder(move |request| {
            let mut progress = state.lock().unwrap_or_else(PoisonError::into_inner);
            let (served, reply) = answer(&script, &mut progress, request);
            if let Some(tell) = &on_request {
                tell(&served);
            }
            progress.served.push(served);
            reply
        });
        Ok(MockModel { upstream, progress, turns })
    }

    /// The server's origin, `http://<addr>`.
    pub fn url(&self) -> String {
        self.upstream.url()
    }

    /// Every request answered so far.
    pub fn served(&self) -> Vec<ServedRequest> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).served.clone()
    }

    /// Turns used so far (of [`MockModel::turn_count`]).
    pub fn turns_used(&self) -> usize {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).next_turn
    }

    /// The script's number of turns.
    pub fn turn_count(&self) -> usize {
        self.turns
    }

    /// Waits until `n` replies have been written to their clients (or `limit` passed);
    /// returns how many were.
    pub fn wait_for_replies(&self, n: usize, limit: std::time::Duration) -> usize {
        self.upstream.wait_for_replies(n, limit)
    }
}

/// Classifies a request by its path (and body, for streaming).
pub fn classify(request: &ReceivedRequest) -> RequestKind {
    let path = request.path();
    let streamed_body = || serde_json::from_slice::<Value>(&request.body).ok().is_some_and(|b| b["stream"] == Value::Bool(true));
    if request.method == "GET" && (path.ends_with("/models") || path.contains("/models/")) {
        return RequestKind::Models;
    }
    if path.ends_with("/count_tokens") || path.ends_with("/input_tokens") || path.ends_with(":countTokens") {
        return RequestKind::CountTokens;
    }
    let generation = |wire, streamed| RequestKind::Generation { wire, streamed };
    if request.method != "POST" {
        RequestKind::Unknown
    } else if path.ends_with("/chat/completions") {
        generation(Wire::OpenaiChat, streamed_body())
    } else if path.ends_with("/responses") {
        generation(Wire::Responses, streamed_body())
    } else if path.ends_with("/messages") {
        generation(Wire::Anthropic, streamed_body())
    } else if path.ends_with(":streamGenerateContent") {
        generation(Wire::Gemini, true)
    } else if path.ends_with(":generateContent") {
        generation(Wire::Gemini, false)
    } else {
        RequestKind::Unknown
    }
}

fn answer(script: &MockModelScript, progress: &mut Progress, request: &ReceivedRequest) -> (ServedRequest, MockReply) {
    let kind = classify(request);
    let (answer, reply) = match kind {
        RequestKind::Generation { wire, streamed } => generation(script, progress, request, wire, streamed),
        RequestKind::CountTokens => (Answer::Local, count_tokens(request)),
        RequestKind::Models => (Answer::Local, models(script, request)),
        RequestKind::Unknown => (Answer::Local, error_reply(404, "mock-model: this path is not a model endpoint it serves")),
    };
    let served = ServedRequest {
        number: progress.served.len() + 1,
        method: request.method.clone(),
        target: request.target.clone(),
        request: kind,
        answer,
    };
    (served, reply)
}

fn generation(
    script: &MockModelScript,
    progress: &mut Progress,
    request: &ReceivedRequest,
    wire: Wire,
    streamed: bool,
) -> (Answer, MockReply) {
    let Some(turn) = script.turns.get(progress.next_turn) else {
        let message = format!("mock-model: all {} turns of the script were used", script.turns.len());
        return (Answer::Exhausted, error_reply(SCRIPT_EXHAUSTED_STATUS, &message));
    };
    let number = progress.next_turn + 1;
    if let Some(missing) = turn.expect.iter().find(|text| !request.contains(text)) {
        let message = format!("mock-model: turn {number} expected the request to contain {missing:?}");
        return (Answer::Unmet { turn: number, missing: missing.clone() }, error_reply(400, &message));
    }
    progress.next_turn += 1;
    let reply = match turn.status {
        Some(status) => error_reply(status, if turn.text.is_empty() { "mock-model: a scripted error" } else { &turn.text }),
        None => turn_reply(&script.model, turn, number, wire, streamed),
    };
    (Answer::Turn { turn: number }, reply)
}

fn turn_reply(model: &str, turn: &ScriptedTurn, number: usize, wire: Wire, streamed: bool) -> MockReply {
    let calls: Vec<Call> = turn
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = c.id.clone().unwrap_or_else(|| format!("call_{number}_{}", i + 1));
            let call = Call::new(&id, &c.name, c.arguments.clone());
            match &c.namespace {
                Some(namespace) => call.in_namespace(namespace),
                None => call,
            }
        })
        .collect();
    let tokens = Tokens { input: turn.tokens.input, output: turn.tokens.output, cached: turn.tokens.cached, ..Tokens::default() };
    let text = turn.text.as_str();
    match (wire, streamed) {
        (Wire::OpenaiChat, false) => replies::openai_chat(model, text, &calls, tokens),
        (Wire::OpenaiChat, true) => replies::openai_chat_stream(model, text, &calls, tokens),
        (Wire::Responses, false) => replies::responses(model, text, &calls, tokens),
        (Wire::Responses, true) => replies::responses_stream(model, text, &calls, tokens),
        (Wire::Anthropic, false) => replies::anthropic(model, text, &calls, tokens),
        (Wire::Anthropic, true) => replies::anthropic_stream(model, text, &calls, tokens),
        (Wire::Gemini, false) => replies::gemini(text, &calls, tokens),
        (Wire::Gemini, true) => replies::gemini_stream(text, &calls, tokens),
    }
}

/// A token count: a quarter of the body's bytes, at least 1 (a stand-in; nothing is tokenized).
fn count_tokens(request: &ReceivedRequest) -> MockReply {
    let count = (request.body.len() / 4).max(1);
    let body = if request.path().ends_with(":countTokens") {
        serde_json::json!({ "totalTokens": count })
    } else {
        serde_json::json!({ "input_tokens": count })
    };
    MockReply::json(200, body.to_string())
}

fn models(script: &MockModelScript, request: &ReceivedRequest) -> MockReply {
    let body = if request.path().contains("/v1beta/") {
        serde_json::json!({ "models": [{ "name": format!("models/{}", script.model) }] })
    } else {
        serde_json::json!({ "object": "list", "data": [{ "id": script.model, "object": "model", "created": 0, "owned_by": "specgap" }] })
    };
    MockReply::json(200, body.to_string())
}

/// An error body every protocol's SDK can read a message from (`error.message`).
fn error_reply(status: u16, message: &str) -> MockReply {
    let body = serde_json::json!({ "type": "error", "error": { "type": "mock_model_error", "message": message, "code": status } });
    MockReply::json(status, body.to_string())
}
