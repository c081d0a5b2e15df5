//! `synthesis.toml`: what `specgap synthesize` records in a package it built (seed 000 §4.2,
//! App. E), read by the loader and reported by `check` (`synthesis:sufficiency`,
//! `synthesis:review`).
//!
//! ```toml
//! format = 1
//! source = "examples/tasks/payment-retry"
//!
//! [sufficiency]            # App. E.3 item 4, as the synthesis ran it
//! result = "pass"          # "pass" | "fail" | "skipped" (no implementer was given)
//! failing = []             # requirement ids the implementation failed
//!
//! [review]                 # absent until reviewers' verdicts are imported
//! version = 1              # 1 for the first import, +1 for each later one
//! status = "reviewed"      # "reviewed" (every criterion passed) | "rejected"
//! [[review.criteria]]
//! criterion = "consistency"  # consistency | plausibility | inferability | no-leak (§4.2)
//! verdict = "pass"           # "pass" | "fail"
//! reviewer = "ana"
//! note = ""
//! ```
//!
//! The file is part of the package (and of its content hash, like `NOTES.md`): a review
//! import changes the hash, so a reviewed package is a new version of the task
//! (docs/decisions.md "synthesize: synthesis.toml").

use serde::{Deserialize, Serialize};

/// The file's name at the package top level.
pub const SYNTHESIS_FILE: &str = "synthesis.toml";

/// The version of `synthesis.toml` this specgap reads and writes.
pub const SYNTHESIS_FORMAT: u32 = 1;

/// The four human-review criteria of seed 000 §4.2, in review order.
pub const REVIEW_CRITERIA: [&str; 4] = ["consistency", "plausibility", "inferability", "no-leak"];

/// The parsed `synthesis.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynthesisRecord {
    /// [`SYNTHESIS_FORMAT`].
    pub format: u32,
    /// The source task the synthesis started from, as given to it.
    pub source: String,
    /// The sufficiency test's result (App. E.3 item 4).
    pub sufficiency: SufficiencyRecord,
    /// The human review, once imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
}

/// The sufficiency test as the synthesis ran it on the accepted package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SufficiencyRecord {
    /// Whether it passed.
    pub result: SufficiencyResult,
    /// Requirement ids the implementation failed, in priority order.
    #[serde(default)]
    pub failing: Vec<String>,
    /// Why it failed, when it failed for something else than requirements (an evaluation
    /// error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// `pass`, `fail` or `skipped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SufficiencyResult {
    /// The implementation from the full instruction passed every requirement.
    Pass,
    /// It failed some requirement, or could not be evaluated.
    Fail,
    /// The synthesis ran no sufficiency test (no implementer).
    Skipped,
}

/// An imported human review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRecord {
    /// 1 for the first import, one more for each later import.
    pub version: u32,
    /// `reviewed` when every criterion passed, `rejected` otherwise.
    pub status: ReviewStatus,
    /// One verdict per criterion of [`REVIEW_CRITERIA`], in that order.
    pub criteria: Vec<CriterionVerdict>,
}

/// `reviewed` or `rejected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewStatus {
    /// Every criterion passed.
    Reviewed,
    /// Some criterion failed.
    Rejected,
}

/// One reviewer's verdict on one criterion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CriterionVerdict {
    /// One of [`REVIEW_CRITERIA`].
    pub criterion: String,
    /// `pass` or `fail`.
    pub verdict: CriterionResult,
    /// Who judged it.
    pub reviewer: String,
    /// Why (may be empty).
    #[serde(default)]
    pub note: String,
}

/// `pass` or `fail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CriterionResult {
    /// The criterion holds.
    Pass,
    /// It does not.
    Fail,
}

impl SynthesisRecord {
    /// The record as `synthesis.toml` text.
    ///
    /// # Errors
    /// The TOML serializer's error (not expected for this shape).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}
