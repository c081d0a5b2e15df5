//! Human review of a synthesized package (seed 000 §4.2: after the Calibrator, people check
//! each task for **consistency**, **plausibility**, **inferability** and **no leak**).
//!
//! ## Pages
//! [`write_review_pages`] writes into a directory `review.md` and `review.html` (the same
//! content: the four criteria and what each asks, the partial and full instructions, the
//! requirements with their discovery paths, the failure modes, the recorded sufficiency
//! result) and `sheet.csv`, the blank sheet each reviewer fills. Everything the package holds
//! is escaped (Markdown code fences longer than any backtick run; entity-escaped HTML in a
//! page that loads and runs nothing).
//!
//! ## Sheets
//! CSV (RFC 4180, UTF-8), a header then one row per criterion:
//!
//! | column | meaning |
//! | --- | --- |
//! | `criterion` | `consistency`, `plausibility`, `inferability` or `no-leak` |
//! | `verdict` | `pass` or `fail` (case-insensitive) |
//! | `note` | optional free text |
//!
//! Other columns (the blank sheet's `question`) are ignored. Every criterion exactly once; an
//! unknown or repeated criterion, a missing one, or another verdict is an error naming the
//! sheet and its row. Each reviewer fills their own copy, named at import
//! (`--review ana=ana.csv`).
//!
//! ## Import
//! [`import_review`] first re-runs the acceptance checks (`check --strict`, every row but the
//! `synthesis:*` ones, which are about this record): a package repaired after an earlier
//! review must still pass them, and a failing row refuses the import. Then it writes the
//! verdicts into the package's `synthesis.toml` ([`specgap_task::synthesis`]): `review.version`
//! one more than the last import's (1 for the first), `status` `reviewed` when every reviewer
//! passed every criterion, `rejected` otherwise.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use specgap_protocol::escape::{html, md_fence, md_inline};
use specgap_task::Judge;
use specgap_task::check::{CheckOptions, Verdict, check_package_with};
use specgap_task::synthesis::{
    CriterionResult, CriterionVerdict, REVIEW_CRITERIA, ReviewRecord, ReviewStatus, SYNTHESIS_FILE, SufficiencyResult, SynthesisRecord,
};

/// What each criterion asks the reviewer, in this project's words (seed 000 §4.2).
pub const CRITERIA_QUESTIONS: [(&str, &str); 4] = [
    ("consistency", "Do the instructions, the requirements, the evaluator and the workspace describe one and the same task?"),
    ("plausibility", "Would a real owner ask for this task this way, and hold these unstated requirements?"),
    (
        "inferability",
        "Can each withheld requirement be discovered from the workspace (its discovery path) or by asking the owner, without guessing?",
    ),
    ("no-leak", "Does the partial instruction, or any file an agent sees, give away a withheld requirement outright?"),
];

/// Why review pages could not be written or verdicts imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// The package does not load.
    #[error("the package {} does not load", path.display())]
    Load {
        /// The package.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<specgap_task::LoadError>,
    },
    /// The package has no `synthesis.toml`: `specgap synthesize` did not build it.
    #[error("{} has no synthesis.toml: only a package `specgap synthesize` built can be reviewed this way", path.display())]
    NotSynthesized {
        /// The package.
        path: PathBuf,
    },
    /// A file could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A sheet is not a valid review sheet.
    #[error("review sheet {} is malformed at {place}: {problem}", path.display())]
    Sheet {
        /// The sheet.
        path: PathBuf,
        /// `row 3`, `the header`, ...
        place: String,
        /// What is wrong.
        problem: String,
    },
    /// No sheet was given.
    #[error("no review sheet given: name each reviewer's sheet as NAME=CSV")]
    NoSheets,
    /// The acceptance checks fail on the package as it stands (a repair broke it).
    #[error("the acceptance checks fail on {}, so the review is not recorded: {}", path.display(), failures.join("; "))]
    Acceptance {
        /// The package.
        path: PathBuf,
        /// `row: reason` per failing row.
        failures: Vec<String>,
    },
}

/// The files [`write_review_pages`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewPages {
    /// `review.md`.
    pub markdown: PathBuf,
    /// `review.html`.
    pub html: PathBuf,
    /// `sheet.csv`, the blank sheet.
    pub sheet: PathBuf,
}

fn load_synthesized(package: &Path) -> Result<(specgap_task::TaskPackage, SynthesisRecord), ReviewError> {
    let loaded = specgap_task::load(package).map_err(|source| ReviewError::Load { path: package.to_owned(), source: Box::new(source) })?;
    let record = loaded.synthesis().cloned().ok_or_else(|| ReviewError::NotSynthesized { path: package.to_owned() })?;
    Ok((loaded, record))
}

