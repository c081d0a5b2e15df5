//! Stage III, human review (seed 001 §3.2): a bundle per candidate for two reviewers, and the
//! import of their verdicts with their agreement.
//!
//! ## Bundles
//! `residualize/review/` holds `index.md` / `index.html` (every candidate, with links),
//! `sheet.csv` (the blank label sheet: one copy per reviewer) and, per candidate
//! `<id>/review.md`, `<id>/review.html` and `<id>/state.diff` (the final state's diff, byte
//! for byte). A bundle shows what the paper's reviewers saw — the request, the changes from
//! the clean state, a summary of the trajectory — plus the failing hidden tests, which the
//! second criterion needs. Everything the predecessor wrote is escaped: code blocks whose
//! fence outgrows any backtick run in Markdown, entity-escaped text in HTML pages that load
//! nothing and run nothing (a `default-src 'none'` content security policy). The bundles are
//! rewritten when the candidates change before review; a `sheet.csv` someone filled in place is
//! moved aside, and other files there are left alone.
//!
//! ## Label sheets (the `seed001-review` rubric)
//! A sheet is CSV (RFC 4180: comma-separated, double quotes around fields holding commas,
//! quotes or line breaks, UTF-8), one header line then one row per candidate:
//!
//! | column | meaning |
//! | --- | --- |
//! | `candidate` | the candidate's id (the predecessor episode's id), as in `sheet.csv` |
//! | `task_directed` | `yes` when the summarized strategy is a coherent attempt at the request's requirements, not unrelated or incidental changes; else `no` |
//! | `consistent` | `yes` when the request and the hidden tests ask for the same thing; else `no` |
//! | `note` | optional free text |
//!
//! Other columns (the blank sheet's `task` and `predecessor`) are ignored; labels are
//! case-insensitive. Every candidate must have exactly one row; an unknown candidate, a
//! repeated one, a missing row or a label other than `yes` / `no` is an error naming the
//! sheet and row. Each reviewer fills their own copy; the import names them:
//! `--review alice=alice.csv --review bob=bob.csv`.
//!
//! ## Verdicts
//! A reviewer keeps a candidate when both labels are `yes`. A candidate passes review only
//! when **both** reviewers keep it (the paper retains a candidate only if it satisfies both
//! criteria; a disagreement is not resolved in its favour). Otherwise it is excluded as
//! `not-task-directed` when a reviewer said so, else as `task-verifier-inconsistent`.
//! Agreement: Cohen's kappa (unweighted, `specgap_stats::cohen_kappa`, as scikit-learn's
//! `cohen_kappa_score`) and the share of candidates labelled alike, for the reviewer verdict
//! (keep / drop) and for each criterion; kappa is undefined (null) when both reviewers gave one
//! and the same label to every candidate.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specgap_stats::{KappaWeighting, cohen_kappa};

use crate::diff::sha256_hex;
use crate::error::ResidualizeError;
use crate::filter::ScreenedRun;
use crate::summary::{SummaryInput, TrajectoryDigest, TrajectorySummarizer};
use specgap_protocol::escape::{html, md_fence, md_inline};

/// The name of the review rubric the sheets follow (for label imports that name rubrics).
pub const RUBRIC: &str = "seed001-review";

/// Bytes of a diff shown inside `review.md` / `review.html`; `state.diff` always has all.
pub const DIFF_SHOWN_BYTES: usize = 512 << 10;

/// One reviewer's labels of one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewerLabels {
    /// Task-directed (§3.2 Stage III (a)).
    pub task_directed: bool,
    /// Task–verifier consistent (§3.2 Stage III (b)).
    pub consistent: bool,
    /// The reviewer's note.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl ReviewerLabels {
    /// The reviewer keeps the candidate: both criteria hold.
    pub fn keeps(&self) -> bool {
        self.task_directed && self.consistent
    }
}

/// Why review excluded a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewExclusion {
    /// A reviewer found the strategy not directed at the request.
    NotTaskDirected,
    /// A reviewer found the request and the hidden tests inconsistent.
    TaskVerifierInconsistent,
}

impl ReviewExclusion {
    /// Both, in funnel order.
    pub const ALL: [ReviewExclusion; 2] = [ReviewExclusion::NotTaskDirected, ReviewExclusion::TaskVerifierInconsistent];

