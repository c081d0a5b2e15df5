//! Stage IV, state reconstruction and validation (seed 001 §3.2, App. B.1, B.3): each
//! candidate that passed review becomes `residual/<id>/state.patch` and `meta.toml` in a task
//! package, after it is rebuilt from those files and verified again.
//!
//! For each candidate, in order:
//!
//! 1. **Stage** the files in `residualize/states/<id>/`: `state.patch` is the final
//!    submission's stored `workspace.diff`, byte for byte (it keeps build outputs, caches and
//!    logs: App. B.1); `meta.toml` has `predecessor` (the agent spec), `declared_complete =
//!    true`, `steps` (agent turns), `failing_tests` (as the predecessor's final evaluation
//!    reported them), `left_out` ([`specgap_task::residual::left_out_files`], when the package
//!    has a gold) and `notes` saying where the state comes from.
//! 2. **Reconstruct**: materialize the clean workspace and apply `state.patch` as every
//!    residual start does (`git apply --binary`, nothing committed); the harness's diff of
//!    the result must equal the recorded one byte for byte. A failure is `patch-failed`.
//! 3. **Usable**: a trivial command runs in the episode sandbox over that workspace, with the
//!    task's `[environment]`, and prints what it was asked to. A failure is
//!    `environment-unusable`.
//! 4. **Re-verify**: the task's evaluator on the reconstructed state (up to
//!    [`EVALUATION_ATTEMPTS`] times when it errs) must give a valid verdict (`no-valid-verdict`),
//!    still fail (`no-longer-failing`) and fail exactly the recorded tests
//!    (`failing-set-changed`).
//!
//! Each validated state is recorded in `residualize/build.json` at once, so an interrupted
//! build goes on with the next state. Then the included states are **installed** into the
//! target package — a copy under `--write-to DIR` (`DIR/<task name>/`, copied once from the
//! package the run read) or the package itself (`--in-place`) — which is loaded again to show
//! the loader accepts it. Installing is idempotent: a state already there with the same bytes
//! is left alone, one with other bytes is an error.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use specgap_protocol::package::ResidualMeta;
use specgap_sandbox::{BaseCache, CommandSpec, MaterializeError, SandboxConfig, Session};
use specgap_task::{Judge as _, Outcome, ResidualState, SandboxJudge, Submission, TaskPackage};

use crate::error::ResidualizeError;
use crate::filter::ScreenedRun;
use crate::fsio::{copy_package, write_atomic};

/// Evaluator runs per state before an evaluation error excludes it (`no-valid-verdict`).
pub const EVALUATION_ATTEMPTS: u32 = 2;

/// Seconds the usability command may take.
pub const USABLE_TIMEOUT_SEC: u64 = 60;

/// What the usability check prints when the sandbox works.
const READY: &str = "specgap-residual-state-ready";

/// Where the states go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Target {
    /// Copies of the packages under this directory, at `<dir>/<task name>/`.
    WriteTo {
        /// The directory (canonical once created).
        dir: String,
    },
    /// The packages the runs read, changed in place.
    InPlace,
}

impl Target {
    /// In words, for messages.
    pub fn describe(&self) -> String {
        match self {
            Target::WriteTo { dir } => format!("--write-to {dir}"),
            Target::InPlace => "--in-place".to_string(),
        }
    }
}

/// Why Stage IV excluded a reviewed candidate (seed 001 App. B.3, Table 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildExclusion {
    /// `state.patch` does not apply, or the rebuilt state differs from the recorded one.
    PatchFailed,
    /// The sandbox cannot run a command over the rebuilt state.
    EnvironmentUnusable,
    /// The evaluator gives no valid verdict on the rebuilt state.
    NoValidVerdict,
    /// The rebuilt state passes.
    NoLongerFailing,
    /// It fails, but other tests than recorded.
    FailingSetChanged,
}

impl BuildExclusion {
    /// Every exclusion, in the order of the steps.
    pub const ALL: [BuildExclusion; 5] = [
        BuildExclusion::PatchFailed,
        BuildExclusion::EnvironmentUnusable,
        BuildExclusion::NoValidVerdict,
        BuildExclusion::NoLongerFailing,
        BuildExclusion::FailingSetChanged,
    ];

