//! A `cli:command` agent (our small test script) end to end through the harness tools inside
//! its sandbox (issue 14 item 5): it reads a file, asks the owner with the `ask_user` command,
//! writes a first fix, hands it in with `submit`, reads the owner's feedback in `submit`'s
//! output, writes the right fix and submits again. Every model request reaches the scripted
//! mock through the gateway; the relay owner answers from the bundled package.

use serde_json::Value;
use specgap_agents::cli::channel::AskChannel;
use specgap_engine::condition::BudgetFlags;
use specgap_gateway::mock::MockUpstream;
use specgap_protocol::event::{EventKind, UserMessageKind};
use specgap_protocol::run::EndReason;
use specgap_store::{Role, Status};

use crate::cli_support::*;

const SPEC: &str = "cli:command=python3 cli-agent.py";
const QUESTION: &str = "May I edit shop/gateway.py, or the records?";

/// A shell command that writes `file` of the package's solution `solution` into the workspace
/// (the agent's own sandbox cannot see the package, so the bytes travel in the command).
fn write_solution(solution: &str, file: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/payment-retry/solutions");
    let bytes = std::fs::read(root.join(solution).join(file)).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("python3 -c \"import sys; open('{file}', 'wb').write(bytes.fromhex(sys.argv[1]))\" {hex}")
}

/// The text of the tool message answering `call_id` in a request the agent sent.
fn tool_message(request: &specgap_gateway::mock::ReceivedRequest, call_id: &str) -> String {
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))
        .to_string()
}

#[test]
fn a_cli_command_agent_asks_the_owner_submits_reads_the_feedback_fixes_and_is_accepted() {
    let mock = MockUpstream::start([
        bash(1, "head -3 shop/checkout.py", false),
        bash(2, &format!("ask_user '{QUESTION}'"), false),
        bash(3, &write_solution("literal", "shop/checkout.py"), false),
        bash(4, "submit 'retries added'", false),
        bash(5, &write_solution("gold", "shop/checkout.py"), false),
        bash(6, "submit 'retries only where safe'", false),
    ])
    .unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(example("payment-retry"), "partial", "clean", SPEC, &config, &mock, BudgetFlags::default());
    let episode = &run.detail.episode;
    assert_eq!((episode.status, episode.end_reason), (Status::Finished, Some(EndReason::Accepted)));
    assert_eq!((episode.turns, episode.tool_calls), (6, 6), "the harness commands are counted once, as the bash calls that ran them");
    assert_eq!(run.requests.len(), 6, "the agent was stopped at the acceptance: no seventh request");
    check_requests(&run.requests);

    // The owner's answer, as the relay gives it from user.toml, reached the agent as the
    // output of its `ask_user` command.
    let asked = &run.detail.questions;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let answer = run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult { tool, output, .. } if tool == "ask_user" => Some(output.clone()),
            _ => None,
        })
        .expect("the ask_user call's result is recorded");
    assert_eq!(
        answer,
        "Anything under shop/ except shop/gateway.py, which mirrors Paylane's SDK; the records are history and stay as they are."
    );
    assert_eq!(tool_message(&run.requests[2], "call-2"), format!("exit status 0\n--- stdout ---\n{answer}\n"));

    // The first submission failed: its feedback was `submit`'s output (exit status 1); the
    // second was accepted. Both were the agent's own.
    let subs: Vec<_> = run.detail.submissions.iter().map(|s| (s.k, s.automatic, s.agent_declared, s.success)).collect();
    assert_eq!(subs, vec![(1, false, true, Some(false)), (2, false, true, Some(true))]);
    let scores: Vec<Option<f64>> = run.detail.submissions.iter().map(|s| s.score).collect();
    assert_eq!(scores[1], Some(1.0), "Score@2 = 1");
    assert!(scores[0].is_some_and(|s| s < 1.0), "{scores:?}");
    let feedback = tool_message(&run.requests[4], "call-4");
    assert!(feedback.starts_with("exit status 1\n"), "{feedback}");
    let owner_message = run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::UserMessage { text, .. } => Some(text.clone()),
            _ => None,
        })
        .expect("the owner's feedback is recorded");
    assert!(feedback.contains(owner_message.trim()), "the owner's feedback is in submit's output:\n{feedback}\n---\n{owner_message}");

    // Every request and its answer is in the trajectory; usage is the mock's exact counts.
    let exchanges = run.events.iter().filter(|e| matches!(e.kind, EventKind::ModelExchange { .. })).count();
    assert_eq!(exchanges, 6);
    let bridge_calls: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::BridgeCall { call, .. } => Some(call.tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(bridge_calls, ["ask_user", "submit", "submit"]);
    let rows: Vec<_> = run.detail.usage.iter().filter(|u| u.role == Role::Agent).collect();
    assert_eq!(rows.len(), 1);
    let usage = &rows[0].usage;
    assert_eq!(
        (usage.requests, usage.input_tokens, usage.output_tokens, usage.cached_tokens),
        (6, (101..=106).sum::<u64>(), (11..=16).sum::<u64>(), (1..=6).sum::<u64>())
    );
}

