//! What one extractor's session produced, and whether it counts (seed 002 A.3 "Extractions
//! without source provenance are rejected"; A.9.4's `_result.json`).
//!
//! An extractor writes the artifact into its working directory and, last, a [`RESULT_FILE`]
//! saying what it found: `status` (`success`, `partial`, `failed`), `notes`, `files_found` (the
//! delivered files it took the answer from) and `files_normalized` (what it wrote). The harness
//! takes that file out before the case evaluator sees the directory ([`take_report`]) and
//! classifies the route ([`Finding`]):
//!
//! * **output** — it wrote files and names, in `files_found`, at least one file *of the
//!   delivery*: a file of the delivered workspace the agent created or changed (present in the
//!   submission and absent from, or different from, the package's clean workspace;
//!   [`agent_files`]). Only these are evaluated and vote with their score.
//! * **no output** — it wrote nothing (besides the report): rejected, never a vote.
//! * **no provenance** — it wrote files but names no file of the delivery (no report, no
//!   `files_found`, only paths that do not exist, or only the client's own data — A.9.4: never
//!   take the data directory as the agent's output): rejected, never a vote.
//! * **no deliverable** — its report says `failed` and it wrote nothing: it found no answer of
//!   the agent's to extract. Not a score either; when a strict majority of the configured
//!   extractors find this, the run has no artifact (seed 002 Table 17's "No artifact") and
//!   scores 0 as a delivery the agent failed.
//!
//! A delivery with no file of the agent's at all cannot give an extraction with provenance, so
//! no extractor is asked: it has no artifact ([`crate::extract`]).

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// The extractor's report, in its working directory (A.9.4's `_result.json`).
pub const RESULT_FILE: &str = "_result.json";

/// An extractor's report as read (fields it left out or mistyped are empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExtractorReport {
    /// `success`, `partial` or `failed` (as written, lowercased).
    pub status: Option<String>,
    /// Its notes.
    pub notes: Option<String>,
    /// The delivered files it says it took the answer from, as written.
    pub files_found: Vec<String>,
    /// The files it says it wrote.
    pub files_normalized: Vec<String>,
}

/// How a route is counted (module guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Files written with provenance: evaluated, votes with its score.
    Output,
    /// Nothing written: rejected.
    NoOutput,
    /// Files written, but no file of the delivery named: rejected.
    NoProvenance,
    /// Reported `failed` and wrote nothing: no answer of the agent's found.
    NoDeliverable,
}

/// Reads and removes [`RESULT_FILE`] from `output`; `None` when it is absent or not a JSON
/// object.
pub fn take_report(output: &Path) -> Option<ExtractorReport> {
    let path = output.join(RESULT_FILE);
    let text = std::fs::read_to_string(&path).ok();
    let _ = std::fs::remove_file(&path);
    let value: Value = serde_json::from_str(&text?).ok()?;
    let object = value.as_object()?;
    let strings = |key: &str| -> Vec<String> {
        object
            .get(key)
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
    };
    let text_of = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    Some(ExtractorReport {
        status: text_of("status").map(|s| s.trim().to_lowercase()),
        notes: text_of("notes"),
        files_found: strings("files_found"),
        files_normalized: strings("files_normalized"),
    })
}

/// The files of the delivered workspace (relative, `/`-separated, `.git` left out) that the
/// agent created or changed: absent from the package's clean workspace `clean`, or different
/// in content.
pub fn agent_files(delivered: &Path, clean: &Path) -> BTreeSet<String> {
    files_under(delivered, true)
        .into_iter()
        .filter(|relative| {
            let before = std::fs::read(clean.join(relative)).ok();
            before.is_none() || before != std::fs::read(delivered.join(relative)).ok()
        })
        .collect()
}

/// The files of `output` (relative, `/`-separated, sorted).
pub fn written_files(output: &Path) -> Vec<String> {
    files_under(output, false)
}

/// Regular files under `root`, relative and `/`-separated, sorted; links are not followed, and
/// a top-level `.git` is left out when `skip_git`.
fn files_under(root: &Path, skip_git: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            if depth == 0 && skip_git && entry.file_name() == ".git" {
                continue;
            }
            let path = entry.path();
            if kind.is_dir() {
                stack.push((path, depth + 1));
            } else if let (true, Ok(relative)) = (kind.is_file(), path.strip_prefix(root)) {
                out.push(slash_path(relative));
            }
        }
    }
    out.sort();
    out
}

/// The files of the delivery a report names: each `files_found` entry read as a path relative
/// to the delivered workspace, or as an absolute path under one of `roots` (where the
/// extractor saw the delivery), kept when the agent made it ([`agent_files`]).
pub fn provenance(report: Option<&ExtractorReport>, roots: &[&str], agent: &BTreeSet<String>) -> Vec<String> {
    let Some(report) = report else { return Vec::new() };
    let mut named: Vec<String> =
        report.files_found.iter().map(|found| relative_to(found, roots)).filter(|path| agent.contains(path)).collect();
    named.sort();
    named.dedup();
    named
}

