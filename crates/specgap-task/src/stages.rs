//! `[stages]` (format 2): a task given in ordered parts (Harbor's `[[steps]]`, docs/harbor.md).
//!
//! | rule | why |
//! | --- | --- |
//! | at least one `[[stages.stage]]` | a `[stages]` table without stages says nothing |
//! | each `name` a label, unique | the store, `show` and the evaluator's logs name stages by it |
//! | the first stage has no `instruction` | its instruction is the opening message (`instruction.md` / `instruction.full.md`) |
//! | every later stage has `instruction`: a regular file relative to the root, outside `workspace/` | the agent must not read a stage before it begins |
//! | `min_reward` a number in [0, 1] | it is compared with the stage submission's Score |
//! | or a non-empty table of reward keys, each a finite number | each is compared with the same key of the result's `rewards` (Harbor's per-key table) |
//! | `files` only on a later stage: a directory relative to the root, outside `workspace/` | the first stage's files are `workspace/`; a later stage's must stay hidden until it begins |
//! | `gold`: a directory relative to the root, outside `workspace/` | the agent must not read a solution |
//!
//! Each later stage's file is read as UTF-8 when the package loads ([`StageText::instruction`]).
//! A stage's `files` and `gold` are overlays ([`Overlay`]: their top-level `delete.txt` lists
//! files to remove): the engine applies a stage's files when the stage begins, and scripted
//! `gold` applies the stage's gold during it.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use specgap_protocol::package::{MinReward, Stage, StageScore, Stages};

use crate::error::{LoadError, Location};
use crate::format2::is_label;
use crate::package::Overlay;
use crate::tree;

/// The loaded `[stages]` of a package.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageStages {
    /// How the episode's score is made from the stage scores.
    pub score: StageScore,
    /// The stages in order (at least one).
    pub stages: Vec<StageText>,
}

/// One loaded stage.
#[derive(Debug, Clone, PartialEq)]
pub struct StageText {
    /// Its label.
    pub name: String,
    /// The instruction sent when the stage begins; `None` for the first stage (the opening
    /// message is its instruction).
    pub instruction: Option<String>,
    /// The Score below which the episode ends after this stage (`min_reward` as a number).
    pub min_reward: Option<f64>,
    /// Reward key -> minimum (`min_reward` as a table, Harbor's per-key thresholds): the
    /// episode ends after this stage unless the result's `rewards` holds every key at or above
    /// its minimum. Empty when `min_reward` is a number or absent.
    pub min_reward_keys: BTreeMap<String, f64>,
    /// The files the stage adds to the workspace when it begins (`files`); `None` for the
    /// first stage and for a stage that adds none.
    pub files: Option<Overlay>,
    /// The stage's own gold overlay (`gold`), applied on the state the earlier stages' golds
    /// and this stage's files leave.
    pub gold: Option<Overlay>,
}

impl PackageStages {
    /// How many stages there are.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Always false: a loaded `[stages]` has at least one stage.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Stage `k` (1-based), if there is one.
    pub fn stage(&self, k: u32) -> Option<&StageText> {
        self.stages.get((k as usize).checked_sub(1)?)
    }

    /// Whether any stage has its own gold (`gold`): then scripted `gold` applies stage k's
    /// gold at stage k, and `check` proves each stage's gold passes that stage.
    pub fn has_stage_golds(&self) -> bool {
        self.stages.iter().any(|s| s.gold.is_some())
    }

    /// Whether any stage adds files when it begins.
    pub fn has_stage_files(&self) -> bool {
        self.stages.iter().any(|s| s.files.is_some())
    }
}

/// Checks `[stages]` (written at `at` in task.toml) and reads every later stage's instruction.
/// Runs after the tree walk, so any symlink on the way is known to stay inside the package.
pub(crate) fn load(root: &Path, stages: &Stages, at: Location) -> Result<PackageStages, LoadError> {
    let invalid = |message: String| LoadError::Invalid { at: at.clone(), message };
    if stages.stage.is_empty() {
        return Err(invalid("[stages] lists no [[stages.stage]]; expected at least one stage".into()));
    }
    let mut loaded: Vec<StageText> = Vec::with_capacity(stages.stage.len());
    for (i, stage) in stages.stage.iter().enumerate() {
        let n = i + 1;
        if !is_label(&stage.name) {
            return Err(invalid(format!(
                "stage {n}'s name `{}` is not usable; expected lowercase letters and digits in words joined by single hyphens",
                stage.name
            )));
        }
        if loaded.iter().any(|s| s.name == stage.name) {
            return Err(invalid(format!("[[stages.stage]] names `{}` twice; expected each stage name once", stage.name)));
        }
        let (min_reward, min_reward_keys) = min_rewards(stage, &invalid)?;
        let instruction = match (n, stage.instruction.as_deref()) {
            (1, Some(rel)) => {
                return Err(invalid(format!(
                    "the first stage `{}` names instruction `{rel}`; the first stage's instruction is the opening message \
                     (instruction.md), so leave the key out",
                    stage.name
                )));
            }
            (1, None) => None,
            (_, None) => {
                return Err(invalid(format!(
                    "stage {n} `{}` has no instruction; expected a file such as `stages/{}.md`",
                    stage.name, stage.name
                )));
            }
            (_, Some(rel)) => Some(read_instruction(root, rel, &stage.name, &invalid)?),
        };
        if n == 1
            && let Some(rel) = &stage.files
        {
            return Err(invalid(format!(
                "the first stage `{}` names files `{rel}`; the first stage's files are workspace/, so leave the key out",
                stage.name
            )));
        }
        let files = stage.files.as_deref().map(|rel| overlay_dir(root, rel, &stage.name, "files", &invalid)).transpose()?;
        let gold = stage.gold.as_deref().map(|rel| overlay_dir(root, rel, &stage.name, "gold", &invalid)).transpose()?;
        loaded.push(StageText { name: stage.name.clone(), instruction, min_reward, min_reward_keys, files, gold });
    }
    Ok(PackageStages { score: stages.score, stages: loaded })
}

