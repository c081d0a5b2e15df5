//! The `relay` owner on a bundled package (DESIGN §5, seed 000 App. F.4): after each failure
//! mode of `examples/tasks/payment-retry` its message is what was seen and what the owner needs
//! to be different (the format-2 `request`), and its answers come from the linked sentences of
//! `user.toml`, or it does not know.

use std::collections::BTreeMap;

use serde_json::json;
use specgap_engine::feedback::Escalation;
use specgap_engine::relay::{RelayUser, UNKNOWN_ANSWER};
use specgap_engine::session::{Question, User};
use specgap_protocol::result::{EvalResult, RESULT_VERSION, RequirementOutcome};
use specgap_protocol::run::EndReason;
use specgap_task::TaskPackage;

use crate::support::{Options, TestAgent, one, run};

fn payment_retry() -> TaskPackage {
    specgap_task::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/payment-retry")).unwrap()
}

/// A result in which only `requirement` fails, in `failure_mode`, with `measured` values.
fn failing(package: &TaskPackage, requirement: &str, failure_mode: &str, measured: serde_json::Value) -> EvalResult {
    let measured: BTreeMap<String, serde_json::Value> = measured.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let requirements = package
        .requirement_ids()
        .iter()
        .map(|id| {
            let fails = id == requirement;
            let outcome = RequirementOutcome {
                pass: !fails,
                failure_mode: fails.then(|| failure_mode.to_string()),
                measured: if fails { measured.clone() } else { BTreeMap::new() },
                detail: None,
            };
            (id.clone(), outcome)
        })
        .collect();
    EvalResult { version: RESULT_VERSION, requirements: Some(requirements), tests: None, delivery: None, reward: None, rewards: None }
}

/// The relay owner's first message after each failure mode: the incident, then the request.
const FIRST_REPORTS: &[(&str, &str, &str)] = &[
    (
        "charge-once",
        "charged-twice",
        "A customer wrote in that their card was charged twice for one order on Friday evening, and the settlement report shows the same order captured twice.\n\nNext time I look at the settlement report, I need every customer to have paid once for their basket, however Paylane behaved that evening.",
    ),
    (
        "charge-once",
        "charged-but-failed",
        "A customer was charged, yet their order sits in our system as not paid and they never got a confirmation, so the kitchen never saw it.\n\nWhen a customer's money has reached us, their order has to go through and get to the kitchen, not sit there looking unpaid.",
    ),
    (
        "charge-once",
        "checkout-error-after-lost-answer",
        "The checkout crashed with an error page on an order whose first payment attempt got no answer.\n\nEven when Paylane's answer goes missing, the customer should land on a page that tells them where their order stands, not on an error.",
    ),
    (
        "retry-timeouts",
        "timeout-ended-checkout",
        "Customers whose payment call timed out still did not get their order through; the shop gave up on them.\n\nOn an evening when Paylane is just slow, I need those customers to still get their orders through.",
    ),
    (
        "retry-timeouts",
        "checkout-error-after-timeout",
        "A customer whose payment call timed out got an error page instead of a finished order.\n\nA slow answer from Paylane should not end in an error page; I need the customer to end up with their order.",
    ),
    (
        "declines-final",
        "decline-retried",
        "A customer's bank blocked their card after our checkout kept sending the same declined card to Paylane, and the customer blames us.\n\nWhen a customer's bank says no to their card, I need our checkout to stop there instead of trying that card again.",
    ),
    (
        "declines-final",
        "decline-not-recorded",
        "A customer whose bank refused their card was told we could not take the payment and to try again, with no word that the card itself was declined.\n\nNext time a bank refuses a card, the customer should hear that it was the card and be asked to use a different one.",
    ),
    (
        "declines-final",
        "checkout-error-on-decline",
        "Checkout crashed with an error page when the bank refused the card.\n\nA refused card should leave the customer on a page they can do something with, not on a crash.",
    ),
    (
        "respect-busy-wait",
        "busy-retried-early",
        "Paylane says we keep hammering them while they are asking us to back off, and those orders still did not go through.\n\nNext time Paylane asks us to hold off, I need us to give them the pause they ask for, and those orders should still go through.",
    ),
    (
        "respect-busy-wait",
        "busy-gave-up",
        "Customers lost their orders when Paylane said it was busy for a moment, even though it would have taken the payment a few seconds later.\n\nWhen Paylane is busy for a moment, I need the order to go through once they can take it, instead of losing the customer.",
    ),
    (
        "respect-busy-wait",
        "checkout-error-on-busy",
        "Checkout crashed with an error page when Paylane answered that it was busy.\n\nA busy answer from Paylane should not crash checkout; the customer should still get their order.",
    ),
    (
        "checkout-deadline",
        "deadline-exceeded",
        "During the outage customers sat on a spinning page and then got the load balancer's 504 error page instead of anything from us.\n\nEven during an outage, customers should get an answer from our own checkout before the load balancer gives up on them.",
    ),
    (
        "checkout-deadline",
        "unresolved-marked-failed",
        "Orders from the outage were marked failed and the customers told so, although nobody knew yet whether Paylane had taken the money, and the overnight job left them alone.\n\nWhile nobody knows yet whether Paylane took the money, please don't tell the customer their order failed; I'd rather the overnight job sorted those orders out.",
    ),
    (
        "checkout-deadline",
        "checkout-error-in-outage",
        "Checkout crashed with an error page while Paylane was not answering.\n\nWhen Paylane stops answering altogether, checkout should still show customers a page from us rather than crashing.",
    ),
];

