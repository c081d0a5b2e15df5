//! The chat agent against the mock server: request invariants, retries and faults.

use serde_json::json;
use specgap_agents::chat::{ChatAgent, ChatConfig};
use specgap_engine::session::{Agent, AgentReply, Incoming, Opening};
use specgap_protocol::event::{ToolSpec, UserMessageKind};

use crate::mock_server::{MockServer, Scripted, check_request, completion, sse};

const KEY_ENV: &str = "SPECGAP_TEST_KEY_AGENT";

fn config(server: &MockServer) -> ChatConfig {
    let mut c = ChatConfig::new("test-model");
    c.base_url = server.url.clone();
    c.api_key_env = "SPECGAP_TEST_NO_SUCH_KEY".into();
    c.retry_base_ms = 1;
    c.max_retries = 3;
    c.request_timeout_sec = 5.0;
    c
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec { name: name.into(), description: format!("the {name} tool"), parameters: json!({"type": "object", "properties": {}}) }
}

fn opening() -> Opening {
    Opening {
        system_prompt: "You are tested.".into(),
        message: "Do the work.".into(),
        tools: vec![tool("list_files"), tool("read_text"), tool("submit")],
    }
}

const TOOLS: [&str; 3] = ["list_files", "read_text", "submit"];

fn result(id: &str, tool: &str, output: &str) -> Incoming {
    Incoming::ToolResult { call_id: id.into(), tool: tool.into(), output: output.into(), is_error: false }
}

fn started(config: &ChatConfig) -> ChatAgent {
    let mut agent = ChatAgent::new(config, 1).unwrap();
    agent.start(&opening()).unwrap();
    agent
}

#[test]
fn history_answers_every_call_once_and_usage_sums() {
    let server = MockServer::sequence(vec![
        Scripted::json(completion(
            Some("looking"),
            &[("a1", "list_files", json!({"path": "."})), ("a2", "read_text", json!({"path": "x"}))],
            "tool_calls",
        )),
        // The same id again from a sloppy server: the agent makes it unique.
        Scripted::json(completion(None, &[("a1", "submit", json!({}))], "tool_calls")),
        Scripted::json(completion(Some("done"), &[], "stop")),
    ]);
    let mut agent = started(&config(&server));
    let AgentReply::Turn { tool_calls, text, usage } = agent.next_turn(&[]).unwrap() else { panic!("expected a turn") };
    assert_eq!(text.as_deref(), Some("looking"));
    assert_eq!(
        tool_calls.iter().map(|c| (c.id.as_str(), c.tool.as_str())).collect::<Vec<_>>(),
        [("a1", "list_files"), ("a2", "read_text")]
    );
    assert_eq!(tool_calls[0].arguments, json!({"path": "."}));
    let usage = usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens, usage.requests), (100, 20, 40, 5, 1));
    let inbox = [result("a1", "list_files", "x\n"), result("a2", "read_text", "1 hello")];
    let AgentReply::Turn { tool_calls, .. } = agent.next_turn(&inbox).unwrap() else { panic!() };
    assert_eq!(tool_calls[0].id, "call-2-1");
    let feedback = Incoming::UserMessage { kind: UserMessageKind::Feedback, text: "It broke.".into() };
    let AgentReply::Turn { tool_calls, .. } = agent.next_turn(&[result("call-2-1", "submit", "returned"), feedback]).unwrap() else {
        panic!()
    };
    assert!(tool_calls.is_empty());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], "test-model");
        assert_eq!(request.body["stream"], false);
        assert_eq!(request.header("authorization"), None, "no key in the environment: no header");
        check_request(request, &TOOLS);
    }
    let last = requests[2].messages();
    let roles: Vec<&str> = last.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "user"]);
    assert_eq!(last[7]["content"], "It broke.");
    assert_eq!(agent.usage().requests, 3);
    assert_eq!(agent.usage().input_tokens, 300);
}

