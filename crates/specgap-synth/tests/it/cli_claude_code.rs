//! `cli:claude-code` roles (issue 27, Tests: "the same with `cli:claude-code` ... roles against
//! your scripted mocks"): the Planner and the Auditor played by the real pinned Claude Code
//! CLI (installed by `specgap agents install claude-code` into the shared test cache; with
//! `SPECGAP_REQUIRE_EXTERNAL=1` a missing installation fails the test) behind the real gateway
//! and sandbox, against a scripted mock speaking Anthropic Messages. Each writes its hand-off
//! with its own `Bash` tool to `/handoff/handoff.json`; the Builder and the Calibrator are
//! scripted. Checked: the exact hand-offs, the journal's roles and usage, and every request the
//! mock got (path, key, model, tools as Claude Code shows them, the role's prompt and message).
//!
//! Claude Code is offered the harness's MCP server, so the run needs the `specgap-bridge`
//! binary beside the test binary (`cargo build -p specgap-cli --bins`); without it the test is
//! skipped, or fails under `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use specgap_agents::cli::CliConfig;
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_synth::cli_role::CliRole;
use specgap_synth::role::{Role, RoleName};

use crate::support::{Scripts, accepted_at_first_iteration, audit_pass, brief, package_copy, steps, without_latency, write_handoff};

const MODEL: &str = "mock-claude-role-model";
const KEY_ENV: &str = "SPECGAP_TEST_SYNTH_CLAUDE_KEY";
const KEY: &str = "sk-ant-synth-claude-test";

/// Tokens of the mock's `n`-th answer (distinct, so sums are checkable).
fn tokens(n: u64) -> Tokens {
    Tokens { input: 2000 + n, output: 200 + n, cached: n, ..Tokens::default() }
}

/// An answer calling Claude Code's `Bash` tool with `command` (call id `toolu_<n>`).
fn bash(n: u64, command: &str) -> MockReply {
    let call = [Call::new(&format!("toolu_{n}"), "Bash", json!({ "command": command, "description": "write the hand-off" }))];
    replies::anthropic_stream(MODEL, "", &call, tokens(n))
}

/// An answer without a tool call: Claude Code ends its turn and exits.
fn say(n: u64, text: &str) -> MockReply {
    replies::anthropic_stream(MODEL, text, &[], tokens(n))
}

fn config(mock: &MockUpstream) -> CliConfig {
    let mut config = CliConfig::new("claude-code", MODEL);
    config.version = Some(specgap_agents::cli::claude_code::DEFAULT_VERSION.into());
    config.endpoint.base_url = format!("{}/v1", mock.url());
    config.endpoint.api_key_env = KEY_ENV.into();
    config.endpoint.retry_base_ms = 1;
    config.endpoint.max_retries = 1;
    config.stop_grace_ms = 500;
    config
}

fn claude_role(mock: &MockUpstream, role: RoleName, runs: &Path) -> Box<dyn Role> {
    Box::new(CliRole::new("cli:claude-code", config(mock), role, runs.to_owned(), Duration::from_secs(600)))
}

/// Whether `specgap-bridge` is built beside this test binary (`target/<profile>/`).
fn have_bridge() -> bool {
    let exe = std::env::current_exe().unwrap();
    let bridge = exe.ancestors().nth(2).unwrap().join("specgap-bridge");
    specgap_test_support::external::have_file(&bridge, &format!("{} is missing (cargo build -p specgap-cli --bins)", bridge.display()))
}

fn body(request: &ReceivedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

fn usage_of(requests: &[u64]) -> Value {
    json!({
        "input_tokens": requests.iter().map(|n| tokens(*n).input).sum::<u64>(),
        "output_tokens": requests.iter().map(|n| tokens(*n).output).sum::<u64>(),
        "cached_tokens": requests.iter().sum::<u64>(),
        "reasoning_tokens": 0, "requests": requests.len(), "retries": 0, "cost_usd": 0.0
    })
}

/// The text of every user message of a request, its text blocks joined.
fn user_text(request: &ReceivedRequest) -> String {
    let mut text = String::new();
    for message in body(request)["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user") {
        match &message["content"] {
            Value::String(s) => text.push_str(s),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).for_each(|t| text.push_str(t)),
            _ => {}
        }
    }
    text
}

/// The `tool_result` content the request carries for the call `id`, as JSON text.
fn tool_result(request: &ReceivedRequest, id: &str) -> Option<String> {
    body(request)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        .map(|b| b["content"].to_string())
}