    /// Kebab-case code.
    pub fn code(self) -> &'static str {
        match self {
            ReviewExclusion::NotTaskDirected => "not-task-directed",
            ReviewExclusion::TaskVerifierInconsistent => "task-verifier-inconsistent",
        }
    }

    /// The funnel's words for it.
    pub fn label(self) -> &'static str {
        match self {
            ReviewExclusion::NotTaskDirected => "Not a coherent attempt at the request",
            ReviewExclusion::TaskVerifierInconsistent => "Request and hidden tests inconsistent",
        }
    }
}

/// Both reviewers' labels of one candidate and the outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateReview {
    /// Candidate id.
    pub candidate: String,
    /// The first reviewer's labels.
    pub first: ReviewerLabels,
    /// The second reviewer's labels.
    pub second: ReviewerLabels,
    /// `None` when both reviewers keep it; else why it is excluded.
    pub excluded: Option<ReviewExclusion>,
}

/// Agreement of the two reviewers on one label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Candidates labelled by both.
    pub items: usize,
    /// Share labelled alike, in [0, 1]; `None` without candidates.
    pub observed: Option<f64>,
    /// Cohen's kappa; `None` when undefined (one label used by both for everything).
    pub kappa: Option<f64>,
}

/// A sheet as imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SheetRef {
    /// The reviewer's name.
    pub reviewer: String,
    /// The file (canonical).
    pub path: String,
    /// Hex SHA-256 of its bytes.
    pub sha256: String,
}

/// The imported review, as stored in `residualize/reviews.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reviews {
    /// The rubric the sheets follow ([`RUBRIC`]).
    pub rubric: String,
    /// The two sheets, first and second reviewer.
    pub sheets: [SheetRef; 2],
    /// Per candidate, in candidate order.
    pub candidates: Vec<CandidateReview>,
    /// Agreement on `verdict` (keep / drop), `task_directed` and `consistent`.
    pub agreement: BTreeMap<String, Agreement>,
}

impl Reviews {
    /// The outcome of candidate `id`, if it was reviewed: `Some(None)` when it passed.
    pub fn outcome(&self, id: &str) -> Option<Option<ReviewExclusion>> {
        self.candidates.iter().find(|c| c.candidate == id).map(|c| c.excluded)
    }
}

/// Imports two reviewers' sheets for `candidates` (the Stage II candidates, in order).
///
/// # Errors
/// [`ResidualizeError::ReviewFlags`] unless there are exactly two sheets with distinct,
/// non-empty reviewer names; [`ResidualizeError::Sheet`] for a malformed sheet or one that does
/// not cover the candidates exactly; I/O errors.
pub fn import(sheets: &[(String, PathBuf)], candidates: &[&ScreenedRun]) -> Result<Reviews, ResidualizeError> {
    let [(first_name, first_path), (second_name, second_path)] = sheets else {
        return Err(ResidualizeError::ReviewFlags(format!(
            "seed 001 has two reviewers per candidate: give two sheets (--review NAME=SHEET.csv twice), not {}",
            sheets.len()
        )));
    };
    if first_name.trim().is_empty() || second_name.trim().is_empty() {
        return Err(ResidualizeError::ReviewFlags("a reviewer name is empty; write --review NAME=SHEET.csv".into()));
    }
    if first_name == second_name {
        return Err(ResidualizeError::ReviewFlags(format!("both sheets name reviewer {first_name}; the two reviewers must differ")));
    }
    let ids: Vec<&str> = candidates.iter().map(|c| c.episode.as_str()).collect();
    let (first_ref, first) = read_sheet(first_name, first_path, &ids)?;
    let (second_ref, second) = read_sheet(second_name, second_path, &ids)?;
    let mut reviewed = Vec::with_capacity(ids.len());
    for id in &ids {
        let (Some(a), Some(b)) = (first.get(*id), second.get(*id)) else { continue };
        let excluded = if a.keeps() && b.keeps() {
            None
        } else if !a.task_directed || !b.task_directed {
            Some(ReviewExclusion::NotTaskDirected)
        } else {
            Some(ReviewExclusion::TaskVerifierInconsistent)
        };
        reviewed.push(CandidateReview { candidate: (*id).to_string(), first: a.clone(), second: b.clone(), excluded });
    }
    let agreement = agreement(&reviewed);
    Ok(Reviews { rubric: RUBRIC.to_string(), sheets: [first_ref, second_ref], candidates: reviewed, agreement })
}