    /// Kebab-case code.
    pub fn code(self) -> &'static str {
        match self {
            BuildExclusion::PatchFailed => "patch-failed",
            BuildExclusion::EnvironmentUnusable => "environment-unusable",
            BuildExclusion::NoValidVerdict => "no-valid-verdict",
            BuildExclusion::NoLongerFailing => "no-longer-failing",
            BuildExclusion::FailingSetChanged => "failing-set-changed",
        }
    }

    /// The funnel's words (Table 5's rows, the last split in three).
    pub fn label(self) -> &'static str {
        match self {
            BuildExclusion::PatchFailed => "Patch application failed",
            BuildExclusion::EnvironmentUnusable => "Environment unusable for rollouts",
            BuildExclusion::NoValidVerdict => "No valid verifier result",
            BuildExclusion::NoLongerFailing => "No longer failing",
            BuildExclusion::FailingSetChanged => "Failing tests differ from those recorded",
        }
    }
}

/// One reviewed candidate after Stage IV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidatedState {
    /// State id (the predecessor episode's id).
    pub id: String,
    /// Task name.
    pub task: String,
    /// `None` when included; else the failed step.
    pub excluded: Option<BuildExclusion>,
    /// What the failed step saw, or what the evaluator reported on an included state.
    pub detail: String,
    /// Tests (or requirements) failing on the rebuilt state, when it was evaluated.
    pub failing_now: Vec<String>,
    /// Hex SHA-256 of the staged `state.patch`.
    pub patch_sha256: String,
    /// Hex SHA-256 of the staged `meta.toml`.
    pub meta_sha256: String,
}

/// A target package of the build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageRecord {
    /// Task name.
    pub task: String,
    /// The package the runs read.
    pub source: String,
    /// The package the states go to (equal to `source` in place).
    pub target: String,
    /// Content hash the runs recorded (the version the states were made on).
    pub hash_before: String,
    /// Content hash after the last install, once states were installed.
    pub hash_after: Option<String>,
}

/// `residualize/build.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// Where the states go.
    pub target: Target,
    /// The target packages, by task.
    pub packages: Vec<PackageRecord>,
    /// Validated states, in candidate order.
    pub states: Vec<ValidatedState>,
}

impl BuildRecord {
    /// The record of state `id`, if validated.
    pub fn state(&self, id: &str) -> Option<&ValidatedState> {
        self.states.iter().find(|s| s.id == id)
    }
}

/// The outcome of steps 2–4 for one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    /// `None` when the state passed every step; else the step it failed.
    pub excluded: Option<BuildExclusion>,
    /// What the failed step saw, or what the evaluator reported.
    pub detail: String,
    /// Tests (or requirements) failing on the rebuilt state, when it was evaluated.
    pub failing_now: Vec<String>,
}

impl Validation {
    fn excluded(step: BuildExclusion, detail: impl Into<String>) -> Validation {
        Validation { excluded: Some(step), detail: detail.into(), failing_now: Vec::new() }
    }
}

/// What validation needs for every state: one judge, one base cache, the sandbox setting.
pub struct Validator {
    judge: SandboxJudge,
    cache: BaseCache,
    sandbox: SandboxConfig,
    scratch: tempfile::TempDir,
}

impl Validator {
    /// A validator running commands and evaluators under bubblewrap (`sandbox = true`) or on
    /// the host (`--no-sandbox`).
    ///
    /// # Errors
    /// [`ResidualizeError::Sandbox`] when bubblewrap is missing or the scratch space cannot be
    /// made.
    pub fn new(sandbox: bool) -> Result<Validator, ResidualizeError> {
        let judge = SandboxJudge::new(sandbox).map_err(|e| ResidualizeError::Sandbox(Box::new(e)))?;
        let scratch = tempfile::Builder::new().prefix("specgap-residualize-").tempdir()?;
        let cache = BaseCache::new(scratch.path().join("bases")).map_err(|e| ResidualizeError::Sandbox(Box::new(e)))?;
        Ok(Validator { judge, cache, sandbox: SandboxConfig { enabled: sandbox }, scratch })
    }

