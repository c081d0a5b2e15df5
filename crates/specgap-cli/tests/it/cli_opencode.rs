//! `cli:opencode` through the `specgap` binary (issue 15): the real pinned `opencode-ai` build
//! (installed in the shared test cache by `specgap agents install`, which `.ci/run` runs first; with `SPECGAP_REQUIRE_EXTERNAL=1` a
//! missing installation fails the test) inside the episode's sandbox, against a scripted mock
//! of OpenAI chat completions that answers opencode's title request as a side request and
//! checks every request.

use std::ffi::OsStr;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_protocol::action::{ActionKind, FileAction};
use specgap_protocol::event::EventKind;

use crate::agents::test_cache;
use crate::support::*;

const MODEL: &str = "mock-opencode-model";
const KEY_ENV: &str = "SPECGAP_TEST_OPENCODE_KEY";
const KEY: &str = "sk-opencode-test-7d1f3a9c2e";

/// Installs `adapter` at its pinned `version` into the shared test cache with `specgap agents
/// install` once per process (its lock lets processes share it) and returns the installation's
/// directory, or `None` when the registry cannot be reached (the test is then skipped, or
/// fails under `SPECGAP_REQUIRE_EXTERNAL=1`, as in CI, where `.ci/run` installs it first).
pub(crate) fn installed(adapter: &str, version: &str) -> Option<PathBuf> {
    static INSTALLED: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    let mut done = INSTALLED.lock().unwrap();
    let result = done.entry(adapter.to_string()).or_insert_with(|| {
        let output = specgap().args(["agents", "install", adapter]).env("XDG_CACHE_HOME", test_cache()).output().unwrap();
        if output.status.success() {
            Ok(test_cache().join("specgap/agents").join(adapter).join(version))
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    });
    match result {
        Ok(dir) => Some(dir.clone()),
        Err(stderr) => {
            assert!(std::env::var_os("SPECGAP_REQUIRE_EXTERNAL").is_none_or(|v| v != "1"), "installing {adapter} failed and SPECGAP_REQUIRE_EXTERNAL=1: {stderr}");
            eprintln!("skipped: {adapter} could not be installed (no package registry?): {stderr}");
            None
        }
    }
}

fn opencode_installed() -> Option<PathBuf> {
    installed("opencode", specgap_agents::cli::opencode::DEFAULT_VERSION)
}

fn body(request: &ReceivedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap_or(Value::Null)
}

/// Whether the request offers tools (opencode's main loop) or not (its title request).
fn offers_tools(request: &ReceivedRequest) -> bool {
    body(request)["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The tokens the mock reports for the n-th main-loop answer, and for the title.
fn main_tokens(step: u64) -> Tokens {
    Tokens { input: 2000 + step, output: 30 + step, ..Tokens::default() }
}
const TITLE_TOKENS: Tokens = Tokens { input: 300, output: 7, cached: 0, cache_creation: 0, reasoning: 0 };

/// Answers opencode's main loop by its step (assistant messages so far): read the fee module,
/// write the fix, reply that it is done; a request without tools (the title) gets a title.
fn responder(fixed: String) -> impl Fn(&ReceivedRequest) -> MockReply + Send + Sync {
    move |request| {
        if !offers_tools(request) {
            return replies::openai_chat_stream(MODEL, "Late fee fix", &[], TITLE_TOKENS);
        }
        let body = body(request);
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()) as u64;
        let tokens = main_tokens(step);
        match step {
            0 => replies::openai_chat_stream(MODEL, "", &[Call::new("call-read", "read", json!({ "filePath": "/workspace/billing/fees.py" }))], tokens),
            1 => replies::openai_chat_stream(
                MODEL,
                "",
                &[Call::new("call-write", "write", json!({ "filePath": "/workspace/billing/fees.py", "content": fixed }))],
                tokens,
            ),
            _ => replies::openai_chat_stream(MODEL, "The late fee now counts every started month.", &[], tokens),
        }
    }
}

/// Every tool call of an assistant message is answered exactly once by the tool messages that
/// follow it, in the request's history.
fn assert_each_call_answered_once(messages: &[Value], what: &str) {
    for (i, message) in messages.iter().enumerate() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let id = call["id"].as_str().unwrap();
            let answers = messages[i + 1..].iter().filter(|m| m["role"] == "tool" && m["tool_call_id"] == id).count();
            assert_eq!(answers, 1, "{what}: call {id} answered {answers} times");
        }
    }
}

