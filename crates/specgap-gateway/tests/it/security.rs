//! The security rules: only the token opens the gateway, the real key never comes back,
//! nothing off the allow-list reaches the upstream.

use serde_json::json;
use specgap_gateway::mock::replies::{self, Tokens};
use specgap_gateway::mock::{MockBody, MockReply};
use specgap_gateway::{Journal, Outcome, Protocol, RefusalReason};

use crate::support::*;

fn refusal_reason(setup: &Setup, n: usize) -> Vec<RefusalReason> {
    setup
        .recorder
        .wait(n)
        .iter()
        .map(|r| match &r.outcome {
            Outcome::Refused { reason, .. } => *reason,
            other => panic!("not refused: {other:?}"),
        })
        .collect()
}

#[test]
fn a_missing_wrong_or_misplaced_token_gets_401_and_reaches_nothing() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let (path, body) = request(Protocol::OpenaiChat, false, MODEL);
    let body = body.to_string().into_bytes();
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![],
        vec![("authorization", "Bearer sgw-wrong-token-000000000000000000".into())],
        vec![("authorization", format!("Basic {TOKEN}"))],
        // The right token where OpenAI clients do not send it.
        vec![("x-api-key", TOKEN.into())],
        // The right token plus another credential.
        vec![("authorization", format!("Bearer {TOKEN}")), ("x-api-key", REAL_KEY.into())],
        // The real key itself is not the token.
        vec![("authorization", format!("Bearer {REAL_KEY}"))],
    ];
    for headers in &cases {
        let got = setup.post(&path, body.clone(), headers);
        assert_eq!(got.status, 401, "{headers:?}: {}", got.text());
        assert_eq!(got.json()["error"]["type"], "authentication_error");
        assert!(!got.contains(REAL_KEY));
    }
    assert_eq!(setup.mock.request_count(), 0);
    assert!(refusal_reason(&setup, cases.len()).iter().all(|r| *r == RefusalReason::Unauthorized));
}

#[test]
fn the_canary_key_never_reaches_the_client_even_when_the_upstream_echoes_it() {
    let echo_body =
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {REAL_KEY}. You sent {TOKEN}.","type":"invalid_request_error"}}}}"#);
    let rejected = MockReply::json(401, echo_body.clone()).with_header("x-echo-key", REAL_KEY);
    // A retried error whose echo is in the fault message, then a stream that splits the key
    // across chunks.
    let retried = MockReply::json(500, echo_body);
    let mut stream = replies::openai_chat_stream(MODEL, "ok", &[], Tokens::default());
    let mut chunks = stream.chunks();
    let (a, b) = REAL_KEY.split_at(9);
    chunks.insert(1, format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"leak {a}").into_bytes());
    chunks.insert(2, format!("{b}\"}}}}]}}\n\n").into_bytes());
    stream = stream.with_body(MockBody::Chunks(chunks)).with_header("set-cookie", &format!("session={REAL_KEY}"));
    let setup = Setup::new(Protocol::OpenaiChat, vec![rejected, retried, stream]);

    let first = setup.send(false);
    assert_eq!(first.status, 401, "the upstream's own rejection is forwarded");
    let second = setup.send(true);
    assert_eq!(second.status, 200);
    for reply in [&first, &second] {
        assert!(!reply.contains(REAL_KEY), "key leaked: {:?} {}", reply.headers, reply.text());
        assert!(!reply.contains(&REAL_KEY[..20]));
        assert!(!reply.contains(TOKEN), "token echoed: {:?} {}", reply.headers, reply.text());
    }
    assert!(first.text().contains("Incorrect API key provided: [redacted]. You sent [redacted]."), "{}", first.text());
    assert_eq!(first.header("x-echo-key"), Some("[redacted]"));
    assert!(second.text().contains("leak [redacted]"), "{}", second.text());
    assert_eq!(second.header("set-cookie"), None, "upstream cookies are not handed on");

    let records = setup.recorder.wait(2);
    assert_eq!(records[0].outcome, Outcome::UpstreamRejected);
    assert_eq!(records[1].outcome, Outcome::Completed);
    assert_eq!(records[1].usage.retries, 1);
    let journal = setup.journal_text();
    assert!(!journal.contains(REAL_KEY), "the journal holds no key");
    assert!(!journal.contains(TOKEN), "the journal holds no token");
    assert!(journal.contains("Bearer [key]"));
    // Nothing the gateway records or reports carries it either.
    let debug = format!("{records:?} {:?}", setup.gateway.report());
    assert!(!debug.contains(REAL_KEY) && !debug.contains(TOKEN));
}

