//! The audit crate's errors.

use std::path::PathBuf;

/// Why an audit step failed.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A run store could not be read or written.
    #[error("run {dir}")]
    Store {
        /// The run directory.
        dir: PathBuf,
        /// The store's error (boxed: it is large).
        #[source]
        source: Box<specgap_store::StoreError>,
    },
    /// A file could not be read or written (the path is in the message of `fs_err`).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A rubric file or name is not usable.
    #[error("rubric {name}: {message}")]
    Rubric {
        /// The rubric's name or file.
        name: String,
        /// What is wrong, lowercase.
        message: String,
    },
    /// A label sheet is malformed or does not match its sample.
    #[error("{}{}: {message}", path.display(), row.map(|r| format!(", row {r}")).unwrap_or_default())]
    Sheet {
        /// The sheet.
        path: PathBuf,
        /// The row at fault as a spreadsheet numbers it (the header is row 1), when one is.
        row: Option<u64>,
        /// What is wrong, lowercase.
        message: String,
    },
    /// The request asks for something the inputs cannot give.
    #[error("{0}")]
    Request(String),
    /// A stored user request cannot be rebuilt.
    #[error("episode {episode}, user request {request}")]
    Rebuild {
        /// The episode.
        episode: String,
        /// The request's number.
        request: u32,
        /// Why.
        #[source]
        source: specgap_protocol::request::RebuildError,
    },
    /// Every resample request of a batch failed: there is no reply to label, so no sheet was
    /// written.
    #[error(
        "every one of the {failed} resample requests of {batch} failed, so there is nothing to label and no label sheet was written (first error: {first_error}); fix the user model's endpoint or key and run the same command again: failed requests are sent again"
    )]
    NoReplies {
        /// The batch.
        batch: String,
        /// Its requests, all failed.
        failed: usize,
        /// The first failure's words.
        first_error: String,
    },
    /// Residual candidates could not be screened (`specgap_residualize` Stage II).
    #[error("cannot screen the residual candidates of run {dir}")]
    Residualize {
        /// The run directory.
        dir: PathBuf,
        /// The pipeline's error (boxed: it is large).
        #[source]
        source: Box<specgap_residualize::ResidualizeError>,
    },
    /// A statistic could not be computed.
    #[error("statistics")]
    Stats(#[from] specgap_stats::StatsError),
    /// Something could not be serialized.
    #[error("cannot write {what}: {message}")]
    Serialize {
        /// What.
        what: String,
        /// The serializer's words.
        message: String,
    },
}

impl AuditError {
    /// A closure turning a store error of run `dir` into an [`AuditError::Store`].
    pub fn store(dir: &std::path::Path) -> impl Fn(specgap_store::StoreError) -> AuditError + '_ {
        move |source| AuditError::Store { dir: dir.to_path_buf(), source: Box::new(source) }
    }
}
