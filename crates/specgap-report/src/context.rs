//! What measures need from a task package beyond the store: stated requirements (seed 000
//! Ahead), clarification targets (seed 002 coverage), and per residual state its predecessor,
//! the files and lines it changed, and the files it left out (seed 001 App. C–D).
//!
//! Packages are found through `run.toml` (`[[tasks]] path`, `hash`). A package that is gone
//! or whose content hash differs from the run's is not used: the measures that need it are
//! left out and the report says why.

use std::collections::{BTreeMap, BTreeSet};

use specgap_protocol::package::{ClarificationTarget, Family};
use specgap_task::TaskPackage;
use specgap_task::residual::left_out_files;

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
            // The same definition `specgap check` holds `left_out` to.
            let left_out = match (&state.meta.left_out, left_out_files(package, state)) {
                (Some(listed), _) => listed.iter().cloned().collect(),
                (None, Ok(computed)) => computed.unwrap_or_default(),
                (None, Err(err)) => {
                    warnings.push(format!(
                        "task {}: residual state {id}: {err}",
                        package.name()
                    ));
                    BTreeSet::new()
                }
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
