//! Unpacking root filesystem tarballs and image layers into a directory (OCI image-spec
//! "Image Layer Filesystem Changeset": whiteouts `.wh.<name>` delete `<name>` of the layers
//! below, an opaque whiteout `.wh..wh..opq` empties its directory of them).
//!
//! Every entry is unpacked with `tar`'s `unpack_in`, which refuses absolute paths, `..` and
//! writes through a link that leaves the root. Device nodes and fifos are skipped (the sandbox
//! brings its own `/dev`); ownership is not kept (the sandbox maps its one user onto the
//! harness's, and the root filesystem is mounted read-only).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Component, Path, PathBuf};

use crate::error::{EnvError, io};

/// The prefix of a whiteout entry's file name.
const WHITEOUT_PREFIX: &str = ".wh.";
/// The file name of an opaque whiteout.
const OPAQUE: &str = ".wh..wh..opq";

/// What one unpack did, for the cache's metadata.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Entries written (files, directories, links).
    pub entries: u64,
    /// Whiteouts applied (opaque ones included).
    pub whiteouts: u64,
    /// Device nodes and fifos skipped.
    pub skipped: u64,
}

/// A tar stream's compression, told by its first bytes.
pub(crate) fn decompressed(path: &Path) -> Result<Box<dyn Read>, EnvError> {
    let mut file = BufReader::new(File::open(path).map_err(io(path))?);
    let mut magic = [0u8; 4];
    let read = read_up_to(&mut file, &mut magic).map_err(io(path))?;
    let file = std::io::Cursor::new(magic[..read].to_vec()).chain(file);
    Ok(match magic {
        [0x1f, 0x8b, _, _] => Box::new(flate2::read::GzDecoder::new(file)),
        [0x28, 0xb5, 0x2f, 0xfd] => Box::new(zstd::stream::read::Decoder::new(file).map_err(io(path))?),
        _ => Box::new(file),
    })
}

fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Unpacks the tarball (plain, gzip or zstd) at `archive` into `dest` as one layer over what
/// `dest` already holds, applying its whiteouts to that.
///
/// # Errors
/// [`EnvError::BadEntry`] for an entry that would land outside `dest`; [`EnvError::Io`].
pub fn unpack_layer(archive: &Path, dest: &Path) -> Result<UnpackStats, EnvError> {
    // Whiteouts first: they delete what the layers *below* hold, and an archive may list them
    // after files of its own in the same directory.
    let mut stats = UnpackStats::default();
    let mut tar = tar::Archive::new(decompressed(archive)?);
    for entry in tar.entries().map_err(io(archive))? {
        let entry = entry.map_err(io(archive))?;
        let rel = entry_path(archive, &entry)?;
        if let Some(target) = whiteout_target(&rel) {
            apply_whiteout(dest, &target).map_err(io(dest.join(&rel)))?;
            stats.whiteouts += 1;
        }
    }
    let mut tar = tar::Archive::new(decompressed(archive)?);
    tar.set_preserve_permissions(true);
    tar.set_preserve_mtime(true);
    tar.set_unpack_xattrs(false);
    tar.set_overwrite(true);
    for entry in tar.entries().map_err(io(archive))? {
        let mut entry = entry.map_err(io(archive))?;
        let rel = entry_path(archive, &entry)?;
        if whiteout_target(&rel).is_some() || rel.as_os_str().is_empty() {
            continue;
        }
        let kind = entry.header().entry_type();
        if kind.is_character_special() || kind.is_block_special() || kind.is_fifo() {
            stats.skipped += 1;
            continue;
        }
        replace_mismatched(dest, &rel, kind.is_dir()).map_err(io(dest.join(&rel)))?;
        let unpacked = entry.unpack_in(dest).map_err(|err| EnvError::BadEntry {
            archive: archive.to_path_buf(),
            entry: rel.display().to_string(),
            reason: err.to_string(),
        })?;
        if !unpacked {
            return Err(bad_entry(archive, &rel, "it would be written outside the root"));
        }
        stats.entries += 1;
    }
    Ok(stats)
}

fn bad_entry(archive: &Path, rel: &Path, reason: &str) -> EnvError {
    EnvError::BadEntry { archive: archive.to_path_buf(), entry: rel.display().to_string(), reason: reason.into() }
}

/// The entry's path relative to the root (`./etc/x` → `etc/x`); `..` and absolute refused.
fn entry_path<R: Read>(archive: &Path, entry: &tar::Entry<'_, R>) -> Result<PathBuf, EnvError> {
    let raw = entry.path().map_err(io(archive))?;
    let mut rel = PathBuf::new();
    for component in raw.components() {
        match component {
            Component::Normal(name) => rel.push(name),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::ParentDir => {
                return Err(bad_entry(archive, &raw, "expected a relative path without `..`"));
            }
        }
    }
    Ok(rel)
}

/// For a whiteout entry, what it removes: `Some(dir/name)` for `dir/.wh.name`, and
/// `Some(dir/.wh..wh..opq)` itself for an opaque whiteout (its directory's contents).
fn whiteout_target(rel: &Path) -> Option<PathBuf> {
    let name = rel.file_name()?.to_str()?;
    if name == OPAQUE {
        return Some(rel.to_path_buf());
    }
    let hidden = name.strip_prefix(WHITEOUT_PREFIX)?;
    Some(rel.with_file_name(hidden))
}

fn apply_whiteout(dest: &Path, target: &Path) -> std::io::Result<()> {
    if target.file_name().and_then(|n| n.to_str()) == Some(OPAQUE) {
        let dir = dest.join(target.parent().unwrap_or(Path::new("")));
        if !is_real_dir(&dir) {
            return Ok(());
        }
        for child in std::fs::read_dir(&dir)? {
            remove_any(&child?.path())?;
        }
        return Ok(());
    }
    remove_any(&dest.join(target))
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).map(|m| m.is_dir()).unwrap_or(false)
}

/// Removes a file, link or whole directory; a missing one is fine.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

/// A layer replaces what a lower one had at the path when the kinds differ (a directory over
/// a file or link, or the reverse), as an overlay would show it.
fn replace_mismatched(dest: &Path, rel: &Path, is_dir: bool) -> std::io::Result<()> {
    let path = dest.join(rel);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() != is_dir => remove_any(&path),
        _ => Ok(()),
    }
}

/// Bytes and entries under `root` (links not followed), for the cache's listing.
pub(crate) fn tree_size(root: &Path) -> (u64, u64) {
    let mut bytes = 0;
    let mut entries = 0;
    for entry in walkdir::WalkDir::new(root).min_depth(1).into_iter().flatten() {
        entries += 1;
        if let Ok(meta) = entry.metadata()
            && meta.is_file()
        {
            bytes += meta.len();
        }
    }
    (bytes, entries)
}