#[test]
fn claude_code_planner_and_auditor_drive_payment_retry_to_ready_writing_their_hand_offs_with_bash() {
    let Some(_) = specgap_test_support::installs::installed_adapter("claude-code") else { return };
    if !have_bridge() {
        return;
    }
    // SAFETY: set only here, always to the same value.
    unsafe { std::env::set_var(KEY_ENV, KEY) };
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let runs: PathBuf = scripts.tmp.path().join("runs");
    let planner_guard = "test -f /source/instruction.full.md && test ! -e /package";
    let auditor_guard = "test -f /package/evaluator/evaluate.py && test ! -e /source && ! touch /package/x 2>/dev/null";
    let mock = MockUpstream::start([
        bash(1, &write_handoff(planner_guard, &brief())),
        say(2, "The brief is in /handoff/handoff.json."),
        bash(3, &write_handoff(auditor_guard, &audit_pass()["reply"])),
        say(4, "The verdict is in /handoff/handoff.json."),
    ])
    .unwrap();
    mock.set_fallback(MockReply::json(500, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"unscripted request\"}}"));
    let planner = claude_role(&mock, RoleName::Planner, &runs);
    let auditor = claude_role(&mock, RoleName::Auditor, &runs);
    let done = scripts.run_planner_and_auditor(planner, auditor, &good).unwrap();
    assert_eq!((done.designs, done.iterations), (1, 1));

    let journal = scripts.journal();
    assert_eq!(steps(&journal), accepted_at_first_iteration(1));
    let entries = journal["entries"].as_array().unwrap();
    // The hand-offs, exactly as the roles' Bash tool wrote them.
    let written = |run: &str| fs_err::read_to_string(runs.join(run).join("handoff/handoff.json")).unwrap();
    assert_eq!(written("planner-1"), format!("{}\n", brief()));
    assert_eq!(written("auditor-1"), format!("{}\n", audit_pass()["reply"]));
    assert_eq!(entries[0]["reply"], written("planner-1"));
    assert_eq!(entries[0]["detail"], brief());
    assert_eq!(entries[3]["reply"], written("auditor-1"));
    assert_eq!(entries[3]["detail"]["verdict"], "pass");
    assert_eq!(entries[3]["detail"]["evidence"], audit_pass()["reply"]["evidence"]);
    assert_eq!(journal["roles"]["planner"], "cli:claude-code");
    assert_eq!(journal["roles"]["auditor"], "cli:claude-code");
    assert_eq!(journal["outcome"]["status"], "ready");
    // Usage: each role's run as the gateway counted the mock's answers; scripts spend nothing.
    assert_eq!(without_latency(entries[0]["usage"].clone()), usage_of(&[1, 2]));
    assert_eq!(without_latency(entries[3]["usage"].clone()), usage_of(&[3, 4]));
    assert_eq!(without_latency(journal["usage"]["planner"].clone()), usage_of(&[1, 2]));
    assert_eq!(without_latency(journal["usage"]["auditor"].clone()), usage_of(&[3, 4]));
    let spent: Vec<&String> = journal["usage"].as_object().unwrap().keys().collect();
    assert_eq!(spent, ["auditor", "planner"]);

    // Every request the mock got: a main-loop turn of Claude Code's own protocol, with the
    // real key, the one model, its own tools, the role's prompt and message.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "two turns per role run, no side requests");
    let prompts = [("planner", 0..2), ("auditor", 2..4)];
    for (role, range) in prompts {
        let prompt = fs_err::read_to_string(scripts.out().join(format!("prompts/{role}.md"))).unwrap();
        let first_line = prompt.lines().find(|l| !l.trim().is_empty()).unwrap().to_owned();
        for i in range {
            let request = &requests[i];
            assert_eq!((request.method.as_str(), request.path(), request.query()), ("POST", "/v1/messages", "beta=true"), "request {i}");
            assert_eq!(request.header("x-api-key"), Some(KEY), "request {i} carries the real key");
            assert!(!request.contains("sgw-"), "request {i} carries the sandbox's token");
            let body = body(request);
            assert_eq!(body["model"], MODEL, "request {i}");
            assert_eq!(body["stream"], true, "request {i}");
            let tools: Vec<&str> = body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
            for tool in ["Bash", "Read", "Write", "Edit"] {
                assert!(tools.contains(&tool), "request {i} offers {tool}: {tools:?}");
            }
            assert!(!tools.contains(&"WebSearch") && !tools.contains(&"WebFetch"), "request {i}: {tools:?}");
            // The role's filled prompt is the system prompt (--append-system-prompt).
            assert!(body["system"].to_string().contains(&first_line.replace('"', "\\\"")), "request {i} has the {role} prompt");
        }
    }
    let planner_message = user_text(&requests[0]);
    assert!(planner_message.contains("What you can see:\n- /source (read-only)\n- /handoff (writable)\n"), "{planner_message}");
    assert!(planner_message.contains("write your JSON hand-off, and nothing else, to /handoff/handoff.json"), "{planner_message}");
    assert!(!planner_message.contains("refused"));
    let auditor_message = user_text(&requests[2]);
    assert!(auditor_message.contains("What you can see:\n- /package (read-only)\n- /handoff (writable)\n"), "{auditor_message}");
    // Each second turn carries its Bash call's result (a heredoc prints nothing); each role
    // run is fresh: the auditor's first request carries none of the planner's turns.
    for (request, id) in [(1, "toolu_1"), (3, "toolu_3")] {
        assert!(tool_result(&requests[request], id).is_some(), "request {request} carries the result of {id}");
    }
    assert_eq!(tool_result(&requests[2], "toolu_1"), None);
    let roles_in = |request: &ReceivedRequest| -> Vec<String> {
        body(request)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["role"].as_str().map(str::to_owned))
            .filter(|r| r != "system")
            .collect()
    };
    assert_eq!(roles_in(&requests[2]), ["user"], "the auditor's run starts afresh");
    assert!(!auditor_message.contains("/source"), "{auditor_message}");
    for run in ["planner-1", "auditor-1"] {
        assert!(runs.join(run).join("record/trajectory.jsonl").is_file(), "{run}");
    }
}
