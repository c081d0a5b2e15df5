//! The episode's calls into `specgap-sandbox`, with their errors mapped to
//! [`EpisodeError`]s: materialization and overlay failures and sandbox failures are
//! infrastructure errors; evaluator failures are evaluation errors.

use std::path::Path;
use std::time::Duration;

use specgap_env::EngineChoice;
use specgap_protocol::result::{EvalResult, Scored};
use specgap_sandbox::{
    Base, CommandOutput, CommandSpec, EvalError, EvaluatorRun, HostView, Limits, MaterializeError, SandboxConfig, SandboxError, Session,
    Shell, run_evaluator,
};
use specgap_task::{Overlay, TaskPackage, ViewError};

use crate::condition::Start;
use crate::episode::{EpisodeContext, EpisodeError};
use crate::lock;
use crate::tools::{OUTPUT_CAP, ToolOutput};

fn materialize_error(action: &str, error: MaterializeError) -> EpisodeError {
    let deterministic =
        matches!(error, MaterializeError::PatchFailed { .. } | MaterializeError::PathEscapes { .. } | MaterializeError::InvalidKey(_));
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
    views(ctx).map(|views| views.commands)
}

/// The views of the task, cached by package hash (the evaluator's under `<hash>/evaluator`, its
/// candidates' under `<hash>/candidates`).
/// An image environment (format 2) is built into the environment cache
/// (`$XDG_CACHE_HOME/specgap/env`, with podman or docker when one is needed) the first time,
/// under the lock, so workers starting on one package build it once.
fn views(ctx: &EpisodeContext<'_>) -> Result<specgap_task::TaskViews, EpisodeError> {
    let mut views = lock(ctx.host_views);
    let hash = ctx.package.hash();
    let evaluator_key = format!("{hash}/evaluator");
    let candidates_key = format!("{hash}/candidates");
    if let (Some(commands), Some(evaluator), Some(candidates)) = (views.get(hash), views.get(&evaluator_key), views.get(&candidates_key)) {
        return Ok(specgap_task::TaskViews { commands: commands.clone(), evaluator: evaluator.clone(), candidates: candidates.clone() });
    }
    let made = match specgap_task::views_on(ctx.package, None, EngineChoice::Auto) {
        Ok(made) => made,
        Err(ViewError::Sandbox(error)) => return Err(sandbox_error(error)),
        Err(error @ ViewError::Cache(_)) => return Err(EpisodeError::infrastructure("cannot place the environment cache", true, error)),
        Err(error) => return Err(EpisodeError::infrastructure("cannot build the task's image environment", true, error)),
    };
    views.insert(hash.to_string(), made.commands.clone());
    views.insert(evaluator_key, made.evaluator.clone());
    views.insert(candidates_key, made.candidates.clone());
    Ok(made)
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
        .base(package.workspace_hash(), &package.workspace_dir())
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
    specgap_sandbox::materialize(&base, dest, patch.as_deref()).map_err(|e| materialize_error("cannot materialize the workspace", e))?;
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
        .base(package.workspace_hash(), &package.workspace_dir())
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

/// The workspace's diff against the base: the exact bytes of the patch (file names and
/// contents need not be UTF-8).
///
/// # Errors
/// An infrastructure error.
pub(crate) fn diff(base: &Base, workspace: &Path) -> Result<Vec<u8>, EpisodeError> {
    specgap_sandbox::diff(base, workspace).map_err(|e| materialize_error("cannot diff the workspace", e))
}

/// [`diff`] holding at most `max_bytes` of the patch (`--max-diff-bytes`): a longer patch is
/// only counted.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn diff_within(base: &Base, workspace: &Path, max_bytes: u64) -> Result<specgap_sandbox::BoundedDiff, EpisodeError> {
    specgap_sandbox::diff_within(base, workspace, max_bytes).map_err(|e| materialize_error("cannot diff the workspace", e))
}

