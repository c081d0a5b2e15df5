//! Registered answers that the agent can already read (the `visible-answers` row of
//! `specgap check`, a warning).
//!
//! Seed 002 keeps a clarification target only when it "cannot be resolved from the initial
//! request and visible data" (§3.2; App. A.2 criterion (i): facts visible in the workspace are
//! excluded). A target whose registered answer stands verbatim in `instruction.md` or a
//! workspace file breaks that rule: an agent can read the answer instead of asking, and Recall
//! then measures reading as much as asking.
//!
//! *Verbatim* is a run of [`ANSWER_RUN`] consecutive words of the answer (lowercase
//! alphanumeric words, punctuation and case ignored, as the leak scan reads descriptions), or
//! the whole answer when it is shorter; answers of fewer than [`MIN_ANSWER_WORDS`] words are
//! not scanned (a "Yes." stands in any text). The check warns rather than fails: the author may
//! have meant the visible copy (an ambiguous one the request does not settle, say), and the
//! paper's review is a person's.

use std::collections::{BTreeMap, HashSet};

use specgap_protocol::package::ClarificationTarget;

use crate::error::LoadError;
use crate::leak::{self, LEAK_RUN};
use crate::package::TaskPackage;

/// Consecutive answer words that count as the answer standing verbatim (the leak scan's run).
pub const ANSWER_RUN: usize = LEAK_RUN;

/// Answers with fewer words are not scanned.
pub const MIN_ANSWER_WORDS: usize = 4;

/// One registered answer found in agent-visible text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleAnswer {
    /// The target's id.
    pub target: String,
    /// Package-relative file (`instruction.md`, `workspace/...`).
    pub file: String,
    /// The words found, lowercase, space-joined.
    pub words: String,
}

impl std::fmt::Display for VisibleAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.words.split(' ').count();
        write!(f, "target `{}`: {count} words of its answer in {}: \"{}\"", self.target, self.file, self.words)
    }
}

/// Every target of `package` whose answer stands verbatim in instruction.md or a workspace
/// file (binary files skipped), at most one finding per target and file, in target order
/// then file order (instruction.md first, then the workspace in path order).
///
/// # Errors
/// [`LoadError`] when a workspace file cannot be read.
pub fn visible_answers(package: &TaskPackage) -> Result<Vec<VisibleAnswer>, LoadError> {
    let targets = package.clarifications();
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let mut texts: Vec<(String, Vec<String>)> = vec![("instruction.md".to_string(), leak::words(package.instruction()))];
    let walker = walkdir::WalkDir::new(package.workspace_dir()).follow_links(false).sort_by_file_name();
    for entry in walker {
        let entry = entry?;
        if !entry.file_type().is_file() {
            continue;
        }
        let Some(text) = leak::read_scannable(entry.path())? else { continue };
        let rel = entry.path().strip_prefix(package.root()).unwrap_or(entry.path());
        texts.push((rel.display().to_string(), leak::words(&text)));
    }
    Ok(scan(targets, &texts))
}

/// [`visible_answers`] over texts already split into words.
fn scan(targets: &[ClarificationTarget], texts: &[(String, Vec<String>)]) -> Vec<VisibleAnswer> {
    // Per file and run length, the set of runs it holds (most answers share one length).
    let mut runs: BTreeMap<(usize, usize), HashSet<&[String]>> = BTreeMap::new();
    let mut found = Vec::new();
    for target in targets {
        let answer = leak::words(&target.answer);
        if answer.len() < MIN_ANSWER_WORDS {
            continue;
        }
        let length = ANSWER_RUN.min(answer.len());
        for (index, (file, words)) in texts.iter().enumerate() {
            let held = runs.entry((index, length)).or_insert_with(|| words.windows(length).collect());
            if let Some(run) = answer.windows(length).find(|run| held.contains(run)) {
                found.push(VisibleAnswer { target: target.id.clone(), file: file.clone(), words: run.join(" ") });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_protocol::package::{Domain, IssueType};

    fn target(id: &str, answer: &str) -> ClarificationTarget {
        ClarificationTarget {
            id: id.into(),
            description: String::new(),
            issue_type: IssueType::Missing,
            domain: Domain::DataSemantics,
            rule_source: None,
            answer: answer.into(),
            triggers: vec![],
        }
    }

    fn texts(files: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
        files.iter().map(|(f, t)| (f.to_string(), leak::words(t))).collect()
    }

    #[test]
    fn an_eight_word_run_of_an_answer_is_found_across_case_and_punctuation() {
        let targets = [target("cases", "The warehouse system counts whole cases, so multiply on_hand by case_pack.")];
        let found = scan(
            &targets,
            &texts(&[
                ("instruction.md", "Hi, here is the data."),
                ("workspace/data/README.md", "Note: the WAREHOUSE system counts whole cases -- so multiply on_hand!"),
            ]),
        );
        assert_eq!(
            found,
            [VisibleAnswer {
                target: "cases".into(),
                file: "workspace/data/README.md".into(),
                words: "the warehouse system counts whole cases so multiply".into(),
            }]
        );
        assert_eq!(
            found[0].to_string(),
            "target `cases`: 8 words of its answer in workspace/data/README.md: \"the warehouse system counts whole cases so multiply\""
        );
    }

    #[test]
    fn seven_words_are_not_verbatim_and_short_answers_need_all_their_words() {
        let targets = [
            target("cases", "The warehouse system counts whole cases, so multiply on_hand by case_pack."),
            target("lane", "The lane is closed."),
            target("yes", "Yes, it is."),
        ];
        let found = scan(
            &targets,
            &texts(&[("workspace/notes.txt", "the warehouse system counts whole cases and more. The lane is closed. Yes, it is.")]),
        );
        let ids: Vec<&str> = found.iter().map(|f| f.target.as_str()).collect();
        // Seven words of `cases` only; all four of `lane`; `yes` (3 words) is not scanned.
        assert_eq!(ids, ["lane"]);
        assert_eq!(found[0].words, "the lane is closed");
    }
}
