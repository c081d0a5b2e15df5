//! Copying a directory tree (files with their permissions, symlinks as symlinks).

use std::io;
use std::path::Path;

/// Copies everything below `from` into `to` (created when missing), overwriting files.
///
/// # Errors
/// The first I/O error, from reading `from` or writing `to`.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs_err::create_dir_all(to)?;
    for entry in walkdir::WalkDir::new(from).min_depth(1).sort_by_file_name() {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from).map_err(io::Error::other)?;
        let target = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            fs_err::create_dir_all(&target)?;
        } else if kind.is_symlink() {
            let link = fs_err::read_link(entry.path())?;
            if target.symlink_metadata().is_ok() {
                fs_err::remove_file(&target)?;
            }
            std::os::unix::fs::symlink(&link, &target)?;
        } else {
            fs_err::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