#[test]
fn connect_absolute_uris_foreign_hosts_and_other_methods_are_refused_before_the_upstream() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let addr = setup.addr();
    let body = request(Protocol::OpenaiChat, false, MODEL).1.to_string();
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let post = |target: &str, host: &str| {
        format!(
            "POST {target} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let own = format!("127.0.0.1:{}", addr.port());
    let cases: Vec<(String, u16)> = vec![
        (format!("CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n{auth}Connection: close\r\n\r\n"), 405),
        (format!("CONNECT {own} HTTP/1.1\r\nHost: {own}\r\n{auth}Connection: close\r\n\r\n"), 405),
        (post("http://api.openai.com/v1/chat/completions", "api.openai.com"), 400),
        (post(&format!("http://{own}/v1/chat/completions"), &own), 400),
        (post("/v1/chat/completions", "api.openai.com"), 400),
        (post("/v1/chat/completions", &format!("127.0.0.1:{}", addr.port() + 1)), 400),
        (post("/v1/chat/completions", "127.0.0.1"), 400),
        (format!("OPTIONS * HTTP/1.1\r\nHost: {own}\r\n{auth}Connection: close\r\n\r\n"), 405),
        (format!("DELETE /v1/chat/completions HTTP/1.1\r\nHost: {own}\r\n{auth}Connection: close\r\n\r\n"), 405),
        (
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: {own}\r\nHost: evil.example\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
            ),
            400,
        ),
    ];
    for (request, status) in &cases {
        let (got, text) = raw(addr, request.as_bytes());
        assert_eq!(got, *status, "{request}\n→ {text}");
    }
    // The gateway's own host passes (and this request does reach the upstream).
    setup.mock.push(replies::openai_chat(MODEL, "ok", &[], Tokens::default()));
    let (got, text) = raw(addr, post("/v1/chat/completions", &own).as_bytes());
    assert_eq!(got, 200, "{text}");
    let (got, _) = raw(addr, post("/v1/chat/completions", &format!("localhost:{}", addr.port())).as_bytes());
    assert_eq!(got, 418, "localhost at the gateway's port is its own host too (the mock's script is empty now)");
    assert_eq!(setup.mock.request_count(), 2);
    let records = setup.recorder.wait(cases.len() + 2);
    let bad_targets = records.iter().filter(|r| matches!(r.outcome, Outcome::Refused { reason: RefusalReason::BadTarget, .. })).count();
    assert_eq!(bad_targets, cases.len());
}

