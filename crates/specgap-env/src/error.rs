//! [`EnvError`]: why an environment could not be built, listed or pruned.

use std::path::PathBuf;

/// An error of this crate. File errors name the path.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A file or directory operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path operated on.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An archive entry that cannot be unpacked safely (absolute, `..`, a link leaving the root).
    #[error("{}: entry `{entry}`: {reason}", archive.display())]
    BadEntry {
        /// The archive (tarball or layer blob).
        archive: PathBuf,
        /// The entry's path as stored.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An OCI image layout that does not follow the image-spec (layout, index, manifest).
    #[error("{}: {reason}", path.display())]
    BadLayout {
        /// The file of the layout at fault.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No container engine where one is needed (an `image` or a `dockerfile`).
    #[error("[environment].{key} `{value}` needs a container engine (podman or docker) on PATH, and none was found{hint}")]
    NoEngine {
        /// The source key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What to do (e.g. "; `--engine none` was given").
        hint: String,
    },
    /// `--engine` named an engine that is not on PATH.
    #[error("--engine {0}: `{0}` is not on PATH")]
    EngineMissing(String),
    /// An engine command failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    EngineFailed {
        /// The command line run.
        command: String,
        /// Its exit status.
        status: String,
        /// The tail of its standard error.
        stderr: String,
    },
    /// The cache metadata of an entry is unreadable.
    #[error("{}: {reason}", path.display())]
    BadCacheEntry {
        /// The metadata file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Neither `XDG_CACHE_HOME` nor `HOME` is set.
    #[error("cannot place the environment cache: neither XDG_CACHE_HOME nor HOME is set")]
    NoCacheDir,
}

/// Wraps an I/O error with its path.
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> EnvError {
    let path = path.into();
    move |source| EnvError::Io { path, source }
}
