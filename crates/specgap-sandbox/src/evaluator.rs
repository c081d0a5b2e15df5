//! The evaluator runner (DESIGN §2 "Evaluator protocol"): [`run_evaluator`] runs a package's
//! `[evaluator].command` on a submission and returns its validated `result.json`.
//!
//! # What the evaluator sees
//! | path (sandboxed) | what | access |
//! | --- | --- | --- |
//! | `/evaluator` (cwd) | a private copy of the package's `evaluator/` | read-write |
//! | `/workspace` = `$SPECGAP_WORKSPACE` | a frozen copy of the submission (no `.git`) | read-only |
//! | `/out` = `$SPECGAP_OUT` | an empty directory for `result.json` | read-write |
//! | `$SPECGAP_CANDIDATE` | the candidate launcher (below) | execute |
//!
//! plus `SPECGAP_TASK` (the task name), `SPECGAP_STAGE` (the 1-based stage a submission of a
//! staged task answers; unset otherwise) and the task's `[environment]`. The submission is never
//! mounted writable, and nothing else of the package is visible.
//!
//! # The candidate launcher
//! `$SPECGAP_CANDIDATE cmd args...` runs `cmd args...` in a *fresh* sandbox whose only
//! non-system content is a new copy of the submission, mounted writable at `/workspace` as the
//! working directory; none of the evaluator's files, its `SPECGAP_OUT` or its environment are
//! there. The launcher relays the command's stdout, stderr and exit status (124 on timeout, 125
//! when the command could not be started). It is a POSIX `sh` script talking to a service
//! thread of the harness through a private call directory: the script writes the arguments
//! (NUL-separated) and its whole standard input into a new call directory and marks it ready;
//! the service copies the submission, runs the command with [`crate::run`], writes back
//! stdout, stderr and status, and marks the call done. The script needs only `/bin/sh` and
//! coreutils, so it works under any binary linking this crate (the CLI, tests of other
//! crates) and needs no nested sandbox. Standard input is read to its end before the command
//! starts: interactive back-and-forth with a candidate is not supported. Each call's time limit
//! is what is left of the evaluator's.
//!
//! # Candidate layouts
//! An evaluator that runs a verifier written for another harness (an imported Harbor task's
//! `tests/test.sh`, which expects the submission at its work directory, its own files at
//! `/tests` and a writable `/logs/verifier`) sets `SPECGAP_CANDIDATE_LAYOUT` to a file of
//! lines, one directive each ([`CandidateLayout`]):
//!
//! | line | effect in the candidate's sandbox |
//! | --- | --- |
//! | `workdir /app` | the submission's copy is mounted at `/app` (the working directory) instead of `/workspace` |
//! | `ro tests /tests` | a copy of the evaluator's `tests` directory (relative to its working directory, no links) appears read-only at `/tests` |
//! | `out /logs/verifier` | an empty writable directory appears at `/logs/verifier`; once every process of the call has ended, its top-level regular files are copied into `$SPECGAP_CANDIDATE_OUT` |
//! | `timeout 600` | the call may run 600 s (whole seconds, at least 1) instead of the run's candidate limit, never past the evaluator's own deadline |
//!
//! Nothing a candidate writes reaches the evaluator except through those copies, made after
//! the candidate's sandbox is gone, so no process of the candidate outlives the copy.
//!
//! # Candidates on another view
//! The candidate calls run on the evaluator's view unless [`EvaluatorRun::candidate_view`]
//! names another: an evaluator on the host's programs (`[evaluator.environment].commands`)
//! whose candidates run on the task's image, where the submitted code belongs.

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use fs_err as fs;
use specgap_protocol::package::Direction;
use specgap_protocol::result::{EvalResult, ResultProblem, ScoringContext, parse_result};

use crate::error::{MaterializeError, SandboxError};
use crate::fsutil::{self, GitEntries};
use crate::host::HostView;
use crate::materialize::freeze;
use crate::runner::{CommandSpec, Limits, Mount, Program, SandboxConfig, WORKSPACE_MOUNT, run as run_sandboxed};

/// Bytes of the evaluator's stderr kept with every evaluation and error.
pub const STDERR_TAIL_BYTES: usize = 2048;
/// Largest `result.json` read.
pub const RESULT_MAX_BYTES: u64 = 64 << 20;
/// Exit status the launcher reports when the candidate timed out (as `timeout(1)`).
pub const CANDIDATE_TIMEOUT_STATUS: i32 = 124;
/// Exit status the launcher reports when the candidate could not be started.
pub const CANDIDATE_START_FAILED_STATUS: i32 = 125;