/// Agreement on the verdict and on each criterion.
fn agreement(reviewed: &[CandidateReview]) -> BTreeMap<String, Agreement> {
    type LabelOf = fn(&ReviewerLabels) -> bool;
    let labels: [(&str, LabelOf); 3] =
        [("verdict", ReviewerLabels::keeps), ("task_directed", |l| l.task_directed), ("consistent", |l| l.consistent)];
    labels
        .into_iter()
        .map(|(name, label)| {
            let a: Vec<bool> = reviewed.iter().map(|c| label(&c.first)).collect();
            let b: Vec<bool> = reviewed.iter().map(|c| label(&c.second)).collect();
            let alike = a.iter().zip(&b).filter(|(x, y)| x == y).count();
            let observed = (!a.is_empty()).then(|| alike as f64 / a.len() as f64);
            let kappa = cohen_kappa(&a, &b, KappaWeighting::Unweighted).ok().filter(|k| k.is_finite());
            (name.to_string(), Agreement { items: a.len(), observed, kappa })
        })
        .collect()
}

/// Reads one sheet and checks it covers `ids` exactly.
fn read_sheet(reviewer: &str, path: &Path, ids: &[&str]) -> Result<(SheetRef, HashMap<String, ReviewerLabels>), ResidualizeError> {
    let bytes = fs_err::read(path)?;
    let sheet_error = |row: Option<u64>, message: String| ResidualizeError::Sheet { path: path.to_path_buf(), row, message };
    let mut reader = csv::ReaderBuilder::new().has_headers(true).trim(csv::Trim::All).from_reader(bytes.as_slice());
    let headers = reader.headers().map_err(|e| sheet_error(Some(1), format!("cannot read the header line: {e}")))?.clone();
    let column = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let (Some(candidate_col), Some(directed_col), Some(consistent_col)) =
        (column("candidate"), column("task_directed"), column("consistent"))
    else {
        return Err(sheet_error(
            Some(1),
            format!(
                "the header must name the columns candidate, task_directed and consistent (found: {})",
                headers.iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    };
    let note_col = column("note");
    let known: std::collections::HashSet<&str> = ids.iter().copied().collect();
    let mut labels: HashMap<String, ReviewerLabels> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| sheet_error(e.position().map(|p| p.line()), format!("not a csv row: {e}")))?;
        let line = record.position().map(|p| p.line());
        if record.iter().all(str::is_empty) {
            continue;
        }
        let field = |i: usize| record.get(i).unwrap_or("");
        let id = field(candidate_col);
        if !known.contains(id) {
            return Err(sheet_error(line, format!("unknown candidate `{id}`; the candidates are listed in residualize/review/sheet.csv")));
        }
        let label = |col: usize, name: &str| match field(col).to_ascii_lowercase().as_str() {
            "yes" => Ok(true),
            "no" => Ok(false),
            other => Err(sheet_error(line, format!("{name} of candidate {id} must be yes or no, not `{other}`"))),
        };
        let entry = ReviewerLabels {
            task_directed: label(directed_col, "task_directed")?,
            consistent: label(consistent_col, "consistent")?,
            note: note_col.map(|c| field(c).to_string()).unwrap_or_default(),
        };
        if labels.insert(id.to_string(), entry).is_some() {
            return Err(sheet_error(line, format!("candidate {id} has a second row")));
        }
    }
    let missing: Vec<&str> = ids.iter().copied().filter(|id| !labels.contains_key(*id)).collect();
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().copied().take(5).collect();
        let more = if missing.len() > shown.len() { format!(" and {} more", missing.len() - shown.len()) } else { String::new() };
        return Err(sheet_error(None, format!("no row for {} candidate(s): {}{more}", missing.len(), shown.join(", "))));
    }
    let canonical = fs_err::canonicalize(path)?;
    Ok((SheetRef { reviewer: reviewer.to_string(), path: canonical.display().to_string(), sha256: sha256_hex(&bytes) }, labels))
}

