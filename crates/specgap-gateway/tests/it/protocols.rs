//! Each protocol, streamed and not, through the gateway to a mock that checks every request:
//! the answer arrives unchanged, the real key arrives upstream and the token does not, the
//! record carries the parsed text, tool calls and usage.

use serde_json::json;
use specgap_gateway::mock::MockReply;
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::{Outcome, Protocol, RequestClass};
use specgap_protocol::event::ToolCall;

use crate::support::*;

fn scripted(protocol: Protocol, stream: bool, text: &str, calls: &[Call], tokens: Tokens) -> MockReply {
    match (protocol, stream) {
        (Protocol::OpenaiChat, false) => replies::openai_chat(MODEL, text, calls, tokens),
        (Protocol::OpenaiChat, true) => replies::openai_chat_stream(MODEL, text, calls, tokens),
        (Protocol::OpenaiResponses, false) => replies::responses(MODEL, text, calls, tokens),
        (Protocol::OpenaiResponses, true) => replies::responses_stream(MODEL, text, calls, tokens),
        (Protocol::AnthropicMessages, false) => replies::anthropic(MODEL, text, calls, tokens),
        (Protocol::AnthropicMessages, true) => replies::anthropic_stream(MODEL, text, calls, tokens),
        (Protocol::Gemini, false) => replies::gemini(text, calls, tokens),
        (Protocol::Gemini, true) => replies::gemini_stream(text, calls, tokens),
    }
}

#[test]
fn every_protocol_streamed_and_not_is_forwarded_with_the_key_swapped_and_parsed() {
    let tokens = Tokens { input: 120, output: 30, cached: 40, cache_creation: 0, reasoning: 5 };
    let calls = [Call::new("call_1", "bash", json!({"command": "ls -la"}))];
    for (protocol, stream) in every_case() {
        let case = format!("{protocol} stream={stream}");
        let reply = scripted(protocol, stream, "Looking at the files.", &calls, tokens);
        let expected_body: Vec<u8> = reply.chunks().concat();
        let setup = Setup::new(protocol, vec![reply]);
        let (path, body) = request(protocol, stream, MODEL);
        let sent = body.to_string().into_bytes();
        let got = setup.post(&path, sent.clone(), &auth(protocol, TOKEN));

        assert_eq!(got.status, 200, "{case}: {}", got.text());
        assert_eq!(got.body, expected_body, "{case}: the answer must arrive unchanged");
        let content_type = got.header("content-type").unwrap_or("");
        assert_eq!(content_type, if stream { "text/event-stream" } else { "application/json" }, "{case}");

        let received = setup.mock.requests();
        assert_eq!(received.len(), 1, "{case}");
        let upstream = &received[0];
        assert_eq!(upstream.method, "POST", "{case}");
        assert_eq!(upstream.target, upstream_target(protocol, stream), "{case}");
        let (key_name, key_value) = key_header(protocol);
        assert_eq!(upstream.header(key_name), Some(key_value.as_str()), "{case}: the real key arrives upstream");
        assert!(!upstream.contains(TOKEN), "{case}: the token never reaches the upstream");
        assert_eq!(upstream.body, sent, "{case}: the body is forwarded byte for byte");
        assert_eq!(upstream.header("accept-encoding"), Some("identity"), "{case}");
        if protocol == Protocol::AnthropicMessages {
            assert_eq!(upstream.header("anthropic-version"), Some("2023-06-01"), "{case}");
        }

        let records = setup.recorder.wait(1);
        let record = &records[0];
        assert_eq!(record.outcome, Outcome::Completed, "{case}");
        assert_eq!(record.status, 200, "{case}");
        assert_eq!(record.class, RequestClass::Main, "{case}");
        let info = record.request.as_ref().unwrap();
        assert_eq!((info.protocol, info.model.as_deref(), info.stream), (protocol, Some(MODEL), stream), "{case}");
        assert_eq!(info.tool_count, 1, "{case}");
        let response = record.response.as_ref().unwrap();
        assert_eq!(response.text, "Looking at the files.", "{case}");
        let expected_id = if protocol == Protocol::Gemini { "" } else { "call_1" };
        assert_eq!(
            response.tool_calls,
            vec![ToolCall { id: expected_id.into(), tool: "bash".into(), arguments: json!({"command": "ls -la"}) }],
            "{case}"
        );
        assert!(response.complete, "{case}");
        let usage = &record.usage;
        // Anthropic does not report reasoning tokens apart from the output.
        let reasoning = if protocol == Protocol::AnthropicMessages { 0 } else { 5 };
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens, usage.requests, usage.retries),
            (120, 30, 40, reasoning, 1, 0),
            "{case}"
        );
        // Priced by the supervisor: 120 input at $1/M and 30 output at $2/M.
        assert!((usage.cost_usd - 180e-6).abs() < 1e-12, "{case}: {}", usage.cost_usd);

        let report = setup.gateway.shutdown().unwrap();
        assert_eq!((report.exchanges, report.main_requests, report.tool_calls), (1, 1, 1), "{case}");
        assert_eq!(report.main.input_tokens, 120, "{case}");
        assert_eq!(report.fault, None, "{case}");
    }
}