use crate::rootfs::{EVALUATOR_MOUNT, OUT_MOUNT, RUN_MOUNT};
const CALLS_DIR: &str = "calls";
const BIN_DIR: &str = "bin";
const LAUNCHER_NAME: &str = "specgap-candidate";
/// Largest file copied back from a candidate's `out` directory, and how many are.
const CANDIDATE_OUT_FILE_MAX_BYTES: u64 = 8 << 20;
const CANDIDATE_OUT_FILES_MAX: usize = 64;
/// Sandbox paths a layout may not place anything at or under, besides the runner's own.
const LAYOUT_RESERVED: &[&str] = &["/tmp", "/run", "/sys", "/proc", "/dev"];
/// Candidate calls served at once (the machines have two cores).
const CANDIDATE_WORKERS: usize = 2;

/// One evaluation to perform.
#[derive(Debug, Clone)]
pub struct EvaluatorRun {
    /// `[task].name`, given as `SPECGAP_TASK`.
    pub task_name: String,
    /// The package's `evaluator/` directory (copied; never modified).
    pub evaluator_dir: PathBuf,
    /// `[evaluator].command`, run as `/bin/sh -c` with cwd = the copy of `evaluator/`.
    pub command: String,
    /// `[evaluator].timeout_sec`: wall-clock limit of the evaluator, candidate calls included.
    pub timeout: Duration,
    /// The submitted workspace; it is frozen again here (no `.git`), so a live workspace is fine.
    pub workspace: PathBuf,
    /// The task's requirement ids (empty unless requirement-scored), for validation.
    pub requirement_ids: Vec<String>,
    /// `[delivery]` reference and direction of a delivery case, for validation.
    pub delivery: Option<(f64, Direction)>,
    /// Process, memory and output limits of the evaluator (its timeout is `timeout`).
    pub limits: Limits,
    /// Limits of each candidate call (the timeout is capped by the evaluator's remaining time).
    pub candidate_limits: Limits,
    /// Where the scratch directory goes (default: the system temporary directory).
    pub scratch_dir: Option<PathBuf>,
    /// The 1-based stage of a staged task (`[stages]`) the submission answers, given as
    /// `SPECGAP_STAGE`; `None` (the variable unset) for a task of one stage and for checks
    /// that score the whole task.
    pub stage: Option<u32>,
    /// The view candidate calls run on, when it is not the evaluator's own (an evaluator on
    /// the host's programs whose candidates run on the task's image); `None`: the evaluator's.
    pub candidate_view: Option<HostView>,
}

impl EvaluatorRun {
    /// An evaluation with default limits (candidate output up to 16 MiB per stream).
    pub fn new(
        task_name: impl Into<String>,
        evaluator_dir: impl Into<PathBuf>,
        command: impl Into<String>,
        timeout: Duration,
        workspace: impl Into<PathBuf>,
    ) -> Self {
        EvaluatorRun {
            task_name: task_name.into(),
            evaluator_dir: evaluator_dir.into(),
            command: command.into(),
            timeout,
            workspace: workspace.into(),
            requirement_ids: Vec::new(),
            delivery: None,
            limits: Limits::default(),
            candidate_limits: Limits { output_bytes: 16 << 20, ..Limits::default() },
            scratch_dir: None,
            stage: None,
            candidate_view: None,
        }
    }

    /// The scoring context to validate against.
    pub fn scoring_context(&self) -> ScoringContext<'_> {
        ScoringContext { requirement_ids: &self.requirement_ids, delivery: self.delivery }
    }
}

/// A successful evaluation: a `result.json` that parsed and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The validated result.
    pub result: EvalResult,
    /// The last [`STDERR_TAIL_BYTES`] of the evaluator's stderr.
    pub stderr_tail: String,
    /// The evaluator's wall-clock time.
    pub duration: Duration,
    /// How many candidate calls the evaluator made.
    pub candidate_calls: u32,
}

