//! `cli:gemini-cli` through the `specgap` binary (issue 15): the real pinned
//! `@google/gemini-cli` inside the episode's sandbox, against a scripted mock of the Gemini API
//! (streamed generateContent, function calls without ids as the real API sends them) through
//! the gateway's pass-through, every request checked.

use std::path::PathBuf;

use serde_json::{Value, json};
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_protocol::action::{ActionKind, FileAction};
use specgap_protocol::event::{EventKind, UserMessageKind};

use crate::cli_support::*;
use crate::support::*;

const MODEL: &str = "gemini-mock-pro";
const KEY: &str = "gm-test-key-41c9d07e3b";
/// gemini-cli as the tests run it.
const GEMINI: CliUnderTest = CliUnderTest { agent: "cli:gemini-cli", model: MODEL, key_env: "SPECGAP_TEST_GEMINI_KEY", key: KEY };

fn gemini_installed() -> Option<PathBuf> {
    installed("gemini-cli", specgap_agents::cli::gemini_cli::DEFAULT_VERSION)
}

/// The model's turns so far in a request's history.
fn step_of(request: &ReceivedRequest) -> u64 {
    body(request)["contents"].as_array().map_or(0, |c| c.iter().filter(|c| c["role"] == "model").count()) as u64
}

fn tokens(step: u64) -> Tokens {
    Tokens { input: 3000 + step, output: 40 + step, ..Tokens::default() }
}

