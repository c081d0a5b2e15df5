//! What measures need from a task package beyond the store: stated requirements (seed 000
//! Ahead), clarification targets (seed 002 coverage), and per residual state its predecessor,
//! the files and lines it changed, and the files it left out (seed 001 App. C–D).
//!
//! Packages are found through `run.toml` (`[[tasks]] path`, `hash`). A package that is gone
//! or whose content hash differs from the run's is not used: the measures that need it are
//! left out and the report says why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use specgap_protocol::package::{ClarificationTarget, Family};
use specgap_task::{Overlay, TaskPackage};

use crate::diff::{DiffChanges, parse_diff};

/// What the measures use from one task package.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskContext {
    /// Task name.
    pub name: String,
    /// Task family (seed 000 per-family breakdowns).
    pub family: Family,
    /// Whether the task is a delivery case (`[delivery]` in `task.toml`; seed 002): its planned
    /// runs are the denominators of Quality, DSR, validity and pass@k.
    pub delivery: bool,
    /// Ids of the requirements the partial instruction states (`stated = true`).
    pub stated: BTreeSet<String>,
    /// Clarification targets in file order (seed 002 §3.2).
    pub targets: Vec<ClarificationTarget>,
    /// Residual states by id.
    pub states: BTreeMap<String, StateContext>,
}

/// One residual state (seed 001 §3) as the acceptance-bias measures need it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateContext {
    /// `meta.toml` `predecessor`: the agent that produced the state (App. C.2 groups).
    pub predecessor: String,
    /// What `state.patch` changes relative to the clean workspace: the predecessor's files and
    /// its added or replaced lines (App. D.2 "Kept": P).
    pub changes: DiffChanges,
    /// Files the reference solution changes and the predecessor does not (App. D.2 L):
    /// `meta.toml` `left_out` when given, else computed from the gold overlay.
    pub left_out: BTreeSet<String>,
}

impl TaskContext {
    /// Builds the context of a loaded package. Reading `state.patch` or the gold overlay can
    /// fail; such a state keeps empty changes and the failure is returned as a warning.
    pub fn from_package(package: &TaskPackage) -> (TaskContext, Vec<String>) {
        let mut warnings = Vec::new();
        let mut states = BTreeMap::new();
        let gold_changes = package
            .solutions()
            .gold
            .as_ref()
            .map(|gold| overlay_changed_files(gold, &package.workspace_dir()));
        for (id, state) in package.residual_states() {
            let changes = match fs_err::read(&state.patch) {
                Ok(bytes) => parse_diff(&String::from_utf8_lossy(&bytes)),
                Err(err) => {
                    warnings.push(format!(
                        "task {}: residual state {id}: {err}",
                        package.name()
                    ));
                    DiffChanges::default()
                }
            };
            let left_out = match (&state.meta.left_out, &gold_changes) {
                (Some(listed), _) => listed.iter().cloned().collect(),
                (None, Some(Ok(gold))) => gold.difference(&changes.files).cloned().collect(),
                (None, Some(Err(err))) => {
                    warnings.push(format!("task {}: gold overlay: {err}", package.name()));
                    BTreeSet::new()
                }
                (None, None) => BTreeSet::new(),
            };
            states.insert(
                id.clone(),
                StateContext {
                    predecessor: state.meta.predecessor.clone(),
                    changes,
                    left_out,
                },
            );
        }
        let context = TaskContext {
            name: package.name().to_string(),
            family: package.manifest().task.family,
            delivery: package.manifest().delivery.is_some(),
            stated: package
                .requirements()
                .iter()
                .filter(|r| r.stated)
                .map(|r| r.id.clone())
                .collect(),
            targets: package.clarifications().to_vec(),
            states,
        };
        (context, warnings)
    }
}

/// Workspace-relative files an overlay changes: files whose bytes differ from (or are absent
/// in) the starter workspace, and the paths its `delete.txt` removes.
fn overlay_changed_files(overlay: &Overlay, workspace: &Path) -> Result<BTreeSet<String>, String> {
    let mut changed = BTreeSet::new();
    for entry in walkdir::WalkDir::new(&overlay.dir).sort_by_file_name() {
        let entry = entry.map_err(|e| e.to_string())?;
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&overlay.dir) else {
            continue;
        };
        if relative == Path::new("delete.txt") {
            continue;
        }
        let new = fs_err::read(entry.path()).map_err(|e| e.to_string())?;
        let old = std::fs::read(workspace.join(relative)).ok();
        if old.as_deref() != Some(new.as_slice()) {
            changed.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    for deleted in &overlay.delete {
        changed.insert(deleted.to_string_lossy().replace('\\', "/"));
    }
    Ok(changed)
}