#[test]
fn file_batch_and_other_endpoints_off_the_list_are_refused() {
    for protocol in Protocol::ALL {
        let setup = Setup::new(protocol, vec![]);
        let headers = auth(protocol, TOKEN);
        let paths = [
            "/v1/files",
            "/v1/batches",
            "/v1/fine_tuning/jobs",
            "/v1/uploads",
            "/v1/messages/batches",
            "/v1/responses/resp_123",
            "/v1/vector_stores",
            "/v1beta/files",
            "/upload/v1beta/files",
            "/v1beta/cachedContents",
            "/v1beta/models/mock-model-1:batchGenerateContent",
            "/%2e%2e/v1/files",
            "/v1/chat%2Fcompletions",
        ];
        for path in paths {
            let got = setup.post(path, b"{}".to_vec(), &headers);
            assert_eq!(got.status, 404, "{protocol} {path}: {}", got.text());
        }
        // Dot segments, sent as they are (HTTP clients would normalize them away).
        let own = format!("127.0.0.1:{}", setup.addr().port());
        let raw_paths = ["/v1/chat/completions/../files", "/v1/./messages", "/v1beta/models/../files", "/v1/messages/"];
        for path in raw_paths {
            let credentials: String = headers.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
            let request = format!("POST {path} HTTP/1.1\r\nHost: {own}\r\n{credentials}Content-Length: 2\r\nConnection: close\r\n\r\n{{}}");
            assert_eq!(raw(setup.addr(), request.as_bytes()).0, 404, "{protocol} {path}");
        }
        assert_eq!(setup.mock.request_count(), 0, "{protocol}");
        assert!(refusal_reason(&setup, paths.len() + raw_paths.len()).iter().all(|r| *r == RefusalReason::NotServed));
    }
    // A protocol without an upstream is not served either.
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let (path, body) = request(Protocol::AnthropicMessages, false, MODEL);
    let got = setup.post(&path, body.to_string().into_bytes(), &auth(Protocol::AnthropicMessages, TOKEN));
    assert_eq!(got.status, 404);
    assert_eq!(got.json()["type"], "error", "answered in the Anthropic shape");
}

#[test]
fn another_models_name_gets_403_and_nothing_reaches_the_upstream() {
    for (protocol, stream) in every_case() {
        let setup = Setup::new(protocol, vec![]);
        let (path, body) = request(protocol, stream, "gpt-very-expensive");
        let got = setup.post(&path, body.to_string().into_bytes(), &auth(protocol, TOKEN));
        assert_eq!(got.status, 403, "{protocol} {stream}: {}", got.text());
        assert!(got.text().contains("gpt-very-expensive"));
        assert_eq!(setup.mock.request_count(), 0, "{protocol} {stream}");
        assert_eq!(refusal_reason(&setup, 1), vec![RefusalReason::ModelNotAllowed]);
    }
}

#[test]
fn ambiguous_or_malformed_bodies_and_unknown_query_parameters_are_refused() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![]);
    let headers = auth(Protocol::OpenaiChat, TOKEN);
    let bodies: Vec<&[u8]> = vec![
        // Two models: upstreams differ on which one counts.
        br#"{"model":"mock-model-1","messages":[],"model":"gpt-very-expensive"}"#,
        br#"{"mod\u0065l":"gpt-very-expensive","model":"mock-model-1","messages":[]}"#,
        br#"{"messages":[]}"#,
        br#"{"model":["mock-model-1"],"messages":[]}"#,
        br#"not json"#,
        br#"[{"model":"mock-model-1"}]"#,
        br#"{"model":"mock-model-1"} trailing"#,
    ];
    for body in &bodies {
        let got = setup.post("/v1/chat/completions", body.to_vec(), &headers);
        assert_eq!(got.status, 400, "{}: {}", String::from_utf8_lossy(body), got.text());
    }
    let ok = request(Protocol::OpenaiChat, false, MODEL).1.to_string().into_bytes();
    let got = setup.post("/v1/chat/completions?api-version=1", ok, &headers);
    assert_eq!(got.status, 400);
    assert_eq!(setup.mock.request_count(), 0);
    assert!(refusal_reason(&setup, bodies.len() + 1).iter().all(|r| *r == RefusalReason::BadRequest));
}

