//! The delivery text channel (seed 002 A.9.3; `docs/decisions.md` "Delivery text channel"):
//! questions in reply text, continuations, and the clarification-round limit over both
//! channels, driven by a test agent that only returns turns (any agent gets the same).

use serde_json::json;
use specgap_engine::episode::{NO_TOOL_REMINDER, NO_TOOL_REMINDER_GOES_ON, UNLOCK_ACKNOWLEDGEMENT};
use specgap_engine::relay::UNKNOWN_ANSWER;
use specgap_engine::session::{AgentReply, Incoming};
use specgap_engine::text_channel::CONTINUATION;
use specgap_protocol::event::{EventKind, UserMessageKind};
use specgap_protocol::run::EndReason;

use crate::support::{Options, Run, TestAgent, call, fixture, one, run};

const WEIGHT_ANSWER: &str =
    "Yes: the carrier weighs the packed box, and an empty box with padding is 0.5 kg, so at most 9.5 kg of goods go in a box.";
const TODAY_ANSWER: &str = "Every line in orders.csv ships today; nothing may be left for tomorrow.";

fn says(text: &str) -> AgentReply {
    AgentReply::Turn { text: Some(text.into()), tool_calls: vec![], usage: None }
}

fn write_plan_json() -> AgentReply {
    one("write_text", json!({"path": "plan.json", "content": "{\"boxes\": [[\"A1\"]]}"}))
}

/// The user messages of the trajectory with their kinds.
fn messages(r: &Run) -> Vec<(UserMessageKind, String)> {
    r.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind, text, .. } => Some((*kind, text.clone())),
            _ => None,
        })
        .collect()
}

fn question_texts(r: &Run) -> Vec<String> {
    r.store.questions().unwrap().into_iter().map(|q| q.question.text).collect()
}

#[test]
fn questions_under_the_heading_are_answered_as_one_message_and_recorded() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![says(
        "I read the request.\n\n## Questions for the client\n1. Does the 10 kg limit include the box itself?\n2. Can some items wait until tomorrow?\n3. Which colour are the boxes?\n",
    )]);
    let r = run(&package, "interact", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.ok().questions, 3);
    let expected = format!(
        "- Does the 10 kg limit include the box itself?\n  {WEIGHT_ANSWER}\n- Can some items wait until tomorrow?\n  {TODAY_ANSWER}\n- Which colour are the boxes?\n  {UNKNOWN_ANSWER}"
    );
    assert_eq!(messages(&r), [(UserMessageKind::Answer, expected.clone())]);
    assert_eq!(agent.user_messages(), [expected]);
    let rows = r.store.questions().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].question.matched_targets, ["packaging-weight"]);
    assert_eq!(rows[1].question.matched_targets, ["all-items-today"]);
    assert!(rows[2].question.matched_targets.is_empty());
    assert_eq!(rows[1].question.answer, TODAY_ANSWER);
    assert!(rows.iter().all(|q| q.question.turn == 1));
}

#[test]
fn a_question_in_prose_is_heard_before_and_after_the_deliverable_but_an_offer_is_not() {
    // Issue 24 item 2: a question asked after the plan exists used to get the no-tool-call
    // reminder (and was lost); an offer used to be put to the customer as a question.
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        says("I looked at orders.csv. Does the 10 kg limit include the box itself?"),
        write_plan_json(),
        says("The plan is written. Can some items wait until tomorrow?"),
        says("Plan updated. Would you like me to add a packing list as well?"),
    ]);
    let r = run(&package, "interact", &mut agent, Options::default());
    assert_eq!(question_texts(&r), ["Does the 10 kg limit include the box itself?", "Can some items wait until tomorrow?"]);
    assert_eq!(
        messages(&r),
        [
            (UserMessageKind::Answer, format!("- Does the 10 kg limit include the box itself?\n  {WEIGHT_ANSWER}")),
            (UserMessageKind::Answer, format!("- Can some items wait until tomorrow?\n  {TODAY_ANSWER}")),
            (UserMessageKind::Reminder, NO_TOOL_REMINDER.to_string()),
        ]
    );
    let turns: Vec<u32> = r.store.questions().unwrap().into_iter().map(|q| q.question.turn).collect();
    assert_eq!(turns, [1, 3]);
}

#[test]
fn a_question_the_agent_answers_itself_is_not_put_to_the_customer() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        says("Does the 10 kg limit include the box itself? Probably, so I will pack 9.5 kg at most."),
        write_plan_json(),
    ]);
    let r = run(&package, "interact", &mut agent, Options::default());
    assert!(question_texts(&r).is_empty());
    assert_eq!(messages(&r), [(UserMessageKind::Continuation, CONTINUATION.to_string())]);
}

