//! Path confinement for the file tools (DESIGN §3): every path an agent names is relative to
//! the workspace and must stay inside it.
//!
//! [`WorkspaceRoot::resolve`] refuses absolute paths and `..` components outright, then walks
//! the path one component at a time from the canonical workspace root. An existing component
//! that is a symlink is resolved with `canonicalize` and must land inside the root; a link
//! whose target is missing is refused (writing through it would create a file wherever it
//! points). Components past the last existing one are plain names (no `..` survived the first
//! check), so the result cannot leave the workspace. The walk never follows a link out.
//!
//! File names are bytes. A path given in double quotes is read as `list_files` writes names
//! that are not plain text (`specgap_protocol::path_quote`: C-style escapes such as `\n`,
//! `\"`, `\\` and `\351`) and stands for those exact bytes; every check above applies to the
//! unquoted bytes, and a NUL byte is refused. Any other path is taken as it is written.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use specgap_protocol::path_quote;

/// The canonical root of an episode's workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRoot {
    root: PathBuf,
}

/// Why a path is refused; the message is shown to the agent as a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    /// The path is empty.
    #[error("the path is empty; give a path relative to the workspace, e.g. `src/main.py` or `.`")]
    Empty,
    /// An absolute path.
    #[error("`{0}` is absolute; paths must be relative to the workspace")]
    Absolute(String),
    /// A `..` component.
    #[error("`{0}` contains `..`; paths must stay inside the workspace")]
    Parent(String),
    /// A symlink on the path resolves outside the workspace.
    #[error("`{0}` goes through a link that leads outside the workspace")]
    LeavesWorkspace(String),
    /// A symlink on the path has no target.
    #[error("`{0}` goes through a link whose target does not exist")]
    DanglingLink(String),
    /// The path holds a NUL byte (only a quoted path can).
    #[error("`{0}` contains a NUL byte, which no file name can hold")]
    Nul(String),
    /// The path could not be inspected.
    #[error("cannot inspect `{0}`: {1}")]
    Inspect(String, String),
}

impl WorkspaceRoot {
    /// Canonicalizes the workspace directory.
    ///
    /// # Errors
    /// The I/O error of `canonicalize` (the directory does not exist).
    pub fn new(dir: &Path) -> io::Result<Self> {
        Ok(WorkspaceRoot { root: fs_err::canonicalize(dir)? })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Resolves a workspace-relative path to a host path inside the workspace (module guide).
    ///
    /// # Errors
    /// [`PathRefusal`] saying why the path is refused.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, PathRefusal> {
        let bytes = path_quote::unquote(rel).unwrap_or_else(|| rel.as_bytes().to_vec());
        if bytes.is_empty() {
            return Err(PathRefusal::Empty);
        }
        if bytes.contains(&0) {
            return Err(PathRefusal::Nul(rel.into()));
        }
        let path = Path::new(OsStr::from_bytes(&bytes));
        if path.is_absolute() || bytes.starts_with(b"~") {
            return Err(PathRefusal::Absolute(rel.into()));
        }
        let mut names = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(name) => names.push(name),
                Component::CurDir => {}
                Component::ParentDir => return Err(PathRefusal::Parent(rel.into())),
                Component::RootDir | Component::Prefix(_) => return Err(PathRefusal::Absolute(rel.into())),
            }
        }
        let mut current = self.root.clone();
        let mut rest = names.into_iter();
        for name in rest.by_ref() {
            let next = current.join(name);
            match fs_err::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = std::fs::canonicalize(&next).map_err(|_| PathRefusal::DanglingLink(rel.into()))?;
                    if !target.starts_with(&self.root) {
                        return Err(PathRefusal::LeavesWorkspace(rel.into()));
                    }
                    current = target;
                }
                Ok(_) => current = next,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    current = next;
                    break;
                }
                Err(e) => return Err(PathRefusal::Inspect(rel.into(), e.kind().to_string())),
            }
        }
        for name in rest {
            current.push(name);
        }
        Ok(current)
    }

    /// The workspace-relative form of a host path inside the workspace (for listings).
    pub fn relative<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        path.strip_prefix(&self.root).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn refusals_and_resolutions() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = WorkspaceRoot::new(dir.path()).unwrap();
        fs_err::create_dir_all(dir.path().join("src")).unwrap();
        fs_err::write(dir.path().join("src/a.py"), "x").unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        symlink("src", dir.path().join("inside")).unwrap();
        symlink("nowhere", dir.path().join("dangling")).unwrap();
        let root = ws.path().to_path_buf();
        assert_eq!(ws.resolve("src/a.py"), Ok(root.join("src/a.py")));
        assert_eq!(ws.resolve("./src/new/b.py"), Ok(root.join("src/new/b.py")));
        assert_eq!(ws.resolve("inside/a.py"), Ok(root.join("src/a.py")));
        assert_eq!(ws.resolve("."), Ok(root.clone()));
        assert_eq!(ws.resolve("/etc/passwd"), Err(PathRefusal::Absolute("/etc/passwd".into())));
        assert_eq!(ws.resolve("src/../../x"), Err(PathRefusal::Parent("src/../../x".into())));
        assert_eq!(ws.resolve("out/secret"), Err(PathRefusal::LeavesWorkspace("out/secret".into())));
        assert_eq!(ws.resolve("dangling"), Err(PathRefusal::DanglingLink("dangling".into())));
        assert_eq!(ws.resolve(""), Err(PathRefusal::Empty));
    }

    #[test]
    fn quoted_paths_name_their_exact_bytes_and_are_confined_alike() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = WorkspaceRoot::new(dir.path()).unwrap();
        let root = ws.path().to_path_buf();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        let refused = |text: &str| ws.resolve(text).unwrap_err();
        assert_eq!(ws.resolve(r#""caf\351.txt""#), Ok(root.join(OsStr::from_bytes(b"caf\xe9.txt"))));
        assert_eq!(ws.resolve(r#""two\nlines""#), Ok(root.join("two\nlines")));
        assert_eq!(ws.resolve(r#""\"quoted\"""#), Ok(root.join("\"quoted\"")));
        // Not well-formed quoting: the text is the name.
        assert_eq!(ws.resolve(r#""open"#), Ok(root.join("\"open")));
        // Escapes cannot smuggle in a root, `~`, `..`, a NUL or a way out through a link.
        assert_eq!(refused(r#""\057etc/passwd""#), PathRefusal::Absolute(r#""\057etc/passwd""#.into()));
        assert_eq!(refused(r#""\176/x""#), PathRefusal::Absolute(r#""\176/x""#.into()));
        assert_eq!(refused(r#""..\057x""#), PathRefusal::Parent(r#""..\057x""#.into()));
        assert_eq!(refused(r#""a\000b""#), PathRefusal::Nul(r#""a\000b""#.into()));
        assert_eq!(refused(r#""o\165t/secret""#), PathRefusal::LeavesWorkspace(r#""o\165t/secret""#.into()));
        assert_eq!(refused(r#""""#), PathRefusal::Empty);
    }
}
