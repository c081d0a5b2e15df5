//! Which workspace files a sandbox's processes read, measured rather than guessed from the
//! commands (issue 24 item 4; seed 001 App. D.2 "opens", "Inspection of inherited changes";
//! docs/decisions.md "Opened and inspected, measured").
//!
//! A [`ReadWatch`] is a fanotify group (notification class, unlimited queue) that marks the
//! *sandbox's own* mount of the workspace — reached through `/proc/<pid>/root/workspace` of a
//! process inside the sandbox, so the harness's own reads of the same directory (diffs,
//! freezes, the evaluator's copy) go through other mounts and are never counted. It reports
//! every regular file that was read (`FAN_ACCESS`: a `read`, `copy_file_range` or `sendfile`
//! that returned bytes) or opened for reading and closed again (`FAN_CLOSE_NOWRITE`, which also
//! catches readers that `mmap` a file, as ripgrep does). Directories are not reported (no
//! `FAN_ONDIR`): listing a directory reads no file.
//!
//! Events name files by an open descriptor; the watch maps it to the workspace path by device
//! and inode, walking the host side of the workspace (the bind mount shares both), the `.git`
//! directory excluded. A file read and then removed within one command is lost, and a file
//! with several hard links is reported under each.
//!
//! Creating a watch needs `CAP_SYS_ADMIN` (the harness runs as root); without it, or on a
//! kernel without fanotify, [`ReadWatch::on_mount`] fails with the reason, which the episode
//! records as a deviation and the report falls back to reading the trajectory.

#[cfg(test)]
use std::collections::HashMap;
use std::collections::{BTreeSet, HashSet};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why reads could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum ReadWatchError {
    /// `fanotify_init` failed (no `CAP_SYS_ADMIN`, no fanotify in the kernel).
    #[error("fanotify is unavailable: {0}")]
    Init(std::io::Error),
    /// The sandbox's workspace mount could not be marked.
    #[error("cannot watch the sandbox's workspace mount `{path}`: {source}")]
    Mark {
        /// The path marked.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Reading the event queue failed.
    #[error("cannot read fanotify events: {0}")]
    Read(std::io::Error),
    /// The kernel dropped events (the queue overflowed).
    #[error("fanotify dropped events (queue overflow)")]
    Overflow,
    /// No process of the sandbox was found to reach its mount through.
    #[error("no process of the sandbox to reach its workspace mount through")]
    NoProcess,
}

/// What is known of the files one command read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// Measured: the workspace files (relative, `/`-separated, sorted) its processes read.
    Measured(BTreeSet<String>),
    /// Not measured, and why (the deviation the episode records).
    Unmeasured(String),
}

impl Reads {
    /// What a watch (or the reason there is none) measured since it was last asked.
    pub fn taken_from(watch: &Result<ReadWatch, String>) -> Reads {
        match watch {
            Ok(watch) => match watch.take() {
                Ok(files) => Reads::Measured(files),
                Err(why) => Reads::Unmeasured(why.to_string()),
            },
            Err(why) => Reads::Unmeasured(why.clone()),
        }
    }
}

/// The events a watch asks for.
const MASK: u64 = libc::FAN_ACCESS | libc::FAN_CLOSE_NOWRITE;

/// Bytes read from the queue at once: every event in a read arrives with an open descriptor,
/// so a small buffer keeps the harness far below its descriptor limit (about 170 events).
const EVENT_BUFFER: usize = 4096;

/// A device and inode: how an event's file is recognised in the workspace.
type FileKey = (u64, u64);

/// A fanotify watch on one sandbox's workspace mount.
#[derive(Debug)]
pub struct ReadWatch {
    fd: OwnedFd,
    /// The workspace as the harness sees it (the host side of the bind mount).
    workspace: PathBuf,
}