/// A small MCP client run by the agent's shell: starts the server its MCP configuration
/// (`$SPECGAP_MCP_CONFIG`) names, lists the tools and calls `ask_user`, printing the tool
/// names and the answer.
const MCP_CLIENT: &str = r#"
import json, os, subprocess
server = json.load(open(os.environ["SPECGAP_MCP_CONFIG"]))["mcpServers"]["specgap"]
proc = subprocess.Popen([server["command"]] + server["args"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **server["env"]})
def send(message):
    proc.stdin.write((json.dumps(message) + "\n").encode()); proc.stdin.flush()
def receive(id):
    while True:
        reply = json.loads(proc.stdout.readline())
        if reply.get("id") == id:
            return reply
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
receive(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
print(" ".join(tool["name"] for tool in receive(1)["result"]["tools"]))
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user", "arguments": {"question": "May I edit shop/gateway.py, or the records?"}}})
print(receive(2)["result"]["content"][0]["text"])
proc.stdin.close(); proc.wait()
"#;

#[test]
fn a_cli_agent_reaches_the_owner_through_the_mcp_server_its_configuration_names() {
    let hex: String = MCP_CLIENT.bytes().map(|b| format!("{b:02x}")).collect();
    let client = format!("python3 -c \"exec(bytes.fromhex('{hex}').decode())\"");
    let mock = MockUpstream::start([bash(1, &client, false), done(2, "Asked.", false)]).unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(example("payment-retry"), "partial", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    assert_eq!(run.requests.len(), 2);
    check_requests(&run.requests);
    let answer = "Anything under shop/ except shop/gateway.py, which mirrors Paylane's SDK; the records are history and stay as they are.";
    assert_eq!(tool_message(&run.requests[1], "call-1"), format!("exit status 0\n--- stdout ---\nask_user submit\n{answer}\n"));
    let calls: Vec<(String, Value)> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::BridgeCall { call, .. } => Some((call.tool.clone(), call.arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [("ask_user".to_string(), serde_json::json!({"question": "May I edit shop/gateway.py, or the records?"}))]);
    assert_eq!(run.detail.questions.len(), 1);
}

/// An MCP client that only lists the harness tools, printing their names.
const MCP_LISTER: &str = r#"
import json, os, subprocess
server = json.load(open(os.environ["SPECGAP_MCP_CONFIG"]))["mcpServers"]["specgap"]
proc = subprocess.Popen([server["command"]] + server["args"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **server["env"]})
def send(message):
    proc.stdin.write((json.dumps(message) + "\n").encode()); proc.stdin.flush()
def receive(id):
    while True:
        reply = json.loads(proc.stdout.readline())
        if reply.get("id") == id:
            return reply
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
receive(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
print(" ".join(tool["name"] for tool in receive(1)["result"]["tools"]))
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user", "arguments": {"question": "May I?"}}})
reply = receive(2)
print("refused" if "error" in reply or reply.get("result", {}).get("isError") else "answered")
proc.stdin.close(); proc.wait()
"#;

/// What the agent's shell sees of `ask_user` under `channel` and `condition` (a task and a
/// condition name): the MCP server's tool list, the fate of an `ask_user` call through it,
/// and whether the `ask_user` command exists; and how many questions reached the user.
fn harness_tools_seen(channel: AskChannel, task: &str, condition: &str) -> (String, usize) {
    let hex: String = MCP_LISTER.bytes().map(|b| format!("{b:02x}")).collect();
    let probe =
        format!("python3 -c \"exec(bytes.fromhex('{hex}').decode())\"; command -v ask_user || echo no-ask_user-command; command -v submit");
    // Under a delivery condition the exit without a deliverable is answered with up to three
    // continuation messages, each a resumed start that stops at once.
    let mock = MockUpstream::start([
        bash(1, &probe, false),
        done(2, "Looked.", false),
        done(3, "Stopping.", false),
        done(4, "Stopping.", false),
        done(5, "Stopping.", false),
    ])
    .unwrap();
    let mut config = command_config(&mock, false);
    config.ask_channel = Some(channel);
    let run = run_cli(example(task), condition, "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    check_requests(&run.requests);
    (tool_message(&run.requests[1], "call-1"), run.detail.questions.len())
}

const WITHOUT_ASK_USER: &str = "exit status 0\n--- stdout ---\nsubmit\nrefused\nno-ask_user-command\n/run/specgap/bin/submit\n";
const WITH_ASK_USER: &str =
    "exit status 0\n--- stdout ---\nask_user submit\nanswered\n/run/specgap/bin/ask_user\n/run/specgap/bin/submit\n";

#[test]
fn under_the_text_channel_ask_user_is_neither_an_mcp_tool_nor_a_command_in_a_delivery_condition() {
    let (seen, questions) = harness_tools_seen(AskChannel::Text, "retail-replenishment", "interact");
    assert_eq!(seen, WITHOUT_ASK_USER);
    assert_eq!(questions, 0, "no question reached the customer");
}

#[test]
fn under_the_mcp_channel_ask_user_is_an_mcp_tool_and_a_command_in_a_delivery_condition() {
    let (seen, questions) = harness_tools_seen(AskChannel::Mcp, "retail-replenishment", "interact");
    assert_eq!(seen, WITH_ASK_USER);
    assert_eq!(questions, 1);
}

#[test]
fn under_the_text_channel_an_owner_condition_still_offers_ask_user_having_no_text_exchange() {
    let (seen, questions) = harness_tools_seen(AskChannel::Text, "payment-retry", "partial");
    assert_eq!(seen, WITH_ASK_USER);
    assert_eq!(questions, 1);
}

#[test]
fn a_cli_agent_that_exits_after_its_returned_submission_is_resumed_with_the_feedback_and_accepted_at_k2() {
    let mock = MockUpstream::start([
        bash(1, &write_solution("literal", "shop/checkout.py"), false),
        bash(2, "submit 'retries added'", false),
        done(3, "Submitted; stopping here.", false),
        // The resumed start: a new conversation whose first message is the harness's.
        bash(4, &write_solution("gold", "shop/checkout.py"), false),
        bash(5, "submit 'retries only where safe'", false),
    ])
    .unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(example("payment-retry"), "partial", "clean", SPEC, &config, &mock, BudgetFlags::default());
    let episode = &run.detail.episode;
    assert_eq!((episode.status, episode.end_reason), (Status::Finished, Some(EndReason::Accepted)));
    assert_eq!(run.requests.len(), 5);
    check_requests(&run.requests);
    let subs: Vec<_> = run.detail.submissions.iter().map(|s| (s.k, s.automatic, s.success)).collect();
    assert_eq!(subs, vec![(1, false, Some(false)), (2, false, Some(true))]);

    let messages = |kind: UserMessageKind| -> Vec<String> {
        run.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::UserMessage { kind: k, text, .. } if *k == kind => Some(text.clone()),
                _ => None,
            })
            .collect()
    };
    let feedback = messages(UserMessageKind::Feedback);
    assert_eq!(feedback.len(), 1);
    let resume = format!(
        "Your delivery (submission 1) was returned. The owner's message about it:\n\n{}\n\nYou have 3 submissions left. Carry on with the work in the workspace and submit again when it is ready.",
        feedback[0].trim()
    );
    assert_eq!(messages(UserMessageKind::Continuation), std::slice::from_ref(&resume));
    let exits: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AgentExit { how, .. } => Some(how.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(exits, ["exited"], "one exit, then the resumed start was accepted");
    // The resumed start's first request opens with the harness's message, as the script read
    // it from its instruction file.
    let body: Value = serde_json::from_slice(&run.requests[3].body).unwrap();
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][0]["content"].as_str(), Some(resume.as_str()));
}
