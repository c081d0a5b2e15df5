//! The panels' one error type: every failure names the file, episode or model concerned.

use std::path::PathBuf;

/// Why a panel cannot be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum PanelError {
    /// A panel or prompt file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A panel file is not valid TOML of the panel format.
    #[error("{} is not a panel file: expected [[model]] tables with model, base_url, api_key_env and args (docs in README \"Model panels\")", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML error.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A panel file names no model.
    #[error("{} names no model; add at least one [[model]] table", path.display())]
    NoModels {
        /// The file.
        path: PathBuf,
    },
    /// A model entry is unusable.
    #[error("{}: model {seat} (counting from 0): {problem}", path.display())]
    BadModel {
        /// The file.
        path: PathBuf,
        /// 0-based seat.
        seat: usize,
        /// What is wrong, lowercase.
        problem: String,
    },
    /// A model client cannot be built.
    #[error("cannot build the client of panel model `{model}`")]
    Client {
        /// The model.
        model: String,
        /// Why.
        #[source]
        source: specgap_agents::chat::ClientError,
    },
    /// The run store failed.
    #[error(transparent)]
    Store(#[from] specgap_store::StoreError),
    /// Several panels of one use have verdicts in a store and none was named.
    #[error("{what}")]
    Choice {
        /// What to do, lowercase.
        what: String,
    },
    /// A panel stored in `run.toml` cannot be written or read back.
    #[error("the stored panel configuration is not usable: {0}")]
    Stored(String),
    /// A task package named in `run.toml` cannot be loaded (user review).
    #[error("cannot load the task package {}: {reason}", path.display())]
    Package {
        /// The package path.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// A user review cannot be written.
    #[error(transparent)]
    Review(#[from] specgap_report::ReportError),
    /// A delivered workspace or an extraction directory cannot be prepared.
    #[error("episode {episode}: {message}")]
    Workspace {
        /// The episode.
        episode: String,
        /// What failed, lowercase.
        message: String,
    },
}
