//! The vendors' agent CLIs as `cli:` agents (issue 15), each the real pinned program (installed
//! by `specgap agents install claude-code|codex`; with `SPECGAP_REQUIRE_EXTERNAL=1` a missing
//! installation fails the test), against a scripted mock upstream of the protocol it speaks
//! (Anthropic Messages, OpenAI Responses) that checks every request: the path, the real key
//! and never the sandbox's token, the one model, the tools the CLI offers. Each episode's
//! network tripwire must be armed and record no attempt: the CLI reached nothing but its
//! gateway.
//!
//! Each runs a delivery episode of `retail-replenishment` under `interact` through the text
//! channel: it lists its questions under the heading and ends its turn; the customer's
//! answers resume the same session with the CLI's own resume mechanism; it reads the data,
//! writes the plan and exits, and the changed workspace is submitted.

use serde_json::{Value, json};
use specgap_agents::cli::channel::AskChannel;
use specgap_engine::condition::BudgetFlags;
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_protocol::action::{ActionKind, FileAction};
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;
use specgap_store::Role;

use crate::cli_support::*;

/// Questions under seed 002's heading, in a reply without a tool call.
const QUESTIONS: &str = "I have read the request.\n\n## Questions for the client\n1. How should a store be supplied when its own city's warehouse runs out?\n2. Which currency are the costs in?\n";

/// The gold plan of the package (what a competent agent writes).
fn gold_plan() -> String {
    let package = example("retail-replenishment");
    fs_err::read_to_string(package.root().join("solutions/gold/plan.json")).unwrap()
}

/// Tokens of the `n`-th answer.
fn answer_tokens(n: u64) -> Tokens {
    Tokens { input: 1000 + n, output: 20 + n, cached: n, ..Tokens::default() }
}

/// The JSON body of a request.
fn body(request: &ReceivedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

/// What every request to the upstream must be, whichever protocol: the real key in the
/// protocol's header, never the token, the one model.
fn check_common(requests: &[ReceivedRequest], key_header: &str, key_value: &str) {
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.method.as_str(), "POST", "request {i}");
        assert_eq!(request.header(key_header), Some(key_value), "request {i} carries the real key");
        assert!(!request.contains("sgw-"), "request {i} carries the sandbox's token");
        assert_eq!(body(request)["model"], MODEL, "request {i}");
    }
}

/// The customer's answers as the engine sends them back (one user message).
fn answers_message(run: &CliRun) -> String {
    let questions = &run.detail.questions;
    assert_eq!(questions.len(), 2, "each question on its own");
    questions.iter().map(|q| format!("- {}\n  {}", q.question.text, q.question.answer)).collect::<Vec<_>>().join("\n")
}

/// The checks every vendor run shares: the plan delivered and scored, both questions asked in
/// turn 1 and answered, two exits (the first resumed), the usage of the agent equal to the
/// mock's counts.
fn check_delivery(run: &CliRun, answers: u64) {
    let episode = &run.detail.episode;
    assert_eq!(episode.end_reason, Some(EndReason::AgentExit), "{episode:?}");
    assert_eq!(episode.final_score, Some(1.0), "{episode:?}");
    assert_eq!(run.detail.submissions.len(), 1);
    assert!(run.detail.submissions[0].automatic);
    let texts: Vec<&str> = run.detail.questions.iter().map(|q| q.question.text.as_str()).collect();
    assert_eq!(texts, ["How should a store be supplied when its own city's warehouse runs out?", "Which currency are the costs in?"]);
    let exits = run.events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count();
    assert_eq!(exits, 2, "the first start ended its turn with questions, the resumed one with the plan");
    let usage: Vec<_> = run.detail.usage.iter().filter(|u| u.role == Role::Agent).collect();
    assert_eq!(usage.len(), 1);
    let sum = |f: fn(&Tokens) -> u64| (0..answers).map(|n| f(&answer_tokens(n))).sum::<u64>();
    let u = &usage[0].usage;
    assert_eq!(
        (u.requests, u.input_tokens, u.output_tokens, u.cached_tokens),
        (answers, sum(|t| t.input), sum(|t| t.output), sum(|t| t.cached)),
        "usage equals the mock's counts"
    );
    assert_eq!(episode.turns, answers as u32);
    let stored = run.everything_stored();
    assert!(!String::from_utf8_lossy(&stored).contains(canary_key()), "the key is nowhere in the store");
    // The CLI tried no connection but to its gateway (no telemetry, update check or plug-in).
    assert_no_network_attempt(&run.events);
}

