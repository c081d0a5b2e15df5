//! The leak scan of `specgap check` (seed 000 Appendix E.2 and §4.2 criterion 4): no
//! agent-visible text may state an unstated requirement outright.
//!
//! Agent-visible text is every workspace file and instruction.md. A *leak* is
//! - a run of [`LEAK_RUN`] or more consecutive words of an unstated requirement's
//!   description (case and punctuation ignored),
//! - an unstated requirement's id, when the id has a hyphen (a one-word id like `cap` is an
//!   ordinary word),
//! - an evaluation word: `evaluator`, `rubric` (and plurals) or `hidden test(s)`.

use std::collections::HashMap;
use std::path::Path;

use specgap_protocol::package::Requirement;

/// Minimum length, in words, of a description run that counts as a leak.
pub const LEAK_RUN: usize = 8;

/// Bytes of a file read to decide that it is binary (a NUL byte) and skip it.
const BINARY_SNIFF: usize = 8192;

/// One leak found by [`scan_text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// Package-relative file (`instruction.md`, `workspace/...`).
    pub file: String,
    /// What leaked.
    pub what: LeakKind,
}

/// What a [`Leak`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeakKind {
    /// Consecutive words of a requirement's description (normalised, space-joined).
    DescriptionRun {
        /// The requirement.
        requirement: String,
        /// The words, lowercase, as found.
        words: String,
    },
    /// A requirement id with a hyphen.
    RequirementId {
        /// The id.
        requirement: String,
    },
    /// `evaluator`, `rubric` or `hidden test`.
    EvaluationWord {
        /// The word(s) as normalised.
        word: String,
    },
}

impl std::fmt::Display for Leak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.what {
            LeakKind::DescriptionRun { requirement, words } => {
                let count = words.split(' ').count();
                write!(f, "{}: {count} words of unstated requirement `{requirement}`: \"{words}\"", self.file)
            }
            LeakKind::RequirementId { requirement } => {
                write!(f, "{}: names unstated requirement id `{requirement}`", self.file)
            }
            LeakKind::EvaluationWord { word } => {
                write!(f, "{}: uses the word \"{word}\"", self.file)
            }
        }
    }
}

/// Lowercase words: maximal runs of alphanumeric characters.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whitespace-separated tokens with at least one letter or digit (so Markdown bullets and
/// rules do not count): the word count of the instruction-length check.
pub fn instruction_words(text: &str) -> usize {
    text.split_whitespace().filter(|t| t.chars().any(char::is_alphanumeric)).count()
}

/// Scans one text for leaks of the `unstated` requirements; `file` labels the findings.
/// At most one description run is reported per requirement (the first, extended as far as
/// it goes).
pub fn scan_text(file: &str, text: &str, unstated: &[&Requirement]) -> Vec<Leak> {
    let mut leaks = Vec::new();
    let text_words = words(text);
    for requirement in unstated {
        if let Some(run) = longest_first_run(&text_words, &words(&requirement.description)) {
            leaks.push(Leak { file: file.to_owned(), what: LeakKind::DescriptionRun { requirement: requirement.id.clone(), words: run } });
        }
    }
    let lower = text.to_lowercase();
    for requirement in unstated {
        if requirement.id.contains('-') && contains_id(&lower, &requirement.id) {
            leaks.push(Leak { file: file.to_owned(), what: LeakKind::RequirementId { requirement: requirement.id.clone() } });
        }
    }
    if let Some(word) = evaluation_word(&text_words) {
        leaks.push(Leak { file: file.to_owned(), what: LeakKind::EvaluationWord { word } });
    }
    leaks
}

