//! The text channel of delivery conditions (seed 002 A.9.3, "Text exchange"): questions an
//! agent writes in its reply text rather than through `ask_user`, and the continuation
//! messages sent when an agent stops before its deliverable exists.
//!
//! The engine applies these rules to any [`crate::Agent`], from what the agent's turn holds
//! (its text and whether it called a tool) and from the workspace (whether a file matching
//! `[delivery].artifact` exists); see `docs/decisions.md` "Delivery text channel":
//!
//! * **Questions** (delivery conditions that offer `ask_user`): the lines under a
//!   `## Questions for the client` heading ([`heading_questions`]), in any turn; or, in a
//!   reply without a tool call, before or after the deliverable exists, what the user's
//!   question detector hears — by default every sentence that ends in a question mark except
//!   offers and questions the agent answers itself ([`prose_questions`]). Each question is
//!   answered by the user on its own
//!   and recorded like an `ask_user` question; the answers come back as one message
//!   ([`answer_message`]). One such message is one clarification round, like one `ask_user`
//!   call.
//! * **Continuations** (every delivery condition): a reply without a tool call and without a
//!   question, while no deliverable exists, gets [`CONTINUATION`] instead of the no-tool-call
//!   reminder, at most [`CONTINUATION_LIMIT`] times per episode.

use std::path::Path;

/// The heading under which an agent lists its questions for the client (seed 002 A.9.3's
/// suggested heading). Matched case-insensitively, at any heading level, with or without a
/// trailing colon.
pub const QUESTIONS_HEADING: &str = "Questions for the client";

/// Continuation messages an episode may receive (seed 002 A.9.3 allows three pushes).
pub const CONTINUATION_LIMIT: u32 = 3;

/// The harness's push when an agent stops without its deliverable (our own words).
pub const CONTINUATION: &str = "Thank you. Please go ahead now: do the work itself, write the deliverable files into \
    the workspace, and hand them over with submit when they are ready.";

/// The questions listed under a [`QUESTIONS_HEADING`] heading of `text`, in order; `None` when
/// the text has no such heading. The block runs to the next heading or the end of the text.
/// When some lines of the block start with a list marker (`-`, `*`, `+`, `1.`, `1)`), each
/// marked line starts a question and unmarked lines continue it; otherwise every non-empty
/// line is one question. Markers are removed; empty items are dropped.
///
/// ```
/// use specgap_engine::text_channel::heading_questions;
/// let text = "I read the data.\n\n## Questions for the client\n1. Which unit?\n2. May boxes\n   be mixed?\n\n## Plan\nLater.";
/// assert_eq!(heading_questions(text).unwrap(), ["Which unit?", "May boxes be mixed?"]);
/// assert_eq!(heading_questions("No heading here?"), None);
/// ```
pub fn heading_questions(text: &str) -> Option<Vec<String>> {
    let mut lines = text.lines();
    lines.by_ref().find(|line| is_questions_heading(line))?;
    let block: Vec<&str> = lines.take_while(|line| !is_heading(line)).map(str::trim).collect();
    let marked = block.iter().any(|line| strip_list_marker(line).is_some());
    let mut questions: Vec<String> = Vec::new();
    for line in block.into_iter().filter(|l| !l.is_empty()) {
        match (marked, strip_list_marker(line)) {
            (_, Some(item)) => questions.push(item.to_string()),
            (true, None) => match questions.last_mut() {
                Some(last) => {
                    last.push(' ');
                    last.push_str(line);
                }
                None => questions.push(line.to_string()),
            },
            (false, None) => questions.push(line.to_string()),
        }
    }
    questions.retain(|q| q.chars().any(char::is_alphanumeric));
    Some(questions)
}

/// The sentences of `text` that end in a question mark (`?` or `？`), each without the
/// statements before it in its paragraph, list markers removed. A sentence ends at `.` or
/// `!` followed by white space, at a question mark, or at a line break.
///
/// ```
/// use specgap_engine::text_channel::question_sentences;
/// let text = "I looked at orders.csv. Is the limit 9.5 kg? Thanks!\n- And may items wait?";
/// assert_eq!(question_sentences(text), ["Is the limit 9.5 kg?", "And may items wait?"]);
/// ```
pub fn question_sentences(text: &str) -> Vec<String> {
    all_sentences(text).into_iter().filter(|s| s.ends_with(['?', '？'])).collect()
}

