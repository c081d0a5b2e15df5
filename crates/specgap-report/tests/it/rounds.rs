//! Clarification rounds and question units (seed 002 §4.2, App. A.3; issue 11 item 3): the
//! probe question sets of the issue as store rows, with the retail replenishment case's eight
//! clarification targets and the offline judge.
//!
//! The engine records one `questions` row per question with the agent turn that asked it: an
//! `ask_user` with a `questions` array and a `## Questions for the client` block give one row
//! per question in one turn, a message with several questions one row. The engine does not
//! take `questions` arrays yet; the rows it will record are written directly here.

use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_report::clarification::ClarificationSummary;

use crate::fixture::{Ep, Sub, TaskSpec, close, delivery, run_with};
use crate::{group, report_of};

/// The eight questions of `examples/scripts/retail-ask-first.jsonl`, one per target.
const EIGHT: [&str; 8] = [
    "Is the on_hand figure for the warehouses in stock.csv counted in cases or in single units?",
    "Are the suppliers' lead_days calendar days or business days?",
    "Must the same-city warehouse stock be used up before a supplier delivers directly to a store?",
    "Can surplus at one store be moved to another store, or returned to its warehouse to rebalance?",
    "Are all the truck lanes listed in lanes.csv open for the whole week?",
    "Do supplier purchase quantities have to be whole multiples of case_pack?",
    "In which order do arrivals, sales and dispatches happen during a day?",
    "Is demand we can't meet on the day lost, or does it wait as a backorder?",
];

const CLOSING: &str = "Thank you, that settles everything I needed. I have what I need and will build the plan now.";

fn retail_case() -> TaskSpec {
    let mut spec = TaskSpec::new("org/retail");
    spec.family = "optimization";
    spec.delivery = true;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/tasks/retail-replenishment/clarifications.toml");
    spec.clarifications_toml = Some(std::fs::read_to_string(path).unwrap());
    spec
}

fn asking(condition: &str, agent: &str, questions: Vec<(u32, String)>) -> Ep {
    let mut ep =
        Ep::new("org/retail", agent, condition).kind(ScoringKind::Delivery).sub(Sub::scored(1.0, true, delivery(true, 10.0, None, 0)));
    ep.family = Family::Optimization;
    ep.end = EndReason::Submitted;
    ep.questions = questions;
    ep
}

/// The clarification summary of each agent's group, under `condition`.
fn summaries(eps: &[Ep], condition: &str) -> Vec<ClarificationSummary> {
    let run = run_with(31, &[retail_case()], &[]);
    for ep in eps {
        run.episode(ep);
    }
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    eps.iter().map(|e| group(&report, &[&e.agent, condition]).clarification.clone().unwrap()).collect()
}

fn values(c: &ClarificationSummary) -> (f64, f64, f64, f64, f64, f64) {
    let m = |d: &Option<specgap_report::clarification::DefinedMean>| d.as_ref().unwrap().mean;
    (m(&c.recall), m(&c.precision), m(&c.ask_f1), m(&c.kqc1), m(&c.atc), m(&c.redund))
}

#[test]
fn eight_questions_in_one_turn_are_one_round_and_one_per_turn_are_eight() {
    let array: Vec<(u32, String)> = EIGHT.iter().map(|q| (6, q.to_string())).collect();
    let per_turn: Vec<(u32, String)> = EIGHT.iter().enumerate().map(|(i, q)| (6 + 2 * i as u32, q.to_string())).collect();
    let got = summaries(&[asking("interact", "array", array), asking("interact", "per-turn", per_turn)], "interact");
    // A `questions` array of eight in turn 6: one round covering all eight targets, so KQC1 =
    // Recall = 1 and every target's first covering round is 1.
    assert_eq!(values(&got[0]), (1.0, 1.0, 1.0, 1.0, 1.0, 0.0));
    assert_eq!(got[0].mean_units, 8.0);
    // One question per agent turn (6, 8, …, 20): eight rounds; only the first target is
    // covered in round 1, and ATC is the mean of rounds 1..8.
    let (recall, precision, ask_f1, kqc1, atc, redund) = values(&got[1]);
    assert_eq!((recall, precision, ask_f1, redund), (1.0, 1.0, 1.0, 0.0));
    close(kqc1, 1.0 / 8.0, 1e-15);
    close(atc, 4.5, 1e-15);
}

#[test]
fn one_array_one_text_block_and_one_heading_block_count_alike() {
    let array: Vec<(u32, String)> = EIGHT.iter().map(|q| (6, q.to_string())).collect();
    // One message holding the eight as a numbered list (today's `ask_user` with one text).
    let block = format!(
        "Before I build the plan I need a few things settled:\n{}",
        EIGHT.iter().enumerate().map(|(i, q)| format!("{}. {q}", i + 1)).collect::<Vec<_>>().join("\n")
    );
    // A `## Questions for the client` block: the engine records one row per line.
    let heading: Vec<(u32, String)> = EIGHT.iter().map(|q| (6, format!("- {q}"))).collect();
    let got = summaries(
        &[asking("interact", "array", array), asking("interact", "text", vec![(6, block)]), asking("interact", "heading", heading)],
        "interact",
    );
    for c in &got {
        assert_eq!(values(c), (1.0, 1.0, 1.0, 1.0, 1.0, 0.0), "{c:?}");
        assert_eq!(c.mean_units, 8.0);
    }
}

#[test]
fn a_closing_statement_counts_alike_under_interact_and_interact_req() {
    // Seed 002 A.3: a recorded message without a question mark is one question unit. The
    // closing "I have what I need" reaches no target, so under both conditions it is the ninth
    // unit, unmatched: Precision 8/9, Redund. 1. (The engine records it under `interact`
    // today, and under `interact-req` once that condition is a prompt, issue 11 item 1.)
    let rows = || {
        let mut rows: Vec<(u32, String)> = EIGHT.iter().map(|q| (6, q.to_string())).collect();
        rows.push((7, CLOSING.to_string()));
        rows
    };
    for condition in ["interact", "interact-req"] {
        let got = summaries(&[asking(condition, "closing", rows())], condition);
        let (recall, precision, ask_f1, kqc1, atc, redund) = values(&got[0]);
        assert_eq!((recall, kqc1, atc, redund), (1.0, 1.0, 1.0, 1.0), "{condition}");
        close(precision, 8.0 / 9.0, 1e-15);
        close(ask_f1, 2.0 * (8.0 / 9.0) / (8.0 / 9.0 + 1.0), 1e-15);
        assert_eq!(got[0].mean_units, 9.0);
    }
}

#[test]
fn ask_rate_is_the_share_of_runs_with_a_question() {
    let run = run_with(32, &[retail_case()], &[]);
    run.episode(&asking("interact", "x", vec![(3, EIGHT[0].to_string())]));
    run.episode(&asking("interact", "x", vec![]).repeat(1));
    run.episode(&asking("interact", "x", vec![(2, "What now?".into())]).repeat(2));
    run.episode(&asking("interact", "x", vec![]).repeat(3));
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition]);
    let c = group(&report, &["x", "interact"]).clarification.clone().unwrap();
    assert_eq!(c.runs, 4);
    close(c.ask_rate, 0.5, 1e-15);
    close(c.mean_units, 0.5, 1e-15);
}
