//! `chat:<model>` roles against a scripted mock model server: every request is checked (the
//! role's prompt as the system message, what the role is shown, the retry after a malformed
//! answer), and payment-retry is driven to `ready` with exact journal steps and usage.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use specgap_gateway::mock::replies::{Tokens, openai_chat};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_synth::chat::unfence;
use specgap_synth::pipeline::{Config, Limits, Roles, SynthError, synthesize};
use specgap_synth::prompts::Prompts;
use specgap_synth::role::{ChatEndpoint, Role, RoleName, RoleRequest, role_from_spec_with};

use crate::support::{accepted_at_first_iteration, audit_pass, brief, calibrate_ready, payment_retry, step, steps};

const TOKENS: Tokens = Tokens { input: 100, output: 20, cached: 0, cache_creation: 0, reasoning: 0 };

/// A mock answering the n-th request with `replies[n]` (each 100 prompt + 20 completion tokens).
fn mock(replies: Vec<String>) -> MockUpstream {
    let upstream = MockUpstream::start([]).unwrap();
    let next = Arc::new(AtomicUsize::new(0));
    upstream.set_responder(move |_| {
        let n = next.fetch_add(1, Ordering::SeqCst);
        match replies.get(n) {
            Some(text) => openai_chat("role-model", text, &[], TOKENS),
            None => MockReply::json(400, format!("{{\"error\": \"no reply scripted for request {n}\"}}")),
        }
    });
    upstream
}

/// Every file of payment-retry as a Builder `files` object under `payment-retry/`.
fn package_files() -> Value {
    let root = payment_retry();
    let mut files = serde_json::Map::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let relative = entry.path().strip_prefix(&root).unwrap().to_str().unwrap().to_owned();
            files.insert(format!("payment-retry/{relative}"), Value::String(fs_err::read_to_string(entry.path()).unwrap()));
        }
    }
    Value::Object(files)
}

fn roles(upstream: &MockUpstream) -> Roles {
    let endpoint = ChatEndpoint { base_url: format!("{}/v1", upstream.url()), ..ChatEndpoint::default() };
    let role = |name| role_from_spec_with("chat:role-model", name, &endpoint).unwrap();
    Roles {
        planner: role(RoleName::Planner),
        builder: role(RoleName::Builder),
        auditor: role(RoleName::Auditor),
        calibrator: role(RoleName::Calibrator),
        implementer: None,
        reference: None,
    }
}