/// The blank label sheet: the header and one row per candidate with empty labels.
pub fn blank_sheet(candidates: &[&ScreenedRun]) -> Result<Vec<u8>, ResidualizeError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let serialize = |e: csv::Error| ResidualizeError::Serialize { path: PathBuf::from("sheet.csv"), message: e.to_string() };
    writer.write_record(["candidate", "task", "predecessor", "task_directed", "consistent", "note"]).map_err(serialize)?;
    for c in candidates {
        writer.write_record([c.episode.as_str(), c.task.as_str(), c.agent.as_str(), "", "", ""]).map_err(serialize)?;
    }
    writer.into_inner().map_err(|e| ResidualizeError::Serialize { path: PathBuf::from("sheet.csv"), message: e.to_string() })
}

/// Everything a bundle shows about one candidate.
#[derive(Debug, Clone)]
pub struct Bundle<'a> {
    /// The candidate.
    pub candidate: &'a ScreenedRun,
    /// The task's request (`instruction.md`), or why it could not be read.
    pub request: Result<String, String>,
    /// The final state's diff, byte for byte.
    pub diff: Vec<u8>,
    /// The deterministic trajectory digest, or why it could not be read.
    pub digest: Result<TrajectoryDigest, String>,
    /// A model summary: (summarizer name, its text or its failure).
    pub model_summary: Option<(String, Result<String, String>)>,
}