/// Applies a solution overlay to the workspace.
///
/// # Errors
/// An infrastructure error.
pub(crate) fn apply_overlay(workspace: &Path, overlay: &Overlay) -> Result<(), EpisodeError> {
    specgap_sandbox::apply_overlay(workspace, &overlay.dir).map_err(|e| materialize_error("cannot apply the overlay", e))
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
        self.output.success() && self.output.stdout.text().trim().is_empty() && self.output.stderr.text().trim().is_empty()
    }

    /// The tool result, at most [`OUTPUT_CAP`] bytes: the exit status (or why it was killed),
    /// then stdout and stderr each under its own heading (present whenever the stream said
    /// anything); a command that fails is still a normal result, not an error. This is the one
    /// place that cuts command output for the agent: the streams share what the cap leaves
    /// after the fixed lines (see [`stream_budgets`]) and each is cut once, with a marker
    /// stating exactly what it lost.
    pub(crate) fn to_output(&self) -> ToolOutput {
        ToolOutput::ok(self.compose(OUTPUT_CAP))
    }

    /// [`CommandResult::to_output`]'s text within `cap` bytes.
    fn compose(&self, cap: usize) -> String {
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
        let note = if self.sandbox_ended { SANDBOX_ENDED_NOTE } else { "" };
        if out.stdout.is_empty() && out.stderr.is_empty() {
            return format!("{status}\n(no output){note}");
        }
        let streams = [(STDOUT_HEADING, &out.stdout), (STDERR_HEADING, &out.stderr)];
        let shown: Vec<_> = streams.into_iter().filter(|(_, stream)| !stream.is_empty()).collect();
        let fixed = status.len() + note.len() + shown.iter().map(|(heading, _)| heading.len()).sum::<usize>();
        let wanted: Vec<usize> = shown.iter().map(|(_, stream)| stream.text().len()).collect();
        let budgets = stream_budgets(&wanted, cap.saturating_sub(fixed));
        let mut text = status;
        for ((heading, stream), budget) in shown.iter().zip(budgets) {
            text.push_str(heading);
            text.push_str(stream.render(budget).trim_end_matches('\n'));
        }
        text.push_str(note);
        text
    }
}

/// Heading of a command's standard output in its tool result.
const STDOUT_HEADING: &str = "\n--- stdout ---\n";
/// Heading of a command's standard error in its tool result.
const STDERR_HEADING: &str = "\n--- stderr ---\n";
/// Closing note of a command that took its sandbox down.
const SANDBOX_ENDED_NOTE: &str = "\n(the sandbox ended with this command; the next command starts in a fresh one, with an empty /tmp)";

/// Splits `room` bytes between streams that want `wanted` bytes each: all of them when they
/// fit, else an equal share each, with what a short stream leaves over going to the others
/// (max-min fair). Each budget is at most what its stream wants.
fn stream_budgets(wanted: &[usize], room: usize) -> Vec<usize> {
    let mut budgets = vec![0; wanted.len()];
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&i| wanted[i]);
    let mut left = room;
    for (done, &i) in order.iter().enumerate() {
        let share = left / (order.len() - done);
        budgets[i] = wanted[i].min(share);
        left -= budgets[i];
    }
    budgets
}

/// The episode's command session: one sandbox for all its commands, with the workspace as the
/// only writable directory and the working directory of every command. The sandbox itself is
/// built by the first command.
pub(crate) fn command_session(ctx: &EpisodeContext<'_>, host: &HostView, workspace: &Path) -> Session {
    Session::new(CommandSpec::shell("", workspace), host.clone(), ctx.sandbox.clone())
}

/// Plan mode's planning-phase session (seed 000 App. F.3: the phase is "a read-only
/// investigation"): the sandbox of [`command_session`] with the workspace mounted read-only, so
/// a command can read, replay and experiment but nothing it writes reaches the workspace (or
/// the delivery); writes fail as on any read-only file system. Its `/tmp` is its own and ends
/// with the phase. Without the sandbox (`--no-sandbox`) nothing is read-only.
pub(crate) fn planning_session(ctx: &EpisodeContext<'_>, host: &HostView, workspace: &Path) -> Session {
    if !ctx.sandbox.enabled {
        tracing::warn!("sandbox disabled (--no-sandbox): plan mode's planning phase is not read-only");
    }
    let mut template = CommandSpec::shell("", workspace);
    for mount in &mut template.mounts {
        mount.writable = false;
    }
    Session::new(template, host.clone(), ctx.sandbox.clone())
}

