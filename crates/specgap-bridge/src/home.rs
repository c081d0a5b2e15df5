//! Reading and writing files in an agent-writable directory (a `cli:` agent's private HOME)
//! without ever following a link the agent may have planted: every component is opened with
//! `O_NOFOLLOW` relative to its parent's descriptor, so a link anywhere on the path (to a host
//! file, to `/proc`, to another episode) is refused instead of followed, and special files are
//! refused before they are read (a FIFO would block the harness).
//!
//! The harness uses these for everything it touches in that home after the agent has run
//! there: the adapter's configuration written for a resumed session, and the session logs it
//! reads back into the trajectory.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

/// Why a file in an agent-writable directory cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// The relative path is absolute, empty, or has `.` / `..` components.
    #[error("{} is not a plain relative path inside the agent's home", path.display())]
    BadPath {
        /// The path.
        path: PathBuf,
    },
    /// A component is a symbolic link (refused, never followed).
    #[error("{} in the agent's home is or passes through a symbolic link; it is not followed", path.display())]
    Link {
        /// The path.
        path: PathBuf,
    },
    /// The file is not a regular file (directory, FIFO, socket, device), or has other names.
    #[error("{} in the agent's home is not a regular file with one name", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than the caller allows.
    #[error("{} in the agent's home is larger than {limit} bytes", path.display())]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// Any other failure.
    #[error("cannot access {} in the agent's home", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

fn components(relative: &Path) -> Result<Vec<CString>, HomeError> {
    let bad = || HomeError::BadPath { path: relative.to_path_buf() };
    let mut names = Vec::new();
    for component in relative.components() {
        let Component::Normal(name) = component else { return Err(bad()) };
        names.push(CString::new(name.as_bytes()).map_err(|_| bad())?);
    }
    if names.is_empty() { Err(bad()) } else { Ok(names) }
}

fn open_at(dir: Option<&OwnedFd>, name: &CString, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let dirfd = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    // SAFETY: `name` is a NUL-terminated string that outlives the call; the returned
    // descriptor, when valid, is owned by nobody else.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, libc::c_uint::from(mode)) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh, valid descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is valid and `st` is a writable `stat`.
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Opens the directory holding the last component of `relative` under `root`, without
/// following links; with `create`, missing directories are made (mode 0755).
fn open_parent(root: &Path, relative: &Path, names: &[CString], create: bool) -> Result<OwnedFd, HomeError> {
    let root_name = CString::new(root.as_os_str().as_bytes()).map_err(|_| HomeError::BadPath { path: root.to_path_buf() })?;
    let mut dir = open_at(None, &root_name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|source| HomeError::Io { path: root.to_path_buf(), source })?;
    for name in &names[..names.len() - 1] {
        let io_error = |source: io::Error| opening_error(&dir, name, relative, source);
        if create {
            // SAFETY: `dir` is a valid directory descriptor and `name` a NUL-terminated string.
            let made = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
            if made < 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EEXIST) {
                    return Err(io_error(error));
                }
            }
        }
        dir = open_at(Some(&dir), name, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(io_error)?;
    }
    Ok(dir)
}

/// The error for a failed open of `name` in `dir`: a link when the name is one (`ELOOP`, or
/// `ENOTDIR` from `O_DIRECTORY` on a link), else the I/O error.
fn opening_error(dir: &OwnedFd, name: &CString, relative: &Path, source: io::Error) -> HomeError {
    let is_link = || {
        // SAFETY: an all-zero `stat` is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `dir` is valid, `name` NUL-terminated, `st` writable.
        let done = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &raw mut st, libc::AT_SYMLINK_NOFOLLOW) };
        done == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
    };
    match source.raw_os_error() {
        Some(libc::ELOOP) => HomeError::Link { path: relative.to_path_buf() },
        Some(libc::ENOTDIR) if is_link() => HomeError::Link { path: relative.to_path_buf() },
        _ => HomeError::Io { path: relative.to_path_buf(), source },
    }
}

