//! [`HarborError`]: why an import or an export could not be carried out at all (a task that is
//! merely refused is a [`crate::Refusal`], not an error).

use std::path::PathBuf;

/// An I/O or format failure of `specgap import harbor` or `specgap export-task`; every
/// variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarborError {
    /// Reading or writing a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The output directory of a task exists already and is not empty.
    #[error("{}: exists and is not empty; import into a new directory", path.display())]
    OutputExists {
        /// The directory.
        path: PathBuf,
    },
    /// The source is neither a Harbor task (a `task.toml`) nor a dataset (directories holding
    /// one).
    #[error("{}: no Harbor task here (no task.toml in it or in a directory below it)", path.display())]
    NoTask {
        /// The directory given.
        path: PathBuf,
    },
    /// The package to export does not load.
    #[error("cannot load the package")]
    Load(#[from] specgap_task::LoadError),
    /// A package cannot be exported as a Harbor task, with the reason.
    #[error("{}: cannot be exported as a Harbor task: {reason}", path.display())]
    NotExportable {
        /// The package root.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Running the sandbox (for a gold solution) failed.
    #[error("the sandbox failed")]
    Sandbox(#[from] specgap_sandbox::SandboxError),
    /// Writing TOML failed.
    #[error("{}: cannot write TOML: {source}", path.display())]
    Toml {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: toml::ser::Error,
    },
}

/// Adds the path to an I/O error.
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HarborError {
    let path = path.into();
    move |source| HarborError::Io { path, source }
}
