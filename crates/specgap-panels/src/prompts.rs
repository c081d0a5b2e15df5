//! The prompts each panel sends: built in (`src/prompts/*.md`, the project's own words written
//! from seed 002 A.9.3–A.9.5's intent), each replaceable by a file named in the panel file's
//! `[prompts]` so that a user can run a paper's exact wording.
//!
//! Templates use `{{name}}` placeholders; a placeholder a template does not use is simply not
//! filled. Every verdict records the prompt version and the sha256 of the texts sent
//! (`panels.prompt_version`, `panels.prompt_hash`, `ballots.prompt_version`).

use std::path::Path;

use specgap_store::PanelUse;

use crate::config::PromptFiles;
use crate::error::PanelError;

/// Version of the built-in coverage-judge prompts; bumped on any change to their text.
pub const JUDGE_PROMPT_VERSION: &str = "1";
/// Version of the built-in question-detector prompts.
pub const DETECTOR_PROMPT_VERSION: &str = "1";
/// Version of the built-in extractor instructions. 2: seed 002 A.9.4's rules for designated
/// files, code modules, identifiers, order-bearing fields and the fallback, the `_result.json`
/// report with `files_found`, and the check block (issue 24 item 2).
pub const EXTRACTOR_PROMPT_VERSION: &str = "2";

const JUDGE_SYSTEM: &str = include_str!("prompts/judge_system.md");
const JUDGE_USER: &str = include_str!("prompts/judge_user.md");
const JUDGE_TRIGGERS: &str = include_str!("prompts/judge_triggers.md");
const JUDGE_REPAIR: &str = include_str!("prompts/judge_repair.md");
const DETECTOR_SYSTEM: &str = include_str!("prompts/detector_system.md");
const DETECTOR_USER: &str = include_str!("prompts/detector_user.md");
const DETECTOR_REPAIR: &str = include_str!("prompts/detector_repair.md");
const EXTRACTOR_SYSTEM: &str = include_str!("prompts/extractor_system.md");
const EXTRACTOR_USER: &str = include_str!("prompts/extractor_user.md");
const EXTRACTOR_CHECK: &str = include_str!("prompts/extractor_check.md");

/// The prompts of one use.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptSet {
    /// The built-in version, or `file:` and the first 12 hex digits of the sha256 of the
    /// texts when a file replaced any of them.
    pub version: String,
    /// The system message.
    pub system: String,
    /// The user message template.
    pub user: String,
    /// The text put before the user message on the one repair retry after a malformed reply
    /// (judge and detector; empty for the extractor).
    pub repair: String,
    /// The coverage judge's trigger-hint block template (`{{triggers}}` in the user message);
    /// empty for the other uses.
    pub triggers: String,
    /// The extractor's verification block (`{{check_block}}` in its user message), inserted
    /// when its sessions offer `check_output`; empty for the other uses.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub check: String,
}

impl PromptSet {
    /// Hex sha256 of every text of the set, each preceded by its length, so that no two
    /// different sets hash alike.
    pub fn hash(&self) -> String {
        let mut bytes = Vec::new();
        // The check block joined the set later: an empty one adds nothing, so the hashes of
        // the judge's and the detector's sets (and their panels' names) stay as they were.
        let check = (!self.check.is_empty()).then_some(&self.check);
        for text in [&self.system, &self.user, &self.repair, &self.triggers].into_iter().chain(check) {
            bytes.extend_from_slice(&(text.len() as u64).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
        }
        crate::hex_sha256(&bytes)
    }
}

/// The prompts of all three uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    judge: PromptSet,
    detector: PromptSet,
    extractor: PromptSet,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            judge: builtin(JUDGE_PROMPT_VERSION, JUDGE_SYSTEM, JUDGE_USER, JUDGE_REPAIR, JUDGE_TRIGGERS),
            detector: builtin(DETECTOR_PROMPT_VERSION, DETECTOR_SYSTEM, DETECTOR_USER, DETECTOR_REPAIR, ""),
            extractor: PromptSet {
                check: EXTRACTOR_CHECK.trim_end().to_string(),
                ..builtin(EXTRACTOR_PROMPT_VERSION, EXTRACTOR_SYSTEM, EXTRACTOR_USER, "", "")
            },
        }
    }
}

