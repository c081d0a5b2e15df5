//! Reading workspace diffs (`git diff --binary` text against the base commit, DESIGN §3.1)
//! for the acceptance-bias measures of seed 001 App. D.2: which files a diff changes, which
//! lines it adds, and how many of a predecessor's added lines a final diff keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;

use similar::algorithms::DiffHook;
use specgap_task::residual::{diff_header_path, diff_side_path};

/// What one unified diff changes: the files it touches and, per file, the lines it adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffChanges {
    /// Workspace-relative paths of every file the diff touches (added, modified, deleted,
    /// binary), without the `a/` / `b/` prefixes.
    pub files: BTreeSet<String>,
    /// Per file, the text of every added line (`+` lines of the hunks, without the `+`), in
    /// order. A line that replaces another counts as added (seed 001 App. D.2 "added or
    /// replaced"); deleted lines are not listed.
    pub added: BTreeMap<String, Vec<String>>,
    /// Files the diff creates (`new file mode`).
    pub created: BTreeSet<String>,
    /// Files the diff deletes (`deleted file mode`).
    pub deleted: BTreeSet<String>,
    /// Lines the diff deletes or replaces (`-` lines of the hunks), over all files.
    pub deleted_lines: usize,
}

impl DiffChanges {
    /// Total number of added lines over all files.
    pub fn added_lines(&self) -> usize {
        self.added.values().map(Vec::len).sum()
    }
}

/// Parses `git diff` output (with `a/` and `b/` prefixes, as the harness writes it). Text that
/// is not a diff gives empty changes; a binary file is listed in `files` with no added lines.
pub fn parse_diff(text: &str) -> DiffChanges {
    let mut changes = DiffChanges::default();
    let mut current: Option<String> = None;
    let mut in_hunk = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            current = diff_header_path(rest);
            if let Some(path) = &current {
                changes.files.insert(path.clone());
            }
            in_hunk = false;
            continue;
        }
        let Some(path) = current.clone() else {
            continue;
        };
        if !in_hunk && line.starts_with("new file mode") {
            changes.created.insert(path);
            continue;
        }
        if !in_hunk && line.starts_with("deleted file mode") {
            changes.deleted.insert(path);
            continue;
        }
        if !in_hunk {
            // Header lines of a file section: `+++ b/<path>` names the new side precisely.
            if let Some(new) = line.strip_prefix("+++ ") {
                if let Some(p) = diff_side_path(new, "b/")
                    && p != path
                {
                    changes.files.remove(&path);
                    changes.files.insert(p.clone());
                    if changes.created.remove(&path) {
                        changes.created.insert(p.clone());
                    }
                    current = Some(p);
                }
                continue;
            }
            if line.starts_with("@@") {
                in_hunk = true;
            }
            continue;
        }
        if line.starts_with("@@") {
            continue;
        }
        if let Some(added) = line.strip_prefix('+') {
            changes.added.entry(path).or_default().push(added.to_string());
        } else if line.starts_with('-') {
            changes.deleted_lines += 1;
        }
    }
    changes
}

/// Lines of `kept_from` (per file) that remain among the lines of `final_added` for the same
/// file, by exact, order-preserving line matching: the length of a longest common subsequence
/// of the two line sequences, summed over files (seed 001 App. D.2 "Kept").
///
/// Returns `(kept, total)` with `total` the number of lines in `kept_from`.
pub fn kept_lines(kept_from: &BTreeMap<String, Vec<String>>, final_added: &BTreeMap<String, Vec<String>>) -> (usize, usize) {
    let mut kept = 0;
    let mut total = 0;
    for (file, lines) in kept_from {
        total += lines.len();
        if let Some(now) = final_added.get(file) {
            kept += lcs_len(lines, now);
        }
    }
    (kept, total)
}

/// Length of a longest common subsequence of two line sequences. Myers' shortest-edit-script
/// search (`similar`'s implementation, run without a deadline, so without approximation) finds
/// an optimal alignment, whose matched lines form a longest common subsequence.
pub fn lcs_len(a: &[String], b: &[String]) -> usize {
    let mut count = EqualCount(0);
    let Ok(()) = similar::algorithms::myers::diff(&mut count, a, 0..a.len(), b, 0..b.len());
    count.0
}

struct EqualCount(usize);

impl DiffHook for EqualCount {
    type Error = Infallible;

    fn equal(&mut self, _old: usize, _new: usize, len: usize) -> Result<(), Infallible> {
        self.0 += len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/a.py b/src/a.py\nindex 1..2 100644\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1,2 +1,3 @@\n keep\n-old\n+new one\n++++ plus line\n diff --git a/x b/x\ndiff --git a/new file.txt b/new file.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new file.txt\n@@ -0,0 +1 @@\n+hello\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/img.png b/img.png\nGIT binary patch\nliteral 3\nabc\n";

    #[test]
    fn files_and_added_lines() {
        let changes = parse_diff(DIFF);
        let files: Vec<&str> = changes.files.iter().map(String::as_str).collect();
        assert_eq!(files, ["gone.txt", "img.png", "new file.txt", "src/a.py"]);
        assert_eq!(changes.added["src/a.py"], ["new one", "+++ plus line"]);
        assert_eq!(changes.added["new file.txt"], ["hello"]);
        assert!(!changes.added.contains_key("gone.txt"));
        assert_eq!(changes.added_lines(), 3);
        // `-old` and `-bye` (gone.txt's one line); created and deleted files from their modes.
        assert_eq!(changes.deleted_lines, 2);
        assert_eq!(changes.created, ["new file.txt".to_string()].into());
        assert_eq!(changes.deleted, ["gone.txt".to_string()].into());
    }

    #[test]
    fn quoted_names_are_read_as_the_files_they_name() {
        // As git 2.47 writes them with its default core.quotePath.
        let diff = "diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/caf\\303\\251.txt\"\n@@ -0,0 +1 @@\n+x\ndiff --git \"a/q\\\"u \\\\o\" \"b/q\\\"u \\\\o\"\n--- \"a/q\\\"u \\\\o\"\t\n+++ \"b/q\\\"u \\\\o\"\t\n@@ -1 +1 @@\n-a\n+b\n";
        let changes = parse_diff(diff);
        let files: Vec<&str> = changes.files.iter().map(String::as_str).collect();
        assert_eq!(files, ["café.txt", "q\"u \\o"]);
        assert_eq!(changes.added["café.txt"], ["x"]);
        assert_eq!(changes.added["q\"u \\o"], ["b"]);
    }

    #[test]
    fn lcs_is_order_preserving() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // a b c d vs b d a: longest common subsequence "b d" (2).
        assert_eq!(lcs_len(&s(&["a", "b", "c", "d"]), &s(&["b", "d", "a"])), 2);
        assert_eq!(lcs_len(&s(&["x"]), &s(&[])), 0);
        let mut from = BTreeMap::new();
        from.insert("f".to_string(), s(&["1", "2", "3", "4"]));
        from.insert("g".to_string(), s(&["9"]));
        let mut now = BTreeMap::new();
        now.insert("f".to_string(), s(&["1", "x", "3"]));
        // f keeps 1 and 3, g is gone: 2 of 5.
        assert_eq!(kept_lines(&from, &now), (2, 5));
    }
}
