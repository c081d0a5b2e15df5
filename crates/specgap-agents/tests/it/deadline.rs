//! The chat client against the episode's deadline and usage sink, without the engine: a slow
//! reply, a stop request and a long backoff are abandoned at the deadline, and every try's
//! usage is in the sink as soon as the try ends (issue 10 items 1 and 5).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use specgap_agents::chat::{ChatAgent, ChatConfig, ChatUser, UserKnowledge};
use specgap_engine::condition::Condition;
use specgap_engine::session::{Agent, AgentReply, Deadline, Opening, Question, SessionLink, UsageSink, User};
use specgap_protocol::event::Usage;
use specgap_store::Role;

use crate::mock_server::{MockServer, Scripted, completion};

/// A reply slower than anything a test waits for.
const FOREVER: Duration = Duration::from_secs(120);

fn config(server: &MockServer) -> ChatConfig {
    let mut c = ChatConfig::new("test-model");
    c.base_url = server.url.clone();
    c.api_key_env = "SPECGAP_TEST_NO_SUCH_KEY".into();
    c.retry_base_ms = 1;
    c.max_retries = 2;
    c
}

fn opening() -> Opening {
    Opening { system_prompt: "You are tested.".into(), message: "Do the work.".into(), tools: vec![] }
}

/// A link whose deadline is `after` from now, with a summing sink.
fn link_ending_in(after: Duration, role: Role) -> SessionLink {
    SessionLink { deadline: Deadline::at(Instant::now() + after), usage: UsageSink::detached(role) }
}

fn agent_with(config: &ChatConfig, link: &SessionLink) -> ChatAgent {
    let mut agent = ChatAgent::new(config, 1).unwrap();
    agent.attach(link);
    agent.start(&opening()).unwrap();
    agent
}

#[test]
fn a_reply_slower_than_the_deadline_is_abandoned_at_the_deadline() {
    let server = MockServer::start(|_, _| Scripted::after(FOREVER, Scripted::json(completion(Some("late"), &[], "stop"))));
    let link = link_ending_in(Duration::from_secs(1), Role::Agent);
    let mut agent = agent_with(&config(&server), &link);
    assert_eq!(agent.next_turn(&[]).unwrap(), AgentReply::Abandoned);
    assert_eq!(server.requests().len(), 1, "an abandoned request is not retried");
    let spent = link.usage.total();
    assert_eq!((spent.requests, spent.retries, spent.input_tokens), (0, 0, 0), "no reply, no tokens");
    // The recorded wait is the deadline's second, not the reply's two minutes.
    assert!(spent.latency_ms < 1000 + 5000, "latency {} ms", spent.latency_ms);
    assert_eq!(agent.usage(), spent);
}