/// Writes the review pages and the blank sheet of the synthesized `package` into `dir`
/// (created if missing; the three files are replaced).
///
/// # Errors
/// [`ReviewError::Load`], [`ReviewError::NotSynthesized`], [`ReviewError::Io`].
pub fn write_review_pages(package: &Path, dir: &Path) -> Result<ReviewPages, ReviewError> {
    let (loaded, record) = load_synthesized(package)?;
    let write = |path: PathBuf, text: String| -> Result<PathBuf, ReviewError> {
        fs_err::write(&path, text).map_err(|source| ReviewError::Io { action: "write", path: path.clone(), source })?;
        Ok(path)
    };
    fs_err::create_dir_all(dir).map_err(|source| ReviewError::Io { action: "write", path: dir.to_owned(), source })?;
    Ok(ReviewPages {
        markdown: write(dir.join("review.md"), markdown_page(&loaded, &record))?,
        html: write(dir.join("review.html"), html_page(&loaded, &record))?,
        sheet: write(dir.join("sheet.csv"), blank_sheet())?,
    })
}

/// The blank sheet: a header and one row per criterion with its question.
pub fn blank_sheet() -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut rows = vec![["criterion", "question", "verdict", "note"].map(str::to_owned)];
    rows.extend(CRITERIA_QUESTIONS.iter().map(|(c, q)| [(*c).to_owned(), (*q).to_owned(), String::new(), String::new()]));
    for row in rows {
        // Writing into a Vec cannot fail.
        let _ = writer.write_record(&row);
    }
    writer.into_inner().map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default()
}

fn sufficiency_line(record: &SynthesisRecord) -> String {
    let s = &record.sufficiency;
    match s.result {
        SufficiencyResult::Pass => "passed: an implementation from instruction.full.md alone passed every requirement".into(),
        SufficiencyResult::Fail if !s.failing.is_empty() => format!("failed: the implementation failed {}", s.failing.join(", ")),
        SufficiencyResult::Fail => format!("failed: {}", s.failure.as_deref().unwrap_or("no reason recorded")),
        SufficiencyResult::Skipped => "not run (the synthesis had no implementer)".into(),
    }
}

fn markdown_page(package: &specgap_task::TaskPackage, record: &SynthesisRecord) -> String {
    let mut page = format!("# Review: {}\n\n", md_inline(package.name()));
    let _ = writeln!(page, "Synthesized from `{}`. Sufficiency test: {}.\n", md_inline(&record.source), sufficiency_line(record));
    if let Some(review) = &record.review {
        let _ = writeln!(page, "Last review: version {}, {:?}.\n", review.version, review.status);
    }
    page.push_str("## Criteria\n\nFill `sheet.csv`: `pass` or `fail` per criterion, and a note.\n\n");
    for (criterion, question) in CRITERIA_QUESTIONS {
        let _ = writeln!(page, "- **{criterion}**: {question}");
    }
    page.push_str("\n## Partial instruction (what the agent is given)\n\n");
    page.push_str(&md_fence("text", package.instruction()));
    page.push_str("\n## Full instruction\n\n");
    page.push_str(&md_fence("text", package.instruction_full().unwrap_or("(none)")));
    page.push_str("\n## Requirements\n\n| priority | id | stated | requirement | discovery |\n| --- | --- | --- | --- | --- |\n");
    for r in package.requirements() {
        let _ = writeln!(
            page,
            "| {} | {} | {} | {} | {} |",
            r.priority,
            md_inline(&r.id),
            if r.stated { "yes" } else { "no" },
            md_inline(&r.description),
            md_inline(&r.discovery)
        );
    }
    page.push_str("\n## Failure modes (observations.toml)\n\n");
    for o in package.observations() {
        let _ = writeln!(page, "- {}", md_inline(&serde_json::to_string(o).unwrap_or_default()));
    }
    page
}

fn html_page(package: &specgap_task::TaskPackage, record: &SynthesisRecord) -> String {
    let mut page = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\"><title>Review: {0}</title></head><body>\n<h1>Review: {0}</h1>\n",
        html(package.name())
    );
    let _ = writeln!(
        page,
        "<p>Synthesized from <code>{}</code>. Sufficiency test: {}.</p>",
        html(&record.source),
        html(&sufficiency_line(record))
    );
    page.push_str("<h2>Criteria</h2>\n<ul>\n");
    for (criterion, question) in CRITERIA_QUESTIONS {
        let _ = writeln!(page, "<li><b>{criterion}</b>: {}</li>", html(question));
    }
    page.push_str("</ul>\n<h2>Partial instruction</h2>\n");
    let _ = writeln!(page, "<pre>{}</pre>", html(package.instruction()));
    page.push_str("<h2>Full instruction</h2>\n");
    let _ = writeln!(page, "<pre>{}</pre>", html(package.instruction_full().unwrap_or("(none)")));
    page.push_str(
        "<h2>Requirements</h2>\n<table>\n<tr><th>priority</th><th>id</th><th>stated</th><th>requirement</th><th>discovery</th></tr>\n",
    );
    for r in package.requirements() {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.priority,
            html(&r.id),
            if r.stated { "yes" } else { "no" },
            html(&r.description),
            html(&r.discovery)
        );
    }
    page.push_str("</table>\n</body></html>\n");
    page
}

