//! Files in a `cli:` agent's private home, which the agent can write: every component of a
//! path is opened relative to its parent's descriptor with `O_NOFOLLOW`, so a link the agent
//! planted (to a host file, to `/proc`, to another episode) is refused, never followed, and
//! only regular files are read (issue 14 item 5).

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path};

/// Why a file of the home cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// The relative path is not plain (absolute, `.` or `..`, empty).
    #[error("{0} is not a plain relative path inside the agent's home")]
    BadPath(String),
    /// A component is a symbolic link.
    #[error("{0} in the agent's home is or passes through a symbolic link; it is not followed")]
    Link(String),
    /// Not a regular file.
    #[error("{0} in the agent's home is not a regular file")]
    NotRegular(String),
    /// Larger than allowed.
    #[error("{path} in the agent's home is larger than {limit} bytes")]
    TooLarge {
        /// The path.
        path: String,
        /// The limit.
        limit: u64,
    },
    /// Missing.
    #[error("{0} is not in the agent's home")]
    Missing(String),
    /// Any other failure.
    #[error("cannot access {path} in the agent's home")]
    Io {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

fn names(relative: &Path) -> Result<Vec<CString>, HomeError> {
    let shown = relative.display().to_string();
    let mut names = Vec::new();
    for component in relative.components() {
        let Component::Normal(name) = component else { return Err(HomeError::BadPath(shown)) };
        names.push(CString::new(name.as_bytes()).map_err(|_| HomeError::BadPath(shown.clone()))?);
    }
    if names.is_empty() { Err(HomeError::BadPath(shown)) } else { Ok(names) }
}

fn open_at(dir: Option<&OwnedFd>, name: &CString, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `name` is NUL-terminated and outlives the call; a valid result is owned by us.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, libc::c_uint::from(mode)) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn classify(error: io::Error, shown: &str) -> HomeError {
    match error.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => HomeError::Link(shown.to_string()),
        Some(libc::ENOENT) => HomeError::Missing(shown.to_string()),
        _ => HomeError::Io { path: shown.to_string(), source: error },
    }
}

/// The directory holding the last component, opened without following links; `create` makes
/// missing directories.
fn parent(root: &Path, relative: &Path, names: &[CString], create: bool) -> Result<OwnedFd, HomeError> {
    let shown = relative.display().to_string();
    let root_name = CString::new(root.as_os_str().as_bytes()).map_err(|_| HomeError::BadPath(root.display().to_string()))?;
    // The root itself is the harness's own directory: it may be reached through links.
    // SAFETY: a NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(root_name.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(HomeError::Io { path: root.display().to_string(), source: io::Error::last_os_error() });
    }
    // SAFETY: fresh descriptor.
    let mut dir = unsafe { OwnedFd::from_raw_fd(fd) };
    for name in &names[..names.len() - 1] {
        if create {
            // SAFETY: valid directory descriptor and NUL-terminated name.
            let made = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
            if made < 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EEXIST) {
                    return Err(classify(error, &shown));
                }
            }
        }
        dir = open_at(Some(&dir), name, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| classify(e, &shown))?;
    }
    Ok(dir)
}

/// Reads an adapter's log `relative` under `root` (at most `limit` bytes) for its
/// [`LogReport`](super::adapter::LogReport): `None` when there is no log (nothing was logged)
/// or it cannot be read, the reason then written to `note`.
pub fn read_log(root: &Path, relative: &Path, limit: u64, note: &mut String) -> Option<Vec<u8>> {
    match read_file(root, relative, limit) {
        Ok(bytes) => Some(bytes),
        Err(HomeError::Missing(_)) => None,
        Err(e) => {
            *note = e.to_string();
            None
        }
    }
}

