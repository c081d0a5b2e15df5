//! `specgap mock-model`'s server: a user's script answered turn by turn in the protocol each
//! request arrives in, local answers that use no turn, expectations, exhaustion, and the
//! script's checks.

use std::net::SocketAddr;

use serde_json::{Value, json};
use specgap_gateway::mock_model::{Answer, MockModel, MockModelScript, MockScriptError, RequestKind, Wire};

const SCRIPT: &str = r#"
format = 1
model = "dry-run"

[[turn]]
text = "Looking."
tokens = { input = 120, output = 7, cached = 20 }
[[turn.call]]
name = "bash"
arguments = { command = "ls" }

[[turn]]
expect = ["README.md"]
[[turn.call]]
name = "submit"
namespace = "mcp__specgap"
id = "call-submit"
arguments = { summary = "done" }

[[turn]]
status = 503
text = "overloaded"
"#;

fn script(text: &str) -> MockModelScript {
    toml::from_str(text).unwrap()
}

fn start(text: &str) -> MockModel {
    MockModel::start(script(text), SocketAddr::from(([127, 0, 0, 1], 0)), None).unwrap()
}

fn post(server: &MockModel, path: &str, body: Value) -> (u16, String) {
    let response = reqwest::blocking::Client::new().post(format!("{}{path}", server.url())).json(&body).send().unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

#[test]
fn turns_are_answered_in_order_in_each_requests_protocol() {
    let server = start(SCRIPT);
    // Turn 1 over OpenAI chat completions, not streamed.
    let (status, body) = post(&server, "/v1/chat/completions", json!({"model": "dry-run", "messages": []}));
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["model"], "dry-run");
    assert_eq!(answer["choices"][0]["message"]["content"], "Looking.");
    let call = &answer["choices"][0]["message"]["tool_calls"][0];
    assert_eq!((call["id"].as_str(), call["function"]["name"].as_str()), (Some("call_1_1"), Some("bash")));
    assert_eq!(call["function"]["arguments"], "{\"command\":\"ls\"}");
    assert_eq!(answer["usage"]["prompt_tokens"], 120);
    assert_eq!(answer["usage"]["prompt_tokens_details"]["cached_tokens"], 20);
    // Turn 2 over Responses, streamed, its call in the namespace the script names.
    let (status, body) = post(&server, "/v1/responses", json!({"stream": true, "input": "README.md is here"}));
    assert_eq!(status, 200);
    let completed = body.lines().find(|l| l.starts_with("data: ") && l.contains("response.completed")).unwrap();
    let completed: Value = serde_json::from_str(&completed["data: ".len()..]).unwrap();
    let item = &completed["response"]["output"][0];
    assert_eq!(
        (item["type"].as_str(), item["call_id"].as_str(), item["name"].as_str(), item["namespace"].as_str()),
        (Some("function_call"), Some("call-submit"), Some("submit"), Some("mcp__specgap"))
    );
    // Turn 3: the scripted error, whatever the protocol.
    let (status, body) = post(&server, "/v1/messages?beta=true", json!({"stream": true}));
    assert_eq!(status, 503);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["message"], "overloaded");
    assert_eq!((server.turns_used(), server.turn_count()), (3, 3));
    let kinds: Vec<RequestKind> = server.served().iter().map(|s| s.request).collect();
    assert_eq!(
        kinds,
        [
            RequestKind::Generation { wire: Wire::OpenaiChat, streamed: false },
            RequestKind::Generation { wire: Wire::Responses, streamed: true },
            RequestKind::Generation { wire: Wire::Anthropic, streamed: true },
        ]
    );
}

