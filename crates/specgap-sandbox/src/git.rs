//! Hardened `git` invocations on the harness's own repositories.
//!
//! Every call starts from a cleared environment and disables everything that could run code or
//! change bytes on the way in or out: system and global configuration, hooks, fsmonitor,
//! external diff drivers and textconv. Calls that read the work tree also ignore its
//! `.gitattributes` ([`Git::no_work_tree_attributes`]), so no filter, `text` or `eol` rule can
//! rewrite content.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::MaterializeError;

/// The id of git's empty tree; git knows it without storing it.
pub(crate) const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Author and committer of every base commit.
pub(crate) const BASE_IDENT_NAME: &str = "specgap";
/// E-mail of every base commit.
pub(crate) const BASE_IDENT_EMAIL: &str = "specgap@localhost";
/// 2000-01-01T00:00:00Z in git's raw date format.
pub(crate) const BASE_DATE: &str = "946684800 +0000";
/// Message of every base commit.
pub(crate) const BASE_MESSAGE: &str = "specgap base";

/// Configuration forced on every harness git call (`-c key=value`).
const FORCED_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.protectNTFS=false",
    "core.protectHFS=false",
    "core.quotePath=true",
    "commit.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "diff.renames=false",
    "safe.directory=*",
];

/// The first `git` on the harness's `PATH` (looked up once), or `git` when there is none, so
/// that the spawn fails with the usual "not found".
fn git_program() -> &'static Path {
    static GIT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    GIT.get_or_init(|| crate::host::find_on_path("git").unwrap_or_else(|| "git".into()))
}

/// Bytes read from a pipe at a time by [`Git::run_bounded`].
pub(crate) const STREAM_CHUNK: usize = 64 * 1024;

/// Reads `from` to its end in [`STREAM_CHUNK`]-byte chunks, keeping the bytes while there are
/// at most `keep` of them; past that, what was kept is dropped and the rest is only counted.
/// Returns the bytes (when kept) and the count.
pub(crate) fn read_bounded(from: &mut impl std::io::Read, keep: u64) -> std::io::Result<(Option<Vec<u8>>, u64)> {
    let mut kept = Some(Vec::new());
    let mut total: u64 = 0;
    let mut chunk = vec![0u8; STREAM_CHUNK];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => return Ok((kept, total)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if total > keep {
            kept = None;
        } else if let Some(bytes) = kept.as_mut() {
            bytes.extend_from_slice(&chunk[..n]);
        }
    }
}

/// A git command with the hardened environment; add arguments, then [`Git::run`].
pub(crate) struct Git {
    cmd: Command,
    args_text: String,
    stdin: Option<Vec<u8>>,
}

impl Git {
    /// A git call with cwd `cwd`. `GIT_DIR` etc. are added by the caller with [`Git::env`].
    pub(crate) fn new(cwd: &Path) -> Self {
        // An absolute program lets std start git with posix_spawn; with a bare name and a
        // cleared environment it would fork the whole harness to search PATH.
        let mut cmd = Command::new(git_program());
        cmd.env_clear();
        cmd.env("PATH", crate::host::search_path());
        cmd.env("HOME", "/nonexistent")
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .current_dir(cwd);
        for kv in FORCED_CONFIG {
            cmd.arg("-c").arg(kv);
        }
        Git { cmd, args_text: String::new(), stdin: None }
    }

    /// Reads attributes from the empty tree instead of the work tree (git's `--attr-source`),
    /// so no `.gitattributes` rule can rewrite content. Must come before the subcommand.
    /// Not usable with `git apply`, which crashes with it (git 2.47).
    pub(crate) fn no_work_tree_attributes(mut self) -> Self {
        self.cmd.arg(format!("--attr-source={EMPTY_TREE}"));
        self
    }

    /// Adds arguments.
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for arg in args {
            let arg = arg.as_ref();
            if !self.args_text.is_empty() {
                self.args_text.push(' ');
            }
            self.args_text.push_str(&arg.to_string_lossy());
            self.cmd.arg(arg);
        }
        self
    }

    /// Sets an environment variable for this call.
    pub(crate) fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    /// Feeds `bytes` on standard input.
    pub(crate) fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// Runs git and returns its standard output.
    ///
    /// # Errors
    /// [`MaterializeError::GitMissing`] when git cannot start, [`MaterializeError::Git`] on a
    /// non-zero exit (with git's stderr).
    pub(crate) fn run(mut self) -> Result<Vec<u8>, MaterializeError> {
        self.cmd.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().map_err(MaterializeError::GitMissing)?;
        let writer = match (self.stdin.take(), child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => Some(std::thread::spawn(move || pipe.write_all(&bytes))),
            _ => None,
        };
        let output = child.wait_with_output()?;
        if let Some(writer) = writer {
            // A write error means git exited early; its status and stderr explain why.
            let _ = writer.join();
        }
        if !output.status.success() {
            return Err(MaterializeError::Git {
                args: self.args_text,
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        Ok(output.stdout)
    }

    /// Runs git (no standard input) and reads its standard output in chunks of
    /// [`STREAM_CHUNK`] bytes, keeping at most `keep` bytes of it: the output when it is no
    /// longer, else `None` and the rest only counted, never held (issue 31 item 1: a patch
    /// over its cap costs the runner `keep` bytes, not the patch). Returns the output (when
    /// kept) and its length in bytes.
    ///
    /// # Errors
    /// As [`Git::run`], and I/O errors reading the pipe.
    pub(crate) fn run_bounded(mut self, keep: u64) -> Result<(Option<Vec<u8>>, u64), MaterializeError> {
        self.cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().map_err(MaterializeError::GitMissing)?;
        // git's stderr is read beside its stdout, so a chatty git never blocks on a full pipe.
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                let _ = std::io::Read::read_to_end(&mut pipe, &mut text);
                text
            })
        });
        let counted = match child.stdout.take() {
            Some(mut pipe) => read_bounded(&mut pipe, keep),
            None => Ok((Some(Vec::new()), 0)),
        };
        let status = child.wait()?;
        let stderr = stderr.and_then(|reader| reader.join().ok()).unwrap_or_default();
        if !status.success() {
            return Err(MaterializeError::Git {
                args: self.args_text,
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
            });
        }
        Ok(counted?)
    }

    /// Runs git and returns trimmed standard output as text.
    pub(crate) fn run_text(self) -> Result<String, MaterializeError> {
        let out = self.run()?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }
}
