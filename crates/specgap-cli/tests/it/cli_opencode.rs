//! `cli:opencode` through the `specgap` binary (issue 15): the real pinned `opencode-ai` build
//! (installed in the shared test cache by `specgap agents install`, which `.ci/run` runs first; with `SPECGAP_REQUIRE_EXTERNAL=1` a
//! missing installation fails the test) inside the episode's sandbox, against a scripted mock
//! of OpenAI chat completions that answers opencode's title request as a side request and
//! checks every request.

use std::path::PathBuf;

use serde_json::{Value, json};
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_protocol::action::{ActionKind, FileAction};
use specgap_protocol::event::{EventKind, UserMessageKind};

use crate::cli_support::*;
use crate::support::*;

const MODEL: &str = "mock-opencode-model";
const KEY: &str = "sk-opencode-test-7d1f3a9c2e";
/// opencode as the tests run it.
const OPENCODE: CliUnderTest = CliUnderTest { agent: "cli:opencode", model: MODEL, key_env: "SPECGAP_TEST_OPENCODE_KEY", key: KEY };

fn opencode_installed() -> Option<PathBuf> {
    installed("opencode", specgap_agents::cli::opencode::DEFAULT_VERSION)
}

/// The tokens the mock reports for the n-th main-loop answer, and for the title.
fn main_tokens(step: u64) -> Tokens {
    Tokens { input: 2000 + step, output: 30 + step, ..Tokens::default() }
}
const TITLE_TOKENS: Tokens = Tokens { input: 300, output: 7, cached: 0, cache_creation: 0, reasoning: 0 };

