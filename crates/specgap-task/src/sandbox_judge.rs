//! [`SandboxJudge`]: the real [`Judge`] — materializes a submission with `specgap-sandbox` and
//! runs the package's evaluator on it under bubblewrap (DESIGN §2 evaluator protocol, §3.1–3.2).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use specgap_sandbox::{
    BaseCache, CommandSpec, EvalError, EvaluatorRun, Limits, MaterializeError, SandboxConfig, SandboxError, apply_overlay, materialize,
    run_evaluator,
};

use specgap_env::EngineChoice;

use crate::heard::{HEARD_OUTPUT_BYTES, Heard};
use crate::judge::{EvaluateError, Judge, Judged, Submission};
use crate::package::{ResidualState, TaskPackage};
use crate::views::{TaskViews, cache_for, views_on, views_with_layer};

/// Why a [`SandboxJudge`] could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeSetupError {
    /// The sandbox cannot run commands (bubblewrap missing).
    #[error("the sandbox cannot run commands")]
    Sandbox(#[from] SandboxError),
    /// The private base cache could not be created.
    #[error("cannot create the workspace base cache")]
    Cache(#[from] MaterializeError),
    /// The private scratch directory could not be created.
    #[error("cannot create a scratch directory")]
    Io(#[from] std::io::Error),
}

/// Evaluates submissions with the package's real evaluator, in the sandbox unless disabled.
///
/// Each evaluation materializes the starter workspace from a private base cache (kept for the
/// judge's lifetime, deleted on drop), applies the overlay or residual patch, and runs
/// `[evaluator].command` with [`run_evaluator`]. The `[environment]` host view is resolved once
/// per package. Safe to share between threads.
#[derive(Debug)]
pub struct SandboxJudge {
    config: SandboxConfig,
    cache: BaseCache,
    hosts: Mutex<HashMap<String, TaskViews>>,
    _cache_dir: tempfile::TempDir,
}

impl SandboxJudge {
    /// A judge running evaluators under bubblewrap (`sandbox = true`) or directly on the host
    /// (`false`, `--no-sandbox`: trusted code only).
    ///
    /// # Errors
    /// [`JudgeSetupError::Sandbox`] when the sandbox is enabled and `bwrap` is not installed;
    /// I/O errors creating the private cache.
    pub fn new(sandbox: bool) -> Result<SandboxJudge, JudgeSetupError> {
        let config = SandboxConfig { enabled: sandbox };
        config.check()?;
        let cache_dir = tempfile::Builder::new().prefix("specgap-check-").tempdir()?;
        let cache = BaseCache::new(cache_dir.path())?;
        Ok(SandboxJudge { config, cache, hosts: Mutex::new(HashMap::new()), _cache_dir: cache_dir })
    }

    /// The task's views (built into the environment cache first for an image environment:
    /// `$XDG_CACHE_HOME/specgap/env`, any engine on PATH).
    /// The views `submission` runs on: the task's, with a whole-machine residual state's layer
    /// over the image when the state has one.
    fn submission_views(&self, package: &TaskPackage, submission: Submission<'_>) -> Result<TaskViews, EvaluateError> {
        let views = self.views(package)?;
        let Submission::Residual(ResidualState { machine: Some(layer), .. }) = submission else { return Ok(views) };
        let cache = cache_for(package).map_err(|e| EvaluateError::Environment { source: Box::new(e) })?;
        views_with_layer(&views, package, &cache, layer).map_err(|e| EvaluateError::Environment { source: Box::new(e) })
    }

    fn views(&self, package: &TaskPackage) -> Result<TaskViews, EvaluateError> {
        let key = package.hash().to_owned();
        if let Some(view) = self.hosts.lock().ok().and_then(|hosts| hosts.get(&key).cloned()) {
            return Ok(view);
        }
        let view = views_on(package, None, EngineChoice::Auto).map_err(|e| EvaluateError::Environment { source: Box::new(e) })?;
        if let Ok(mut hosts) = self.hosts.lock() {
            hosts.insert(key, view.clone());
        }
        Ok(view)
    }

    /// Builds the submitted workspace in `dest`: the starter, plus an overlay or a residual
    /// patch. A directory submission is used as it is (the evaluator runner freezes a copy).
    fn prepare(&self, package: &TaskPackage, submission: Submission<'_>, dest: &Path) -> Result<(), EvaluateError> {
        let what = submission.label();
        let prepare_error = |source: MaterializeError| EvaluateError::Prepare { what: what.clone(), source: Box::new(source) };
        if let Submission::Directory(_) = submission {
            return Ok(());
        }
        let base = self.cache.base(package.hash(), &package.workspace_dir()).map_err(prepare_error)?;
        match submission {
            Submission::Directory(_) => Ok(()),
            Submission::Starter => materialize(&base, dest, None).map_err(prepare_error),
            Submission::Overlay(_, overlay) => {
                materialize(&base, dest, None).map_err(prepare_error)?;
                apply_overlay(dest, &overlay.dir).map_err(prepare_error)
            }
            Submission::Stage { stage, solved } => {
                materialize(&base, dest, None).map_err(prepare_error)?;
                for overlay in stage_overlays(package, stage, solved) {
                    apply_overlay(dest, &overlay.dir).map_err(prepare_error)?;
                }
                Ok(())
            }
            Submission::Residual(state) => match materialize(&base, dest, Some(&state.patch)) {
                Err(source @ MaterializeError::PatchFailed { .. }) => {
                    Err(EvaluateError::PatchDoesNotApply { state: state.id.clone(), source: Box::new(source) })
                }
                other => other.map_err(prepare_error),
            },
        }
    }
}

/// The overlays that make a staged task's state at `stage` from its starter, in order: each
/// stage's files, then (when `solved`) its own gold; without stage golds, `solutions/gold/`
/// last.
fn stage_overlays(package: &TaskPackage, stage: u32, solved: bool) -> Vec<&crate::package::Overlay> {
    let Some(stages) = package.stages() else { return Vec::new() };
    let mut overlays = Vec::new();
    for text in stages.stages.iter().take(stage as usize) {
        overlays.extend(text.files.as_ref());
        if solved {
            overlays.extend(text.gold.as_ref());
        }
    }
    if solved && !stages.has_stage_golds() {
        overlays.extend(package.solutions.gold.as_ref());
    }
    overlays
}

impl SandboxJudge {
    /// A fresh scratch directory for one submission or command.
    fn scratch(what: String) -> Result<tempfile::TempDir, EvaluateError> {
        tempfile::Builder::new()
            .prefix("specgap-submission-")
            .tempdir()
            .map_err(|source| EvaluateError::Prepare { what, source: Box::new(source) })
    }
}

impl Judge for SandboxJudge {
    fn run_on_starter(&self, package: &TaskPackage, command: &str, timeout: Duration) -> Result<Heard, EvaluateError> {
        let scratch = Self::scratch("starter".into())?;
        let workspace = scratch.path().join("workspace");
        self.prepare(package, Submission::Starter, &workspace)?;
        let host = self.views(package)?.commands;
        let mut spec = CommandSpec::shell(command, &workspace);
        spec.limits = Limits { timeout, output_bytes: HEARD_OUTPUT_BYTES, ..Limits::default() };
        let output =
            specgap_sandbox::run(&spec, &host, &self.config).map_err(|source| EvaluateError::Command { source: Box::new(source) })?;
        Ok(Heard { stdout: output.stdout.text(), stderr: output.stderr.text() })
    }

    fn evaluate(&self, package: &TaskPackage, submission: Submission<'_>) -> Result<Judged, EvaluateError> {
        let scratch = Self::scratch(submission.label())?;
        let workspace = match submission {
            Submission::Directory(dir) => dir.to_path_buf(),
            _ => scratch.path().join("workspace"),
        };
        self.prepare(package, submission, &workspace)?;
        let views = self.submission_views(package, submission)?;
        let manifest = package.manifest();
        let mut run = EvaluatorRun::new(
            package.name(),
            package.evaluator_dir(),
            manifest.evaluator.command.clone(),
            Duration::from_secs(manifest.evaluator.timeout_sec),
            workspace,
        );
        run.requirement_ids = package.requirement_ids().to_vec();
        run.delivery = package.scoring_context().delivery;
        run.stage = submission.stage();
        run.candidate_view = Some(views.candidates);
        match run_evaluator(&run, &views.evaluator, &self.config) {
            Ok(evaluation) => Ok(Judged { result: evaluation.result, stderr_tail: evaluation.stderr_tail }),
            Err(EvalError::InvalidResult { problem, stderr_tail }) => Err(EvaluateError::InvalidResult { problem, stderr_tail }),
            Err(source) => Err(EvaluateError::Evaluator { source: Box::new(source) }),
        }
    }
}
