//! The shared question-matching rule: which clarification targets a question reaches.
//!
//! Two consumers use the same pure functions so their verdicts agree:
//! the `relay` user (DESIGN §5), which answers a question with the registered answers of the
//! targets it links to and nothing else, and the offline coverage judge, which scores
//! questions against targets (seed 002 §4.1 "Requirement coverage", App. A.3: Recall,
//! Precision, Ask-F1, KQC1, ATC, Redund.).
//!
//! # The rule
//!
//! 1. **Question units** ([`question_units`], seed 002 A.3): a message is split at each
//!    question mark (`?` or the full-width `？`); every piece is one unit, the question mark
//!    staying with the text before it. So a message without a question mark is one unit, and
//!    text after the last question mark is a unit of its own ("Which unit? Thanks." is two).
//!    Pieces with no letter or digit are dropped.
//! 2. **Content words** ([`content_words`]): the text is lowercased and split at every
//!    character that is not alphanumeric; [`STOPWORDS`] and one-character tokens are removed;
//!    each remaining word is reduced by [`stem`]. The result is a set.
//! 3. **Cues and evidence** ([`TargetMatcher`]): a target's *cues* are its description and
//!    each of its triggers. A word's *target frequency* is the number of targets of the task
//!    with the word in some cue. Shared words give a target *evidence* Σ 1 / frequency: a word
//!    only this target has counts 1 (it is *distinctive*), a topic word that four targets share
//!    counts ¼ ([`TargetMatcher::evidence`]).
//! 4. **Reach**: a piece of text (a unit, or one of its [`clauses`]) reaches a target through
//!    a cue when the two share at least `min(MIN_SHARED_WORDS, |cue|)` content words, the
//!    shared words are at least [`MIN_SHARED_FRACTION`] of the smaller word set
//!    ([`words_link`]), and their evidence is at least [`MIN_EVIDENCE`]. A *generic* piece —
//!    one holding a word of [`GENERIC_WORDS`] ("rules", "watch out", "special") — reaches a
//!    target only when a shared word is distinctive.
//! 5. **Link** ([`TargetMatcher::unit_links`]): a piece links to the targets it reaches with
//!    the most evidence (all of them on a tie), not to every target it reaches; a text links
//!    to the union of what the whole text and each of its clauses link to, so one question
//!    that names three rules in three clauses reaches all three.
//! 6. **What asks** ([`asking_sentences`], version 3): only the sentences of a unit that ask
//!    link. In a unit that ends with a question mark these are its *question sentence* (the
//!    text after the last sentence end before the mark) and any *request sentence* before it
//!    (one that opens with a request such as "please", "tell me", "confirm", "let me know":
//!    [`REQUEST_OPENERS`]); the statements before them are context. Context is read only when
//!    the asking sentences link to nothing and the question sentence leans on it — it has
//!    fewer than [`MIN_SHARED_WORDS`] content words or refers back ("is that right?", "are
//!    they in cases?": [`BACK_REFERENCES`]); then the whole unit links. Text after the last
//!    question mark of a message that has one asks only through its request sentences
//!    ([`TargetMatcher::unit_links_after_questions`]). A message without any question mark is
//!    one unit and links as a whole: it was put to the customer as a question.
//!
//! Steps 3 to 6 keep the customer from volunteering what was not asked: a question that only
//! names the topic ("any rules about warehouse stock, suppliers and stores I should watch out
//! for?") reaches nothing; a question about weekend deliveries links to the business-days
//! target and not to the same-city rule, which merely mentions suppliers delivering; and an
//! assumption stated before a question ("I will treat lead_days as business days. Which lanes
//! are closed?") is not answered in place of the question. Seed 002's judge is told the same:
//! merely touching a requirement's topic is not coverage (App. A.3, A.9.5), and the client does
//! not volunteer what the agent never asked about (A.9.5). Exact verdicts on probe questions
//! are pinned in the unit tests and, for the bundled retail case, in `tests/it/matching.rs`.
//!
//! A question (a whole message) links to the union of the targets its units link to, in the
//! targets' file order ([`linked_targets`]).