/// An evaluation error (DESIGN §2): recorded with its reason and the evaluator's stderr tail,
/// retried per the run's policy, and never a score.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The evaluator exited with a non-zero status (`code` is `None` when killed by a signal).
    #[error("evaluator exited with status {}", code.map_or_else(|| "killed".to_string(), |c| c.to_string()))]
    NonZeroExit {
        /// Exit code.
        code: Option<i32>,
        /// Last bytes of the evaluator's stderr.
        stderr_tail: String,
    },
    /// The evaluator ran past `[evaluator].timeout_sec` and was killed.
    #[error("evaluator timed out after {} s", after.as_secs_f64())]
    Timeout {
        /// The limit that was exceeded.
        after: Duration,
        /// Last bytes of the evaluator's stderr.
        stderr_tail: String,
    },
    /// The evaluator exited 0 without writing `$SPECGAP_OUT/result.json`.
    #[error("evaluator wrote no result.json{}", hint.as_deref().map(|h| format!("; {h}")).unwrap_or_default())]
    MissingResult {
        /// Last bytes of the evaluator's stderr.
        stderr_tail: String,
        /// What to do instead, when the evaluator wrote something else specgap recognises
        /// (Harbor's `reward.txt` / `reward.json`).
        hint: Option<String>,
    },
    /// `result.json` is not the expected JSON.
    #[error("malformed result.json: {message}")]
    MalformedResult {
        /// What is wrong ([`specgap_protocol::result::ResultParseError`]'s message, naming the
        /// JSON path of the value), or why the file could not be read.
        message: String,
        /// Last bytes of the evaluator's stderr.
        stderr_tail: String,
    },
    /// `result.json` parsed but fails validation against the task.
    #[error("invalid result.json: {problem}")]
    InvalidResult {
        /// What is wrong.
        problem: ResultProblem,
        /// Last bytes of the evaluator's stderr.
        stderr_tail: String,
    },
    /// The sandbox failed, for the evaluator or one of its candidate calls.
    #[error("sandbox failure during evaluation")]
    Sandbox {
        /// The cause.
        #[source]
        source: SandboxError,
        /// Last bytes of the evaluator's stderr (empty when it never ran).
        stderr_tail: String,
    },
    /// The evaluation directory could not be prepared (copying the evaluator or submission).
    #[error("cannot prepare the evaluation")]
    Prepare(#[source] MaterializeError),
}

impl EvalError {
    /// The evaluator's stderr tail ("" for [`EvalError::Prepare`]).
    pub fn stderr_tail(&self) -> &str {
        match self {
            EvalError::NonZeroExit { stderr_tail, .. }
            | EvalError::Timeout { stderr_tail, .. }
            | EvalError::MissingResult { stderr_tail, .. }
            | EvalError::MalformedResult { stderr_tail, .. }
            | EvalError::InvalidResult { stderr_tail, .. }
            | EvalError::Sandbox { stderr_tail, .. } => stderr_tail,
            EvalError::Prepare(_) => "",
        }
    }

    /// A short stable reason code for the store: `non-zero-exit`, `timeout`, `missing-result`,
    /// `malformed-result`, `invalid-result`, `sandbox`, `prepare`.
    pub fn reason(&self) -> &'static str {
        match self {
            EvalError::NonZeroExit { .. } => "non-zero-exit",
            EvalError::Timeout { .. } => "timeout",
            EvalError::MissingResult { .. } => "missing-result",
            EvalError::MalformedResult { .. } => "malformed-result",
            EvalError::InvalidResult { .. } => "invalid-result",
            EvalError::Sandbox { .. } => "sandbox",
            EvalError::Prepare(_) => "prepare",
        }
    }
}

impl From<io::Error> for EvalError {
    fn from(e: io::Error) -> Self {
        EvalError::Prepare(MaterializeError::Io(e))
    }
}

/// Host-side layout of one evaluation's scratch directory.
struct Scratch {
    _dir: tempfile::TempDir,
    evaluator: PathBuf,
    submission: PathBuf,
    out: PathBuf,
    /// Mounted at `/run/specgap`: `calls/` and `bin/` (one mount for both; bubblewrap rereads
    /// the mount table after every bind).
    run: PathBuf,
    calls: PathBuf,
    bin: PathBuf,
    candidates: PathBuf,
}

impl Scratch {
    fn new(run: &EvaluatorRun) -> Result<Scratch, EvalError> {
        let builder =
            tempfile::Builder::new().prefix("specgap-eval-").tempdir_in(run.scratch_dir.clone().unwrap_or_else(std::env::temp_dir));
        let dir = builder?;
        let root = dir.path().to_path_buf();
        let scratch = Scratch {
            evaluator: root.join("evaluator"),
            submission: root.join("submission"),
            out: root.join("out"),
            run: root.join("run"),
            calls: root.join("run").join(CALLS_DIR),
            bin: root.join("run").join(BIN_DIR),
            candidates: root.join("candidates"),
            _dir: dir,
        };
        fsutil::copy_tree(&run.evaluator_dir, &scratch.evaluator, GitEntries::Keep).map_err(|e| EvalError::Prepare(e.into()))?;
        freeze(&run.workspace, &scratch.submission).map_err(EvalError::Prepare)?;
        for dir in [&scratch.out, &scratch.run, &scratch.calls, &scratch.bin, &scratch.candidates] {
            fs::create_dir(dir)?;
        }
        Ok(scratch)
    }