#[test]
fn the_heading_counts_even_with_tool_calls_and_its_answers_follow_the_results() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![AgentReply::Turn {
        text: Some("## Questions for the client\n- Can some items wait until tomorrow?".into()),
        tool_calls: vec![call("list_files", json!({}))],
        usage: None,
    }]);
    let r = run(&package, "interact", &mut agent, Options::default());
    assert_eq!(r.ok().questions, 1);
    let seen = agent.seen.lock().unwrap();
    let second = &seen.inboxes[1];
    assert_eq!(second.len(), 2);
    assert!(matches!(&second[0], Incoming::ToolResult { tool, .. } if tool == "list_files"));
    assert_eq!(
        second[1],
        Incoming::UserMessage { kind: UserMessageKind::Answer, text: format!("- Can some items wait until tomorrow?\n  {TODAY_ANSWER}") }
    );
}

#[test]
fn three_continuations_then_the_no_tool_call_rule() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new((0..6).map(|_| says("I will think about the packing.")).collect());
    let r = run(&package, "interact", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::NoToolCall);
    assert_eq!(r.ok().turns, 5);
    let continuation = (UserMessageKind::Continuation, CONTINUATION.to_string());
    assert_eq!(
        messages(&r),
        [continuation.clone(), continuation.clone(), continuation, (UserMessageKind::Reminder, NO_TOOL_REMINDER.into())]
    );
}

#[test]
fn hidden_answers_no_text_question_but_still_pushes_to_deliver() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        says("## Questions for the client\n- Does the 10 kg limit include the box itself?"),
        says("Does the 10 kg limit include the box itself?"),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert!(question_texts(&r).is_empty());
    let continuation = (UserMessageKind::Continuation, CONTINUATION.to_string());
    assert_eq!(messages(&r), [continuation.clone(), continuation]);
}

#[test]
fn no_continuation_once_the_deliverable_exists() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![write_plan_json(), says("Done."), says("Done.")]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::NoToolCall);
    assert_eq!(messages(&r), [(UserMessageKind::Reminder, NO_TOOL_REMINDER.to_string())]);
    assert_eq!(r.ok().submissions.len(), 1);
    assert!(r.ok().submissions[0].automatic);
}

#[test]
fn owner_conditions_have_no_text_channel() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![says("## Questions for the client\n- Who uses this?"), says("Who uses this?")]);
    let r = run(&package, "partial", &mut agent, Options::default());
    // Seed 000's protocol has no no-tool-call end: both replies get the reminder and the
    // script's end ends the episode.
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert!(question_texts(&r).is_empty());
    let reminder = (UserMessageKind::Reminder, NO_TOOL_REMINDER_GOES_ON.to_string());
    assert_eq!(messages(&r), [reminder.clone(), reminder]);
}

#[test]
fn the_clarification_round_limit_spans_both_channels() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        one("ask_user", json!({"question": "Does the 10 kg limit include the box itself?"})),
        says("## Questions for the client\n- Can some items wait until tomorrow?\n- Which colour are the boxes?"),
        says("One more: how much does an empty box weigh?"),
        one("ask_user", json!({"question": "Does the 10 kg limit include the box itself?"})),
        write_plan_json(),
    ]);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(2);
    let r = run(&package, "interact", &mut agent, options);
    // Past the limit the episode goes on: the third round gets the proceed reply on either
    // channel, and the work continues.
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.ok().turns, 5);
    assert_eq!(
        question_texts(&r),
        ["Does the 10 kg limit include the box itself?", "Can some items wait until tomorrow?", "Which colour are the boxes?"]
    );
    let proceed = specgap_engine::episode::PROCEED_REPLY;
    assert_eq!(messages(&r)[1], (UserMessageKind::Answer, proceed.to_string()));
    assert_eq!(r.results()[1].1, proceed);
    assert!(r.workspace().join("plan.json").exists());
}

#[test]
fn the_interact_req_gate_unlocks_after_a_text_question_and_a_statement() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        says("Thanks, I have everything."),
        says("## Questions for the client\n- Does the 10 kg limit include the box itself?"),
        says("Thank you, that settles it. I have what I need."),
        write_plan_json(),
    ]);
    let r = run(&package, "interact-req+gate=on", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(
        messages(&r),
        [
            // Nothing was asked yet, so a statement does not unlock: the deliverable is missing.
            (UserMessageKind::Continuation, CONTINUATION.to_string()),
            (UserMessageKind::Answer, format!("- Does the 10 kg limit include the box itself?\n  {WEIGHT_ANSWER}")),
            (UserMessageKind::Continuation, UNLOCK_ACKNOWLEDGEMENT.to_string()),
        ]
    );
    let last = r.results().pop().unwrap();
    assert_eq!((last.0.as_str(), last.2), ("write_text", false), "{}", last.1);
    assert!(r.workspace().join("plan.json").exists());
}
