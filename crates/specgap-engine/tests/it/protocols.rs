//! The same script under seed 000's and seed 002's protocols ends differently exactly where
//! the papers differ (issue 24 items 1 and 5): each end rule acts only under the protocol that
//! has it.

use serde_json::json;
use specgap_engine::episode::{NO_TOOL_REMINDER, NO_TOOL_REMINDER_GOES_ON};
use specgap_engine::session::AgentReply;
use specgap_protocol::run::EndReason;
use specgap_rules::{Protocol, fde_bench, tiganeval};

use crate::support::{Options, TestAgent, fixture, one, run};

const GOLD_PLAN: &str = r#"{"boxes": [["A1", "A4"], ["A3", "A2"], ["A5", "A6"], ["A7"]]}"#;

fn under(protocol: Protocol) -> Options {
    Options { protocol: Some(protocol), ..Options::default() }
}

fn says(text: &str) -> AgentReply {
    AgentReply::Turn { text: Some(text.into()), tool_calls: vec![], usage: None }
}

/// Four silent commands (different, so the identical-call rule stays out of it), then the
/// gold plan written and submitted: a mini-swe-agent writing files with `cat <<EOF > f`.
fn silent_commands_then_the_gold_plan() -> Vec<AgentReply> {
    let commands = ["true", ":", "exit 0", "test -d ."];
    commands
        .iter()
        .map(|c| one("run_experiment", json!({ "command": c })))
        .chain([one("write_text", json!({ "path": "plan.json", "content": GOLD_PLAN })), one("submit", json!({}))])
        .collect()
}

#[test]
fn four_silent_commands_end_a_tiganeval_episode_before_the_plan_is_written() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(silent_commands_then_the_gold_plan());
    let r = run(&package, "hidden", &mut agent, under(tiganeval()));
    assert_eq!(r.ok().end_reason, EndReason::LoopBlankOutput);
    assert_eq!((r.ok().turns, r.ok().tool_calls), (4, 4));
    // Nothing was written, so nothing is submitted: the paper's 1 becomes no delivery.
    assert!(r.ok().submissions.is_empty());
}

#[test]
fn four_silent_commands_go_on_under_fde_bench_and_the_plan_scores_one() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(silent_commands_then_the_gold_plan());
    let r = run(&package, "hidden", &mut agent, under(fde_bench()));
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!((r.ok().turns, r.ok().tool_calls), (6, 6));
    assert_eq!(r.scores(), [1.0]);
    assert!(!r.ok().submissions[0].automatic);
}

