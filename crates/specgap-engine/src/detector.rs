//! Which questions an agent's reply text asks the client (seed 002 A.9.3, "Text exchange"):
//! the interface the delivery text channel asks ([`QuestionDetector`]) and its deterministic
//! default ([`SentenceRule`]).
//!
//! The engine reads questions listed under the `## Questions for the client` heading itself
//! ([`crate::text_channel::heading_questions`]) and asks a detector only about replies without
//! that heading, under delivery conditions that offer `ask_user`. The detector answers for the
//! simulated customer — what it detects is what the customer answers — so it belongs to the
//! user ([`crate::User::detector`]), and its configuration is part of the user's
//! configuration and so of the episode key (DESIGN §6).
//!
//! * [`SentenceRule`] (no model; used when the user names no detector): in a reply without a
//!   tool call on a delivery case, before or after a file matches `[delivery].artifact`, every
//!   sentence ending in a question mark that is neither an offer ("Would you like me to …?",
//!   "Shall I also …?") nor answered by the agent itself in the next sentence
//!   ([`crate::text_channel::prose_questions`]); nothing otherwise.
//! * A model panel (`specgap-panels`, `specgap run --detector-panel FILE`): every reply, before
//!   and after the deliverable exists, with or without tool calls; a reply without a question
//!   mark is not a question; the others are voted on by the panel (strict majority of the
//!   ballots returned), compound questions split, rhetorical questions and offers left out.
//!
//! A detector's ballots come back with its [`Detection`] and the engine records them in the
//! store's `ballots` table; its model usage goes to the `detector` role of the episode's
//! `usage` through the [`SessionLink`] it is attached to.

use specgap_store::Ballot;

use crate::session::SessionLink;
use crate::text_channel;

/// One agent reply as a detector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyText<'a> {
    /// The reply's text.
    pub text: &'a str,
    /// The 1-based agent turn.
    pub turn: u32,
    /// Whether the reply also called tools.
    pub with_tool_calls: bool,
    /// Whether no workspace file matches `[delivery].artifact` (`None` without `[delivery]`).
    pub artifact_missing: Option<bool>,
}

/// What a detector found in one reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detection {
    /// The questions for the client, in order (empty: the reply asks nothing).
    pub questions: Vec<String>,
    /// The ballots behind the decision, for the store (empty for [`SentenceRule`]).
    pub ballots: Vec<Ballot>,
}

/// Why a detector could not decide: its models failed (after retries), or a request was
/// abandoned at the episode's deadline.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DetectorError {
    /// What went wrong, lowercase.
    pub message: String,
    /// The request was abandoned at the deadline or on a stop: not a failure (the engine ends
    /// the episode by its deadline rules).
    pub abandoned: bool,
    /// Ballots already cast (they were paid for and are recorded).
    pub ballots: Vec<Ballot>,
}

/// Decides which questions a reply asks (module guide).
pub trait QuestionDetector {
    /// Receives the episode's link (deadline; usage sink of role `detector`) once, before the
    /// first reply. The default ignores it.
    fn attach(&mut self, _link: &SessionLink) {}

    /// The questions `reply` asks the client.
    ///
    /// # Errors
    /// [`DetectorError`] when it cannot decide; an abandoned one is not an error of the episode.
    fn detect(&mut self, reply: &ReplyText<'_>) -> Result<Detection, DetectorError>;
}

/// The deterministic default (module guide).
#[derive(Debug, Clone, Copy, Default)]
pub struct SentenceRule;

impl QuestionDetector for SentenceRule {
    fn detect(&mut self, reply: &ReplyText<'_>) -> Result<Detection, DetectorError> {
        // Whether the deliverable exists does not matter: a question the agent asks after
        // writing it is still a question (issue 24 item 2).
        let questions = if !reply.with_tool_calls && reply.artifact_missing.is_some() && text_channel::has_question_mark(reply.text) {
            text_channel::prose_questions(reply.text)
        } else {
            Vec::new()
        };
        Ok(Detection { questions, ballots: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(text: &str, with_tool_calls: bool, artifact_missing: Option<bool>) -> ReplyText<'_> {
        ReplyText { text, turn: 1, with_tool_calls, artifact_missing }
    }

    #[test]
    fn the_sentence_rule_hears_questions_without_tool_calls_before_and_after_the_deliverable() {
        let text = "I read the data. Which unit is stock in? Shall I also plot the routes?";
        let questions = |r| SentenceRule.detect(&r).unwrap().questions;
        // The offer is not a question; the deliverable existing or not changes nothing.
        assert_eq!(questions(reply(text, false, Some(true))), ["Which unit is stock in?"]);
        assert_eq!(questions(reply(text, false, Some(false))), ["Which unit is stock in?"]);
        assert!(questions(reply(text, true, Some(true))).is_empty());
        assert!(questions(reply(text, false, None)).is_empty());
        assert!(questions(reply("No question.", false, Some(true))).is_empty());
    }

    #[test]
    fn offers_and_self_answered_questions_are_not_heard() {
        let questions = |text| SentenceRule.detect(&reply(text, false, Some(false))).unwrap().questions;
        for offer in [
            "The plan is in plan.json. Would you like me to add a chart?",
            "Done. Do you want me to rerun it with a larger budget?",
            "Shall I also plot the routes?",
            "Should I go ahead and submit?",
            "Is there anything else you need?",
            "Let me know if you'd like changes?",
            "And would you like me to explain the schedule?",
        ] {
            assert!(questions(offer).is_empty(), "{offer}");
        }
        for answered in [
            "How do we balance time against fairness? We weight them 1:90.",
            "Are lead times business days? Probably, since suppliers close at weekends.",
            "Is on_hand in cases? I assume so and multiplied by case_pack.",
            "Can stores ship? No, the lanes are one-way.",
            "What did I change? I rewrote the routing so that every store gets a daily truck.",
            "Why is the plan long? Because every store is served every day.",
        ] {
            assert!(questions(answered).is_empty(), "{answered}");
        }
        // A statement that keeps the question open, or one in the next paragraph, is no answer.
        assert_eq!(questions("Is on_hand in cases? If so I will multiply by case_pack."), ["Is on_hand in cases?"]);
        assert_eq!(questions("Which unit is on_hand in?\n\nYes, the plan is ready."), ["Which unit is on_hand in?"]);
        assert_eq!(
            questions("Plan written.\n- Are lead times business days?\n- Should I use MAE or relative error?"),
            ["Are lead times business days?", "Should I use MAE or relative error?"]
        );
    }
}
