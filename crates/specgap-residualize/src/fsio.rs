//! File helpers: atomic writes, stage files as JSON, and package copies that keep every
//! entry as it is (so the copy has the package's content hash).

use std::io::Write as _;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ResidualizeError;

/// Writes `bytes` to `path` through `path.tmp` and a rename: readers see the old file or the
/// whole new one, and a crash never leaves half a stage file.
///
/// # Errors
/// I/O errors naming the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ResidualizeError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let mut file = fs_err::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    drop(file);
    fs_err::rename(&tmp, path)?;
    Ok(())
}

/// Writes `value` as pretty JSON (with a final newline) to `path`, atomically.
///
/// # Errors
/// [`ResidualizeError::Serialize`]; I/O errors.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), ResidualizeError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| ResidualizeError::Serialize { path: path.to_path_buf(), message: e.to_string() })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Reads the JSON stage file at `path`; `None` when it does not exist.
///
/// # Errors
/// [`ResidualizeError::BadStageFile`] when it does not parse; I/O errors.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ResidualizeError> {
    if !path.exists() {
        return Ok(None);
    }
    let bytes = fs_err::read(path)?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ResidualizeError::BadStageFile { path: path.to_path_buf(), message: e.to_string() })
}

/// Copies the package at `src` to `dest` (which must not exist): directories, regular files
/// with their permission bits, and symbolic links as links (never followed).
///
/// # Errors
/// I/O errors naming the path.
pub fn copy_package(src: &Path, dest: &Path) -> Result<(), ResidualizeError> {
    let staging = dest
        .with_file_name(format!(".{}.copying", dest.file_name().map_or_else(|| "package".into(), |n| n.to_string_lossy().into_owned())));
    if staging.exists() {
        fs_err::remove_dir_all(&staging)?;
    }
    for entry in walkdir::WalkDir::new(src).follow_links(false).sort_by_file_name() {
        let entry = entry.map_err(|e| std::io::Error::other(format!("cannot walk {}: {e}", src.display())))?;
        let relative = entry.path().strip_prefix(src).map_err(std::io::Error::other)?;
        let to = staging.join(relative);
        let kind = entry.file_type();
        if kind.is_dir() {
            fs_err::create_dir_all(&to)?;
        } else if kind.is_symlink() {
            let target = fs_err::read_link(entry.path())?;
            std::os::unix::fs::symlink(&target, &to)
                .map_err(|e| std::io::Error::new(e.kind(), format!("cannot link {}: {e}", to.display())))?;
        } else {
            fs_err::copy(entry.path(), &to)?;
        }
    }
    // The copy appears at `dest` whole or not at all.
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent)?;
    }
    fs_err::rename(&staging, dest)?;
    Ok(())
}