/// The usage of `answers` answers (steps 0..answers) as the store sums it: (requests, input
/// tokens, output tokens).
fn usage_of_answers(answers: u64) -> (u64, u64, u64) {
    (answers, (0..answers).map(|s| tokens(s).input).sum(), (0..answers).map(|s| tokens(s).output).sum())
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
            1 => replies::gemini_stream(
                "",
                &[Call::new("", "write_file", json!({ "file_path": "/workspace/billing/fees.py", "content": fixed }))],
                tokens(step),
            ),
            _ => replies::gemini_stream("The fee counts every started month now.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    GEMINI.run(GEMINI.run_args(&package, &mock.url(), "partial", &out, &[]));

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
    let prompt = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::EpisodeStart { system_prompt, .. } => Some(system_prompt.clone()),
            _ => None,
        })
        .unwrap();
    let prompt_line = prompt.lines().find(|l| l.len() > 40).unwrap();
    assert!(
        system.contains(&serde_json::to_string(prompt_line).unwrap().trim_matches('"').to_string()),
        "the condition prompt is in the system instruction"
    );
    let user_text = first["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(user_text.contains(opening.trim_end()), "the opening message is the prompt");
    let read_result = requests[1].body.clone();
    assert!(String::from_utf8_lossy(&read_result).contains("def late_fee"), "its read_file showed the file");

    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("agent_exit"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (3, 2, 1), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    // The calls had no id on the wire: the harness named them and matched their results.
    let results: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { call_id, tool, .. } => Some((call_id.clone(), tool.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec![("r0-0".to_string(), "read_file".to_string()), ("r1-0".to_string(), "write_file".to_string())]);
    assert_eq!(
        logged_actions(&events),
        vec![
            FileAction::on(ActionKind::Read, "billing/fees.py", "read_file", true),
            FileAction::on(ActionKind::Write, "billing/fees.py", "write_file", true)
        ]
    );
    assert_eq!(agent_usage(&out), vec![usage_of_answers(3)]);
    GEMINI.assert_key_nowhere(&out);
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
            1 => replies::gemini_stream(
                "",
                &[Call::new("", "write_file", json!({ "file_path": "plan.json", "content": plan }))],
                tokens(step),
            ),
            _ => replies::gemini_stream("plan.json is written.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    GEMINI.run(GEMINI.run_args(&package, &mock.url(), "interact", &out, &[]));
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
    let answers = user_messages(&events, UserMessageKind::Answer);
    assert_eq!(answers, vec![answer.to_string()]);
    assert_eq!(exits(&events), 2);
    // The resumed session holds the first run's reply, then the answer as the user's turn.
    for request in &requests[1..] {
        let contents = body(request)["contents"].as_array().unwrap().clone();
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(contents[1]["parts"][0]["text"], QUESTION_REPLY);
        assert_eq!(contents[2]["role"], "user");
        assert_eq!(contents[2]["parts"][0]["text"], answer);
    }
    assert_eq!(logged_actions(&events), vec![FileAction::on(ActionKind::Write, "plan.json", "write_file", true)]);
}

/// gemini-cli lists the bridge's MCP tools as `mcp_specgap_<tool>`; it withholds any tool
/// called `ask_user` in headless mode (its own, and an MCP server's of that name), so the bridge
/// serves `ask_user` to it as `ask_question` and the condition's prompt names
/// `mcp_specgap_ask_question`. Under `--ask-channel mcp` (gemini-cli's default is `text`) it asks
/// the owner and submits through MCP.
#[test]
fn cli_gemini_cli_asks_the_owner_through_its_mcp_tool_submits_through_mcp_and_reads_the_feedback_in_submits_result() {
    let Some(_) = gemini_installed() else { return };
    let package = task_fixture("req-basic");
    let literal = std::fs::read_to_string(package.join("solutions/literal/billing/fees.py")).unwrap();
    let gold = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(move |request: &ReceivedRequest| -> MockReply {
        let step = step_of(request);
        let call = |tool: &str, arguments: Value| replies::gemini_stream("", &[Call::new("", tool, arguments)], tokens(step));
        match step {
            0 => call(ASK_TOOL, json!({ "question": OWNER_QUESTION })),
            1 => call("write_file", json!({ "file_path": "billing/fees.py", "content": literal })),
            2 => call(SUBMIT_TOOL, json!({ "summary": "started months count" })),
            3 => call("write_file", json!({ "file_path": "billing/fees.py", "content": gold })),
            4 => call(SUBMIT_TOOL, json!({ "summary": "disputed invoices and the cap too" })),
            _ => replies::gemini_stream("Done.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    GEMINI.run(GEMINI.run_args(&package, &mock.url(), "partial", &out, &["--ask-channel", "mcp"]));
    let requests = mock.requests();
    let tools: Vec<String> = body(&requests[0])["tools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f["name"].as_str().map(str::to_string))
        .collect();
    assert!(tools.contains(&SUBMIT_TOOL.to_string()) && tools.contains(&ASK_TOOL.to_string()), "{tools:?}");
    assert!(
        tools.contains(&"read_file".to_string()) && !tools.iter().any(|t| t == "google_web_search" || t == "web_fetch"),
        "no web tool the upstream runs: {tools:?}"
    );
    assert!(!tools.iter().any(|t| t.contains("ask_user")), "gemini-cli withholds every tool named ask_user: {tools:?}");
    // The condition's prompt names the tool as gemini-cli shows it.
    let system = body(&requests[0])["systemInstruction"].to_string();
    assert!(
        system.contains("You can put a question to the owner with `mcp_specgap_ask_question`; they answer from what they know."),
        "{system}"
    );
    assert!(system.contains("`submit` and `mcp_specgap_ask_question` each end the turn"), "{system}");
    assert!(!system.contains("`ask_user`"), "{system}");
    assert_eq!(requests.len(), 5, "the episode ends at the accepted submission");
    let rows = episodes(&out);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("accepted"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (5, 5, 2), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    let calls = bridge_calls(&events);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], ("ask_user".to_string(), json!({ "question": OWNER_QUESTION })));
    assert_eq!((calls[1].0.as_str(), &calls[1].1), ("submit", &json!({ "summary": "started months count" })));
    assert_eq!((calls[2].0.as_str(), &calls[2].1), ("submit", &json!({ "summary": "disputed invoices and the cap too" })));
    let answer = result_of(&events, "bridge-1");
    assert!(answer.starts_with("Dana believes the only problem"), "{answer}");
    let feedback = user_messages(&events, UserMessageKind::Feedback).remove(0);
    // What gemini-cli sent back: the owner's answer as the MCP tool's result, the feedback in
    // the MCP submit's result; every call answered once.
    let response_of = |request: &ReceivedRequest, tool: &str| -> String {
        let contents = body(request)["contents"].as_array().unwrap().clone();
        contents
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter(|p| p["functionResponse"]["name"] == tool)
            .map(|p| p["functionResponse"]["response"].to_string())
            .next_back()
            .unwrap()
    };
    assert!(response_of(&requests[1], ASK_TOOL).contains(&answer[..40]), "{}", response_of(&requests[1], ASK_TOOL));
    assert!(
        response_of(&requests[3], SUBMIT_TOOL).contains(&serde_json::to_string(&feedback).unwrap().trim_matches('"').to_string()),
        "{}",
        response_of(&requests[3], SUBMIT_TOOL)
    );
    for (i, request) in requests.iter().enumerate() {
        assert_each_call_answered_once(body(request)["contents"].as_array().unwrap(), &format!("request {i}"));
    }
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { call_id, .. } if call_id.starts_with('r') => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec!["r0-0", "r1-0", "r2-0", "r3-0"],
        "each unnamed call got its result, the last one's at the episode's end or never"
    );
    // The harness ended its run at the acceptance: its actions were mapped as their results
    // arrived, not from its events (read only when it ends on its own).
    let written = FileAction::on(ActionKind::Write, "billing/fees.py", "write_file", true);
    assert_eq!(logged_actions(&events), vec![written.clone(), written]);
}

const OWNER_QUESTION: &str = "Should a disputed invoice be charged a late fee?";
const SUBMIT_TOOL: &str = "mcp_specgap_submit";
const ASK_TOOL: &str = "mcp_specgap_ask_question";

const SUBMITTED: &str = "Submitted.";

#[test]
fn cli_gemini_cli_that_ends_its_run_after_a_returned_submission_is_resumed_with_the_feedback_and_accepted_at_k2() {
    let Some(_) = gemini_installed() else { return };
    let package = task_fixture("req-basic");
    let literal = std::fs::read_to_string(package.join("solutions/literal/billing/fees.py")).unwrap();
    let gold = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(move |request: &ReceivedRequest| -> MockReply {
        let step = step_of(request);
        let call = |tool: &str, arguments: Value| replies::gemini_stream("", &[Call::new("", tool, arguments)], tokens(step));
        match step {
            0 => call("read_file", json!({ "file_path": "billing/fees.py" })),
            // Its default channel is `text`, but an owner condition has no text exchange: the
            // MCP tool is offered.
            1 => call(ASK_TOOL, json!({ "question": OWNER_QUESTION })),
            2 => call("write_file", json!({ "file_path": "billing/fees.py", "content": literal })),
            3 => call(SUBMIT_TOOL, json!({ "summary": "started months count" })),
            // It ends its headless run; the harness resumes it (`--resume latest`).
            4 => replies::gemini_stream(SUBMITTED, &[], tokens(step)),
            5 => call("write_file", json!({ "file_path": "billing/fees.py", "content": gold })),
            6 => call(SUBMIT_TOOL, json!({ "summary": "disputed invoices and the cap too" })),
            _ => replies::gemini_stream("Done.", &[], tokens(step)),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    GEMINI.run(GEMINI.run_args(&package, &mock.url(), "partial", &out, &[]));
    let requests = mock.requests();
    assert_eq!(requests.len(), 7, "the episode ends at the accepted submission");
    let (events, feedback) = check_resumed_after_a_returned_submission(&out);
    // The resumed request holds the first run (the submit's response, the closing reply),
    // then the engine's message with the feedback as the user's turn.
    let contents = body(&requests[5])["contents"].as_array().unwrap().clone();
    let parts = |c: &Value| c["parts"].as_array().cloned().unwrap_or_default();
    assert!(
        contents.iter().flat_map(parts).any(|p| p["functionResponse"]["name"] == SUBMIT_TOOL),
        "the resumed session holds the first submit"
    );
    assert!(
        contents.iter().any(|c| c["role"] == "model" && parts(c).iter().any(|p| p["text"] == SUBMITTED)),
        "the resumed session holds the first run's reply"
    );
    let last = contents.last().unwrap();
    assert_eq!(last["role"], "user");
    let text: String = parts(last).iter().filter_map(|p| p["text"].as_str()).collect();
    assert_is_the_feedback_resume(&text, 1, &feedback);
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.header("x-goog-api-key"), Some(KEY), "request {i}");
    }
    for (i, request) in requests[..5].iter().enumerate() {
        assert_each_call_answered_once(body(request)["contents"].as_array().unwrap(), &format!("request {i}"));
    }
    // gemini-cli 0.61.0 rebuilds a resumed history from its session file with each earlier
    // call's functionResponse twice (the recorded user turn that carried it, and the result it
    // keeps beside the call), the same response both times; the calls after the resume are
    // answered once. The harness records each result once (the ToolResult ids below).
    let resumed = body(&requests[6])["contents"].as_array().unwrap().clone();
    let calls: Vec<String> = resumed.iter().flat_map(parts).filter_map(|p| p["functionCall"]["id"].as_str().map(str::to_string)).collect();
    assert_eq!(calls.len(), 5, "{calls:?}");
    for (n, id) in calls.iter().enumerate() {
        let answers: Vec<Value> = resumed.iter().flat_map(parts).filter(|p| p["functionResponse"]["id"] == id.as_str()).collect();
        let expected = if n < 4 { 2 } else { 1 };
        assert_eq!(answers.len(), expected, "call {id}: {answers:?}");
        assert!(answers.windows(2).all(|w| w[0] == w[1]), "call {id}: the repeated responses are the same");
    }
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { call_id, .. } if call_id.starts_with('r') => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec!["r0-0", "r1-0", "r2-0", "r3-0", "r5-0"], "each call's result once; the accepted submit's never came back");
    let fees = |kind, via| FileAction::on(kind, "billing/fees.py", via, true);
    assert_eq!(
        logged_actions(&events),
        vec![fees(ActionKind::Read, "read_file"), fees(ActionKind::Write, "write_file"), fees(ActionKind::Write, "write_file")]
    );
    assert_eq!(agent_usage(&out), vec![usage_of_answers(7)]);
    GEMINI.assert_key_nowhere(&out);
}
