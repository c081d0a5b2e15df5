//! The endpoint over a real Unix socket: round trips, the checks it makes before the engine
//! sees anything, one call at a time, the end flag, and a harness that goes away.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use specgap_bridge::command::{self, exit};
use specgap_bridge::endpoint::{EPISODE_OVER, HARNESS_GONE};
use specgap_bridge::{Asked, BridgeClient, BridgeEndpoint, CallReceiver, ClientError, EndpointError, HarnessTool, Offer, Response};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

struct Fixture {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    endpoint: BridgeEndpoint,
    calls: Option<CallReceiver>,
}

fn fixture(offer: Offer) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("bridge.sock");
    let (endpoint, calls) = BridgeEndpoint::bind(&socket, TOKEN, offer).unwrap();
    Fixture { _dir: dir, socket, endpoint, calls: Some(calls) }
}

/// Answers every call with `reply(call)` on a thread, recording (tool, arguments).
fn serve(calls: CallReceiver, reply: impl Fn(HarnessTool, &Value) -> Response + Send + 'static) -> Arc<Mutex<Vec<(HarnessTool, Value)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        calls.serve(|call| {
            record.lock().unwrap().push((call.tool(), call.arguments().clone()));
            reply(call.tool(), call.arguments())
        });
    });
    seen
}

/// Sends raw lines on one connection and returns the response lines (until the endpoint
/// closes or `lines.len()` responses came).
fn raw(socket: &PathBuf, lines: &[&[u8]]) -> Vec<Value> {
    let mut stream = UnixStream::connect(socket).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut responses = Vec::new();
    for line in lines {
        if stream.write_all(line).and_then(|()| stream.write_all(b"\n")).is_err() {
            break;
        }
        let mut text = String::new();
        if reader.read_line(&mut text).unwrap_or(0) == 0 {
            break;
        }
        responses.push(serde_json::from_str(&text).unwrap());
    }
    responses
}

fn client(socket: &PathBuf) -> BridgeClient {
    BridgeClient::new(socket, TOKEN)
}

#[test]
fn ask_user_round_trips_to_the_engine_and_back() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    let seen = serve(f.calls.take().unwrap(), |_, args| {
        Response::ok(format!("you asked: {}", args.get("question").and_then(Value::as_str).unwrap_or("")))
    });
    let response = client(&f.socket).call(HarnessTool::AskUser, json!({"question": "Which records are authoritative?"})).unwrap();
    assert_eq!(response, Response::ok("you asked: Which records are authoritative?"));
    let questions = client(&f.socket).call(HarnessTool::AskUser, json!({"questions": ["a?", "b?"]})).unwrap();
    assert_eq!(questions.text, "you asked: ", "an array is passed through as sent");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (HarnessTool::AskUser, json!({"question": "Which records are authoritative?"})),
            (HarnessTool::AskUser, json!({"questions": ["a?", "b?"]}))
        ]
    );
    assert!(!f.endpoint.is_ended());
}

#[test]
fn the_tool_list_is_the_current_offer() {
    let f = fixture(Offer::standard(Some(Asked::Client), true));
    let names = |specs: Vec<specgap_protocol::event::ToolSpec>| specs.into_iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(names(client(&f.socket).tools().unwrap()), ["ask_user", "submit", "write_plan"]);
    f.endpoint.set_offer(Offer::standard(None, false));
    assert_eq!(names(client(&f.socket).tools().unwrap()), ["submit"]);
}

