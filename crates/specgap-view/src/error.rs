//! The viewer's error type: starting the server, reading a run, writing a static site.

use std::path::PathBuf;

/// What can go wrong in the viewer.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A run directory could not be opened as a store.
    #[error("cannot open the run {dir}")]
    Run {
        /// The directory given.
        dir: PathBuf,
        /// Why.
        #[source]
        source: Box<specgap_store::StoreError>,
    },
    /// A synthesis's journal could not be read (its message names the file).
    #[error("cannot open the synthesis {dir}")]
    Synthesis {
        /// The directory given.
        dir: PathBuf,
        /// Why.
        #[source]
        source: Box<specgap_synth::journal::JournalError>,
    },
    /// A synthesis's rollouts directory could not be listed.
    #[error("cannot list the rollouts in {dir}")]
    Rollouts {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No run directory was given.
    #[error("no run directory given: `specgap view RUN...` needs at least one (a run store, or a synthesis's output directory)")]
    NoRuns,
    /// Reading the store failed while answering.
    #[error("cannot read the run store")]
    Store(#[source] Box<specgap_store::StoreError>),
    /// An episode could not be exported as ATIF.
    #[error("cannot export the episode as ATIF")]
    Export(#[source] Box<specgap_atif::ExportError>),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server's runtime or thread could not start.
    #[error("cannot start the viewer's server")]
    Runtime(#[source] std::io::Error),
    /// No random token could be drawn from the operating system.
    #[error("cannot draw a random token from the operating system: {0}")]
    Random(String),
    /// Writing the static site failed (the `fs_err` error names the path).
    #[error("cannot write the static site")]
    Write(#[source] std::io::Error),
    /// The static site's output directory is not empty and is not an earlier static site.
    #[error("{dir} is not empty and holds no earlier static site (no index.html with the viewer's marker); give an empty or new directory")]
    OutputNotEmpty {
        /// The directory.
        dir: PathBuf,
    },
    /// A value could not be serialized as JSON.
    #[error("cannot serialize {what} as json")]
    Json {
        /// What.
        what: String,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
}

impl From<specgap_store::StoreError> for ViewError {
    fn from(e: specgap_store::StoreError) -> Self {
        ViewError::Store(Box::new(e))
    }
}

impl From<specgap_atif::ExportError> for ViewError {
    fn from(e: specgap_atif::ExportError) -> Self {
        ViewError::Export(Box::new(e))
    }
}