    /// Steps 2–4 for `state` of `package`; `recorded_diff` is the final diff as stored.
    ///
    /// # Errors
    /// Harness failures that say nothing about the state (I/O, git missing); a state's own
    /// failure is a [`Validation`] with `excluded` set.
    pub fn validate(&self, package: &TaskPackage, state: &ResidualState, recorded_diff: &[u8]) -> Result<Validation, ResidualizeError> {
        let work = tempfile::Builder::new().prefix("state-").tempdir_in(self.scratch.path())?;
        let ws = work.path().join("workspace");
        let base = self.cache.base(&base_key(package.hash()), &package.workspace_dir()).map_err(materialize_error)?;
        match specgap_sandbox::materialize(&base, &ws, Some(&state.patch)) {
            Ok(()) => {}
            Err(MaterializeError::PatchFailed { stderr, .. }) => {
                return Ok(Validation::excluded(BuildExclusion::PatchFailed, format!("state.patch does not apply: {}", stderr.trim())));
            }
            Err(e) => return Err(materialize_error(e)),
        }
        let rebuilt = specgap_sandbox::diff(&base, &ws).map_err(materialize_error)?;
        if rebuilt != recorded_diff {
            let detail = format!(
                "the rebuilt state differs from the recorded final state (its diff has {} bytes, the recorded one {})",
                rebuilt.len(),
                recorded_diff.len()
            );
            return Ok(Validation::excluded(BuildExclusion::PatchFailed, detail));
        }
        if let Err(why) = self.usable(package, state, &ws) {
            return Ok(Validation::excluded(BuildExclusion::EnvironmentUnusable, why));
        }
        let outcome = match self.evaluate(package, state) {
            Ok(outcome) => outcome,
            Err(why) => return Ok(Validation::excluded(BuildExclusion::NoValidVerdict, why)),
        };
        let failing_now: Vec<String> = if outcome.result.tests.is_some() {
            outcome.failing_tests().into_iter().map(str::to_string).collect()
        } else {
            outcome.failing_requirements(package).into_iter().map(str::to_string).collect()
        };
        let recorded: BTreeSet<&str> = state.meta.failing_tests.iter().map(String::as_str).collect();
        let now: BTreeSet<&str> = failing_now.iter().map(String::as_str).collect();
        let (excluded, detail) = if outcome.success() {
            (Some(BuildExclusion::NoLongerFailing), "the evaluator passes the rebuilt state".to_string())
        } else if now != recorded {
            let listed: Vec<&str> = recorded.difference(&now).copied().collect();
            let extra: Vec<&str> = now.difference(&recorded).copied().collect();
            (
                Some(BuildExclusion::FailingSetChanged),
                format!("recorded as failing but passing now: {}; failing now but not recorded: {}", none_or(&listed), none_or(&extra)),
            )
        } else {
            (None, format!("fails {} as recorded", failing_now.join(", ")))
        };
        Ok(Validation { excluded, detail, failing_now })
    }

    /// Runs a trivial command in the episode sandbox over `ws` (on the task's image with the
    /// state's machine layer, for an image task); `Err` says why it is unusable.
    fn usable(&self, package: &TaskPackage, state: &ResidualState, ws: &Path) -> Result<(), String> {
        let host = specgap_task::views_on(package, state.machine.as_deref(), specgap_env::EngineChoice::Auto)
            .map_err(|e| format!("the task's [environment]: {}", specgap_protocol::text::error_chain(&e)))?
            .commands;
        let mut session = Session::new(CommandSpec::shell("", ws), host, self.sandbox.clone());
        let command = format!("ls -A > /dev/null && echo {READY}");
        let output = session
            .run_shell(&command, Duration::from_secs(USABLE_TIMEOUT_SEC), 4096)
            .map_err(|e| format!("the sandbox cannot run a command: {}", specgap_protocol::text::error_chain(&e)))?;
        let stdout = output.stdout.render(4096);
        if output.success() && stdout.contains(READY) {
            Ok(())
        } else {
            Err(format!(
                "`{command}` exited with {:?}{}: {}",
                output.exit_code,
                if output.timed_out { " (timed out)" } else { "" },
                output.stderr.render(2048).trim()
            ))
        }
    }

    /// The evaluator on the state (its patch applied to the clean workspace, its machine layer
    /// over the image), retried once on an evaluation error; `Err` is the last error.
    fn evaluate(&self, package: &TaskPackage, state: &ResidualState) -> Result<Outcome, String> {
        let mut last = String::new();
        for _ in 0..EVALUATION_ATTEMPTS {
            match self.judge.evaluate(package, Submission::Residual(state)).and_then(|judged| Outcome::new(package, judged)) {
                Ok(outcome) => return Ok(outcome),
                Err(e) => last = specgap_task::check::describe_error_chain(&e),
            }
        }
        Err(last)
    }
}

/// A base-cache key for a package hash (the cache allows 128 characters).
fn base_key(hash: &str) -> String {
    hash.chars().take(64).collect()
}