#[test]
fn tools_that_are_not_offered_never_reach_the_engine() {
    let mut f = fixture(Offer::standard(None, false));
    let seen = serve(f.calls.take().unwrap(), |_, _| Response::ok("reached"));
    let refused = client(&f.socket).call(HarnessTool::AskUser, json!({"question": "q"})).unwrap();
    assert_eq!(refused, Response::error("`ask_user` is not available in this episode"));
    let plan = client(&f.socket).call(HarnessTool::WritePlan, json!({"plan": "p"})).unwrap();
    assert_eq!(plan, Response::error("`write_plan` is not available in this episode"));
    let responses =
        raw(&f.socket, &[br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"call","tool":"bash","arguments":{"command":"id"}}"#]);
    assert_eq!(
        responses,
        [
            json!({"text": "the bridge serves only ask_user, submit and write_plan; `bash` is not one of them", "is_error": true, "end": false})
        ]
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn malformed_lines_get_errors_and_the_connection_goes_on() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    let seen = serve(f.calls.take().unwrap(), |_, _| Response::ok("fine"));
    let responses = raw(
        &f.socket,
        &[
            b"not json",
            b"\xff\xfe",
            br#"{"v":2,"token":"x","op":"tools"}"#,
            br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"call"}"#,
            br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"call","tool":"submit","arguments":[1]}"#,
            br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"call","tool":"submit"}"#,
        ],
    );
    let texts: Vec<&str> = responses.iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert_eq!(texts.len(), 6);
    assert!(texts[0].starts_with("bad bridge request: expected ident"), "{}", texts[0]);
    assert!(texts[1].starts_with("bad bridge request: "), "{}", texts[1]);
    assert_eq!(texts[2], "bridge protocol version 2 is not served (this harness speaks 1)");
    assert_eq!(texts[3], "a call must name its tool");
    assert_eq!(texts[4], "the arguments of `submit` must be a JSON object");
    assert_eq!(responses[5], json!({"text": "fine", "is_error": false, "end": false}));
    assert!(responses[..5].iter().all(|r| r["is_error"] == true));
    assert_eq!(*seen.lock().unwrap(), [(HarnessTool::Submit, json!({}))], "a call without arguments has {{}}");
}

