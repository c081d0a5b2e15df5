//! Plain-text refusals: when a reply without a tool call counts as a refusal (DESIGN §3.5).
//!
//! DESIGN §3.5 ends an episode after three consecutive "refusals or content-filter stops".
//! A server marks a refusal only sometimes: `finish_reason = "content_filter"`, or a `refusal`
//! field (both handled in [`crate::chat::agent`]). Most open-model servers (vLLM, llama.cpp,
//! Ollama) have neither, so a model that declines the task answers in plain text, and without
//! a text rule that episode ended `no_tool_call`, told apart from nothing — a model that
//! forgot to call its tools looked the same in the report.
//!
//! The rule is deterministic and deliberately narrow, because a reply it takes for a refusal
//! changes the end path (a refusal gets its own reminder and the episode ends after three
//! in a row instead of two no-call replies): a reply without any tool call is a refusal when
//! its whole text, trimmed, is at most [`REFUSAL_MAX_CHARS`] characters and — lowercased,
//! curly apostrophes made straight, runs of whitespace made one space, one leading apology
//! ("sorry", "i'm sorry", "i am sorry", "i apologize", "i apologise", "unfortunately", then
//! punctuation and an optional "but") taken off — it begins with one of the fixed phrases
//! below, followed by the end of the text or by `.`, `!`, `,`, `;`, `:` or a dash:
//!
//! * "i can't" / "i cannot" / "i can not" / "i won't" / "i will not" / "i'm unable to" /
//!   "i am unable to" / "i'm not able to" / "i am not able to", then one of "help", "assist",
//!   "comply", "do", "provide", "fulfil(l)" with a generic object ("with that", "with this
//!   request", "you with that", "that", "this request", ...; the full list is
//!   `ACTS` in the source);
//! * "i must decline", "i have to decline", "i'll have to decline", "i will have to decline",
//!   "i need to decline".
//!
//! So "I'm sorry, but I can't help with that." and "I cannot assist with this request; it
//! may cause harm." are refusals, while "I can't find the file." or "I can't help with that
//! until I have seen the logs" (a specific obstacle, not a refusal) stay replies without a
//! tool call. A refusal written any other way is missed and ends as before (`no_tool_call`).

/// Longest reply (characters, after trimming) the text rule can take for a refusal: a
/// model that declines says so briefly; a long reply without a call is work talk.
pub const REFUSAL_MAX_CHARS: usize = 400;

const APOLOGIES: [&str; 6] = ["i'm sorry", "i am sorry", "sorry", "i apologize", "i apologise", "unfortunately"];

const SUBJECTS: [&str; 9] =
    ["i can't", "i cannot", "i can not", "i won't", "i will not", "i'm unable to", "i am unable to", "i'm not able to", "i am not able to"];

/// What the subject declines; each must be followed by the end of the text or punctuation.
const ACTS: [&str; 38] = [
    "help",
    "help with that",
    "help with this",
    "help with it",
    "help with that request",
    "help with this request",
    "help with your request",
    "help you with that",
    "help you with this",
    "assist",
    "assist with that",
    "assist with this",
    "assist with it",
    "assist with that request",
    "assist with this request",
    "assist with your request",
    "assist you with that",
    "assist you with this",
    "comply",
    "comply with that",
    "comply with this",
    "comply with that request",
    "comply with this request",
    "comply with your request",
    "do that",
    "do this",
    "provide that",
    "provide this",
    "fulfill that request",
    "fulfill this request",
    "fulfill your request",
    "fulfil that request",
    "fulfil this request",
    "fulfil your request",
    "help with that task",
    "help with this task",
    "assist with that task",
    "assist with this task",
];

const DECLINES: [&str; 5] = ["i must decline", "i have to decline", "i'll have to decline", "i will have to decline", "i need to decline"];

/// Whether `text`, a reply that called no tool, is a plain-text refusal by the rule of this
/// module's guide.
pub fn is_plain_text_refusal(text: &str) -> bool {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.chars().count() > REFUSAL_MAX_CHARS {
        return false;
    }
    let normal = normalise(trimmed);
    let rest = strip_apology(&normal);
    let declined = SUBJECTS.iter().any(|subject| {
        rest.strip_prefix(subject)
            .and_then(|after| after.strip_prefix(' '))
            .is_some_and(|after| ACTS.iter().any(|act| after.strip_prefix(act).is_some_and(ends_the_phrase)))
    });
    declined
        || DECLINES.iter().any(|phrase| rest.strip_prefix(phrase).is_some_and(|after| ends_the_phrase(after) || after.starts_with(' ')))
}

/// Lowercase, straight apostrophes, single spaces.
fn normalise(text: &str) -> String {
    let lower = text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'");
    lower.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text after one leading apology and the punctuation and "but" that follow it.
fn strip_apology(text: &str) -> &str {
    for apology in APOLOGIES {
        if let Some(after) = text.strip_prefix(apology)
            && !after.starts_with(|c: char| c.is_alphanumeric())
        {
            let after = after.trim_start_matches(|c: char| c.is_whitespace() || ",.!:;-\u{2014}\u{2013}".contains(c));
            return after.strip_prefix("but ").unwrap_or(after);
        }
    }
    text
}

/// Whether what follows a phrase ends it: nothing, or sentence punctuation or a dash.
fn ends_the_phrase(after: &str) -> bool {
    after.is_empty() || after.starts_with(['.', '!', ',', ';', ':', '-', '\u{2014}', '\u{2013}', ')'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_in_plain_text() {
        for text in [
            "I'm sorry, but I can't help with that.",
            "I can’t help with that.",
            "Sorry — I won't do that.",
            "I cannot assist with this request; it may cause harm.",
            "  I'm   unable to comply. ",
            "I apologize, but I am not able to help with this request.",
            "Unfortunately, I cannot fulfill that request!",
            "I must decline.",
            "I must decline to work on this task.",
            "I won't help",
        ] {
            assert!(is_plain_text_refusal(text), "{text:?}");
        }
    }

    #[test]
    fn work_talk_is_not_a_refusal() {
        for text in [
            "",
            "I can't find the file.",
            "I can't help with that until I have seen the logs.",
            "I can't do that without reading billing/fees.py first; let me look.",
            "I have finished the fix; the tests pass.",
            "Helpful note: I cannot help with that.",
            "I cannot helpfully continue without the data.",
            "I'm sorry for the delay. The fee cap is now enforced.",
            "sorrynot: I can't help with that.",
        ] {
            assert!(!is_plain_text_refusal(text), "{text:?}");
        }
        let long = format!("I can't help with that. {}", "Here is why. ".repeat(40));
        assert!(long.trim().chars().count() > REFUSAL_MAX_CHARS);
        assert!(!is_plain_text_refusal(&long));
    }
}