/// The usage of `main` main-loop answers (steps 0..main) and one title, as the store sums
/// it: (requests, input tokens, output tokens).
fn usage_of_main_answers_and_a_title(main: u64) -> (u64, u64, u64) {
    let input = (0..main).map(|s| main_tokens(s).input).sum::<u64>() + TITLE_TOKENS.input;
    let output = (0..main).map(|s| main_tokens(s).output).sum::<u64>() + TITLE_TOKENS.output;
    (main + 1, input, output)
}

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
            0 => replies::openai_chat_stream(
                MODEL,
                "",
                &[Call::new("call-read", "read", json!({ "filePath": "/workspace/billing/fees.py" }))],
                tokens,
            ),
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
    OPENCODE.run(OPENCODE.run_args(&package, &format!("{}/v1", mock.url()), "partial", &out, &[]));

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
    assert!(
        tools.contains(&"read") && tools.contains(&"bash") && !tools.contains(&"webfetch") && !tools.contains(&"websearch"),
        "{tools:?}"
    );
    for (step, request) in main.iter().enumerate() {
        // Seed 002 A.3 "Runtime": opencode passes a per-call output limit of 131,072 tokens.
        assert_eq!(body(request)["max_tokens"], 131_072, "main request {step}");
        let messages = body(request)["messages"].as_array().unwrap().clone();
        assert_eq!(messages.iter().filter(|m| m["role"] == "assistant").count(), step, "main request {step}");
        assert_each_call_answered_once(&messages, &format!("main request {step}"));
    }
    let read_result = body(main[1])["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
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
    assert_eq!(agent_usage(&out), vec![usage_of_main_answers_and_a_title(3)]);

    // The trajectory: one side exchange, three main ones, and the actions mapped from
    // opencode's own events (its read is a read, its write a write, whatever they are called).
    let events = events(&out, &row.id);
    assert_no_network_attempt(&events);
    let classes: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelExchange { class, .. } => Some(class.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(classes.iter().filter(|c| *c == "side").count(), 1, "{classes:?}");
    assert_eq!(classes.iter().filter(|c| *c == "main").count(), 3, "{classes:?}");
    assert_eq!(
        logged_actions(&events),
        vec![
            FileAction::on(ActionKind::Read, "billing/fees.py", "read", true),
            FileAction::on(ActionKind::Write, "billing/fees.py", "write", true)
        ]
    );
    let exit = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AgentExit { status, how, note, .. } => Some((*status, how.clone(), note.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!((exit.0, exit.1.as_str(), exit.2.as_str()), (Some(0), "exited", ""), "{exit:?}");
    // The key was never in the sandbox: nothing of the store holds it.
    OPENCODE.assert_key_nowhere(&out);
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
            1 => replies::openai_chat_stream(
                MODEL,
                "",
                &[Call::new("call-plan", "write", json!({ "filePath": "/workspace/plan.json", "content": plan }))],
                tokens,
            ),
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
    OPENCODE.run(OPENCODE.run_args(&package, &format!("{}/v1", mock.url()), "interact", &out, &[]));
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
    let answers = user_messages(&events, UserMessageKind::Answer);
    let expected = "- Does the 10 kg limit include the box itself?\n  Yes: the carrier weighs the packed box, and an empty box with padding is 0.5 kg, so at most 9.5 kg of goods go in a box.";
    assert_eq!(answers, vec![expected.to_string()]);
    assert_eq!(exits(&events), 2, "opencode ended its run after asking, and again after writing the plan");
    // The resumed requests carry the first run's history (the same session), then the answer.
    for (step, request) in main.iter().enumerate().skip(1) {
        let messages = body(request)["messages"].as_array().unwrap().clone();
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(&roles[..4], &["system", "user", "assistant", "user"], "main request {step}");
        assert_eq!(messages[2]["content"], QUESTION_REPLY);
        assert_eq!(messages[3]["content"], expected);
        assert_each_call_answered_once(&messages, &format!("main request {step}"));
    }
    assert_eq!(logged_actions(&events), vec![FileAction::on(ActionKind::Write, "plan.json", "write", true)]);
    assert_eq!(agent_usage(&out), vec![usage_of_main_answers_and_a_title(3)]);
}

/// Answers by step: read the module, ask the owner through the MCP server, write the literal
/// fix, submit it through MCP (its result carries the feedback), write the gold fix, submit.
/// With `exit_after_returned`, a closing reply follows the first submission (opencode ends its
/// run) and the resumed session (`run --session`) goes on from the gold fix.
fn mcp_responder(literal: String, gold: String, exit_after_returned: bool) -> impl Fn(&ReceivedRequest) -> MockReply + Send + Sync {
    move |request| {
        if !offers_tools(request) {
            return replies::openai_chat_stream(MODEL, "Late fee fix", &[], TITLE_TOKENS);
        }
        let step = body(request)["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()) as u64;
        let tokens = main_tokens(step);
        let call =
            |id: &str, tool: &str, arguments: Value| replies::openai_chat_stream(MODEL, "", &[Call::new(id, tool, arguments)], tokens);
        // The steps after the first submission, one later when a closing reply comes between.
        let after = if exit_after_returned { step.checked_sub(1) } else { Some(step) };
        match (step, after) {
            (0, _) => call("c-read", "read", json!({ "filePath": "/workspace/billing/fees.py" })),
            (1, _) => call("c-ask", "specgap_ask_user", json!({ "question": OWNER_QUESTION })),
            (2, _) => call("c-write-1", "write", json!({ "filePath": "/workspace/billing/fees.py", "content": literal })),
            (3, _) => call("c-submit-1", "specgap_submit", json!({ "summary": "started months count" })),
            (4, _) if exit_after_returned => replies::openai_chat_stream(MODEL, SUBMITTED, &[], tokens),
            (_, Some(4)) => call("c-write-2", "write", json!({ "filePath": "/workspace/billing/fees.py", "content": gold })),
            (_, Some(5)) => call("c-submit-2", "specgap_submit", json!({ "summary": "disputed invoices and the cap too" })),
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
    mock.set_responder(mcp_responder(literal, gold, false));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // The plain `opencode run` (no server) of the mcp channel; the other episodes here run
    // under opencode's default, native.
    OPENCODE.run(OPENCODE.run_args(&package, &format!("{}/v1", mock.url()), "partial", &out, &["--ask-channel", "mcp"]));
    assert!(std::fs::read_to_string(out.join("run.toml")).unwrap().contains("ask_channel = \"mcp\""));
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
    let tools: Vec<String> =
        body(main[0])["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect();
    assert!(
        tools.contains(&"specgap_ask_user".to_string()) && tools.contains(&"specgap_submit".to_string()),
        "the bridge's MCP tools are offered: {tools:?}"
    );
    assert!(!tools.contains(&"question".to_string()), "plain `opencode run` does not offer its own question tool: {tools:?}");
    // The condition's prompt (in opencode's system prompt) names the tool as opencode shows it.
    let system = body(main[0])["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("You can put a question to the owner with `specgap_ask_user`; they answer from what they know."), "{system}");
    assert!(system.contains("`submit` and `specgap_ask_user` each end the turn"), "{system}");
    // The harness calls arrived through the bridge, in order.
    assert_eq!(
        bridge_calls(&events),
        vec![
            ("ask_user".to_string(), json!({ "question": OWNER_QUESTION })),
            ("submit".to_string(), json!({ "summary": "started months count" })),
            ("submit".to_string(), json!({ "summary": "disputed invoices and the cap too" })),
        ]
    );
    let tool_message = |request: &ReceivedRequest, call_id: &str| -> String {
        body(request)["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id).unwrap()["content"].as_str().unwrap().to_string()
    };
    // The owner's answer reached opencode as its MCP tool's result.
    let answer = result_of(&events, "bridge-1");
    assert!(answer.starts_with("Dana believes the only problem"), "{answer}");
    assert_eq!(tool_message(main[2], "c-ask"), answer);
    // The feedback of the returned submission is part of submit's result.
    let feedback = user_messages(&events, UserMessageKind::Feedback).remove(0);
    assert_eq!(
        tool_message(main[4], "c-submit-1"),
        format!("The delivery was returned; the owner's message follows. 3 submissions left.\n\n{feedback}")
    );
    for (step, request) in main.iter().enumerate() {
        assert_each_call_answered_once(body(request)["messages"].as_array().unwrap(), &format!("main request {step}"));
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    }
    // The harness ended opencode's run at the acceptance: its actions were mapped as their
    // results arrived, not from its events (read only when it ends on its own).
    let fees = |kind| FileAction::on(kind, "billing/fees.py", if kind == ActionKind::Read { "read" } else { "write" }, true);
    assert_eq!(logged_actions(&events), vec![fees(ActionKind::Read), fees(ActionKind::Write), fees(ActionKind::Write)]);
    assert_eq!(agent_usage(&out), vec![usage_of_main_answers_and_a_title(6)]);
}

const SUBMITTED: &str = "Submitted.";

#[test]
fn cli_opencode_that_ends_its_run_after_a_returned_submission_is_resumed_with_the_feedback_and_accepted_at_k2() {
    let Some(_) = opencode_installed() else { return };
    let package = task_fixture("req-basic");
    let literal = std::fs::read_to_string(package.join("solutions/literal/billing/fees.py")).unwrap();
    let gold = std::fs::read_to_string(package.join("solutions/gold/billing/fees.py")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(mcp_responder(literal, gold, true));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    OPENCODE.run(OPENCODE.run_args(&package, &format!("{}/v1", mock.url()), "partial", &out, &[]));
    let requests = mock.requests();
    let main: Vec<&ReceivedRequest> = requests.iter().filter(|r| offers_tools(r)).collect();
    assert_eq!(
        (main.len(), requests.len() - main.len()),
        (7, 1),
        "one title: the resume continues the same session; none after the acceptance"
    );
    let (events, feedback) = check_resumed_after_a_returned_submission(&out);
    // The resumed request holds the first run (the submit's result, the closing reply), then
    // the engine's message with the feedback.
    let messages = body(main[5])["messages"].as_array().unwrap().clone();
    assert!(
        messages.iter().any(|m| m["role"] == "tool" && m["tool_call_id"] == "c-submit-1"),
        "the resumed session holds the first submit"
    );
    assert!(
        messages.iter().any(|m| m["role"] == "assistant" && m["content"] == SUBMITTED),
        "the resumed session holds the first run's reply"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_is_the_feedback_resume(last["content"].as_str().unwrap(), 1, &feedback);
    for (step, request) in main.iter().enumerate() {
        assert_each_call_answered_once(body(request)["messages"].as_array().unwrap(), &format!("main request {step}"));
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "main request {step}");
    }
    let fees = |kind, via| FileAction::on(kind, "billing/fees.py", via, true);
    assert_eq!(
        logged_actions(&events),
        vec![fees(ActionKind::Read, "read"), fees(ActionKind::Write, "write"), fees(ActionKind::Write, "write")]
    );
    assert_eq!(agent_usage(&out), vec![usage_of_main_answers_and_a_title(7)]);
    OPENCODE.assert_key_nowhere(&out);
}

const BOX_QUESTION: &str = "Does the 10 kg limit include the box itself?";
const BOX_ANSWER: &str =
    "Yes: the carrier weighs the packed box, and an empty box with padding is 0.5 kg, so at most 9.5 kg of goods go in a box.";
const WAIT_HEADER: &str = "Can some items wait until tomorrow?";
const WAIT_ANSWER: &str = "Every line in orders.csv ships today; nothing may be left for tomorrow.";

/// opencode's `question` call of two questions: one with its own text and options, one whose
/// text is empty (the customer gets its header).
fn native_question_call(id: &str) -> Call {
    Call::new(
        id,
        "question",
        json!({ "questions": [
            { "question": BOX_QUESTION, "header": "Box weight", "options": [{ "label": "Yes", "description": "the box counts" }, { "label": "No", "description": "goods only" }] },
            { "question": "", "header": WAIT_HEADER, "options": [] }
        ] }),
    )
}

/// Answers a delivery episode by step: `questions` calls of opencode's own question tool (one
/// per id in `asks`), then the plan written with the write tool, then a closing reply.
fn native_responder(plan: String, asks: &'static [&'static str]) -> impl Fn(&ReceivedRequest) -> MockReply + Send + Sync {
    move |request| {
        if !offers_tools(request) {
            return replies::openai_chat_stream(MODEL, "Packing plan", &[], TITLE_TOKENS);
        }
        let body = body(request);
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        let tokens = main_tokens(step as u64);
        if let Some(id) = asks.get(step) {
            return replies::openai_chat_stream(MODEL, "", &[native_question_call(id)], tokens);
        }
        if step == asks.len() {
            return replies::openai_chat_stream(
                MODEL,
                "",
                &[Call::new("call-plan", "write", json!({ "filePath": "/workspace/plan.json", "content": plan }))],
                tokens,
            );
        }
        replies::openai_chat_stream(MODEL, "plan.json is written.", &[], tokens)
    }
}

/// Runs `delivery-basic` under `interact` with `cli:opencode` (its default ask channel) and
/// `extra` arguments against `mock`; returns the run directory's parent and the run directory.
fn run_delivery(mock: &MockUpstream, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let package = task_fixture("delivery-basic");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    OPENCODE.run(OPENCODE.run_args(&package, &format!("{}/v1", mock.url()), "interact", &out, extra));
    (tmp, out)
}

/// The content of the tool message answering `call_id` in `request`'s history.
fn tool_message(request: &ReceivedRequest, call_id: &str) -> String {
    body(request)["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id).unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The text opencode 1.18.33's question tool returns for `answers` (one per question, in
/// order, each paired with the question's own text, empty for a header-only question).
fn opencode_answered(pairs: &[(&str, &str)]) -> String {
    let shown: Vec<String> = pairs.iter().map(|(q, a)| format!("\"{q}\"=\"{a}\"")).collect();
    format!("User has answered your questions: {}. You can now continue with the user's answers in mind.", shown.join(", "))
}

#[test]
fn cli_opencode_asks_through_its_own_question_tool_and_the_customers_answers_come_back_through_its_server() {
    let Some(_) = opencode_installed() else { return };
    let plan = std::fs::read_to_string(task_fixture("delivery-basic").join("solutions/gold/plan.json")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(native_responder(plan, &["call-q"]));
    let (_tmp, out) = run_delivery(&mock, &[]);
    let store = specgap_store::Store::open(&out).unwrap();
    let stored = std::fs::read_to_string(out.join("run.toml")).unwrap();
    assert!(stored.contains("ask_channel = \"native\""), "opencode's default channel is its own tool: {stored}");

    // opencode offered its question tool (and submit through MCP, but not ask_user), and the
    // model's call was answered once, in the same run, with one free-text answer per question.
    let requests = mock.requests();
    let main: Vec<&ReceivedRequest> = requests.iter().filter(|r| offers_tools(r)).collect();
    assert_eq!((main.len(), requests.len() - main.len()), (3, 1), "three main-loop requests and one title");
    let tools: Vec<String> =
        body(main[0])["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect();
    assert!(tools.contains(&"question".to_string()) && tools.contains(&"specgap_submit".to_string()), "{tools:?}");
    assert!(!tools.contains(&"specgap_ask_user".to_string()), "ask_user is withheld under native in a delivery condition: {tools:?}");
    // The condition's prompt (in opencode's system prompt) names the tool opencode offers.
    let system = body(main[0])["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("The client can be reached with `question`, which takes one question or a list of questions."), "{system}");
    assert!(!system.contains("ask_user"), "{system}");
    assert_eq!(tool_message(main[1], "call-q"), opencode_answered(&[(BOX_QUESTION, BOX_ANSWER), ("", WAIT_ANSWER)]));
    for (step, request) in main.iter().enumerate() {
        assert_each_call_answered_once(body(request)["messages"].as_array().unwrap(), &format!("main request {step}"));
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "main request {step}");
    }

    let rows = episodes(&out);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("agent_exit"), "{row:?}");
    assert_eq!((row.turns, row.tool_calls, row.submissions), (3, 2, 1), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    let events = events(&out, &row.id);
    // The request became one ask_user round with the customer's two questions (the header for
    // the empty one, no option appended), the request itself kept beside them.
    let calls: Vec<Value> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::BridgeCall { call, .. } => Some(json!({ "tool": call.tool, "arguments": call.arguments })),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["tool"], "ask_user");
    assert_eq!(calls[0]["arguments"]["questions"], json!([BOX_QUESTION, WAIT_HEADER]));
    let native = &calls[0]["arguments"]["native"];
    assert!(native["id"].as_str().unwrap().starts_with("que_"), "{native}");
    assert_eq!(native["tool"]["callID"], "call-q");
    assert_eq!(
        native["questions"][0]["options"],
        json!([{ "label": "Yes", "description": "the box counts" }, { "label": "No", "description": "goods only" }])
    );
    assert_eq!(native["questions"][1]["header"], WAIT_HEADER);
    // Two question units in one round (the turn of the call), each with its own answer.
    let questions: Vec<(u32, String, String)> =
        store.questions().unwrap().into_iter().map(|q| (q.question.turn, q.question.text, q.question.answer)).collect();
    assert_eq!(
        questions,
        vec![(1, BOX_QUESTION.to_string(), BOX_ANSWER.to_string()), (1, WAIT_HEADER.to_string(), WAIT_ANSWER.to_string())]
    );
    let rounds: std::collections::BTreeSet<u32> = questions.iter().map(|q| q.0).collect();
    assert_eq!(rounds.len(), 1, "one clarification round");
    let exits = events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count();
    assert_eq!(exits, 1, "the question was answered inside the run: no resume");
    let actions: Vec<FileAction> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Actions { actions, .. } => Some(actions.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(actions, vec![FileAction::on(ActionKind::Write, "plan.json", "write", true)]);
    let usage: Vec<_> = store.usage().unwrap().into_iter().filter(|u| u.role == specgap_store::Role::Agent).collect();
    let expected_input = (0..3).map(|s| main_tokens(s).input).sum::<u64>() + TITLE_TOKENS.input;
    let expected_output = (0..3).map(|s| main_tokens(s).output).sum::<u64>() + TITLE_TOKENS.output;
    assert_eq!(
        usage.iter().map(|u| (u.usage.requests, u.usage.input_tokens, u.usage.output_tokens)).collect::<Vec<_>>(),
        vec![(4, expected_input, expected_output)]
    );
}

#[test]
fn cli_opencode_native_questions_past_the_round_limit_get_the_engines_round_limit_reply() {
    let Some(_) = opencode_installed() else { return };
    let plan = std::fs::read_to_string(task_fixture("delivery-basic").join("solutions/gold/plan.json")).unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(native_responder(plan, &["call-q1", "call-q2"]));
    let (_tmp, out) = run_delivery(&mock, &["--clarification-rounds", "1"]);
    let requests = mock.requests();
    let main: Vec<&ReceivedRequest> = requests.iter().filter(|r| offers_tools(r)).collect();
    assert_eq!(main.len(), 4);
    assert_eq!(tool_message(main[1], "call-q1"), opencode_answered(&[(BOX_QUESTION, BOX_ANSWER), ("", WAIT_ANSWER)]));
    let proceed = specgap_engine::episode::PROCEED_REPLY;
    assert_eq!(
        tool_message(main[2], "call-q2"),
        opencode_answered(&[(BOX_QUESTION, proceed), ("", proceed)]),
        "every question gets the round-limit reply"
    );
    let rows = episodes(&out);
    let row = &rows[0];
    assert_eq!((row.turns, row.tool_calls, row.submissions), (4, 3, 1), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    let events = events(&out, &row.id);
    let budget: Vec<(String, Value, Value)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Budget { which, used, limit } => Some((which.clone(), json!(used), json!(limit))),
            _ => None,
        })
        .collect();
    assert_eq!(budget, vec![("clarification_rounds".to_string(), json!(1), json!(1))]);
    // The second request is recorded, but asks the customer nothing: two units, one round.
    let asked = events.iter().filter(|e| matches!(&e.kind, EventKind::BridgeCall { call, .. } if call.tool == "ask_user")).count();
    assert_eq!(asked, 2);
    let store = specgap_store::Store::open(&out).unwrap();
    let questions: Vec<(u32, String)> = store.questions().unwrap().into_iter().map(|q| (q.question.turn, q.question.text)).collect();
    assert_eq!(questions, vec![(1, BOX_QUESTION.to_string()), (1, WAIT_HEADER.to_string())]);
}
