//! The `relay` user (DESIGN §5): deterministic and offline.
//!
//! Feedback is the observation text verbatim, escalated by the engine (incident first, then
//! incident and measured detail). A question gets the registered answers of the clarification
//! targets the shared matching rule ([`specgap_task::matching::linked_targets`]) links it to,
//! joined by blank lines in the targets' file order; a question that links to none gets
//! [`UNKNOWN_ANSWER`].

use specgap_protocol::package::ClarificationTarget;
use specgap_task::TaskPackage;
use specgap_task::matching::linked_targets;

use crate::session::{FeedbackContext, Question, Reply, User, UserError};

/// The relay's reply to a question no registered target covers.
pub const UNKNOWN_ANSWER: &str = "I don't know that. Please find it out from the project itself.";

/// The deterministic relay user.
#[derive(Debug, Clone, Default)]
pub struct RelayUser {
    targets: Vec<ClarificationTarget>,
}

impl RelayUser {
    /// A relay answering from the package's clarification targets.
    pub fn new(package: &TaskPackage) -> Self {
        RelayUser { targets: package.clarifications().to_vec() }
    }

    /// A relay answering from the given targets.
    pub fn from_targets(targets: Vec<ClarificationTarget>) -> Self {
        RelayUser { targets }
    }

    /// The relay's answer text to a question (see the module guide).
    pub fn answer_text(&self, question: &str) -> String {
        let linked = linked_targets(question, &self.targets);
        if linked.is_empty() {
            return UNKNOWN_ANSWER.to_string();
        }
        linked.iter().map(|t| t.answer.trim()).collect::<Vec<_>>().join("\n\n")
    }
}

impl User for RelayUser {
    fn answer(&mut self, question: &Question) -> Result<Reply, UserError> {
        Ok(Reply { text: self.answer_text(&question.text), usage: None })
    }

    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError> {
        Ok(Reply { text: context.text.clone(), usage: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_protocol::package::{Domain, IssueType};

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
}