fn materialize_error(e: MaterializeError) -> ResidualizeError {
    ResidualizeError::Sandbox(Box::new(e))
}

fn none_or(items: &[&str]) -> String {
    if items.is_empty() { "none".to_string() } else { items.join(", ") }
}

/// `meta.toml` of a candidate (see the module guide), without `left_out` (added once the patch
/// is staged, since it is computed from it).
pub fn meta_for(candidate: &ScreenedRun, reviewers: &[String]) -> ResidualMeta {
    let files = candidate.substantive_files.len();
    let notes = format!(
        "Left by {agent} in episode {id} (condition {condition}, {steps} turns, ended {end}) and selected by specgap residualize \
         (seed 001 Residualization): submitted as complete and still failing, changed {files} file(s) beyond build outputs, \
         caches and logs, kept by reviewers {reviewers}, rebuilt from state.patch and verified again.",
        agent = candidate.agent,
        id = candidate.episode,
        condition = candidate.condition,
        steps = candidate.steps,
        end = candidate.end_reason.as_deref().unwrap_or("unknown"),
        reviewers = reviewers.join(" and "),
    );
    ResidualMeta {
        predecessor: candidate.agent.clone(),
        declared_complete: true,
        steps: candidate.steps,
        failing_tests: candidate.failing_tests.clone(),
        left_out: None,
        notes,
    }
}

/// Writes `state.patch` (the recorded diff), `machine.tar` (a copy of `machine`, the final
/// submission's machine layer, when given) and `meta.toml` into `dir` and returns the state as
/// a package would hold it, with `left_out` computed against `package`'s gold.
///
/// # Errors
/// I/O errors; [`ResidualizeError::Package`] when the left-out files cannot be computed.
pub fn stage(
    package: &TaskPackage,
    id: &str,
    dir: &Path,
    diff: &[u8],
    machine: Option<&Path>,
    mut meta: ResidualMeta,
) -> Result<(ResidualState, Vec<u8>), ResidualizeError> {
    fs_err::create_dir_all(dir)?;
    let patch = dir.join("state.patch");
    write_atomic(&patch, diff)?;
    let machine = match machine {
        Some(layer) => {
            let copy = dir.join(specgap_task::MACHINE_LAYER_FILE);
            write_atomic(&copy, &fs_err::read(layer)?)?;
            Some(copy)
        }
        None => None,
    };
    let mut state = ResidualState { id: id.to_string(), patch, meta: meta.clone(), machine };
    let left_out = specgap_task::residual::left_out_files(package, &state)
        .map_err(|e| ResidualizeError::Package { task: package.name().to_string(), message: specgap_protocol::text::error_chain(&e) })?;
    meta.left_out = left_out.map(|files| files.into_iter().collect());
    let text = toml::to_string(&meta).map_err(|e| ResidualizeError::Serialize { path: dir.join("meta.toml"), message: e.to_string() })?;
    write_atomic(&dir.join("meta.toml"), text.as_bytes())?;
    state.meta = meta;
    Ok((state, text.into_bytes()))
}

/// The target package directory of `task` under `target`, prepared: for `--write-to`, a copy
/// of `source` made once (checked to hash as the run recorded); in place, `source` itself.
/// Returns the loaded target package.
///
/// # Errors
/// [`ResidualizeError::Package`] when the source is missing or another version than the run
/// used; [`ResidualizeError::TargetOccupied`] when the copy's place holds something this
/// pipeline did not write; loader and I/O errors.
pub fn prepare_package(
    target: &Target,
    candidate: &ScreenedRun,
    packages: &mut Vec<PackageRecord>,
) -> Result<TaskPackage, ResidualizeError> {
    let task = &candidate.task;
    let package_error = |message: String| ResidualizeError::Package { task: task.clone(), message };
    if let Some(record) = packages.iter().find(|p| &p.task == task) {
        remove_partials(Path::new(&record.target))?;
        let loaded = load(Path::new(&record.target))?;
        let known: Vec<&str> = [Some(record.hash_before.as_str()), record.hash_after.as_deref()].into_iter().flatten().collect();
        if !known.contains(&loaded.hash()) {
            return Err(package_error(format!(
                "{} changed since this pipeline last wrote it (hash {}); it cannot tell which version its states belong to",
                record.target,
                loaded.hash()
            )));
        }
        return Ok(loaded);
    }
    let source = candidate
        .task_path
        .as_deref()
        .map(PathBuf::from)
        .ok_or_else(|| package_error("the run does not record where the package was read from".into()))?;
    let source_package = load(&source)?;
    if source_package.hash() != candidate.task_hash {
        return Err(package_error(format!(
            "{} has hash {} now, but the predecessor ran on {}: the package changed since the run",
            source.display(),
            source_package.hash(),
            candidate.task_hash
        )));
    }
    let target_dir = match target {
        Target::InPlace => source.clone(),
        Target::WriteTo { dir } => {
            let dest = Path::new(dir).join(task);
            if dest.exists() {
                return Err(ResidualizeError::TargetOccupied { path: dest });
            }
            copy_package(&source, &dest)?;
            let copy = load(&dest)?;
            if copy.hash() != source_package.hash() {
                return Err(package_error(format!("the copy in {} does not hash as its source; it was not copied whole", dest.display())));
            }
            dest
        }
    };
    packages.push(PackageRecord {
        task: task.clone(),
        source: source.display().to_string(),
        target: target_dir.display().to_string(),
        hash_before: candidate.task_hash.clone(),
        hash_after: None,
    });
    load(&target_dir)
}