#[test]
fn a_stop_request_abandons_a_request_in_flight() {
    let server = MockServer::start(|_, _| Scripted::Hang);
    let stop = Arc::new(AtomicBool::new(false));
    let link = SessionLink { deadline: Deadline::none().with_stop(Arc::clone(&stop)), usage: UsageSink::detached(Role::Agent) };
    let mut agent = agent_with(&config(&server), &link);
    let requests = Arc::new(server);
    let watcher = {
        let (requests, stop) = (Arc::clone(&requests), Arc::clone(&stop));
        std::thread::spawn(move || {
            while requests.requests().is_empty() {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.store(true, Ordering::SeqCst);
        })
    };
    assert_eq!(agent.next_turn(&[]).unwrap(), AgentReply::Abandoned);
    watcher.join().unwrap();
    assert_eq!(requests.requests().len(), 1);
    // The default request timeout is 600 s; the stop cut the wait to well under it.
    assert!(link.usage.total().latency_ms < 10_000, "{:?}", link.usage.total());
}

#[test]
fn a_backoff_longer_than_the_time_left_ends_at_the_deadline() {
    // Retry-After asks for ten minutes; the deadline is a second away.
    let server = MockServer::start(|_, _| Scripted::Respond(503, vec![("Retry-After".into(), "600".into())], "busy".into()));
    let link = link_ending_in(Duration::from_secs(1), Role::Agent);
    let mut agent = agent_with(&config(&server), &link);
    // The service was failing when the budget ended: an infrastructure error, not the agent's
    // end (issue 31 item 5).
    let error = agent.next_turn(&[]).unwrap_err();
    assert!(!error.deterministic);
    assert_eq!(
        specgap_protocol::text::error_chain(&error),
        "no reply from the model service: the model service was still failing when the wall budget ended (1 failed try); \
         last fault: http 503: busy"
    );
    assert_eq!(server.requests().len(), 1);
    let spent = link.usage.total();
    assert_eq!((spent.requests, spent.retries), (1, 1));
}

#[test]
fn every_try_is_in_the_sink_as_soon_as_it_ends() {
    let sink = UsageSink::detached(Role::Agent);
    let seen_by_third_request = Arc::new(std::sync::Mutex::new(None::<Usage>));
    let server = {
        let (sink, seen) = (sink.clone(), Arc::clone(&seen_by_third_request));
        MockServer::start(move |_, n| match n {
            0 | 1 => Scripted::status(500, "oops"),
            _ => {
                *seen.lock().unwrap() = Some(sink.total());
                Scripted::json(completion(Some("ok"), &[], "stop"))
            }
        })
    };
    let link = SessionLink { deadline: Deadline::none(), usage: sink.clone() };
    let mut agent = agent_with(&config(&server), &link);
    assert!(matches!(agent.next_turn(&[]).unwrap(), AgentReply::Turn { .. }));
    let before = seen_by_third_request.lock().unwrap().clone().unwrap();
    assert_eq!((before.requests, before.retries, before.input_tokens), (2, 2, 0), "both failed tries were recorded before the third");
    let after = sink.total();
    assert_eq!((after.requests, after.retries, after.input_tokens, after.output_tokens), (3, 2, 100, 20));
}

fn user_with(server: &MockServer, link: &SessionLink) -> ChatUser {
    let package = specgap_task::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/payment-retry")).unwrap();
    let knowledge = UserKnowledge::for_episode(&package, &Condition::parse("partial").unwrap());
    let mut user = ChatUser::new(&config(server), knowledge, 2).unwrap();
    user.attach(link);
    user
}

fn question() -> Question {
    Question { index: 0, turn: 1, text: "Which records should I trust?".into() }
}

#[test]
fn a_slow_user_reply_is_abandoned_at_the_deadline() {
    let server = MockServer::start(|_, _| Scripted::after(FOREVER, Scripted::json(completion(Some("late"), &[], "stop"))));
    let link = link_ending_in(Duration::from_secs(1), Role::User);
    let error = user_with(&server, &link).answer(&question()).unwrap_err();
    assert!(error.abandoned && !error.deterministic, "{error:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(link.usage.total().latency_ms < 1000 + 5000);
}

#[test]
fn a_failing_user_model_still_records_the_requests_it_made() {
    // Empty replies: three answered requests, then the user gives up.
    let empty = MockServer::start(|_, _| Scripted::json(completion(Some("  "), &[], "stop")));
    let link = SessionLink::detached(Role::User);
    let error = user_with(&empty, &link).answer(&question()).unwrap_err();
    assert!(!error.abandoned);
    let spent = link.usage.total();
    assert_eq!((spent.requests, spent.retries, spent.input_tokens, spent.output_tokens), (3, 0, 300, 60));

    // HTTP 500 throughout: one try and max_retries = 2 retries, all recorded.
    let failing = MockServer::start(|_, _| Scripted::status(500, "down"));
    let link = SessionLink::detached(Role::User);
    user_with(&failing, &link).answer(&question()).unwrap_err();
    let spent = link.usage.total();
    assert_eq!((spent.requests, spent.retries, failing.requests().len()), (3, 2, 3));
}