/// How a route counts, from its report, the files it wrote and its provenance.
pub fn finding(report: Option<&ExtractorReport>, written: &[String], provenance: &[String]) -> Finding {
    let failed = report.is_some_and(|r| r.status.as_deref() == Some("failed"));
    match (written.is_empty(), provenance.is_empty()) {
        (true, _) if failed => Finding::NoDeliverable,
        (true, _) => Finding::NoOutput,
        (false, true) => Finding::NoProvenance,
        (false, false) => Finding::Output,
    }
}

fn relative_to(found: &str, roots: &[&str]) -> String {
    let found = found.trim();
    let stripped = roots
        .iter()
        .filter(|root| !root.is_empty())
        .find_map(|root| found.strip_prefix(root.trim_end_matches('/')).filter(|rest| rest.is_empty() || rest.starts_with('/')))
        .unwrap_or(found);
    let mut parts: Vec<&str> = Vec::new();
    for part in stripped.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

fn slash_path(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: &str, found: &[&str]) -> ExtractorReport {
        ExtractorReport { status: Some(status.into()), files_found: found.iter().map(|f| f.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn provenance_reads_relative_and_mounted_paths_of_files_the_agent_made() {
        let agent: BTreeSet<String> = ["results/plan.csv".to_string(), "NOTES.md".to_string()].into();
        let r = report("success", &["/delivered/results/plan.csv", "./NOTES.md", "data/demand.csv", "/delivered/../etc/passwd"]);
        assert_eq!(provenance(Some(&r), &["/delivered"], &agent), ["NOTES.md", "results/plan.csv"]);
        // The client's data, a missing file or no report at all: no provenance.
        assert!(provenance(Some(&report("success", &["data/demand.csv", "plan.json"])), &["/delivered"], &agent).is_empty());
        assert!(provenance(None, &["/delivered"], &agent).is_empty());
    }

    #[test]
    fn findings() {
        let written = vec!["plan.json".to_string()];
        let named = vec!["results/plan.csv".to_string()];
        assert_eq!(finding(Some(&report("success", &[])), &written, &named), Finding::Output);
        assert_eq!(finding(Some(&report("success", &[])), &written, &[]), Finding::NoProvenance);
        assert_eq!(finding(None, &written, &[]), Finding::NoProvenance);
        assert_eq!(finding(Some(&report("success", &[])), &[], &named), Finding::NoOutput);
        assert_eq!(finding(None, &[], &[]), Finding::NoOutput);
        assert_eq!(finding(Some(&report("failed", &[])), &[], &[]), Finding::NoDeliverable);
        // `failed` with files written is judged on its files.
        assert_eq!(finding(Some(&report("failed", &[])), &written, &named), Finding::Output);
    }

    #[test]
    fn the_report_is_taken_out_of_the_output_and_read_leniently() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULT_FILE), r#"{"status": " Partial ", "files_found": ["a", 3], "notes": "rows 1-5"}"#).unwrap();
        std::fs::write(dir.path().join("plan.json"), "{}").unwrap();
        let r = take_report(dir.path()).unwrap();
        assert_eq!(
            (r.status.as_deref(), r.files_found.as_slice(), r.notes.as_deref()),
            (Some("partial"), &["a".to_string()][..], Some("rows 1-5"))
        );
        assert_eq!(written_files(dir.path()), ["plan.json"]);
        std::fs::write(dir.path().join(RESULT_FILE), "not json").unwrap();
        assert_eq!(take_report(dir.path()), None);
        assert!(!dir.path().join(RESULT_FILE).exists());
        assert_eq!(take_report(dir.path()), None);
    }

    #[test]
    fn agent_files_are_the_new_and_changed_ones() {
        let clean = tempfile::tempdir().unwrap();
        let delivered = tempfile::tempdir().unwrap();
        for dir in [clean.path(), delivered.path()] {
            std::fs::create_dir_all(dir.join("data")).unwrap();
            std::fs::write(dir.join("data/a.csv"), "1").unwrap();
            std::fs::write(dir.join("data/b.csv"), "2").unwrap();
        }
        std::fs::write(delivered.path().join("data/b.csv"), "changed").unwrap();
        std::fs::write(delivered.path().join("plan.json"), "{}").unwrap();
        std::fs::create_dir_all(delivered.path().join(".git")).unwrap();
        std::fs::write(delivered.path().join(".git/HEAD"), "x").unwrap();
        let files: Vec<String> = agent_files(delivered.path(), clean.path()).into_iter().collect();
        assert_eq!(files, ["data/b.csv", "plan.json"]);
    }
}
