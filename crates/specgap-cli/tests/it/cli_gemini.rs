//! `cli:gemini-cli` through the `specgap` binary (issue 15): the real pinned
//! `@google/gemini-cli` inside the episode's sandbox, against a scripted mock of the Gemini API
//! (streamed generateContent, function calls without ids as the real API sends them) through
//! the gateway's pass-through, every request checked.

use std::ffi::OsStr;
use std::path::PathBuf;

use serde_json::{Value, json};
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_protocol::action::{ActionKind, FileAction};
use specgap_protocol::event::EventKind;

use crate::agents::test_cache;
use crate::cli_opencode::{installed, walk};
use crate::support::*;

const MODEL: &str = "gemini-mock-pro";
const KEY_ENV: &str = "SPECGAP_TEST_GEMINI_KEY";
const KEY: &str = "gm-test-key-41c9d07e3b";

fn gemini_installed() -> Option<PathBuf> {
    installed("gemini-cli", specgap_agents::cli::gemini_cli::DEFAULT_VERSION)
}

fn body(request: &ReceivedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap_or(Value::Null)
}

fn offers_tools(request: &ReceivedRequest) -> bool {
    body(request)["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The model's turns so far in a request's history.
fn step_of(request: &ReceivedRequest) -> u64 {
    body(request)["contents"].as_array().map_or(0, |c| c.iter().filter(|c| c["role"] == "model").count()) as u64
}

fn tokens(step: u64) -> Tokens {
    Tokens { input: 3000 + step, output: 40 + step, ..Tokens::default() }
}

/// Every functionCall of the history is followed by exactly one functionResponse of its id.
fn assert_each_call_answered_once(contents: &[Value], what: &str) {
    for (i, content) in contents.iter().enumerate() {
        for part in content["parts"].as_array().into_iter().flatten() {
            let Some(call) = part.get("functionCall") else { continue };
            let id = call["id"].as_str().unwrap();
            let answers = contents[i + 1..]
                .iter()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .filter(|p| p["functionResponse"]["id"] == id)
                .count();
            assert_eq!(answers, 1, "{what}: call {id} answered {answers} times");
        }
    }
}

fn run_args<'a>(package: &'a std::path::Path, base_url: &'a str, condition: &'a str, out: &'a std::path::Path) -> Vec<&'a OsStr> {
    vec![
        OsStr::new("run"),
        package.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("cli:gemini-cli"),
        OsStr::new("--model"),
        OsStr::new(MODEL),
        OsStr::new("--base-url"),
        OsStr::new(base_url),
        OsStr::new("--api-key-env"),
        OsStr::new(KEY_ENV),
        OsStr::new("--condition"),
        OsStr::new(condition),
        OsStr::new("--no-report"),
        OsStr::new("--out"),
        out.as_os_str(),
    ]
}

#[test]
fn cli_gemini_cli_reads_fixes_and_succeeds_through_the_gemini_pass_through() {
    let Some(_) = gemini_installed() else { return };
    let package = task_fixture("req-basic");
    let fixed = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(move |request: &ReceivedRequest| -> MockReply {
        let step = step_of(request);
        match step {
            0 => replies::gemini_stream("", &[Call::new("", "read_file", json!({ "file_path": "billing/fees.py" }))], tokens(step)),
            1 => replies::gemini_stream("", &[Call::new("", "write_file", json!({ "file_path": "/workspace/billing/fees.py", "content": fixed }))], tokens(step)),
            _ => replies::gemini_stream("The fee counts every started month now.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = mock.url();
    assert_succeeded(specgap().args(run_args(&package, &base_url, "partial", &out)).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", test_cache()).output().unwrap());

    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "three generating requests, no side request");
    let evaluator = std::fs::read_to_string(package.join("evaluator/evaluate.py")).unwrap();
    let secret_line = evaluator.lines().map(str::trim).filter(|l| l.len() > 30).max_by_key(|l| l.len()).unwrap().to_string();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path(), format!("/v1beta/models/{MODEL}:streamGenerateContent"), "request {i}");
        assert_eq!(request.query(), "alt=sse", "request {i}: the token's ?key= never reaches the upstream");
        assert_eq!(request.header("x-goog-api-key"), Some(KEY), "request {i}: the gateway put the real key");
        assert!(offers_tools(request), "request {i}");
        assert!(!request.contains(&secret_line), "request {i} carries the evaluator's text");
        let contents = body(request)["contents"].as_array().unwrap().clone();
        assert_eq!(step_of(request), i as u64);
        assert_each_call_answered_once(&contents, &format!("request {i}"));
    }
    // The condition's system prompt is in its system instruction (through ~/.gemini/GEMINI.md).
    let first = body(&requests[0]);
    let system = first["systemInstruction"].to_string();
    let opening = opening_message(&out, &episodes(&out)[0].id);
    let rows = episodes(&out);
    let row = &rows[0];
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    let prompt = events.iter().find_map(|e| match &e.kind { EventKind::EpisodeStart { system_prompt, .. } => Some(system_prompt.clone()), _ => None }).unwrap();
    let prompt_line = prompt.lines().find(|l| l.len() > 40).unwrap();
    assert!(system.contains(&serde_json::to_string(prompt_line).unwrap().trim_matches('"').to_string()), "the condition prompt is in the system instruction");
    let user_text = first["contents"].as_array().unwrap().iter().flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default()).filter_map(|p| p["text"].as_str().map(str::to_string)).collect::<Vec<_>>().join("\n");
    assert!(user_text.contains(opening.trim_end()), "the opening message is the prompt");
    let read_result = requests[1].body.clone();
    assert!(String::from_utf8_lossy(&read_result).contains("def late_fee"), "its read_file showed the file");

    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("agent_exit"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (3, 2, 1), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    // The calls had no id on the wire: the harness named them and matched their results.
    let results: Vec<(String, String)> = events.iter().filter_map(|e| match &e.kind { EventKind::ToolResult { call_id, tool, .. } => Some((call_id.clone(), tool.clone())), _ => None }).collect();
    assert_eq!(results, vec![("r0-0".to_string(), "read_file".to_string()), ("r1-0".to_string(), "write_file".to_string())]);
    let actions: Vec<FileAction> = events.iter().filter_map(|e| match &e.kind { EventKind::Actions { actions, .. } => Some(actions.clone()), _ => None }).flatten().collect();
    assert_eq!(actions, vec![FileAction::on(ActionKind::Read, "billing/fees.py", "read_file", true), FileAction::on(ActionKind::Write, "billing/fees.py", "write_file", true)]);
    let store = specgap_store::Store::open(&out).unwrap();
    let usage: Vec<_> = store.usage().unwrap().into_iter().filter(|u| u.role == specgap_store::Role::Agent).collect();
    let (input, output) = ((0..3).map(|s| tokens(s).input).sum::<u64>(), (0..3).map(|s| tokens(s).output).sum::<u64>());
    assert_eq!(usage.iter().map(|u| (u.usage.requests, u.usage.input_tokens, u.usage.output_tokens)).collect::<Vec<_>>(), vec![(3, input, output)]);
    for entry in walk(&out) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "{} holds the key", entry.display());
    }
}

const QUESTION_REPLY: &str = "I read the orders.\n\n## Questions for the client\n1. Does the 10 kg limit include the box itself?";

#[test]
fn cli_gemini_cli_asks_in_its_reply_under_interact_and_resumes_its_latest_session_with_the_answers() {
    let Some(_) = gemini_installed() else { return };
    let package = task_fixture("delivery-basic");
    let plan = std::fs::read_to_string(package.join("solutions/gold/plan.json")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(move |request: &ReceivedRequest| -> MockReply {
        let step = step_of(request);
        match step {
            0 => replies::gemini_stream(QUESTION_REPLY, &[], tokens(step)),
            1 => replies::gemini_stream("", &[Call::new("", "write_file", json!({ "file_path": "plan.json", "content": plan }))], tokens(step)),
            _ => replies::gemini_stream("plan.json is written.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = mock.url();
    assert_succeeded(specgap().args(run_args(&package, &base_url, "interact", &out)).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", test_cache()).output().unwrap());
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let rows = episodes(&out);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("agent_exit"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (3, 1, 1), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    let answer = "- Does the 10 kg limit include the box itself?\n  Yes: the carrier weighs the packed box, and an empty box with padding is 0.5 kg, so at most 9.5 kg of goods go in a box.";
    let answers: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: specgap_protocol::event::UserMessageKind::Answer, text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answers, vec![answer.to_string()]);
    assert_eq!(events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count(), 2);
    // The resumed session holds the first run's reply, then the answer as the user's turn.
    for request in &requests[1..] {
        let contents = body(request)["contents"].as_array().unwrap().clone();
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(contents[1]["parts"][0]["text"], QUESTION_REPLY);
        assert_eq!(contents[2]["role"], "user");
        assert_eq!(contents[2]["parts"][0]["text"], answer);
    }
    let actions: Vec<FileAction> = events.iter().filter_map(|e| match &e.kind { EventKind::Actions { actions, .. } => Some(actions.clone()), _ => None }).flatten().collect();
    assert_eq!(actions, vec![FileAction::on(ActionKind::Write, "plan.json", "write_file", true)]);
}

/// gemini-cli lists the bridge's MCP tools as `mcp_specgap_<tool>` but leaves out the MCP
/// server's `ask_user` (the name of a tool of its own, which it withholds in headless mode), so
/// here it asks the owner with the `ask_user` command through its shell tool and submits through
/// MCP. The command exists under `--ask-channel mcp` only (gemini-cli's default is `text`).
#[test]
fn cli_gemini_cli_asks_the_owner_with_the_command_submits_through_mcp_and_reads_the_feedback_in_submits_result() {
    let Some(_) = gemini_installed() else { return };
    let package = task_fixture("req-basic");
    let literal = std::fs::read_to_string(package.join("solutions/literal/billing/fees.py")).unwrap();
    let gold = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(move |request: &ReceivedRequest| -> MockReply {
        let step = step_of(request);
        let call = |tool: &str, arguments: Value| replies::gemini_stream("", &[Call::new("", tool, arguments)], tokens(step));
        match step {
            0 => call("run_shell_command", json!({ "command": format!("ask_user '{OWNER_QUESTION}'") })),
            1 => call("write_file", json!({ "file_path": "billing/fees.py", "content": literal })),
            2 => call(SUBMIT_TOOL, json!({ "summary": "started months count" })),
            3 => call("write_file", json!({ "file_path": "billing/fees.py", "content": gold })),
            4 => call(SUBMIT_TOOL, json!({ "summary": "disputed invoices and the cap too" })),
            _ => replies::gemini_stream("Done.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = mock.url();
    let mut args = run_args(&package, &base_url, "partial", &out);
    args.extend([OsStr::new("--ask-channel"), OsStr::new("mcp")]);
    assert_succeeded(specgap().args(args).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", test_cache()).output().unwrap());
    let requests = mock.requests();
    let tools: Vec<String> = body(&requests[0])["tools"].as_array().unwrap().iter().flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default()).filter_map(|f| f["name"].as_str().map(str::to_string)).collect();
    assert!(tools.contains(&SUBMIT_TOOL.to_string()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.contains("ask_user")), "gemini-cli withholds an MCP tool named like its own ask_user: {tools:?}");
    assert_eq!(requests.len(), 5, "the episode ends at the accepted submission");
    let rows = episodes(&out);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("accepted"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (5, 5, 2), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    let calls: Vec<(String, Value)> = events.iter().filter_map(|e| match &e.kind { EventKind::BridgeCall { call, .. } => Some((call.tool.clone(), call.arguments.clone())), _ => None }).collect();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0].0, "ask_user");
    assert_eq!((calls[1].0.as_str(), &calls[1].1), ("submit", &json!({ "summary": "started months count" })));
    assert_eq!((calls[2].0.as_str(), &calls[2].1), ("submit", &json!({ "summary": "disputed invoices and the cap too" })));
    let answer = events.iter().find_map(|e| match &e.kind { EventKind::ToolResult { call_id, output, .. } if call_id == "bridge-1" => Some(output.clone()), _ => None }).unwrap();
    assert!(answer.starts_with("Dana believes the only problem"), "{answer}");
    let feedback = events.iter().find_map(|e| match &e.kind { EventKind::UserMessage { kind: specgap_protocol::event::UserMessageKind::Feedback, text, .. } => Some(text.clone()), _ => None }).unwrap();
    // What gemini-cli sent back: the owner's answer in its shell tool's output, the feedback in
    // the MCP submit's result; every call answered once.
    let response_of = |request: &ReceivedRequest, tool: &str| -> String {
        let contents = body(request)["contents"].as_array().unwrap().clone();
        contents.iter().flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default()).filter(|p| p["functionResponse"]["name"] == tool).map(|p| p["functionResponse"]["response"].to_string()).next_back().unwrap()
    };
    assert!(response_of(&requests[1], "run_shell_command").contains(&answer[..40]), "{}", response_of(&requests[1], "run_shell_command"));
    assert!(response_of(&requests[3], SUBMIT_TOOL).contains(&serde_json::to_string(&feedback).unwrap().trim_matches('"').to_string()), "{}", response_of(&requests[3], SUBMIT_TOOL));
    for (i, request) in requests.iter().enumerate() {
        assert_each_call_answered_once(body(request)["contents"].as_array().unwrap(), &format!("request {i}"));
    }
    let results: Vec<String> = events.iter().filter_map(|e| match &e.kind { EventKind::ToolResult { call_id, .. } if call_id.starts_with('r') => Some(call_id.clone()), _ => None }).collect();
    assert_eq!(results, vec!["r0-0", "r1-0", "r2-0", "r3-0"], "each unnamed call got its result, the last one's at the episode's end or never");
}

const OWNER_QUESTION: &str = "Should a disputed invoice be charged a late fee?";
const SUBMIT_TOOL: &str = "mcp_specgap_submit";
