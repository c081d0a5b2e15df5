//! Seed 002's clarification protocol (§4.1, A.3, A.6, A.9.3; `docs/decisions.md` "Engine:
//! clarification-round limit", "Engine: interact-req unlocking", "Engine: `ask_user`
//! questions"): Interact-Req is a prompt, the round limit lets the episode go on, one
//! `ask_user` call is one round however many questions it holds, and the oracle opening.

use serde_json::json;
use specgap_engine::episode::{PROCEED_REPLY, UNLOCK_ACKNOWLEDGEMENT};
use specgap_engine::prompts::{NO_SETTLED_POINTS, SETTLED_POINTS};
use specgap_engine::relay::UNKNOWN_ANSWER;
use specgap_engine::session::AgentReply;
use specgap_protocol::event::{EventKind, UserMessageKind};
use specgap_protocol::run::EndReason;

use crate::support::{Options, Run, TestAgent, fixture, one, run};

const WEIGHT_ANSWER: &str =
    "Yes: the carrier weighs the packed box, and an empty box with padding is 0.5 kg, so at most 9.5 kg of goods go in a box.";
const TODAY_ANSWER: &str = "Every line in orders.csv ships today; nothing may be left for tomorrow.";
/// The gold plan of the delivery-basic fixture: 4 boxes, the reference.
const GOLD_PLAN: &str = r#"{"boxes": [["A1", "A4"], ["A3", "A2"], ["A5", "A6"], ["A7"]]}"#;

fn ask(question: &str) -> AgentReply {
    one("ask_user", json!({ "question": question }))
}

fn ask_all(questions: &[String]) -> AgentReply {
    one("ask_user", json!({ "questions": questions }))
}

fn says(text: &str) -> AgentReply {
    AgentReply::Turn { text: Some(text.into()), tool_calls: vec![], usage: None }
}

fn deliver() -> Vec<AgentReply> {
    vec![one("write_text", json!({"path": "plan.json", "content": GOLD_PLAN})), one("submit", json!({}))]
}

/// Eight distinct questions; the first two name the fixture's two targets.
fn eight_questions() -> Vec<String> {
    let mut questions = vec!["Does the 10 kg limit include the box itself?".to_string(), "Can some items wait until tomorrow?".to_string()];
    questions.extend((3..=8).map(|i| format!("Is there a preference number {i} for the boxes?")));
    questions
}

/// (text, turn) of every recorded question, in order.
fn question_rows(r: &Run) -> Vec<(String, u32)> {
    r.store.questions().unwrap().into_iter().map(|q| (q.question.text, q.question.turn)).collect()
}

