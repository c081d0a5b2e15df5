//! A supervisor whose admission waits (the engine holding the next turn until it has taken the
//! previous exchange into account): the wait blocks only that request, never the gateway, and
//! abandonment wins over it.

use std::net::TcpListener;
use std::sync::{Arc, Condvar, Mutex};

use serde_json::json;
use specgap_gateway::mock::MockUpstream;
use specgap_gateway::mock::replies::{self, Tokens};
use specgap_gateway::{Admission, ExchangeRecord, Outcome, Protocol, RefusalReason, RequestClass, RequestInfo, Supervisor, serve_tcp};

use crate::support::*;

/// Holds every main-loop request until `open`; side requests (no tools) pass at once.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
    waiting: Mutex<usize>,
    records: Mutex<Vec<ExchangeRecord>>,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }

    /// Waits until `n` requests are held.
    fn wait_held(&self, n: usize) {
        let waiting = self.waiting.lock().unwrap();
        let (waiting, _) = self.changed.wait_timeout_while(waiting, PATIENCE, |w| *w < n).unwrap();
        assert!(*waiting >= n, "only {} requests reached the gate", *waiting);
    }
}

impl Supervisor for Gate {
    fn classify(&self, info: &RequestInfo, _body: &[u8]) -> RequestClass {
        if info.tool_count == 0 { RequestClass::Side } else { RequestClass::Main }
    }

    fn admission_waits(&self) -> bool {
        true
    }

    fn admit(&self, info: &RequestInfo) -> Admission {
        if info.class == RequestClass::Side {
            return Admission::Admit;
        }
        *self.waiting.lock().unwrap() += 1;
        self.changed.notify_all();
        let open = self.open.lock().unwrap();
        let (open, _) = self.changed.wait_timeout_while(open, PATIENCE, |o| !*o).unwrap();
        if *open { Admission::Admit } else { Admission::refuse("the gate stayed shut") }
    }

    fn exchange_done(&self, record: &ExchangeRecord) {
        self.records.lock().unwrap().push(record.clone());
    }
}

fn gateway(gate: &Arc<Gate>, script: Vec<specgap_gateway::mock::MockReply>) -> (specgap_gateway::GatewayHandle, MockUpstream) {
    let mock = MockUpstream::start(script).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = serve_tcp(listener, config(&mock, Protocol::OpenaiChat), gate.clone()).unwrap();
    (handle, mock)
}

fn url(handle: &specgap_gateway::GatewayHandle) -> String {
    format!("{}/chat/completions", handle.base_url(Protocol::OpenaiChat).unwrap())
}

#[test]
fn a_held_turn_waits_alone_while_side_requests_are_served() {
    let gate = Arc::new(Gate::default());
    let t = Tokens { input: 7, output: 3, ..Tokens::default() };
    let (handle, mock) = gateway(&gate, vec![replies::openai_chat(MODEL, "a title", &[], t), replies::openai_chat(MODEL, "done", &[], t)]);
    let (_, turn) = request(Protocol::OpenaiChat, false, MODEL);
    let target = url(&handle);
    let held = std::thread::spawn(move || Reply::from(client().post(target).bearer_auth(TOKEN).json(&turn).send().unwrap()));
    gate.wait_held(1);
    assert_eq!(mock.request_count(), 0, "a held turn is not forwarded");
    let side = json!({"model": MODEL, "messages": [{"role": "user", "content": "Title this."}]});
    let served = Reply::from(client().post(url(&handle)).bearer_auth(TOKEN).json(&side).send().unwrap());
    assert_eq!((served.status, mock.request_count()), (200, 1), "the side request went through while the turn was held");
    gate.open();
    let turn = held.join().unwrap();
    assert_eq!(turn.status, 200, "{}", turn.text());
    assert_eq!(mock.request_count(), 2);
    let report = handle.shutdown().unwrap();
    assert_eq!((report.exchanges, report.main_requests), (2, 1));
}

#[test]
fn abandoning_the_gateway_refuses_a_held_turn_at_once() {
    let gate = Arc::new(Gate::default());
    let (handle, mock) = gateway(&gate, vec![]);
    let (_, turn) = request(Protocol::OpenaiChat, true, MODEL);
    let target = url(&handle);
    let held = std::thread::spawn(move || Reply::from(client().post(target).bearer_auth(TOKEN).json(&turn).send().unwrap()));
    gate.wait_held(1);
    handle.abandon();
    let refused = held.join().unwrap();
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], "episode_ended");
    // The supervisor's late answer changes nothing.
    gate.open();
    drop(handle);
    assert_eq!(mock.request_count(), 0);
    let records = gate.records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    assert!(matches!(&records[0].outcome, Outcome::Refused { reason: RefusalReason::Ended, .. }), "{:?}", records[0].outcome);
    assert!(!records[0].is_turn());
}
