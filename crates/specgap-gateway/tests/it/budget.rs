//! The supervisor's hooks: a refused request reaches nothing and the CLI reads a normal API
//! error of its protocol; side requests are told apart from turns.

use std::sync::Arc;

use serde_json::json;
use specgap_gateway::mock::replies::{self, Tokens};
use specgap_gateway::{Outcome, Protocol, RefusalReason, RequestClass};

use crate::support::*;

fn reply_for(protocol: Protocol, stream: bool) -> specgap_gateway::mock::MockReply {
    let t = Tokens { input: 10, output: 2, ..Tokens::default() };
    match (protocol, stream) {
        (Protocol::OpenaiChat, false) => replies::openai_chat(MODEL, "ok", &[], t),
        (Protocol::OpenaiChat, true) => replies::openai_chat_stream(MODEL, "ok", &[], t),
        (Protocol::OpenaiResponses, false) => replies::responses(MODEL, "ok", &[], t),
        (Protocol::OpenaiResponses, true) => replies::responses_stream(MODEL, "ok", &[], t),
        (Protocol::AnthropicMessages, false) => replies::anthropic(MODEL, "ok", &[], t),
        (Protocol::AnthropicMessages, true) => replies::anthropic_stream(MODEL, "ok", &[], t),
        (Protocol::Gemini, false) => replies::gemini("ok", &[], t),
        (Protocol::Gemini, true) => replies::gemini_stream("ok", &[], t),
    }
}

#[test]
fn a_request_past_the_budget_gets_its_protocols_error_and_reaches_nothing() {
    for (protocol, stream) in every_case() {
        let case = format!("{protocol} stream={stream}");
        let recorder = Recorder::new();
        *recorder.allow_main.lock().unwrap() = Some(1);
        let setup = Setup::with(protocol, vec![reply_for(protocol, stream)], recorder, |_| {});
        assert_eq!(setup.send(stream).status, 200, "{case}");
        let refused = setup.send(stream);
        assert_eq!(refused.status, 400, "{case}: {}", refused.text());
        assert_eq!(refused.header("content-type"), Some("application/json"), "{case}");
        let error = refused.json();
        let message = "the turn budget of 1 model requests is used up";
        match protocol {
            Protocol::OpenaiChat | Protocol::OpenaiResponses => {
                assert_eq!(
                    error,
                    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "budget"}}),
                    "{case}"
                );
            }
            Protocol::AnthropicMessages => {
                assert_eq!(error, json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}), "{case}");
            }
            Protocol::Gemini => {
                assert_eq!(error, json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}), "{case}")
            }
        }
        assert_eq!(setup.mock.request_count(), 1, "{case}: the refused request never reached the upstream");
        let records = setup.recorder.wait(2);
        assert_eq!(records[1].outcome, Outcome::Refused { reason: RefusalReason::Admission, message: message.into() }, "{case}");
        assert_eq!(records[1].usage.requests, 0);
        assert_eq!((records[0].is_turn(), records[1].is_turn()), (true, false), "{case}: a refused request is no turn");
        let report = setup.gateway.shutdown().unwrap();
        assert_eq!((report.exchanges, report.main_requests), (2, 1), "{case}");
    }
}

#[test]
fn side_requests_are_classified_by_the_supervisor_and_are_not_turns() {
    let recorder = Arc::new(Recorder { toolless_is_side: true, ..Recorder::default() });
    // No main-loop request is admitted at all.
    *recorder.allow_main.lock().unwrap() = Some(0);
    let title = replies::openai_chat(MODEL, "A short title", &[], Tokens { input: 30, output: 4, ..Tokens::default() });
    let setup = Setup::with(Protocol::OpenaiChat, vec![title], recorder, |_| {});
    let side = json!({"model": MODEL, "messages": [{"role": "user", "content": "Give this conversation a title."}]});
    let headers = auth(Protocol::OpenaiChat, TOKEN);
    assert_eq!(setup.post("/v1/chat/completions", side.to_string().into_bytes(), &headers).status, 200);
    assert_eq!(setup.send(false).status, 400, "a request with tools is a turn, and no turn is left");
    let listing = client().get(setup.url("/v1/models")).bearer_auth(TOKEN).send().unwrap();
    assert_eq!(listing.status(), 200);
    let records = setup.recorder.wait(3);
    let classes: Vec<RequestClass> = records.iter().map(|r| r.class).collect();
    assert_eq!(classes, vec![RequestClass::Side, RequestClass::Main, RequestClass::Side]);
    assert!(records.iter().all(|r| !r.is_turn()));
    // The supervisor saw the classified request before it was forwarded.
    let infos = setup.recorder.infos.lock().unwrap().clone();
    assert_eq!(infos.len(), 2, "listings are not admitted: nothing is spent");
    assert_eq!((infos[0].class, infos[0].tool_count, infos[0].message_count), (RequestClass::Side, 0, 1));
    assert_eq!((infos[1].class, infos[1].tool_count, infos[1].message_count), (RequestClass::Main, 1, 2));
    let report = setup.gateway.shutdown().unwrap();
    assert_eq!(report.main_requests, 0);
    assert_eq!((report.side.requests, report.side.input_tokens, report.side.output_tokens), (1, 30, 4));
    assert!((report.side.cost_usd - 38e-6).abs() < 1e-12, "side requests are priced: {}", report.side.cost_usd);
}