fn clarification_budget_events(r: &Run) -> Vec<(u64, u64)> {
    r.kinds()
        .into_iter()
        .filter_map(|k| match k {
            EventKind::Budget { which, used, limit } if which == "clarification_rounds" => Some((*used, *limit)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_thirty_first_question_gets_the_proceed_reply_and_the_episode_still_delivers() {
    let package = fixture("delivery-basic");
    let mut replies: Vec<AgentReply> = (1..=31).map(|i| ask(&format!("Question number {i}, about the boxes?"))).collect();
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "interact-req", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.ok().questions, 30);
    assert_eq!(r.store.questions().unwrap().len(), 30);
    let results = r.results();
    assert_eq!((results[29].1.as_str(), results[29].2), (UNKNOWN_ANSWER, false));
    assert_eq!((results[30].1.as_str(), results[30].2), (PROCEED_REPLY, false));
    assert_eq!(clarification_budget_events(&r), [(30, 30)]);
    assert_eq!(r.scores(), [1.0]);
    assert!(r.ok().submissions[0].scored.success);
}

#[test]
fn a_replaced_round_limit_reply_is_what_both_channels_get_past_the_limit() {
    let package = fixture("delivery-basic");
    let mut replies = vec![
        ask("Does the 10 kg limit include the box itself?"),
        ask("How much does an empty box weigh?"),
        says("## Questions for the client\n- Can some items wait until tomorrow?"),
    ];
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(1);
    options.prompts.insert("round_limit_reply.md", "  No more answers today; decide yourself.\n");
    let r = run(&package, "interact", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.results()[1].1, "No more answers today; decide yourself.", "the tool channel, trimmed");
    let answers: Vec<String> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: UserMessageKind::Answer, text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answers, ["No more answers today; decide yourself."], "the text channel");
    assert_eq!(question_rows(&r), [("Does the 10 kg limit include the box itself?".to_string(), 1)]);
}

#[test]
fn past_the_limit_text_questions_get_the_same_reply_and_count_as_replies_without_a_call() {
    let package = fixture("delivery-basic");
    let mut replies = vec![
        ask("Does the 10 kg limit include the box itself?"),
        says("## Questions for the client\n- Can some items wait until tomorrow?"),
        one("list_files", json!({})),
        AgentReply::Turn {
            text: Some("## Questions for the client\n- Which colour are the boxes?".into()),
            tool_calls: vec![crate::support::call("list_files", json!({"depth": 1}))],
            usage: None,
        },
        ask("How much does an empty box weigh?"),
    ];
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(1);
    let r = run(&package, "interact", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(question_rows(&r), [("Does the 10 kg limit include the box itself?".to_string(), 1)]);
    let answers: Vec<String> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: UserMessageKind::Answer, text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answers, [PROCEED_REPLY, PROCEED_REPLY]);
    assert_eq!(r.results()[3].1, PROCEED_REPLY);
    assert_eq!(clarification_budget_events(&r), [(1, 1)]);
    assert_eq!(r.scores(), [1.0]);

    // Two replies in a row that only ask, past the limit, end like two replies without a call.
    let mut agent = TestAgent::new(vec![
        ask("Does the 10 kg limit include the box itself?"),
        says("Can some items wait until tomorrow?"),
        says("And which colour are the boxes?"),
    ]);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(1);
    let r = run(&package, "interact", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::NoToolCall);
    assert_eq!(r.ok().turns, 3);
}

#[test]
fn eight_questions_in_one_call_are_one_round_of_eight_rows() {
    let package = fixture("delivery-basic");
    let questions = eight_questions();
    let mut replies = vec![ask_all(&questions), ask("How much does an empty box weigh?")];
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(1);
    let r = run(&package, "interact-req", &mut agent, options);
    let rows = question_rows(&r);
    assert_eq!(rows, questions.iter().map(|q| (q.clone(), 1)).collect::<Vec<_>>());
    // The one round used the limit of 1: the next call gets the proceed reply.
    let results = r.results();
    assert_eq!(results[1].1, PROCEED_REPLY);
    // Each question with its own answer, in the text channel's format.
    let mut expected = format!(
        "- Does the 10 kg limit include the box itself?\n  {WEIGHT_ANSWER}\n- Can some items wait until tomorrow?\n  {TODAY_ANSWER}"
    );
    for i in 3..=8 {
        expected.push_str(&format!("\n- Is there a preference number {i} for the boxes?\n  {UNKNOWN_ANSWER}"));
    }
    assert_eq!((results[0].1.as_str(), results[0].2), (expected.as_str(), false));
    let matched: Vec<Vec<String>> = r.store.questions().unwrap().into_iter().map(|q| q.question.matched_targets).collect();
    assert_eq!(matched[0], ["packaging-weight"]);
    assert_eq!(matched[1], ["all-items-today"]);
    assert!(matched[2..].iter().all(Vec::is_empty));
    assert_eq!(r.scores(), [1.0]);
}

#[test]
fn parallel_ask_user_calls_in_one_turn_are_all_answered_as_one_round() {
    // Issue 24 item 2 (seed 002 A.3: one interaction turn is one exchange): the second
    // `ask_user` of a turn used to get "not run", its question lost, and each call counted a
    // round. Now both are answered, with the text channel's questions of the same turn, in
    // one round; a call of another tool after them is still not run.
    let package = fixture("delivery-basic");
    let mut replies = vec![
        AgentReply::Turn {
            text: Some("## Questions for the client\n- How much does an empty box weigh?".into()),
            tool_calls: vec![
                crate::support::call("ask_user", json!({"question": "Does the 10 kg limit include the box itself?"})),
                crate::support::call(
                    "ask_user",
                    json!({"questions": ["Can some items wait until tomorrow?", "Which colour are the boxes?"]}),
                ),
                crate::support::call("list_files", json!({})),
            ],
            usage: None,
        },
        ask("Is there a preference for the boxes?"),
    ];
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(1);
    let r = run(&package, "interact", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(
        question_rows(&r),
        [
            ("Does the 10 kg limit include the box itself?".to_string(), 1),
            ("Can some items wait until tomorrow?".to_string(), 1),
            ("Which colour are the boxes?".to_string(), 1),
            ("How much does an empty box weigh?".to_string(), 1),
        ]
    );
    let results = r.results();
    assert_eq!((results[0].1.as_str(), results[0].2), (WEIGHT_ANSWER, false));
    assert_eq!(
        results[1].1,
        format!("- Can some items wait until tomorrow?\n  {TODAY_ANSWER}\n- Which colour are the boxes?\n  {UNKNOWN_ANSWER}")
    );
    assert!(results[2].2 && results[2].1.starts_with("not run: `ask_user` ends the turn"), "{:?}", results[2]);
    // The one round used the limit of 1: the next turn's question gets the proceed reply.
    assert_eq!(results[3].1, PROCEED_REPLY);
    assert_eq!(clarification_budget_events(&r), [(1, 1)]);
}

#[test]
fn the_same_questions_one_per_turn_are_eight_rounds() {
    let package = fixture("delivery-basic");
    let questions = eight_questions();
    let mut replies: Vec<AgentReply> = questions.iter().map(|q| ask(q)).collect();
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let mut options = Options::default();
    options.flags.clarification_rounds = Some(7);
    let r = run(&package, "interact-req", &mut agent, options);
    // Seven rounds answered, one per turn; the eighth is past the limit of 7.
    let rows = question_rows(&r);
    assert_eq!(rows, questions[..7].iter().zip(1..).map(|(q, t)| (q.clone(), t)).collect::<Vec<_>>());
    assert_eq!(r.results()[7].1, PROCEED_REPLY);
    assert_eq!(clarification_budget_events(&r), [(7, 7)]);
    // With the default limit all eight are answered, turns 1..8.
    let mut replies: Vec<AgentReply> = questions.iter().map(|q| ask(q)).collect();
    replies.extend(deliver());
    let r = run(&package, "interact-req", &mut TestAgent::new(replies), Options::default());
    assert_eq!(question_rows(&r), questions.iter().zip(1..).map(|(q, t)| (q.clone(), t)).collect::<Vec<_>>());
    // A single `question` gets its answer alone.
    assert_eq!(r.results()[0].1, WEIGHT_ANSWER);
}

#[test]
fn a_questions_call_a_text_reply_and_a_heading_block_record_identical_rows() {
    let package = fixture("delivery-basic");
    let questions = eight_questions();
    let listed = questions.iter().map(|q| format!("- {q}")).collect::<Vec<_>>().join("\n");
    let channels = [
        ask_all(&questions),
        says(&format!("I read orders.csv. {}", questions.join(" "))),
        says(&format!("Before I pack anything:\n\n## Questions for the client\n{listed}\n")),
    ];
    let mut rows = Vec::new();
    for first in channels {
        let mut replies = vec![first];
        replies.extend(deliver());
        let r = run(&package, "interact-req", &mut TestAgent::new(replies), Options::default());
        assert_eq!(r.scores(), [1.0]);
        let stored: Vec<(String, u32, String, Vec<String>)> = r
            .store
            .questions()
            .unwrap()
            .into_iter()
            .map(|q| (q.question.text, q.question.turn, q.question.answer, q.question.matched_targets))
            .collect();
        rows.push(stored);
    }
    assert_eq!(rows[0].len(), 8);
    assert_eq!(
        rows[0].iter().map(|r| (r.0.clone(), r.1)).collect::<Vec<_>>(),
        questions.iter().map(|q| (q.clone(), 1)).collect::<Vec<_>>()
    );
    assert_eq!(rows[1], rows[0]);
    assert_eq!(rows[2], rows[0]);
}

#[test]
fn a_run_that_never_asks_under_interact_req_is_delivered_and_scored() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(deliver());
    let r = run(&package, "interact-req", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.ok().questions, 0);
    assert!(r.results().iter().all(|(_, _, is_error)| !is_error), "{:?}", r.results());
    assert_eq!(r.scores(), [1.0]);
    let opening = agent.seen.lock().unwrap().opening.clone().unwrap();
    assert!(opening.system_prompt.contains("Before you build anything, ask the client"));
    assert!(!opening.system_prompt.contains("refused"));
}

#[test]
fn with_the_gate_option_the_old_clarify_first_rules_hold() {
    let package = fixture("delivery-basic");
    let mut replies = deliver();
    replies.push(ask("Does the 10 kg limit include the box itself?"));
    replies.push(ask("Thank you, I have what I need."));
    replies.extend(deliver());
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "interact-req+gate=on", &mut agent, Options::default());
    let results = r.results();
    let withheld = |tool: &str| {
        format!(
            "`{tool}` is withheld until you have asked the client what the request leaves open and then told them, \
             in an ask_user message without a question mark, that you have what you need"
        )
    };
    assert_eq!((results[0].1.clone(), results[0].2), (withheld("write_text"), true));
    assert_eq!((results[1].1.clone(), results[1].2), (withheld("submit"), true));
    assert_eq!(results[2].1, WEIGHT_ANSWER);
    assert_eq!(results[3].1, UNLOCK_ACKNOWLEDGEMENT);
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(question_rows(&r), [("Does the 10 kg limit include the box itself?".to_string(), 3)]);
    assert_eq!(r.scores(), [1.0]);
}

#[test]
fn ask_user_arguments_are_validated_with_clear_tool_errors() {
    let package = fixture("delivery-basic");
    let mut agent = TestAgent::new(vec![
        one("ask_user", json!({})),
        one("ask_user", json!({"question": "Unit?", "questions": ["Unit?"]})),
        one("ask_user", json!({"questions": []})),
        one("ask_user", json!({"questions": ["Unit?", "  "]})),
        one("ask_user", json!({"question": " "})),
        one("ask_user", json!({"questions": "Unit?"})),
    ]);
    let r = run(&package, "interact", &mut agent, Options::default());
    let results: Vec<(String, bool)> = r.results().into_iter().map(|(_, o, e)| (o, e)).collect();
    assert_eq!(results[0], ("ask_user needs `question` (one question) or `questions` (a list of questions)".into(), true));
    assert_eq!(results[1], ("give either `question` (one question) or `questions` (a list), not both".into(), true));
    assert_eq!(results[2], ("`questions` is empty; give at least one question".into(), true));
    assert_eq!(results[3], ("`questions` item 2 is empty".into(), true));
    assert_eq!(results[4], ("`question` is empty".into(), true));
    assert!(
        results[5].0.starts_with("bad arguments for ask_user: invalid type: string \"Unit?\", expected a sequence"),
        "{}",
        results[5].0
    );
    assert!(results[5].1);
    assert_eq!(r.ok().questions, 0);
}

#[test]
fn the_owner_loop_rule_counts_ask_user_calls_not_questions() {
    let package = fixture("req-basic");
    let many = |n: usize| (1..=n).map(|i| format!("Question {i} about the billing run?")).collect::<Vec<_>>();
    let mut agent = TestAgent::new(vec![ask_all(&many(5)), ask_all(&many(2)), ask("Who uses this?"), ask("Anything else?")]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::LoopAskUser);
    // Three calls answered (5 + 2 + 1 questions); the fourth call in a row is not.
    assert_eq!(r.ok().questions, 8);
    assert_eq!(r.results()[3].1, "not answered: this is the fourth question in a row");
}

fn oracle_opening(condition: &str, repeat: u32) -> String {
    let package = fixture("delivery-basic");
    let agent = TestAgent::new(vec![]);
    let seen = agent.seen.clone();
    let mut agent = agent;
    run(&package, condition, &mut agent, Options { repeat, ..Options::default() });
    let opening = seen.lock().unwrap().opening.clone().unwrap();
    opening.message
}

#[test]
fn the_oracle_opening_lists_answers_in_registry_order_or_says_there_are_none() {
    let instruction = fixture("delivery-basic").instruction().trim_end().to_string();
    assert_eq!(oracle_opening("oracle:0", 0), format!("{instruction}\n\n---\n\n{NO_SETTLED_POINTS}"));
    assert_eq!(NO_SETTLED_POINTS, "Points the client has already settled: none.");
    assert_eq!(SETTLED_POINTS, "Points the client has already settled:");
    // Run seed 7: the permutation of repeat 0 starts with packaging-weight, that of repeat 3
    // with all-items-today (fixed by `oracle_seed`).
    assert_eq!(oracle_opening("oracle:0.5", 0), format!("{instruction}\n\n---\n\n{SETTLED_POINTS}\n\n- {WEIGHT_ANSWER}"));
    assert_eq!(oracle_opening("oracle:0.5", 3), format!("{instruction}\n\n---\n\n{SETTLED_POINTS}\n\n- {TODAY_ANSWER}"));
    // Registry order (clarifications.toml), not repeat 3's permutation order.
    let both = format!("{instruction}\n\n---\n\n{SETTLED_POINTS}\n\n- {WEIGHT_ANSWER}\n- {TODAY_ANSWER}");
    assert_eq!(oracle_opening("oracle:1", 0), both);
    assert_eq!(oracle_opening("oracle:1", 3), both);
}

#[test]
fn a_business_days_question_is_answered_with_its_own_target_only() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/retail-replenishment");
    let package = specgap_task::load(&root).unwrap();
    let target = package.clarifications().iter().find(|t| t.id == "supplier-lead-business-days").unwrap();
    let mut agent = TestAgent::new(vec![
        ask("Are supplier lead times counted in business days?"),
        ask_all(&["Do suppliers deliver on weekends?".to_string()]),
    ]);
    let r = run(&package, "interact", &mut agent, Options::default());
    let results = r.results();
    assert_eq!(results[0].1, target.answer.trim());
    assert_eq!(results[1].1, format!("- Do suppliers deliver on weekends?\n  {}", target.answer.trim()));
    let matched: Vec<Vec<String>> = r.store.questions().unwrap().into_iter().map(|q| q.question.matched_targets).collect();
    assert_eq!(matched, [["supplier-lead-business-days"], ["supplier-lead-business-days"]]);
}
