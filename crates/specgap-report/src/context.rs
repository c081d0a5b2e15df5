//! What measures need from a task package beyond the store: stated requirements (seed 000
//! Ahead), clarification targets (seed 002 coverage), and per residual state its predecessor,
//! the files and lines it changed, and the files it left out (seed 001 App. C–D).
//!
//! Packages are found through `run.toml` (`[[tasks]] path`, `hash`). A package that is gone
//! or whose content hash differs from the run's is not used: the measures that need it are
//! left out and the report says why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use specgap_protocol::package::{ClarificationTarget, Family};
use specgap_task::TaskPackage;
use specgap_task::residual::left_out_files;

use crate::diff::{DiffChanges, parse_diff};
use crate::machine::MachineState;

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
    /// Whether the delivery case names a submission schema (format 2 `[delivery] schema`), so
    /// its runs may be scored by an extraction panel (seed 002 §4.1, A.3).
    pub schema: bool,
    /// The research (or other) sub-family of the task, when the package names one (seed 000
    /// §4.3: instrumented studies, machine-learning experiments, online systems). Read through
    /// [`TaskContext::subfamily_of`], the one place that knows where it comes from.
    pub subfamily: Option<String>,
    /// Requirements of the task (`requirements.toml`); 0 for tasks scored otherwise.
    pub requirements: usize,
    /// Ids of the requirements the partial instruction states (`stated = true`).
    pub stated: BTreeSet<String>,
    /// Clarification targets in file order (seed 002 §3.2).
    pub targets: Vec<ClarificationTarget>,
    /// Residual states by id.
    pub states: BTreeMap<String, StateContext>,
    /// Workspace-relative paths of the files in the package's `workspace/` (the clean starting
    /// tree; seed 001 App. D.2 globs are expanded against it).
    pub workspace_files: BTreeSet<String>,
    /// Whether the package's evaluator trusts the workspace (format 2
    /// `[evaluator].trusts_workspace`, e.g. imported Harbor tasks): the report says so.
    pub trusts_workspace: bool,
}

/// One residual state (seed 001 §3) as the acceptance-bias measures need it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateContext {
    /// `meta.toml` `predecessor`: the agent that produced the state (App. C.2 groups).
    pub predecessor: String,
    /// `meta.toml` `steps`: the predecessor's recorded agent turns (Table 2).
    pub steps: u32,
    /// What `state.patch` changes relative to the clean workspace, as its author wrote it: the
    /// predecessor's files (Left-out files, inspection) and lines. Kept takes its lines from
    /// the harness's own diff of the state instead ([`StateContext::harness_changes`]).
    pub changes: DiffChanges,
    /// Size of `state.patch` in bytes.
    pub patch_bytes: u64,
    /// Files the reference solution changes and the predecessor does not (App. D.2 L):
    /// `meta.toml` `left_out` when given, else computed from the gold overlay.
    pub left_out: BTreeSet<String>,
    /// Where to rebuild the state for [`StateContext::harness_changes`].
    pub source: Option<StateSource>,
    /// A whole-machine state's layer over the task's image (`residual/<id>/machine.tar`):
    /// its files count in Kept ([`crate::machine`]).
    pub machine: Option<MachineState>,
    /// The harness's diff of the rebuilt state, computed on first use.
    harness: OnceLock<Result<(DiffChanges, u64), String>>,
}

/// What rebuilding a residual state needs: the package's `workspace/`, its content hash (the
/// base cache key) and the state's `state.patch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSource {
    /// The package's `workspace/`.
    pub workspace: PathBuf,
    /// The package content hash.
    pub hash: String,
    /// `residual/<id>/state.patch`.
    pub patch: PathBuf,
}