#[test]
fn anthropic_cache_reads_and_writes_count_as_input_and_reach_the_pricing() {
    for stream in [false, true] {
        let tokens = Tokens { input: 1000, output: 50, cached: 600, cache_creation: 300, reasoning: 0 };
        let reply = scripted(Protocol::AnthropicMessages, stream, "ok", &[], tokens);
        let setup = Setup::new(Protocol::AnthropicMessages, vec![reply]);
        assert_eq!(setup.send(stream).status, 200);
        let record = &setup.recorder.wait(1)[0];
        assert_eq!(
            (record.usage.input_tokens, record.usage.cached_tokens, record.cache_creation_tokens),
            (1000, 600, 300),
            "stream={stream}"
        );
        assert_eq!(record.usage.output_tokens, 50);
        // (1000 + 0.25 · 300 + 2 · 50) / 1e6 from the recorder's price rule.
        assert!((record.usage.cost_usd - 1175e-6).abs() < 1e-12);
    }
}

#[test]
fn model_listing_is_answered_locally_in_each_shape_and_is_a_side_request() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let openai = client().get(setup.url("/v1/models")).bearer_auth(TOKEN).send().unwrap();
    assert_eq!(openai.status(), 200);
    let listed: serde_json::Value = openai.json().unwrap();
    assert_eq!(listed, json!({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "specgap-gateway"}]}));
    let one = client().get(setup.url(&format!("/v1/models/{MODEL}"))).bearer_auth(TOKEN).send().unwrap();
    assert_eq!(one.status(), 200);
    let other = client().get(setup.url("/v1/models/gpt-other")).bearer_auth(TOKEN).send().unwrap();
    assert_eq!(other.status(), 404);
    assert_eq!(setup.mock.request_count(), 0, "listings never reach the upstream");
    let records = setup.recorder.wait(3);
    assert!(records.iter().all(|r| r.class == RequestClass::Side));
    assert_eq!(records.iter().filter(|r| r.outcome == Outcome::Local).count(), 2);
    drop(setup);

    let anthropic = Setup::new(Protocol::AnthropicMessages, vec![]);
    let listed: serde_json::Value = client()
        .get(anthropic.url("/v1/models"))
        .header("x-api-key", TOKEN)
        .header("anthropic-version", "2023-06-01")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(listed["data"][0]["type"], "model");
    assert_eq!(listed["first_id"], MODEL);
    assert_eq!(listed["has_more"], false);

    let gemini = Setup::new(Protocol::Gemini, vec![]);
    let listed: serde_json::Value =
        client().get(gemini.url("/v1beta/models")).header("x-goog-api-key", TOKEN).send().unwrap().json().unwrap();
    assert_eq!(listed["models"][0]["name"], format!("models/{MODEL}"));
    // Gemini's `?key=` carries the token too.
    let by_query = client().get(gemini.url(&format!("/v1beta/models/{MODEL}?key={TOKEN}"))).send().unwrap();
    assert_eq!(by_query.status(), 200);
}