#[test]
fn an_oversized_body_gets_413() {
    let setup = Setup::with(Protocol::OpenaiChat, vec![], Recorder::new(), |config| config.max_request_bytes = 1000);
    let (path, mut body) = request(Protocol::OpenaiChat, false, MODEL);
    body["messages"][1]["content"] = json!("x".repeat(2000));
    let got = setup.post(&path, body.to_string().into_bytes(), &auth(Protocol::OpenaiChat, TOKEN));
    assert_eq!(got.status, 413);
    assert_eq!(refusal_reason(&setup, 1), vec![RefusalReason::TooLarge]);
    assert_eq!(setup.mock.request_count(), 0);
}

#[test]
fn credential_cookie_and_proxy_headers_of_the_client_are_not_forwarded() {
    let setup = Setup::new(Protocol::AnthropicMessages, vec![replies::anthropic(MODEL, "ok", &[], Tokens::default())]);
    let (path, body) = request(Protocol::AnthropicMessages, false, MODEL);
    let mut headers = auth(Protocol::AnthropicMessages, TOKEN);
    for (name, value) in [
        ("cookie", "session=abc"),
        ("proxy-authorization", "Basic Zm9vOmJhcg=="),
        ("x-forwarded-for", "10.0.0.1"),
        ("forwarded", "for=10.0.0.1"),
        ("via", "1.1 sandbox"),
        ("x-goog-user-project", "billing-project"),
        ("openai-organization", "org-123"),
        ("anthropic-beta", "tools-2024-04-04"),
        ("x-stainless-lang", "js"),
    ] {
        headers.push((name, value.to_string()));
    }
    assert_eq!(setup.post(&path, body.to_string().into_bytes(), &headers).status, 200);
    let upstream = &setup.mock.requests()[0];
    for dropped in ["cookie", "proxy-authorization", "x-forwarded-for", "forwarded", "via", "x-goog-user-project", "openai-organization"] {
        assert_eq!(upstream.header(dropped), None, "{dropped} must not be forwarded");
    }
    assert_eq!(upstream.header("anthropic-beta"), Some("tools-2024-04-04"));
    assert_eq!(upstream.header("x-stainless-lang"), Some("js"));
    assert_eq!(upstream.header("x-api-key"), Some(REAL_KEY));
    assert_eq!(upstream.headers.iter().filter(|(n, _)| n == "x-api-key").count(), 1);
}

#[test]
fn the_journal_file_reads_back_without_any_secret() {
    let setup = Setup::new(Protocol::OpenaiChat, vec![replies::openai_chat(MODEL, "ok", &[], Tokens::default())]);
    assert_eq!(setup.send(false).status, 200);
    setup.recorder.wait(1);
    let journal = Journal::read(&setup.journal).unwrap();
    let rebuilt = journal.rebuild(0).unwrap();
    assert_eq!(rebuilt.body, setup.mock.requests()[0].body);
    assert!(rebuilt.headers.contains(&("authorization".into(), "Bearer [key]".into())));
}

#[test]
fn an_upstream_redirect_is_not_followed_with_the_key() {
    let elsewhere = specgap_gateway::mock::MockUpstream::start([replies::anthropic(MODEL, "stolen", &[], Tokens::default())]).unwrap();
    let redirect = MockReply::json(307, "{}").with_header("location", &format!("{}/v1/messages", elsewhere.url()));
    let setup = Setup::new(Protocol::AnthropicMessages, vec![redirect]);
    // A client that does not follow redirects either (a sandboxed one could not).
    let unfollowing = reqwest::blocking::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (path, body) = request(Protocol::AnthropicMessages, false, MODEL);
    let mut sent = unfollowing.post(setup.url(&path)).body(body.to_string());
    for (name, value) in auth(Protocol::AnthropicMessages, TOKEN) {
        sent = sent.header(name, value);
    }
    let got = sent.send().unwrap();
    assert_eq!(got.status(), 307, "the redirect is handed to the client");
    assert_eq!(setup.mock.request_count(), 1);
    assert_eq!(elsewhere.request_count(), 0, "the key went nowhere else");
    assert_eq!(setup.recorder.wait(1)[0].outcome, Outcome::UpstreamRejected);
}
