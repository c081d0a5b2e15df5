//! A user's question detector in the delivery text channel (seed 002 A.9.3; docs/decisions.md
//! "Panels: question detector"): the engine asks it about every reply without the questions
//! heading — with or without tool calls, before and after the deliverable exists — answers what
//! it detects, and records its ballots; the heading skips it; a detector that cannot decide
//! is an infrastructure error.

use std::sync::{Arc, Mutex};

use serde_json::json;
use specgap_engine::detector::{Detection, DetectorError, QuestionDetector, ReplyText};
use specgap_engine::session::{AgentReply, FeedbackContext, Question, Reply, User, UserError};
use specgap_engine::{EpisodeError, RelayUser};
use specgap_protocol::run::EndReason;
use specgap_store::{Ballot, BallotOutcome};

use crate::support::{Options, TestAgent, call, fixture, one, run};

/// What the fake detector was asked: (turn, text, with tool calls, artifact missing).
type Asked = Arc<Mutex<Vec<(u32, String, bool, Option<bool>)>>>;

/// A detector that takes every sentence with a question mark as a question, except offers
/// ("Shall I …"), and splits "A, and B?" into two; one ballot per reply; or fails.
struct FakeDetector {
    asked: Asked,
    fail: bool,
}

impl QuestionDetector for FakeDetector {
    fn detect(&mut self, reply: &ReplyText<'_>) -> Result<Detection, DetectorError> {
        self.asked.lock().unwrap().push((reply.turn, reply.text.to_string(), reply.with_tool_calls, reply.artifact_missing));
        let ballot = Ballot {
            panel: "panel:fake".into(),
            subject: format!("turn:{}", reply.turn),
            seat: 0,
            model: "fake".into(),
            position: 0,
            prompt_version: "1".into(),
            outcome: if self.fail { BallotOutcome::Failed } else { BallotOutcome::Ballot },
            vote: None,
            request: json!([reply.text]),
            response: json!([]),
            error: None,
        };
        if self.fail {
            return Err(DetectorError { message: "every detector model failed".into(), abandoned: false, ballots: vec![ballot] });
        }
        let questions = specgap_engine::text_channel::question_sentences(reply.text)
            .into_iter()
            .filter(|q| !q.starts_with("Shall I"))
            .flat_map(|q| match q.split_once(", and ") {
                Some((a, b)) => vec![format!("{a}?"), capitalize(b)],
                None => vec![q],
            })
            .collect();
        Ok(Detection { questions, ballots: vec![ballot] })
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().collect::<String>() + chars.as_str()).unwrap_or_default()
}

/// The relay customer hearing through a [`FakeDetector`].
struct Hearing {
    relay: RelayUser,
    detector: FakeDetector,
}

impl User for Hearing {
    fn answer(&mut self, question: &Question) -> Result<Reply, UserError> {
        self.relay.answer(question)
    }
    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError> {
        self.relay.feedback(context)
    }
    fn detector(&mut self) -> Option<&mut dyn QuestionDetector> {
        Some(&mut self.detector)
    }
}

fn hearing(fail: bool) -> (Box<dyn User>, Asked) {
    let asked = Asked::default();
    let package = fixture("delivery-basic");
    let user = Hearing { relay: RelayUser::new(&package), detector: FakeDetector { asked: Arc::clone(&asked), fail } };
    (Box::new(user), asked)
}

fn says(text: &str) -> AgentReply {
    AgentReply::Turn { text: Some(text.into()), tool_calls: vec![], usage: None }
}

#[test]
fn prose_questions_are_detected_after_the_deliverable_exists_and_beside_tool_calls() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "plan.json", "content": "{\"boxes\": [[\"A1\"]]}"})),
        says("The plan is written. Can some items wait until tomorrow? Shall I also plot the boxes?"),
        AgentReply::Turn {
            text: Some("Listing again. Does the 10 kg limit include the box itself, and which colour are the boxes?".into()),
            tool_calls: vec![call("list_files", json!({}))],
            usage: None,
        },
        says("## Questions for the client\n- Which carrier do you use?"),
        says("Done."),
    ]);
    let (user, asked) = hearing(false);
    let r = run(&package, "interact", &mut agent, Options { user: Some(user), ..Options::default() });
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    let questions: Vec<(u32, String)> = r.store.questions().unwrap().into_iter().map(|q| (q.question.turn, q.question.text)).collect();
    assert_eq!(
        questions,
        [
            (2, "Can some items wait until tomorrow?".to_string()),
            (3, "Does the 10 kg limit include the box itself?".to_string()),
            (3, "Which colour are the boxes?".to_string()),
            (4, "Which carrier do you use?".to_string()),
        ]
    );
    // Asked about every reply with text but the one with the heading (turn 4); "Done." (turn
    // 5) is asked too: the question-mark rule is the detector's. Turn 1 has no text.
    let asked: Vec<(u32, bool, Option<bool>)> = asked.lock().unwrap().iter().map(|(t, _, calls, missing)| (*t, *calls, *missing)).collect();
    assert_eq!(asked, [(2, false, Some(false)), (3, true, Some(false)), (5, false, Some(false))]);
    // Each reply's ballots are in the store.
    let subjects: Vec<String> = r.store.ballots().unwrap().into_iter().map(|b| b.ballot.subject).collect();
    assert_eq!(subjects, ["turn:2", "turn:3", "turn:5"]);
}

#[test]
fn a_detector_that_cannot_decide_ends_the_attempt_as_an_infrastructure_error_keeping_its_ballots() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![says("Which unit is the weight in?")]);
    let (user, _) = hearing(true);
    let r = run(&package, "interact", &mut agent, Options { user: Some(user), ..Options::default() });
    match &r.outcome {
        Err(EpisodeError::Infrastructure { message, deterministic, .. }) => {
            assert_eq!(message, "the question detector failed: every detector model failed");
            assert!(!deterministic);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.store.ballots().unwrap().len(), 1);
}

#[test]
fn without_a_detector_the_question_mark_rule_hears_replies_without_tool_calls() {
    // The same script as the first test, with the relay alone and no model: the question
    // asked after the deliverable exists is heard (issue 24 item 2), the one beside tool
    // calls is not.
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "plan.json", "content": "{\"boxes\": [[\"A1\"]]}"})),
        says("The plan is written. Can some items wait until tomorrow?"),
        AgentReply::Turn { text: Some("Which colour are the boxes?".into()), tool_calls: vec![call("list_files", json!({}))], usage: None },
    ]);
    let r = run(&package, "interact", &mut agent, Options::default());
    let asked: Vec<String> = r.store.questions().unwrap().into_iter().map(|q| q.question.text).collect();
    assert_eq!(asked, ["Can some items wait until tomorrow?"]);
    assert!(r.store.ballots().unwrap().is_empty());
}