/// The normalized actions the adapter mapped from the CLI's own log.
fn logged_actions(run: &CliRun) -> Vec<FileAction> {
    run.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Actions { actions, .. } => Some(actions.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn claude_code_delivers_under_interact_asking_in_text_and_resuming_its_session() {
    let version = specgap_agents::cli::claude_code::DEFAULT_VERSION;
    let Some(_) = installed("claude-code") else { return };
    let plan = gold_plan();
    let say = |n: u64, text: &str| replies::anthropic_stream(MODEL, text, &[], answer_tokens(n));
    let call = |n: u64, name: &str, input: Value| {
        replies::anthropic_stream(MODEL, "", &[Call::new(&format!("toolu_{n}"), name, input)], answer_tokens(n))
    };
    let script: Vec<MockReply> = vec![
        say(0, QUESTIONS),
        call(1, "Read", json!({"file_path": "/workspace/data/README.md"})),
        call(2, "Bash", json!({"command": "head -3 data/stock.csv"})),
        call(3, "Write", json!({"file_path": "/workspace/plan.json", "content": plan})),
        say(4, "The plan is in plan.json."),
    ];
    let mock = MockUpstream::start(script).unwrap();
    refuse_unscripted_anthropic(&mock);
    let mut config = vendor_config("claude-code", version, &mock);
    config.ask_channel = Some(AskChannel::Text);
    let run = run_cli(example("retail-replenishment"), "interact", "clean", "cli:claude-code", &config, &mock, BudgetFlags::default());
    let requests = &run.requests;
    assert_eq!(requests.len(), 5, "every request is a main-loop turn: no side requests with nonessential traffic off");
    check_common(requests, "x-api-key", canary_key());
    for (i, request) in requests.iter().enumerate() {
        assert_eq!((request.path(), request.query()), ("/v1/messages", "beta=true"), "request {i}");
        let body = body(request);
        assert_eq!(body["stream"], true);
        let tools: Vec<&str> = body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        for tool in ["Bash", "Read", "Write", "Edit"] {
            assert!(tools.contains(&tool), "request {i} offers {tool}: {tools:?}");
        }
        assert!(!tools.contains(&"WebSearch"), "request {i}: no web search the upstream would run: {tools:?}");
        assert!(!tools.contains(&"WebFetch"), "request {i}: no fetch Claude Code would make from the machine: {tools:?}");
        // Its default ask channel, the text exchange: the harness's ask_user is not offered.
        assert!(tools.contains(&"mcp__specgap__submit") && !tools.contains(&"mcp__specgap__ask_user"), "request {i}: {tools:?}");
        // The condition's system prompt goes through --append-system-prompt.
        let system = body["system"].to_string();
        assert!(system.contains("## Questions for the client"), "request {i}: the interact prompt names the heading");
        // The text channel's prompt asks for questions in the reply and names no ask tool.
        assert!(system.contains("To ask the client, write your questions in a reply without tool calls"), "request {i}: {system}");
        assert!(!system.contains("ask_user"), "request {i}: {system}");
    }
    // The resumed session holds the first one: its questions, then the customer's answers.
    let resumed = body(&requests[1]);
    let messages = resumed["messages"].as_array().unwrap();
    let text_of =
        |m: &Value| m["content"].as_array().map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<String>()).unwrap_or_default();
    assert!(
        messages.iter().any(|m| m["role"] == "assistant" && text_of(m).contains("Which currency")),
        "the resume carries the first turn"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(text_of(last).contains(&answers_message(&run)), "{}", text_of(last));
    // Each tool call answered once: the last request's conversation has one result per call.
    let results: Vec<String> = body(&requests[4])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(results, ["toolu_1", "toolu_2", "toolu_3"]);
    check_delivery(&run, 5);
    assert_eq!(
        logged_actions(&run),
        [FileAction::on(ActionKind::Read, "data/README.md", "Read", true), FileAction::on(ActionKind::Write, "plan.json", "Write", true)]
    );
    // The Bash call's result is in the harness's command form.
    let bash_result = run.events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult { call_id, output, .. } if call_id == "toolu_2" => Some(output.clone()),
        _ => None,
    });
    assert!(bash_result.as_deref().is_some_and(|o| o.starts_with("exit status 0\n--- stdout ---\n")), "{bash_result:?}");
}

