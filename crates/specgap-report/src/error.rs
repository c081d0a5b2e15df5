//! The one error type of this crate.

use std::path::PathBuf;

use specgap_stats::StatsError;
use specgap_store::StoreError;

/// Why a report or a comparison could not be built.
///
/// A measure that does not apply, or a package that cannot be read, is *not* an error: the
/// measure is left out and the report carries a warning. Errors are reserved for what stops
/// the whole report: an unreadable store, bad options, a failed write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The run store could not be opened or read.
    #[error("cannot read the run store in {dir}")]
    Store {
        /// The run directory.
        dir: PathBuf,
        /// What the store reported (boxed: store errors are large).
        #[source]
        source: Box<StoreError>,
    },
    /// No run was given.
    #[error("expected at least one run directory to report on")]
    NoRuns,
    /// One run directory given twice to a report (compared after canonicalizing): its
    /// episodes would count twice and pose as seed replicates of themselves.
    #[error("{}", duplicate_run_message(.dir, .again))]
    DuplicateRun {
        /// The directory as first given.
        dir: PathBuf,
        /// The same directory as given again (perhaps spelled differently).
        again: PathBuf,
    },
    /// Two runs hold the same episodes (a run and its merge, or two runs of one
    /// configuration): a report over both would count each of them twice.
    #[error(
        "runs {} and {} both hold {shared} episode(s) (e.g. {example}); a report over both would count them twice: report a merge of them (`specgap merge` keeps one copy of each episode two runs hold alike and refuses differing copies) or leave one out",
        .first.display(),
        .again.display()
    )]
    SharedEpisodes {
        /// The run given first.
        first: PathBuf,
        /// The later run holding episodes of the first.
        again: PathBuf,
        /// How many of its episodes the first run holds too.
        shared: usize,
        /// One of them.
        example: String,
    },
    /// A `--group-by` name that is not a dimension.
    #[error("unknown group-by dimension `{0}`; expected agent, condition, start, family or task")]
    UnknownDimension(String),
    /// A part of a selection (`specgap compare --a` / `--b`) that is not `key=value`.
    #[error(
        "`{part}` in {} is not key=value; expected key=value pairs, comma-separated, with key agent, condition, start, family or task",
        selection_place(.flag, .text)
    )]
    BadSelection {
        /// The flag the selection came from (`--a`, `--b`); empty when not from a flag.
        flag: String,
        /// The whole selection as given.
        text: String,
        /// The part that is not `key=value`.
        part: String,
    },
    /// A selection key that is not a dimension.
    #[error(
        "unknown key `{key}` in {}; expected key=value pairs, comma-separated, with key agent, condition, start, family or task",
        selection_place(.flag, .text)
    )]
    UnknownSelectionKey {
        /// The flag the selection came from (`--a`, `--b`); empty when not from a flag.
        flag: String,
        /// The whole selection as given.
        text: String,
        /// The unknown key.
        key: String,
    },
    /// A compared side with no scored episode after its selection.
    #[error("run {side} has no scored episode matching its selection")]
    EmptySide {
        /// `A` or `B`.
        side: &'static str,
    },
    /// A measure name `specgap compare` does not know.
    #[error(
        "unknown measure `{measure}`; expected one of Score@1, Score@4, Success@1, Success@4, Quality, DSR, Valid, Recall, Precision, Ask-F1"
    )]
    UnknownMeasure {
        /// The name as given.
        measure: String,
    },
    /// A `specgap compare --family` file that cannot be read, parsed or used.
    #[error("family file {}: {reason}", .path.display())]
    FamilyFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, as a phrase.
        reason: String,
    },
    /// A statistic failed on input this crate built (a bug, reported rather than hidden).
    #[error("statistics for {measure} failed")]
    Stats {
        /// The measure being computed.
        measure: String,
        /// The statistics error.
        #[source]
        source: StatsError,
    },
    /// The report could not be serialized.
    #[error("cannot serialize the report as JSON")]
    Json(#[source] serde_json::Error),
    /// `--judge` names no judge with verdicts in the runs, or `panel` matches several panels.
    #[error("{0}")]
    JudgeChoice(String),
    /// A user-review file (`reviews/user-*.json`) could not be read, parsed or written, or the
    /// review named for an exclusion is not in the runs.
    #[error("user review {}: {reason}", .path.display())]
    Review {
        /// The file (or the reviewer name asked for).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `plan-study` was asked for something it cannot plan (no pilot data for a measure, an
    /// invalid assumption or target).
    #[error("cannot plan the study: {reason}")]
    StudyPlan {
        /// What is missing or invalid.
        reason: String,
    },
}

/// Where a selection was given, for messages: `` `--a agnt=x` `` or `` the selection `agnt=x` ``.
fn selection_place(flag: &str, text: &str) -> String {
    if flag.is_empty() { format!("the selection `{text}`") } else { format!("`{flag} {text}`") }
}

/// The message of [`ReportError::DuplicateRun`]: the second spelling only when it differs.
fn duplicate_run_message(dir: &std::path::Path, again: &std::path::Path) -> String {
    // Compared as spelled: `Path` equality would call `run` and `run/.` the same.
    if dir.as_os_str() == again.as_os_str() {
        format!("run directory {} is given twice; give each run once (seed replicates are different runs)", dir.display())
    } else {
        format!(
            "run directory {} is given twice (again as {}); give each run once (seed replicates are different runs)",
            dir.display(),
            again.display()
        )
    }
}
