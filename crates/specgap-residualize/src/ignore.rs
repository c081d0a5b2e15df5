//! Incidental execution artifacts (seed 001 §3.2 Stage II (b)): the paths a run may leave
//! behind without having changed anything — build outputs, caches and logs.
//!
//! Stage II asks whether a predecessor's final state differs from the clean state *after*
//! removing these; the reconstructed state keeps them (App. B.1), so the rules only decide
//! which runs count as changed and which final states are duplicates.
//!
//! A rule is a glob over workspace-relative paths with `/` separators, read the way a
//! `.gitignore` line reads:
//!
//! * a rule ending in `/` names a directory: everything below a directory of that name, at any
//!   depth (`__pycache__/`, `node_modules/`);
//! * a rule without `/` names a file at any depth (`*.pyc`, `*.log`, `.coverage`);
//! * any other rule is anchored at the workspace root (`build/output.bin`, `docs/_build/**`).
//!
//! `*`, `?`, `[…]`, `{a,b}` and `**` are globset's; `*` never crosses a `/`.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The rules used unless `--no-default-ignores` is given: caches and build outputs of the
/// common toolchains, and logs. Each names only paths that no source tree needs to keep.
pub const DEFAULT_IGNORES: &[&str] = &[
    "__pycache__/",
    "*.pyc",
    "*.pyo",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    ".coverage",
    "htmlcov/",
    "*.egg-info/",
    ".ipynb_checkpoints/",
    "node_modules/",
    ".npm/",
    ".cache/",
    "target/",
    "*.o",
    "*.class",
    "*.log",
    ".DS_Store",
];

/// A rule that is not a valid glob.
#[derive(Debug, thiserror::Error)]
#[error("bad ignore rule `{rule}`")]
pub struct BadIgnoreRule {
    /// The rule as given.
    pub rule: String,
    /// The glob parser's complaint.
    #[source]
    pub source: globset::Error,
}

/// A compiled set of ignore rules.
#[derive(Debug, Clone)]
pub struct IgnoreRules {
    rules: Vec<String>,
    set: GlobSet,
}

impl IgnoreRules {
    /// Compiles `rules` (see the module guide for how each reads).
    ///
    /// # Errors
    /// [`BadIgnoreRule`] for the first rule that is empty or not a glob.
    pub fn new<S: AsRef<str>>(rules: &[S]) -> Result<IgnoreRules, BadIgnoreRule> {
        let mut builder = GlobSetBuilder::new();
        let mut kept = Vec::with_capacity(rules.len());
        for rule in rules {
            let rule = rule.as_ref().trim();
            for pattern in expand(rule) {
                let glob = GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .build()
                    .map_err(|source| BadIgnoreRule { rule: rule.to_string(), source })?;
                builder.add(glob);
            }
            kept.push(rule.to_string());
        }
        let set = builder.build().map_err(|source| BadIgnoreRule { rule: kept.join(" "), source })?;
        Ok(IgnoreRules { rules: kept, set })
    }

    /// [`DEFAULT_IGNORES`] followed by `extra`, or `extra` alone when `defaults` is false.
    ///
    /// # Errors
    /// [`BadIgnoreRule`] as [`IgnoreRules::new`].
    pub fn with_defaults<S: AsRef<str>>(defaults: bool, extra: &[S]) -> Result<IgnoreRules, BadIgnoreRule> {
        let mut rules: Vec<String> = if defaults { DEFAULT_IGNORES.iter().map(|r| (*r).to_string()).collect() } else { Vec::new() };
        rules.extend(extra.iter().map(|r| r.as_ref().trim().to_string()));
        IgnoreRules::new(&rules)
    }

    /// The rules as given, in order (what the manifest stores).
    pub fn rules(&self) -> &[String] {
        &self.rules
    }

    /// Whether the workspace-relative `path` (`/` separators, no leading `./`) is an incidental
    /// artifact.
    pub fn is_ignored(&self, path: &str) -> bool {
        self.set.is_match(path.trim_start_matches("./"))
    }
}

/// The globs one rule stands for.
fn expand(rule: &str) -> Vec<String> {
    if rule.is_empty() {
        // An empty glob would match nothing useful; globset accepts it, so refuse it here by
        // handing globset a pattern it rejects with its own message.
        return vec!["[".to_string()];
    }
    if let Some(dir) = rule.strip_suffix('/') {
        let dir = dir.trim_start_matches('/');
        if dir.contains('/') {
            return vec![format!("{dir}/**")];
        }
        return vec![format!("{dir}/**"), format!("**/{dir}/**")];
    }
    let rule = rule.trim_start_matches('/');
    if rule.contains('/') { vec![rule.to_string()] } else { vec![rule.to_string(), format!("**/{rule}")] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_rules_match_below_that_directory_at_any_depth() {
        let rules = IgnoreRules::new(&["__pycache__/", "node_modules/"]).unwrap();
        assert!(rules.is_ignored("__pycache__/x.pyc"));
        assert!(rules.is_ignored("ivtree/__pycache__/tree.cpython-311.pyc"));
        assert!(rules.is_ignored("web/node_modules/a/b/index.js"));
        assert!(!rules.is_ignored("ivtree/pycache.py"));
        assert!(!rules.is_ignored("__pycache__"), "a file named like the directory is not below it");
    }

    #[test]
    fn file_rules_match_the_name_at_any_depth_and_slashes_anchor() {
        let rules = IgnoreRules::new(&["*.log", "docs/_build/**"]).unwrap();
        assert!(rules.is_ignored("run.log"));
        assert!(rules.is_ignored("a/b/run.log"));
        assert!(!rules.is_ignored("run.log.py"));
        assert!(rules.is_ignored("docs/_build/html/index.html"));
        assert!(!rules.is_ignored("src/docs/_build/x"));
        assert!(rules.is_ignored("./run.log"));
    }

    #[test]
    fn defaults_cover_caches_build_outputs_and_logs_but_not_sources() {
        let rules = IgnoreRules::with_defaults(true, &["extra.tmp"]).unwrap();
        for ignored in [
            "a/__pycache__/m.cpython-311.pyc",
            "m.pyc",
            ".pytest_cache/v/cache/lastfailed",
            "target/debug/app",
            "pkg.egg-info/PKG-INFO",
            "server.log",
            "extra.tmp",
        ] {
            assert!(rules.is_ignored(ignored), "{ignored}");
        }
        for kept in ["ivtree/tree.py", "README.md", "src/target.rs", "logs.py", "tests/test_chop.py"] {
            assert!(!rules.is_ignored(kept), "{kept}");
        }
        assert_eq!(rules.rules().last().map(String::as_str), Some("extra.tmp"));
        assert!(!IgnoreRules::with_defaults(false, &["x"]).unwrap().is_ignored("m.pyc"));
    }

    #[test]
    fn bad_and_empty_rules_are_refused_by_name() {
        let err = IgnoreRules::new(&["ok", "a[b"]).unwrap_err();
        assert_eq!(err.rule, "a[b");
        assert_eq!(IgnoreRules::new(&[" "]).unwrap_err().rule, "");
    }
}
