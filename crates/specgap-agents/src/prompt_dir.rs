//! `specgap run --prompts DIR` (and a run configuration file's equivalent): a directory of
//! files that replace specgap's prompts, one file per prompt, named after it, so a run can use
//! a paper's exact wording ([`specgap_engine::prompt_files`]).
//!
//! The names are those of [`SYSTEM_PROMPT_FILES`] (the engine's system prompts and condition
//! blocks) and [`USER_PROMPT_FILES`] (the chat owner's and customer's prompts); [`prompt_files`]
//! lists them all. Every entry of the directory must be a regular UTF-8 file with one of those
//! names and some text; anything else is an error naming every offending entry, and nothing is
//! read from a directory with any.

use std::path::{Path, PathBuf};

use specgap_engine::prompt_files::{PromptFile, Replacements, SYSTEM_PROMPT_FILES};

use crate::chat::user::USER_PROMPT_FILES;

/// Every prompt file a directory may replace: the system prompts, then the user prompts.
pub fn prompt_files() -> impl Iterator<Item = &'static PromptFile> {
    SYSTEM_PROMPT_FILES.iter().chain(USER_PROMPT_FILES)
}

/// The replacements read from a directory, split by who uses them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptDir {
    /// System prompts and condition blocks: stored with every agent of the run.
    pub system: Replacements,
    /// Owner and customer prompts: stored with a `chat:` user.
    pub user: Replacements,
}

impl PromptDir {
    /// Whether nothing is replaced.
    pub fn is_empty(&self) -> bool {
        self.system.is_empty() && self.user.is_empty()
    }
}

/// Why a prompt directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PromptDirError {
    /// The directory or one of its files cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Entries that are not replaceable prompt files.
    #[error(
        "{} holds {} that no prompt has: {}; the prompt files are {}",
        dir.display(),
        if names.len() == 1 { "a name" } else { "names" },
        names.join(", "),
        known().join(", ")
    )]
    Unknown {
        /// The directory.
        dir: PathBuf,
        /// The offending entries, sorted.
        names: Vec<String>,
    },
    /// A prompt file that is not a regular file, not UTF-8 or has no text.
    #[error("{} is not usable as a prompt: {why}", path.display())]
    Unusable {
        /// The file.
        path: PathBuf,
        /// What is wrong, in words.
        why: &'static str,
    },
}

fn known() -> Vec<&'static str> {
    prompt_files().map(|f| f.name).collect()
}

/// Reads the replacement prompts of `dir` (module guide).
///
/// # Errors
/// [`PromptDirError`]: an unreadable directory or file, entries with unknown names (all of
/// them named), a file that is not a regular UTF-8 file with some text.
pub fn load(dir: &Path) -> Result<PromptDir, PromptDirError> {
    let read_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PromptDirError::Read { path, source }
    };
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    let mut unknown = Vec::new();
    for entry in fs_err::read_dir(dir).map_err(read_error(dir))? {
        let entry = entry.map_err(read_error(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if prompt_files().any(|f| f.name == name) {
            entries.push((name, entry.path()));
        } else {
            unknown.push(name);
        }
    }
    if !unknown.is_empty() {
        unknown.sort();
        return Err(PromptDirError::Unknown { dir: dir.to_path_buf(), names: unknown });
    }
    entries.sort();
    let mut loaded = PromptDir::default();
    for (name, path) in entries {
        let text = read_prompt(&path)?;
        if SYSTEM_PROMPT_FILES.iter().any(|f| f.name == name) {
            loaded.system.insert(name, text);
        } else {
            loaded.user.insert(name, text);
        }
    }
    Ok(loaded)
}

fn read_prompt(path: &Path) -> Result<String, PromptDirError> {
    let unusable = |why| PromptDirError::Unusable { path: path.to_path_buf(), why };
    let meta = fs_err::symlink_metadata(path).map_err(|source| PromptDirError::Read { path: path.to_path_buf(), source })?;
    if !meta.is_file() {
        return Err(unusable("expected a regular file"));
    }
    let bytes = fs_err::read(path).map_err(|source| PromptDirError::Read { path: path.to_path_buf(), source })?;
    let text = String::from_utf8(bytes).map_err(|_| unusable("the file is not UTF-8 text"))?;
    if text.trim().is_empty() {
        return Err(unusable("the file is empty"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_names_are_unique_across_engine_and_user_prompts() {
        let mut names = known();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        assert_eq!(count, SYSTEM_PROMPT_FILES.len() + USER_PROMPT_FILES.len());
    }

    #[test]
    fn docs_prompts_md_lists_every_prompt_file() {
        let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/prompts.md")).unwrap();
        for name in known() {
            assert!(doc.contains(&format!("| `{name}` |")), "docs/prompts.md has no row for {name}");
        }
    }

    #[test]
    fn a_directory_splits_into_system_and_user_replacements() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("evidence.md"), "Treat the owner's words as evidence.\n").unwrap();
        fs_err::write(dir.path().join("owner.md"), "You own the project. {persona}\n").unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(loaded.system.get("evidence.md"), Some("Treat the owner's words as evidence.\n"));
        assert_eq!(loaded.user.get("owner.md"), Some("You own the project. {persona}\n"));
        assert_eq!(loaded.system.names().collect::<Vec<_>>(), ["evidence.md"]);
    }

    #[test]
    fn unknown_names_and_unusable_files_are_errors_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("evidence.md"), "x").unwrap();
        fs_err::write(dir.path().join("partial.md"), "x").unwrap();
        fs_err::create_dir(dir.path().join("extra")).unwrap();
        let error = load(dir.path()).unwrap_err().to_string();
        let expected = format!(
            "{} holds names that no prompt has: extra, partial.md; the prompt files are {}",
            dir.path().display(),
            known().join(", ")
        );
        assert_eq!(error, expected);
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("plan.md"), " \n").unwrap();
        assert_eq!(
            load(dir.path()).unwrap_err().to_string(),
            format!("{} is not usable as a prompt: the file is empty", dir.path().join("plan.md").display())
        );
    }
}
