//! Batched turns (seed 000 App. F.1): `submit`, `ask_user` and `write_plan` end the turn; the
//! calls before them run, the calls after them are not run and not charged.

use serde_json::json;
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, call, fixture, one, run, turn};

const AFTER_SUBMIT: &str = "not run: `submit` ends the turn, so the calls after it in the same turn are not run";
const AFTER_ASK: &str = "not run: `ask_user` ends the turn, so the calls after it in the same turn are not run";

#[test]
fn a_submit_in_a_batch_runs_after_the_calls_before_it_and_ends_the_turn() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![turn(vec![
        call("run_experiment", json!({"command": "echo before > before.txt"})),
        call("submit", json!({})),
        call("write_text", json!({"path": "after.txt", "content": "after"})),
        call("read_text", json!({"path": "README.md"})),
    ])]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let results = r.results();
    let tools: Vec<_> = results.iter().map(|(tool, _, _)| tool.as_str()).collect();
    assert_eq!(tools, ["run_experiment", "submit", "write_text", "read_text"]);
    assert_eq!((results[0].1.as_str(), results[0].2), ("exit status 0\n(no output)", false));
    assert_eq!(
        (results[1].1.as_str(), results[1].2),
        ("The delivery was returned; the owner's message follows. 3 submissions left.", false)
    );
    assert_eq!((results[2].1.as_str(), results[2].2), (AFTER_SUBMIT, true));
    assert_eq!((results[3].1.as_str(), results[3].2), (AFTER_SUBMIT, true));
    // The delivery holds what the calls before `submit` did, and nothing after it ran.
    let diff = String::from_utf8(fs_err::read(r.episode_dir().join("submissions/1/workspace.diff")).unwrap()).unwrap();
    assert!(diff.contains("before.txt") && !diff.contains("after.txt"), "{diff}");
    assert!(!r.workspace().join("after.txt").exists());
    // Two calls ran and are charged; the two that were not run are not.
    let outcome = r.ok();
    assert_eq!((outcome.tool_calls, outcome.submissions.len(), outcome.end_reason), (2, 1, EndReason::AgentDone));
}

#[test]
fn an_ask_user_in_a_batch_ends_the_turn_and_the_rest_is_not_charged() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        turn(vec![
            call("read_text", json!({"path": "README.md", "limit": 1})),
            call("ask_user", json!({"question": "Which invoices are disputed?"})),
            call("submit", json!({})),
        ]),
        one("list_files", json!({"path": "billing"})),
    ]);
    let mut options = Options::default();
    // Budget of three calls: the uncharged `submit` leaves room for the next turn's call.
    options.flags.tool_calls = Some(3);
    let r = run(&package, "partial", &mut agent, options);
    let results = r.results();
    assert_eq!(results[0].1, "     1\t# billing\n[lines 1-1 of 10]");
    assert!(!results[1].2, "{}", results[1].1);
    assert_eq!((results[2].0.as_str(), results[2].1.as_str(), results[2].2), ("submit", AFTER_ASK, true));
    assert!(!results[3].2, "{}", results[3].1);
    let outcome = r.ok();
    assert_eq!((outcome.tool_calls, outcome.questions, outcome.end_reason), (3, 1, EndReason::ToolCallBudget));
    assert!(!r.kinds().iter().any(|k| matches!(k, EventKind::Submission { automatic: false, .. })));
}

#[test]
fn the_fourth_identical_call_is_not_run_and_not_charged() {
    let package = fixture("req-basic");
    let read = || one("read_text", json!({"path": "README.md", "limit": 1}));
    let mut agent = TestAgent::new(vec![read(), read(), read(), read()]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!((outcome.end_reason, outcome.tool_calls, outcome.turns), (EndReason::LoopRepeatedCall, 3, 4));
    assert_eq!(r.results()[3].1, "not run: the same call was repeated four times in a row");
}

#[test]
fn a_submit_that_is_not_offered_ends_nothing() {
    // Literal offers no ask_user: the call is an unknown tool, and the call after it runs.
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![turn(vec![
        call("ask_user", json!({"question": "Anyone?"})),
        call("read_text", json!({"path": "README.md", "limit": 1})),
    ])]);
    let r = run(&package, "literal", &mut agent, Options::default());
    let results = r.results();
    assert!(results[0].1.starts_with("unknown tool `ask_user`"), "{}", results[0].1);
    assert_eq!((results[1].1.as_str(), results[1].2), ("     1\t# billing\n[lines 1-1 of 10]", false));
    assert_eq!(r.ok().tool_calls, 2);
}
