//! The shared question-matching rule: which clarification targets a question reaches.
//!
//! Two consumers use the same pure functions so their verdicts agree:
//! the `relay` user (DESIGN §5), which answers a question with the registered answers of the
//! targets it links to, and the offline coverage judge, which scores questions against
//! targets (seed 002 Appendix A.3: Recall, Precision, Ask-F1).
//!
//! # The rule
//!
//! 1. **Question units** ([`question_units`], seed 002 A.3): a message is split after each
//!    question mark (`?` or the full-width `？`); each piece ending in a question mark is one
//!    unit. A message without any question mark is one unit. Text after the last question
//!    mark of a message that has one is not a question and is dropped. Pieces with no letter
//!    or digit are dropped.
//! 2. **Content words** ([`content_words`]): the text is lowercased and split at every
//!    character that is not alphanumeric; [`STOPWORDS`] and one-character tokens are removed;
//!    each remaining word is reduced by [`stem`]. The result is a set.
//! 3. **Link** ([`links`]): a unit links to a target when, for the target's description or
//!    any of its triggers (its *cues*), the unit and the cue share at least
//!    `min(MIN_SHARED_WORDS, |cue|)` content words **and** the shared words are at least
//!    [`MIN_SHARED_FRACTION`] of the smaller of the two word sets. Two shared words keep a
//!    single common topic word ("data", "cost") from linking; the fraction keeps two long
//!    texts that merely brush the same topic from linking.
//!
//! A question (a whole message) links to the union of the targets its units link to, in the
//! targets' file order ([`linked_targets`]).

use std::collections::BTreeSet;

use specgap_protocol::package::ClarificationTarget;

/// Shared content words a unit needs with a cue (fewer when the cue itself has fewer words).
pub const MIN_SHARED_WORDS: usize = 2;

/// Shared content words as a fraction of the smaller word set (unit or cue) needed to link.
pub const MIN_SHARED_FRACTION: f64 = 0.5;

/// Words that carry no topic: articles, pronouns, auxiliaries, prepositions, question words
/// and politeness. Matched after lowercasing and before stemming.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "anything",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "did", "do", "does", "doing", "done", "each", "either", "else",
    "etc", "every", "few", "for", "from", "further", "get", "got", "had", "has", "have", "having",
    "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "just", "know", "let", "like", "may", "me", "might", "more", "most", "much", "must", "my",
    "need", "no", "nor", "not", "now", "of", "off", "on", "once", "one", "only", "or", "other",
    "our", "ours", "out", "over", "own", "please", "shall", "she", "should", "so", "some", "such",
    "tell", "than", "thank", "thanks", "that", "the", "their", "theirs", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "use",
    "used", "very", "want", "was", "we", "were", "what", "when", "where", "whether", "which",
    "while", "who", "whom", "why", "will", "with", "would", "yes", "you", "your", "yours",
];

/// Splits a message into question units (seed 002 A.3): one unit per question mark, the
/// whole message when it has none. Units are trimmed; see the module guide for the details.
///
/// ```
/// use specgap_task::matching::question_units;
/// assert_eq!(question_units("Which unit? And the range? Thanks."), ["Which unit?", "And the range?"]);
/// assert_eq!(question_units("Tell me the unit."), ["Tell me the unit."]);
/// assert!(question_units("  ").is_empty());
/// ```
pub fn question_units(message: &str) -> Vec<&str> {
    let is_mark = |c: char| c == '?' || c == '？';
    if !message.contains(is_mark) {
        return keep_if_wordy(message.trim()).into_iter().collect();
    }
    let mut units = Vec::new();
    let mut start = 0;
    for (at, c) in message.char_indices() {
        if is_mark(c) {
            let end = at + c.len_utf8();
            units.extend(keep_if_wordy(message[start..end].trim()));
            start = end;
        }
    }
    units
}