impl StateContext {
    /// The harness's own diff of this state against the clean base, recomputed from the package
    /// as the engine does when a residual episode starts (materialize the base, `git apply` the
    /// patch, diff the work tree): what a store written before `start/workspace.diff` existed
    /// lacks. Computed once per state, in a temporary directory; with its size in bytes.
    ///
    /// # Errors
    /// Why the state could not be rebuilt (no source, git or I/O failures), as text.
    pub fn harness_changes(&self) -> Result<&(DiffChanges, u64), &str> {
        self.harness
            .get_or_init(|| {
                let source = self.source.as_ref().ok_or_else(|| "no package to rebuild the state from".to_string())?;
                rebuild_state_diff(source).map(|text| (parse_diff(&text), text.len() as u64))
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// Materializes `source` in a temporary directory and returns the harness's diff of it.
fn rebuild_state_diff(source: &StateSource) -> Result<String, String> {
    let scratch = tempfile::Builder::new().prefix("specgap-report-state-").tempdir().map_err(|e| e.to_string())?;
    let cache = specgap_sandbox::BaseCache::new(scratch.path().join("bases")).map_err(|e| e.to_string())?;
    let base = cache.base(&source.hash, &source.workspace).map_err(|e| e.to_string())?;
    let workspace = scratch.path().join("workspace");
    specgap_sandbox::materialize(&base, &workspace, Some(&source.patch)).map_err(|e| e.to_string())?;
    specgap_sandbox::diff(&base, &workspace).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).map_err(|e| e.to_string())
}

impl TaskContext {
    /// The task's sub-family: package format 2's `[task] subfamily` (`None` in format 1 and
    /// when not given; docs/decisions.md "Report: seed 000 measures").
    pub fn subfamily_of(package: &TaskPackage) -> Option<String> {
        package.subfamily().map(str::to_string)
    }

    /// Builds the context of a loaded package. Reading `state.patch` or the gold overlay can
    /// fail; such a state keeps empty changes and the failure is returned as a warning.
    pub fn from_package(package: &TaskPackage) -> (TaskContext, Vec<String>) {
        let mut warnings = Vec::new();
        let mut states = BTreeMap::new();
        let image_root = specgap_task::cached_task_root(package);
        if image_root.is_none() && package.residual_states().values().any(|s| s.machine.is_some()) {
            warnings.push(format!(
                "task {}: its image is not in the environment cache (`specgap env build`), so Kept counts every line of a machine file a state changed as the predecessor's",
                package.name()
            ));
        }
        for (id, state) in package.residual_states() {
            let (changes, patch_bytes) = match fs_err::read(&state.patch) {
                Ok(bytes) => (parse_diff(&String::from_utf8_lossy(&bytes)), bytes.len() as u64),
                Err(err) => {
                    warnings.push(format!("task {}: residual state {id}: {err}", package.name()));
                    (DiffChanges::default(), 0)
                }
            };
            // The same definition `specgap check` holds `left_out` to.
            let left_out = match (&state.meta.left_out, left_out_files(package, state)) {
                (Some(listed), _) => listed.iter().cloned().collect(),
                (None, Ok(computed)) => computed.unwrap_or_default(),
                (None, Err(err)) => {
                    warnings.push(format!("task {}: residual state {id}: {err}", package.name()));
                    BTreeSet::new()
                }
            };
            states.insert(
                id.clone(),
                StateContext {
                    predecessor: state.meta.predecessor.clone(),
                    steps: state.meta.steps,
                    changes,
                    patch_bytes,
                    left_out,
                    source: Some(StateSource {
                        workspace: package.workspace_dir(),
                        hash: package.hash().to_string(),
                        patch: state.patch.clone(),
                    }),
                    machine: state.machine.as_ref().map(|layer| MachineState::new(layer.clone(), image_root.clone())),
                    harness: OnceLock::new(),
                },
            );
        }
        let context = TaskContext {
            name: package.name().to_string(),
            family: package.manifest().task.family,
            delivery: package.manifest().delivery.is_some(),
            schema: package.delivery_schema().is_some(),
            subfamily: TaskContext::subfamily_of(package),
            requirements: package.requirements().len(),
            stated: package.requirements().iter().filter(|r| r.stated).map(|r| r.id.clone()).collect(),
            targets: package.clarifications().to_vec(),
            states,
            workspace_files: tree_files(&package.workspace_dir()),
            trusts_workspace: package.manifest().evaluator.trusts_workspace,
        };
        (context, warnings)
    }
}

/// Workspace-relative paths of the regular files and links under `dir` (`.git` left out, as the
/// base leaves it out); empty when the directory cannot be read.
fn tree_files(dir: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !e.file_name().eq_ignore_ascii_case(".git"))
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .filter_map(|e| e.path().strip_prefix(dir).ok().map(|p| p.to_string_lossy().replace('\\', "/")))
        .collect()
}