/// Runs a shell command in the episode's session, by `shell` (the `bash` tool's commands by
/// bash, `run_experiment`'s and replays by `/bin/sh`; docs/decisions.md "The bash tool is bash").
///
/// # Errors
/// An infrastructure error when the sandbox cannot run it.
pub(crate) fn run_command(session: &mut Session, shell: Shell, command: &str, timeout_sec: u64) -> Result<CommandResult, EpisodeError> {
    let output = session.run_in(shell, command, Duration::from_secs(timeout_sec), OUTPUT_CAP).map_err(sandbox_error)?;
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
    stage: Option<u32>,
) -> Result<(EvalResult, Scored), EpisodeError> {
    // An image environment may name its own evaluator image, or run its evaluator on the host's
    // programs with its candidates on the image; the commands' view is `host`.
    let Some(image) = ctx.package.image_environment() else {
        return evaluate_stage(ctx.package, ctx.sandbox, Views { evaluator: host, candidates: None }, workspace, ctx.workdir, stage);
    };
    if !image.evaluator_on_host() && image.evaluator_source.is_none() {
        return evaluate_stage(ctx.package, ctx.sandbox, Views { evaluator: host, candidates: None }, workspace, ctx.workdir, stage);
    }
    let views = views(ctx)?;
    let candidates = if image.evaluator_source.is_some() { views.candidates.clone() } else { host.clone() };
    let on = Views { evaluator: &views.evaluator, candidates: Some(candidates) };
    evaluate_stage(ctx.package, ctx.sandbox, on, workspace, ctx.workdir, stage)
}

/// The views one evaluation runs on: the evaluator's, and its candidate calls' when they differ.
struct Views<'a> {
    evaluator: &'a HostView,
    candidates: Option<HostView>,
}

/// [`evaluate`] without an episode: `package`'s evaluator on `workspace`, its scratch copies
/// under `scratch`.
///
/// # Errors
/// As [`evaluate`].
pub(crate) fn evaluate_package(
    package: &TaskPackage,
    sandbox: &SandboxConfig,
    host: &HostView,
    workspace: &Path,
    scratch: &Path,
) -> Result<(EvalResult, Scored), EpisodeError> {
    evaluate_stage(package, sandbox, Views { evaluator: host, candidates: None }, workspace, scratch, None)
}