use std::collections::{BTreeMap, BTreeSet};

use specgap_protocol::package::ClarificationTarget;

/// Version of the rule: it changes whenever a change could change a verdict, so stored offline
/// verdicts of another version are not mixed with this one's (the offline judge's name
/// carries it). Version 1: any target sharing two content words, text after the last question
/// mark dropped; version 2: steps 1 to 5 of the module guide, a unit linked as a whole;
/// version 3: step 6 added (only the sentences that ask link).
pub const RULE_VERSION: u32 = 3;

/// Shared content words a unit needs with a cue (fewer when the cue itself has fewer words).
pub const MIN_SHARED_WORDS: usize = 2;

/// Shared content words as a fraction of the smaller word set (unit or cue) needed to link.
pub const MIN_SHARED_FRACTION: f64 = 0.5;

/// Evidence a piece needs for a target: as much as one word only that target has
/// ([`TargetMatcher::evidence`]).
pub const MIN_EVIDENCE: f64 = 1.0;

/// Evidence within this of the best counts as a tie (sums of reciprocals, compared as floats).
const EVIDENCE_TIE: f64 = 1e-9;

/// Words that make a question a general request — what the *rules* are, what to *watch* out
/// for, what is *special* — matched after stemming. Seed 002's judge is told such a question
/// does not cover a requirement even when its topic is right (App. A.9.5); here a generic
/// piece reaches a target only through a word that target alone has.
pub const GENERIC_WORDS: &[&str] = &["rul", "watch", "special", "pitfall", "gotcha", "caveat", "careful", "awar", "tricky", "quirk"];

/// Openings (lowercase, matched at the start of a sentence after an optional "and", "also",
/// "finally" or "lastly") that make a sentence without a question mark a request to the
/// customer (module guide, step 6).
pub const REQUEST_OPENERS: &[&str] = &[
    "please",
    "kindly",
    "tell me",
    "tell us",
    "let me know",
    "let us know",
    "confirm",
    "clarify",
    "explain",
    "specify",
    "describe",
    "advise",
    "share",
    "list",
    "give me",
    "i need to know",
    "i'd like to know",
    "i would like to know",
    "i want to know",
    "could you",
    "can you",
    "would you",
];

/// Words (lowercase tokens) by which a question sentence refers back to the statement before it
/// ("is that right?", "are they in cases?"), so that the statement is read with it (module
/// guide, step 6).
pub const BACK_REFERENCES: &[&str] = &["it", "its", "this", "that", "these", "those", "they", "them", "their", "so", "right", "correct"];

/// Words that carry no topic: articles, pronouns, auxiliaries, prepositions, question words
/// and politeness. Matched after lowercasing and before stemming.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "anything", "are", "as", "at", "be", "because",
    "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "each",
    "either", "else", "etc", "every", "few", "for", "from", "further", "get", "got", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "know", "let", "like", "may", "me", "might", "more",
    "most", "much", "must", "my", "need", "no", "nor", "not", "now", "of", "off", "on", "once", "one", "only", "or", "other", "our",
    "ours", "out", "over", "own", "please", "shall", "she", "should", "so", "some", "such", "tell", "than", "thank", "thanks", "that",
    "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "us", "use", "used", "very", "want", "was", "we", "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "why",
    "will", "with", "would", "yes", "you", "your", "yours",
];

/// Splits a message into question units (seed 002 A.3): one unit per piece between question
/// marks, the mark kept with the piece before it; text after the last question mark is a unit
/// too, and a message without a question mark is one unit. Units are trimmed, and pieces
/// without a letter or digit are dropped.
///
/// ```
/// use specgap_task::matching::question_units;
/// assert_eq!(
///     question_units("Which unit? And the range? Thanks."),
///     ["Which unit?", "And the range?", "Thanks."]
/// );
/// assert_eq!(question_units("Tell me the unit."), ["Tell me the unit."]);
/// assert!(question_units("  ").is_empty());
/// ```
pub fn question_units(message: &str) -> Vec<&str> {
    let mut units = Vec::new();
    let mut start = 0;
    for (at, c) in message.char_indices() {
        if is_question_mark(c) {
            let end = at + c.len_utf8();
            units.extend(keep_if_wordy(message[start..end].trim()));
            start = end;
        }
    }
    units.extend(keep_if_wordy(message[start..].trim()));
    units
}