#[test]
fn cli_opencode_reads_fixes_and_succeeds_through_the_gateway_with_every_request_checked() {
    let Some(_) = opencode_installed() else { return };
    let package = task_fixture("req-basic");
    let fixed = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(responder(fixed.clone()));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = format!("{}/v1", mock.url());
    let args: Vec<&OsStr> = vec![
        OsStr::new("run"),
        package.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("cli:opencode"),
        OsStr::new("--model"),
        OsStr::new(MODEL),
        OsStr::new("--base-url"),
        OsStr::new(&base_url),
        OsStr::new("--api-key-env"),
        OsStr::new(KEY_ENV),
        OsStr::new("--condition"),
        OsStr::new("partial"),
        OsStr::new("--no-report"),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    assert_succeeded(specgap().args(&args).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", test_cache()).output().unwrap());

    // Every request: the chat completions path, the real key (the gateway swapped the token),
    // the one model, streamed with usage; nothing of the evaluator or the gold reaches the model
    // before the agent wrote it.
    let requests = mock.requests();
    let (main, side): (Vec<&ReceivedRequest>, Vec<&ReceivedRequest>) = requests.iter().partition(|r| offers_tools(r));
    assert_eq!((main.len(), side.len()), (3, 1), "three main-loop requests and one title request");
    let evaluator = std::fs::read_to_string(package.join("evaluator/evaluate.py")).unwrap();
    let secret_line = evaluator.lines().map(str::trim).filter(|l| l.len() > 30).max_by_key(|l| l.len()).unwrap().to_string();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!((request.method.as_str(), request.path()), ("POST", "/v1/chat/completions"), "request {i}");
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "request {i}");
        let body = body(request);
        assert_eq!(body["model"], MODEL, "request {i}");
        assert_eq!(body["stream"], true, "request {i}");
        assert_eq!(body["stream_options"]["include_usage"], true, "request {i}");
        assert!(!request.contains(&secret_line), "request {i} carries the evaluator's text");
        assert!(!request.contains("specgap-gateway"), "request {i}");
    }
    // The condition's system prompt reaches opencode's system prompt through its
    // `instructions` option (not as a preamble of the task).
    let first = body(main[0]);
    let messages = first["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are opencode"), "opencode keeps its own prompt first");
    let opening = opening_message(&out, &episodes(&out)[0].id);
    let task = messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
    assert_eq!(task.trim_end(), opening.trim_end(), "the task text is the opening message, no preamble");
    let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(tools.contains(&"read") && tools.contains(&"bash") && !tools.contains(&"webfetch"), "{tools:?}");
    for (step, request) in main.iter().enumerate() {
        let messages = body(request)["messages"].as_array().unwrap().clone();
        assert_eq!(messages.iter().filter(|m| m["role"] == "assistant").count(), step, "main request {step}");
        assert_each_call_answered_once(&messages, &format!("main request {step}"));
    }
    let read_result = body(main[1])["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string();
    assert!(read_result.contains("def late_fee"), "opencode's read tool showed the file: {read_result}");

    // The episode: the written fix was submitted automatically when opencode ended, and passed.
    let rows = episodes(&out);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("agent_exit"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (3, 2, 1), "{row:?}");
    assert_eq!(row.final_success, Some(true), "{row:?}");
    assert_eq!(row.final_score, Some(1.0), "{row:?}");

    // Usage is the mock's counts exactly: three main answers and the title.
    let store = specgap_store::Store::open(&out).unwrap();
    let usage: Vec<_> = store.usage().unwrap().into_iter().filter(|u| u.role == specgap_store::Role::Agent).collect();
    assert_eq!(usage.len(), 1, "{usage:?}");
    let expected_input = (0..3).map(|s| main_tokens(s).input).sum::<u64>() + TITLE_TOKENS.input;
    let expected_output = (0..3).map(|s| main_tokens(s).output).sum::<u64>() + TITLE_TOKENS.output;
    assert_eq!((usage[0].usage.requests, usage[0].usage.input_tokens, usage[0].usage.output_tokens), (4, expected_input, expected_output));

    // The trajectory: one side exchange, three main ones, and the actions mapped from
    // opencode's own events (its read is a read, its write a write, whatever they are called).
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    let classes: Vec<String> = events.iter().filter_map(|e| match &e.kind { EventKind::ModelExchange { class, .. } => Some(class.clone()), _ => None }).collect();
    assert_eq!(classes.iter().filter(|c| *c == "side").count(), 1, "{classes:?}");
    assert_eq!(classes.iter().filter(|c| *c == "main").count(), 3, "{classes:?}");
    let actions: Vec<FileAction> = events.iter().filter_map(|e| match &e.kind { EventKind::Actions { actions, .. } => Some(actions.clone()), _ => None }).flatten().collect();
    assert_eq!(actions, vec![FileAction::on(ActionKind::Read, "billing/fees.py", "read", true), FileAction::on(ActionKind::Write, "billing/fees.py", "write", true)]);
    let exit = events.iter().find_map(|e| match &e.kind { EventKind::AgentExit { status, how, note, .. } => Some((*status, how.clone(), note.clone())), _ => None }).unwrap();
    assert_eq!((exit.0, exit.1.as_str(), exit.2.as_str()), (Some(0), "exited", ""), "{exit:?}");
    // The key was never in the sandbox: nothing of the store holds it.
    for entry in walk(&out) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "{} holds the key", entry.display());
    }
}

