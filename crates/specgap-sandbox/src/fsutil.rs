//! File-tree helpers shared by materialization, freezing and overlays.
//!
//! Every walk here uses `lstat`: symbolic links are copied as links and never followed, and
//! special files (FIFOs, sockets, devices) are skipped, because reading a FIFO an agent left
//! behind would hang the harness and a device node has no meaning in a copy.

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};

use fs_err as fs;
use walkdir::WalkDir;

/// True for a path component git refuses to track (`.git` in any letter case). Such entries
/// are never part of a base, a diff or a frozen submission.
pub(crate) fn is_git_name(name: &OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

/// What [`copy_tree`] does with `.git` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GitEntries {
    /// Skip every `.git` entry at any depth.
    Skip,
    /// Copy everything (used to copy the harness's own cached repository).
    Keep,
}

/// Kind of a tree entry as `lstat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
}

/// One entry of a walk: its path relative to the root and its kind.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Path relative to the walked root (never empty).
    pub rel: PathBuf,
    /// What it is.
    pub kind: EntryKind,
}

/// Lists `root` depth-first (parents before children, names sorted), without following links,
/// skipping special files and, with [`GitEntries::Skip`], every `.git` entry.
///
/// # Errors
/// An unreadable directory (the error names it).
pub(crate) fn walk(root: &Path, git: GitEntries) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    let walker = WalkDir::new(root)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| git == GitEntries::Keep || !is_git_name(e.file_name()));
    for entry in walker {
        let entry = entry.map_err(walk_error)?;
        let ft = entry.file_type();
        let kind = if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_file() {
            EntryKind::File
        } else {
            continue;
        };
        let rel = entry
            .path()
            .strip_prefix(root)
            .map_err(|_| io::Error::other(format!("walk of {} left its root", root.display())))?
            .to_path_buf();
        out.push(Entry { rel, kind });
    }
    Ok(out)
}

fn walk_error(e: walkdir::Error) -> io::Error {
    let path = e.path().map(|p| p.display().to_string()).unwrap_or_default();
    let kind = e.io_error().map(|io| io.kind()).unwrap_or(io::ErrorKind::Other);
    io::Error::new(kind, format!("failed to walk `{path}`: {e}"))
}

/// Copies the tree `src` into `dst` (created if missing; must not be inside `src`): directories
/// with their permission bits, regular files with content and permission bits, symbolic links
/// as links. Existing entries at `dst` are replaced, and a symbolic link on the way to an entry
/// is replaced by a real directory, so nothing is ever written through a link.
///
/// # Errors
/// Any failed file operation (the error names the path).
pub(crate) fn copy_tree(src: &Path, dst: &Path, git: GitEntries) -> io::Result<()> {
    ensure_real_dir(dst)?;
    let entries = walk(src, git)?;
    let mut dirs: Vec<(PathBuf, u32)> = Vec::new();
    for entry in &entries {
        let from = src.join(&entry.rel);
        let to = dst.join(&entry.rel);
        match entry.kind {
            EntryKind::Dir => {
                ensure_real_dir(&to)?;
                let mode = fs::symlink_metadata(&from)?.permissions().mode();
                dirs.push((to, mode));
            }
            EntryKind::File => {
                remove_existing(&to)?;
                fs::copy(&from, &to)?;
            }
            EntryKind::Symlink => {
                remove_existing(&to)?;
                let target = fs::read_link(&from)?;
                symlink(&target, &to).map_err(|e| annotate(e, "create symlink", &to))?;
            }
        }
    }
    // Directory modes last, deepest first, so a read-only directory is filled before it is
    // closed.
    for (dir, mode) in dirs.iter().rev() {
        fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o7777))?;
    }
    Ok(())
}

/// Makes `dir` a real directory: creates it (with parents) when missing, and replaces a file
/// or symbolic link found there.
fn ensure_real_dir(dir: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => {
            fs::remove_file(dir)?;
            fs::create_dir(dir)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(dir),
        Err(e) => Err(annotate(e, "inspect", dir)),
    }
}

/// Removes whatever is at `path` (file, link or directory tree); a missing path is fine.
pub(crate) fn remove_existing(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(annotate(e, "inspect", path)),
    }
}

/// True when `dir` does not exist or is an empty directory.
pub(crate) fn is_absent_or_empty(dir: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(fs::read_dir(dir)?.next().is_none()),
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(annotate(e, "inspect", dir)),
    }
}

/// Checks that `rel` is a plain relative path (no root, no `..`, not empty) and that no
/// existing ancestor of it under `root` is a symbolic link; returns the joined path.
pub(crate) fn confined_join(root: &Path, rel: &str) -> Option<PathBuf> {
    let rel_path = Path::new(rel);
    let mut normal = PathBuf::new();
    for component in rel_path.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if normal.as_os_str().is_empty() {
        return None;
    }
    let mut walked = root.to_path_buf();
    let parts: Vec<_> = normal.components().collect();
    for part in &parts[..parts.len() - 1] {
        walked.push(part);
        if let Ok(meta) = std::fs::symlink_metadata(&walked)
            && meta.file_type().is_symlink()
        {
            return None;
        }
    }
    Some(root.join(normal))
}

/// Adds the action and path to an OS error that `std::fs` produced without one.
pub(crate) fn annotate(e: io::Error, action: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("failed to {action} `{}`: {e}", path.display()))
}
