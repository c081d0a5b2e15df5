//! Walking a package on disk: entry kinds, symlink containment, and the content hash.
//!
//! One walk serves three rules of DESIGN §2: a package holds only regular files, directories
//! and symlinks; every symlink stays inside its tree (its `workspace/`, its solution overlay,
//! or else the package) and is not part of a symlink loop; and the package's content hash
//! covers exactly what was walked.

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::error::LoadError;

/// What a walked entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Dir,
    File { executable: bool },
    Symlink { target: PathBuf },
}

/// One entry below the package root, in walk order.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Path relative to the package root.
    pub rel: PathBuf,
    pub kind: EntryKind,
}

/// Walks every entry below `root` (not following symlinks), siblings in byte order of their
/// names, and rejects anything that is not a regular file, directory or symlink.
pub(crate) fn walk(root: &Path) -> Result<Vec<Entry>, LoadError> {
    let mut entries = Vec::new();
    let walker = walkdir::WalkDir::new(root).follow_links(false).min_depth(1).sort_by_file_name();
    for item in walker {
        let item = item?;
        let path = item.path();
        let rel = path.strip_prefix(root).unwrap_or(path).to_path_buf();
        let file_type = item.file_type();
        let kind = if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_symlink() {
            EntryKind::Symlink { target: fs_err::read_link(path)? }
        } else if file_type.is_file() {
            let mode = fs_err::symlink_metadata(path)?.permissions().mode();
            EntryKind::File { executable: mode & 0o111 != 0 }
        } else {
            return Err(LoadError::SpecialFile { path: path.to_path_buf(), kind: special_kind(&file_type) });
        };
        entries.push(Entry { rel, kind });
    }
    Ok(entries)
}

/// What a file type is, in words ("a directory", "a fifo", ...), for messages.
pub(crate) fn kind_name(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        match special_kind(file_type) {
            "fifo" => "a fifo",
            "socket" => "a socket",
            "block device" => "a block device",
            "character device" => "a character device",
            _ => "a special file",
        }
    }
}

fn special_kind(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_fifo() {
        "fifo"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

/// The tree a package-relative path belongs to, for symlink containment: `workspace/`, one
/// solution overlay, or the package itself. Returns the tree's package-relative root.
fn tree_of(rel: &Path) -> PathBuf {
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let named = |i: usize, name: &str| parts.get(i).is_some_and(|p| *p == name);
    // The tree root itself (e.g. a `workspace` symlink) belongs to the package tree.
    if named(0, "workspace") && parts.len() > 1 {
        return PathBuf::from("workspace");
    }
    if named(0, "solutions") && (named(1, "gold") || named(1, "literal")) && parts.len() > 2 {
        return rel.iter().take(2).collect();
    }
    if named(0, "solutions") && named(1, "mutants") && parts.len() > 3 {
        return rel.iter().take(3).collect();
    }
    PathBuf::new()
}

/// Rejects symlinks whose target leaves their tree, lexically (absolute targets, `..` above
/// the tree root) or, when the target exists, after resolving every link on the way; and
/// symlinks that never resolve because they are part of a loop (`a -> b`, `b -> a`), since
/// anything that follows them (the agent's tools, an evaluator walking its files) would fail.
pub(crate) fn check_symlinks(root: &Path, entries: &[Entry]) -> Result<(), LoadError> {
    for entry in entries {
        let EntryKind::Symlink { target } = &entry.kind else {
            continue;
        };
        let tree = tree_of(&entry.rel);
        let in_tree = entry.rel.strip_prefix(&tree).unwrap_or(&entry.rel);
        let parent = in_tree.parent().unwrap_or(Path::new(""));
        let resolved = resolve(&root.join(&entry.rel), &root.join(&tree));
        if resolved == Resolved::Loop {
            return Err(LoadError::SymlinkLoop { path: root.join(&entry.rel), target: target.display().to_string() });
        }
        if !lexically_inside(parent, target) || resolved == Resolved::Outside {
            let label = if tree.as_os_str().is_empty() { "the package".to_owned() } else { format!("{}/", tree.display()) };
            return Err(LoadError::SymlinkEscapes { path: root.join(&entry.rel), target: target.display().to_string(), tree: label });
        }
    }
    Ok(())
}

/// Whether `target`, taken relative to `parent` (a path inside the tree), stays inside the
/// tree without consulting the file system.
pub(crate) fn lexically_inside(parent: &Path, target: &Path) -> bool {
    let mut depth: Vec<&std::ffi::OsStr> = parent
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    for component in target.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return false,
            Component::CurDir => {}
            Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            Component::Normal(name) => depth.push(name),
        }
    }
    true
}

/// Where a symlink leads once every link on the way is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolved {
    /// Inside the tree, or nowhere (a dangling link, judged by the lexical rule alone).
    InsideOrDangling,
    /// Outside the tree.
    Outside,
    /// Nowhere ever: the kernel gives up (`ELOOP`) because the links form a loop.
    Loop,
}