/// A wrong plan first (so the deliverable exists and the delivery text channel's
/// continuation stays out of it), two text-only replies, then the gold plan and `submit`.
fn text_replies_then_the_fix() -> Vec<AgentReply> {
    vec![
        one("write_text", json!({ "path": "plan.json", "content": r#"{"boxes": [["A1"]]}"# })),
        says("Let me think about the packing."),
        says("The boxes should be fuller."),
        one("write_text", json!({ "path": "plan.json", "content": GOLD_PLAN })),
        one("submit", json!({})),
    ]
}

#[test]
fn two_text_only_replies_go_on_under_tiganeval_which_lists_no_such_end_rule() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(text_replies_then_the_fix());
    let r = run(&package, "hidden", &mut agent, under(tiganeval()));
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
    assert_eq!(agent.user_messages(), [NO_TOOL_REMINDER_GOES_ON, NO_TOOL_REMINDER_GOES_ON]);
}

#[test]
fn two_text_only_replies_end_an_fde_bench_episode_with_the_plan_as_it_was() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(text_replies_then_the_fix());
    let r = run(&package, "hidden", &mut agent, under(fde_bench()));
    assert_eq!(r.ok().end_reason, EndReason::NoToolCall);
    assert_eq!(agent.user_messages(), [NO_TOOL_REMINDER]);
    // The automatic submission delivers the one-box plan, which is not the reference.
    assert_eq!(r.ok().submissions.len(), 1);
    assert!(r.ok().submissions[0].automatic);
    assert_ne!(r.scores(), [1.0]);
}

#[test]
fn the_fourth_identical_call_ends_only_under_tiganeval() {
    let package = fixture("delivery-basic");
    let script = || {
        let read = || one("list_files", json!({}));
        vec![
            read(),
            read(),
            read(),
            read(),
            one("write_text", json!({ "path": "plan.json", "content": GOLD_PLAN })),
            one("submit", json!({})),
        ]
    };
    let mut agent = TestAgent::new(script());
    let r = run(&package, "hidden", &mut agent, under(tiganeval()));
    assert_eq!(r.ok().end_reason, EndReason::LoopRepeatedCall);
    let mut agent = TestAgent::new(script());
    let r = run(&package, "hidden", &mut agent, under(fde_bench()));
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
}

#[test]
fn the_fourth_owner_question_ends_only_under_a_protocol_with_that_rule() {
    let package = fixture("req-basic");
    let questions = ["Who uses this?", "When is the run?", "Which accounts matter?", "Anything else?", "And then?"];
    let script = || questions.iter().map(|q| one("ask_user", json!({ "question": q }))).collect::<Vec<_>>();
    let mut agent = TestAgent::new(script());
    let r = run(&package, "partial", &mut agent, under(tiganeval()));
    assert_eq!((r.ok().end_reason, r.ok().questions), (EndReason::LoopAskUser, 3));
    let mut agent = TestAgent::new(script());
    let r = run(&package, "partial", &mut agent, under(fde_bench()));
    assert_eq!((r.ok().end_reason, r.ok().questions), (EndReason::AgentDone, 5));
}

#[test]
fn seed_002s_wall_clock_is_forty_three_thousand_two_hundred_seconds_and_seed_000_has_none() {
    use specgap_engine::condition::{UNBOUNDED, UNBOUNDED_WALL};
    use specgap_engine::{Budgets, Condition};
    let task = specgap_protocol::package::Budget::default();
    let flags = specgap_engine::BudgetFlags::default();
    let hidden = Condition::parse("hidden").unwrap();
    let b = Budgets::resolve_under(&fde_bench(), &hidden, &task, &flags);
    assert_eq!((b.turns, b.tool_calls, b.wall_sec, b.clarification_rounds), (UNBOUNDED, UNBOUNDED, 43_200, 30));
    let partial = Condition::parse("partial").unwrap();
    let b = Budgets::resolve_under(&tiganeval(), &partial, &task, &flags);
    assert_eq!((b.turns, b.tool_calls, b.wall_sec, b.submissions), (120, 360, UNBOUNDED_WALL, 4));
}

#[test]
fn a_replaced_prompt_set_replaces_tool_descriptions_and_harness_messages() {
    use specgap_protocol::event::EventKind;
    let package = fixture("delivery-basic");
    let mut prompts = specgap_engine::prompt_files::Replacements::none();
    prompts.insert("tool_submit.md", "Hand the work to the {who}. {submission_budget}\n");
    prompts.insert("continuation.md", "Write plan.json now.\n");
    prompts.insert("no_tool_reminder_goes_on.md", "Keep working with the tools.\n");
    // The first text-only reply comes while no plan exists (the continuation), the second after.
    let write = one("write_text", json!({ "path": "plan.json", "content": GOLD_PLAN }));
    let mut agent = TestAgent::new(vec![says("hm"), write, says("hm"), one("submit", json!({}))]);
    let r = run(&package, "hidden", &mut agent, Options { prompts, protocol: Some(tiganeval()), ..Options::default() });
    assert_eq!(agent.user_messages(), ["Write plan.json now.", "Keep working with the tools."]);
    let submit = r
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::EpisodeStart { tools, .. } => tools.iter().find(|t| t.name == "submit").cloned(),
            _ => None,
        })
        .unwrap();
    assert_eq!(submit.description, "Hand the work to the client. You deliver once: your first submission ends the work.");
}