/// Reads `relative` under `root`, at most `limit` bytes, refusing links and special files.
///
/// # Errors
/// [`HomeError`].
pub fn read_file(root: &Path, relative: &Path, limit: u64) -> Result<Vec<u8>, HomeError> {
    let shown = relative.display().to_string();
    let names = names(relative)?;
    let dir = parent(root, relative, &names, false)?;
    let file = open_at(Some(&dir), &names[names.len() - 1], libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY, 0)
        .map_err(|e| classify(e, &shown))?;
    let meta = File::from(file.try_clone().map_err(|source| HomeError::Io { path: shown.clone(), source })?)
        .metadata()
        .map_err(|source| HomeError::Io { path: shown.clone(), source })?;
    if !meta.is_file() {
        return Err(HomeError::NotRegular(shown));
    }
    if meta.len() > limit {
        return Err(HomeError::TooLarge { path: shown, limit });
    }
    let mut bytes = Vec::new();
    File::from(file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| HomeError::Io { path: shown.clone(), source })?;
    if bytes.len() as u64 > limit {
        return Err(HomeError::TooLarge { path: shown, limit });
    }
    Ok(bytes)
}

/// Writes `bytes` to `relative` under `root` (making directories), replacing whatever is at
/// the name (a planted link included) by a new regular file; never writes through a link.
///
/// # Errors
/// [`HomeError`].
pub fn write_file(root: &Path, relative: &Path, bytes: &[u8]) -> Result<(), HomeError> {
    let shown = relative.display().to_string();
    let names = names(relative)?;
    let dir = parent(root, relative, &names, true)?;
    let last = &names[names.len() - 1];
    // SAFETY: valid directory descriptor and NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), last.as_ptr(), 0) } < 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::ENOENT) {
            return Err(classify(error, &shown));
        }
    }
    let file = open_at(Some(&dir), last, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644).map_err(|e| classify(e, &shown))?;
    let mut file = File::from(file);
    file.write_all(bytes).map_err(|source| HomeError::Io { path: shown, source })
}

/// Sets the mode of the directory `relative` under `root` (which must exist), refusing links:
/// the directory is opened without following any, and its descriptor changed.
///
/// # Errors
/// [`HomeError`] (a link, a missing directory, a failed `fchmod`).
pub fn set_dir_mode(root: &Path, relative: &Path, mode: libc::mode_t) -> Result<(), HomeError> {
    let shown = relative.display().to_string();
    let names = names(relative)?;
    let dir = parent(root, relative, &names, false)?;
    let target = open_at(Some(&dir), &names[names.len() - 1], libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| classify(e, &shown))?;
    // SAFETY: fchmod of a descriptor we own.
    if unsafe { libc::fchmod(target.as_raw_fd(), mode) } < 0 {
        return Err(HomeError::Io { path: shown, source: io::Error::last_os_error() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_never_followed() {
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "host file").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), home.path().join("log.json")).unwrap();
        std::os::unix::fs::symlink(outside.path(), home.path().join("dir")).unwrap();
        assert!(matches!(read_file(home.path(), Path::new("log.json"), 100), Err(HomeError::Link(_))));
        assert!(matches!(read_file(home.path(), Path::new("dir/secret"), 100), Err(HomeError::Link(_))));
        assert!(matches!(write_file(home.path(), Path::new("dir/secret"), b"x"), Err(HomeError::Link(_))));
        write_file(home.path(), Path::new("log.json"), b"mine").unwrap();
        assert_eq!(std::fs::read_to_string(outside.path().join("secret")).unwrap(), "host file");
        assert_eq!(read_file(home.path(), Path::new("log.json"), 100).unwrap(), b"mine");
        assert!(matches!(read_file(home.path(), Path::new("log.json"), 2), Err(HomeError::TooLarge { limit: 2, .. })));
        assert!(matches!(read_file(home.path(), Path::new("none"), 2), Err(HomeError::Missing(_))));
        assert!(matches!(read_file(home.path(), Path::new("../x"), 2), Err(HomeError::BadPath(_))));
        write_file(home.path(), Path::new(".config/a/b.json"), b"{}").unwrap();
        assert_eq!(read_file(home.path(), Path::new(".config/a/b.json"), 2).unwrap(), b"{}");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let outside_mode = mode(outside.path());
        assert!(matches!(set_dir_mode(home.path(), Path::new("dir"), 0o555), Err(HomeError::Link(_))));
        assert_eq!(mode(outside.path()), outside_mode, "a link's target is never changed");
        set_dir_mode(home.path(), Path::new(".config/a"), 0o555).unwrap();
        assert_eq!(mode(&home.path().join(".config/a")), 0o555);
    }
}
