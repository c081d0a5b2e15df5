//! Small file helpers of the tests.

use std::path::{Path, PathBuf};

/// Writes `text` to `path`, creating its parent directories.
///
/// # Panics
/// When a directory or the file cannot be written.
pub fn write_file(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Every file under `dir` (not directories), in no particular order.
///
/// # Panics
/// When a directory cannot be read.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) { stack.push(path) } else { files.push(path) }
        }
    }
    files
}

/// Copies the tree `from` into `to`: directories created, files copied with their
/// permissions, a symbolic link copied as the file it points to.
///
/// # Panics
/// When a directory cannot be read or created, or a file cannot be copied.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
        let target = to.join(entry.file_name());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap_or_else(|e| panic!("copy {} to {}: {e}", entry.path().display(), target.display()));
        }
    }
}

/// Whether `haystack` holds `needle` anywhere.
pub fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
