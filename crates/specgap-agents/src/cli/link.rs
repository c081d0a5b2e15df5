//! What the gateway's thread, the bridge and the engine's thread share for one `cli:`
//! episode: the queue of things the agent did, in order, and the permissions the engine gives.
//!
//! * The gateway's [`Supervisor::exchange_done`] pushes every exchange (and writes its usage
//!   to the store at once, so `--max-cost` sees it while the episode runs).
//! * [`Supervisor::admit`] of a main-loop request pushes a turn request and waits until the
//!   engine has taken everything before it into account and asked for the next step (a grant),
//!   or the episode ended (a refusal): so a budget or loop rule that ends the episode refuses
//!   exactly the request after it (issue 14 item 4: "past a budget the request is refused").
//!   Side requests are admitted while the episode runs.
//! * The bridge pushes harness calls; the agent's program exit is pushed by the engine's
//!   thread, which watches the sandbox.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use specgap_engine::session::{Deadline, UsageSink};
use specgap_gateway::{Admission, ExchangeRecord, RequestClass, RequestInfo, Supervisor};
use specgap_protocol::event::Usage;

use crate::chat::Price;

/// How often a waiting admission looks at the deadline.
const ADMIT_POLL: Duration = Duration::from_millis(50);

/// Something the agent did, for the engine.
#[derive(Debug)]
pub(crate) enum Happened {
    /// A model exchange ended.
    Exchange(Box<ExchangeRecord>),
    /// The next main-loop request (ticket) waits for the engine's permission.
    TurnRequested(u64),
    /// A harness tool call, answered through the handle.
    Call(Box<dyn super::harness::PendingCall>),
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Happened>,
    /// Turn requests pushed so far (the last ticket).
    requested: u64,
    /// Turn requests the engine let through so far (tickets up to this one are admitted).
    granted: u64,
    /// Why nothing more is admitted, once the episode is over.
    ended: Option<String>,
}

/// The shared queue and permissions (module guide).
#[derive(Debug, Default)]
pub(crate) struct Link {
    state: Mutex<State>,
    changed: Condvar,
}

impl Link {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds something that happened and wakes the engine.
    pub(crate) fn push(&self, happened: Happened) {
        self.lock().queue.push_back(happened);
        self.changed.notify_all();
    }

    /// The next thing that happened, waiting at most until `until`.
    pub(crate) fn next(&self, until: Instant) -> Option<Happened> {
        let mut state = self.lock();
        loop {
            if let Some(happened) = state.queue.pop_front() {
                return Some(happened);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            state = self.changed.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// Whether a model exchange waits in the queue.
    pub(crate) fn has_exchange(&self) -> bool {
        self.lock().queue.iter().any(|happened| matches!(happened, Happened::Exchange(_)))
    }

    /// Lets the turn request `ticket` (and every earlier one) through.
    pub(crate) fn grant(&self, ticket: u64) {
        let mut state = self.lock();
        state.granted = state.granted.max(ticket);
        drop(state);
        self.changed.notify_all();
    }

    /// Ends the episode for the agent: every waiting and later request is refused with
    /// `why`. Returns what was still queued (harness calls among it must be answered).
    pub(crate) fn end(&self, why: &str) -> Vec<Happened> {
        let mut state = self.lock();
        state.ended.get_or_insert_with(|| why.to_string());
        let left = state.queue.drain(..).collect();
        drop(state);
        self.changed.notify_all();
        left
    }

    /// Whether the episode is over for the agent.
    pub(crate) fn is_ended(&self) -> bool {
        self.lock().ended.is_some()
    }

    /// A main-loop request asks to be forwarded: queued as a turn request, then held until
    /// the engine grants it, the episode ends or the deadline is over.
    fn request_turn(&self, deadline: &Deadline) -> Admission {
        let mut state = self.lock();
        if let Some(why) = &state.ended {
            return Admission::refuse(why.clone());
        }
        state.requested += 1;
        let ticket = state.requested;
        state.queue.push_back(Happened::TurnRequested(ticket));
        self.changed.notify_all();
        loop {
            if let Some(why) = &state.ended {
                return Admission::refuse(why.clone());
            }
            if state.granted >= ticket {
                return Admission::Admit;
            }
            if deadline.is_over() {
                return Admission::refuse("the episode has ended (its time is up)");
            }
            state = self.changed.wait_timeout(state, ADMIT_POLL).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

/// The gateway's supervisor for one `cli:` episode.
pub(crate) struct Supervision {
    pub(crate) link: Arc<Link>,
    pub(crate) deadline: Deadline,
    pub(crate) usage: UsageSink,
    pub(crate) price: Option<Price>,
    /// Whether a generating request without tools is a side request (titles, summaries).
    pub(crate) toolless_is_side: bool,
}

impl Supervisor for Supervision {
    fn classify(&self, info: &RequestInfo, _body: &[u8]) -> RequestClass {
        if self.toolless_is_side && info.tool_count == 0 && info.endpoint.generates() { RequestClass::Side } else { info.default_class() }
    }

    fn admission_waits(&self) -> bool {
        true
    }

    fn admit(&self, info: &RequestInfo) -> Admission {
        match info.class {
            RequestClass::Main => self.link.request_turn(&self.deadline),
            RequestClass::Side if self.link.is_ended() => Admission::refuse("the episode has ended; no more model requests are served"),
            RequestClass::Side => Admission::Admit,
        }
    }

    fn price(&self, _model: &str, usage: &Usage, _cache_creation_tokens: u64) -> f64 {
        self.price.map_or(0.0, |p| p.cost(usage))
    }

    fn exchange_done(&self, record: &ExchangeRecord) {
        if record.usage != Usage::default() {
            self.usage.record(&record.usage);
        }
        self.link.push(Happened::Exchange(Box::new(record.clone())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_request_waits_for_its_grant_and_an_end_refuses_it() {
        let link = Arc::new(Link::default());
        let waiting = {
            let link = link.clone();
            std::thread::spawn(move || link.request_turn(&Deadline::none()))
        };
        let Some(Happened::TurnRequested(ticket)) = link.next(Instant::now() + Duration::from_secs(30)) else { panic!("no request") };
        assert_eq!(ticket, 1);
        link.grant(ticket);
        assert_eq!(waiting.join().unwrap(), Admission::Admit);
        let refused = {
            let link = link.clone();
            std::thread::spawn(move || link.request_turn(&Deadline::none()))
        };
        assert!(matches!(link.next(Instant::now() + Duration::from_secs(30)), Some(Happened::TurnRequested(2))));
        assert!(link.end("the turn budget is used up").is_empty());
        assert_eq!(refused.join().unwrap(), Admission::refuse("the turn budget is used up"));
        assert_eq!(link.request_turn(&Deadline::none()), Admission::refuse("the turn budget is used up"));
    }
}
