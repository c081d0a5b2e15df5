//! The wall budget binds while the agent or the user is busy (issue 10 item 1), and usage
//! reaches the store through the session link's sinks (item 5), at the engine's level.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use specgap_engine::BudgetFlags;
use specgap_engine::session::{
    Agent, AgentError, AgentReply, FeedbackContext, Incoming, Opening, Question, Reply, SessionLink, User, UserError,
};
use specgap_protocol::event::{EventKind, Usage};
use specgap_protocol::run::EndReason;
use specgap_store::Role;

use crate::support::{Options, Run, TestAgent, fixture, one, run};

fn wall(seconds: u64) -> Options {
    Options { flags: BudgetFlags { wall_sec: Some(seconds), ..BudgetFlags::default() }, ..Options::default() }
}

fn write(path: &str) -> AgentReply {
    one("write_text", json!({"path": path, "content": "x\n"}))
}

/// (k, automatic) of every submission event.
fn submissions(r: &Run) -> Vec<(u32, bool)> {
    r.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Submission { k, automatic, .. } => Some((*k, *automatic)),
            _ => None,
        })
        .collect()
}

/// The stored diff of submission `k`.
fn diff(r: &Run, k: u32) -> String {
    fs_err::read_to_string(r.episode_dir().join(format!("submissions/{k}/workspace.diff"))).unwrap()
}

#[test]
fn a_reply_that_comes_after_the_wall_budget_ended_runs_none_of_its_calls() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![write("notes.txt"), write("late.txt")]).delay_reply(1, Duration::from_millis(2500));
    let r = run(&package, "partial", &mut agent, wall(2));
    let outcome = r.ok();
    assert_eq!((outcome.end_reason, outcome.turns, outcome.tool_calls), (EndReason::WallBudget, 2, 1));
    assert!(r.workspace().join("notes.txt").is_file());
    assert!(!r.workspace().join("late.txt").exists(), "the late reply's call ran");
    let results = r.results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1], ("write_text".into(), "not run: the work ended (wall_budget) before this call".into(), true));
    assert_eq!(submissions(&r), [(1, true)]);
    let stored = diff(&r, 1);
    assert!(stored.contains("notes.txt") && !stored.contains("late.txt"), "{stored}");
}

#[test]
fn an_abandoned_request_ends_with_wall_budget_and_the_automatic_submission() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![write("notes.txt"), AgentReply::Abandoned, write("never.txt")]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!((outcome.end_reason, outcome.turns, outcome.tool_calls), (EndReason::WallBudget, 1, 1));
    assert_eq!(submissions(&r), [(1, true)]);
    assert!(r.kinds().iter().any(|k| matches!(k, EventKind::Budget { which, .. } if which == "wall_sec")));
    assert_eq!(
        r.kinds().last(),
        Some(&&EventKind::End { reason: "wall_budget".into(), detail: "the agent's model request in flight was abandoned".into() })
    );
}

/// An agent that writes a file, then sets the run's stop flag while "waiting for its model"
/// and abandons the request, as the chat client does after Ctrl-C.
struct StoppedWhileWaiting {
    stop: Arc<AtomicBool>,
    turn: u32,
}

impl Agent for StoppedWhileWaiting {
    fn start(&mut self, _: &Opening) -> Result<(), AgentError> {
        Ok(())
    }

    fn next_turn(&mut self, _: &[Incoming]) -> Result<AgentReply, AgentError> {
        self.turn += 1;
        if self.turn == 1 {
            return Ok(write("notes.txt"));
        }
        self.stop.store(true, Ordering::SeqCst);
        Ok(AgentReply::Abandoned)
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }
}

#[test]
fn an_abandoned_request_after_a_stop_ends_interrupted_without_a_submission() {
    let package = fixture("req-basic");
    let stop = Arc::new(AtomicBool::new(false));
    let mut agent = StoppedWhileWaiting { stop: Arc::clone(&stop), turn: 0 };
    let r = run(&package, "partial", &mut agent, Options { stop: Some(stop), ..Options::default() });
    assert_eq!(r.ok().end_reason, EndReason::Interrupted);
    assert_eq!(submissions(&r), []);
}

/// A user whose every reply is abandoned at the deadline.
struct AbandoningUser;

impl User for AbandoningUser {
    fn answer(&mut self, _: &Question) -> Result<Reply, UserError> {
        Err(UserError::abandoned())
    }

    fn feedback(&mut self, _: &FeedbackContext) -> Result<Reply, UserError> {
        Err(UserError::abandoned())
    }
}

