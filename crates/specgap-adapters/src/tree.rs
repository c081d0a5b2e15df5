//! The installed tree's hash (part of a `cli:` agent's configuration hash, so its episode key)
//! and a cheap fingerprint to notice changes without reading every file.
//!
//! **Tree hash**: lowercase hex sha256 over one line per entry below the installation
//! directory, in byte order of the relative path, skipping the manifest and every
//! `__pycache__` directory (Python writes and rewrites bytecode there; its content follows the
//! sources):
//!
//! ```text
//! d <path>
//! f <x|-> <size> <sha256 of the content> <path>      (size and content as normalized)
//! l <target> <path>
//! ```
//!
//! The installation's own absolute path, wherever it occurs in a link target or in a file of
//! at most [`NORMALIZED_FILE_LIMIT`] bytes (venv scripts' `#!` lines, `pyvenv.cfg`), is replaced
//! by `${SPECGAP_AGENT_DIR}` before hashing, so the same version installed from the same lock
//! under another home directory hashes the same; the interpreter a venv points at does not
//! change with it, and does count. Special files are refused.
//!
//! **Fingerprint**: sha256 over `<path> <kind> <size> <mtime ns> <mode>` lines of the same
//! entries — only metadata, so checking it costs one `lstat` per file. A matching fingerprint
//! trusts the stored tree hash; a different one makes the tree hash be computed again.

