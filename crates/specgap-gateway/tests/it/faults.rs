//! Upstream faults: retries with exact request counts, cut streams, a dead upstream, and
//! abandonment (by the handle and by the deadline).

use std::io::Read as _;
use std::time::{Duration, Instant};

use specgap_gateway::mock::replies::{self, Tokens};
use specgap_gateway::mock::{MockBody, MockReply};
use specgap_gateway::{GatewayFault, Outcome, Protocol, RefusalReason};

use crate::support::*;

fn tokens() -> Tokens {
    Tokens { input: 50, output: 7, ..Tokens::default() }
}

#[test]
fn server_errors_are_retried_with_exact_request_counts() {
    for stream in [false, true] {
        let ok =
            if stream { replies::openai_chat_stream(MODEL, "ok", &[], tokens()) } else { replies::openai_chat(MODEL, "ok", &[], tokens()) };
        let expected = ok.chunks().concat();
        let script = vec![
            MockReply::json(500, r#"{"error":{"message":"boom"}}"#),
            MockReply::json(502, "bad gateway"),
            MockReply::json(429, r#"{"error":{"message":"slow down"}}"#),
            ok,
        ];
        let setup = Setup::new(Protocol::OpenaiChat, script);
        let got = setup.send(stream);
        assert_eq!(got.status, 200, "stream={stream}");
        assert_eq!(got.body, expected);
        assert_eq!(setup.mock.request_count(), 4);
        let record = &setup.recorder.wait(1)[0];
        assert_eq!(record.outcome, Outcome::Completed);
        assert_eq!((record.usage.requests, record.usage.retries, record.usage.input_tokens), (4, 3, 50));
        // Every try sent the same bytes.
        let bodies: Vec<Vec<u8>> = setup.mock.requests().into_iter().map(|r| r.body).collect();
        assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    }
}

#[test]
fn retry_after_replaces_a_long_backoff() {
    // With a 100 s backoff base the retry would outlast the client's patience; Retry-After: 0
    // makes it immediate.
    let script = vec![MockReply::json(429, "{}").with_header("retry-after", "0"), replies::openai_chat(MODEL, "ok", &[], tokens())];
    let setup = Setup::with(Protocol::OpenaiChat, script, Recorder::new(), |c| c.retry.retry_base = Duration::from_secs(100));
    assert_eq!(setup.send(false).status, 200);
    assert_eq!(setup.mock.request_count(), 2);
}

#[test]
fn a_stream_cut_before_its_first_byte_and_a_broken_json_body_are_retried_transparently() {
    let stream = replies::anthropic_stream(MODEL, "all good", &[], tokens());
    let expected = stream.chunks().concat();
    let cut_empty = stream.clone().with_body(MockBody::CutAfter(vec![]));
    let setup = Setup::new(Protocol::AnthropicMessages, vec![cut_empty, stream]);
    let got = setup.send(true);
    assert_eq!(got.status, 200);
    assert_eq!(got.body, expected, "the client sees one clean stream");
    assert_eq!(setup.mock.request_count(), 2);
    let record = &setup.recorder.wait(1)[0];
    assert_eq!((record.outcome.clone(), record.usage.requests, record.usage.retries), (Outcome::Completed, 2, 1));

    let broken = MockReply::json(200, r#"{"id":"msg","content":[{"type":"te"#);
    let whole = replies::anthropic(MODEL, "fine", &[], tokens());
    let setup = Setup::new(Protocol::AnthropicMessages, vec![broken, whole.clone()]);
    let got = setup.send(false);
    assert_eq!((got.status, got.body), (200, whole.chunks().concat()));
    assert_eq!(setup.mock.request_count(), 2);
}

#[test]
fn a_stream_cut_after_bytes_were_forwarded_ends_with_the_protocols_error_event() {
    let cases = [
        (Protocol::OpenaiChat, replies::openai_chat_stream(MODEL, "partial answer", &[], tokens()), "data: {\"error\":{"),
        (Protocol::OpenaiResponses, replies::responses_stream(MODEL, "partial answer", &[], tokens()), "event: error\ndata: {"),
        (Protocol::AnthropicMessages, replies::anthropic_stream(MODEL, "partial answer", &[], tokens()), "event: error\ndata: {"),
        (Protocol::Gemini, replies::gemini_stream("partial answer", &[], tokens()), "data: {\"error\":{"),
    ];
    for (protocol, stream, error_start) in cases {
        let chunks = stream.chunks();
        let sent: Vec<u8> = chunks[..1].concat();
        let cut = stream.with_body(MockBody::CutAfter(chunks[..1].to_vec()));
        let setup = Setup::new(protocol, vec![cut]);
        let got = setup.send(true);
        assert_eq!(got.status, 200, "{protocol}");
        assert!(got.body.starts_with(&sent), "{protocol}: what was forwarded stays: {}", got.text());
        let rest = String::from_utf8_lossy(&got.body[sent.len()..]).into_owned();
        assert!(rest.starts_with(error_start) && rest.ends_with("\n\n"), "{protocol}: {rest}");
        assert!(rest.contains("stream broke off"), "{protocol}: {rest}");
        assert_eq!(setup.mock.request_count(), 1, "{protocol}: not retried once bytes reached the client");
        let record = &setup.recorder.wait(1)[0];
        assert!(matches!(record.outcome, Outcome::StreamCut { .. }), "{protocol}: {:?}", record.outcome);
        assert_eq!((record.usage.requests, record.usage.retries), (1, 0));
        if protocol == Protocol::AnthropicMessages {
            // message_start had arrived: its input tokens are reported.
            assert_eq!(record.usage.input_tokens, 50);
        }
        assert_eq!(setup.gateway.fault(), None, "a cut stream is not a dead upstream");
    }
}

#[test]
fn a_dead_upstream_is_a_fault_and_nothing_more_is_forwarded() {
    let setup = Setup::new(Protocol::Gemini, vec![]);
    setup.mock.set_fallback(MockReply::json(503, r#"{"error":{"code":503,"message":"overloaded"}}"#));
    let got = setup.send(false);
    assert_eq!(got.status, 502);
    assert_eq!(got.json()["error"]["status"], "UNAVAILABLE");
    assert_eq!(setup.mock.request_count(), 4, "the first try and 3 retries");
    let record = &setup.recorder.wait(1)[0];
    let Outcome::UpstreamDead { attempts, fault } = &record.outcome else { panic!("{:?}", record.outcome) };
    assert_eq!(*attempts, 4);
    assert!(fault.starts_with("http 503: "), "{fault}");
    assert_eq!((record.usage.requests, record.usage.retries), (4, 3));
    assert!(matches!(setup.gateway.fault(), Some(GatewayFault::UpstreamDead { seq: 0, attempts: 4, .. })));
    let later = setup.send(true);
    assert_eq!(later.status, 503);
    assert_eq!(setup.mock.request_count(), 4, "nothing is forwarded after the upstream died");
    let records = setup.recorder.wait(2);
    assert!(matches!(records[1].outcome, Outcome::Refused { reason: RefusalReason::UpstreamDead, .. }));
    assert!(setup.gateway.shutdown().unwrap().fault.is_some());
}

#[test]
fn an_unreachable_upstream_is_dead_after_its_retries() {
    let setup = Setup::with(Protocol::OpenaiChat, vec![], Recorder::new(), |c| {
        // Port 1 on the loopback interface: nothing listens, the connection is refused.
        c.upstreams[0].base_url = "http://127.0.0.1:1/v1".into();
    });
    let got = setup.send(false);
    assert_eq!(got.status, 502);
    let record = &setup.recorder.wait(1)[0];
    assert_eq!(record.outcome, Outcome::UpstreamDead { attempts: 4, fault: "cannot connect to the model service".into() });
    assert_eq!((record.usage.requests, record.usage.retries), (0, 3));
}

#[test]
fn a_rejection_is_forwarded_without_retry() {
    let overflow = MockReply::json(400, r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#);
    let setup = Setup::new(Protocol::OpenaiChat, vec![overflow]);
    let got = setup.send(false);
    assert_eq!(got.status, 400);
    assert!(got.text().contains("maximum context length"));
    assert_eq!(setup.mock.request_count(), 1);
    let record = &setup.recorder.wait(1)[0];
    assert_eq!((record.outcome.clone(), record.usage.requests), (Outcome::UpstreamRejected, 1));
    assert_eq!(setup.gateway.fault(), None);
}

#[test]
fn abandon_gives_up_a_waiting_request_at_once_and_refuses_later_ones() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![MockReply::json(200, "{}").with_body(MockBody::Hang)]);
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| setup.send(false));
        assert_eq!(setup.mock.wait_for_requests(1, PATIENCE), 1);
        setup.gateway.abandon();
        // The upstream never answers: only abandonment can end this request.
        let got = waiting.join().unwrap();
        assert_eq!(got.status, 403);
        assert!(got.text().contains("the episode has ended"), "{}", got.text());
    });
    let record = &setup.recorder.wait(1)[0];
    assert_eq!(record.outcome, Outcome::Abandoned);
    assert_eq!(record.usage.requests, 0, "no answer arrived");
    let later = setup.send(false);
    assert_eq!(later.status, 403);
    assert_eq!(setup.mock.request_count(), 1);
    let report = setup.gateway.shutdown().unwrap();
    assert!(report.abandoned);
    assert_eq!(report.fault, None, "abandonment is not a fault");
}

#[test]
fn abandon_ends_a_stream_under_way_and_keeps_the_usage_seen() {
    let stream = replies::anthropic_stream(MODEL, "a long answer", &[], Tokens { input: 500, output: 9, cached: 100, ..Tokens::default() });
    let first = stream.chunks()[0].clone();
    let stalled = stream.with_body(MockBody::Stall(vec![first.clone()]));
    let setup = Setup::new(Protocol::AnthropicMessages, vec![stalled]);
    let (path, body) = request(Protocol::AnthropicMessages, true, MODEL);
    let mut request = client().post(setup.url(&path)).body(body.to_string());
    for (name, value) in auth(Protocol::AnthropicMessages, TOKEN) {
        request = request.header(name, value);
    }
    let mut response = request.send().unwrap();
    assert_eq!(response.status(), 200);
    let mut got = vec![0u8; first.len()];
    response.read_exact(&mut got).unwrap();
    assert_eq!(got, first);
    setup.gateway.abandon();
    let mut rest = String::new();
    response.read_to_string(&mut rest).unwrap();
    assert!(rest.starts_with("event: error\ndata: {") && rest.contains("the episode has ended"), "{rest}");
    let record = &setup.recorder.wait(1)[0];
    assert_eq!(record.outcome, Outcome::Abandoned);
    assert_eq!((record.usage.requests, record.usage.input_tokens, record.usage.cached_tokens), (1, 500, 100));
}

#[test]
fn the_deadline_abandons_as_abandon_does() {
    let setup = Setup::with(Protocol::Gemini, vec![MockReply::json(200, "{}").with_body(MockBody::Hang)], Recorder::new(), |c| {
        c.deadline = Some(Instant::now() + Duration::from_millis(300));
    });
    let got = setup.send(false);
    assert_eq!(got.status, 403);
    assert_eq!(got.json()["error"]["status"], "PERMISSION_DENIED");
    assert!(setup.gateway.is_abandoned());
    assert_eq!(setup.recorder.wait(1)[0].outcome, Outcome::Abandoned);
}

#[test]
fn a_client_that_goes_away_is_still_recorded() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![MockReply::json(200, "{}").with_body(MockBody::Hang)]);
    let (path, body) = request(Protocol::OpenaiChat, false, MODEL);
    let impatient = reqwest::blocking::Client::builder().no_proxy().timeout(Duration::from_millis(300)).build().unwrap();
    let sent = impatient.post(setup.url(&path)).bearer_auth(TOKEN).body(body.to_string()).send();
    assert!(sent.is_err(), "the client gives up");
    let record = &setup.recorder.wait(1)[0];
    assert_eq!(record.outcome, Outcome::ClientGone);
    assert_eq!(record.status, 499);
}