#[test]
fn the_relay_owner_s_message_after_each_failure_mode_is_pinned() {
    let package = payment_retry();
    assert_eq!(package.observations().len(), FIRST_REPORTS.len());
    let mut relay = RelayUser::new(&package);
    for (requirement, failure_mode, expected) in FIRST_REPORTS {
        let mut escalation = Escalation::default();
        let result = failing(&package, requirement, failure_mode, json!({"order": 1042}));
        let context = escalation.feedback(&package, &result).unwrap();
        assert_eq!(context.observation.failure_mode, *failure_mode);
        assert_eq!(relay.feedback(&context).unwrap().text, *expected, "{requirement}/{failure_mode}");
    }
}

#[test]
fn a_second_report_of_a_failure_mode_adds_the_measured_detail_before_the_request() {
    let package = payment_retry();
    let mut relay = RelayUser::new(&package);
    let mut escalation = Escalation::default();
    let result = failing(&package, "charge-once", "charged-twice", json!({"order": 1077, "captures": 2}));
    escalation.feedback(&package, &result).unwrap();
    let second = escalation.feedback(&package, &result).unwrap();
    assert_eq!(
        relay.feedback(&second).unwrap().text,
        "A customer wrote in that their card was charged twice for one order on Friday evening, and the settlement \
         report shows the same order captured twice.\n\nOrder 1077 shows 2 captures at Paylane for a single basket.\n\n\
         Next time I look at the settlement report, I need every customer to have paid once for their basket, however \
         Paylane behaved that evening."
    );
}

#[test]
fn the_relay_owner_answers_from_the_user_toml_sentences_a_question_links_to() {
    let package = payment_retry();
    let mut relay = RelayUser::new(&package);
    let mut ask = |text: &str| relay.answer(&Question { index: 0, turn: 1, text: text.into() }).unwrap().text;
    // Linked to one sentence of the understanding: the owner says what it knows (here, that
    // it does not know), and nothing it was not asked about.
    assert_eq!(ask("How does Paylane answer when it is overloaded?"), "I don't know how Paylane answers when it is overloaded.");
    // Linked to the editable surface.
    assert_eq!(
        ask("May I change shop/gateway.py?"),
        "Anything under shop/ except shop/gateway.py, which mirrors Paylane's SDK; the records are history and stay as they are."
    );
    // Linked to nothing the owner said.
    assert_eq!(ask("Which colour should the receipt e-mail use?"), UNKNOWN_ANSWER);
}

#[test]
fn a_failed_submission_reaches_the_agent_as_the_owner_s_instruction() {
    // The starter fails every requirement; charge-once has the highest priority.
    let package = payment_retry();
    let mut agent = TestAgent::new(vec![one("submit", json!({}))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().submissions[0].failing_requirement.as_deref(), Some("charge-once"));
    // The starter's charge-once failure is a charged order left unpaid (charged-but-failed).
    assert_eq!(agent.user_messages(), [FIRST_REPORTS[1].2]);
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
}