/// A stage's `min_reward` split into its Score threshold and its per-key thresholds.
fn min_rewards(stage: &Stage, invalid: &dyn Fn(String) -> LoadError) -> Result<(Option<f64>, BTreeMap<String, f64>), LoadError> {
    match &stage.min_reward {
        None => Ok((None, BTreeMap::new())),
        Some(MinReward::Score(min)) if (0.0..=1.0).contains(min) => Ok((Some(*min), BTreeMap::new())),
        Some(MinReward::Score(min)) => Err(invalid(format!("stage `{}` has min_reward = {min}; expected a number in [0, 1]", stage.name))),
        Some(MinReward::Keys(keys)) if keys.is_empty() => Err(invalid(format!(
            "stage `{}` has an empty min_reward table; expected reward keys with their minimums, such as {{ reward = 1.0 }}",
            stage.name
        ))),
        Some(MinReward::Keys(keys)) => {
            if let Some((key, min)) = keys.iter().find(|(key, min)| key.is_empty() || !min.is_finite()) {
                return Err(invalid(format!(
                    "stage `{}` has min_reward key `{key}` = {min}; expected a non-empty key and a finite number",
                    stage.name
                )));
            }
            Ok((None, keys.clone()))
        }
    }
}

/// `rel` (a stage's `key`) as a path below `root`, outside `workspace/`.
fn inside_package(rel: &str, name: &str, key: &str, invalid: &dyn Fn(String) -> LoadError) -> Result<PathBuf, LoadError> {
    if Path::new(rel).is_absolute() {
        return Err(invalid(format!("stage `{name}`'s {key} `{rel}` is absolute; expected a path relative to the package root")));
    }
    let normal = match tree::normalize_relative(Path::new(rel)) {
        Some(normal) if !normal.as_os_str().is_empty() => normal,
        _ => {
            let noun = if key == "instruction" { "file" } else { "directory" };
            return Err(invalid(format!("stage `{name}`'s {key} `{rel}` does not name a {noun} inside the package")));
        }
    };
    let first = normal.components().next();
    if first == Some(Component::Normal("workspace".as_ref())) {
        return Err(invalid(format!(
            "stage `{name}`'s {key} `{rel}` is inside workspace/, which the agent sees from the start; keep it outside"
        )));
    }
    Ok(normal)
}

/// A stage's `files` or `gold` (`key`): a directory of the package, loaded as an overlay.
fn overlay_dir(root: &Path, rel: &str, name: &str, key: &str, invalid: &dyn Fn(String) -> LoadError) -> Result<Overlay, LoadError> {
    let path = root.join(inside_package(rel, name, key, invalid)?);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => crate::load::load_overlay(&path),
        Ok(_) => Err(invalid(format!("stage `{name}`'s {key} `{rel}` is not a directory"))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Err(invalid(format!("stage `{name}`'s {key} `{rel}`: no such directory in the package")))
        }
        Err(_) => {
            fs_err::symlink_metadata(&path)?;
            Err(invalid(format!("stage `{name}`'s {key} `{rel}` cannot be read")))
        }
    }
}

fn read_instruction(root: &Path, rel: &str, name: &str, invalid: &dyn Fn(String) -> LoadError) -> Result<String, LoadError> {
    let path = root.join(inside_package(rel, name, "instruction", invalid)?);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => crate::load::read_text(&path),
        Ok(_) => Err(invalid(format!("stage `{name}`'s instruction `{rel}` is not a regular file"))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Err(invalid(format!("stage `{name}`'s instruction `{rel}`: no such file in the package")))
        }
        Err(_) => {
            fs_err::metadata(&path)?;
            Err(invalid(format!("stage `{name}`'s instruction `{rel}` cannot be read")))
        }
    }
}