/// Splits a question unit into clauses for matching (never for counting: a unit stays one
/// unit of seed 002's Q): at `,`, `;`, `:` and line breaks. Clauses are trimmed; clauses
/// without a letter or digit are dropped. A unit without such a mark is one clause.
///
/// ```
/// use specgap_task::matching::clauses;
/// assert_eq!(
///     clauses("Whole cases only, are lanes closed; and can stores ship?"),
///     ["Whole cases only", "are lanes closed", "and can stores ship?"]
/// );
/// ```
pub fn clauses(unit: &str) -> Vec<&str> {
    unit.split([',', ';', ':', '\n', '，', '；', '：']).filter_map(|clause| keep_if_wordy(clause.trim())).collect()
}

/// The sentences of a unit (module guide, step 6), in order: split after `.` or `!` followed
/// by white space and after a question mark; a line break ends a sentence when the line ends
/// in `.`, `!`, `?` or `:`, when a blank line follows, or when the next line is a list item
/// (`-`, `*`, `+`, `1.`, `1)`), and is a space otherwise. Trimmed, list markers removed,
/// sentences without a letter or digit dropped.
///
/// ```
/// use specgap_task::matching::sentences;
/// assert_eq!(
///     sentences("I read stock.csv. Is v2.1 in\ncases?\n- And the lanes?"),
///     ["I read stock.csv.", "Is v2.1 in cases?", "And the lanes?"]
/// );
/// ```
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in line_blocks(text) {
        let mut start = 0;
        let mut chars = block.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let end = at + c.len_utf8();
            let next_is_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
            if is_question_mark(c) || (matches!(c, '.' | '!' | '。' | '！') && next_is_space) {
                out.extend(keep_if_wordy(block[start..end].trim()).map(str::to_string));
                start = end;
            }
        }
        out.extend(keep_if_wordy(block[start..].trim()).map(str::to_string));
    }
    out
}