    fn mounts(&self) -> Vec<Mount> {
        let mount =
            |host: &Path, sandbox: &str, writable: bool| Mount { host: host.to_path_buf(), sandbox: PathBuf::from(sandbox), writable };
        vec![
            mount(&self.evaluator, EVALUATOR_MOUNT, true),
            mount(&self.submission, WORKSPACE_MOUNT, false),
            mount(&self.out, OUT_MOUNT, true),
            mount(&self.run, RUN_MOUNT, true),
        ]
    }
}

/// Runs the evaluator on `run.workspace` and returns its validated result.
///
/// # Errors
/// Every [`EvalError`] variant; each carries the evaluator's stderr tail.
pub fn run_evaluator(run: &EvaluatorRun, host: &HostView, config: &SandboxConfig) -> Result<Evaluation, EvalError> {
    let scratch = Scratch::new(run)?;
    let mounts = scratch.mounts();
    let visible = |i: usize| config.visible_path(&mounts[i]).to_path_buf();
    let (evaluator_path, workspace_path, out_path, run_path) = (visible(0), visible(1), visible(2), visible(3));
    let (calls_path, bin_path) = (run_path.join(CALLS_DIR), run_path.join(BIN_DIR));
    let launcher = bin_path.join(LAUNCHER_NAME);
    write_launcher(&scratch.bin.join(LAUNCHER_NAME), &calls_path)?;

    let mut spec = CommandSpec {
        program: Program::Shell(run.command.clone()),
        mounts,
        cwd: evaluator_path,
        env: Default::default(),
        stdin: Vec::new(),
        limits: Limits { timeout: run.timeout, ..run.limits },
    };
    spec.env.insert("SPECGAP_WORKSPACE".into(), workspace_path.display().to_string());
    spec.env.insert("SPECGAP_OUT".into(), out_path.display().to_string());
    spec.env.insert("SPECGAP_TASK".into(), run.task_name.clone());
    spec.env.insert("SPECGAP_CANDIDATE".into(), launcher.display().to_string());
    if let Some(stage) = run.stage {
        spec.env.insert("SPECGAP_STAGE".into(), stage.to_string());
    }

    let deadline = Instant::now() + run.timeout;
    let candidates = run.candidate_view.clone().unwrap_or_else(|| host.clone());
    let service = CandidateService::start(&scratch, run.candidate_limits, deadline, candidates, config.clone());
    let outcome = run_sandboxed(&spec, host, config);
    let served = service.stop();

    let output = match outcome {
        Ok(output) => output,
        Err(source) => return Err(EvalError::Sandbox { source, stderr_tail: String::new() }),
    };
    let stderr_tail = specgap_protocol::text::tail(&output.stderr.text(), STDERR_TAIL_BYTES).to_string();
    if let Some(source) = served.failure {
        return Err(EvalError::Sandbox { source, stderr_tail });
    }
    if output.timed_out {
        return Err(EvalError::Timeout { after: run.timeout, stderr_tail });
    }
    if output.exit_code != Some(0) {
        return Err(EvalError::NonZeroExit { code: output.exit_code, stderr_tail });
    }
    let result = read_result(&scratch.out, &stderr_tail)?;
    if let Err(problem) = result.validate(&run.scoring_context()) {
        return Err(EvalError::InvalidResult { problem, stderr_tail });
    }
    Ok(Evaluation { result, stderr_tail, duration: output.duration, candidate_calls: served.calls })
}

fn read_result(out: &Path, stderr_tail: &str) -> Result<EvalResult, EvalError> {
    let path = out.join("result.json");
    let malformed = |message: String| EvalError::MalformedResult { message, stderr_tail: stderr_tail.to_string() };
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(EvalError::MissingResult { stderr_tail: stderr_tail.to_string(), hint: harbor_hint(out) });
        }
        Err(e) => return Err(malformed(format!("cannot inspect result.json: {e}"))),
    };
    if !meta.is_file() {
        return Err(malformed("result.json is not a regular file".into()));
    }
    if meta.len() > RESULT_MAX_BYTES {
        return Err(malformed(format!("result.json has {} bytes, more than the {RESULT_MAX_BYTES} allowed", meta.len())));
    }
    let bytes = fs::read(&path).map_err(|e| malformed(e.to_string()))?;
    parse_result(&bytes).map_err(|e| malformed(e.to_string()))
}