/// The first place where [`LEAK_RUN`] consecutive words of `text` appear consecutively in
/// `description`, extended while both continue to agree; `None` when there is none.
fn longest_first_run(text: &[String], description: &[String]) -> Option<String> {
    if description.len() < LEAK_RUN || text.len() < LEAK_RUN {
        return None;
    }
    let mut starts: HashMap<&[String], Vec<usize>> = HashMap::new();
    for (k, window) in description.windows(LEAK_RUN).enumerate() {
        starts.entry(window).or_default().push(k);
    }
    for (i, window) in text.windows(LEAK_RUN).enumerate() {
        let Some(ks) = starts.get(window) else {
            continue;
        };
        let best = ks
            .iter()
            .map(|&k| LEAK_RUN + text[i + LEAK_RUN..].iter().zip(&description[k + LEAK_RUN..]).take_while(|(a, b)| a == b).count())
            .max()
            .unwrap_or(LEAK_RUN);
        return Some(text[i..i + best].join(" "));
    }
    None
}

/// Whether `id` occurs in `lower` as a whole token: not glued to letters, digits, `-` or `_`.
fn contains_id(lower: &str, id: &str) -> bool {
    let glued = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    lower.match_indices(id).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + id.len()..].chars().next();
        !before.is_some_and(glued) && !after.is_some_and(glued)
    })
}

fn evaluation_word(text_words: &[String]) -> Option<String> {
    for (i, word) in text_words.iter().enumerate() {
        if matches!(word.as_str(), "evaluator" | "evaluators" | "rubric" | "rubrics") {
            return Some(word.clone());
        }
        let next = text_words.get(i + 1).filter(|n| *n == "test" || *n == "tests");
        if let (true, Some(next)) = (word == "hidden", next) {
            return Some(format!("hidden {next}"));
        }
    }
    None
}

/// Reads a file for the scan: `None` for binary files (a NUL byte near the start); other
/// bytes are decoded lossily.
pub(crate) fn read_scannable(path: &Path) -> Result<Option<String>, std::io::Error> {
    let bytes = fs_err::read(path)?;
    if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(id: &str, description: &str) -> Requirement {
        Requirement { id: id.into(), priority: 1, stated: false, description: description.into(), discovery: String::new() }
    }

    #[test]
    fn eight_word_run_is_found_across_case_and_punctuation() {
        let r = requirement("fee-cap", "The late fee of one invoice is at most ten percent of its principal.");
        let text = "Note: the LATE fee, of one invoice -- is at most ten percent; more text";
        let leaks = scan_text("workspace/README.md", text, &[&r]);
        assert_eq!(leaks.len(), 1);
        assert_eq!(
            leaks[0].to_string(),
            "workspace/README.md: 11 words of unstated requirement `fee-cap`: \"the late fee of one invoice is at most ten percent\""
        );
    }

    #[test]
    fn seven_words_are_not_a_leak() {
        let r = requirement("fee-cap", "The late fee of one invoice is at most ten percent of its principal.");
        assert!(scan_text("x", "the late fee of one invoice is", &[&r]).is_empty());
        assert_eq!(scan_text("x", "the late fee of one invoice is at", &[&r]).len(), 1);
    }

    #[test]
    fn hyphenated_id_is_a_token_match() {
        let r = requirement("fee-cap", "short");
        assert_eq!(scan_text("f", "see FEE-CAP here", &[&r])[0].to_string(), "f: names unstated requirement id `fee-cap`");
        assert!(scan_text("f", "the fee-capping rule and fee_cap_ratio", &[&r]).is_empty());
        let one_word = requirement("cap", "short");
        assert!(scan_text("f", "a cap on fees", &[&one_word]).is_empty());
    }

    #[test]
    fn evaluation_words() {
        assert_eq!(scan_text("f", "The Evaluator checks", &[])[0].to_string(), "f: uses the word \"evaluator\"");
        assert_eq!(scan_text("f", "see the hidden-tests folder", &[])[0].to_string(), "f: uses the word \"hidden tests\"");
        assert_eq!(scan_text("f", "grading rubrics", &[])[0].to_string(), "f: uses the word \"rubrics\"");
        assert!(scan_text("f", "we evaluate the hidden cost of tests", &[]).is_empty());
    }

    #[test]
    fn instruction_word_count_ignores_markup() {
        assert_eq!(instruction_words("# Title\n\n- one two\n---\n* `three`"), 4);
    }
}