fn body(request: &ReceivedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

/// `(role, content)` of each message of a request.
fn messages(request: &ReceivedRequest) -> Vec<(String, String)> {
    body(request)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

fn first_line(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap().lines().next().unwrap().to_owned()
}

#[test]
fn chat_roles_drive_payment_retry_to_ready_with_every_request_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let builder_reply = json!({"package": "payment-retry", "summary": "wrote payment-retry", "files": package_files()});
    let upstream = mock(vec![
        "I would rather describe the task in prose.".into(),
        format!("```json\n{}\n```", brief()),
        builder_reply.to_string(),
        audit_pass()["reply"].to_string(),
        calibrate_ready()["reply"].to_string(),
    ]);
    let mut roles = roles(&upstream);
    let config =
        Config { source: payment_retry(), out: out.clone(), limits: Limits::default(), prompts: Prompts::default(), resume: false };
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let done = synthesize(&config, &mut roles, &judge).unwrap();
    assert_eq!((done.designs, done.iterations), (1, 1));
    assert_eq!(
        fs_err::read_to_string(out.join("package/workspace/shop/checkout.py")).unwrap(),
        fs_err::read_to_string(payment_retry().join("workspace/shop/checkout.py")).unwrap()
    );

    let journal: Value = serde_json::from_str(&fs_err::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    let mut expected = vec![step("planner", 1, 0, 1, "malformed")];
    expected.extend(accepted_at_first_iteration(2));
    assert_eq!(steps(&journal), expected);
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries[1]["detail"], brief());
    assert_eq!(journal["roles"]["planner"], "chat:role-model");
    let one = |requests: u64| {
        json!({"input_tokens": 100 * requests, "output_tokens": 20 * requests, "cached_tokens": 0, "reasoning_tokens": 0,
               "requests": requests, "retries": 0, "cost_usd": 0.0})
    };
    let without_latency = |mut usage: Value| {
        usage.as_object_mut().unwrap().remove("latency_ms");
        usage
    };
    assert_eq!(without_latency(entries[0]["usage"].clone()), one(1));
    assert_eq!(entries[3].get("usage"), None, "acceptance checks spend no tokens");
    assert_eq!(without_latency(journal["usage"]["planner"].clone()), one(2));
    assert_eq!(without_latency(journal["usage"]["calibrator"].clone()), one(1));
    assert_eq!(journal["usage"].as_object().unwrap().len(), 4);

    let requests = upstream.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests.iter().all(|r| r.path() == "/v1/chat/completions" && body(r)["model"] == "role-model"));
    let prompt_head = |role: &str| first_line(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("prompts/{role}.md")));

    // The Planner: its prompt, and the source task's files.
    let planner = messages(&requests[0]);
    assert_eq!(planner.len(), 2);
    assert_eq!(planner[0].0, "system");
    assert!(planner[0].1.starts_with(&prompt_head("planner")));
    let instruction_full = fs_err::read_to_string(payment_retry().join("instruction.full.md")).unwrap();
    assert!(planner[1].1.contains(&format!("--- instruction.full.md ---\n{instruction_full}")));
    assert!(!planner[1].1.contains("`files` object"), "the planner writes nothing");

    // The retry continues the conversation with the refused answer and the reason.
    let retry = messages(&requests[1]);
    assert_eq!(retry[..2], planner[..]);
    assert_eq!(retry[2], ("assistant".to_owned(), "I would rather describe the task in prose.".to_owned()));
    assert_eq!(retry[3].0, "user");
    assert_eq!(
        retry[3].1,
        format!("That answer was refused: {}\nSend the corrected JSON hand-off only.", entries[0]["detail"].as_str().unwrap())
    );
    assert!(retry[3].1.contains("the planner hand-off does not match its schema"));

    // The Builder: its prompt with the brief, an empty working directory, the files note.
    let builder = messages(&requests[2]);
    assert!(builder[0].1.starts_with(&prompt_head("builder")));
    assert!(builder[0].1.contains("\"terminal_outcome\""));
    assert!(builder[1].1.contains("(no files)"));
    assert!(builder[1].1.contains("`files` object"));

    // The Auditor: the package with its evaluator, read-only.
    let auditor = messages(&requests[3]);
    assert!(auditor[0].1.starts_with(&prompt_head("auditor")));
    let evaluator = fs_err::read_to_string(payment_retry().join("evaluator/evaluate.py")).unwrap();
    assert!(auditor[1].1.contains(&format!("--- evaluator/evaluate.py ---\n{evaluator}")));
    assert!(!auditor[1].1.contains("`files` object"));

    // The Calibrator: its prompt and the (empty) rollouts, no files.
    let calibrator = messages(&requests[4]);
    assert!(calibrator[0].1.starts_with(&prompt_head("calibrator")));
    assert!(calibrator[1].1.contains("\"rollouts\": []"));
    assert!(!calibrator[1].1.contains("--- "));
}

#[test]
fn the_token_cap_stops_the_synthesis_after_the_answer_that_goes_over() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let upstream = mock(vec!["not json".into(), brief().to_string()]);
    let mut roles = roles(&upstream);
    let limits = Limits { max_tokens: Some(150), ..Limits::default() };
    let config = Config { source: payment_retry(), out: out.clone(), limits, prompts: Prompts::default(), resume: false };
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let err = synthesize(&config, &mut roles, &judge).unwrap_err();
    assert!(matches!(err, SynthError::TokenCap { cap: 150, spent: 240 }), "{err:?}");
    assert_eq!(err.to_string(), "the roles and rollouts spent 240 tokens, more than --max-tokens 150");
    let journal: Value = serde_json::from_str(&fs_err::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    assert_eq!(steps(&journal), vec![step("planner", 1, 0, 1, "malformed"), step("planner", 1, 0, 2, "accepted")]);
    assert_eq!(journal["outcome"]["status"], "failed");
    assert_eq!(journal["limits"]["max_tokens"], 150);
}