/// Openings of a question that offers more work or checks in rather than asking the client
/// for information (seed 002 A.9.3's detector: "offers to continue are not asking"), matched
/// lowercase at the start of the sentence after an optional "and", "or", "also" or "so".
pub const OFFER_OPENERS: &[&str] = &[
    "would you like me to",
    "would you like us to",
    "do you want me to",
    "do you want us to",
    "want me to",
    "shall i also",
    "should i also",
    "shall i go ahead",
    "should i go ahead",
    "shall i proceed",
    "should i proceed",
    "shall i continue",
    "should i continue",
    "shall i start",
    "should i start",
    "can i help",
    "may i help",
    "how can i help",
    "is there anything else",
    "anything else",
    "any other questions",
    "any questions",
    "any feedback",
    "let me know if",
    "does this look",
    "does that look",
    "does this work for you",
    "does that work for you",
    "is this what you",
    "is that what you",
    "would that help",
    "would this help",
];

/// Openings of the sentence after a question that show the agent answered it itself
/// (seed 002 A.9.3's detector: a rhetorical question inside an explanation is not asking),
/// matched lowercase at the start of the sentence.
pub const ANSWER_OPENERS: &[&str] = &[
    "yes",
    "no",
    "yep",
    "nope",
    "answer",
    "the answer",
    "probably",
    "likely",
    "presumably",
    "apparently",
    "clearly",
    "obviously",
    "of course",
    "surely",
    "i assume",
    "i'll assume",
    "i will assume",
    "i'm assuming",
    "i am assuming",
    "assuming",
    "i think",
    "i guess",
    "i believe",
    "i decided",
    "i chose",
    "i went with",
    "i used",
    "i'll use",
    "i will use",
    "i'm using",
    "i am using",
    "i'll go with",
    "i will go with",
    "we use",
    "we used",
    "we weight",
    "we treat",
    "we assume",
    "we count",
    "we take",
    "we go with",
    "because",
    "here is",
    "here's",
    "i changed",
    "i rewrote",
    "i added",
    "i fixed",
    "i wrote",
    "i built",
    "i implemented",
    "i computed",
    "i ran",
    "i set",
    "i made",
    "i kept",
];

/// The questions a reply's prose asks the client (the deterministic detector's rule,
/// [`crate::detector::SentenceRule`]): its [`question_sentences`] except offers
/// ([`OFFER_OPENERS`]) and questions the agent answers itself — those followed, in the same
/// paragraph, by a statement that opens with an [`ANSWER_OPENERS`] phrase.
///
/// ```
/// use specgap_engine::text_channel::prose_questions;
/// let text = "How do we balance cost and waiting? We weight them 1:9. Which unit is on_hand in?\n\nWould you like me to plot the routes?";
/// assert_eq!(prose_questions(text), ["Which unit is on_hand in?"]);
/// ```
pub fn prose_questions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for paragraph in text.split("\n\n") {
        let sentences = all_sentences(paragraph);
        for (i, sentence) in sentences.iter().enumerate() {
            if !sentence.ends_with(['?', '？']) || opens_with(sentence, OFFER_OPENERS) {
                continue;
            }
            let answered = sentences.get(i + 1).is_some_and(|next| !next.ends_with(['?', '？']) && opens_with(next, ANSWER_OPENERS));
            if !answered {
                out.push(sentence.clone());
            }
        }
    }
    out
}

/// Every sentence of `text` in order (the boundaries of [`question_sentences`]), list
/// markers removed, each trimmed.
fn all_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = strip_list_marker(line.trim()).unwrap_or(line.trim());
        let mut start = 0;
        let mut chars = line.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let end = at + c.len_utf8();
            let next_is_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
            if matches!(c, '?' | '？') || (matches!(c, '.' | '!') && next_is_space) {
                let sentence = line[start..end].trim();
                if sentence.chars().any(char::is_alphanumeric) {
                    out.push(sentence.to_string());
                }
                start = end;
            }
        }
        let rest = line[start..].trim();
        if rest.chars().any(char::is_alphanumeric) {
            out.push(rest.to_string());
        }
    }
    out
}