#[test]
fn codex_delivers_under_interact_asking_in_text_and_resuming_its_session() {
    let version = specgap_agents::cli::codex::DEFAULT_VERSION;
    let Some(_) = installed("codex") else { return };
    let plan = gold_plan();
    let say = |n: u64, text: &str| replies::responses_stream(MODEL, text, &[], answer_tokens(n));
    let exec = |n: u64, cmd: &str| {
        replies::responses_stream(MODEL, "", &[Call::new(&format!("call_{n}"), "exec_command", json!({"cmd": cmd}))], answer_tokens(n))
    };
    let write = format!("cat > plan.json <<'SPECGAP_EOF'\n{}\nSPECGAP_EOF", plan.trim_end());
    let script: Vec<MockReply> =
        vec![say(0, QUESTIONS), exec(1, "cat data/README.md"), exec(2, &write), say(3, "The plan is in plan.json.")];
    let mock = MockUpstream::start(script).unwrap();
    refuse_unscripted_openai(&mock);
    let mut config = vendor_config("codex", version, &mock);
    config.ask_channel = Some(AskChannel::Text);
    let run = run_cli(example("retail-replenishment"), "interact", "clean", "cli:codex", &config, &mock, BudgetFlags::default());
    let requests = &run.requests;
    assert_eq!(requests.len(), 4, "every request is a main-loop turn: no side requests");
    check_common(requests, "authorization", &format!("Bearer {}", canary_key()));
    for (i, request) in requests.iter().enumerate() {
        assert_eq!((request.path(), request.query()), ("/v1/responses", ""), "request {i}");
        let body = body(request);
        assert_eq!(body["stream"], true);
        let tools: Vec<&str> = body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        assert!(tools.contains(&"exec_command"), "request {i}: {tools:?}");
        let hosted: Vec<&Value> = body["tools"].as_array().unwrap().iter().filter(|t| t["type"] == "web_search").collect();
        assert!(hosted.is_empty(), "request {i}: no hosted web search the upstream would run: {hosted:?}");
        // Its default ask channel, the text exchange: the harness's namespace has no ask_user.
        let harness =
            body["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__specgap").map(Value::to_string).unwrap_or_default();
        assert!(harness.contains("\"submit\"") && !harness.contains("\"ask_user\""), "request {i}: {harness}");
        // The condition's system prompt goes in as developer instructions.
        let developer =
            body["input"].as_array().unwrap().iter().filter(|m| m["role"] == "developer").map(Value::to_string).collect::<String>();
        assert!(developer.contains("Questions for the client"), "request {i}: the interact prompt");
        assert!(developer.contains("To ask the client, write your questions in a reply without tool calls"), "request {i}: {developer}");
        assert!(!developer.contains("ask_user"), "request {i}: {developer}");
    }
    let resumed = body(&requests[1]);
    let input = resumed["input"].as_array().unwrap();
    assert!(
        input.iter().any(|m| m["role"] == "assistant" && m.to_string().contains("Which currency")),
        "the resume carries the first turn"
    );
    let last = input.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains(&serde_json::to_string(&answers_message(&run)).unwrap().trim_matches('"').to_string()), "{last}");
    // Each call answered once: the last request's input has one output per call.
    let outputs: Vec<String> = body(&requests[3])["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "function_call_output")
        .filter_map(|m| m["call_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(outputs, ["call_1", "call_2"]);
    check_delivery(&run, 4);
    let read = run.events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult { call_id, output, .. } if call_id == "call_1" => Some(output.clone()),
        _ => None,
    });
    assert!(read.as_deref().is_some_and(|o| o.starts_with("exit status 0\n--- stdout ---\n")), "{read:?}");
}

/// The owner question of the partial episodes.
const OWNER_QUESTION: &str = "May I edit shop/gateway.py, or the records?";

/// `shop/checkout.py` of the payment-retry solution `solution`.
fn checkout(solution: &str) -> String {
    let package = example("payment-retry");
    fs_err::read_to_string(package.root().join("solutions").join(solution).join("shop/checkout.py")).unwrap()
}