fn keep_if_wordy(unit: &str) -> Option<&str> {
    unit.chars().any(char::is_alphanumeric).then_some(unit)
}

/// The content words of a text: lowercased alphanumeric tokens, minus [`STOPWORDS`] and
/// one-character tokens, each reduced by [`stem`].
///
/// ```
/// use specgap_task::matching::content_words;
/// let words: Vec<_> = content_words("Are the cities' stores counted?").into_iter().collect();
/// assert_eq!(words, ["city", "count", "stor"]);
/// ```
pub fn content_words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|token| token.chars().count() > 1 && !STOPWORDS.contains(token))
        .map(stem)
        .collect()
}

/// A light suffix-stripping stemmer, enough to let "routes", "routed" and "routing" meet.
/// On a lowercase word, in order: `ies`→`y` (words over four characters), or else a final
/// `s` dropped (not after `s`, `u` or `i`) from words of four or more characters; then one
/// of `ing`, `ed` (not `eed`) or `ly` dropped when at least three characters remain; then a
/// final `e` dropped from words of four or more characters. The stem need not be a word; both sides of a comparison are stemmed alike.
///
/// ```
/// use specgap_task::matching::stem;
/// assert_eq!(stem("routing"), "rout");
/// assert_eq!(stem("routes"), "rout");
/// assert_eq!(stem("cities"), "city");
/// assert_eq!(stem("class"), "class");
/// ```
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.len() >= 4
        && w.ends_with('s')
        && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is"))
    {
        w.pop();
    }
    for suffix in ["ing", "ed", "ly"] {
        if w.len() >= suffix.len() + 3
            && w.ends_with(suffix)
            && !(suffix == "ed" && w.ends_with("eed"))
        {
            w.truncate(w.len() - suffix.len());
            break;
        }
    }
    strip_final_e(w)
}

