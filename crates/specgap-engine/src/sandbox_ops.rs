//! The episode's calls into `specgap-sandbox`, with their errors mapped to
//! [`EpisodeError`]s: materialization and overlay failures and sandbox failures are
//! infrastructure errors; evaluator failures are evaluation errors.

use std::path::Path;
use std::time::Duration;

use specgap_protocol::result::{EvalResult, Scored};
use specgap_sandbox::{
    Base, CommandOutput, CommandSpec, EvalError, EvaluatorRun, HostView, Limits, MaterializeError, SandboxError, Session,
    run_evaluator,
};
use specgap_task::Overlay;

use crate::condition::Start;
use crate::lock;
use crate::episode::{EpisodeContext, EpisodeError};
use crate::tools::{OUTPUT_CAP, ToolOutput};

fn materialize_error(action: &str, error: MaterializeError) -> EpisodeError {
    let deterministic = matches!(
        error,
        MaterializeError::PatchFailed { .. } | MaterializeError::PathEscapes { .. } | MaterializeError::InvalidKey(_)
    );
    EpisodeError::infrastructure(action, deterministic, error)
}

fn sandbox_error(error: SandboxError) -> EpisodeError {
    let deterministic = matches!(
        error,
        SandboxError::BwrapMissing
            | SandboxError::CommandNotFound(_)
            | SandboxError::ShimUnresolved { .. }
            | SandboxError::BadBind { .. }
            | SandboxError::InvalidSpec(_)
    );
    EpisodeError::infrastructure("the sandbox failed", deterministic, error)
}

/// The task's resolved `[environment]`, from the run's cache or resolved now (and cached).
/// Resolving holds the cache's lock, so workers starting on the same package at once resolve
/// it once; it takes milliseconds, once per package.
///
/// # Errors
/// An infrastructure error (deterministic for a missing command or a bad bind); failures are
/// not cached.
pub(crate) fn host_view(ctx: &EpisodeContext<'_>) -> Result<HostView, EpisodeError> {
    let mut views = lock(ctx.host_views);
    if let Some(view) = views.get(ctx.package.hash()) {
        return Ok(view.clone());
    }
    let view = HostView::resolve(&ctx.package.manifest().environment).map_err(sandbox_error)?;
    views.insert(ctx.package.hash().to_string(), view.clone());
    Ok(view)
}


/// Materializes the episode's workspace at `dest` from the harness's base (plus the residual
/// patch of a residual start) and returns that base.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn materialize(ctx: &EpisodeContext<'_>, dest: &Path) -> Result<Base, EpisodeError> {
    let package = ctx.package;
    let base = ctx
        .bases
        .base(package.hash(), &package.workspace_dir())
        .map_err(|e| materialize_error("cannot prepare the base workspace", e))?;
    let patch = match ctx.start {
        Start::Clean => None,
        Start::Residual(id) => Some(
            package
                .residual(id)
                .ok_or_else(|| EpisodeError::Infrastructure {
                    message: format!("task {} has no residual state `{id}`", package.name()),
                    deterministic: true,
                    source: None,
                })?
                .patch
                .clone(),
        ),
    };
    specgap_sandbox::materialize(&base, dest, patch.as_deref())
        .map_err(|e| materialize_error("cannot materialize the workspace", e))?;
    Ok(base)
}

/// Materializes the task's clean workspace at `dest` (whatever the episode's start), replacing
/// anything there: the starting point of the gold check.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn materialize_clean(ctx: &EpisodeContext<'_>, dest: &Path) -> Result<(), EpisodeError> {
    let package = ctx.package;
    remove_scratch(dest);
    let base = ctx
        .bases
        .base(package.hash(), &package.workspace_dir())
        .map_err(|e| materialize_error("cannot prepare the base workspace", e))?;
    specgap_sandbox::materialize(&base, dest, None).map_err(|e| materialize_error("cannot materialize the workspace", e))
}

/// Copies the workspace to `dest` without its `.git`: the frozen state of one submission,
/// kept until it is evaluated.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn freeze(workspace: &Path, dest: &Path) -> Result<(), EpisodeError> {
    remove_scratch(dest);
    specgap_sandbox::freeze(workspace, dest).map_err(|e| materialize_error("cannot freeze the submission", e))
}

/// Removes a scratch directory of the attempt, if it exists; a failure only costs disk space
/// until the runner removes the attempt's directory.
pub(crate) fn remove_scratch(dir: &Path) {
    if dir.exists()
        && let Err(e) = fs_err::remove_dir_all(dir)
    {
        tracing::warn!("cannot remove {}: {e}", dir.display());
    }
}

/// The workspace's diff against the base.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn diff(base: &Base, workspace: &Path) -> Result<String, EpisodeError> {
    specgap_sandbox::diff(base, workspace).map_err(|e| materialize_error("cannot diff the workspace", e))
}