/// The checks of a partial episode that asked once through MCP, failed its first submission
/// and was accepted at the second: the owner's answer and the feedback came back as the MCP
/// tools' results.
fn check_partial(run: &CliRun, requests: usize) {
    let episode = &run.detail.episode;
    assert_eq!(episode.end_reason, Some(EndReason::Accepted), "{episode:?}");
    assert_eq!((episode.final_score, run.detail.submissions.len()), (Some(1.0), 2), "{episode:?}");
    assert!(run.detail.submissions.iter().all(|s| !s.automatic));
    assert_eq!(run.requests.len(), requests, "stopped at the acceptance");
    let questions: Vec<&str> = run.detail.questions.iter().map(|q| q.question.text.as_str()).collect();
    assert_eq!(questions, [OWNER_QUESTION]);
    let bridge_calls = run.events.iter().filter(|e| matches!(e.kind, EventKind::BridgeCall { .. })).count();
    assert_eq!(bridge_calls, 3, "ask_user, submit, submit through the MCP server");
    let usage: Vec<_> = run.detail.usage.iter().filter(|u| u.role == Role::Agent).collect();
    let sum = |f: fn(&Tokens) -> u64| (1..=requests as u64).map(|n| f(&answer_tokens(n))).sum::<u64>();
    assert_eq!(
        (usage[0].usage.requests, usage[0].usage.input_tokens, usage[0].usage.output_tokens),
        (requests as u64, sum(|t| t.input), sum(|t| t.output))
    );
    assert!(!String::from_utf8_lossy(&run.everything_stored()).contains(canary_key()));
    assert_no_network_attempt(&run.events);
}

