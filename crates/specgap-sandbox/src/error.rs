//! Typed errors of materialization ([`MaterializeError`]) and of the sandbox runner
//! ([`SandboxError`]). Evaluator errors live in [`crate::evaluator::EvalError`].

use std::path::PathBuf;

/// Why a workspace could not be materialized, diffed, frozen or overlaid (DESIGN §3.1).
#[derive(Debug, thiserror::Error)]
pub enum MaterializeError {
    /// A file operation failed; the `fs_err` source names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `git` could not be started at all.
    #[error("cannot run git (install it with `apt-get install git` or scripts/setup)")]
    GitMissing(#[source] std::io::Error),
    /// A git command the harness runs on its own copy of the base failed.
    #[error("`git {args}` failed ({status}): {stderr}")]
    Git {
        /// The git arguments, space-joined, for the message.
        args: String,
        /// The exit status as text.
        status: String,
        /// git's standard error, trimmed.
        stderr: String,
    },
    /// A base-cache key that is not a plain file name.
    #[error("base cache key `{0}` must be 1-128 characters of [A-Za-z0-9._-] not starting with `.`")]
    InvalidKey(String),
    /// A residual `state.patch` does not apply to the base.
    #[error("residual patch {} does not apply to the base: {stderr}", patch.display())]
    PatchFailed {
        /// The patch file.
        patch: PathBuf,
        /// `git apply`'s standard error.
        stderr: String,
    },
    /// A `delete.txt` entry (or other workspace-relative path) that would leave the workspace.
    #[error("path `{path}` in {} leaves the workspace (expected a relative path without `..` that does not pass through a symbolic link)", source_file.display())]
    PathEscapes {
        /// The offending entry as written.
        path: String,
        /// The file that listed it.
        source_file: PathBuf,
    },
    /// The destination of a materialization or freeze already holds files.
    #[error("destination {} must not exist or be an empty directory", .0.display())]
    DestinationNotEmpty(PathBuf),
}

/// Why a command could not be run in the sandbox (DESIGN §3.2). A command that runs and fails,
/// times out or is cut is *not* an error: see [`crate::CommandOutput`].
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox is enabled but bubblewrap is not installed.
    #[error(
        "bubblewrap (`bwrap`) is not on PATH; install it with `apt-get install bubblewrap` \
         (or run scripts/setup), or pass --no-sandbox to run commands unsandboxed"
    )]
    BwrapMissing,
    /// A host view was asked of an image environment (format 2): its commands run on the
    /// image's root filesystem, never on the host's.
    #[error(
        "[environment].{key} `{value}` names an image; a host-command view of it would run the task on the host's files instead (build it with `specgap env build` and run on its root filesystem)"
    )]
    ImageEnvironment {
        /// The source key (`image`, `dockerfile`, `rootfs`, `oci_layout`).
        key: &'static str,
        /// Its value as written.
        value: String,
    },
    /// An `[environment].commands` entry is not on the host `PATH`.
    #[error("command `{0}` of [environment].commands is not on the host PATH")]
    CommandNotFound(String),
    /// A version-manager shim (pyenv, rbenv, …) could not be resolved to a real program.
    #[error("cannot resolve the version-manager shim {} for `{name}`: {reason}", shim.display())]
    ShimUnresolved {
        /// The command name.
        name: String,
        /// The shim found on PATH.
        shim: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An `[environment].binds` entry or mount that cannot be used.
    #[error("bind {}: {reason}", path.display())]
    BadBind {
        /// The path as given.
        path: PathBuf,
        /// What was expected.
        reason: String,
    },
    /// The command specification itself is unusable (empty argv, relative sandbox path, …).
    #[error("invalid command: {0}")]
    InvalidSpec(String),
    /// The sandbox (or, with the sandbox disabled, the shell) could not be spawned.
    #[error("cannot start {}", program.display())]
    Spawn {
        /// The program that failed to start.
        program: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// bubblewrap started but could not set up the sandbox (the command never ran).
    #[error("bubblewrap could not set up the sandbox (exit status {status}): {stderr}")]
    Setup {
        /// bwrap's exit status as text.
        status: String,
        /// bwrap's standard error.
        stderr: String,
    },
    /// A copy-on-write machine ([`crate::Machine`]) cannot be used here: overlayfs does not
    /// mount, util-linux is missing, or the view is not an image's.
    #[error("copy-on-write machine: {0}")]
    Overlay(String),
    /// Another I/O failure around the command (pipes, temporary files, cgroups).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