/// Every file under `dir`.
pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() { stack.push(path) } else { files.push(path) }
        }
    }
    files
}

/// Answers a delivery episode by step: first a reply that asks the customer under the text
/// channel's heading (opencode then ends its run), then — in the resumed session — the plan
/// written with the write tool, then a closing reply.
fn delivery_responder(plan: String) -> impl Fn(&ReceivedRequest) -> MockReply + Send + Sync {
    move |request| {
        if !offers_tools(request) {
            return replies::openai_chat_stream(MODEL, "Packing plan", &[], TITLE_TOKENS);
        }
        let body = body(request);
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()) as u64;
        let tokens = main_tokens(step);
        match step {
            0 => replies::openai_chat_stream(MODEL, QUESTION_REPLY, &[], tokens),
            1 => replies::openai_chat_stream(MODEL, "", &[Call::new("call-plan", "write", json!({ "filePath": "/workspace/plan.json", "content": plan }))], tokens),
            _ => replies::openai_chat_stream(MODEL, "plan.json is written.", &[], tokens),
        }
    }
}

const QUESTION_REPLY: &str = "I read orders.csv.\n\n## Questions for the client\n1. Does the 10 kg limit include the box itself?\n";

#[test]
fn cli_opencode_asks_in_its_reply_under_interact_and_is_resumed_in_its_own_session_with_the_answers() {
    let Some(_) = opencode_installed() else { return };
    let package = task_fixture("delivery-basic");
    let plan = std::fs::read_to_string(package.join("solutions/gold/plan.json")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(delivery_responder(plan));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = format!("{}/v1", mock.url());
    let args: Vec<&OsStr> = vec![
        OsStr::new("run"),
        package.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("cli:opencode"),
        OsStr::new("--model"),
        OsStr::new(MODEL),
        OsStr::new("--base-url"),
        OsStr::new(&base_url),
        OsStr::new("--api-key-env"),
        OsStr::new(KEY_ENV),
        OsStr::new("--condition"),
        OsStr::new("interact"),
        OsStr::new("--no-report"),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    assert_succeeded(specgap().args(&args).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", test_cache()).output().unwrap());
    let requests = mock.requests();
    let main: Vec<&ReceivedRequest> = requests.iter().filter(|r| offers_tools(r)).collect();
    let titles = requests.len() - main.len();
    assert_eq!((main.len(), titles), (3, 1), "one title: the resume continues the same session");
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "request {i}");
        assert_eq!(body(request)["model"], MODEL, "request {i}");
    }
    let rows = episodes(&out);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("agent_exit"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (3, 1, 1), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    // The question in the reply is answered by the customer (the relay from the task's
    // clarifications), and that answer is the message the resumed session gets.
    let answers: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: specgap_protocol::event::UserMessageKind::Answer, text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let expected = "- Does the 10 kg limit include the box itself?\n  Yes: the carrier weighs the packed box, and an empty box with padding is 0.5 kg, so at most 9.5 kg of goods go in a box.";
    assert_eq!(answers, vec![expected.to_string()]);
    let exits = events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count();
    assert_eq!(exits, 2, "opencode ended its run after asking, and again after writing the plan");
    // The resumed requests carry the first run's history (the same session), then the answer.
    for (step, request) in main.iter().enumerate().skip(1) {
        let messages = body(request)["messages"].as_array().unwrap().clone();
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(&roles[..4], &["system", "user", "assistant", "user"], "main request {step}");
        assert_eq!(messages[2]["content"], QUESTION_REPLY);
        assert_eq!(messages[3]["content"], expected);
        assert_each_call_answered_once(&messages, &format!("main request {step}"));
    }
    let actions: Vec<FileAction> = events.iter().filter_map(|e| match &e.kind { EventKind::Actions { actions, .. } => Some(actions.clone()), _ => None }).flatten().collect();
    assert_eq!(actions, vec![FileAction::on(ActionKind::Write, "plan.json", "write", true)]);
    let store = specgap_store::Store::open(&out).unwrap();
    let usage: Vec<_> = store.usage().unwrap().into_iter().filter(|u| u.role == specgap_store::Role::Agent).collect();
    let expected_input = (0..3).map(|s| main_tokens(s).input).sum::<u64>() + TITLE_TOKENS.input;
    let expected_output = (0..3).map(|s| main_tokens(s).output).sum::<u64>() + TITLE_TOKENS.output;
    assert_eq!(usage.iter().map(|u| (u.usage.requests, u.usage.input_tokens, u.usage.output_tokens)).collect::<Vec<_>>(), vec![(4, expected_input, expected_output)]);
}

/// Answers by step: read the module, ask the owner through the MCP server, write the literal
/// fix, submit it through MCP (its result carries the feedback), write the gold fix, submit.
fn mcp_responder(literal: String, gold: String) -> impl Fn(&ReceivedRequest) -> MockReply + Send + Sync {
    move |request| {
        if !offers_tools(request) {
            return replies::openai_chat_stream(MODEL, "Late fee fix", &[], TITLE_TOKENS);
        }
        let step = body(request)["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()) as u64;
        let tokens = main_tokens(step);
        let call = |id: &str, tool: &str, arguments: Value| replies::openai_chat_stream(MODEL, "", &[Call::new(id, tool, arguments)], tokens);
        match step {
            0 => call("c-read", "read", json!({ "filePath": "/workspace/billing/fees.py" })),
            1 => call("c-ask", "specgap_ask_user", json!({ "question": OWNER_QUESTION })),
            2 => call("c-write-1", "write", json!({ "filePath": "/workspace/billing/fees.py", "content": literal })),
            3 => call("c-submit-1", "specgap_submit", json!({ "summary": "started months count" })),
            4 => call("c-write-2", "write", json!({ "filePath": "/workspace/billing/fees.py", "content": gold })),
            5 => call("c-submit-2", "specgap_submit", json!({ "summary": "disputed invoices and the cap too" })),
            _ => replies::openai_chat_stream(MODEL, "Done.", &[], tokens),
        }
    }
}

const OWNER_QUESTION: &str = "Should a disputed invoice be charged a late fee?";

#[test]
fn cli_opencode_asks_the_owner_and_submits_through_mcp_and_reads_the_feedback_in_submits_result() {
    let Some(_) = opencode_installed() else { return };
    let package = task_fixture("req-basic");
    let literal = std::fs::read_to_string(package.join("solutions/literal/billing/fees.py")).unwrap();
    let gold = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(mcp_responder(literal, gold));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = format!("{}/v1", mock.url());
    let args: Vec<&OsStr> = vec![
        OsStr::new("run"), package.as_os_str(), OsStr::new("--agent"), OsStr::new("cli:opencode"), OsStr::new("--model"), OsStr::new(MODEL),
        OsStr::new("--base-url"), OsStr::new(&base_url), OsStr::new("--api-key-env"), OsStr::new(KEY_ENV), OsStr::new("--condition"), OsStr::new("partial"),
        OsStr::new("--no-report"), OsStr::new("--out"), out.as_os_str(),
    ];
    assert_succeeded(specgap().args(&args).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", test_cache()).output().unwrap());
    let requests = mock.requests();
    let main: Vec<&ReceivedRequest> = requests.iter().filter(|r| offers_tools(r)).collect();
    let rows = episodes(&out);
    let row = &rows[0];
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("accepted"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (6, 6, 2), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    assert_eq!(main.len(), 6, "the episode ends at the accepted submission: no seventh turn");
    let tools: Vec<String> = body(main[0])["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect();
    assert!(tools.contains(&"specgap_ask_user".to_string()) && tools.contains(&"specgap_submit".to_string()), "the bridge's MCP tools are offered: {tools:?}");
    // The harness calls arrived through the bridge, in order.
    let calls: Vec<(String, Value)> = events.iter().filter_map(|e| match &e.kind { EventKind::BridgeCall { call, .. } => Some((call.tool.clone(), call.arguments.clone())), _ => None }).collect();
    assert_eq!(
        calls,
        vec![
            ("ask_user".to_string(), json!({ "question": OWNER_QUESTION })),
            ("submit".to_string(), json!({ "summary": "started months count" })),
            ("submit".to_string(), json!({ "summary": "disputed invoices and the cap too" })),
        ]
    );
    let result_of = |call_id: &str| -> String {
        events.iter().find_map(|e| match &e.kind { EventKind::ToolResult { call_id: id, output, .. } if id == call_id => Some(output.clone()), _ => None }).unwrap()
    };
    let tool_message = |request: &ReceivedRequest, call_id: &str| -> String {
        body(request)["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id).unwrap()["content"].as_str().unwrap().to_string()
    };
    // The owner's answer reached opencode as its MCP tool's result.
    let answer = result_of("bridge-1");
    assert!(answer.starts_with("Dana believes the only problem"), "{answer}");
    assert_eq!(tool_message(main[2], "c-ask"), answer);
    // The feedback of the returned submission is part of submit's result.
    let feedback = events.iter().find_map(|e| match &e.kind { EventKind::UserMessage { kind: specgap_protocol::event::UserMessageKind::Feedback, text, .. } => Some(text.clone()), _ => None }).unwrap();
    assert_eq!(tool_message(main[4], "c-submit-1"), format!("The delivery was returned; the owner's message follows. 3 submissions left.\n\n{feedback}"));
    for (step, request) in main.iter().enumerate() {
        assert_each_call_answered_once(body(request)["messages"].as_array().unwrap(), &format!("main request {step}"));
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    }
    let store = specgap_store::Store::open(&out).unwrap();
    let usage: Vec<_> = store.usage().unwrap().into_iter().filter(|u| u.role == specgap_store::Role::Agent).collect();
    let expected_input = (0..6).map(|s| main_tokens(s).input).sum::<u64>() + TITLE_TOKENS.input;
    let expected_output = (0..6).map(|s| main_tokens(s).output).sum::<u64>() + TITLE_TOKENS.output;
    assert_eq!(usage.iter().map(|u| (u.usage.requests, u.usage.input_tokens, u.usage.output_tokens)).collect::<Vec<_>>(), vec![(7, expected_input, expected_output)]);
}