fn builtin(version: &str, system: &str, user: &str, repair: &str, triggers: &str) -> PromptSet {
    PromptSet {
        version: version.to_string(),
        system: system.trim_end().to_string(),
        user: user.trim_end().to_string(),
        repair: repair.trim_end().to_string(),
        triggers: triggers.trim_end().to_string(),
        check: String::new(),
    }
}

impl Prompts {
    /// The built-in prompts with the files of `files` (relative to `base`) in their place.
    ///
    /// # Errors
    /// [`PanelError::Read`] naming a prompt file that cannot be read.
    pub fn with_overrides(files: &PromptFiles, base: &Path) -> Result<Prompts, PanelError> {
        let mut prompts = Prompts::default();
        let read = |file: &Option<std::path::PathBuf>, into: &mut String| -> Result<bool, PanelError> {
            let Some(file) = file else { return Ok(false) };
            let path = base.join(file);
            *into = fs_err::read_to_string(&path).map_err(|source| PanelError::Read { path: path.clone(), source })?.trim_end().to_string();
            Ok(true)
        };
        let judge = &mut prompts.judge;
        let changed = [
            read(&files.judge_system, &mut judge.system)?,
            read(&files.judge_user, &mut judge.user)?,
            read(&files.judge_repair, &mut judge.repair)?,
        ];
        mark_overridden(judge, &changed);
        let detector = &mut prompts.detector;
        let changed = [
            read(&files.detector_system, &mut detector.system)?,
            read(&files.detector_user, &mut detector.user)?,
            read(&files.detector_repair, &mut detector.repair)?,
        ];
        mark_overridden(detector, &changed);
        let extractor = &mut prompts.extractor;
        let changed = [
            read(&files.extractor_system, &mut extractor.system)?,
            read(&files.extractor, &mut extractor.user)?,
            read(&files.extractor_check, &mut extractor.check)?,
        ];
        mark_overridden(extractor, &changed);
        Ok(prompts)
    }

    /// The prompts of `use_`.
    pub fn set(&self, use_: PanelUse) -> PromptSet {
        match use_ {
            PanelUse::Judge => self.judge.clone(),
            PanelUse::Detector => self.detector.clone(),
            PanelUse::Extractor => self.extractor.clone(),
        }
    }
}

fn mark_overridden(set: &mut PromptSet, changed: &[bool]) {
    if changed.iter().any(|c| *c) {
        set.version = format!("file:{}", &set.hash()[..12]);
    }
}

/// `template` with each `{{name}}` of `values` replaced by its value.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in values {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_others_left() {
        assert_eq!(fill("a {{x}} b {{y}} {{x}}", &[("x", "1")]), "a 1 b {{y}} 1");
    }

    #[test]
    fn an_override_changes_the_version_and_the_hash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("u.txt"), "Judge {{target}}.\n").unwrap();
        let files = PromptFiles { judge_user: Some("u.txt".into()), ..Default::default() };
        let prompts = Prompts::with_overrides(&files, dir.path()).unwrap();
        let set = prompts.set(PanelUse::Judge);
        let builtin = Prompts::default().set(PanelUse::Judge);
        assert_eq!(set.user, "Judge {{target}}.");
        assert_eq!(set.version, format!("file:{}", &set.hash()[..12]));
        assert_ne!(set.hash(), builtin.hash());
        assert_eq!(builtin.version, JUDGE_PROMPT_VERSION);
        assert_eq!(prompts.set(PanelUse::Detector), Prompts::default().set(PanelUse::Detector));
    }
}