#[test]
fn token_counting_is_a_side_request_whose_count_is_not_usage() {
    let reply = MockReply::json(200, r#"{"input_tokens":4321}"#);
    let setup = Setup::new(Protocol::AnthropicMessages, vec![reply]);
    let body = json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let got = setup.post("/v1/messages/count_tokens?beta=true", body.into_bytes(), &auth(Protocol::AnthropicMessages, TOKEN));
    assert_eq!(got.status, 200);
    assert_eq!(setup.mock.requests()[0].target, "/v1/messages/count_tokens?beta=true");
    let record = &setup.recorder.wait(1)[0];
    assert_eq!(record.class, RequestClass::Side);
    assert_eq!(record.response.as_ref().unwrap().counted_tokens, Some(4321));
    assert_eq!((record.usage.input_tokens, record.usage.requests), (0, 1));
    let report = setup.gateway.shutdown().unwrap();
    assert_eq!((report.main_requests, report.side.requests), (0, 1));
}

#[test]
fn the_gemini_key_in_the_query_is_swapped_for_the_real_key_in_the_header() {
    let reply = replies::gemini_stream("hi", &[], Tokens { input: 3, output: 2, ..Tokens::default() });
    let setup = Setup::new(Protocol::Gemini, vec![reply]);
    let (_, body) = request(Protocol::Gemini, true, MODEL);
    let path = format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={TOKEN}");
    let got = setup.post(&path, body.to_string().into_bytes(), &[("content-type", "application/json".into())]);
    assert_eq!(got.status, 200, "{}", got.text());
    let upstream = &setup.mock.requests()[0];
    assert_eq!(upstream.target, format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"));
    assert_eq!(upstream.header("x-goog-api-key"), Some(REAL_KEY));
    assert!(!upstream.contains(TOKEN));
}

#[test]
fn a_query_placed_upstream_key_is_added_to_the_url_and_journalled_as_a_placeholder() {
    let reply = replies::gemini("hi", &[], Tokens::default());
    let setup = Setup::with(Protocol::Gemini, vec![reply], Recorder::new(), |config| {
        config.upstreams[0].key_placement = Some(specgap_gateway::KeyPlacement::Query("key".into()));
    });
    assert_eq!(setup.send(false).status, 200);
    let upstream = &setup.mock.requests()[0];
    assert_eq!(upstream.target, format!("/v1beta/models/{MODEL}:generateContent?key={REAL_KEY}"));
    assert_eq!(upstream.header("x-goog-api-key"), None);
    setup.recorder.wait(1);
    let rebuilt = setup.gateway.rebuild_request(0).unwrap();
    assert!(rebuilt.url.ends_with(":generateContent?key=[key]"), "{}", rebuilt.url);
    assert!(!setup.journal_text().contains(REAL_KEY));
}

#[test]
fn concurrent_requests_are_served_and_recorded_once_each() {
    let n = 8;
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    setup.mock.set_fallback(replies::openai_chat_stream(MODEL, "in parallel", &[], Tokens { input: 3, output: 1, ..Tokens::default() }));
    let shared = &setup;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n).map(|i| scope.spawn(move || setup_send(shared, i % 2 == 0))).collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), 200);
        }
    });
    let mut seqs: Vec<u64> = setup.recorder.wait(n).iter().map(|r| r.seq).collect();
    seqs.sort();
    assert_eq!(seqs, (0..n as u64).collect::<Vec<_>>());
    let report = setup.gateway.shutdown().unwrap();
    assert_eq!((report.exchanges, report.main_requests, report.main.input_tokens), (n as u64, n as u64, 3 * n as u64));
}

fn setup_send(setup: &Setup, stream: bool) -> u16 {
    setup.send(stream).status
}