/// The lines of `text` joined into blocks that sentences cannot cross ([`sentences`]).
fn line_blocks(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut blocks = Vec::new();
    let mut current = String::new();
    for (i, line) in lines.iter().enumerate() {
        let (item, marked) = match strip_marker(line) {
            Some(item) => (item, true),
            None => (*line, false),
        };
        if marked && !current.is_empty() {
            blocks.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(item);
        let next_marked = lines.get(i + 1).is_some_and(|n| strip_marker(n).is_some());
        let next_blank = lines.get(i + 1).is_none_or(|n| n.is_empty());
        let ends = item.ends_with(['.', '!', '?', ':', '。', '！', '？', '：']);
        if ends || next_blank || next_marked {
            blocks.push(std::mem::take(&mut current));
        }
    }
    blocks.retain(|b| !b.trim().is_empty());
    blocks
}

/// The sentences of `unit` that ask (module guide, step 6): for a unit that ends with a question
/// mark, its request sentences and its last sentence; for any other unit, its request
/// sentences. Returns them with whether the question sentence leans on its context
/// ([`BACK_REFERENCES`], or fewer than [`MIN_SHARED_WORDS`] content words).
///
/// ```
/// use specgap_task::matching::asking_sentences;
/// let (asking, leans) = asking_sentences("I will use business days. Please confirm the unit. Which lanes are closed?");
/// assert_eq!(asking, ["Please confirm the unit.", "Which lanes are closed?"]);
/// assert!(!leans);
/// assert_eq!(asking_sentences("I will use business days. Is that right?"), (vec!["Is that right?".to_string()], true));
/// assert_eq!(asking_sentences("Thanks, that helps."), (Vec::<String>::new(), false));
/// ```
pub fn asking_sentences(unit: &str) -> (Vec<String>, bool) {
    let all = sentences(unit);
    let asks = unit.trim_end().ends_with(is_question_mark);
    let last = all.len().saturating_sub(1);
    let mut asking = Vec::new();
    let mut leans = false;
    for (i, sentence) in all.iter().enumerate() {
        if asks && i == last {
            leans = all.len() > 1 && leans_on_context(sentence);
            asking.push(sentence.clone());
        } else if is_request(sentence) {
            asking.push(sentence.clone());
        }
    }
    (asking, leans)
}

fn is_question_mark(c: char) -> bool {
    c == '?' || c == '？'
}

/// Whether a sentence opens with a [`REQUEST_OPENERS`] phrase.
fn is_request(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let mut rest = lower.trim_start();
    for lead in ["and ", "also ", "finally ", "lastly ", "and also "] {
        if let Some(stripped) = rest.strip_prefix(lead) {
            rest = stripped.trim_start_matches([',', ' ']);
        }
    }
    REQUEST_OPENERS
        .iter()
        .any(|opener| rest.strip_prefix(opener).is_some_and(|after| after.is_empty() || after.starts_with(|c: char| !c.is_alphanumeric())))
}

/// Whether a question sentence needs the statement before it (module guide, step 6).
fn leans_on_context(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let refers_back = lower.split(|c: char| !c.is_alphanumeric()).any(|t| BACK_REFERENCES.contains(&t));
    refers_back || content_words(sentence).len() < MIN_SHARED_WORDS
}

/// The item text of a list line (`- x`, `* x`, `+ x`, `1. x`, `1) x`), if it is one.
fn strip_marker(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return rest.starts_with([' ', '\t']).then(|| rest.trim_start());
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = line[digits..].strip_prefix(['.', ')'])?;
    (digits > 0 && rest.starts_with([' ', '\t'])).then(|| rest.trim_start())
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
    } else if w.len() >= 4 && w.ends_with('s') && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
        w.pop();
    }
    for suffix in ["ing", "ed", "ly"] {
        if w.len() >= suffix.len() + 3 && w.ends_with(suffix) && !(suffix == "ed" && w.ends_with("eed")) {
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
    shared >= MIN_SHARED_WORDS.min(cue.len()) && shared as f64 >= MIN_SHARED_FRACTION * smaller as f64
}

/// The shared rule over the clarification targets of one task: each target's cue words and
/// every word's target frequency, computed once (module guide, steps 3 to 5).
#[derive(Debug, Clone)]
pub struct TargetMatcher<'a> {
    targets: &'a [ClarificationTarget],
    /// Per target, the content words of each cue (description first, then triggers).
    cues: Vec<Vec<BTreeSet<String>>>,
    /// Per content word of any cue: how many targets have it in some cue.
    frequency: BTreeMap<String, usize>,
}

impl<'a> TargetMatcher<'a> {
    /// The matcher of a task's targets, in file order.
    pub fn new(targets: &'a [ClarificationTarget]) -> Self {
        let cues: Vec<Vec<BTreeSet<String>>> = targets
            .iter()
            .map(|target| {
                std::iter::once(target.description.as_str()).chain(target.triggers.iter().map(String::as_str)).map(content_words).collect()
            })
            .collect();
        let mut frequency: BTreeMap<String, usize> = BTreeMap::new();
        for target_cues in &cues {
            let vocabulary: BTreeSet<&String> = target_cues.iter().flatten().collect();
            for word in vocabulary {
                *frequency.entry(word.clone()).or_default() += 1;
            }
        }
        TargetMatcher { targets, cues, frequency }
    }