#[test]
fn a_stalled_request_body_is_cut_when_the_gateway_is_abandoned_and_kept_as_far_as_received() {
    // Issue 31 item 3: headers, then 1 of 1,000 body bytes, then nothing. The exchange must
    // end when the gateway is abandoned (the wall budget), not when the stop gives up on it.
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let addr = setup.addr();
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
    );
    std::io::Write::write_all(&mut client, head.as_bytes()).unwrap();
    let waited = Instant::now();
    while setup.gateway.in_flight() == 0 {
        assert!(waited.elapsed() < PATIENCE, "the stalled request never began");
        std::thread::sleep(Duration::from_millis(5));
    }
    setup.gateway.abandon();
    // Recorded while the client still holds its connection open, mid-body.
    let record = setup.recorder.wait(1)[0].clone();
    assert_eq!(record.outcome, Outcome::Abandoned);
    assert_eq!(record.status, 403);
    assert_eq!(record.incomplete_body.as_ref().map(|b| b.bytes.to_vec()), Some(b"{".to_vec()));
    assert_eq!(setup.gateway.report().abandoned_exchanges, 1);
    let mut answer = vec![0u8; 12];
    client.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 403");
    let journal = setup.journal_text();
    let entry: serde_json::Value =
        journal.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["kind"] == "exchange").unwrap();
    assert_eq!((entry["outcome"]["outcome"].as_str(), entry["body_incomplete"].as_bool()), (Some("abandoned"), Some(true)), "{entry}");
    assert_eq!(setup.gateway.rebuild_request(0).map(|r| r.body), Some(b"{".to_vec()));
    assert_eq!(setup.mock.request_count(), 0, "nothing of it was forwarded");
    let report = setup.gateway.shutdown().unwrap();
    assert_eq!((report.exchanges, report.abandoned_exchanges), (1, 1));
}