/// [`evaluate_package`] for the submission of `stage` (1-based, `SPECGAP_STAGE`) of a staged
/// task; `None` scores the task as a whole.
fn evaluate_stage(
    package: &TaskPackage,
    sandbox: &SandboxConfig,
    views: Views<'_>,
    workspace: &Path,
    scratch: &Path,
    stage: Option<u32>,
) -> Result<(EvalResult, Scored), EpisodeError> {
    let spec = &package.manifest().evaluator;
    let mut run =
        EvaluatorRun::new(package.name(), package.evaluator_dir(), spec.command.clone(), Duration::from_secs(spec.timeout_sec), workspace);
    run.requirement_ids = package.requirement_ids().to_vec();
    run.delivery = package.scoring_context().delivery;
    run.limits = Limits { timeout: run.timeout, ..Limits::default() };
    run.scratch_dir = Some(scratch.to_path_buf());
    run.stage = stage;
    run.candidate_view = views.candidates;
    let evaluation = run_evaluator(&run, views.evaluator, sandbox).map_err(evaluation_error)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_sandbox::Captured;

    fn result(stdout: Captured, stderr: Captured) -> CommandResult {
        let output = CommandOutput {
            exit_code: Some(0),
            timed_out: false,
            memory_exceeded: false,
            stdout,
            stderr,
            duration: Duration::ZERO,
            sandboxed: true,
        };
        CommandResult { output, timeout_sec: 120, sandbox_ended: false }
    }

    /// `seq 1 n` as a stream.
    fn seq(n: u32) -> String {
        (1..=n).map(|i| format!("{i}\n")).collect()
    }

    #[test]
    fn budgets_are_max_min_fair() {
        assert_eq!(stream_budgets(&[10, 20], 100), [10, 20]);
        assert_eq!(stream_budgets(&[10, 200], 100), [10, 90]);
        assert_eq!(stream_budgets(&[200, 300], 100), [50, 50]);
        assert_eq!(stream_budgets(&[301], 100), [100]);
    }

    #[test]
    fn output_cut_marker_counts_the_true_bytes_removed() {
        // 65,536 bytes of stdout captured at the engine's cap: the capture keeps 8 KiB + 8 KiB;
        // the tool result (16 KiB with its headings) cuts once more, and the one marker
        // counts every byte and line break of the stream that is not shown.
        let stream = "x".repeat(63) + "\n";
        let stream = stream.repeat(1024);
        let r = result(Captured::of(stream.as_bytes(), OUTPUT_CAP), Captured::default());
        let text = r.to_output().output;
        let head = &stream[..64 * 127];
        let tail = &stream[stream.len() - 64 * 127..];
        assert_eq!(text, format!("exit status 0\n--- stdout ---\n{head}[... 49280 bytes (770 lines) cut ...]\n{}", tail.trim_end()));
        assert_eq!(65536 - 2 * 64 * 127, 49280);
        assert!(text.len() <= OUTPUT_CAP, "{}", text.len());
    }

    #[test]
    fn both_stream_headers_survive_large_outputs() {
        let (out, err) = (seq(20000), seq(30000));
        let r = result(Captured::of(out.as_bytes(), OUTPUT_CAP), Captured::of(err.as_bytes(), OUTPUT_CAP));
        let text = r.to_output().output;
        assert!(text.len() <= OUTPUT_CAP, "{}", text.len());
        let (stdout, stderr) = text.split_once("\n--- stderr ---\n").expect("a stderr heading");
        let stdout = stdout.strip_prefix("exit status 0\n--- stdout ---\n").expect("a stdout heading");
        // Each stream shows whole lines from its start and its end around one exact marker.
        for (shown, full, lines) in [(stdout, &out, 20000), (stderr, &err, 30000)] {
            let (head, rest) = shown.split_once("[... ").unwrap();
            let (marker, tail) = rest.split_once(" cut ...]\n").unwrap();
            assert!(full.starts_with(head) && head.ends_with('\n'), "{head}");
            assert!(full.ends_with(&format!("{tail}\n")), "{tail}");
            let removed = full.len() - head.len() - tail.len() - 1;
            let removed_lines = lines - head.matches('\n').count() - tail.matches('\n').count() - 1;
            assert_eq!(marker, format!("{removed} bytes ({removed_lines} lines)"));
        }
        assert_eq!(&stdout[..16], "1\n2\n3\n4\n5\n6\n7\n8\n");
        assert!(stderr.ends_with("\n29999\n30000"), "{}", &stderr[stderr.len() - 20..]);
    }

    #[test]
    fn small_outputs_are_shown_whole_under_their_headings() {
        let r = result(Captured::whole(b"out\n"), Captured::whole(b"err\n"));
        assert_eq!(r.to_output().output, "exit status 0\n--- stdout ---\nout\n--- stderr ---\nerr");
        let r = result(Captured::default(), Captured::whole(b"only err"));
        assert_eq!(r.to_output().output, "exit status 0\n--- stderr ---\nonly err");
        let r = result(Captured::default(), Captured::default());
        assert_eq!(r.to_output().output, "exit status 0\n(no output)");
    }

    #[test]
    fn a_short_stream_leaves_its_share_to_the_long_one() {
        let long = seq(20000);
        let r = result(Captured::of(long.as_bytes(), OUTPUT_CAP), Captured::whole(b"warning: slow\n"));
        let text = r.compose(1000);
        assert!(text.ends_with("\n--- stderr ---\nwarning: slow"), "{text}");
        assert!(text.len() <= 1000 && text.len() > 900, "{}", text.len());
    }
}