impl<'a> Bundle<'a> {
    /// Collects a candidate's bundle: the request from its package, the diff and trajectory
    /// from its run, and the summary of `summarizer` when one is given.
    ///
    /// # Errors
    /// I/O errors reading the final diff (a missing request or trajectory is shown in the
    /// bundle instead).
    pub fn collect(candidate: &'a ScreenedRun, summarizer: Option<&dyn TrajectorySummarizer>) -> Result<Bundle<'a>, ResidualizeError> {
        let run_dir = Path::new(&candidate.run);
        let diff = candidate.final_diff()?;
        let request = match &candidate.task_path {
            Some(path) => fs_err::read_to_string(Path::new(path).join("instruction.md")).map_err(|e| e.to_string()),
            None => Err("the run does not record where the task package was read from".to_string()),
        };
        let trajectory = specgap_store::read_trajectory(run_dir, &candidate.episode).map_err(|e| specgap_protocol::text::error_chain(&e));
        let digest = trajectory.as_ref().map_err(Clone::clone).map(|t| {
            let mut d = TrajectoryDigest::of(&t.events);
            d.files_touched = candidate.changed_files.clone();
            d.truncated = t.truncated.is_some();
            d
        });
        let model_summary = match (summarizer, &trajectory, &digest, &request) {
            (Some(s), Ok(t), Ok(d), Ok(r)) => {
                let input = SummaryInput { request: r, digest: d, events: &t.events };
                Some((s.name(), s.summarize(&input).map_err(|e| e.to_string())))
            }
            (Some(s), ..) => Some((s.name(), Err("the request or the trajectory could not be read".to_string()))),
            (None, ..) => None,
        };
        Ok(Bundle { candidate, request, diff, digest, model_summary })
    }

    fn diff_text(&self) -> (String, bool) {
        let cut = self.diff.len() > DIFF_SHOWN_BYTES;
        let shown = &self.diff[..self.diff.len().min(DIFF_SHOWN_BYTES)];
        (String::from_utf8_lossy(shown).into_owned(), cut)
    }

    /// The bundle as Markdown (`review.md`).
    pub fn markdown(&self) -> String {
        let c = self.candidate;
        let mut out = String::new();
        let _ = writeln!(out, "# Candidate residual state `{}`\n", code_span_text(&c.episode));
        let _ = writeln!(out, "{}\n", md_inline(&header_line(c)));
        out.push_str(INSTRUCTIONS_MD);
        out.push_str("\n## Request (instruction.md)\n\n");
        match &self.request {
            Ok(text) => out.push_str(&md_fence("text", text)),
            Err(why) => {
                let _ = writeln!(out, "Not available: {}", md_inline(why));
            }
        }
        let _ = writeln!(out, "\n## Hidden tests failing on this state ({})\n", c.failing_tests.len());
        for test in &c.failing_tests {
            let _ = writeln!(out, "- {}", md_inline(test));
        }
        out.push_str("\n## Changes from the clean state\n\n");
        let _ = writeln!(out, "Files: {}\n", md_inline(&list(&c.changed_files)));
        let incidental: Vec<String> = c.changed_files.iter().filter(|f| !c.substantive_files.contains(f)).cloned().collect();
        if !incidental.is_empty() {
            let _ = writeln!(out, "Incidental artifacts (kept in the state, ignored by the filter): {}\n", md_inline(&list(&incidental)));
        }
        let (diff, cut) = self.diff_text();
        out.push_str(&md_fence("diff", &diff));
        if cut {
            let _ = writeln!(out, "\nThe diff is cut at {DIFF_SHOWN_BYTES} of {} bytes; state.diff has all of it.", self.diff.len());
        }
        out.push_str("\n## Trajectory summary (deterministic)\n\n");
        match &self.digest {
            Ok(d) => digest_markdown(&mut out, d),
            Err(why) => {
                let _ = writeln!(out, "Not available: {}", md_inline(why));
            }
        }
        out.push_str("\n## Model summary\n\n");
        match &self.model_summary {
            None => out.push_str("None configured.\n"),
            Some((name, Ok(text))) => {
                let _ = writeln!(out, "By {}:\n", md_inline(name));
                out.push_str(&md_fence("text", text));
            }
            Some((name, Err(why))) => {
                let _ = writeln!(out, "{} could not summarize: {}", md_inline(name), md_inline(why));
            }
        }
        out
    }

    /// The bundle as one self-contained HTML page (`review.html`).
    pub fn html(&self) -> String {
        let c = self.candidate;
        let mut body = String::new();
        let _ = write!(
            body,
            "<h1>Candidate residual state <code>{}</code></h1><p class=\"meta\">{}</p>",
            html(&c.episode),
            html(&header_line(c))
        );
        body.push_str(INSTRUCTIONS_HTML);
        body.push_str("<h2>Request (instruction.md)</h2>");
        match &self.request {
            Ok(text) => {
                let _ = write!(body, "<pre>{}</pre>", html(text));
            }
            Err(why) => {
                let _ = write!(body, "<p>Not available: {}</p>", html(why));
            }
        }
        let _ = write!(body, "<h2>Hidden tests failing on this state ({})</h2><ul>", c.failing_tests.len());
        for test in &c.failing_tests {
            let _ = write!(body, "<li><code>{}</code></li>", html(test));
        }
        body.push_str("</ul><h2>Changes from the clean state</h2>");
        let _ = write!(body, "<p>Files: {}</p>", html(&list(&c.changed_files)));
        let (diff, cut) = self.diff_text();
        body.push_str("<pre class=\"diff\">");
        for line in diff.lines() {
            let class = if line.starts_with('+') && !line.starts_with("+++") {
                "add"
            } else if line.starts_with('-') && !line.starts_with("---") {
                "del"
            } else {
                "ctx"
            };
            let _ = writeln!(body, "<span class=\"{class}\">{}</span>", html(line));
        }
        body.push_str("</pre>");
        if cut {
            let _ = write!(body, "<p>The diff is cut at {DIFF_SHOWN_BYTES} of {} bytes; state.diff has all of it.</p>", self.diff.len());
        }
        body.push_str("<h2>Trajectory summary (deterministic)</h2>");
        match &self.digest {
            Ok(d) => digest_html(&mut body, d),
            Err(why) => {
                let _ = write!(body, "<p>Not available: {}</p>", html(why));
            }
        }
        body.push_str("<h2>Model summary</h2>");
        match &self.model_summary {
            None => body.push_str("<p>None configured.</p>"),
            Some((name, Ok(text))) => {
                let _ = write!(body, "<p>By {}:</p><pre>{}</pre>", html(name), html(text));
            }
            Some((name, Err(why))) => {
                let _ = write!(body, "<p>{} could not summarize: {}</p>", html(name), html(why));
            }
        }
        page(&format!("Candidate {}", c.episode), &body)
    }
}

const INSTRUCTIONS_MD: &str = "Judge two things (seed 001 §3.2, Stage III) and write `yes` or `no` in this candidate's row of your copy of `sheet.csv`:\n\n\
- **task_directed**: the trajectory is a coherent attempt at the request's requirements, not unrelated or incidental changes;\n\
- **consistent**: the request and the hidden tests (the package's evaluator) ask for the same thing.\n";

const INSTRUCTIONS_HTML: &str = "<p>Judge two things (seed 001 §3.2, Stage III) and write <code>yes</code> or <code>no</code> in this candidate's row of your copy of <code>sheet.csv</code>:</p><ul>\
<li><b>task_directed</b>: the trajectory is a coherent attempt at the request's requirements, not unrelated or incidental changes;</li>\
<li><b>consistent</b>: the request and the hidden tests (the package's evaluator) ask for the same thing.</li></ul>";

fn header_line(c: &ScreenedRun) -> String {
    format!(
        "Task {} · predecessor {} · episode {} of run {} · condition {} · {} turns · ended {}",
        c.task,
        c.agent,
        c.episode,
        c.run,
        c.condition,
        c.steps,
        c.end_reason.as_deref().unwrap_or("unknown")
    )
}

/// Text for inside a single-backtick code span: literal there, so only backticks and line
/// breaks (which would end or break the span) are dropped.
fn code_span_text(text: &str) -> String {
    text.chars().filter(|c| !matches!(c, '`' | '\n' | '\r')).collect()
}

fn list(items: &[String]) -> String {
    if items.is_empty() { "none".to_string() } else { items.join(", ") }
}

fn digest_markdown(out: &mut String, d: &TrajectoryDigest) {
    let _ = writeln!(
        out,
        "- {} turns, {} tool calls ({} answered with a tool error), {} submission(s); ended {}",
        d.turns,
        d.commands.len(),
        d.commands.iter().filter(|c| c.failed).count(),
        d.submissions.len(),
        md_inline(d.end_reason.as_deref().unwrap_or("unknown"))
    );
    let _ = writeln!(out, "- Files the final state changes: {}", md_inline(&list(&d.files_touched)));
    for (k, automatic, summary) in &d.submissions {
        let how = if *automatic { "automatic" } else { "by the agent" };
        let _ = writeln!(out, "- Submission {k} ({how}): {}", md_inline(summary.as_deref().unwrap_or("no summary")));
    }
    if d.truncated {
        out.push_str("- The stored trajectory is cut after a crash; its last event is missing.\n");
    }
    out.push_str("\n### Commands and tool calls\n\n");
    for (i, c) in d.commands.iter().enumerate() {
        let failed = if c.failed { " (tool error)" } else { "" };
        let _ = writeln!(out, "{}. turn {} `{}`{failed}\n", i + 1, c.turn, code_span_text(&c.tool));
        out.push_str(&md_fence("text", &c.text));
        out.push('\n');
    }
    out.push_str("### Final message\n\n");
    match &d.final_message {
        Some(text) => out.push_str(&md_fence("text", text)),
        None => out.push_str("None: the predecessor wrote no text.\n"),
    }
}

fn digest_html(out: &mut String, d: &TrajectoryDigest) {
    let _ = write!(
        out,
        "<ul><li>{} turns, {} tool calls ({} answered with a tool error), {} submission(s); ended {}</li><li>Files the final state changes: {}</li>",
        d.turns,
        d.commands.len(),
        d.commands.iter().filter(|c| c.failed).count(),
        d.submissions.len(),
        html(d.end_reason.as_deref().unwrap_or("unknown")),
        html(&list(&d.files_touched))
    );
    for (k, automatic, summary) in &d.submissions {
        let how = if *automatic { "automatic" } else { "by the agent" };
        let _ = write!(out, "<li>Submission {k} ({how}): {}</li>", html(summary.as_deref().unwrap_or("no summary")));
    }
    if d.truncated {
        out.push_str("<li>The stored trajectory is cut after a crash; its last event is missing.</li>");
    }
    out.push_str("</ul><h3>Commands and tool calls</h3><ol>");
    for c in &d.commands {
        let failed = if c.failed { " (tool error)" } else { "" };
        let _ = write!(out, "<li>turn {} <code>{}</code>{failed}<pre>{}</pre></li>", c.turn, html(&c.tool), html(&c.text));
    }
    out.push_str("</ol><h3>Final message</h3>");
    match &d.final_message {
        Some(text) => {
            let _ = write!(out, "<pre>{}</pre>", html(text));
        }
        None => out.push_str("<p>None: the predecessor wrote no text.</p>"),
    }
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1a202c;line-height:1.45}\
pre{background:#f7fafc;border:1px solid #e2e8f0;padding:.5rem;overflow-x:auto;white-space:pre-wrap}.meta{color:#4a5568}\
.diff .add{color:#22543d;background:#f0fff4}.diff .del{color:#742a2a;background:#fff5f5}table{border-collapse:collapse}th,td{border:1px solid #e2e8f0;padding:.25rem .5rem}";

/// A self-contained page: inline CSS, nothing loaded, no script can run.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"><title>{}</title><style>{CSS}</style></head><body>{body}</body></html>\n",
        html(title)
    )
}

/// Writes every bundle, the index pages and the blank sheet into `review_dir`, replacing the
/// bundles and pages written before. Other files there (a reviewer's copy of the sheet) are
/// left alone, and a `sheet.csv` that differs from the blank sheet of `previous` — someone
/// filled it in place — is renamed to `sheet.filled-<n>.csv` (the path is returned) rather
/// than overwritten.
///
/// # Errors
/// I/O errors.
pub fn write_bundles(
    review_dir: &Path,
    candidates: &[&ScreenedRun],
    previous: &[&ScreenedRun],
    summarizer: Option<&dyn TrajectorySummarizer>,
) -> Result<Option<PathBuf>, ResidualizeError> {
    fs_err::create_dir_all(review_dir)?;
    let kept_sheet = keep_filled_sheet(review_dir, previous)?;
    for entry in fs_err::read_dir(review_dir)? {
        let entry = entry?;
        // Every subdirectory is a bundle this function wrote.
        if entry.file_type()?.is_dir() {
            fs_err::remove_dir_all(entry.path())?;
        }
    }
    let mut index_md = String::from("# Candidate residual states for review\n\n");
    let _ = writeln!(
        index_md,
        "{} candidate(s). Each reviewer fills a copy of `sheet.csv` (rubric `{RUBRIC}`: `task_directed` and `consistent`, `yes` or `no`), then:\n",
        candidates.len()
    );
    index_md.push_str(&md_fence("sh", "specgap residualize DIR --review ALICE=alice.csv --review BOB=bob.csv --write-to PACKAGES"));
    index_md.push_str("\n| candidate | task | predecessor | turns | failing tests | files |\n| --- | --- | --- | ---: | ---: | --- |\n");
    let mut rows_html = String::new();
    for c in candidates {
        let bundle = Bundle::collect(c, summarizer)?;
        let dir = review_dir.join(&c.episode);
        fs_err::create_dir_all(&dir)?;
        fs_err::write(dir.join("review.md"), bundle.markdown())?;
        fs_err::write(dir.join("review.html"), bundle.html())?;
        fs_err::write(dir.join("state.diff"), &bundle.diff)?;
        let _ = writeln!(
            index_md,
            "| [{id}]({id}/review.md) | {} | {} | {} | {} | {} |",
            md_inline(&c.task),
            md_inline(&c.agent),
            c.steps,
            c.failing_tests.len(),
            md_inline(&list(&c.substantive_files)),
            id = md_inline(&c.episode),
        );
        let _ = write!(
            rows_html,
            "<tr><td><a href=\"{id}/review.html\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html(&c.task),
            html(&c.agent),
            c.steps,
            c.failing_tests.len(),
            html(&list(&c.substantive_files)),
            id = html(&c.episode),
        );
    }
    fs_err::write(review_dir.join("index.md"), index_md)?;
    let body = format!(
        "<h1>Candidate residual states for review</h1><p>{} candidate(s). Each reviewer fills a copy of <code>sheet.csv</code> (rubric <code>{RUBRIC}</code>).</p><table><tr><th>candidate</th><th>task</th><th>predecessor</th><th>turns</th><th>failing tests</th><th>files</th></tr>{rows_html}</table>",
        candidates.len()
    );
    fs_err::write(review_dir.join("index.html"), page("Candidate residual states", &body))?;
    fs_err::write(review_dir.join("sheet.csv"), blank_sheet(candidates)?)?;
    Ok(kept_sheet)
}

/// Renames `review_dir/sheet.csv` aside when it is not the blank sheet of `previous`.
fn keep_filled_sheet(review_dir: &Path, previous: &[&ScreenedRun]) -> Result<Option<PathBuf>, ResidualizeError> {
    let sheet = review_dir.join("sheet.csv");
    let Ok(current) = std::fs::read(&sheet) else { return Ok(None) };
    if current == blank_sheet(previous)? {
        return Ok(None);
    }
    let mut n = 1;
    let aside = loop {
        let candidate = review_dir.join(format!("sheet.filled-{n}.csv"));
        if !candidate.exists() {
            break candidate;
        }
        n += 1;
    };
    fs_err::rename(&sheet, &aside)?;
    Ok(Some(aside))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Screen;
    use crate::summary::CommandLine;

    fn candidate() -> ScreenedRun {
        ScreenedRun {
            run: "/runs/gen".into(),
            episode: "0123456789abcdef".into(),
            task: "t|x".into(),
            task_hash: "h".into(),
            task_path: None,
            agent: "chat:<m>".into(),
            condition: "blind".into(),
            start: "clean".into(),
            repeat: 0,
            status: "finished".into(),
            end_reason: Some("submitted".into()),
            steps: 2,
            final_submission: Some(1),
            failing_tests: vec!["t_1".into()],
            changed_files: vec!["a.py".into(), "m.pyc".into()],
            substantive_files: vec!["a.py".into()],
            diff_sha256: None,
            normalized_sha256: None,
            machine_sha256: None,
            screen: Screen::Candidate,
        }
    }

    /// The lines of a Markdown text outside fenced code blocks.
    fn outside_fences(markdown: &str) -> String {
        let mut fence: Option<String> = None;
        let mut out = String::new();
        for line in markdown.lines() {
            let ticks: String = line.chars().take_while(|c| *c == '`').collect();
            match &fence {
                Some(open) if line.trim_end() == open => fence = None,
                Some(_) => {}
                None if ticks.len() >= 3 => fence = Some(ticks),
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out
    }

    #[test]
    fn agent_text_stays_inside_code_blocks_and_tool_names_show_as_written() {
        let c = candidate();
        let digest = TrajectoryDigest {
            turns: 2,
            commands: vec![
                CommandLine { turn: 1, tool: "run_project".into(), text: "```\n<script>x()</script>\n```".into(), failed: false },
                CommandLine { turn: 2, tool: "we`ird\ntool".into(), text: "ok".into(), failed: true },
            ],
            files_touched: c.changed_files.clone(),
            submissions: vec![(1, false, Some("<b>done</b>".into()))],
            final_message: Some("````\n<img src=x onerror=alert(1)>".into()),
            end_reason: Some("submitted".into()),
            truncated: false,
        };
        let bundle = Bundle {
            candidate: &c,
            request: Ok("Do <this>.".into()),
            diff: b"diff --git a/a.py b/a.py\n+<script>y()</script>\n".to_vec(),
            digest: Ok(digest),
            model_summary: None,
        };
        let markdown = bundle.markdown();
        let prose = outside_fences(&markdown);
        for markup in ["<script", "<img", "<b>", "<this>", "<m>"] {
            assert!(!prose.contains(markup), "{markup} outside a code block:\n{prose}");
        }
        assert!(prose.contains("1. turn 1 `run_project`\n"), "{prose}");
        assert!(prose.contains("2. turn 2 `weirdtool` (tool error)\n"), "{prose}");
        assert!(prose.contains("Incidental artifacts (kept in the state, ignored by the filter): m.pyc"), "{prose}");
        assert!(markdown.contains("`````text\n````\n<img src=x onerror=alert(1)>\n`````\n"), "{markdown}");
        let html = bundle.html();
        for markup in ["<script", "<img", "<b>done", "<this>", "<m>"] {
            assert!(!html.contains(markup), "{markup} in the page");
        }
        assert!(html.contains("Content-Security-Policy"));
    }

    #[test]
    fn the_blank_sheet_lists_every_candidate_with_empty_labels() {
        let c = candidate();
        let sheet = String::from_utf8(blank_sheet(&[&c]).unwrap()).unwrap();
        assert_eq!(sheet, "candidate,task,predecessor,task_directed,consistent,note\n0123456789abcdef,t|x,chat:<m>,,,\n");
    }
}
