//! The page sections of a `candidate` unit (seed 001 §3.2 Stage III: reviewers judge a
//! candidate residual state from the request, the changes and a summary of the predecessor's
//! trajectory). The same material as `specgap residualize`'s review bundle
//! (`specgap_residualize::review::Bundle`): the request (`instruction.md`), the files changed
//! (incidental artifacts named apart), the final diff, and the deterministic trajectory digest
//! (`specgap_residualize::summary::TrajectoryDigest`: turns, every tool call in words,
//! submissions, the final message, the end). The hidden tests the state fails appear only when
//! the rubric shows `evaluation` (`seed001-review` does, for its second criterion).

use std::path::Path;

use specgap_protocol::event::EventKind;
use specgap_residualize::summary::TrajectoryDigest;

use crate::page::{Page, PageInput, package_of};
use crate::rubric::Disclosure;

/// The sections of a candidate whose final submission is `k`.
pub(crate) fn sections(
    page: &mut Page,
    input: &PageInput<'_>,
    events: &[&EventKind],
    k: Option<u32>,
    failing: &[String],
    changed: &[String],
    substantive: &[String],
) {
    page.heading("The request");
    match package_of(input) {
        Some(package) => page.pre("request", package.instruction()),
        None => match events.iter().find_map(|e| match e {
            EventKind::EpisodeStart { opening_message, .. } => Some(opening_message),
            _ => None,
        }) {
            Some(opening) => page.pre("request", opening),
            None => page.para("The request cannot be read."),
        },
    }
    if input.rubric.shows(Disclosure::Evaluation) {
        page.heading(&format!("Hidden tests failing on this state ({}, private)", failing.len()));
        page.pre("private", &failing.join("\n"));
    }
    page.heading("Changes from the clean state");
    page.para(&format!("Files: {}", if changed.is_empty() { "none".to_string() } else { changed.join(", ") }));
    let incidental: Vec<&str> = changed.iter().filter(|f| !substantive.contains(f)).map(String::as_str).collect();
    if !incidental.is_empty() {
        page.para(&format!("Incidental artifacts (kept in the state, ignored by the filter): {}", incidental.join(", ")));
    }
    if let Some(k) = k {
        let path = input.store.episode_dir(&input.episode.id).join("submissions").join(k.to_string()).join("workspace.diff");
        match fs_err::read(&path) {
            Ok(bytes) => page.pre("diff", &String::from_utf8_lossy(&bytes)),
            Err(_) => page.para(&format!("Submission {k} has no stored diff.")),
        }
    }
    digest(page, input.store.dir(), &input.episode.id, changed);
}

/// The deterministic digest of the predecessor's trajectory.
fn digest(page: &mut Page, run: &Path, episode: &str, changed: &[String]) {
    page.heading("The predecessor's trajectory (deterministic digest)");
    let d = match TrajectoryDigest::read(run, episode, changed) {
        Ok(d) => d,
        Err(e) => {
            page.para(&format!("The trajectory cannot be read: {}", specgap_protocol::text::error_chain(&e)));
            return;
        }
    };
    let end = d.end_reason.as_deref().unwrap_or("none recorded");
    let cut = if d.truncated { "; the stored trajectory was cut by a crash" } else { "" };
    page.para(&format!("{} turns, {} tool calls, end: {end}{cut}", d.turns, d.commands.len()));
    let commands: Vec<String> =
        d.commands.iter().map(|c| format!("turn {} · {}{}: {}", c.turn, c.tool, if c.failed { " (error)" } else { "" }, c.text)).collect();
    if !commands.is_empty() {
        page.block("tool calls", "agent", &commands.join("\n"));
    }
    for (k, automatic, summary) in &d.submissions {
        let how = if *automatic { "automatic" } else { "by the agent" };
        page.block(&format!("submission {k} ({how})"), "agent", summary.as_deref().unwrap_or(""));
    }
    if let Some(message) = &d.final_message {
        page.block("its final message", "agent", message);
    }
}