#[test]
fn a_failing_model_request_stops_the_synthesis_and_journals_what_it_spent() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let upstream = mock(vec![]);
    let mut roles = roles(&upstream);
    let config =
        Config { source: payment_retry(), out: out.clone(), limits: Limits::default(), prompts: Prompts::default(), resume: false };
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let err = synthesize(&config, &mut roles, &judge).unwrap_err();
    let chain = specgap_protocol::text::error_chain(&err);
    assert_eq!(
        chain,
        "the planner could not answer: the planner's model request failed: model service rejected the request with http 400: {\"error\": \"no reply scripted for request 0\"}"
    );
    let journal: Value = serde_json::from_str(&fs_err::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    assert_eq!(steps(&journal), vec![step("planner", 1, 0, 1, "error")]);
    assert_eq!(journal["entries"][0]["usage"]["requests"], 1);
}

#[test]
fn a_chat_builder_file_outside_the_working_directory_is_refused_by_name() {
    let limits = specgap_synth::handoff::BriefLimits::default();
    for path in ["../escape.py", "/etc/passwd", "a/./b", "a//b", ""] {
        let reply = json!({"package": ".", "summary": "s", "files": {path: "x"}}).to_string();
        let err = specgap_synth::handoff::parse::<specgap_synth::handoff::BuilderHandoff>(&reply, &limits).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the builder hand-off breaks a rule at `files.{path}`: a file path must be relative to the working directory, without `..`, `.` or empty components (e.g. `workspace/shop/checkout.py`)"
            )
        );
    }
}