    /// The targets, in file order.
    pub fn targets(&self) -> &'a [ClarificationTarget] {
        self.targets
    }

    /// How many of the targets have `word` (a stemmed content word) in a cue; 0 for none.
    pub fn target_frequency(&self, word: &str) -> usize {
        self.frequency.get(word).copied().unwrap_or(0)
    }

    /// The evidence a set of shared words gives for one target: the sum over the words of
    /// 1 / (targets whose cues hold the word). A word only this target has counts 1; a topic
    /// word all eight targets of a case share counts 1/8.
    pub fn evidence<'w>(&self, shared: impl IntoIterator<Item = &'w String>) -> f64 {
        shared.into_iter().map(|word| 1.0 / self.target_frequency(word).max(1) as f64).sum()
    }

    /// Indices of the targets one question unit links to, ascending (module guide, steps 5
    /// and 6): for a unit that ends with a question mark, what its [`asking_sentences`] link
    /// to (the whole unit when they link to nothing and the question leans on its context);
    /// any other unit (a message put to the customer without a question mark) links as a
    /// whole.
    pub fn unit_links(&self, unit: &str) -> Vec<usize> {
        self.links_of_unit(unit, false)
    }

    /// [`TargetMatcher::unit_links`] for text after the last question mark of a message that
    /// has one: it links only through its request sentences (module guide, step 6).
    pub fn unit_links_after_questions(&self, unit: &str) -> Vec<usize> {
        self.links_of_unit(unit, true)
    }

    fn links_of_unit(&self, unit: &str, after_questions: bool) -> Vec<usize> {
        let asks = unit.trim_end().ends_with(is_question_mark);
        if !asks && !after_questions {
            return self.text_links(unit);
        }
        let (asking, leans) = asking_sentences(unit);
        let mut linked: Vec<usize> = asking.iter().flat_map(|s| self.text_links(s)).collect();
        if linked.is_empty() && leans {
            linked = self.text_links(unit);
        }
        linked.sort_unstable();
        linked.dedup();
        linked
    }

    /// What a text links to (step 5): the union of what the whole text and each of its
    /// [`clauses`] link to, ascending.
    fn text_links(&self, text: &str) -> Vec<usize> {
        let mut linked = self.piece_links(&content_words(text));
        let parts = clauses(text);
        if parts.len() > 1 {
            for part in parts {
                linked.extend(self.piece_links(&content_words(part)));
            }
        }
        linked.sort_unstable();
        linked.dedup();
        linked
    }

    /// Whether one question unit links to target `index`.
    pub fn links(&self, unit: &str, index: usize) -> bool {
        self.unit_links(unit).contains(&index)
    }

    /// The targets a whole message links to: the union over its [`question_units`] (text after
    /// its last question mark through [`TargetMatcher::unit_links_after_questions`]), in file
    /// order, each at most once.
    pub fn linked_targets(&self, message: &str) -> Vec<&'a ClarificationTarget> {
        let mut linked = vec![false; self.targets.len()];
        let marked = message.contains(is_question_mark);
        for unit in question_units(message) {
            let after_questions = marked && !unit.contains(is_question_mark);
            for index in self.links_of_unit(unit, after_questions) {
                linked[index] = true;
            }
        }
        self.targets.iter().zip(linked).filter_map(|(target, linked)| linked.then_some(target)).collect()
    }

    /// The targets one piece (a unit or a clause) links to: among the targets it reaches
    /// (step 4), those with the most evidence.
    fn piece_links(&self, words: &BTreeSet<String>) -> Vec<usize> {
        let generic = words.iter().any(|w| GENERIC_WORDS.contains(&w.as_str()));
        let reached: Vec<(usize, f64)> =
            (0..self.targets.len()).filter_map(|index| self.reach(words, index, generic).map(|e| (index, e))).collect();
        let best = reached.iter().map(|(_, e)| *e).fold(f64::NEG_INFINITY, f64::max);
        reached.into_iter().filter(|(_, e)| *e >= best - EVIDENCE_TIE).map(|(index, _)| index).collect()
    }

    /// The most evidence any cue of target `index` gives a piece that reaches it through that
    /// cue, or `None` when no cue does (step 4).
    fn reach(&self, words: &BTreeSet<String>, index: usize, generic: bool) -> Option<f64> {
        self.cues[index]
            .iter()
            .filter(|cue| words_link(words, cue))
            .filter_map(|cue| {
                let shared: Vec<&String> = words.intersection(cue).collect();
                let distinctive = shared.iter().any(|w| self.target_frequency(w) == 1);
                let evidence = self.evidence(shared.iter().copied());
                (evidence >= MIN_EVIDENCE && (distinctive || !generic)).then_some(evidence)
            })
            .reduce(f64::max)
    }
}