impl ReadWatch {
    /// Watches reads through the mount at `mount` (inside a sandbox: `/proc/<pid>/root` +
    /// the workspace's sandbox path), whose files are `workspace` on the host.
    ///
    /// # Errors
    /// [`ReadWatchError::Init`] when fanotify is not available to this process,
    /// [`ReadWatchError::Mark`] when the mount cannot be marked.
    pub fn on_mount(mount: &Path, workspace: &Path) -> Result<ReadWatch, ReadWatchError> {
        let flags = libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK | libc::FAN_UNLIMITED_QUEUE;
        let event_flags = (libc::O_RDONLY | libc::O_LARGEFILE | libc::O_CLOEXEC) as libc::c_uint;
        // SAFETY: plain system call with constant arguments.
        let raw = unsafe { libc::fanotify_init(flags, event_flags) };
        if raw < 0 {
            return Err(ReadWatchError::Init(std::io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a descriptor just returned to us and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mark_error = |source| ReadWatchError::Mark { path: mount.to_path_buf(), source };
        let path = CString::new(mount.as_os_str().as_bytes()).map_err(|e| mark_error(std::io::Error::other(e)))?;
        // SAFETY: `fd` is a fanotify group and `path` a NUL-terminated string that outlives the call.
        let marked =
            unsafe { libc::fanotify_mark(fd.as_raw_fd(), libc::FAN_MARK_ADD | libc::FAN_MARK_MOUNT, MASK, libc::AT_FDCWD, path.as_ptr()) };
        if marked < 0 {
            return Err(mark_error(std::io::Error::last_os_error()));
        }
        Ok(ReadWatch { fd, workspace: workspace.to_path_buf() })
    }

    /// Watches the workspace mount of the sandbox that `pids` (host pids, any order) run in:
    /// the first of them in another mount namespace whose `/proc/<pid>/root` + `sandbox_path`
    /// is a directory.
    ///
    /// # Errors
    /// [`ReadWatchError::NoProcess`] when no pid reaches the mount; as [`ReadWatch::on_mount`].
    pub fn on_sandbox(pids: &[i32], sandbox_path: &Path, workspace: &Path) -> Result<ReadWatch, ReadWatchError> {
        let relative = sandbox_path.strip_prefix("/").unwrap_or(sandbox_path);
        let mount = pids
            .iter()
            .filter(|pid| in_other_mount_namespace(**pid))
            .map(|pid| PathBuf::from(format!("/proc/{pid}/root")).join(relative))
            .find(|mount| mount.is_dir())
            .ok_or(ReadWatchError::NoProcess)?;
        ReadWatch::on_mount(&mount, workspace)
    }

    /// The workspace files (relative, `/`-separated, sorted) read since the last call, from
    /// the events queued so far.
    ///
    /// # Errors
    /// [`ReadWatchError::Read`] when the queue cannot be read, [`ReadWatchError::Overflow`]
    /// when the kernel dropped events.
    pub fn take(&self) -> Result<BTreeSet<String>, ReadWatchError> {
        let keys = self.drain()?;
        if keys.is_empty() {
            return Ok(BTreeSet::new());
        }
        let mut paths = BTreeSet::new();
        walk(&self.workspace, "", &mut |key, rel| {
            if keys.contains(&key) {
                paths.insert(rel.to_string());
            }
        });
        Ok(paths)
    }

    /// The files of every queued event, emptying the queue.
    fn drain(&self) -> Result<HashSet<FileKey>, ReadWatchError> {
        let mut keys = HashSet::new();
        let mut overflow = false;
        let mut buffer = vec![0u8; EVENT_BUFFER];
        loop {
            // SAFETY: `buffer` is valid for `buffer.len()` bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
            if n < 0 {
                let error = std::io::Error::last_os_error();
                if error.kind() == std::io::ErrorKind::WouldBlock {
                    break;
                }
                if error.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(ReadWatchError::Read(error));
            }
            if n == 0 {
                break;
            }
            overflow |= take_events(&buffer[..n as usize], &mut keys);
        }
        if overflow { Err(ReadWatchError::Overflow) } else { Ok(keys) }
    }
}

/// Collects the regular files of the events in `bytes` into `keys`, closing every event's
/// descriptor; true when the kernel reported an overflow.
fn take_events(bytes: &[u8], keys: &mut HashSet<FileKey>) -> bool {
    let header = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut overflow = false;
    let mut at = 0;
    while at + header <= bytes.len() {
        // SAFETY: at least `header` bytes remain; `read_unaligned` copes with any alignment.
        let event: libc::fanotify_event_metadata = unsafe { std::ptr::read_unaligned(bytes[at..].as_ptr().cast()) };
        let len = event.event_len as usize;
        if len < header {
            break;
        }
        if event.mask & libc::FAN_Q_OVERFLOW != 0 {
            overflow = true;
        }
        if event.fd >= 0 {
            // SAFETY: the kernel opened this descriptor for us with the event; we own it.
            let fd = unsafe { OwnedFd::from_raw_fd(event.fd) };
            if let Some(key) = regular_file_key(&fd) {
                keys.insert(key);
            }
        }
        at += len;
    }
    overflow
}

/// The device and inode of a regular file's descriptor; `None` for anything else.
fn regular_file_key(fd: &OwnedFd) -> Option<FileKey> {
    let file = std::fs::File::from(fd.try_clone().ok()?);
    let meta = file.metadata().ok()?;
    meta.is_file().then(|| (meta.dev(), meta.ino()))
}

/// Whether `pid` lives in another mount namespace than the harness (so its root is a
/// sandbox's).
fn in_other_mount_namespace(pid: i32) -> bool {
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/mnt")).ok();
    match (ns(&pid.to_string()), ns("self")) {
        (Some(theirs), Some(ours)) => theirs != ours,
        _ => false,
    }
}

/// Calls `visit` with the key and relative path of every regular file under `dir` (links not
/// followed, `.git` at the top skipped).
fn walk(dir: &Path, prefix: &str, visit: &mut dyn FnMut(FileKey, &str)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if prefix.is_empty() && name == ".git" {
            continue;
        }
        let rel = if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if meta.is_dir() {
            walk(&entry.path(), &rel, visit);
        } else if meta.is_file() {
            visit((meta.dev(), meta.ino()), &rel);
        }
    }
}

/// The device and inode of every regular file under `dir` by path (for tests).
#[cfg(test)]
fn keys_of(dir: &Path) -> HashMap<String, FileKey> {
    let mut keys = HashMap::new();
    walk(dir, "", &mut |key, rel| {
        keys.insert(rel.to_string(), key);
    });
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_nested_files_and_skips_the_top_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/x")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        for file in ["a.txt", "src/x/b.py", ".git/HEAD", ".hidden"] {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        let mut found: Vec<String> = keys_of(dir.path()).into_keys().collect();
        found.sort();
        assert_eq!(found, [".hidden", "a.txt", "src/x/b.py"]);
    }
}