/// How to convert when the evaluator wrote Harbor's `reward.txt` (one number) or
/// `reward.json` instead of `result.json`; `None` when it wrote neither.
fn harbor_hint(out: &Path) -> Option<String> {
    const HOW: &str = "specgap reads $SPECGAP_OUT/result.json (DESIGN §2), so write";
    let text = out.join("reward.txt");
    if std::fs::symlink_metadata(&text).is_ok_and(|m| m.is_file()) {
        // Quote the value only when it is a plain number, so the hint never echoes junk.
        let value =
            std::fs::read_to_string(&text).ok().and_then(|t| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v.to_string()));
        let value = value.as_deref().unwrap_or("<value>");
        return Some(format!("it wrote reward.txt (Harbor's format); {HOW} {{\"version\": 1, \"reward\": {value}}} there instead"));
    }
    if std::fs::symlink_metadata(out.join("reward.json")).is_ok_and(|m| m.is_file()) {
        return Some(format!(
            "it wrote reward.json (Harbor's format); {HOW} {{\"version\": 1, \"reward\": <value>}} there instead, with the reward as a number from 0 to 1"
        ));
    }
    None
}

/// Writes the launcher script, with the call directory (as the evaluator sees it) built in.
fn write_launcher(path: &Path, calls: &Path) -> Result<(), EvalError> {
    let calls = calls.display().to_string().replace('\'', "'\\''");
    let script = format!(
        r#"#!/bin/sh
# specgap candidate launcher: runs "$@" in a fresh sandbox that holds only a copy of the
# submitted workspace, and relays its stdout, stderr and exit status.
if [ "$#" -eq 0 ]; then
  echo 'specgap-candidate: usage: $SPECGAP_CANDIDATE command [argument...]' >&2
  exit 2
fi
call=$(mktemp -d '{calls}/call.XXXXXXXX') || exit {start_failed}
printf '%s\0' "$@" > "$call/argv"
if [ -n "${{SPECGAP_CANDIDATE_LAYOUT:-}}" ]; then
  cat "$SPECGAP_CANDIDATE_LAYOUT" > "$call/layout" || exit {start_failed}
fi
cat > "$call/stdin"
: > "$call/ready"
while [ ! -e "$call/done" ]; do sleep 0.005; done
cat "$call/stdout"
cat "$call/stderr" >&2
status=$(cat "$call/status")
if [ -n "${{SPECGAP_CANDIDATE_OUT:-}}" ]; then
  for f in "$call"/out.*; do
    [ -f "$f" ] && cp "$f" "$SPECGAP_CANDIDATE_OUT/${{f##*/out.}}"
  done
fi
rm -rf "$call"
exit "$status"
"#,
        start_failed = CANDIDATE_START_FAILED_STATUS
    );
    fs::write(path, script)?;
    fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// What the candidate service did.
struct Served {
    calls: u32,
    failure: Option<SandboxError>,
}

/// The harness side of the launcher: a poller thread that finds ready calls and workers that
/// run them.
struct CandidateService {
    stop: Arc<AtomicBool>,
    poller: std::thread::JoinHandle<()>,
    calls: Arc<AtomicU32>,
    failure: Arc<Mutex<Option<SandboxError>>>,
}

/// Everything a worker needs to serve one call.
struct CallContext {
    submission: PathBuf,
    /// The evaluator's private copy, where a layout's `ro` directories come from.
    evaluator: PathBuf,
    candidates: PathBuf,
    limits: Limits,
    deadline: Instant,
    host: HostView,
    config: SandboxConfig,
    failure: Arc<Mutex<Option<SandboxError>>>,
}

impl CandidateService {
    fn start(scratch: &Scratch, limits: Limits, deadline: Instant, host: HostView, config: SandboxConfig) -> CandidateService {
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU32::new(0));
        let failure = Arc::new(Mutex::new(None));
        let ctx = Arc::new(CallContext {
            submission: scratch.submission.clone(),
            evaluator: scratch.evaluator.clone(),
            candidates: scratch.candidates.clone(),
            limits,
            deadline,
            host,
            config,
            failure: Arc::clone(&failure),
        });
        let calls_dir = scratch.calls.clone();
        let (stop2, calls2) = (Arc::clone(&stop), Arc::clone(&calls));
        let poller = std::thread::spawn(move || poll_calls(&calls_dir, &stop2, &calls2, &ctx));
        CandidateService { stop, poller, calls, failure }
    }

    /// Stops polling and waits for the calls in flight (each ends by the evaluator's deadline).
    fn stop(self) -> Served {
        self.stop.store(true, Ordering::Release);
        // Wakes the poller from its pause at once: the evaluator's result waits on this join.
        self.poller.thread().unpark();
        let _ = self.poller.join();
        let failure = match self.failure.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        Served { calls: self.calls.load(Ordering::Acquire), failure }
    }
}