#[test]
fn api_key_is_sent_as_bearer_and_model_args_pass_through() {
    // SAFETY: tests in this binary use distinct variable names.
    unsafe { std::env::set_var(KEY_ENV, "sk-test-agent-123") };
    let server = MockServer::sequence(vec![Scripted::json(completion(Some("hi"), &[], "stop"))]);
    let mut c = config(&server).with_model_args(&["temperature=0", "seed=3", "reasoning_effort=low", "max_tokens=64"]).unwrap();
    c.api_key_env = KEY_ENV.into();
    let mut agent = started(&c);
    agent.next_turn(&[]).unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-agent-123"));
    assert_eq!(request.body["temperature"], 0);
    assert_eq!(request.body["seed"], 3);
    assert_eq!(request.body["reasoning_effort"], "low");
    assert_eq!(request.body["max_tokens"], 64);
}

#[test]
fn rate_limit_with_retry_after_is_retried_not_a_turn() {
    let server = MockServer::sequence(vec![
        Scripted::Respond(429, vec![("Retry-After".into(), "0".into())], "{\"error\":\"slow down\"}".into()),
        Scripted::json(completion(None, &[("c", "list_files", json!({}))], "tool_calls")),
    ]);
    let mut agent = started(&config(&server));
    let AgentReply::Turn { tool_calls, usage, .. } = agent.next_turn(&[]).unwrap() else { panic!() };
    assert_eq!(tool_calls.len(), 1);
    let usage = usage.unwrap();
    assert_eq!((usage.requests, usage.retries), (2, 1));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn server_errors_twice_then_success() {
    let server = MockServer::sequence(vec![
        Scripted::status(500, "oops"),
        Scripted::status(503, "busy"),
        Scripted::json(completion(Some("ok"), &[("c", "submit", json!({}))], "tool_calls")),
    ]);
    let mut agent = started(&config(&server));
    assert!(matches!(agent.next_turn(&[]).unwrap(), AgentReply::Turn { .. }));
    assert_eq!(agent.usage().retries, 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].raw_body, requests[2].raw_body, "a retry sends the same request");
}

#[test]
fn retries_exhausted_is_an_infrastructure_error() {
    let server = MockServer::start(|_, _| Scripted::status(502, "bad gateway"));
    let mut agent = started(&config(&server));
    let error = agent.next_turn(&[]).unwrap_err();
    assert!(!error.deterministic);
    assert_eq!(server.requests().len(), 4, "one try and max_retries = 3 retries");
    assert_eq!(agent.usage().retries, 3);
}