/// Whether `sentence` opens with one of `phrases` (lowercase, whole words), after an optional
/// "and", "or", "also" or "so".
fn opens_with(sentence: &str, phrases: &[&str]) -> bool {
    let lower = sentence.to_lowercase().replace('’', "'");
    let mut rest = lower.trim_start();
    for lead in ["and ", "or ", "also ", "so "] {
        if let Some(stripped) = rest.strip_prefix(lead) {
            rest = stripped.trim_start_matches([',', ' ']);
        }
    }
    phrases.iter().any(|phrase| {
        rest.strip_prefix(phrase).is_some_and(|after| after.is_empty() || after.starts_with(|c: char| !c.is_alphanumeric() && c != '\''))
    })
}

/// Whether `text` contains a question mark (`?` or `？`).
pub fn has_question_mark(text: &str) -> bool {
    text.contains(['?', '？'])
}

/// The one message that carries the user's answers: per question a `- ` line with the
/// question, then the answer indented by two spaces (seed 002 A.9.3's reply shape).
///
/// ```
/// use specgap_engine::text_channel::answer_message;
/// let pairs = vec![("Which unit?".to_string(), "Kilograms.".to_string())];
/// assert_eq!(answer_message(&pairs), "- Which unit?\n  Kilograms.");
/// ```
pub fn answer_message(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(question, answer)| {
            let answer: Vec<String> = answer.trim().lines().map(|l| format!("  {l}").trim_end().to_string()).collect();
            format!("- {}\n{}", question.trim(), answer.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answers of a message [`answer_message`] made for `questions`, in order: each answer's
/// lines without their two-space indent (so an answer comes back as [`answer_message`] wrote
/// it: trimmed, each line's trailing blanks cut). `None` when `message` is not that shape for
/// these questions (another reply, such as the text past the round limit, or an error); a
/// route that needs one answer per question (opencode's native question tool, seed 002
/// A.9.3) then gives every question the whole message.
///
/// The shape cannot be misread: every answer line is indented or blank, and every question
/// line starts with `- `.
///
/// ```
/// use specgap_engine::text_channel::{answer_message, split_answer_message};
/// let pairs = vec![("Which unit?".to_string(), "Kilograms.\nNever pounds.".to_string()), ("Box?".to_string(), "Yes.".to_string())];
/// let questions: Vec<String> = pairs.iter().map(|(q, _)| q.clone()).collect();
/// let answers = split_answer_message(&questions, &answer_message(&pairs));
/// assert_eq!(answers, Some(vec!["Kilograms.\nNever pounds.".to_string(), "Yes.".to_string()]));
/// ```
pub fn split_answer_message(questions: &[String], message: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = message.split('\n').collect();
    let mut at = 0;
    let mut answers = Vec::with_capacity(questions.len());
    for question in questions {
        for expected in format!("- {}", question.trim()).split('\n') {
            if lines.get(at) != Some(&expected) {
                return None;
            }
            at += 1;
        }
        let mut answer = Vec::new();
        while let Some(line) = lines.get(at).filter(|l| l.is_empty() || l.starts_with("  ")) {
            answer.push(line.strip_prefix("  ").unwrap_or(line));
            at += 1;
        }
        answers.push(answer.join("\n").trim().to_string());
    }
    (at == lines.len()).then_some(answers)
}

/// Whether a file under `workspace` (its `.git` left out) matches the `[delivery].artifact`
/// glob `pattern`, matched against the path relative to the workspace with `/` separators
/// (`*` does not cross a `/`). A pattern that is not a glob (the loader rejects those)
/// matches nothing.
pub fn artifact_exists(workspace: &Path, pattern: &str) -> bool {
    let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).build() else {
        return false;
    };
    let matcher = glob.compile_matcher();
    walkdir::WalkDir::new(workspace)
        .min_depth(1)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.depth() != 1 || e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .any(|e| e.path().strip_prefix(workspace).is_ok_and(|rel| matcher.is_match(rel)))
}

fn is_heading(line: &str) -> bool {
    let trimmed = line.trim_start();
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&level) && trimmed[level..].starts_with([' ', '\t'])
}

fn is_questions_heading(line: &str) -> bool {
    if !is_heading(line) {
        return false;
    }
    let title = line.trim().trim_start_matches('#').trim().trim_end_matches(':').trim();
    title.eq_ignore_ascii_case(QUESTIONS_HEADING)
}

/// The item text of a list line (`- x`, `* x`, `+ x`, `1. x`, `1) x`), if it is one.
fn strip_list_marker(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| rest.trim());
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = line[digits..].strip_prefix(['.', ')'])?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_variants_and_plain_lines() {
        let text = "### questions for the client:\nWhich unit?\nWhat range?\n";
        assert_eq!(heading_questions(text).unwrap(), ["Which unit?", "What range?"]);
        assert_eq!(heading_questions("## Questions for the client\n\n## Next\n").unwrap(), Vec::<String>::new());
        assert_eq!(heading_questions("##Questions for the client\nx?"), None);
        assert_eq!(heading_questions("Questions for the client\nx?"), None);
        let text = "## Questions for the client\n- First?\n  more of it\n* Second?\n-\n";
        assert_eq!(heading_questions(text).unwrap(), ["First? more of it", "Second?"]);
    }

    #[test]
    fn sentences_keep_only_questions() {
        assert_eq!(question_sentences("No question here."), Vec::<String>::new());
        assert_eq!(question_sentences("Done. Shall I? Yes!"), ["Shall I?"]);
        assert_eq!(question_sentences("Which unit?? ?"), ["Which unit?"]);
        assert_eq!(question_sentences("1. Is it v2.1?\n2) 单位是什么？"), ["Is it v2.1?", "单位是什么？"]);
    }

    #[test]
    fn answers_are_indented_under_their_question() {
        let pairs = vec![("A?".to_string(), "one\n\ntwo".to_string()), ("B?".to_string(), "three".to_string())];
        assert_eq!(answer_message(&pairs), "- A?\n  one\n\n  two\n- B?\n  three");
    }

    #[test]
    fn an_answer_message_splits_back_into_one_answer_per_question() {
        let questions = |qs: &[&str]| qs.iter().map(|q| q.to_string()).collect::<Vec<_>>();
        let pairs = vec![
            ("A?".to_string(), "one\n\ntwo".to_string()),
            ("B?".to_string(), String::new()),
            ("  Two\nlines?".to_string(), "- not a question\n  kept indented".to_string()),
            ("D?".to_string(), "last".to_string()),
        ];
        let asked: Vec<String> = pairs.iter().map(|(q, _)| q.clone()).collect();
        assert_eq!(
            split_answer_message(&asked, &answer_message(&pairs)),
            Some(vec!["one\n\ntwo".to_string(), String::new(), "- not a question\n  kept indented".to_string(), "last".to_string()])
        );
        assert_eq!(split_answer_message(&questions(&["A?"]), "- A?"), Some(vec![String::new()]));
        // Not the shape for these questions: another text, another question, a missing block, a tail.
        assert_eq!(split_answer_message(&questions(&["A?"]), "Please carry on with the work."), None);
        assert_eq!(split_answer_message(&questions(&["A?"]), "- B?\n  yes"), None);
        assert_eq!(split_answer_message(&questions(&["A?", "B?"]), "- A?\n  yes"), None);
        assert_eq!(split_answer_message(&questions(&["A?"]), "- A?\n  yes\nunindented"), None);
    }

    #[test]
    fn artifact_globs_match_relative_paths_outside_git() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        assert!(!artifact_exists(ws, "plan.json"));
        fs_err::create_dir_all(ws.join(".git")).unwrap();
        fs_err::write(ws.join(".git/plan.json"), "x").unwrap();
        assert!(!artifact_exists(ws, "plan.json"));
        assert!(!artifact_exists(ws, "**/plan.json"));
        fs_err::create_dir_all(ws.join("out/deep")).unwrap();
        fs_err::write(ws.join("out/deep/a.csv"), "x").unwrap();
        assert!(!artifact_exists(ws, "out/*.csv"));
        assert!(artifact_exists(ws, "out/**/*.csv"));
        fs_err::write(ws.join("plan.json"), "{}").unwrap();
        assert!(artifact_exists(ws, "plan.json"));
        assert!(!artifact_exists(ws, "[broken"));
    }
}
