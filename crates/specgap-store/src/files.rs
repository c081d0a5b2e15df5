//! Small file helpers: atomic writes, whole-file reads, recursive copy and removal.

use std::io::{Read, Write};
use std::path::Path;

use crate::error::StoreError;

/// Bytes read up front by [`read_whole`]; larger files grow the buffer as they are read.
const READ_START: usize = 8 << 10;

/// Reads the whole file at `path` (errors name the path). Unlike `fs::read`, it asks for no
/// size hint — `fs::read` adds two `statx` and an `lseek` to every file, which is most of the
/// cost when a report reads thousands of trajectories of a few hundred bytes.
///
/// # Errors
/// I/O errors opening or reading `path`.
pub(crate) fn read_whole(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = fs_err::File::open(path)?;
    let mut bytes = Vec::with_capacity(READ_START);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `bytes` to `path` through `path.tmp` and a rename, so readers see the old file or
/// the whole new one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp_name);
    let mut file = fs_err::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    drop(file);
    fs_err::rename(&tmp, path)?;
    Ok(())
}

/// Whether `dir` does not exist or holds no entry but those named in `allowed`.
pub(crate) fn is_missing_or_only(dir: &Path, allowed: &[&str]) -> Result<bool, StoreError> {
    if !dir.exists() {
        return Ok(true);
    }
    for entry in fs_err::read_dir(dir)? {
        let name = entry?.file_name();
        if !allowed.iter().any(|a| name == *a) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether `dir` does not exist or has no entries.
pub(crate) fn is_missing_or_empty(dir: &Path) -> Result<bool, StoreError> {
    is_missing_or_only(dir, &[])
}

/// Removes `dir` and everything in it, if it exists.
pub(crate) fn remove_dir_if_exists(dir: &Path) -> Result<(), StoreError> {
    if dir.exists() {
        fs_err::remove_dir_all(dir)?;
    }
    Ok(())
}

/// Copies the tree under `src` to `dst` (created), files and directories only.
pub(crate) fn copy_dir(src: &Path, dst: &Path) -> Result<(), StoreError> {
    fs_err::create_dir_all(dst)?;
    for entry in fs_err::read_dir(src)? {
        let entry = entry?;
        let target = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs_err::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