fn load(path: &Path) -> Result<TaskPackage, ResidualizeError> {
    specgap_task::load(path).map_err(|source| ResidualizeError::Load { path: path.to_path_buf(), source: Box::new(source) })
}

/// Installs the included states of `record` from `staging` (`states/<id>/`) into their target
/// packages, then loads each package again and records its new hash.
///
/// # Errors
/// [`ResidualizeError::StateExists`] when a state directory holds other bytes; loader and I/O
/// errors.
pub fn install(record: &mut BuildRecord, staging: &Path) -> Result<(), ResidualizeError> {
    let mut touched: BTreeSet<String> = BTreeSet::new();
    for package in &record.packages {
        remove_partials(Path::new(&package.target))?;
    }
    for state in record.states.iter().filter(|s| s.excluded.is_none()) {
        let Some(package) = record.packages.iter().find(|p| p.task == state.task) else { continue };
        let from = staging.join(&state.id);
        let to = Path::new(&package.target).join("residual").join(&state.id);
        let patch = fs_err::read(from.join("state.patch"))?;
        let meta = fs_err::read(from.join("meta.toml"))?;
        let machine_path = from.join(specgap_task::MACHINE_LAYER_FILE);
        let machine = if machine_path.is_file() { Some(fs_err::read(&machine_path)?) } else { None };
        if to.exists() {
            let same = std::fs::read(to.join("state.patch")).ok().as_deref() == Some(patch.as_slice())
                && std::fs::read(to.join("meta.toml")).ok().as_deref() == Some(meta.as_slice())
                && std::fs::read(to.join(specgap_task::MACHINE_LAYER_FILE)).ok() == machine;
            if !same {
                return Err(ResidualizeError::StateExists { id: state.id.clone(), package: PathBuf::from(&package.target) });
            }
            touched.insert(state.task.clone());
            continue;
        }
        // Written beside the package's states and renamed into place, so a state directory
        // is either whole or absent; a copy left by an interrupted install is removed first.
        let partial = partial_dir(Path::new(&package.target), &state.id);
        fs_err::create_dir_all(&partial)?;
        write_atomic(&partial.join("state.patch"), &patch)?;
        write_atomic(&partial.join("meta.toml"), &meta)?;
        if let Some(machine) = &machine {
            write_atomic(&partial.join(specgap_task::MACHINE_LAYER_FILE), machine)?;
        }
        fs_err::rename(&partial, &to)?;
        touched.insert(state.task.clone());
    }
    for package in record.packages.iter_mut().filter(|p| touched.contains(&p.task)) {
        package.hash_after = Some(load(Path::new(&package.target))?.hash().to_string());
    }
    Ok(())
}

/// Where a state is written before it is renamed into `residual/<id>`: a name the loader
/// would refuse (it starts with `.`), so a half-written state is never read as a state.
fn partial_dir(package: &Path, id: &str) -> PathBuf {
    package.join("residual").join(format!(".{id}{PARTIAL_SUFFIX}"))
}

const PARTIAL_SUFFIX: &str = ".residualize-partial";

/// Removes what an interrupted install left in `package/residual/`.
fn remove_partials(package: &Path) -> Result<(), ResidualizeError> {
    let dir = package.join("residual");
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in fs_err::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(PARTIAL_SUFFIX) {
            fs_err::remove_dir_all(entry.path())?;
        }
    }
    Ok(())
}