#[test]
fn a_wrong_token_closes_the_connection() {
    let f = fixture(Offer::standard(Some(Asked::Owner), false));
    let responses = raw(
        &f.socket,
        &[br#"{"v":1,"token":"guess","op":"tools"}"#, br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"tools"}"#],
    );
    assert_eq!(responses, [json!({"text": "wrong bridge token", "is_error": true, "end": false})]);
    let wrong = BridgeClient::new(&f.socket, "0123456789abcdef0123456789abcdeX").tools().unwrap_err();
    assert_eq!(wrong.to_string(), "the specgap harness sent something that is not a bridge response: wrong bridge token");
}

#[test]
fn an_over_long_line_is_refused_and_closes_the_connection() {
    let f = fixture(Offer::standard(Some(Asked::Owner), false));
    let mut line = br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"call","tool":"ask_user","arguments":{"question":""#.to_vec();
    line.resize(line.len() + specgap_bridge::wire::MAX_REQUEST_BYTES, b'x');
    line.extend_from_slice(br#""}}"#);
    let responses = raw(&f.socket, &[&line, br#"{"v":1,"token":"0123456789abcdef0123456789abcdef","op":"tools"}"#]);
    assert_eq!(responses, [json!({"text": "request line longer than 1048576 bytes", "is_error": true, "end": false})]);
}

#[test]
fn a_second_call_waits_for_the_first_to_be_answered() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    let calls = f.calls.take().unwrap();
    let first = std::thread::spawn({
        let c = client(&f.socket);
        move || c.call(HarnessTool::AskUser, json!({"question": "first"})).unwrap()
    });
    let pending = calls.recv().unwrap();
    assert_eq!(pending.arguments(), &json!({"question": "first"}));
    let second = std::thread::spawn({
        let c = client(&f.socket);
        move || c.call(HarnessTool::Submit, json!({"summary": "second"})).unwrap()
    });
    // The second call is not handed over while the first is unanswered.
    assert!(matches!(calls.recv_timeout(Duration::from_millis(300)), Err(RecvTimeoutError::Timeout)));
    pending.respond(Response::ok("answer one"));
    let next = calls.recv().unwrap();
    assert_eq!(next.to_tool_call("call-7").tool, "submit");
    assert_eq!(next.to_tool_call("call-7").arguments, json!({"summary": "second"}));
    next.respond(Response::ok("feedback two"));
    assert_eq!(first.join().unwrap().text, "answer one");
    assert_eq!(second.join().unwrap().text, "feedback two");
}

#[test]
fn after_an_answer_marked_end_calls_are_refused_without_the_engine() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    let seen = serve(f.calls.take().unwrap(), |tool, _| match tool {
        HarnessTool::Submit => Response::ok("Accepted.").ended(),
        _ => Response::ok("answer"),
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = command::run(HarnessTool::Submit, &["done".into()], Ok(client(&f.socket)), &mut out, &mut err);
    assert_eq!((status, String::from_utf8(out).unwrap(), err.len()), (exit::OK, "Accepted.\n".into(), 0));
    assert!(f.endpoint.is_ended());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = command::run(HarnessTool::AskUser, &["still there?".into()], Ok(client(&f.socket)), &mut out, &mut err);
    assert_eq!(status, exit::ENDED);
    assert_eq!(String::from_utf8(err).unwrap(), format!("{EPISODE_OVER}\n"));
    assert!(out.is_empty());
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn submit_returned_with_feedback_prints_it_and_exits_1() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    serve(f.calls.take().unwrap(), |_, _| {
        Response::ok("Not accepted yet. The owner writes: the nightly report still lists last week's hosts.")
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = command::run(HarnessTool::Submit, &[], Ok(client(&f.socket)), &mut out, &mut err);
    assert_eq!(status, exit::FEEDBACK);
    assert_eq!(String::from_utf8(out).unwrap(), "Not accepted yet. The owner writes: the nightly report still lists last week's hosts.\n");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(command::run(HarnessTool::Submit, &["a".into(), "b".into()], Ok(client(&f.socket)), &mut out, &mut err), exit::USAGE);
}

#[test]
fn an_unanswered_call_tells_the_client_the_harness_is_gone() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    let calls = f.calls.take().unwrap();
    let waiting = std::thread::spawn({
        let c = client(&f.socket);
        move || c.call(HarnessTool::AskUser, json!({"question": "q"})).unwrap()
    });
    drop(calls.recv().unwrap());
    assert_eq!(waiting.join().unwrap(), Response::error(HARNESS_GONE).ended());
}

#[test]
fn dropping_the_endpoint_ends_waiting_calls_and_removes_the_socket() {
    let mut f = fixture(Offer::standard(Some(Asked::Owner), false));
    let calls = f.calls.take().unwrap();
    let waiting = std::thread::spawn({
        let c = client(&f.socket);
        move || c.call(HarnessTool::AskUser, json!({"question": "q"})).unwrap()
    });
    let pending = calls.recv().unwrap();
    let Fixture { _dir, socket, endpoint, .. } = f;
    drop(endpoint);
    assert_eq!(waiting.join().unwrap(), Response::error(HARNESS_GONE).ended());
    pending.respond(Response::ok("too late"));
    assert!(!socket.exists());
    let gone = client(&socket).call(HarnessTool::AskUser, json!({"question": "q"})).unwrap_err();
    assert!(matches!(gone, ClientError::Unreachable { .. }), "{gone:?}");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(command::run(HarnessTool::AskUser, &["q".into()], Ok(client(&socket)), &mut out, &mut err), exit::UNREACHABLE);
    assert!(String::from_utf8(err).unwrap().starts_with("ask_user: the specgap harness cannot be reached at "));
    assert!(calls.recv().is_none());
}

#[test]
fn the_socket_path_must_be_new_and_short() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken");
    std::fs::write(&taken, "").unwrap();
    let offer = Offer::standard(None, false);
    assert!(matches!(BridgeEndpoint::bind(&taken, TOKEN, offer.clone()), Err(EndpointError::Exists { .. })));
    let long = dir.path().join("x".repeat(120));
    let error = BridgeEndpoint::bind(&long, TOKEN, offer).unwrap_err();
    assert!(matches!(error, EndpointError::PathTooLong { .. }));
    assert!(error.to_string().ends_with("Unix sockets allow at most 107"), "{error}");
}