/// How often the calls directory is read while the evaluator runs.
const CALL_POLL_INTERVAL: Duration = Duration::from_millis(2);

fn poll_calls(calls_dir: &Path, stop: &AtomicBool, count: &AtomicU32, ctx: &Arc<CallContext>) {
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let rx = Arc::new(Mutex::new(rx));
    // Workers start with the first call: most evaluators never call the candidate.
    let start_workers = || -> Vec<_> {
        (0..CANDIDATE_WORKERS)
            .map(|_| {
                let (rx, ctx) = (Arc::clone(&rx), Arc::clone(ctx));
                std::thread::spawn(move || {
                    loop {
                        let next = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        match next {
                            Ok(call) => serve_call(&call, &ctx),
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect()
    };
    let mut workers = Vec::new();
    let mut seen = HashSet::new();
    while !stop.load(Ordering::Acquire) {
        if let Ok(entries) = std::fs::read_dir(calls_dir) {
            for entry in entries.flatten() {
                let call = entry.path();
                if call.join("ready").exists() && seen.insert(call.clone()) {
                    count.fetch_add(1, Ordering::AcqRel);
                    if workers.is_empty() {
                        workers = start_workers();
                    }
                    let _ = tx.send(call);
                }
            }
        }
        // A pause that `CandidateService::stop` cuts short (a spurious wake-up only polls again).
        std::thread::park_timeout(CALL_POLL_INTERVAL);
    }
    drop(tx);
    for worker in workers {
        let _ = worker.join();
    }
}

/// Serves one call: copy the submission, run the command, write stdout/stderr/status, mark done.
fn serve_call(call: &Path, ctx: &CallContext) {
    let dir = match CallDir::open(call) {
        Ok(dir) => dir,
        Err(e) => {
            tracing::warn!("ignoring candidate call {}: {e}", call.display());
            return;
        }
    };
    let (stdout, stderr, status) = match run_call(&dir, ctx) {
        Ok(reply) => reply,
        Err(CallError::Sandbox(e)) => {
            let message = format!("specgap-candidate: cannot run the command: {e}\n");
            if let Ok(mut slot) = ctx.failure.lock() {
                slot.get_or_insert(e);
            }
            (Vec::new(), message.into_bytes(), CANDIDATE_START_FAILED_STATUS)
        }
        Err(CallError::Request(message)) => {
            (Vec::new(), format!("specgap-candidate: {message}\n").into_bytes(), CANDIDATE_START_FAILED_STATUS)
        }
    };
    let written = (|| -> io::Result<()> {
        dir.write("stdout", &stdout)?;
        dir.write("stderr", &stderr)?;
        dir.write("status", format!("{status}\n").as_bytes())?;
        dir.write("done", b"")
    })();
    if let Err(e) = written {
        tracing::warn!("cannot answer candidate call {}: {e}", call.display());
    }
}

/// A call directory opened without following links, so files an evaluator planted there
/// (links to host files, a directory swapped for a link) are never read or written through:
/// every access is `openat` relative to this descriptor with `O_NOFOLLOW`, and replies are
/// created exclusively.
struct CallDir {
    fd: std::os::fd::OwnedFd,
}

impl CallDir {
    fn open(path: &Path) -> io::Result<CallDir> {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: open(2) on a NUL-terminated path; the fd is owned right after.
        let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(CallDir { fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) } })
    }

    fn open_at(&self, name: &str, flags: libc::c_int) -> io::Result<std::fs::File> {
        use std::os::fd::{AsRawFd, FromRawFd};
        let c_name = std::ffi::CString::new(name).map_err(io::Error::other)?;
        // SAFETY: openat(2) relative to our directory fd with a NUL-terminated name.
        let fd = unsafe { libc::openat(self.fd.as_raw_fd(), c_name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0o644) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{name}: {e}")));
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut file = self.open_at(name, libc::O_RDONLY)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other(format!("{name} is not a regular file")));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let mut file = self.open_at(name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL)?;
        file.write_all(bytes)
    }
}

enum CallError {
    Sandbox(SandboxError),
    Request(String),
}

fn run_call(call: &CallDir, ctx: &CallContext) -> Result<(Vec<u8>, Vec<u8>, i32), CallError> {
    let argv_bytes = call.read("argv").map_err(|e| CallError::Request(format!("unreadable call: {e}")))?;
    let stdin = call.read("stdin").map_err(|e| CallError::Request(format!("unreadable call: {e}")))?;
    let mut argv: Vec<String> = argv_bytes.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    if argv.last().is_some_and(String::is_empty) {
        argv.pop();
    }
    if argv.is_empty() {
        return Err(CallError::Request("no command given".into()));
    }
    let remaining = ctx.deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Ok((Vec::new(), b"specgap-candidate: the evaluator's time is up\n".to_vec(), CANDIDATE_TIMEOUT_STATUS));
    }
    let layout = match call.read("layout") {
        Ok(bytes) => CandidateLayout::parse(&String::from_utf8_lossy(&bytes)).map_err(CallError::Request)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => CandidateLayout::default(),
        Err(e) => return Err(CallError::Request(format!("unreadable layout: {e}"))),
    };
    if !layout.is_default() && !ctx.config.enabled {
        return Err(CallError::Request("a candidate layout needs the sandbox (it places directories at fixed paths)".into()));
    }
    let copy = tempfile::Builder::new().prefix("call-").tempdir_in(&ctx.candidates).map_err(|e| CallError::Sandbox(e.into()))?;
    let workspace = copy.path().join("workspace");
    fsutil::copy_tree(&ctx.submission, &workspace, GitEntries::Skip).map_err(|e| CallError::Sandbox(e.into()))?;
    let mut spec = CommandSpec::argv(argv, &workspace);
    let out_dir = layout.apply(&mut spec, &ctx.evaluator, copy.path())?;
    spec.stdin = stdin;
    spec.limits = Limits { timeout: layout.timeout.unwrap_or(ctx.limits.timeout).min(remaining), ..ctx.limits };
    let output = run_sandboxed(&spec, &ctx.host, &ctx.config).map_err(CallError::Sandbox)?;
    let mut stderr = output.stderr.to_bytes();
    let status = if output.timed_out {
        stderr.extend_from_slice(format!("specgap-candidate: timed out after {} s\n", spec.limits.timeout.as_secs_f64()).as_bytes());
        CANDIDATE_TIMEOUT_STATUS
    } else {
        output.exit_code.unwrap_or(128 + libc::SIGKILL)
    };
    if let Some(out_dir) = out_dir {
        // The sandbox and every process of the call have ended: nothing writes here any more.
        copy_out_files(&out_dir, call, &mut stderr);
    }
    Ok((output.stdout.to_bytes(), stderr, status))
}

/// A candidate call's layout (`SPECGAP_CANDIDATE_LAYOUT`, module docs "Candidate layouts"):
/// where the submission, the evaluator's read-only directories and one output directory
/// appear in the candidate's sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CandidateLayout {
    /// `workdir PATH`: where the submission's copy is mounted (default `/workspace`).
    pub workdir: Option<PathBuf>,
    /// `ro SOURCE PATH`: a directory of the evaluator's copy (relative, plain names) and its
    /// read-only place in the sandbox, in file order.
    pub read_only: Vec<(PathBuf, PathBuf)>,
    /// `out PATH`: the writable directory whose top-level files are copied back.
    pub out: Option<PathBuf>,
    /// `timeout SECONDS`: the call's time limit instead of the run's candidate limit (still
    /// capped by what is left of the evaluator's).
    pub timeout: Option<Duration>,
}

impl CandidateLayout {
    /// Parses the layout file's text: one directive a line, blank lines and `#` comments
    /// ignored.
    ///
    /// # Errors
    /// A message naming the line: an unknown directive, a path that is not absolute and
    /// plain (no `.`, `..`), a place under a system directory, `/tmp` or `/run`, a second
    /// `workdir` or `out`, or two places equal or nested.
    pub fn parse(text: &str) -> Result<CandidateLayout, String> {
        let mut layout = CandidateLayout::default();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |message: String| format!("layout line {}: {message}", index + 1);
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["workdir", place] if layout.workdir.is_none() => layout.workdir = Some(sandbox_place(place).map_err(at)?),
                ["out", place] if layout.out.is_none() => layout.out = Some(sandbox_place(place).map_err(at)?),
                ["timeout", seconds] if layout.timeout.is_none() => {
                    let seconds: u64 = seconds
                        .parse()
                        .ok()
                        .filter(|s| *s >= 1)
                        .ok_or_else(|| at(format!("timeout {seconds} is not a whole number of seconds, at least 1")))?;
                    layout.timeout = Some(Duration::from_secs(seconds));
                }
                ["ro", source, place] => {
                    let source = relative_source(source).map_err(at)?;
                    layout.read_only.push((source, sandbox_place(place).map_err(at)?));
                }
                _ => {
                    return Err(at(format!(
                        "expected `workdir PATH`, `ro SOURCE PATH`, `out PATH` or `timeout SECONDS` (each but ro once), found `{line}`"
                    )));
                }
            }
        }
        let places: Vec<&PathBuf> = layout.workdir.iter().chain(layout.read_only.iter().map(|(_, p)| p)).chain(layout.out.iter()).collect();
        for (i, a) in places.iter().enumerate() {
            for b in &places[i + 1..] {
                if a.starts_with(b) || b.starts_with(a) {
                    return Err(format!("layout places {} and {} overlap", a.display(), b.display()));
                }
            }
        }
        Ok(layout)
    }

    /// Whether this places nothing (the plain launcher's layout, perhaps with a timeout).
    pub fn is_default(&self) -> bool {
        self.workdir.is_none() && self.read_only.is_empty() && self.out.is_none()
    }

    /// Rewrites `spec` (made by [`CommandSpec::argv`]) for this layout; copies the `ro`
    /// directories from `evaluator` into `scratch`; returns the host directory of `out`.
    fn apply(&self, spec: &mut CommandSpec, evaluator: &Path, scratch: &Path) -> Result<Option<PathBuf>, CallError> {
        if let Some(workdir) = &self.workdir {
            for mount in &mut spec.mounts {
                mount.sandbox = workdir.clone();
            }
            spec.cwd = workdir.clone();
        }
        for (index, (source, place)) in self.read_only.iter().enumerate() {
            let from = evaluator.join(source);
            if !is_real_dir_below(evaluator, source) {
                return Err(CallError::Request(format!(
                    "layout source {} is not a directory of the evaluator (links are not followed)",
                    source.display()
                )));
            }
            let to = scratch.join(format!("ro-{index}"));
            fsutil::copy_tree(&from, &to, GitEntries::Keep).map_err(|e| CallError::Sandbox(e.into()))?;
            spec.mounts.push(Mount { host: to, sandbox: place.clone(), writable: false });
        }
        let Some(place) = &self.out else { return Ok(None) };
        let out = scratch.join("out");
        fs::create_dir(&out).map_err(|e| CallError::Sandbox(e.into()))?;
        spec.mounts.push(Mount { host: out.clone(), sandbox: place.clone(), writable: true });
        Ok(Some(out))
    }
}

