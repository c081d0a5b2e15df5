//! What the owner of a requirement-scored task can say from `user.toml` (DESIGN §5): the
//! sentences of its `understanding` and `editable_surface`, which the offline `relay` owner
//! answers questions from, and which `check`'s leak scan reads because the agent can hear them.
//!
//! A question is linked to sentences by the shared question-matching rule
//! ([`crate::matching::linked_targets`]), each sentence standing as one cue
//! ([`knowledge_cues`]), so the relay owner answers only with what the question asked about,
//! by the same rule that decides which clarification targets a customer's answer reaches.

use specgap_protocol::package::{ClarificationTarget, Domain, IssueType, UserProfile};

/// The sentences of `text`: split after `.`, `!`, `?` (or their full-width forms) that are
/// followed by whitespace or end the text; whitespace inside a sentence is collapsed to single
/// spaces; empty pieces are dropped. A full stop inside a word (`shop/gateway.py`, `0.5`) does
/// not end a sentence.
///
/// ```
/// use specgap_task::owner::sentences;
/// assert_eq!(
///     sentences("I own the shop.  Leave shop/gateway.py alone!\nWhy? Because."),
///     ["I own the shop.", "Leave shop/gateway.py alone!", "Why?", "Because."]
/// );
/// ```
pub fn sentences(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for word in words {
        current.push(word);
        if word.ends_with(['.', '!', '?', '。', '！', '？']) {
            out.push(current.join(" "));
            current.clear();
        }
    }
    if !current.is_empty() {
        out.push(current.join(" "));
    }
    out
}

/// Which field of `user.toml` a knowledge sentence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnowledgeField {
    /// `understanding`: what the owner believes about the work.
    Understanding,
    /// `editable_surface`: what the owner lets the engineer change.
    EditableSurface,
}

impl KnowledgeField {
    /// The field's key in `user.toml`.
    pub fn key(self) -> &'static str {
        match self {
            KnowledgeField::Understanding => "understanding",
            KnowledgeField::EditableSurface => "editable_surface",
        }
    }
}

/// The owner's knowledge sentences, in order: those of `understanding`, then those of
/// `editable_surface`, each with its field.
pub fn knowledge_sentences(profile: &UserProfile) -> Vec<(KnowledgeField, String)> {
    let of = |field: KnowledgeField, text: &str| sentences(text).into_iter().map(move |s| (field, s));
    of(KnowledgeField::Understanding, &profile.understanding)
        .chain(of(KnowledgeField::EditableSurface, &profile.editable_surface))
        .collect()
}

/// The knowledge sentences as cues of the shared matching rule: one
/// [`ClarificationTarget`] per sentence, whose description and answer are the sentence and
/// whose id is `<field>-<n>` (1-based within the field). Issue type and domain mean nothing
/// here (`missing`, `data-semantics`); only the description takes part in matching.
pub fn knowledge_cues(profile: &UserProfile) -> Vec<ClarificationTarget> {
    let mut counts = [0usize; 2];
    knowledge_sentences(profile)
        .into_iter()
        .map(|(field, sentence)| {
            let n = &mut counts[field as usize];
            *n += 1;
            ClarificationTarget {
                id: format!("{}-{n}", field.key()),
                description: sentence.clone(),
                issue_type: IssueType::Missing,
                domain: Domain::DataSemantics,
                rule_source: None,
                answer: sentence,
                triggers: Vec::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> UserProfile {
        UserProfile {
            persona: "Sam, who owns the shop.".into(),
            understanding: "Checkout fails on Friday evenings. I think Paylane is flaky under load.\nI do not know how \
                            Paylane answers when it is overloaded."
                .into(),
            editable_surface: "Anything under shop/ except shop/gateway.py.".into(),
            style: None,
        }
    }

    #[test]
    fn cues_are_one_per_sentence_numbered_per_field() {
        let cues = knowledge_cues(&profile());
        let ids: Vec<_> = cues.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["understanding-1", "understanding-2", "understanding-3", "editable_surface-1"]);
        assert_eq!(cues[2].answer, "I do not know how Paylane answers when it is overloaded.");
        assert_eq!(cues[3].description, "Anything under shop/ except shop/gateway.py.");
    }

    #[test]
    fn a_text_without_a_final_stop_keeps_its_last_sentence() {
        assert_eq!(sentences("One. Two"), ["One.", "Two"]);
        assert!(sentences(" \n ").is_empty());
        assert_eq!(sentences("Version 0.5 is out. Fine"), ["Version 0.5 is out.", "Fine"]);
    }
}
