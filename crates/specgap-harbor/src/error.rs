//! [`HarborError`]: why an import or an export could not be carried out at all (a task that is
//! merely refused is a [`crate::Refusal`], not an error).

use std::path::PathBuf;

/// An I/O or format failure of `specgap import harbor` or `specgap export-task`; every
/// variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarborError {
    /// Reading or writing a file or directory failed. The message is the path; the cause
    /// (chained) says what failed.
    #[error("{}", path.display())]
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
    /// The path to import does not exist or is not a directory.
    #[error("{}: not a directory; give a Harbor task directory (with a task.toml) or a dataset directory", path.display())]
    NotADirectory {
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

/// Adds the path to an I/O error (keeping only the underlying cause of an `fs-err` error,
/// which would name the path a second time).
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HarborError {
    let path = path.into();
    move |source| HarborError::Io { path, source: plain(source) }
}

/// A directory walk's error as an I/O error on `path`.
pub(crate) fn walk(path: impl Into<PathBuf>) -> impl FnOnce(walkdir::Error) -> HarborError {
    let path = path.into();
    move |error| {
        let path = error.path().map(PathBuf::from).unwrap_or(path);
        let source = error.into_io_error().unwrap_or_else(|| std::io::Error::other("a symbolic link loops"));
        HarborError::Io { path, source: plain(source) }
    }
}

/// The cause inside an `fs-err` error (whose message repeats the path), else the error.
fn plain(error: std::io::Error) -> std::io::Error {
    let inner = error.get_ref().and_then(|wrapper| wrapper.source()).map(ToString::to_string);
    match inner {
        Some(cause) => std::io::Error::new(error.kind(), cause),
        None => error,
    }
}