/// One reviewer's parsed sheet: criterion → (verdict, note).
type Sheet = BTreeMap<String, (CriterionResult, String)>;

/// Reads one reviewer's sheet (module guide "Sheets").
fn read_sheet(path: &Path) -> Result<Sheet, ReviewError> {
    let bad = |place: String, problem: String| ReviewError::Sheet { path: path.to_owned(), place, problem };
    let text = fs_err::read_to_string(path).map_err(|source| ReviewError::Io { action: "read", path: path.to_owned(), source })?;
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| bad("the header".into(), e.to_string()))?.clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(criterion_at), Some(verdict_at)) = (column("criterion"), column("verdict")) else {
        return Err(bad("the header".into(), "needs the columns `criterion` and `verdict`".into()));
    };
    let note_at = column("note");
    let mut verdicts = BTreeMap::new();
    for (index, row) in reader.records().enumerate() {
        let place = format!("row {}", index + 2);
        let row = row.map_err(|e| bad(place.clone(), e.to_string()))?;
        let criterion = row.get(criterion_at).unwrap_or_default().trim().to_owned();
        if !REVIEW_CRITERIA.contains(&criterion.as_str()) {
            return Err(bad(place, format!("unknown criterion `{criterion}`; expected one of {}", REVIEW_CRITERIA.join(", "))));
        }
        let verdict = match row.get(verdict_at).unwrap_or_default().trim().to_ascii_lowercase().as_str() {
            "pass" => CriterionResult::Pass,
            "fail" => CriterionResult::Fail,
            other => return Err(bad(place, format!("verdict `{other}` of `{criterion}` is neither `pass` nor `fail`"))),
        };
        let note = note_at.and_then(|at| row.get(at)).unwrap_or_default().trim().to_owned();
        if verdicts.insert(criterion.clone(), (verdict, note)).is_some() {
            return Err(bad(place, format!("criterion `{criterion}` appears twice")));
        }
    }
    if let Some(missing) = REVIEW_CRITERIA.iter().find(|c| !verdicts.contains_key(**c)) {
        return Err(bad("the end".into(), format!("no row for criterion `{missing}`")));
    }
    Ok(verdicts)
}

/// Imports reviewers' sheets (`(reviewer, sheet)` pairs) into `package`'s `synthesis.toml`
/// after re-running the acceptance checks (module guide); returns the review recorded.
///
/// # Errors
/// [`ReviewError::NoSheets`], [`ReviewError::Sheet`], [`ReviewError::Load`],
/// [`ReviewError::NotSynthesized`], [`ReviewError::Acceptance`], [`ReviewError::Io`].
pub fn import_review(package: &Path, sheets: &[(String, PathBuf)], judge: &dyn Judge) -> Result<ReviewRecord, ReviewError> {
    if sheets.is_empty() {
        return Err(ReviewError::NoSheets);
    }
    let parsed: Vec<(String, Sheet)> =
        sheets.iter().map(|(name, path)| read_sheet(path).map(|v| (name.clone(), v))).collect::<Result<_, _>>()?;
    let (loaded, mut record) = load_synthesized(package)?;
    let report = check_package_with(&loaded, judge, &CheckOptions { strict: true });
    let failures: Vec<String> = report
        .checks
        .iter()
        .filter(|row| row.result == Verdict::Fail && !row.check.starts_with("synthesis:"))
        .map(|row| format!("{}: {}", row.check, row.reason))
        .collect();
    if !failures.is_empty() {
        return Err(ReviewError::Acceptance { path: package.to_owned(), failures });
    }
    let mut criteria = Vec::new();
    for criterion in REVIEW_CRITERIA {
        for (reviewer, verdicts) in &parsed {
            let (verdict, note) = verdicts.get(criterion).cloned().unwrap_or((CriterionResult::Fail, String::new()));
            criteria.push(CriterionVerdict { criterion: criterion.to_owned(), verdict, reviewer: reviewer.clone(), note });
        }
    }
    let status = if criteria.iter().all(|c| c.verdict == CriterionResult::Pass) { ReviewStatus::Reviewed } else { ReviewStatus::Rejected };
    let version = record.review.as_ref().map_or(1, |r| r.version + 1);
    let review = ReviewRecord { version, status, criteria };
    record.review = Some(review.clone());
    let path = package.join(SYNTHESIS_FILE);
    let text = record.to_toml().map_err(|e| ReviewError::Io { action: "write", path: path.clone(), source: std::io::Error::other(e) })?;
    fs_err::write(&path, text).map_err(|source| ReviewError::Io { action: "write", path, source })?;
    Ok(review)
}