/// Reads `relative` under `root` (at most `limit` bytes) without following any link on the
/// way; only a regular file is read.
///
/// # Errors
/// [`HomeError`]: a link, a special file, a larger file, a bad path or an I/O failure.
pub fn read_file(root: &Path, relative: &Path, limit: u64) -> Result<Vec<u8>, HomeError> {
    let names = components(relative)?;
    let dir = open_parent(root, relative, &names, false)?;
    let last = &names[names.len() - 1];
    let file = open_at(Some(&dir), last, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY, 0)
        .map_err(|source| opening_error(&dir, last, relative, source))?;
    let st = stat(&file).map_err(|source| HomeError::Io { path: relative.to_path_buf(), source })?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(HomeError::NotRegular { path: relative.to_path_buf() });
    }
    if u64::try_from(st.st_size).unwrap_or(u64::MAX) > limit {
        return Err(HomeError::TooLarge { path: relative.to_path_buf(), limit });
    }
    let mut bytes = Vec::new();
    File::from(file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| HomeError::Io { path: relative.to_path_buf(), source })?;
    if bytes.len() as u64 > limit {
        return Err(HomeError::TooLarge { path: relative.to_path_buf(), limit });
    }
    Ok(bytes)
}

/// Writes `bytes` to `relative` under `root` (mode `mode`), making missing directories,
/// without following any link on the way: whatever is at the final name (a link the agent
/// planted, an old file) is removed first and a new file is made in its place, so the write
/// can never land outside the directory.
///
/// # Errors
/// [`HomeError`]: a link on the way, a directory at the final name, a bad path or an I/O
/// failure.
pub fn write_file(root: &Path, relative: &Path, bytes: &[u8], mode: u32) -> Result<(), HomeError> {
    let names = components(relative)?;
    let dir = open_parent(root, relative, &names, true)?;
    let last = &names[names.len() - 1];
    let io_error = |source: io::Error| HomeError::Io { path: relative.to_path_buf(), source };
    // SAFETY: `dir` is a valid directory descriptor and `last` a NUL-terminated string.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), last.as_ptr(), 0) } < 0 {
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::ENOENT) => {}
            Some(libc::EISDIR) => return Err(HomeError::NotRegular { path: relative.to_path_buf() }),
            _ => return Err(io_error(error)),
        }
    }
    let mode = libc::mode_t::try_from(mode & 0o7777).unwrap_or(0o644);
    let file = open_at(Some(&dir), last, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, mode).map_err(io_error)?;
    let mut file = File::from(file);
    file.write_all(bytes).map_err(io_error)?;
    file.flush().map_err(io_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_be_plain_and_relative() {
        let root = tempfile::tempdir().unwrap();
        for bad in ["/etc/passwd", "../x", "a/../b", "", "./a"] {
            assert!(matches!(read_file(root.path(), Path::new(bad), 10), Err(HomeError::BadPath { .. })), "{bad}");
        }
    }

    #[test]
    fn a_planted_link_is_neither_read_nor_written_through() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "host file").unwrap();
        std::os::unix::fs::symlink(&secret, root.path().join("log.jsonl")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir")).unwrap();
        assert!(matches!(read_file(root.path(), Path::new("log.jsonl"), 100), Err(HomeError::Link { .. })));
        assert!(matches!(read_file(root.path(), Path::new("dir/secret"), 100), Err(HomeError::Link { .. })));
        assert!(matches!(write_file(root.path(), Path::new("dir/secret"), b"x", 0o644), Err(HomeError::Link { .. })));
        // Writing over the link replaces the link; the host file is untouched.
        write_file(root.path(), Path::new("log.jsonl"), b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host file");
        assert!(!std::fs::symlink_metadata(root.path().join("log.jsonl")).unwrap().file_type().is_symlink());
        assert_eq!(read_file(root.path(), Path::new("log.jsonl"), 100).unwrap(), b"new");
    }

    #[test]
    fn fifos_and_large_files_are_refused_and_directories_are_made() {
        let root = tempfile::tempdir().unwrap();
        let fifo = CString::new(root.path().join("pipe").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(matches!(read_file(root.path(), Path::new("pipe"), 100), Err(HomeError::NotRegular { .. })));
        write_file(root.path(), Path::new(".config/tool/settings.json"), b"{}", 0o644).unwrap();
        assert_eq!(read_file(root.path(), Path::new(".config/tool/settings.json"), 2).unwrap(), b"{}");
        assert!(matches!(read_file(root.path(), Path::new(".config/tool/settings.json"), 1), Err(HomeError::TooLarge { limit: 1, .. })));
    }
}