/// An absolute sandbox path of plain names, not `/` and not at or under a reserved directory.
fn sandbox_place(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    let plain = path.is_absolute() && path.components().skip(1).all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain || path == Path::new("/") || text.ends_with('/') {
        return Err(format!("{text} must be an absolute path of plain names other than /"));
    }
    let reserved = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"].iter().chain(LAYOUT_RESERVED);
    for top in reserved {
        if path.starts_with(top) {
            return Err(format!("{text} would be at or under {top}"));
        }
    }
    Ok(path)
}

/// A relative path of plain names (a directory of the evaluator's copy).
fn relative_source(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    if path.as_os_str().is_empty() || !path.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
        return Err(format!("{text} must be a relative path of plain names"));
    }
    Ok(path)
}

/// Whether `root/rel` is a directory reached without passing through a symbolic link.
fn is_real_dir_below(root: &Path, rel: &Path) -> bool {
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            _ => return false,
        }
    }
    true
}

/// Copies the regular files at the top of a finished call's `out` directory into the call
/// directory as `out.<name>` (names of letters, digits, `.`, `_`, `-`, not starting with `.`;
/// at most [`CANDIDATE_OUT_FILES_MAX`] files of [`CANDIDATE_OUT_FILE_MAX_BYTES`]); what is
/// left out is noted on the call's stderr.
fn copy_out_files(out: &Path, call: &CallDir, stderr: &mut Vec<u8>) {
    let Ok(entries) = std::fs::read_dir(out) else { return };
    let mut names: Vec<String> = entries.flatten().filter_map(|e| e.file_name().to_str().map(str::to_string)).collect();
    names.sort();
    let mut copied = 0;
    for name in names {
        let plain = !name.starts_with('.') && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        let meta = std::fs::symlink_metadata(out.join(&name));
        let regular = meta.as_ref().is_ok_and(|m| m.is_file() && m.len() <= CANDIDATE_OUT_FILE_MAX_BYTES);
        if !plain || !regular || copied == CANDIDATE_OUT_FILES_MAX {
            stderr.extend_from_slice(format!("specgap-candidate: left out {name} of the output directory\n").as_bytes());
            continue;
        }
        let written = std::fs::read(out.join(&name)).and_then(|bytes| call.write(&format!("out.{name}"), &bytes));
        match written {
            Ok(()) => copied += 1,
            Err(e) => stderr.extend_from_slice(format!("specgap-candidate: cannot copy {name} of the output directory: {e}\n").as_bytes()),
        }
    }
}