#[test]
fn a_reply_in_one_code_fence_is_unwrapped() {
    assert_eq!(unfence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
    assert_eq!(unfence("  ```\n{\"a\": 1}\n```  "), "{\"a\": 1}");
    assert_eq!(unfence("{\"a\": 1}"), "{\"a\": 1}");
    assert_eq!(unfence("text ```json {} ```"), "text ```json {} ```");
}

#[test]
fn a_chat_spec_without_a_model_is_refused() {
    let Err(err) = role_from_spec_with("chat:", RoleName::Planner, &ChatEndpoint::default()) else { panic!("chat: accepted") };
    assert_eq!(err.to_string(), "`chat:` names no model; write chat:<model>");
    let role: Box<dyn Role> = role_from_spec_with("chat:m1", RoleName::Auditor, &ChatEndpoint::default()).unwrap();
    assert_eq!(role.label(), "chat:m1");
}

/// Writes `events` (JSON, `seq` from 0) as `dir/trajectory.jsonl.zst`, one zstd frame per
/// event, as the run store does.
fn write_trajectory(dir: &Path, events: &[Value]) {
    fs_err::create_dir_all(dir).unwrap();
    let mut bytes = Vec::new();
    for (seq, event) in events.iter().enumerate() {
        let mut event = event.clone();
        event.as_object_mut().unwrap().extend([("seq".into(), json!(seq)), ("ts_ms".into(), json!(0)), ("elapsed_ms".into(), json!(0))]);
        bytes.extend(zstd::encode_all(format!("{event}\n").as_bytes(), 3).unwrap());
    }
    fs_err::write(dir.join("trajectory.jsonl.zst"), bytes).unwrap();
}

fn start(opening: &str) -> Value {
    json!({"type": "episode_start", "episode": "e", "task": "payment-retry", "condition": "full", "start": "clean",
           "agent": "replay:x", "system_prompt": "SYSTEM PROMPT", "opening_message": opening, "tools": []})
}

fn summary(rollout: &str, condition: &str, dir: &Path) -> Value {
    json!({"rollout": rollout, "condition": condition, "repeat": 0, "status": "finished", "end_reason": "submitted",
           "score": 0.5, "success": false, "submissions": 1, "turns": 2, "episode_dir": dir})
}

#[test]
fn a_chat_calibrator_is_shown_each_rollouts_trajectory_numbered_by_turn_with_exact_cuts() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("episodes/full-0");
    write_trajectory(
        &full,
        &[
            start("Make checkout retry declined payments."),
            json!({"type": "agent_turn", "turn": 1, "text": "Reading the code first.",
                   "tool_calls": [{"id": "c1", "tool": "bash", "arguments": {"command": "cat shop/checkout.py"}}]}),
            json!({"type": "tool_result", "call_id": "c1", "tool": "bash", "output": "def checkout():\n    pay()\n", "is_error": false}),
            json!({"type": "agent_turn", "turn": 2, "text": "Running the tests.",
                   "tool_calls": [{"id": "c2", "tool": "bash", "arguments": {"command": "pytest"}}]}),
            json!({"type": "tool_result", "call_id": "c2", "tool": "bash", "output": "x".repeat(2500), "is_error": true}),
            json!({"type": "submission", "k": 1, "summary": "retries declines", "automatic": false}),
            json!({"type": "evaluation", "k": 1, "score": 0.5, "success": false, "failing_requirement": "secret-idempotency"}),
            json!({"type": "end", "reason": "submitted", "detail": ""}),
        ],
    );
    // 20 results of exactly 2000 bytes (not cut) make a rendering over 32 KiB.
    let partial = tmp.path().join("episodes/partial-0");
    let mut events = vec![start("go")];
    events.extend((0..20).map(
        |i| json!({"type": "tool_result", "call_id": format!("c{i}"), "tool": "bash", "output": "y".repeat(2000), "is_error": false}),
    ));
    write_trajectory(&partial, &events);
    let missing = tmp.path().join("episodes/literal-0");

    let upstream = mock(vec![calibrate_ready()["reply"].to_string()]);
    let endpoint = ChatEndpoint { base_url: format!("{}/v1", upstream.url()), ..ChatEndpoint::default() };
    let mut calibrator = role_from_spec_with("chat:role-model", RoleName::Calibrator, &endpoint).unwrap();
    let inputs = json!({"package": "pkg", "rollouts": [summary("full-0", "full", &full), summary("partial-0", "partial", &partial),
                                                       summary("literal-0", "literal", &missing)]});
    let request = RoleRequest { role: RoleName::Calibrator, prompt: "calibrate".into(), inputs, work_dir: None, retry_reason: None };
    calibrator.answer(&request).unwrap();

    let user = messages(&upstream.requests()[0])[1].1.clone();
    let expected_full = format!(
        "\nThe trajectories of the rollouts, numbered by turn (tool results cut at 2000 bytes, each trajectory at 32768):\n\n\
--- rollout full-0 (full, repeat 0) ---
REQUEST:
Make checkout retry declined payments.

TRANSCRIPT:
[turn 1] Reading the code first.
  call bash {{\"command\":\"cat shop/checkout.py\"}}
  result of bash: def checkout():
    pay()
[turn 2] Running the tests.
  call bash {{\"command\":\"pytest\"}}
  result of bash (error): {}[… 500 more bytes of this output cut]
[submission 1] retries declines
--- rollout partial-0 (partial, repeat 0) ---
REQUEST:
go

TRANSCRIPT:
",
        "x".repeat(2000)
    );
    assert!(user.contains(&expected_full), "{user:.3000}");
    // The partial rendering: 25 + 20 × 2019 = 40405 bytes, cut at 32768.
    let line = format!("  result of bash: {}\n", "y".repeat(2000));
    let rendering = format!("REQUEST:\ngo\n\nTRANSCRIPT:\n{}", line.repeat(20));
    assert_eq!(rendering.len(), 40405);
    let expected_partial = format!("{}\n[… 7637 more bytes of this trajectory cut]\n", &rendering[..32768]);
    assert!(user.contains(&format!("--- rollout partial-0 (partial, repeat 0) ---\n{expected_partial}--- rollout literal-0 (literal, repeat 0) ---\n(no trajectory recorded)\n")));
    // Nothing private: the evaluation's failing requirement and the system prompt stay out.
    assert!(!user.contains("secret-idempotency") && !user.contains("SYSTEM PROMPT"));
}