#[test]
fn anthropic_and_gemini_answers_carry_the_turns_calls() {
    let server = start(
        r#"
format = 1
[[turn]]
[[turn.call]]
name = "Read"
arguments = { file_path = "/workspace/a.txt" }
[[turn]]
text = "done"
"#,
    );
    let (status, body) = post(&server, "/v1/messages", json!({"model": "m"}));
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        answer["content"][0],
        json!({"type": "tool_use", "id": "call_1_1", "name": "Read", "input": {"file_path": "/workspace/a.txt"}})
    );
    assert_eq!(answer["stop_reason"], "tool_use");
    let (status, body) = post(&server, "/v1beta/models/mock-model:streamGenerateContent?alt=sse", json!({}));
    assert_eq!(status, 200);
    let texts: Vec<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["candidates"][0]["content"]["parts"][0]["text"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert_eq!(texts.concat(), "done");
    assert_eq!(server.served()[1].request, RequestKind::Generation { wire: Wire::Gemini, streamed: true });
}

#[test]
fn token_counts_and_listings_use_no_turn_and_other_paths_are_404() {
    let server = start("format = 1\n[[turn]]\ntext = \"hi\"\n");
    let (status, body) = post(&server, "/v1/messages/count_tokens", json!({"messages": ["0123456789abcdef"]}));
    assert_eq!(status, 200);
    // A quarter of the body's 33 bytes, `{"messages":["0123456789abcdef"]}`.
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"input_tokens": 8}));
    let listing = reqwest::blocking::get(format!("{}/v1/models", server.url())).unwrap().text().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&listing).unwrap()["data"][0]["id"], "mock-model");
    let (status, _) = post(&server, "/v1/embeddings", json!({}));
    assert_eq!(status, 404);
    assert_eq!(server.turns_used(), 0);
    let answers: Vec<Answer> = server.served().into_iter().map(|s| s.answer).collect();
    assert_eq!(answers, [Answer::Local, Answer::Local, Answer::Local]);
}

#[test]
fn an_unmet_expectation_is_a_400_naming_the_turn_and_the_turn_is_kept_for_the_next_request() {
    let server = start("format = 1\n[[turn]]\nexpect = [\"plan.json\"]\ntext = \"ok\"\n");
    let (status, body) = post(&server, "/v1/chat/completions", json!({"messages": [{"role": "user", "content": "hello"}]}));
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["message"],
        "mock-model: turn 1 expected the request to contain \"plan.json\""
    );
    assert_eq!(server.turns_used(), 0);
    let (status, _) = post(&server, "/v1/chat/completions", json!({"messages": [{"role": "user", "content": "see plan.json"}]}));
    assert_eq!(status, 200);
    // Used up: the exhausted status, and the log says so.
    let (status, body) = post(&server, "/v1/chat/completions", json!({}));
    assert_eq!(status, specgap_gateway::mock::SCRIPT_EXHAUSTED_STATUS);
    assert!(body.contains("all 1 turns of the script were used"), "{body}");
    let answers: Vec<Answer> = server.served().into_iter().map(|s| s.answer).collect();
    assert_eq!(answers, [Answer::Unmet { turn: 1, missing: "plan.json".into() }, Answer::Turn { turn: 1 }, Answer::Exhausted]);
}

#[test]
fn a_script_is_checked_before_the_server_starts() {
    let check = |text: &str| script(text).validate();
    assert_eq!(check("format = 2\n[[turn]]\n"), Err(MockScriptError::Format { found: 2 }));
    assert_eq!(check("format = 1\n"), Err(MockScriptError::NoTurns));
    assert_eq!(
        check("format = 1\n[[turn]]\n[[turn]]\n[[turn.call]]\nname = \"bash\"\narguments = [1]\n"),
        Err(MockScriptError::Arguments { turn: 2, call: 1, name: "bash".into() })
    );
    assert_eq!(check("format = 1\n[[turn]]\nstatus = 200\n"), Err(MockScriptError::Status { turn: 1, status: 200 }));
    // Unknown keys are refused by the format itself.
    let unknown = toml::from_str::<MockModelScript>("format = 1\n[[turn]]\ntxt = \"typo\"\n").unwrap_err().to_string();
    assert!(unknown.contains("unknown field `txt`"), "{unknown}");
    let refused = MockModel::start(script("format = 1\n"), SocketAddr::from(([127, 0, 0, 1], 0)), None).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
}
