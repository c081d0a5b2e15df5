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
    /// A `--group-by` name that is not a dimension.
    #[error("unknown group-by dimension `{0}`; expected agent, condition, start, family or task")]
    UnknownDimension(String),
    /// A selection (`key=value`) that does not parse.
    #[error(
        "bad selection `{0}`; expected key=value with key agent, condition, start, family or task"
    )]
    BadSelection(String),
    /// A compared side with no scored episode after its selection.
    #[error("run {side} has no scored episode matching its selection")]
    EmptySide {
        /// `A` or `B`.
        side: &'static str,
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
}
