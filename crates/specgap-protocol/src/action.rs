//! What an agent's step did with the workspace's files, in one vocabulary for every kind of
//! agent: the harness's own tools (`read_text`, `replace_text`, …), the commands of a shell
//! tool, and the read / grep / edit tools of external agent CLIs.
//!
//! Seed 001 App. D.2 asks which files a continuation *opened* (an action that exposed the
//! file's contents to the agent) and whether it *inspected* the inherited changes (`git status`,
//! `git diff`, or reading a file the predecessor modified). Those questions are answered over
//! [`FileAction`]s, so an adapter that records its agent's structured tools as actions gets the
//! same measures as the shell analysis of `specgap-report` (`opened` module), which derives
//! them from commands and their results.
//!
//! An adapter maps its tools like this (examples; the adapter owns the mapping):
//!
//! | agent tool | action |
//! | --- | --- |
//! | a file viewer (`read_text`, `Read`, `view`) | [`ActionKind::Read`] of the file, `ok` = the tool did not fail |
//! | a content search (`grep` with matching lines) | one [`ActionKind::Search`] per file whose lines the result shows |
//! | a path search (`glob`, `grep -l`, `ls`, `find`) | [`ActionKind::List`] |
//! | create or overwrite (`write_text`, `Write`) | [`ActionKind::Write`] |
//! | change in place (`replace_text`, `Edit`, `sed -i`, `>>`) | [`ActionKind::Edit`] |
//! | anything else that executes (`python3 x.py`, `make`) | [`ActionKind::Run`] |

use serde::{Deserialize, Serialize};

/// The kind of a [`FileAction`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// The file's content (all or part of it) was shown to the agent: a viewer, `cat`, `head`,
    /// `sed -n`, a `git diff` whose output carries the file's hunk. Reading a file into another
    /// file or into a program that prints nothing of it (`cat a > b`, `cat a | wc -l`) is not a
    /// read.
    Read,
    /// A file was created or overwritten (`write_text`, `cat > f`, `cp a f`, `tee f`).
    Write,
    /// A file was changed in place (`replace_text`, `sed -i`, `echo x >> f`).
    Edit,
    /// A content search showed lines of the file (`grep -n key src` printing `src/a.py:3:…`).
    /// A search that showed no line of any file has no path.
    Search,
    /// Paths, counts or metadata were listed without content (`ls`, `find`, `rg --files`,
    /// `grep -l`, `wc`, `git status`, `git diff --stat`).
    List,
    /// A program ran (`python3 -m unittest`, `make`); what it did to files is not known.
    Run,
}

impl ActionKind {
    /// The kind's name as serialized (`read`, `write`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Read => "read",
            ActionKind::Write => "write",
            ActionKind::Edit => "edit",
            ActionKind::Search => "search",
            ActionKind::List => "list",
            ActionKind::Run => "run",
        }
    }

    /// Whether an action of this kind exposes the content of its path to the agent (seed 001
    /// App. D.2 "opens"): [`ActionKind::Read`] and [`ActionKind::Search`].
    pub fn exposes_content(self) -> bool {
        matches!(self, ActionKind::Read | ActionKind::Search)
    }
}

/// One thing an agent's step did with the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileAction {
    /// What kind of thing.
    pub kind: ActionKind,
    /// The file or directory concerned, relative to the workspace root, normalized (no `.`,
    /// `..` or leading `./`; `/`-separated). `None` when the action concerns no path inside the
    /// workspace (a run, a listing of a path outside it, a search that showed nothing).
    pub path: Option<String>,
    /// The tool or program that did it: `read_text`, `cat`, `grep`, `git diff`, `git status`,
    /// an external agent's tool name.
    pub via: String,
    /// Whether it did what it attempted: false for a read of a file that does not exist, a
    /// write the shell refused, a tool call that returned an error.
    pub ok: bool,
}

impl FileAction {
    /// An action with a path.
    pub fn on(kind: ActionKind, path: impl Into<String>, via: impl Into<String>, ok: bool) -> Self {
        FileAction { kind, path: Some(path.into()), via: via.into(), ok }
    }

    /// An action without a path.
    pub fn bare(kind: ActionKind, via: impl Into<String>, ok: bool) -> Self {
        FileAction { kind, path: None, via: via.into(), ok }
    }

    /// Whether it successfully exposed the content of `path` (workspace-relative).
    pub fn opens(&self, path: &str) -> bool {
        self.ok && self.kind.exposes_content() && self.path.as_deref() == Some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_in_snake_case_and_only_reads_and_searches_open() {
        let read = FileAction::on(ActionKind::Read, "src/a.py", "cat", true);
        assert_eq!(serde_json::to_string(&read).unwrap(), r#"{"kind":"read","path":"src/a.py","via":"cat","ok":true}"#);
        assert!(read.opens("src/a.py"));
        assert!(!read.opens("src/b.py"));
        let failed = FileAction::on(ActionKind::Read, "src/a.py", "cat", false);
        assert!(!failed.opens("src/a.py"));
        let write = FileAction::on(ActionKind::Write, "src/a.py", "write_text", true);
        assert!(!write.opens("src/a.py"));
        let kinds: Vec<&str> =
            [ActionKind::Read, ActionKind::Write, ActionKind::Edit, ActionKind::Search, ActionKind::List, ActionKind::Run]
                .iter()
                .map(|k| k.as_str())
                .collect();
        assert_eq!(kinds, ["read", "write", "edit", "search", "list", "run"]);
        let back: FileAction = serde_json::from_str(r#"{"kind":"search","path":null,"via":"Grep","ok":true}"#).unwrap();
        assert_eq!(back, FileAction::bare(ActionKind::Search, "Grep", true));
    }
}
