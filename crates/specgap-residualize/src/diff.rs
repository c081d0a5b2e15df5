//! A stored `workspace.diff` read as file sections: which files a final state changes, the
//! substantive ones once incidental artifacts are set aside, and the normalized diff that
//! decides whether two final states are the same (seed 001 §3.2 Stage II).
//!
//! The harness writes every diff the same way (`git diff --binary --full-index --no-renames`
//! of the work tree against the clean base, docs/decisions.md "Sandbox: materialization and
//! the base commit"), so two work trees with the same files have byte-identical diffs and a
//! section of one file never depends on another. The *normalized* diff is the diff with the
//! sections of ignored files removed: two states that differ only in caches or logs have the
//! same normalized diff.
//!
//! A section starts at a line beginning `diff --git `. Inside a hunk every line starts with
//! ` `, `+`, `-` or `\`, and a binary patch's base-85 lines contain no space, so such a line is
//! always a header.

use sha2::{Digest as _, Sha256};
use specgap_task::residual::diff_header_path;

use crate::ignore::IgnoreRules;

/// One file's section of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSection<'a> {
    /// Workspace-relative path (`/` separators; a quoted name unquoted, shown lossily where it
    /// is not UTF-8).
    pub path: String,
    /// The section's bytes, from its `diff --git` line up to the next one.
    pub bytes: &'a [u8],
}

/// The file sections of `diff`, in order. Bytes before the first header (none in a harness
/// diff) belong to no section and are dropped.
pub fn sections(diff: &[u8]) -> Vec<FileSection<'_>> {
    const HEADER: &[u8] = b"diff --git ";
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < diff.len() {
        if diff[at..].starts_with(HEADER) {
            starts.push(at);
        }
        match diff[at..].iter().position(|b| *b == b'\n') {
            Some(offset) => at += offset + 1,
            None => break,
        }
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(diff.len());
        let bytes = &diff[*start..end];
        let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        let header = String::from_utf8_lossy(&first_line[HEADER.len()..]);
        let path = diff_header_path(&header).unwrap_or_else(|| header.trim_end().to_string());
        out.push(FileSection { path, bytes });
    }
    out
}

/// What a final state's diff says once incidental artifacts are set aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChanges {
    /// Every file the diff changes, in diff order.
    pub files: Vec<String>,
    /// The files that are not incidental artifacts (Stage II (b) "changed" when not empty).
    pub substantive: Vec<String>,
    /// Hex SHA-256 of the normalized diff: the substantive files' sections, concatenated in
    /// diff order. Equal for two states of one task exactly when they change the same
    /// substantive files in the same way.
    pub normalized_sha256: String,
}

impl StateChanges {
    /// Reads `diff` under `rules`.
    pub fn of(diff: &[u8], rules: &IgnoreRules) -> StateChanges {
        let mut files = Vec::new();
        let mut substantive = Vec::new();
        let mut hasher = Sha256::new();
        for section in sections(diff) {
            if !rules.is_ignored(&section.path) {
                hasher.update(section.bytes);
                substantive.push(section.path.clone());
            }
            files.push(section.path);
        }
        StateChanges { files, substantive, normalized_sha256: hex(&hasher.finalize()) }
    }

    /// Whether the state changes anything beyond incidental artifacts.
    pub fn changed(&self) -> bool {
        !self.substantive.is_empty()
    }
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &[u8] = b"diff --git a/ivtree/__pycache__/tree.cpython-311.pyc b/ivtree/__pycache__/tree.cpython-311.pyc
new file mode 100644
index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111
--- /dev/null
+++ b/ivtree/__pycache__/tree.cpython-311.pyc
@@ -0,0 +1 @@
+cache
diff --git a/ivtree/tree.py b/ivtree/tree.py
index 2222222222222222222222222222222222222222..3333333333333333333333333333333333333333 100644
--- a/ivtree/tree.py
+++ b/ivtree/tree.py
@@ -1 +1,2 @@
 x
+diff --git a/not/a/header b/not/a/header
";

    #[test]
    fn sections_split_at_headers_only() {
        let found = sections(DIFF);
        let paths: Vec<&str> = found.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["ivtree/__pycache__/tree.cpython-311.pyc", "ivtree/tree.py"]);
        assert_eq!(found.iter().map(|s| s.bytes.len()).sum::<usize>(), DIFF.len());
        assert!(found[1].bytes.ends_with(b"+diff --git a/not/a/header b/not/a/header\n"));
        assert!(sections(b"").is_empty());
        assert!(sections(b"no diff here\n").is_empty());
    }

    #[test]
    fn normalized_diffs_ignore_artifact_sections() {
        let rules = IgnoreRules::with_defaults(true, &[] as &[&str]).unwrap();
        let with_cache = StateChanges::of(DIFF, &rules);
        let tree_only = &DIFF[sections(DIFF)[1].bytes.as_ptr() as usize - DIFF.as_ptr() as usize..];
        let without = StateChanges::of(tree_only, &rules);
        assert_eq!(with_cache.files, ["ivtree/__pycache__/tree.cpython-311.pyc", "ivtree/tree.py"]);
        assert_eq!(with_cache.substantive, ["ivtree/tree.py"]);
        assert_eq!(with_cache.normalized_sha256, without.normalized_sha256);
        assert!(with_cache.changed());
        let cache_only = StateChanges::of(sections(DIFF)[0].bytes, &rules);
        assert!(!cache_only.changed());
        assert_eq!(cache_only.normalized_sha256, sha256_hex(b""));
        let raw = StateChanges::of(DIFF, &IgnoreRules::new(&[] as &[&str]).unwrap());
        assert_ne!(raw.normalized_sha256, without.normalized_sha256);
    }

    #[test]
    fn quoted_names_are_unquoted() {
        let diff = b"diff --git \"a/caf\\303\\251.log\" \"b/caf\\303\\251.log\"\nnew file mode 100644\n";
        let found = sections(diff);
        assert_eq!(found[0].path, "caf\u{e9}.log");
        let rules = IgnoreRules::with_defaults(true, &[] as &[&str]).unwrap();
        assert!(!StateChanges::of(diff, &rules).changed());
    }
}
