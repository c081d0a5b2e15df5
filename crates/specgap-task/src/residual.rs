//! Residual states (seed 001 §3.2, App. B and D.2): which files a state's patch touches, which
//! files the gold solution changes, and the files the state *left out* — the ones the gold
//! changes and the predecessor never touched.
//!
//! One definition serves `specgap check` (which compares it with `meta.toml`'s `left_out`, or
//! shows it when that is absent) and the report's Left-out files measure, so the two can never
//! disagree about a state:
//!
//! * a file the gold changes: a regular file of the gold overlay whose bytes differ from (or
//!   are absent in) the starter workspace, or a path its `delete.txt` removes;
//! * a file a patch touches: every file named by a `diff --git` section of `state.patch`
//!   (modified, added, deleted, binary, mode-only), the new side's name when `+++ b/…` gives one;
//! * left out: the first set minus the second ([`left_out_files`]).
//!
//! Paths are workspace-relative with `/` separators, as `meta.toml` lists them.

use std::collections::BTreeSet;
use std::path::Path;

use crate::package::{Overlay, ResidualState, TaskPackage};
use specgap_protocol::path_quote;

/// Why the left-out files of a state could not be computed: reading `state.patch` or the gold
/// overlay failed (the message names the path).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeftOutError {
    /// Reading a file (`state.patch`, a gold file) failed.
    #[error("cannot compute the left-out files: {0}")]
    Read(#[from] std::io::Error),
    /// Walking the gold overlay failed.
    #[error("cannot compute the left-out files: {0}")]
    Walk(#[from] walkdir::Error),
}

/// The left-out files of `state` (seed 001 App. D.2 L): files the gold overlay changes minus
/// the files `state.patch` touches, sorted. `Ok(None)` when the package has no gold, so there
/// is nothing to compute them from. `meta.toml`'s `left_out` is not consulted: this is the
/// value it must equal.
///
/// # Errors
/// [`LeftOutError`] when `state.patch` or the gold overlay cannot be read.
pub fn left_out_files(package: &TaskPackage, state: &ResidualState) -> Result<Option<BTreeSet<String>>, LeftOutError> {
    let Some(gold) = package.solutions().gold.as_ref() else {
        return Ok(None);
    };
    let gold_changes = overlay_changed_files(gold, &package.workspace_dir())?;
    let patch = fs_err::read(&state.patch)?;
    let touched = patch_files(&String::from_utf8_lossy(&patch));
    Ok(Some(gold_changes.difference(&touched).cloned().collect()))
}

/// Workspace-relative files an overlay changes: regular files whose bytes differ from (or are
/// absent in) `workspace`, and the paths its `delete.txt` removes. Symbolic links in the
/// overlay are not counted.
///
/// # Errors
/// [`LeftOutError`] when the overlay cannot be walked or one of its files read.
pub fn overlay_changed_files(overlay: &Overlay, workspace: &Path) -> Result<BTreeSet<String>, LeftOutError> {
    let mut changed = BTreeSet::new();
    for entry in walkdir::WalkDir::new(&overlay.dir).sort_by_file_name() {
        let entry = entry?;
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&overlay.dir) else {
            continue;
        };
        if relative == Path::new("delete.txt") {
            continue;
        }
        let new = fs_err::read(entry.path())?;
        // A workspace file that cannot be read counts as absent: the gold writes it anew.
        let old = std::fs::read(workspace.join(relative)).ok();
        if old.as_deref() != Some(new.as_slice()) {
            changed.insert(slash_path(relative));
        }
    }
    for deleted in &overlay.delete {
        changed.insert(slash_path(deleted));
    }
    Ok(changed)
}

fn slash_path(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Files a `git diff` text touches: the path of every `diff --git` section, replaced by the
/// `+++ b/<path>` name when the section gives one. Text that is not a diff touches nothing.
pub fn patch_files(text: &str) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut in_hunk = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            current = diff_header_path(rest);
            files.extend(current.clone());
            in_hunk = false;
            continue;
        }
        let Some(path) = current.as_ref() else {
            continue;
        };
        if in_hunk {
            continue;
        }
        if let Some(new) = line.strip_prefix("+++ ") {
            if let Some(named) = diff_side_path(new, "b/")
                && &named != path
            {
                files.remove(path);
                files.insert(named.clone());
                current = Some(named);
            }
        } else if line.starts_with("@@") {
            in_hunk = true;
        }
    }
    files
}

/// The path of a `diff --git a/<p> b/<p>` header (the text after `diff --git `). Both sides are
/// equal without renames (the harness diffs with `--no-renames`), so the split is at the
/// middle; otherwise at the first ` b/`. Quoted names (`"a/…" "b/…"`, git's C-style quoting)
/// give the second, unquoted: inside quotes every `"` is escaped, so ` "b/` starts it.
pub fn diff_header_path(rest: &str) -> Option<String> {
    let rest = rest.trim_end();
    if let Some(body) = rest.strip_prefix("a/") {
        // body = "<p> b/<p>": len = 2·|p| + 3.
        if body.len() >= 3 && (body.len() - 3) % 2 == 0 {
            let n = (body.len() - 3) / 2;
            if body.is_char_boundary(n) && body[n..].starts_with(" b/") && body[..n] == body[n + 3..] {
                return Some(body[..n].to_string());
            }
        }
        return body.find(" b/").map(|at| body[..at].to_string());
    }
    rest.rsplit_once(" \"b/").and_then(|(_, p)| diff_side_path(&format!("\"b/{p}"), "b/"))
}

/// The path of a `--- a/<p>` / `+++ b/<p>` line (the text after the marker) without its
/// `prefix`; a quoted name is unquoted (its bytes, shown lossily where they are not UTF-8), so
/// `"b/caf\303\251.txt"` is `café.txt`; `None` for `/dev/null` or another prefix.
pub fn diff_side_path(text: &str, prefix: &str) -> Option<String> {
    let text = text.trim_end();
    match path_quote::unquote(text) {
        Some(bytes) => bytes.strip_prefix(prefix.as_bytes()).map(|name| String::from_utf8_lossy(name).into_owned()),
        None => text.strip_prefix(prefix).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_files_lists_every_section() {
        let patch = "\
diff --git a/src/a b.py b/src/a b.py
index 1..2 100644
--- a/src/a b.py
+++ b/src/a b.py
@@ -1 +1 @@
-x
+++ b/not-a-header
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/new.bin b/new.bin
new file mode 100644
GIT binary patch
literal 3
Kc${NkU|;|M00aO5

diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
";
        let files: Vec<String> = patch_files(patch).into_iter().collect();
        assert_eq!(files, ["gone.txt", "new.bin", "run.sh", "src/a b.py"]);
        assert!(patch_files("not a diff\n+++ b/x\n").is_empty());
    }

    #[test]
    fn header_paths_split_at_the_middle_or_take_the_quoted_side() {
        assert_eq!(diff_header_path("a/x b/y b/x b/y"), Some("x b/y".to_owned()));
        assert_eq!(diff_header_path("a/old b/new"), Some("old".to_owned()));
        assert_eq!(diff_header_path("\"a/caf\\303\\251\" \"b/caf\\303\\251\""), Some("café".to_owned()));
        assert_eq!(diff_side_path("/dev/null", "b/"), None);
        assert_eq!(diff_side_path("\"b/q x\"", "b/"), Some("q x".to_owned()));
    }
}