#[test]
fn a_main_stream_counts_from_its_first_byte_until_its_exchange_is_recorded() {
    // A CLI may act on a tool call it has read before the stream ends; the engine holds the
    // call while `main_streams` is above 0, so the count must drop only after the record.
    let mut reply = replies::openai_chat_stream(MODEL, "ok", &[], tokens());
    let chunks = reply.chunks();
    reply = reply.with_body(MockBody::Stall(chunks[..1].to_vec()));
    let setup = Setup::new(Protocol::OpenaiChat, vec![reply]);
    assert_eq!(setup.gateway.main_streams(), 0);
    let (path, body) = request(Protocol::OpenaiChat, true, MODEL);
    let mut response = client().post(setup.url(&path)).bearer_auth(TOKEN).body(body.to_string()).send().unwrap();
    let mut first = vec![0u8; chunks[0].len()];
    response.read_exact(&mut first).unwrap();
    assert_eq!(first, chunks[0], "the first chunk reached the client");
    assert_eq!((setup.gateway.main_streams(), setup.recorder.records().len()), (1, 0), "streaming, not yet recorded");
    setup.gateway.abandon();
    let record = setup.recorder.wait(1)[0].clone();
    assert_eq!(record.outcome, Outcome::Abandoned);
    let waited = Instant::now();
    while setup.gateway.main_streams() > 0 {
        assert!(waited.elapsed() < PATIENCE, "the stream still counts after its record");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A whole stream: nothing counts once the client has read its end.
    let setup = Setup::new(Protocol::OpenaiChat, vec![replies::openai_chat_stream(MODEL, "ok", &[], tokens())]);
    let got = setup.send(true);
    assert_eq!(got.status, 200);
    assert_eq!((setup.gateway.main_streams(), setup.recorder.records().len()), (0, 1));
}