#[test]
fn a_rejected_request_is_not_retried() {
    let server = MockServer::start(|_, _| Scripted::status(401, "bad key"));
    let mut agent = started(&config(&server));
    let error = agent.next_turn(&[]).unwrap_err();
    assert!(error.deterministic);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn malformed_json_body_is_retried() {
    let server = MockServer::sequence(vec![
        Scripted::Respond(200, vec![], "{\"choices\": [".into()),
        Scripted::json(completion(Some("fine"), &[], "stop")),
    ]);
    let mut agent = started(&config(&server));
    let AgentReply::Turn { text, .. } = agent.next_turn(&[]).unwrap() else { panic!() };
    assert_eq!(text.as_deref(), Some("fine"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn streaming_joins_deltas_and_a_cut_stream_is_retried() {
    let full = sse("Reading the file.", &[("s1", "read_text", json!({"path": "README.md"}))], "tool_calls");
    let cut_at = full.find("[{\"index\":0,\"function\"").unwrap_or(full.len() / 2);
    let server = MockServer::sequence(vec![Scripted::Cut(full[..cut_at].to_string()), Scripted::Respond(200, vec![], full.clone())]);
    let mut c = config(&server);
    c.stream = true;
    let mut agent = started(&c);
    let AgentReply::Turn { text, tool_calls, usage } = agent.next_turn(&[]).unwrap() else { panic!() };
    assert_eq!(text.as_deref(), Some("Reading the file."));
    assert_eq!(tool_calls.len(), 1);
    assert_eq!((tool_calls[0].id.as_str(), tool_calls[0].tool.as_str()), ("s1", "read_text"));
    assert_eq!(tool_calls[0].arguments, json!({"path": "README.md"}));
    assert_eq!(usage.unwrap().retries, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[0].body["stream_options"], json!({"include_usage": true}));
}

#[test]
fn a_server_that_never_answers_times_out_into_an_infrastructure_error() {
    let server = MockServer::start(|_, _| Scripted::Hang);
    let mut c = config(&server);
    c.request_timeout_sec = 0.3;
    c.max_retries = 1;
    let mut agent = started(&c);
    let error = agent.next_turn(&[]).unwrap_err();
    assert!(!error.deterministic);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn finish_reasons_content_filter_and_empty() {
    let server = MockServer::sequence(vec![
        Scripted::json(completion(Some("I cannot help with that."), &[], "content_filter")),
        Scripted::json(completion(Some("thinking"), &[], "")),
        Scripted::json(json!({"choices": [{"message": {"content": "no", "refusal": "I refuse."}, "finish_reason": "stop"}]})),
        Scripted::json(
            json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": "z", "function": {"name": "submit", "arguments": {}}}]}, "finish_reason": "eos", "logprobs": null, "extra_field": [1, 2]}], "system_fingerprint": "x"}),
        ),
    ]);
    let mut agent = started(&config(&server));
    assert!(matches!(agent.next_turn(&[]).unwrap(), AgentReply::Refusal { text: Some(t), .. } if t == "I cannot help with that."));
    let reminder = Incoming::UserMessage { kind: UserMessageKind::Reminder, text: "continue".into() };
    assert!(
        matches!(agent.next_turn(std::slice::from_ref(&reminder)).unwrap(), AgentReply::Turn { tool_calls, .. } if tool_calls.is_empty())
    );
    assert!(matches!(agent.next_turn(std::slice::from_ref(&reminder)).unwrap(), AgentReply::Refusal { .. }));
    let AgentReply::Turn { tool_calls, usage, .. } = agent.next_turn(&[reminder]).unwrap() else { panic!() };
    assert_eq!(tool_calls[0].tool, "submit");
    assert_eq!(usage.unwrap().input_tokens, 0, "a response without usage counts no tokens");
    for request in server.requests() {
        check_request(&request, &TOOLS);
    }
}

/// Issue 10 item 7: a plain-text refusal (no tool call, no refusal field) was a reply
/// without a call; by the rule of `chat::refusal` it is a refusal, and work talk is not.
#[test]
fn plain_text_refusal_is_a_refusal_not_a_reply_without_a_call() {
    let server = MockServer::sequence(vec![
        Scripted::json(completion(Some("I'm sorry, but I can't help with that."), &[], "stop")),
        Scripted::json(completion(Some("I can't find the file; let me look again."), &[], "stop")),
        Scripted::json(completion(Some("I cannot assist with this request."), &[("c1", "list_files", json!({}))], "tool_calls")),
    ]);
    let mut agent = started(&config(&server));
    assert!(
        matches!(agent.next_turn(&[]).unwrap(), AgentReply::Refusal { text: Some(t), .. } if t == "I'm sorry, but I can't help with that.")
    );
    let reminder = Incoming::UserMessage { kind: UserMessageKind::Reminder, text: "continue".into() };
    assert!(
        matches!(agent.next_turn(std::slice::from_ref(&reminder)).unwrap(), AgentReply::Turn { tool_calls, .. } if tool_calls.is_empty())
    );
    // Refusal-shaped text beside a tool call is a turn: the call runs.
    let AgentReply::Turn { tool_calls, .. } = agent.next_turn(&[reminder]).unwrap() else { panic!("expected a turn") };
    assert_eq!(tool_calls[0].tool, "list_files");
    for request in server.requests() {
        check_request(&request, &TOOLS);
    }
}

#[test]
fn context_overflow_from_the_server_and_from_the_estimate() {
    let server = MockServer::sequence(vec![Scripted::status(
        400,
        "{\"error\":{\"message\":\"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.\"}}",
    )]);
    let mut agent = started(&config(&server));
    assert_eq!(agent.next_turn(&[]).unwrap(), AgentReply::ContextOverflow);
    assert_eq!(server.requests().len(), 1);

    let quiet = MockServer::start(|_, _| Scripted::json(completion(Some("x"), &[], "stop")));
    let mut c = config(&quiet);
    c.context_tokens = Some(50);
    let mut agent = started(&c);
    let big = Incoming::UserMessage { kind: UserMessageKind::Feedback, text: "y".repeat(400) };
    assert_eq!(agent.next_turn(&[big]).unwrap(), AgentReply::ContextOverflow);
    assert!(quiet.requests().is_empty(), "our estimate stops before sending");
}

#[test]
fn emulated_tools_live_in_the_text() {
    let reply = "I will look.\n```tool_call\n{\"tool\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n```\n```tool_call\n{\"tool\": \"read_text\", \"arguments\": {\"path\": \"a\"}}\n```";
    let server = MockServer::sequence(vec![
        Scripted::json(completion(Some(reply), &[], "stop")),
        Scripted::json(completion(Some("```tool_call\n{\"tool\": \"submit\"}\n```"), &[], "stop")),
    ]);
    let mut c = config(&server);
    c.emulate_tools = true;
    let mut agent = started(&c);
    let AgentReply::Turn { tool_calls, .. } = agent.next_turn(&[]).unwrap() else { panic!() };
    let names: Vec<&str> = tool_calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(names, ["list_files", "read_text"]);
    let ids: Vec<String> = tool_calls.iter().map(|c| c.id.clone()).collect();
    assert_eq!(ids, ["call-1-1", "call-1-2"]);
    agent.next_turn(&[result(&ids[0], "list_files", "a\n"), result(&ids[1], "read_text", "1 hi")]).unwrap();
    let requests = server.requests();
    assert!(requests[0].body.get("tools").is_none(), "no native tools under emulation");
    assert!(requests[0].system().contains("```tool_call"));
    assert!(requests[0].system().contains("### read_text"));
    let second = requests[1].messages();
    let roles: Vec<&str> = second.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    let results = second[3]["content"].as_str().unwrap();
    assert!(results.contains("[result of list_files call call-1-1]\na\n"));
    assert!(results.contains("[result of read_text call call-1-2]\n1 hi"));
}

#[test]
fn a_phase_change_replaces_the_system_prompt_and_the_tools_of_the_next_request() {
    let server = MockServer::sequence(vec![
        Scripted::json(completion(None, &[("p1", "write_plan", json!({"plan": "fix it"}))], "tool_calls")),
        Scripted::json(completion(None, &[("w1", "write_text", json!({"path": "a", "content": "b"}))], "tool_calls")),
    ]);
    let mut agent = started(&config(&server));
    agent.next_turn(&[]).unwrap();
    let change = specgap_engine::session::PhaseChange {
        phase: "execute".into(),
        system_prompt: "You are executing now.".into(),
        tools: vec![tool("read_text"), tool("write_text"), tool("submit")],
    };
    assert!(agent.change_phase(&change));
    agent.next_turn(&[result("p1", "write_plan", "Plan saved.")]).unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].system(), "You are tested.");
    check_request(&requests[0], &TOOLS);
    assert_eq!(requests[1].system(), "You are executing now.");
    check_request(&requests[1], &["read_text", "write_text", "submit"]);
    // The rest of the history is kept: the opening, the plan call and its result.
    let roles: Vec<&str> = requests[1].messages().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(requests[1].messages()[1]["content"], "Do the work.");
}
