//! Every end rule of DESIGN §3.5 ends the episode with its reason.

use std::time::Duration;

use serde_json::json;
use specgap_engine::session::AgentReply;
use specgap_engine::{BudgetFlags, episode::NO_TOOL_REMINDER};
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, call, fixture, one, run, turn};

fn read(path: &str) -> AgentReply {
    one("read_text", json!({ "path": path }))
}

fn flags(f: impl FnOnce(&mut BudgetFlags)) -> Options {
    let mut flags = BudgetFlags::default();
    f(&mut flags);
    Options { flags, ..Options::default() }
}

#[test]
fn turn_budget_ends_after_exactly_that_many_turns_with_an_automatic_submission() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "notes.txt", "content": "x"})),
        read("README.md"),
        read("billing/fees.py"),
        read("billing/policy.py"),
    ]);
    let r = run(&package, "partial", &mut agent, flags(|f| f.turns = Some(3)));
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::TurnBudget);
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.submissions.len(), 1);
    assert!(outcome.submissions[0].automatic);
    assert!(r.kinds().contains(&&EventKind::Budget { which: "turns".into(), used: 3, limit: 3 }));
}

#[test]
fn tool_call_budget_stops_inside_a_turn_and_answers_every_call() {
    let package = fixture("req-basic");
    let calls = vec![
        call("list_files", json!({})),
        call("read_text", json!({"path": "README.md"})),
        call("read_text", json!({"path": "billing/fees.py"})),
    ];
    let mut agent = TestAgent::new(vec![turn(calls)]);
    let r = run(&package, "partial", &mut agent, flags(|f| f.tool_calls = Some(2)));
    assert_eq!(r.ok().end_reason, EndReason::ToolCallBudget);
    assert_eq!(r.ok().tool_calls, 2);
    let results = r.results();
    assert_eq!(results.len(), 3);
    assert!(!results[0].2 && !results[1].2);
    assert_eq!(results[2].1, "not run: the work ended (tool_call_budget) before this call");
    assert!(results[2].2);
}

#[test]
fn wall_budget_ends_the_episode() {
    let package = fixture("req-basic");
    // The wall clock starts with the episode, before the first turn: a budget of a few seconds
    // keeps a loaded machine's slow sandbox start from using it all up before turn 1 (which
    // made a 1-second budget end with 0 turns under load).
    let mut agent = TestAgent::new(vec![read("README.md"), read("billing/fees.py")]).delay(Duration::from_millis(3100));
    let r = run(&package, "partial", &mut agent, flags(|f| f.wall_sec = Some(3)));
    assert_eq!(r.ok().end_reason, EndReason::WallBudget);
    assert_eq!(r.ok().turns, 1);
}

#[test]
fn fourth_identical_call_is_not_run_and_ends_the_episode() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new((0..5).map(|_| read("README.md")).collect());
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::LoopRepeatedCall);
    assert_eq!(r.ok().turns, 4);
    let results = r.results();
    assert_eq!(results.len(), 4);
    assert_eq!(results[3].1, "not run: the same call was repeated four times in a row");
}

#[test]
fn fourth_blank_successful_command_ends_the_episode() {
    let package = fixture("req-basic");
    let commands = ["true", ":", "exit 0", "test -d billing"];
    let mut agent =
        TestAgent::new(commands.iter().map(|c| one("run_experiment", json!({ "command": c }))).chain([read("README.md")]).collect());
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::LoopBlankOutput);
    assert_eq!(r.ok().turns, 4);
    assert_eq!(r.results()[0].1, "exit status 0\n(no output)");
}

#[test]
fn a_command_with_output_breaks_the_blank_run() {
    let package = fixture("req-basic");
    let commands = ["true", ":", "echo hi", "exit 0", "true ", ": "];
    let mut agent = TestAgent::new(commands.iter().map(|c| one("run_experiment", json!({ "command": c }))).collect());
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.results()[2].1, "exit status 0\n--- stdout ---\nhi");
}