#[test]
fn an_abandoned_answer_ends_with_wall_budget_and_the_automatic_submission() {
    let package = fixture("req-basic");
    let ask = one("ask_user", json!({"question": "Which fee rule applies to refunds?"}));
    let mut agent = TestAgent::new(vec![write("notes.txt"), ask, write("never.txt")]);
    let r = run(&package, "partial", &mut agent, Options { user: Some(Box::new(AbandoningUser)), ..Options::default() });
    assert_eq!(r.ok().end_reason, EndReason::WallBudget);
    assert_eq!(r.ok().turns, 2);
    assert_eq!(r.results()[1], ("ask_user".into(), "not answered: the work ended (wall_budget) before the reply came".into(), true));
    assert!(r.store.questions().unwrap().is_empty(), "an unanswered question is not recorded");
    assert_eq!(
        r.kinds().last(),
        Some(&&EventKind::End { reason: "wall_budget".into(), detail: "the user's reply in flight was abandoned".into() })
    );
    assert_eq!(submissions(&r), [(1, true)]);
}

#[test]
fn abandoned_feedback_ends_with_wall_budget_after_the_submission() {
    let package = fixture("req-basic");
    let submit = one("submit", json!({"summary": "first try"}));
    let mut agent = TestAgent::new(vec![write("notes.txt"), submit, write("never.txt")]);
    let r = run(&package, "partial", &mut agent, Options { user: Some(Box::new(AbandoningUser)), ..Options::default() });
    assert_eq!(r.ok().end_reason, EndReason::WallBudget);
    assert_eq!(
        r.results()[1],
        ("submit".into(), "The delivery was returned, and the work ended (wall_budget) before the owner's message came.".into(), false)
    );
    // The workspace did not change after the submission: no automatic one.
    assert_eq!(submissions(&r), [(1, false)]);
    assert_eq!(r.user_messages(), Vec::<String>::new(), "no feedback message was recorded");
}

/// Usage of one request as a chat client records it.
fn request(tokens: u64) -> Usage {
    Usage { requests: 1, input_tokens: tokens, latency_ms: 5, cost_usd: 0.001, ..Usage::default() }
}

/// An agent that records two requests in its sink and reports their sum as `usage()`.
struct SinkAgent {
    link: Option<SessionLink>,
    turn: u32,
}

impl Agent for SinkAgent {
    fn attach(&mut self, link: &SessionLink) {
        self.link = Some(link.clone());
    }

    fn start(&mut self, _: &Opening) -> Result<(), AgentError> {
        Ok(())
    }

    fn next_turn(&mut self, _: &[Incoming]) -> Result<AgentReply, AgentError> {
        self.turn += 1;
        if self.turn > 2 {
            return Ok(AgentReply::Done);
        }
        self.link.as_ref().unwrap().usage.record(&request(100));
        Ok(write(&format!("n{}.txt", self.turn)))
    }

    fn usage(&self) -> Usage {
        self.link.as_ref().unwrap().usage.total()
    }
}

/// An agent written against the interface before sinks: it only reports `usage()`.
struct ReportingAgent {
    turn: u32,
}

impl Agent for ReportingAgent {
    fn start(&mut self, _: &Opening) -> Result<(), AgentError> {
        Ok(())
    }

    fn next_turn(&mut self, _: &[Incoming]) -> Result<AgentReply, AgentError> {
        self.turn += 1;
        Ok(if self.turn == 1 { write("n.txt") } else { AgentReply::Done })
    }

    fn usage(&self) -> Usage {
        request(70)
    }
}

/// (role, requests, input tokens) of every usage row of the store.
fn usage_rows(r: &Run) -> Vec<(Role, u64, u64)> {
    r.store.usage().unwrap().iter().map(|u| (u.role, u.usage.requests, u.usage.input_tokens)).collect()
}

#[test]
fn usage_reaches_the_store_through_the_sink_once_and_an_agent_without_one_at_the_end() {
    let package = fixture("req-basic");
    let mut sinking = SinkAgent { link: None, turn: 0 };
    let r = run(&package, "partial", &mut sinking, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(usage_rows(&r), [(Role::Agent, 2, 200)], "recorded by the sink, not again from usage()");
    assert_eq!(r.ok().agent_usage.requests, 2);

    let mut reporting = ReportingAgent { turn: 0 };
    let r = run(&package, "partial", &mut reporting, Options::default());
    assert_eq!(usage_rows(&r), [(Role::Agent, 1, 70)]);
}
