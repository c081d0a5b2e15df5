//! The `relay` user (DESIGN §5): deterministic and offline, built from package data only,
//! never from requirement text.
//!
//! * **Feedback** is the owner's next instruction: what was seen — the observation text,
//!   escalated by the engine (the incident the first time a failure mode is reported, the
//!   incident and the measured detail every later time) — then, in a format-2 package, the
//!   observation's `request`: what the owner needs to be different, in the owner's voice
//!   ([`feedback_text`]). A format-1 observation has no request, so its message is the
//!   observation text alone, as before format 2.
//! * **Questions** on a requirement-scored task (the owner) are answered with the sentences of
//!   `user.toml`'s `understanding` and `editable_surface` that the shared matching rule links
//!   to the question ([`specgap_task::owner::knowledge_cues`]), in their order, joined by
//!   spaces; on any other task (the customer) with the registered answers of the linked
//!   clarification targets, joined by blank lines in the targets' file order. Only the
//!   sentences that ask link (rule version 3): an assumption the agent states beside its
//!   question is not answered, so the relay never volunteers a target that was not asked
//!   about. A question that links to nothing gets [`UNKNOWN_ANSWER`].

use specgap_protocol::package::ClarificationTarget;
use specgap_task::TaskPackage;
use specgap_task::matching::linked_targets;
use specgap_task::owner::knowledge_cues;

use crate::session::{FeedbackContext, Question, Reply, User, UserError};

/// The relay's reply to a question nothing it knows covers.
pub const UNKNOWN_ANSWER: &str = "I don't know that. Please find it out from the project itself.";

/// What the relay answers questions from.
#[derive(Debug, Clone, PartialEq)]
enum Knowledge {
    /// The owner of a requirement-scored task: one cue per `user.toml` sentence.
    OwnerSentences(Vec<ClarificationTarget>),
    /// The customer: the clarification targets.
    Targets(Vec<ClarificationTarget>),
}

/// The deterministic relay user.
#[derive(Debug, Clone)]
pub struct RelayUser {
    knowledge: Knowledge,
}

impl Default for RelayUser {
    fn default() -> Self {
        RelayUser::from_targets(Vec::new())
    }
}

impl RelayUser {
    /// The relay of `package`: the owner's `user.toml` sentences on a requirement-scored task
    /// (none without `user.toml`), else the package's clarification targets.
    pub fn new(package: &TaskPackage) -> Self {
        if package.requirements().is_empty() {
            return RelayUser::from_targets(package.clarifications().to_vec());
        }
        let cues = package.user().map(knowledge_cues).unwrap_or_default();
        RelayUser { knowledge: Knowledge::OwnerSentences(cues) }
    }

    /// A relay answering from the given clarification targets.
    pub fn from_targets(targets: Vec<ClarificationTarget>) -> Self {
        RelayUser { knowledge: Knowledge::Targets(targets) }
    }

    /// The relay's answer text to a question (see the module guide).
    pub fn answer_text(&self, question: &str) -> String {
        let (cues, separator) = match &self.knowledge {
            Knowledge::OwnerSentences(cues) => (cues, " "),
            Knowledge::Targets(targets) => (targets, "\n\n"),
        };
        let linked = linked_targets(question, cues);
        if linked.is_empty() {
            return UNKNOWN_ANSWER.to_string();
        }
        linked.iter().map(|t| t.answer.trim()).collect::<Vec<_>>().join(separator)
    }
}

/// The relay owner's message after a failed submission: the escalated observation text, then
/// the observation's `request` when it has one, separated by a blank line.
pub fn feedback_text(context: &FeedbackContext) -> String {
    match context.observation.request.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
        Some(request) => format!("{}\n\n{request}", context.text.trim_end()),
        None => context.text.clone(),
    }
}

impl User for RelayUser {
    fn answer(&mut self, question: &Question) -> Result<Reply, UserError> {
        Ok(Reply { text: self.answer_text(&question.text), usage: None, request: None })
    }

    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError> {
        Ok(Reply { text: feedback_text(context), usage: None, request: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_protocol::package::{Domain, IssueType, Observation};

    fn target(id: &str, triggers: &[&str], answer: &str) -> ClarificationTarget {
        ClarificationTarget {
            id: id.into(),
            description: String::new(),
            issue_type: IssueType::Missing,
            domain: Domain::ConstraintRule,
            rule_source: None,
            answer: format!("{answer}\n"),
            triggers: triggers.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn answers_join_in_target_order_or_say_unknown() {
        let relay = RelayUser::from_targets(vec![
            target("weight", &["Does the weight limit include the box?"], "Yes, 0.5 kg of it."),
            target("today", &["Can some items ship tomorrow?"], "No, all ship today."),
        ]);
        assert_eq!(
            relay.answer_text("Can items ship tomorrow? And does the limit include the box?"),
            "Yes, 0.5 kg of it.\n\nNo, all ship today."
        );
        assert_eq!(relay.answer_text("What colour are the boxes?"), UNKNOWN_ANSWER);
    }

    #[test]
    fn a_stated_assumption_is_not_answered_only_the_question() {
        // Issue 24 item 2: the relay never volunteers a target the agent did not ask about.
        let relay = RelayUser::from_targets(vec![
            target("weight", &["Does the weight limit include the box?"], "Yes, 0.5 kg of it."),
            target("today", &["Can some items ship tomorrow?"], "No, all ship today."),
        ]);
        assert_eq!(
            relay.answer_text("I assume some items can ship tomorrow. Does the weight limit include the box?"),
            "Yes, 0.5 kg of it."
        );
        assert_eq!(
            relay.answer_text("Does the weight limit include the box? Some items can ship tomorrow, I assume."),
            "Yes, 0.5 kg of it."
        );
        assert_eq!(relay.answer_text("I assume some items can ship tomorrow. Is that right?"), "No, all ship today.");
    }

    fn context(request: Option<&str>, escalated: bool) -> FeedbackContext {
        let observation = Observation {
            requirement: "r".into(),
            failure_mode: "m".into(),
            scene: "Sam reads the inbox.".into(),
            incident: "A customer was charged twice.\n".into(),
            detail: "Order {order} shows 2 captures.".into(),
            request: request.map(str::to_string),
        };
        let text = if escalated { "A customer was charged twice.\n\nOrder 7 shows 2 captures." } else { "A customer was charged twice." };
        FeedbackContext { observation, detail: "Order 7 shows 2 captures.".into(), escalated, text: text.into() }
    }

    #[test]
    fn feedback_adds_the_request_after_what_was_seen() {
        assert_eq!(
            feedback_text(&context(Some("Next time, one order should mean one charge.\n"), false)),
            "A customer was charged twice.\n\nNext time, one order should mean one charge."
        );
        assert_eq!(
            feedback_text(&context(Some("Next time, one order should mean one charge."), true)),
            "A customer was charged twice.\n\nOrder 7 shows 2 captures.\n\nNext time, one order should mean one charge."
        );
        // Format 1: no request, the observation text alone.
        assert_eq!(feedback_text(&context(None, false)), "A customer was charged twice.");
    }
}