#[test]
fn fourth_consecutive_question_ends_an_owner_episode() {
    let package = fixture("req-basic");
    let questions = ["Who uses this?", "When is the run?", "Which accounts matter?", "Anything else?"];
    let mut agent = TestAgent::new(questions.iter().map(|q| one("ask_user", json!({ "question": q }))).collect());
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::LoopAskUser);
    assert_eq!(r.ok().questions, 3);
    let rows = r.store.questions().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1].question.text, "When is the run?");
    assert_eq!(rows[1].question.turn, 2);
    assert_eq!(rows[1].question.answer, specgap_engine::relay::UNKNOWN_ANSWER);
}

#[test]
fn delivery_conditions_have_no_consecutive_question_rule() {
    let package = fixture("delivery-basic");
    let questions = ["One?", "Two?", "Three?", "Four?", "Five?"];
    let mut agent = TestAgent::new(questions.iter().map(|q| one("ask_user", json!({ "question": q }))).collect());
    let r = run(&package, "interact", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.ok().questions, 5);
}

/// A protocol that has the no-tool-call rule (seed 002's), over a partial instruction.
fn with_no_tool_call_rule() -> Options {
    Options { protocol: Some(specgap_rules::fde_bench()), ..Options::default() }
}

#[test]
fn two_replies_without_a_tool_call_end_the_episode_after_one_reminder() {
    let package = fixture("req-basic");
    let silent = || AgentReply::Turn { text: Some("thinking".into()), tool_calls: vec![], usage: None };
    let mut agent = TestAgent::new(vec![silent(), silent(), read("README.md")]);
    let r = run(&package, "partial", &mut agent, with_no_tool_call_rule());
    assert_eq!(r.ok().end_reason, EndReason::NoToolCall);
    assert_eq!(agent.user_messages(), [NO_TOOL_REMINDER]);
}

#[test]
fn a_tool_call_between_silent_replies_resets_the_count() {
    let package = fixture("req-basic");
    let silent = || AgentReply::Turn { text: Some("hm".into()), tool_calls: vec![], usage: None };
    let mut agent = TestAgent::new(vec![silent(), read("README.md"), silent()]);
    let r = run(&package, "partial", &mut agent, with_no_tool_call_rule());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(agent.user_messages(), [NO_TOOL_REMINDER, NO_TOOL_REMINDER]);
}

#[test]
fn three_refusals_end_the_episode() {
    let package = fixture("req-basic");
    let refusal = || AgentReply::Refusal { text: Some("no".into()), usage: None };
    let mut agent = TestAgent::new(vec![refusal(), refusal(), refusal(), read("README.md")]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::Refusals);
    assert_eq!(r.ok().turns, 3);
}

#[test]
fn context_overflow_ends_with_an_automatic_submission_of_changes() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("write_text", json!({"path": "x.txt", "content": "x"})), AgentReply::ContextOverflow]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::ContextOverflow);
    assert_eq!(r.ok().submissions.len(), 1);
    assert!(r.ok().submissions[0].automatic);
    assert_eq!(r.scores(), [0.0]);
}

#[test]
fn feedback_resets_the_consecutive_counters() {
    let package = fixture("req-basic");
    let mut replies: Vec<AgentReply> = (0..3).map(|_| read("README.md")).collect();
    replies.push(one("submit", json!({})));
    replies.extend((0..3).map(|_| read("README.md")));
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.ok().turns, 7);
}

#[test]
fn an_answer_resets_the_identical_call_counter() {
    let package = fixture("req-basic");
    let mut replies: Vec<AgentReply> = (0..3).map(|_| read("README.md")).collect();
    replies.push(one("ask_user", json!({"question": "Is the rate monthly?"})));
    replies.extend((0..3).map(|_| read("README.md")));
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.ok().turns, 7);
}

#[test]
fn submit_neither_counts_nor_breaks_a_run_of_identical_calls() {
    // In the planning phase a submit is refused without any owner message, so nothing resets
    // the counters: the read after it is the fourth identical call in a row.
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        read("README.md"),
        read("README.md"),
        read("README.md"),
        one("submit", json!({})),
        read("README.md"),
        read("billing/fees.py"),
    ]);
    let r = run(&package, "plan", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::LoopRepeatedCall);
    assert_eq!(r.ok().turns, 5);
}