#[test]
fn claude_code_asks_the_owner_and_submits_through_mcp_reads_the_feedback_and_is_accepted() {
    let version = specgap_agents::cli::claude_code::DEFAULT_VERSION;
    let Some(_) = installed("claude-code") else { return };
    let call = |n: u64, name: &str, input: Value| {
        replies::anthropic_stream(MODEL, "", &[Call::new(&format!("toolu_{n}"), name, input)], answer_tokens(n))
    };
    let mock = MockUpstream::start([
        call(1, "Read", json!({"file_path": "/workspace/shop/checkout.py"})),
        call(2, "mcp__specgap__ask_user", json!({"question": OWNER_QUESTION})),
        call(3, "Write", json!({"file_path": "/workspace/shop/checkout.py", "content": checkout("literal")})),
        call(4, "mcp__specgap__submit", json!({"summary": "retries added"})),
        call(5, "Write", json!({"file_path": "/workspace/shop/checkout.py", "content": checkout("gold")})),
        call(6, "mcp__specgap__submit", json!({"summary": "retries only where they are safe"})),
    ])
    .unwrap();
    refuse_unscripted_anthropic(&mock);
    let config = vendor_config("claude-code", version, &mock);
    let run = run_cli(example("payment-retry"), "partial", "clean", "cli:claude-code", &config, &mock, BudgetFlags::default());
    check_common(&run.requests, "x-api-key", canary_key());
    let tools: Vec<String> =
        body(&run.requests[0])["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect();
    assert!(tools.contains(&"mcp__specgap__ask_user".to_string()) && tools.contains(&"mcp__specgap__submit".to_string()), "{tools:?}");
    // The condition's prompt names the tool as Claude Code shows it.
    let system = body(&run.requests[0])["system"].to_string();
    assert!(
        system.contains("You can put a question to the owner with `mcp__specgap__ask_user`; they answer from what they know."),
        "{system}"
    );
    assert!(system.contains("`submit` and `mcp__specgap__ask_user` each end the turn"), "{system}");
    let result_of = |request: usize, id: &str| -> String {
        body(&run.requests[request])["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
            .map(|b| b["content"].to_string())
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    let answer = &run.detail.questions[0].question.answer;
    assert!(result_of(2, "toolu_2").contains(&answer.trim().replace('"', "\\\"")), "the owner's answer is ask_user's result");
    assert!(result_of(4, "toolu_4").len() > 60, "the feedback is submit's result: {}", result_of(4, "toolu_4"));
    check_partial(&run, 6);
    assert_eq!(
        logged_actions(&run),
        [
            FileAction::on(ActionKind::Read, "shop/checkout.py", "Read", true),
            FileAction::on(ActionKind::Write, "shop/checkout.py", "Write", true),
            FileAction::on(ActionKind::Write, "shop/checkout.py", "Write", true),
        ]
    );
}

#[test]
fn claude_code_that_ends_its_run_after_a_returned_submission_is_resumed_with_the_feedback_and_accepted_at_k2() {
    let version = specgap_agents::cli::claude_code::DEFAULT_VERSION;
    let Some(_) = installed("claude-code") else { return };
    let say = |n: u64, text: &str| replies::anthropic_stream(MODEL, text, &[], answer_tokens(n));
    let call = |n: u64, name: &str, input: Value| {
        replies::anthropic_stream(MODEL, "", &[Call::new(&format!("toolu_{n}"), name, input)], answer_tokens(n))
    };
    let mock = MockUpstream::start([
        call(1, "Read", json!({"file_path": "/workspace/shop/checkout.py"})),
        call(2, "mcp__specgap__ask_user", json!({"question": OWNER_QUESTION})),
        call(3, "Write", json!({"file_path": "/workspace/shop/checkout.py", "content": checkout("literal")})),
        call(4, "mcp__specgap__submit", json!({"summary": "retries added"})),
        // It reads the feedback and ends its print-mode run.
        say(5, "Submitted."),
        // The resumed session (`--resume`) with the harness's message.
        call(6, "Write", json!({"file_path": "/workspace/shop/checkout.py", "content": checkout("gold")})),
        call(7, "mcp__specgap__submit", json!({"summary": "retries only where they are safe"})),
    ])
    .unwrap();
    refuse_unscripted_anthropic(&mock);
    let config = vendor_config("claude-code", version, &mock);
    let run = run_cli(example("payment-retry"), "partial", "clean", "cli:claude-code", &config, &mock, BudgetFlags::default());
    check_common(&run.requests, "x-api-key", canary_key());
    let feedback = check_resumed_after_a_returned_submission(&run, 7);
    let text_of = |m: &Value| match &m["content"] {
        Value::String(text) => text.clone(),
        content => content.as_array().map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<String>()).unwrap_or_default(),
    };
    assert_eq!(
        logged_actions(&run),
        [
            FileAction::on(ActionKind::Read, "shop/checkout.py", "Read", true),
            FileAction::on(ActionKind::Write, "shop/checkout.py", "Write", true),
            FileAction::on(ActionKind::Write, "shop/checkout.py", "Write", true),
        ]
    );
    let resumed = body(&run.requests[5]);
    let messages = resumed["messages"].as_array().unwrap();
    assert!(
        messages.iter().any(|m| m["role"] == "assistant" && text_of(m).contains("Submitted.")),
        "the resumed session holds the first run"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(text_of(last).contains("Your delivery (submission 1) was returned."), "{}", text_of(last));
    assert!(text_of(last).contains(feedback.trim()), "the resume repeats the owner's feedback: {}", text_of(last));
}

/// The checks of a partial episode whose CLI asked the owner once through MCP, ended its run
/// after its first submission was returned and was resumed with the feedback: accepted at
/// k = 2, one exit, usage equal to the mock's counts of `requests` answers (tokens of answers
/// 1..=requests); returns the feedback the engine sent.
fn check_resumed_after_a_returned_submission(run: &CliRun, requests: usize) -> String {
    let episode = &run.detail.episode;
    assert_eq!(episode.end_reason, Some(EndReason::Accepted), "{episode:?}");
    assert_eq!(episode.final_score, Some(1.0), "{episode:?}");
    let subs: Vec<_> = run.detail.submissions.iter().map(|s| (s.k, s.automatic, s.success)).collect();
    assert_eq!(subs, vec![(1, false, Some(false)), (2, false, Some(true))]);
    assert_eq!(run.requests.len(), requests, "stopped at the acceptance");
    let exits = run.events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count();
    assert_eq!(exits, 1, "it exited once, after the returned submission, and was resumed");
    assert_no_network_attempt(&run.events);
    let usage: Vec<_> = run.detail.usage.iter().filter(|u| u.role == Role::Agent).collect();
    assert_eq!(usage.len(), 1);
    let sum = |f: fn(&Tokens) -> u64| (1..=requests as u64).map(|n| f(&answer_tokens(n))).sum::<u64>();
    let u = &usage[0].usage;
    assert_eq!(
        (u.requests, u.input_tokens, u.output_tokens, u.cached_tokens),
        (requests as u64, sum(|t| t.input), sum(|t| t.output), sum(|t| t.cached)),
        "usage equals the mock's counts"
    );
    assert!(!String::from_utf8_lossy(&run.everything_stored()).contains(canary_key()), "the key is nowhere in the store");
    let feedback: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: specgap_protocol::event::UserMessageKind::Feedback, text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(feedback.len(), 1, "one returned submission");
    let questions: Vec<&str> = run.detail.questions.iter().map(|q| q.question.text.as_str()).collect();
    assert_eq!(questions, [OWNER_QUESTION], "it asked the owner once, through MCP");
    let bridge_calls = run.events.iter().filter(|e| matches!(e.kind, EventKind::BridgeCall { .. })).count();
    assert_eq!(bridge_calls, 3, "ask_user, submit, submit through the MCP server");
    feedback[0].clone()
}

/// A streamed Responses answer calling the MCP tool `name` of the namespace `mcp__specgap`
/// (how Codex CLI offers MCP tools: a `namespace` tool).
pub(crate) fn namespaced_call(n: u64, name: &str, arguments: Value) -> MockReply {
    let item = json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"), "namespace": "mcp__specgap",
                      "name": name, "arguments": arguments.to_string(), "status": "completed"});
    let t = answer_tokens(n);
    let usage = json!({"input_tokens": t.input, "input_tokens_details": {"cached_tokens": t.cached}, "output_tokens": t.output,
                       "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": t.input + t.output});
    let response = json!({"id": format!("resp_{n}"), "object": "response", "created_at": 0, "model": MODEL, "status": "completed",
                          "output": [item.clone()], "usage": usage});
    let line = |event: &str, data: Value| format!("event: {event}\ndata: {data}\n\n").into_bytes();
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    MockReply::sse(vec![
        line("response.created", json!({"type": "response.created", "response": created})),
        line("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 0, "item": item})),
        line("response.completed", json!({"type": "response.completed", "response": response})),
    ])
}

#[test]
fn codex_asks_the_owner_and_submits_through_mcp_reads_the_feedback_and_is_accepted() {
    let version = specgap_agents::cli::codex::DEFAULT_VERSION;
    let Some(_) = installed("codex") else { return };
    let exec = |n: u64, cmd: &str| {
        replies::responses_stream(MODEL, "", &[Call::new(&format!("call_{n}"), "exec_command", json!({"cmd": cmd}))], answer_tokens(n))
    };
    let write = |solution: &str| format!("cat > shop/checkout.py <<'SPECGAP_EOF'\n{}\nSPECGAP_EOF", checkout(solution).trim_end());
    let mock = MockUpstream::start([
        exec(1, "head -3 shop/checkout.py"),
        namespaced_call(2, "ask_user", json!({"question": OWNER_QUESTION})),
        exec(3, &write("literal")),
        namespaced_call(4, "submit", json!({"summary": "retries added"})),
        exec(5, &write("gold")),
        namespaced_call(6, "submit", json!({"summary": "retries only where they are safe"})),
    ])
    .unwrap();
    refuse_unscripted_openai(&mock);
    let config = vendor_config("codex", version, &mock);
    let run = run_cli(example("payment-retry"), "partial", "clean", "cli:codex", &config, &mock, BudgetFlags::default());
    check_common(&run.requests, "authorization", &format!("Bearer {}", canary_key()));
    let namespace = body(&run.requests[0])["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__specgap").cloned();
    let names: Vec<String> = namespace
        .map(|n| n["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    assert_eq!(names, ["ask_user", "submit"], "the harness tools as an MCP namespace");
    let output_of = |request: usize, id: &str| -> String {
        body(&run.requests[request])["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["type"] == "function_call_output" && m["call_id"] == id)
            .map(|m| m["output"].to_string())
            .unwrap_or_else(|| panic!("no output for {id}"))
    };
    let answer = &run.detail.questions[0].question.answer;
    assert!(output_of(2, "call_2").contains(&answer.trim().replace('"', "\\\"")), "{}", output_of(2, "call_2"));
    assert!(output_of(4, "call_4").len() > 60, "the feedback is submit's result: {}", output_of(4, "call_4"));
    check_partial(&run, 6);
}

/// Codex runs a tool call as soon as its item has streamed in, before the response ends
/// and the gateway records the exchange: the harness holds the call until that exchange is
/// handed out, so the trajectory shows the exchange (and the results its request carried)
/// before the call, and the call belongs to the turn that made it (the CI failure of stop 42).
#[test]
fn codex_submitting_while_its_response_still_streams_is_ordered_after_that_exchange() {
    let version = specgap_agents::cli::codex::DEFAULT_VERSION;
    let Some(_) = installed("codex") else { return };
    let write = format!("cat > shop/checkout.py <<'SPECGAP_EOF'\n{}\nSPECGAP_EOF\necho written", checkout("gold").trim_end());
    let mut submit = namespaced_call(2, "submit", json!({"summary": "retries only where they are safe"}));
    // The call's item, then a pause before `response.completed`.
    submit.chunk_delay = std::time::Duration::from_millis(400);
    let mock = MockUpstream::start([
        replies::responses_stream(MODEL, "", &[Call::new("call_1", "exec_command", json!({"cmd": write}))], answer_tokens(1)),
        submit,
    ])
    .unwrap();
    refuse_unscripted_openai(&mock);
    let config = vendor_config("codex", version, &mock);
    let run = run_cli(example("payment-retry"), "partial", "clean", "cli:codex", &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::Accepted), "{:?}", run.detail.episode);
    let order: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AgentTurn { turn, tool_calls, .. } => {
                Some(format!("turn {turn}: {}", tool_calls.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>().join(",")))
            }
            EventKind::ToolResult { call_id, tool, .. } => Some(format!("result {call_id} {tool}")),
            EventKind::BridgeCall { turn, call } => Some(format!("bridge call {} in turn {turn}", call.tool)),
            EventKind::Submission { .. } => Some("submission".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "turn 1: exec_command",
            "result call_1 exec_command",
            "turn 2: submit",
            "bridge call submit in turn 2",
            "submission",
            "result bridge-1 submit",
        ],
        "the exchange that carried the call comes first"
    );
}

#[test]
fn codex_that_ends_its_run_after_a_returned_submission_is_resumed_with_the_feedback_and_accepted_at_k2() {
    let version = specgap_agents::cli::codex::DEFAULT_VERSION;
    let Some(_) = installed("codex") else { return };
    let say = |n: u64, text: &str| replies::responses_stream(MODEL, text, &[], answer_tokens(n));
    let exec = |n: u64, cmd: &str| {
        replies::responses_stream(MODEL, "", &[Call::new(&format!("call_{n}"), "exec_command", json!({"cmd": cmd}))], answer_tokens(n))
    };
    let write = |solution: &str| format!("cat > shop/checkout.py <<'SPECGAP_EOF'\n{}\nSPECGAP_EOF", checkout(solution).trim_end());
    let mock = MockUpstream::start([
        exec(1, "head -3 shop/checkout.py"),
        namespaced_call(2, "ask_user", json!({"question": OWNER_QUESTION})),
        exec(3, &write("literal")),
        namespaced_call(4, "submit", json!({"summary": "retries added"})),
        // It reads the feedback and ends its `exec` run.
        say(5, "Submitted."),
        // The resumed session (`exec resume --last`) with the harness's message.
        exec(6, &write("gold")),
        namespaced_call(7, "submit", json!({"summary": "retries only where they are safe"})),
    ])
    .unwrap();
    refuse_unscripted_openai(&mock);
    let config = vendor_config("codex", version, &mock);
    let run = run_cli(example("payment-retry"), "partial", "clean", "cli:codex", &config, &mock, BudgetFlags::default());
    check_common(&run.requests, "authorization", &format!("Bearer {}", canary_key()));
    let feedback = check_resumed_after_a_returned_submission(&run, 7);
    let text_of = |m: &Value| match &m["content"] {
        Value::String(text) => text.clone(),
        content => content.as_array().map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<String>()).unwrap_or_default(),
    };
    let resumed = body(&run.requests[5]);
    let input = resumed["input"].as_array().unwrap();
    assert!(
        input.iter().any(|m| m["type"] == "function_call_output" && m["call_id"] == "call_4"),
        "the resumed session holds the first run's submit"
    );
    assert!(
        input.iter().any(|m| m["role"] == "assistant" && text_of(m).contains("Submitted.")),
        "the resumed session holds the first run's reply"
    );
    let last = input.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(text_of(last).contains("Your delivery (submission 1) was returned."), "{}", text_of(last));
    assert!(text_of(last).contains(feedback.trim()), "the resume repeats the owner's feedback: {}", text_of(last));
    assert_eq!(
        logged_actions(&run),
        Vec::<FileAction>::new(),
        "its shell writes are left to the report's shell analysis; it made no file_change"
    );
}

/// `cli:openhands` (issue 24 item 3): the real OpenHands SDK agent (its CLI-mode default agent on
/// the local workspace) against a scripted chat completions upstream, under `interact` through
/// its default channel: it asks under the heading in a reply without a tool call, the driver
/// ends, the customer's answers come back as the next user message of the persisted
/// conversation (the user-response callback served by the text exchange); it reads the data
/// with its terminal, writes the plan and calls `finish`, which is its submission.
#[test]
fn openhands_delivers_under_interact_asking_in_text_and_resuming_its_conversation() {
    let version = specgap_agents::cli::openhands::DEFAULT_VERSION;
    let Some(_) = installed("openhands") else { return };
    let plan = gold_plan();
    let say = |n: u64, text: &str| replies::openai_chat(MODEL, text, &[], answer_tokens(n));
    let call = |n: u64, tool: &str, arguments: Value| {
        replies::openai_chat(MODEL, "", &[Call::new(&format!("call_{n}"), tool, arguments)], answer_tokens(n))
    };
    let terminal = |cmd: &str| json!({"command": cmd, "security_risk": "LOW", "summary": "run"});
    let write = format!("cat > plan.json <<'SPECGAP_EOF'\n{}\nSPECGAP_EOF", plan.trim_end());
    let script: Vec<MockReply> = vec![
        say(0, QUESTIONS),
        call(1, "terminal", terminal("cat data/README.md")),
        call(2, "terminal", terminal(&write)),
        call(3, "finish", json!({"message": "The plan is in plan.json.", "summary": "done"})),
    ];
    let mock = MockUpstream::start(script).unwrap();
    refuse_unscripted_openai(&mock);
    let mut config = vendor_config("openhands", version, &mock);
    config.resolve_ask_channel(None).unwrap();
    assert_eq!(config.ask_channel, Some(AskChannel::Text), "its default channel");
    let run = run_cli(example("retail-replenishment"), "interact", "clean", "cli:openhands", &config, &mock, BudgetFlags::default());
    let requests = &run.requests;
    let exits: Vec<String> =
        run.events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).map(|e| format!("{:?}", e.kind)).collect();
    assert_eq!(
        requests.len(),
        4,
        "every request is a main-loop turn: {:?} {exits:?}",
        requests.iter().map(ReceivedRequest::path).collect::<Vec<_>>()
    );
    check_common(requests, "authorization", &format!("Bearer {}", canary_key()));
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.path(), "/v1/chat/completions", "request {i}");
        let body = body(request);
        let tools: Vec<&str> = body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
        for tool in ["terminal", "file_editor", "task_tracker", "finish"] {
            assert!(tools.contains(&tool), "request {i}: {tools:?}");
        }
        assert!(!tools.iter().any(|t| t.contains("browser")), "request {i}: no browser tool: {tools:?}");
        assert!(!tools.iter().any(|t| t.contains("ask_user")), "request {i}: the text channel offers no ask_user: {tools:?}");
    }
    let resumed = body(&requests[1]);
    let messages = resumed["messages"].as_array().unwrap();
    assert!(
        messages.iter().any(|m| m["role"] == "assistant" && m.to_string().contains("Which currency")),
        "the resumed conversation carries the first turn"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    let answers = answers_message(&run);
    assert!(last.to_string().contains(serde_json::to_string(&answers).unwrap().trim_matches('"')), "{last}");
    let episode = &run.detail.episode;
    assert_eq!(episode.final_score, Some(1.0), "{episode:?}");
    assert_eq!(run.detail.submissions.len(), 1);
    assert!(!run.detail.submissions[0].automatic, "finish is its own submission");
    let exits = run.events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count();
    assert!(exits >= 1, "the first start ended with questions");
    let read = run.events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult { call_id, output, .. } if call_id == "call_1" => Some(output.clone()),
        _ => None,
    });
    assert!(read.as_deref().is_some_and(|o| o.starts_with("exit status 0\n--- stdout ---\n")), "{read:?}");
    let stored = run.everything_stored();
    assert!(!String::from_utf8_lossy(&stored).contains(canary_key()), "the key is nowhere in the store");
    assert_no_network_attempt(&run.events);
}