use std::io::{self, Read as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The manifest's file name, left out of the hash.
pub const MANIFEST_FILE: &str = "specgap-install.toml";
/// What the installation's path is replaced by before hashing.
pub const DIR_PLACEHOLDER: &[u8] = b"${SPECGAP_AGENT_DIR}";
/// Files up to this size have the installation's path replaced before hashing.
pub const NORMALIZED_FILE_LIMIT: u64 = 1 << 20;

/// Why a tree cannot be hashed.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// An entry that is not a file, directory or link.
    #[error("{} is a special file (fifo, socket or device); an installation holds none", path.display())]
    Special {
        /// The path.
        path: PathBuf,
    },
    /// Reading failed.
    #[error("cannot read {}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

enum Kind {
    Dir,
    File,
    Link,
}

struct Entry {
    relative: Vec<u8>,
    absolute: PathBuf,
    kind: Kind,
    metadata: std::fs::Metadata,
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TreeError + '_ {
    move |source| TreeError::Io { path: path.to_path_buf(), source }
}

/// Every entry below `root` (not `root` itself), sorted by relative path bytes.
fn entries(root: &Path) -> Result<Vec<Entry>, TreeError> {
    let mut found = Vec::new();
    let mut pending = vec![(root.to_path_buf(), Vec::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for item in std::fs::read_dir(&dir).map_err(io_error(&dir))? {
            let item = item.map_err(io_error(&dir))?;
            let name = item.file_name();
            let absolute = item.path();
            let mut relative = prefix.clone();
            if !relative.is_empty() {
                relative.push(b'/');
            }
            relative.extend_from_slice(name.as_bytes());
            if relative == MANIFEST_FILE.as_bytes() {
                continue;
            }
            let metadata = std::fs::symlink_metadata(&absolute).map_err(io_error(&absolute))?;
            let file_type = metadata.file_type();
            let kind = if file_type.is_symlink() {
                Kind::Link
            } else if file_type.is_dir() {
                if name == "__pycache__" {
                    continue;
                }
                pending.push((absolute.clone(), relative.clone()));
                Kind::Dir
            } else if file_type.is_file() {
                Kind::File
            } else {
                return Err(TreeError::Special { path: absolute });
            };
            found.push(Entry { relative, absolute, kind, metadata });
        }
    }
    found.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(found)
}

/// `bytes` with every occurrence of `needle` replaced by [`DIR_PLACEHOLDER`].
fn normalized(bytes: &[u8], needle: &[u8]) -> Vec<u8> {
    if needle.is_empty() || bytes.len() < needle.len() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(needle) {
            out.extend_from_slice(DIR_PLACEHOLDER);
            i += needle.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The size and sha256 of a file's content, normalized when it is small enough.
fn file_digest(path: &Path, size: u64, needle: &[u8]) -> Result<(u64, String), TreeError> {
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(path).map_err(io_error(path))?;
    let hashed = if size <= NORMALIZED_FILE_LIMIT {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_error(path))?;
        let bytes = normalized(&bytes, needle);
        hasher.update(&bytes);
        bytes.len() as u64
    } else {
        io::copy(&mut file, &mut hasher).map_err(io_error(path))?
    };
    Ok((hashed, hex(&hasher.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tree hash of the installation at `root` (module guide).
///
/// # Errors
/// [`TreeError`] for a special file or a read failure.
pub fn tree_hash(root: &Path) -> Result<String, TreeError> {
    let needle = root.as_os_str().as_bytes();
    let mut listing = Sha256::new();
    for entry in entries(root)? {
        let line = match entry.kind {
            Kind::Dir => [b"d ".as_slice(), &entry.relative].concat(),
            Kind::Link => {
                let target = std::fs::read_link(&entry.absolute).map_err(io_error(&entry.absolute))?;
                [b"l ".as_slice(), &normalized(target.as_os_str().as_bytes(), needle), b" ", &entry.relative].concat()
            }
            Kind::File => {
                let executable = if entry.metadata.permissions().mode() & 0o111 != 0 { "x" } else { "-" };
                let (size, digest) = file_digest(&entry.absolute, entry.metadata.len(), needle)?;
                [format!("f {executable} {size} {digest} ").as_bytes(), &entry.relative].concat()
            }
        };
        listing.update(&line);
        listing.update(b"\n");
    }
    Ok(hex(&listing.finalize()))
}

/// The metadata fingerprint of the tree at `root` (module guide).
///
/// # Errors
/// [`TreeError`].
pub fn fingerprint(root: &Path) -> Result<String, TreeError> {
    let mut listing = Sha256::new();
    for entry in entries(root)? {
        let kind = match entry.kind {
            Kind::Dir => 'd',
            Kind::File => 'f',
            Kind::Link => 'l',
        };
        let m = &entry.metadata;
        listing.update(&entry.relative);
        listing.update(format!(" {kind} {} {}.{} {:o}\n", m.len(), m.mtime(), m.mtime_nsec(), m.mode()).as_bytes());
    }
    Ok(hex(&listing.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) {
        std::fs::create_dir_all(root.join("venv/bin")).unwrap();
        std::fs::create_dir_all(root.join("venv/lib/__pycache__")).unwrap();
        std::fs::write(root.join("venv/bin/mini"), format!("#!{}/venv/bin/python\nimport x\n", root.display())).unwrap();
        std::fs::set_permissions(root.join("venv/bin/mini"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("venv/lib/x.py"), "print(1)\n").unwrap();
        std::fs::write(root.join("venv/lib/__pycache__/x.cpython-311.pyc"), "bytecode").unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3.11", root.join("venv/bin/python")).unwrap();
        std::fs::write(root.join(MANIFEST_FILE), "anything").unwrap();
    }

    #[test]
    fn the_hash_ignores_where_the_tree_lives_and_its_manifest_and_bytecode() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ra, rb) = (a.path().join("x/2.4.6"), b.path().join("a-much-longer-home/2.4.6"));
        tree(&ra);
        tree(&rb);
        let hash = tree_hash(&ra).unwrap();
        assert_eq!(hash.len(), 64);
        assert_eq!(hash, tree_hash(&rb).unwrap());
        std::fs::write(ra.join(MANIFEST_FILE), "changed").unwrap();
        std::fs::write(ra.join("venv/lib/__pycache__/x.cpython-311.pyc"), "other bytecode").unwrap();
        assert_eq!(tree_hash(&ra).unwrap(), hash);
    }

    #[test]
    fn content_mode_and_link_targets_change_the_hash_and_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        tree(&root);
        let (hash, print) = (tree_hash(&root).unwrap(), fingerprint(&root).unwrap());
        assert_eq!(print, fingerprint(&root).unwrap());
        std::fs::write(root.join("venv/lib/x.py"), "print(2)\n").unwrap();
        let edited = tree_hash(&root).unwrap();
        assert_ne!(edited, hash);
        assert_ne!(fingerprint(&root).unwrap(), print);
        std::fs::set_permissions(root.join("venv/lib/x.py"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_ne!(tree_hash(&root).unwrap(), edited);
        let moded = tree_hash(&root).unwrap();
        std::fs::remove_file(root.join("venv/bin/python")).unwrap();
        std::os::unix::fs::symlink("/root/.pyenv/versions/3.11.7/bin/python3.11", root.join("venv/bin/python")).unwrap();
        assert_ne!(tree_hash(&root).unwrap(), moded);
    }

    #[test]
    fn special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(dir.path().join("pipe").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(matches!(tree_hash(dir.path()), Err(TreeError::Special { .. })));
    }

    #[test]
    fn normalization_replaces_every_occurrence() {
        assert_eq!(normalized(b"/a/b:/a/b/c", b"/a/b"), b"${SPECGAP_AGENT_DIR}:${SPECGAP_AGENT_DIR}/c".to_vec());
        assert_eq!(normalized(b"/a", b"/a/b"), b"/a".to_vec());
    }
}