fn resolve(link: &Path, tree: &Path) -> Resolved {
    match (std::fs::canonicalize(link), std::fs::canonicalize(tree)) {
        (Ok(real), Ok(tree)) if !real.starts_with(&tree) => Resolved::Outside,
        (Err(err), _) if err.raw_os_error() == Some(libc::ELOOP) => Resolved::Loop,
        _ => Resolved::InsideOrDangling,
    }
}

/// Lexically normalises a relative path; `None` when it is absolute or climbs above its root.
pub(crate) fn normalize_relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return None,
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

/// The two content hashes of a package; every file is read once for both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContentHashes {
    /// The package's content hash: lowercase hex SHA-256 over every walked entry in walk order
    /// — its kind, its relative path, and its content (files, with the executable bit) or
    /// target (symlinks). Renaming, adding, removing, chmod +x or editing any file changes it.
    pub package: String,
    /// The same over `workspace/` alone, paths relative to it and under its own domain tag:
    /// equal for packages whose workspaces are equal whatever else differs, so the harness's
    /// per-workspace work (the git base) is shared between them (issue 32).
    pub workspace: String,
}

/// [`ContentHashes`] of the walked `entries` below `root`: every entry is fed to the package
/// hasher and, when it lies under `workspace/`, to the workspace hasher too.
pub(crate) fn content_hashes(root: &Path, entries: &[Entry]) -> Result<ContentHashes, LoadError> {
    let mut package = Sha256::new();
    package.update(b"specgap-package-hash-v1\0");
    let mut workspace = Sha256::new();
    workspace.update(b"specgap-workspace-hash-v1\0");
    for entry in entries {
        // The path is the one thing the two hashes see differently: relative to the package
        // root, and to workspace/.
        let in_workspace = entry.rel.strip_prefix("workspace").ok().filter(|rel| !rel.as_os_str().is_empty());
        let mut hashers = HashWriter(vec![(&mut package, entry.rel.as_os_str().as_bytes())]);
        if let Some(rel) = in_workspace {
            hashers.0.push((&mut workspace, rel.as_os_str().as_bytes()));
        }
        hash_entry(root, entry, &mut hashers)?;
    }
    Ok(ContentHashes { package: to_hex(&package.finalize()), workspace: to_hex(&workspace.finalize()) })
}

/// Feeds one entry to every hasher of `hashers`: its kind tag, the hasher's own relative
/// path for it, and its length and content (files) or target (symlinks).
fn hash_entry(root: &Path, entry: &Entry, hashers: &mut HashWriter<'_>) -> Result<(), LoadError> {
    let tag: &[u8] = match entry.kind {
        EntryKind::Dir => b"d",
        EntryKind::File { executable: false } => b"f",
        EntryKind::File { executable: true } => b"x",
        EntryKind::Symlink { .. } => b"l",
    };
    for (hasher, rel) in &mut hashers.0 {
        hasher.update(tag);
        hasher.update(rel);
        hasher.update(b"\0");
    }
    match &entry.kind {
        EntryKind::Dir => {}
        EntryKind::File { .. } => {
            let path = root.join(&entry.rel);
            let len = fs_err::symlink_metadata(&path)?.len();
            hashers.update(&len.to_le_bytes());
            let mut file = fs_err::File::open(&path)?;
            std::io::copy(&mut file, hashers)?;
        }
        EntryKind::Symlink { target } => {
            hashers.update(target.as_os_str().as_bytes());
            hashers.update(b"\0");
        }
    }
    Ok(())
}

/// Feeds what is written to each hasher (each paired with the entry's path as it sees it).
struct HashWriter<'a>(Vec<(&'a mut Sha256, &'a [u8])>);

impl HashWriter<'_> {
    fn update(&mut self, bytes: &[u8]) {
        for (hasher, _) in &mut self.0 {
            hasher.update(bytes);
        }
    }
}

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_containment() {
        assert!(lexically_inside(Path::new("a/b"), Path::new("../c")));
        assert!(lexically_inside(Path::new("a"), Path::new("..")));
        assert!(!lexically_inside(Path::new("a"), Path::new("../..")));
        assert!(!lexically_inside(Path::new(""), Path::new("/etc/passwd")));
        assert!(!lexically_inside(Path::new(""), Path::new("x/../../y")));
    }

    #[test]
    fn tree_of_names_the_overlay() {
        assert_eq!(tree_of(Path::new("workspace/a/b")), PathBuf::from("workspace"));
        assert_eq!(tree_of(Path::new("workspace")), PathBuf::new());
        assert_eq!(tree_of(Path::new("solutions/gold/x")), PathBuf::from("solutions/gold"));
        assert_eq!(tree_of(Path::new("solutions/mutants/m/x")), PathBuf::from("solutions/mutants/m"));
        assert_eq!(tree_of(Path::new("evaluator/x")), PathBuf::new());
    }

    #[test]
    fn normalize_rejects_climbing() {
        assert_eq!(normalize_relative(Path::new("a/./b/../c")), Some(PathBuf::from("a/c")));
        assert_eq!(normalize_relative(Path::new("a/../../c")), None);
        assert_eq!(normalize_relative(Path::new("/a")), None);
    }

    #[test]
    fn hex_is_lowercase_two_digits() {
        assert_eq!(to_hex(&[0, 10, 255]), "000aff");
    }
}