fn strip_final_e(mut w: String) -> String {
    if w.len() >= 4 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// Whether two content-word sets overlap enough to link (the module guide's step 3);
/// `cue` is the target's side.
pub fn words_link(unit: &BTreeSet<String>, cue: &BTreeSet<String>) -> bool {
    if unit.is_empty() || cue.is_empty() {
        return false;
    }
    let shared = unit.intersection(cue).count();
    let smaller = unit.len().min(cue.len());
    shared >= MIN_SHARED_WORDS.min(cue.len())
        && shared as f64 >= MIN_SHARED_FRACTION * smaller as f64
}

/// Whether one question unit links to a target through its description or any trigger.
pub fn links(unit: &str, target: &ClarificationTarget) -> bool {
    let words = content_words(unit);
    std::iter::once(target.description.as_str())
        .chain(target.triggers.iter().map(String::as_str))
        .any(|cue| words_link(&words, &content_words(cue)))
}

/// The targets a whole message links to: the union over its [`question_units`], in the
/// order of `targets`, each at most once.
pub fn linked_targets<'a>(
    message: &str,
    targets: &'a [ClarificationTarget],
) -> Vec<&'a ClarificationTarget> {
    let units = question_units(message);
    targets
        .iter()
        .filter(|target| units.iter().any(|unit| links(unit, target)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_protocol::package::{Domain, IssueType};

    fn target(id: &str, description: &str, triggers: &[&str]) -> ClarificationTarget {
        ClarificationTarget {
            id: id.into(),
            description: description.into(),
            issue_type: IssueType::Missing,
            domain: Domain::ScoringConvention,
            rule_source: None,
            answer: format!("answer of {id}"),
            triggers: triggers.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn words(text: &str) -> Vec<String> {
        content_words(text).into_iter().collect()
    }

    #[test]
    fn units_split_after_each_question_mark() {
        assert_eq!(
            question_units("Is it MAE? Or relative error? I will wait."),
            ["Is it MAE?", "Or relative error?"]
        );
        assert_eq!(
            question_units("单位是什么？还有范围?"),
            ["单位是什么？", "还有范围?"]
        );
        assert_eq!(question_units("What range?? ?"), ["What range?"]);
        assert_eq!(question_units("No question here."), ["No question here."]);
        assert_eq!(question_units("?"), Vec::<&str>::new());
        assert_eq!(question_units(""), Vec::<&str>::new());
    }

    #[test]
    fn stemming_cases() {
        let cases = [
            ("measured", "measur"),
            ("measure", "measur"),
            ("measures", "measur"),
            ("measuring", "measur"),
            ("exactly", "exact"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("supplies", "supp"),
            ("supply", "supp"),
            ("speed", "speed"),
            ("speeds", "speed"),
            ("strings", "str"),
            ("string", "str"),
            ("red", "red"),
            ("sing", "sing"),
            ("bus", "bus"),
            ("data", "data"),
            ("cases", "cas"),
            ("case", "cas"),
        ];
        for (word, stemmed) in cases {
            assert_eq!(stem(word), stemmed, "stem({word})");
        }
    }

    #[test]
    fn content_words_drop_stopwords_and_single_characters() {
        assert_eq!(
            words("What is the error metric: MAE or a relative error?"),
            ["error", "mae", "metric", "relativ"]
        );
        assert_eq!(words("Is it ok?"), ["ok"]);
        assert!(words("What should I do?").is_empty());
        assert_eq!(words("same-city stock"), ["city", "sam", "stock"]);
    }

    #[test]
    fn link_threshold_exact_cases() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        // Two shared of a four-word cue with a two-word unit: 2 >= 2 and 2 >= 0.5 * 2.
        assert!(words_link(
            &set(&["error", "mae"]),
            &set(&["error", "mae", "metric", "relativ"])
        ));
        // One shared word never links a multi-word cue.
        assert!(!words_link(
            &set(&["error", "unit"]),
            &set(&["error", "mae", "metric"])
        ));
        // Two shared but only 2 of min(6, 5) = 5 words: 2 < 2.5.
        assert!(!words_link(
            &set(&["a1", "a2", "a3", "a4", "shared1", "shared2"]),
            &set(&["b1", "b2", "b3", "shared1", "shared2"]),
        ));
        // Three shared of min(6, 5) = 5: 3 >= 2.5.
        assert!(words_link(
            &set(&["a1", "a2", "a3", "shared1", "shared2", "shared3"]),
            &set(&["b1", "b2", "shared1", "shared2", "shared3"]),
        ));
        // A one-word cue links on its one word.
        assert!(words_link(
            &set(&["currency", "report"]),
            &set(&["currency"])
        ));
        // Empty sets never link.
        assert!(!words_link(&set(&[]), &set(&["currency"])));
    }

    #[test]
    fn questions_link_to_targets_through_triggers_and_description() {
        let targets = vec![
            target(
                "error-metric",
                "Forecast error is measured as mean absolute error in units, not relative error.",
                &[
                    "Is the error MAE or a relative error?",
                    "How is forecast error measured?",
                ],
            ),
            target(
                "same-city-first",
                "Stock in the same city must be used before any supplier purchase.",
                &["Do same-city transfers come before supplier purchases?"],
            ),
        ];
        let ids = |message: &str| {
            linked_targets(message, &targets)
                .iter()
                .map(|t| t.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("Should I report the error as MAE?"), ["error-metric"]);
        assert_eq!(ids("How do you measure forecast errors?"), ["error-metric"]);
        assert_eq!(
            ids("Must same city stock go first before buying from a supplier?"),
            ["same-city-first"]
        );
        assert_eq!(
            ids("Is error MAE? And do same-city transfers precede supplier purchases?"),
            ["error-metric", "same-city-first"]
        );
        assert!(ids("Anything special about the data?").is_empty());
        assert!(ids("Which Python library should I use?").is_empty());
        assert!(ids("What is the error?").is_empty());
    }
}