/// Applies a solution overlay to the workspace.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn apply_overlay(workspace: &Path, overlay: &Overlay) -> Result<(), EpisodeError> {
    specgap_sandbox::apply_overlay(workspace, &overlay.dir)
        .map_err(|e| materialize_error("cannot apply the overlay", e))
}

/// What a command tool did.
#[derive(Debug, Clone)]
pub(crate) struct CommandResult {
    output: CommandOutput,
    timeout_sec: u64,
    /// The command took its sandbox down with it (the next one starts in a fresh sandbox).
    sandbox_ended: bool,
}

impl CommandResult {
    /// Exit status 0 and nothing but whitespace on stdout and stderr (the blank-output loop
    /// rule of DESIGN §3.5).
    pub(crate) fn blank_success(&self) -> bool {
        self.output.success() && self.output.stdout.trim().is_empty() && self.output.stderr.trim().is_empty()
    }

    /// The tool result: the exit status (or why it was killed), then stdout and stderr under
    /// their own headings; a command that fails is still a normal result, not an error.
    pub(crate) fn to_output(&self) -> ToolOutput {
        let out = &self.output;
        let status = if out.timed_out {
            format!("killed: timed out after {} s", self.timeout_sec)
        } else if out.memory_exceeded {
            "killed: memory limit exceeded".to_string()
        } else {
            match out.exit_code {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".to_string(),
            }
        };
        let mut text = status;
        if !out.stdout.is_empty() {
            text.push_str("\n--- stdout ---\n");
            text.push_str(out.stdout.trim_end_matches('\n'));
        }
        if !out.stderr.is_empty() {
            text.push_str("\n--- stderr ---\n");
            text.push_str(out.stderr.trim_end_matches('\n'));
        }
        if out.stdout.is_empty() && out.stderr.is_empty() {
            text.push_str("\n(no output)");
        }
        if self.sandbox_ended {
            text.push_str("\n(the sandbox ended with this command; the next command starts in a fresh one, with an empty /tmp)");
        }
        ToolOutput::ok(text)
    }
}

/// The episode's command session: one sandbox for all its commands, with the workspace as the
/// only writable directory and the working directory of every command. The sandbox itself is
/// built by the first command.
pub(crate) fn command_session(ctx: &EpisodeContext<'_>, host: &HostView, workspace: &Path) -> Session {
    Session::new(CommandSpec::shell("", workspace), host.clone(), ctx.sandbox.clone())
}

/// Runs a shell command in the episode's session.
///
/// # Errors
/// An infrastructure error when the sandbox cannot run it.
pub(crate) fn run_command(session: &mut Session, command: &str, timeout_sec: u64) -> Result<CommandResult, EpisodeError> {
    let output = session.run_shell(command, Duration::from_secs(timeout_sec), OUTPUT_CAP).map_err(sandbox_error)?;
    Ok(CommandResult { output, timeout_sec, sandbox_ended: session.sandbox_ended_by_last_command() })
}

/// Runs the package's evaluator on a workspace (frozen again by the sandbox), then scores
/// the validated result by the task's scoring kind.
///
/// # Errors
/// [`EpisodeError::Evaluation`] for every evaluator failure and for a result the scoring
/// kind cannot score.
pub(crate) fn evaluate(
    ctx: &EpisodeContext<'_>,
    host: &HostView,
    workspace: &Path,
) -> Result<(EvalResult, Scored), EpisodeError> {
    let package = ctx.package;
    let spec = &package.manifest().evaluator;
    let mut run = EvaluatorRun::new(
        package.name(),
        package.evaluator_dir(),
        spec.command.clone(),
        Duration::from_secs(spec.timeout_sec),
        workspace,
    );
    run.requirement_ids = package.requirement_ids().to_vec();
    run.delivery = package.scoring_context().delivery;
    run.limits = Limits { timeout: run.timeout, ..Limits::default() };
    run.scratch_dir = Some(ctx.workdir.to_path_buf());
    let evaluation = run_evaluator(&run, host, ctx.sandbox).map_err(evaluation_error)?;
    let scored = evaluation.result.score(&package.scoring_context()).map_err(|problem| EpisodeError::Evaluation {
        message: format!("cannot score result.json: {problem}"),
        stderr_tail: evaluation.stderr_tail.clone(),
        deterministic: false,
    })?;
    Ok((evaluation.result, scored))
}

fn evaluation_error(error: EvalError) -> EpisodeError {
    let stderr_tail = error.stderr_tail().to_string();
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    // An evaluator that cannot even start in the sandbox is an infrastructure failure.
    if let EvalError::Sandbox { source, .. } = &error
        && matches!(source, SandboxError::BwrapMissing | SandboxError::CommandNotFound(_))
    {
        return EpisodeError::Infrastructure { message, deterministic: true, source: Some(Box::new(error)) };
    }
    EpisodeError::Evaluation { message, stderr_tail, deterministic: false }
}