/// The targets a whole message links to ([`TargetMatcher::linked_targets`] over `targets`).
pub fn linked_targets<'a>(message: &str, targets: &'a [ClarificationTarget]) -> Vec<&'a ClarificationTarget> {
    TargetMatcher::new(targets).linked_targets(message)
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
    fn units_split_at_each_question_mark_and_keep_trailing_text() {
        assert_eq!(question_units("Is it MAE? Or relative error? I will wait."), ["Is it MAE?", "Or relative error?", "I will wait."]);
        assert_eq!(question_units("单位是什么？还有范围?"), ["单位是什么？", "还有范围?"]);
        assert_eq!(question_units("What range?? ?"), ["What range?"]);
        assert_eq!(question_units("What range?\n\n-- "), ["What range?"]);
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
        assert_eq!(words("What is the error metric: MAE or a relative error?"), ["error", "mae", "metric", "relativ"]);
        assert_eq!(words("Is it ok?"), ["ok"]);
        assert!(words("What should I do?").is_empty());
        assert_eq!(words("same-city stock"), ["city", "sam", "stock"]);
    }

    #[test]
    fn link_threshold_exact_cases() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        // Two shared of a four-word cue with a two-word unit: 2 >= 2 and 2 >= 0.5 * 2.
        assert!(words_link(&set(&["error", "mae"]), &set(&["error", "mae", "metric", "relativ"])));
        // One shared word never links a multi-word cue.
        assert!(!words_link(&set(&["error", "unit"]), &set(&["error", "mae", "metric"])));
        // Two shared but only 2 of min(6, 5) = 5 words: 2 < 2.5.
        assert!(!words_link(&set(&["a1", "a2", "a3", "a4", "shared1", "shared2"]), &set(&["b1", "b2", "b3", "shared1", "shared2"]),));
        // Three shared of min(6, 5) = 5: 3 >= 2.5.
        assert!(words_link(
            &set(&["a1", "a2", "a3", "shared1", "shared2", "shared3"]),
            &set(&["b1", "b2", "shared1", "shared2", "shared3"]),
        ));
        // A one-word cue links on its one word.
        assert!(words_link(&set(&["currency", "report"]), &set(&["currency"])));
        // Empty sets never link.
        assert!(!words_link(&set(&[]), &set(&["currency"])));
    }

    fn ids(message: &str, targets: &[ClarificationTarget]) -> Vec<String> {
        linked_targets(message, targets).iter().map(|t| t.id.clone()).collect()
    }

    fn two_targets() -> Vec<ClarificationTarget> {
        vec![
            target(
                "error-metric",
                "Forecast error is measured as mean absolute error in units, not relative error.",
                &["Is the error MAE or a relative error?", "How is forecast error measured?"],
            ),
            target(
                "same-city-first",
                "Stock in the same city must be used before any supplier purchase.",
                &["Do same-city transfers come before supplier purchases?"],
            ),
        ]
    }

    #[test]
    fn questions_link_to_targets_through_triggers_and_description() {
        let targets = two_targets();
        assert_eq!(ids("Should I report the error as MAE?", &targets), ["error-metric"]);
        assert_eq!(ids("How do you measure forecast errors?", &targets), ["error-metric"]);
        assert_eq!(ids("Must same city stock go first before buying from a supplier?", &targets), ["same-city-first"]);
        assert_eq!(
            ids("Is error MAE? And do same-city transfers precede supplier purchases?", &targets),
            ["error-metric", "same-city-first"]
        );
        assert!(ids("Anything special about the data?", &targets).is_empty());
        assert!(ids("Which Python library should I use?", &targets).is_empty());
        assert!(ids("What is the error?", &targets).is_empty());
    }

    #[test]
    fn evidence_weighs_each_shared_word_by_the_targets_that_have_it() {
        let targets = two_targets();
        let matcher = TargetMatcher::new(&targets);
        // "error" is in error-metric's cues only; "unit" too; "supplier" in same-city-first's.
        assert_eq!(matcher.target_frequency("error"), 1);
        assert_eq!(matcher.target_frequency("supplier"), 1);
        assert_eq!(matcher.target_frequency("nowhere"), 0);
        let three =
            vec![target("a", "shared topic apple", &[]), target("b", "shared topic banana", &[]), target("c", "shared cherry", &[])];
        let matcher = TargetMatcher::new(&three);
        assert_eq!(matcher.target_frequency("shar"), 3);
        assert_eq!(matcher.target_frequency("topic"), 2);
        let words = ["shar".to_string(), "topic".to_string(), "apple".to_string()];
        assert!((matcher.evidence(&words) - (1.0 / 3.0 + 0.5 + 1.0)).abs() < 1e-12);
        // Two topic words reach a with evidence 1/3 + 1/2 < 1: no link; with "apple", a only.
        assert!(matcher.unit_links("Is the shared topic relevant?").is_empty());
        assert_eq!(matcher.unit_links("Is the shared topic apple relevant?"), [0]);
    }

    #[test]
    fn a_piece_links_to_its_best_target_and_clauses_reach_several() {
        let targets = vec![
            target("weekend", "Suppliers do not deliver on weekends.", &["Do suppliers deliver on Saturday?"]),
            target("direct", "A supplier may deliver straight to a store.", &["Can suppliers deliver straight to stores?"]),
            target("cases", "Purchases are whole cases.", &["Must purchases be whole cases?"]),
        ];
        let matcher = TargetMatcher::new(&targets);
        // Reaches both delivery targets; "weekend" gives weekend the most evidence.
        assert_eq!(matcher.unit_links("Do suppliers deliver on weekends?"), [0]);
        // One clause per rule: each clause links to its own target.
        assert_eq!(matcher.unit_links("Do suppliers deliver straight to stores, and are purchases whole cases?"), [1, 2]);
        // A generic piece needs a distinctive shared word.
        assert!(matcher.unit_links("Any rules about suppliers delivering I should watch?").is_empty());
        assert_eq!(matcher.unit_links("Any special rules for weekend deliveries by suppliers?"), [0]);
    }

    #[test]
    fn only_the_sentences_that_ask_link() {
        let targets = two_targets();
        // A stated assumption before the question is context: the question is answered, the
        // assumption is not (rule version 3; version 2 linked error-metric here alone).
        assert_eq!(
            ids("I will report the forecast error as MAE. Do same-city transfers come before supplier purchases?", &targets),
            ["same-city-first"]
        );
        // A question that refers back reads the statement before it.
        assert_eq!(ids("I will report the forecast error as MAE. Is that right?", &targets), ["error-metric"]);
        // A statement after the questions does not ask; a request there does.
        assert_eq!(ids("Is the error MAE? I assume same-city stock goes before supplier purchases.", &targets), ["error-metric"]);
        assert_eq!(
            ids("Is the error MAE? Please confirm that same-city transfers come before supplier purchases.", &targets),
            ["error-metric", "same-city-first"]
        );
        // A request before the question asks too.
        assert_eq!(
            ids("Please confirm that same-city transfers come before supplier purchases. And is the error MAE?", &targets),
            ["error-metric", "same-city-first"]
        );
        // A message without a question mark was put to the customer as a question: it links whole.
        assert_eq!(ids("I will report the forecast error as MAE.", &targets), ["error-metric"]);
    }

    #[test]
    fn sentences_cross_plain_line_breaks_only() {
        assert_eq!(
            sentences("Does the limit\ninclude the box?\n\nThanks:\n1) One?\n2) Two"),
            ["Does the limit include the box?", "Thanks:", "One?", "Two"]
        );
        assert_eq!(sentences("e.g. this one? v2.1 ok!"), ["e.g.", "this one?", "v2.1 ok!"]);
    }

    #[test]
    fn clauses_split_at_commas_semicolons_colons_and_lines() {
        assert_eq!(clauses("One thing: a, b; c\nd"), ["One thing", "a", "b", "c", "d"]);
        assert_eq!(clauses("No marks here?"), ["No marks here?"]);
        assert!(clauses(" , ;").is_empty());
    }
}
