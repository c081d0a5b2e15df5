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
    /// No container engine where one is needed (a `dockerfile`).
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
    /// `SPECGAP_ENGINE` names no engine choice.
    #[error("SPECGAP_ENGINE={value}: {reason}")]
    BadEngineVariable {
        /// The variable's value.
        value: String,
        /// Why it is not a choice.
        reason: String,
    },
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
    /// An image reference that cannot be pulled as written (or whose documents are malformed).
    #[error("image `{reference}`: {reason}")]
    BadReference {
        /// The reference as written.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The registry could not be reached (no route, refused connection, TLS failure).
    #[error("image `{reference}`: cannot reach the registry at {url}: {reason}")]
    RegistryUnreachable {
        /// The reference as written.
        reference: String,
        /// The URL asked.
        url: String,
        /// The transport's error with its causes.
        reason: String,
    },
    /// The registry has no manifest under the reference's tag or digest.
    #[error("image `{reference}`: the registry has no such tag or digest ({url} answered 404 Not Found){}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    UnknownImage {
        /// The reference as written.
        reference: String,
        /// The manifest URL asked.
        url: String,
        /// The start of the registry's answer.
        body: String,
    },
    /// The registry answered an error status (authentication refused, a missing blob).
    #[error("image `{reference}`: {url} answered {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    RegistryRefused {
        /// The reference as written.
        reference: String,
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: String,
        /// The start of the registry's answer, or why authentication failed.
        body: String,
    },
    /// A pulled document or blob whose bytes do not have the digest it is named by.
    #[error("image `{reference}`: the {what} has digest {actual}, expected {expected}")]
    DigestMismatch {
        /// The reference as written.
        reference: String,
        /// Which document or blob.
        what: String,
        /// The digest it is named by.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// A manifest or layer of a media type specgap does not pull or unpack.
    #[error(
        "image `{reference}`: its {what} has media type `{media_type}`, which specgap does not pull (OCI or Docker schema 2 manifests and tar, gzip or zstd layers only)"
    )]
    UnsupportedMediaType {
        /// The reference as written.
        reference: String,
        /// Which document (`manifest`, `layer sha256:…`).
        what: String,
        /// Its media type.
        media_type: String,
    },
    /// An image index without an image for this machine.
    #[error("image `{reference}`: its index has no image for {wanted} (it has: {available})")]
    NoPlatform {
        /// The reference as written.
        reference: String,
        /// `linux/<this machine's architecture>`.
        wanted: String,
        /// The platforms the index lists, comma-separated.
        available: String,
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
