//! Carrying out a plan: a bounded pool of worker threads, one episode at a time each, with
//! retries of failed attempts and a cooperative stop.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use specgap_protocol::run::{ComponentRef, EndReason};
use specgap_sandbox::{BaseCache, SandboxConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, ErrorClass, ErrorRecord, Status, Store};
use specgap_task::TaskPackage;

use crate::condition::{BudgetFlags, Budgets};
use crate::episode::{EpisodeContext, EpisodeError, HostViews, StartResults, run_episode};
use crate::evaluation::GoldChecks;
use crate::lock;
use crate::prompt_files::Replacements;
use crate::runner::RunnerError;
use crate::runner::plan::{Plan, PlannedEpisode};
use crate::session::{Agent, AgentError, User, UserError};

/// Makes a fresh agent for each attempt of an episode (so no state leaks between retries).
pub trait AgentFactory: Sync {
    /// An agent for `agent` on `episode` of `package`.
    ///
    /// # Errors
    /// [`AgentError`] when the agent cannot be made (an unreadable replay file, …): an
    /// infrastructure error of that attempt.
    fn make(&self, agent: &ComponentRef, episode: &PlannedEpisode, package: &TaskPackage) -> Result<Box<dyn Agent + Send>, AgentError>;
}

/// Makes a fresh user for each attempt of an episode.
pub trait UserFactory: Sync {
    /// A user for `user` on `episode` of `package`.
    ///
    /// # Errors
    /// [`UserError`] when the user cannot be made: an infrastructure error of that attempt.
    fn make(&self, user: &ComponentRef, episode: &PlannedEpisode, package: &TaskPackage) -> Result<Box<dyn User + Send>, UserError>;
}

/// The deterministic `relay` user for every episode (DESIGN §5).
#[derive(Debug, Clone, Copy, Default)]
pub struct RelayUsers;

impl UserFactory for RelayUsers {
    fn make(&self, _user: &ComponentRef, _episode: &PlannedEpisode, package: &TaskPackage) -> Result<Box<dyn User + Send>, UserError> {
        Ok(Box::new(crate::relay::RelayUser::new(package)))
    }
}

/// Hears about the run's progress; called from worker threads.
pub trait RunObserver: Sync {
    /// An attempt of `episode` is starting (1-based `attempt` within this process).
    fn attempt_started(&self, _episode: &PlannedEpisode, _attempt: u32) {}
    /// An episode reached its final state for this run.
    fn episode_ended(&self, _report: &EpisodeReport) {}
    /// A line for the log (retries, skipped episodes).
    fn note(&self, _message: &str) {}
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl RunObserver for Silent {}

/// What the run needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Episodes run at once (at least 1).
    pub jobs: usize,
    /// Retries of a failed attempt (infrastructure or evaluation error).
    pub retries: u32,
    /// Run commands under bubblewrap (false only for `--no-sandbox` debugging).
    pub sandbox: bool,
    /// Budget flags from the command line.
    pub budget_flags: BudgetFlags,
    /// The run's protocol (`--protocol`, [`specgap_rules`]); `None`: each condition runs under
    /// its paper's protocol ([`crate::condition::paper_protocol`]).
    pub protocol: Option<specgap_rules::Protocol>,
    /// Run seed.
    pub seed: u64,
    /// Set to stop: no new episode starts, running ones end as `interrupted` (their model
    /// requests in flight are abandoned).
    pub stop: Arc<AtomicBool>,
    /// Parent of the per-run temporary directory of workspaces (`None`: chosen by
    /// [`default_work_root`]).
    pub work_root: Option<PathBuf>,
    /// Also run again episodes stored as `eval_error` (`--resume`).
    pub rerun_eval_errors: bool,
    /// `--max-cost`, in US dollars: before each episode starts, the run's summed model cost
    /// (every `usage` row of the store: all roles, attempts and earlier processes, and the
    /// requests of running episodes, which are written as each completes) is compared with
    /// it, and once the cost is above it no further episode starts. Running episodes finish
    /// normally; episodes not started stay unstarted, for `--resume`.
    pub max_cost_usd: Option<f64>,
    /// `--max-tokens`, in tokens: the same rule as [`RunOptions::max_cost_usd`] for the run's
    /// summed prompt + completion tokens (`input_tokens + output_tokens` of every `usage`
    /// row; cached prompt tokens are part of `input_tokens`, reasoning tokens of
    /// `output_tokens`, so neither counts twice). Once the sum is above it no further episode
    /// starts.
    pub max_tokens: Option<u64>,
    /// The CPU time each sandbox may use (`--cpu-per-sandbox`; issue 31 item 2).
    pub cpu_per_sandbox: CpuPerSandbox,
}

/// The CPU limit of every sandbox of a run (`--cpu-per-sandbox`; issue 31 item 2): a cgroup
/// `cpu` quota, or the lower scheduling priority where the `cpu` controller is not usable
/// ([`specgap_sandbox::set_sandbox_cpus`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum CpuPerSandbox {
    /// The machine's cores shared by the episodes run at once
    /// ([`specgap_sandbox::default_sandbox_cpus`] of `jobs`).
    #[default]
    Share,
    /// This many CPUs of time per sandbox (at least 0.01).
    Cores(f64),
    /// No CPU limit and no priority change.
    Off,
}

impl CpuPerSandbox {
    /// The CPUs of time per sandbox for a run of `jobs` episodes at once; `None`: no limit.
    pub fn cpus(self, jobs: usize) -> Option<f64> {
        match self {
            CpuPerSandbox::Share => Some(specgap_sandbox::default_sandbox_cpus(jobs)),
            CpuPerSandbox::Cores(cores) => Some(cores),
            CpuPerSandbox::Off => None,
        }
    }
}

/// How one episode ended in this run.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeReport {
    /// Episode id.
    pub id: String,
    /// Task name.
    pub task: String,
    /// Agent spec.
    pub agent: String,
    /// Canonical condition.
    pub condition: String,
    /// Start.
    pub start: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// Final status.
    pub status: Status,
    /// End reason.
    pub end_reason: Option<EndReason>,
    /// Attempts made in this run.
    pub attempts: u32,
    /// Error messages of the failed attempts, in order.
    pub errors: Vec<String>,
}

/// Counts of a run (this process's share).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Episodes in this shard's plan.
    pub planned: usize,
    /// Episodes already final in the store, not run again.
    pub already_done: usize,
    /// Episodes that ended `finished`.
    pub finished: usize,
    /// Episodes that ended `infra_error`.
    pub infra_errors: usize,
    /// Episodes that ended `eval_error`.
    pub eval_errors: usize,
    /// Episodes that ended `interrupted`.
    pub interrupted: usize,
    /// Episodes never started because of a stop request or a spending limit.
    pub not_started: usize,
    /// The spending limit the run passed, so that episodes stopped starting
    /// ([`RunOptions::max_cost_usd`], [`RunOptions::max_tokens`]); `None`: neither was passed.
    pub limit_reached: Option<SpendingLimit>,
    /// Attempts retried after a failure.
    pub retried_attempts: usize,
    /// Not-applicable combinations recorded.
    pub not_applicable: usize,
}

/// What a plan refers to by index.
#[derive(Debug, Clone, Copy)]
pub struct RunInputs<'a> {
    /// Tasks (`PlannedEpisode::task` indexes them).
    pub tasks: &'a [TaskPackage],
    /// Agents (`PlannedEpisode::agent` indexes them).
    pub agents: &'a [ComponentRef],
    /// The user.
    pub user: &'a ComponentRef,
}

/// Records the plan's not-applicable combinations in the store.
///
/// # Errors
/// Store errors.
pub fn record_not_applicable(store: &Store, plan: &Plan) -> Result<usize, RunnerError> {
    for skipped in &plan.not_applicable {
        store.record_not_applicable(skipped)?;
    }
    Ok(plan.not_applicable.len())
}

/// Whether `status` (`None`: never begun) means the episode must run.
fn needs_running(status: Option<Status>, rerun_eval_errors: bool) -> bool {
    match status {
        None => true,
        Some(s) if s.needs_rerun() => true,
        Some(Status::EvalError) => rerun_eval_errors,
        Some(_) => false,
    }
}

/// Runs every planned episode that needs running on `options.jobs` worker threads, recording
/// not-applicable combinations first. Returns when all have ended or, after a stop request,
/// when the running ones have.
///
/// # Errors
/// Store errors that leave the run unable to record results (the first one; the run stops).
/// Failures of single episodes are recorded in the store, not returned.
pub fn execute(
    plan: &Plan,
    inputs: RunInputs<'_>,
    store: &Store,
    agents: &dyn AgentFactory,
    users: &dyn UserFactory,
    observer: &dyn RunObserver,
    options: &RunOptions,
) -> Result<RunSummary, RunnerError> {
    let mut summary = RunSummary { planned: plan.episodes.len(), ..RunSummary::default() };
    summary.not_applicable = record_not_applicable(store, plan)?;
    let mut queue = VecDeque::new();
    for episode in &plan.episodes {
        let status = store.episode_status(&episode.id)?;
        if needs_running(status, options.rerun_eval_errors) {
            // `begin_episode` restarts unfinished and failed episodes itself, keeping the
            // earlier attempts' error rows.
            queue.push_back(episode);
        } else {
            summary.already_done += 1;
        }
    }
    let work_root = options.work_root.clone().unwrap_or_else(|| default_work_root(inputs.tasks, options.jobs.max(1)));
    let work_dir = make_work_dir(Some(&work_root))?;
    // Each sandbox gets its share of the machine's cores unless `--cpu-per-sandbox` says
    // otherwise (issue 31 item 2; where the `cpu` controller is unusable, sandboxes run at a
    // lower priority instead).
    specgap_sandbox::set_sandbox_cpus(options.cpu_per_sandbox.cpus(options.jobs));
    if options.sandbox {
        // What runners killed with SIGKILL left (their workspaces went with `make_work_dir`).
        let removed = specgap_sandbox::scratch::remove_dead_runners_cgroups();
        if removed > 0 {
            tracing::info!("removed {removed} cgroup(s) left by runners that are gone");
        }
    }
    let shared = Shared {
        queue: Mutex::new(queue),
        ended: Mutex::new(EndedCounts::default()),
        fatal: Mutex::new(None),
        retried: AtomicUsize::new(0),
        limit_reached: OnceLock::new(),
    };
    let bases = BaseCache::new(work_dir.path().join("bases"))
        .map_err(|e| RunnerError::WorkDir { path: work_dir.path().join("bases"), source: std::io::Error::other(e) })?;
    let ctx = WorkerContext {
        inputs,
        store,
        agents,
        users,
        observer,
        options,
        work_dir: work_dir.path(),
        shared: &shared,
        sandbox: SandboxConfig { enabled: options.sandbox },
        bases,
        start_results: StartResults::default(),
        host_views: HostViews::default(),
        gold_checks: GoldChecks::default(),
    };
    let jobs = options.jobs.max(1);
    let workers_done = AtomicBool::new(false);
    std::thread::scope(|scope| -> Result<(), RunnerError> {
        let mut handles = Vec::with_capacity(jobs);
        let mut spawned = Ok(());
        for n in 0..jobs {
            let ctx = &ctx;
            match std::thread::Builder::new().name(format!("specgap-worker-{n}")).spawn_scoped(scope, move || worker(ctx)) {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    // Stop the workers already started; they end their episodes as interrupted.
                    options.stop.store(true, Ordering::SeqCst);
                    spawned = Err(RunnerError::Thread(e));
                    break;
                }
            }
        }
        let watcher = {
            let (stop, done) = (&options.stop, &workers_done);
            std::thread::Builder::new()
                .name("specgap-stop-watcher".into())
                .spawn_scoped(scope, move || watch_for_stop(stop, done))
                .map_err(RunnerError::Thread)?
        };
        for handle in handles {
            // A panicking worker has already lost its episode (left `running` for resume).
            let _ = handle.join();
        }
        workers_done.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        spawned
    })?;
    if let Some(error) = lock(&shared.fatal).take() {
        return Err(error);
    }
    summary.not_started = lock(&shared.queue).len();
    summary.retried_attempts = shared.retried.load(Ordering::SeqCst);
    summary.limit_reached = shared.limit_reached.get().copied();
    let ended = *lock(&shared.ended);
    summary.finished = ended.finished;
    summary.infra_errors = ended.infra_errors;
    summary.eval_errors = ended.eval_errors;
    summary.interrupted = ended.interrupted;
    Ok(summary)
}

/// How the episodes this process ran ended, counted as each ends.
#[derive(Debug, Clone, Copy, Default)]
struct EndedCounts {
    finished: usize,
    infra_errors: usize,
    eval_errors: usize,
    interrupted: usize,
}

impl EndedCounts {
    fn count(&mut self, status: Status) {
        match status {
            Status::Finished => self.finished += 1,
            Status::InfraError => self.infra_errors += 1,
            Status::EvalError => self.eval_errors += 1,
            Status::Interrupted | Status::Running => self.interrupted += 1,
            Status::NotApplicable => {}
        }
    }
}

/// After a stop request, kills the sandboxed commands and evaluators still running, again
/// every 100 ms (a batched turn may start one more) until the workers are done, so running
/// episodes end as `interrupted` at once instead of when their commands time out.
fn watch_for_stop(stop: &AtomicBool, workers_done: &AtomicBool) {
    while !workers_done.load(Ordering::SeqCst) {
        if stop.load(Ordering::SeqCst) {
            let killed = kill_own_process_groups();
            if killed > 0 {
                tracing::debug!("stop requested: killed {killed} sandboxed process group(s)");
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Kills (SIGKILL) the process group of every child of this process that leads a group of its
/// own, and returns how many. The sandbox starts every command and evaluator in a new process
/// group (and bubblewrap's PID namespace takes the rest with it); helpers such as `git` share
/// the harness's group and are left alone.
fn kill_own_process_groups() -> usize {
    let own = std::process::id();
    let Ok(entries) = fs_err::read_dir("/proc") else { return 0 };
    let mut killed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        // A process may exit between listing and reading: skip it.
        let Ok(stat) = fs_err::read_to_string(entry.path().join("stat")) else { continue };
        if let Some((ppid, pgrp)) = parent_and_group(&stat)
            && ppid == own
            && pgrp == pid
            && let Ok(group) = i32::try_from(pid)
        {
            // SAFETY: kill(2) on a process group our own child leads.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            killed += 1;
        }
    }
    killed
}

/// `(ppid, pgrp)` from the text of `/proc/<pid>/stat` (fields 4 and 5, after the command name
/// in parentheses, which may itself contain spaces and parentheses).
fn parent_and_group(stat: &str) -> Option<(u32, u32)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

/// Where a run's scratch directory goes when `--work-dir` is not given: the memory file
/// system of [`specgap_sandbox::memory_scratch`] when there is one with at least twice the room the run could need at once (every task's
/// base, plus, per parallel episode, three copies of the largest workspace and one of the
/// largest evaluator), else the system's temporary directory. Episodes create and delete
/// dozens of small files each; on a disk file system that churn costs more CPU (inode
/// allocation) than everything else the harness does per episode.
pub fn default_work_root(tasks: &[TaskPackage], jobs: usize) -> PathBuf {
    let need = scratch_bytes_needed(tasks, jobs);
    match specgap_sandbox::memory_scratch() {
        Some((dir, room)) if room >= need.saturating_mul(2) => dir,
        _ => std::env::temp_dir(),
    }
}

fn scratch_bytes_needed(tasks: &[TaskPackage], jobs: usize) -> u64 {
    let workspaces: Vec<u64> = tasks.iter().map(|t| tree_bytes(&t.workspace_dir())).collect();
    let largest_workspace = workspaces.iter().copied().max().unwrap_or(0);
    let largest_evaluator = tasks.iter().map(|t| tree_bytes(&t.evaluator_dir())).max().unwrap_or(0);
    let per_episode = largest_workspace.saturating_mul(3).saturating_add(largest_evaluator);
    workspaces.iter().sum::<u64>().saturating_add(per_episode.saturating_mul(jobs as u64)).saturating_add(64 << 20)
}

/// Bytes of the regular files under `dir` (0 when unreadable).
fn tree_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir).into_iter().flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}

/// Prefix of a run's temporary directory; the owning process id follows, so a later run can
/// tell the directories of killed runners (`kill -9` skips every destructor) from live ones.
const WORK_DIR_PREFIX: &str = "specgap-run-";

/// The run's temporary directory of workspaces (`<parent>/specgap-run-<pid>-<random>`),
/// removed when dropped. Directories left by runners that no longer exist are removed first.
fn make_work_dir(root: Option<&Path>) -> Result<tempfile::TempDir, RunnerError> {
    let parent = root.map_or_else(std::env::temp_dir, Path::to_path_buf);
    specgap_sandbox::scratch::remove_dead_owners(&parent, WORK_DIR_PREFIX);
    tempfile::Builder::new()
        .prefix(&format!("{WORK_DIR_PREFIX}{}-", std::process::id()))
        .tempdir_in(&parent)
        .map_err(|source| RunnerError::WorkDir { path: parent, source })
}

struct Shared<'p> {
    queue: Mutex<VecDeque<&'p PlannedEpisode>>,
    // Counts, not the reports themselves: a report kept per episode made the runner's memory
    // grow with the run (0.56 KiB an episode in the 20,000-episode soak, BENCHMARKS.md).
    ended: Mutex<EndedCounts>,
    fatal: Mutex<Option<RunnerError>>,
    retried: AtomicUsize,
    /// Set once, by the first worker to find a spending limit passed.
    limit_reached: OnceLock<SpendingLimit>,
}

struct WorkerContext<'a, 'p> {
    inputs: RunInputs<'a>,
    store: &'a Store,
    agents: &'a dyn AgentFactory,
    users: &'a dyn UserFactory,
    observer: &'a dyn RunObserver,
    options: &'a RunOptions,
    work_dir: &'a Path,
    shared: &'a Shared<'p>,
    sandbox: SandboxConfig,
    bases: BaseCache,
    start_results: StartResults,
    host_views: HostViews,
    gold_checks: GoldChecks,
}

fn worker(ctx: &WorkerContext<'_, '_>) {
    loop {
        if ctx.options.stop.load(Ordering::SeqCst) {
            return;
        }
        match spending_limit_reached(ctx) {
            Ok(false) => {}
            Ok(true) => return,
            Err(error) => {
                ctx.options.stop.store(true, Ordering::SeqCst);
                lock(&ctx.shared.fatal).get_or_insert(error);
                return;
            }
        }
        let Some(episode) = lock(&ctx.shared.queue).pop_front() else {
            return;
        };
        match run_with_retries(ctx, episode) {
            Ok(report) => {
                ctx.observer.episode_ended(&report);
                lock(&ctx.shared.ended).count(report.status);
            }
            Err(error) => {
                // The store cannot record results: stop everything, keep the first error.
                ctx.options.stop.store(true, Ordering::SeqCst);
                lock(&ctx.shared.fatal).get_or_insert(error);
                return;
            }
        }
    }
}

/// A spending limit of a run: what stops further episodes from starting once the run's
/// summed usage is above it (not a stop request: running episodes finish).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendingLimit {
    /// [`RunOptions::max_cost_usd`] (`--max-cost`), US dollars of model cost.
    Cost,
    /// [`RunOptions::max_tokens`] (`--max-tokens`), prompt + completion tokens.
    Tokens,
}

impl SpendingLimit {
    /// The `specgap run` flag that sets the limit (`--max-cost`, `--max-tokens`).
    pub fn flag(self) -> &'static str {
        match self {
            SpendingLimit::Cost => "--max-cost",
            SpendingLimit::Tokens => "--max-tokens",
        }
    }

    /// What the limit caps, as messages name it ("the run's model cost").
    pub fn measure(self) -> &'static str {
        match self {
            SpendingLimit::Cost => "the run's model cost",
            SpendingLimit::Tokens => "the run's prompt + completion tokens",
        }
    }
}

/// A spending limit found passed, with the amounts as the note shows them.
struct Passed {
    limit: SpendingLimit,
    /// "is $0.0006", "are 600".
    spent: String,
    /// "$0.0003", "599".
    cap: String,
}

impl Passed {
    /// The run's note, with `waiting` episodes not started.
    fn note(&self, waiting: usize) -> String {
        let flag = self.limit.flag();
        format!(
            "{} {}, above {flag} {}: no further episodes start ({waiting} not started; running ones finish). \
             Continue later with --resume and a higher {flag}",
            self.limit.measure(),
            self.spent,
            self.cap
        )
    }
}

/// The first of `options`' spending limits (cost, then tokens) that `spent` — the run's
/// summed usage — is above; `None` while within all (equal to a limit is within it).
fn passed_limit(options: &RunOptions, spent: &specgap_protocol::event::Usage) -> Option<Passed> {
    if let Some(cap) = options.max_cost_usd
        && spent.cost_usd > cap
    {
        return Some(Passed { limit: SpendingLimit::Cost, spent: format!("is ${:.4}", spent.cost_usd), cap: format!("${cap}") });
    }
    let tokens = spent.input_tokens + spent.output_tokens;
    match options.max_tokens {
        Some(cap) if tokens > cap => Some(Passed { limit: SpendingLimit::Tokens, spent: format!("are {tokens}"), cap: cap.to_string() }),
        _ => None,
    }
}

/// Whether a spending limit forbids starting another episode (see [`RunOptions::max_cost_usd`]
/// and [`RunOptions::max_tokens`]): the store's `usage` rows are summed by one SQL aggregate
/// (no rows are read out, so the check stays cheap deep into a long run) and compared with
/// each; the first worker to find one passed tells the observer, with the amounts.
fn spending_limit_reached(ctx: &WorkerContext<'_, '_>) -> Result<bool, RunnerError> {
    if ctx.options.max_cost_usd.is_none() && ctx.options.max_tokens.is_none() {
        return Ok(false);
    }
    if ctx.shared.limit_reached.get().is_some() {
        return Ok(true);
    }
    let spent = ctx.store.usage_total()?;
    let Some(passed) = passed_limit(ctx.options, &spent) else { return Ok(false) };
    if ctx.shared.limit_reached.set(passed.limit).is_ok() {
        let waiting = lock(&ctx.shared.queue).len();
        ctx.observer.note(&passed.note(waiting));
    }
    Ok(true)
}

/// How one attempt went.
enum Attempt {
    /// The episode reached a final state (finished, or interrupted by a stop request).
    Ended { status: Status, end_reason: EndReason },
    /// The attempt failed; the writer is still open so the caller decides between a retry
    /// and a final error status.
    Failed { writer: Box<specgap_store::EpisodeWriter>, failure: Failure },
}

/// A failed attempt, as the retry policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    class: ErrorClass,
    message: String,
    stderr_tail: String,
    /// The agent, user or sandbox said retrying cannot help.
    deterministic: bool,
}

impl Failure {
    /// Whether `self`, following `previous`, shows a deterministic failure: the component
    /// said so, or the failure repeats the previous attempt's — same class, and message and
    /// stderr tail equal once the parts that differ between attempts anyway (numbers and
    /// temporary names, see [`attempt_independent`]) are masked. This holds for evaluation
    /// errors and for infrastructure errors of every role alike (agent, user, judge, gateway,
    /// sandbox: DESIGN §3 "deterministic failures are not retried more than once"), so a user
    /// model that always answers HTTP 500 costs two attempts, not `1 + retries`.
    fn is_deterministic_after(&self, previous: Option<&Failure>) -> bool {
        self.deterministic
            || previous.is_some_and(|p| {
                self.class == p.class
                    && attempt_independent(&p.message) == attempt_independent(&self.message)
                    && attempt_independent(&p.stderr_tail) == attempt_independent(&self.stderr_tail)
            })
    }
}

/// `text` with what legitimately changes from one attempt to the next masked: every run of
/// digits (process ids, timings, line numbers of generated files, addresses) becomes `#`, and
/// every temporary name — a word that starts with `tmp`, `tmp.`, `.tmp` or `specgap-` followed
/// by six or more letters, digits, `_` or `-` — becomes `TMP`. Two evaluator crashes that differ only there are
/// the same failure.
pub(crate) fn attempt_independent(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            out.push('#');
            rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            continue;
        }
        let at_word_start = out.chars().last().is_none_or(|p| !p.is_ascii_alphanumeric() && p != '_');
        if at_word_start && let Some(len) = temporary_name_len(rest) {
            out.push_str("TMP");
            rest = &rest[len..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The length of the temporary name `text` starts with, if it starts with one.
fn temporary_name_len(text: &str) -> Option<usize> {
    let prefix = ["specgap-", "tmp.", ".tmp", "tmp"].into_iter().find(|p| text.starts_with(p))?;
    let tail = text[prefix.len()..].bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-').count();
    // Six or more random characters, as tempfile, mktemp and Python's tempfile make them;
    // shorter tails are words ("tmpfile").
    (tail >= 6).then_some(prefix.len() + tail)
}

fn run_with_retries(ctx: &WorkerContext<'_, '_>, episode: &PlannedEpisode) -> Result<EpisodeReport, RunnerError> {
    let mut previous: Option<Failure> = None;
    let mut errors = Vec::new();
    let mut attempt_no = 0u32;
    loop {
        attempt_no += 1;
        ctx.observer.attempt_started(episode, attempt_no);
        match attempt(ctx, episode)? {
            Attempt::Ended { status, end_reason } => {
                return Ok(report(episode, status, Some(end_reason), attempt_no, errors));
            }
            Attempt::Failed { writer, failure } if ctx.options.stop.load(Ordering::SeqCst) => {
                // The stop killed what this attempt was running: not an error of the episode,
                // so no error row (a resumed run then stores what an uninterrupted one does).
                writer.finish(EpisodeSummary {
                    status: Status::Interrupted,
                    end_reason: Some(EndReason::Interrupted),
                    turns: 0,
                    tool_calls: 0,
                    wall_ms: 0,
                    error: Some(format!("interrupted: {}", failure.message)),
                })?;
                return Ok(report(episode, Status::Interrupted, Some(EndReason::Interrupted), attempt_no, errors));
            }
            Attempt::Failed { mut writer, failure } => {
                let deterministic = failure.is_deterministic_after(previous.as_ref());
                writer.record_error(&ErrorRecord {
                    class: failure.class,
                    message: failure.message.clone(),
                    stderr_tail: failure.stderr_tail.clone(),
                    deterministic,
                })?;
                errors.push(failure.message.clone());
                // Evaluation errors were re-evaluated on the frozen state inside the attempt
                // (`crate::evaluation`); running the agent again would not evaluate that state.
                let retries_left = attempt_no <= ctx.options.retries && failure.class != ErrorClass::Evaluation;
                if retries_left && !deterministic && !ctx.options.stop.load(Ordering::SeqCst) {
                    ctx.shared.retried.fetch_add(1, Ordering::SeqCst);
                    ctx.observer.note(&format!(
                        "episode {} attempt {attempt_no} failed ({}): {}; retrying from a fresh workspace",
                        episode.id,
                        failure.class.as_str(),
                        failure.message
                    ));
                    // Dropping the writer leaves the episode `running`; the next
                    // `begin_episode` starts attempt n + 1 and keeps this attempt's errors.
                    drop(writer);
                    previous = Some(failure);
                    continue;
                }
                let (status, end_reason) = match failure.class {
                    ErrorClass::Infrastructure => (Status::InfraError, EndReason::InfrastructureError),
                    ErrorClass::Evaluation => (Status::EvalError, EndReason::EvaluationError),
                };
                let why = if deterministic { " (deterministic: not retried again)" } else { "" };
                writer.finish(EpisodeSummary {
                    status,
                    end_reason: Some(end_reason),
                    turns: 0,
                    tool_calls: 0,
                    wall_ms: 0,
                    error: Some(format!("{}{why}", failure.message)),
                })?;
                return Ok(report(episode, status, Some(end_reason), attempt_no, errors));
            }
        }
    }
}

fn report(episode: &PlannedEpisode, status: Status, end_reason: Option<EndReason>, attempts: u32, errors: Vec<String>) -> EpisodeReport {
    EpisodeReport {
        id: episode.id.clone(),
        task: episode.key.task.clone(),
        agent: episode.key.agent.clone(),
        condition: episode.key.condition.clone(),
        start: episode.key.start.clone(),
        repeat: episode.key.repeat,
        status,
        end_reason,
        attempts,
        errors,
    }
}

/// One attempt: begin the episode in the store, make the agent and user, materialize and run.
fn attempt(ctx: &WorkerContext<'_, '_>, episode: &PlannedEpisode) -> Result<Attempt, RunnerError> {
    let package = &ctx.inputs.tasks[episode.task];
    let agent_ref = &ctx.inputs.agents[episode.agent];
    let meta = EpisodeMeta {
        user: ctx.inputs.user.spec.clone(),
        family: package.manifest().task.family,
        scoring_kind: package.planned_scoring_kind(),
    };
    let mut writer = ctx.store.begin_episode(&episode.key, &meta)?;
    let infra = |message: String, deterministic: bool| Failure {
        class: ErrorClass::Infrastructure,
        message,
        stderr_tail: String::new(),
        deterministic,
    };
    let mut agent = match ctx.agents.make(agent_ref, episode, package) {
        Ok(agent) => agent,
        Err(e) => return Ok(Attempt::Failed { writer: Box::new(writer), failure: infra(format!("agent: {e}"), e.deterministic) }),
    };
    let mut user = match ctx.users.make(ctx.inputs.user, episode, package) {
        Ok(user) => user,
        Err(e) => return Ok(Attempt::Failed { writer: Box::new(writer), failure: infra(format!("user: {e}"), e.deterministic) }),
    };
    // The run's replaced system prompts, as stored with the agent (`--prompts DIR`).
    let prompts = match Replacements::from_config(&agent_ref.config) {
        Ok(prompts) => prompts,
        Err(e) => return Ok(Attempt::Failed { writer: Box::new(writer), failure: infra(format!("agent: {e}"), true) }),
    };
    let budgets = match &ctx.options.protocol {
        Some(protocol) => Budgets::resolve_under(protocol, &episode.condition, &package.manifest().budget, &ctx.options.budget_flags),
        None => Budgets::resolve(&episode.condition, &package.manifest().budget, &ctx.options.budget_flags),
    };
    let workdir = ctx.work_dir.join(format!("{}-{}", episode.id, writer.attempt()));
    if let Err(e) = fs_err::create_dir_all(&workdir) {
        return Ok(Attempt::Failed {
            writer: Box::new(writer),
            failure: infra(format!("cannot create the episode directory: {e}"), false),
        });
    }
    let episode_ctx = EpisodeContext {
        episode_id: &episode.id,
        package,
        condition: &episode.condition,
        start: &episode.start,
        agent_spec: agent_ref.label(),
        prompts: &prompts,
        budgets,
        sandbox: &ctx.sandbox,
        bases: &ctx.bases,
        workdir: &workdir,
        seed: ctx.options.seed,
        repeat: episode.key.repeat,
        start_results: &ctx.start_results,
        host_views: &ctx.host_views,
        gold_checks: &ctx.gold_checks,
        eval_retries: ctx.options.retries,
        stop: Some(&ctx.options.stop),
    };
    let result = run_episode(&episode_ctx, agent.as_mut(), user.as_mut(), &mut writer);
    // The workspace and frozen submissions are scratch: the store has the diffs.
    if let Err(e) = fs_err::remove_dir_all(&workdir) {
        tracing::warn!("cannot remove episode directory: {e}");
    }
    match result {
        Ok(outcome) => {
            let summary = outcome.summary();
            let status = summary.status;
            writer.finish(summary)?;
            Ok(Attempt::Ended { status, end_reason: outcome.end_reason })
        }
        Err(EpisodeError::Store(e)) => Err(RunnerError::Store(e)),
        Err(EpisodeError::Evaluation { message, stderr_tail, deterministic }) => Ok(Attempt::Failed {
            writer: Box::new(writer),
            failure: Failure { class: ErrorClass::Evaluation, message, stderr_tail, deterministic },
        }),
        Err(error @ EpisodeError::Infrastructure { .. }) => {
            let deterministic = error.deterministic();
            Ok(Attempt::Failed { writer: Box::new(writer), failure: infra(specgap_protocol::text::error_chain(&error), deterministic) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(message: &str, tail: &str) -> Failure {
        Failure { class: ErrorClass::Evaluation, message: message.into(), stderr_tail: tail.into(), deterministic: false }
    }

    #[test]
    fn repeated_evaluation_error_is_deterministic() {
        let first = eval("evaluator exited with status 1", "boom");
        assert!(!first.is_deterministic_after(None));
        assert!(eval("evaluator exited with status 1", "boom").is_deterministic_after(Some(&first)));
        assert!(!eval("evaluator exited with status 1", "boom 2").is_deterministic_after(Some(&first)));
        let infra = Failure { class: ErrorClass::Infrastructure, ..first.clone() };
        assert!(!infra.is_deterministic_after(Some(&first)), "a repeat must be of the same class");
        let said = Failure { deterministic: true, ..infra };
        assert!(said.is_deterministic_after(None));
    }

    fn infra(message: &str) -> Failure {
        Failure { class: ErrorClass::Infrastructure, message: message.into(), stderr_tail: String::new(), deterministic: false }
    }

    #[test]
    fn repeated_infrastructure_error_of_any_role_is_deterministic() {
        let first = infra(
            "infrastructure error: user: the user model service failed: model service failed after 2 attempts; last fault: http 500: boom",
        );
        assert!(!first.is_deterministic_after(None));
        assert!(first.clone().is_deterministic_after(Some(&first)));
        let empty = infra("infrastructure error: user: the user model gave an empty reply 3 times");
        assert!(empty.is_deterministic_after(Some(&empty.clone())));
        assert!(!empty.is_deterministic_after(Some(&first)));
        let port = |p: u16| infra(&format!("infrastructure error: agent: cannot connect to the model service at http://127.0.0.1:{p}/v1"));
        assert!(port(4001).is_deterministic_after(Some(&port(4002))), "numbers are masked");
        let other = infra(
            "infrastructure error: user: the user model service failed: model service failed after 2 attempts; last fault: the request timed out",
        );
        assert!(!other.is_deterministic_after(Some(&first)));
    }

    #[test]
    fn errors_that_differ_only_by_numbers_or_temporary_names_repeat() {
        let first = eval("evaluator exited with status 1", "File \"/tmp/tmpab12_x9/conftest.py\", line 12\npid 4711 took 0.52 s");
        let second = eval("evaluator exited with status 1", "File \"/tmp/tmpQz9k3w1/conftest.py\", line 12\npid 4790 took 0.61 s");
        assert!(second.is_deterministic_after(Some(&first)));
        let other = eval("evaluator exited with status 1", "File \"/tmp/tmpQz9k3w1/other.py\", line 12\npid 4790 took 0.61 s");
        assert!(!other.is_deterministic_after(Some(&first)));
        assert_eq!(attempt_independent("/dev/shm/specgap-run-31-Xy8QwE/e-1: 404 tmpfile tmp"), "/dev/shm/TMP/e-#: # tmpfile tmp");
        assert_eq!(attempt_independent("attempt2 x9 tmp.Ab3dE9xQ"), "attempt# x# TMP");
    }

    #[test]
    fn work_dir_names_carry_the_owner_pid() {
        use specgap_sandbox::scratch::owner_pid;
        assert_eq!(owner_pid("specgap-run-4242-Ab12cd", WORK_DIR_PREFIX), Some(4242));
        assert_eq!(owner_pid("specgap-run-Ab12cd", WORK_DIR_PREFIX), None);
        assert_eq!(owner_pid("specgap-run-4242-", WORK_DIR_PREFIX), None);
        assert_eq!(owner_pid("other-4242-x", WORK_DIR_PREFIX), None);
    }

    #[test]
    fn stale_work_dirs_of_dead_runners_are_removed() {
        use specgap_sandbox::scratch::owner_pid;
        let parent = tempfile::tempdir().unwrap();
        // pid_max is at most 2^22, so this pid cannot be alive.
        let stale = parent.path().join("specgap-run-99999999-abc");
        let live = parent.path().join(format!("specgap-run-{}-abc", std::process::id()));
        let other = parent.path().join("specgap-run-notes");
        for dir in [&stale, &live, &other] {
            fs_err::create_dir_all(dir.join("ws")).unwrap();
        }
        let made = make_work_dir(Some(parent.path())).unwrap();
        assert!(!stale.exists());
        assert!(live.exists() && other.exists());
        let name = made.path().file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(owner_pid(&name, WORK_DIR_PREFIX), Some(std::process::id()));
    }

    #[test]
    fn stat_fields_after_odd_command_names() {
        let stat = "4242 (sh) x (y)) S 100 4242 4242 0 -1 4194560";
        assert_eq!(parent_and_group(stat), Some((100, 4242)));
        assert_eq!(parent_and_group("1 (init) S 0 1 1"), Some((0, 1)));
        assert_eq!(parent_and_group("garbage"), None);
    }

    fn spending_options(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> RunOptions {
        RunOptions {
            jobs: 1,
            retries: 0,
            sandbox: false,
            budget_flags: BudgetFlags::default(),
            protocol: None,
            seed: 0,
            stop: Arc::default(),
            work_root: None,
            rerun_eval_errors: false,
            max_cost_usd,
            max_tokens,
            cpu_per_sandbox: CpuPerSandbox::Off,
        }
    }

    #[test]
    fn spending_limits_pass_only_above_and_cost_is_named_first() {
        let spent = specgap_protocol::event::Usage {
            input_tokens: 500,
            output_tokens: 100,
            cached_tokens: 40,
            reasoning_tokens: 5,
            cost_usd: 0.0006,
            ..Default::default()
        };
        assert!(passed_limit(&spending_options(None, None), &spent).is_none());
        // Cached and reasoning tokens are inside input and output: 600, not 645.
        assert!(passed_limit(&spending_options(None, Some(600)), &spent).is_none());
        let tokens = passed_limit(&spending_options(Some(0.0006), Some(599)), &spent).unwrap();
        assert_eq!(tokens.limit, SpendingLimit::Tokens);
        assert_eq!(
            tokens.note(2),
            "the run's prompt + completion tokens are 600, above --max-tokens 599: no further episodes start (2 not started; running ones finish). Continue later with --resume and a higher --max-tokens"
        );
        let cost = passed_limit(&spending_options(Some(0.0005), Some(599)), &spent).unwrap();
        assert_eq!(cost.limit, SpendingLimit::Cost);
        assert_eq!(
            cost.note(1),
            "the run's model cost is $0.0006, above --max-cost $0.0005: no further episodes start (1 not started; running ones finish). Continue later with --resume and a higher --max-cost"
        );
    }

    #[test]
    fn which_statuses_run() {
        assert!(needs_running(None, false));
        assert!(needs_running(Some(Status::Running), false));
        assert!(needs_running(Some(Status::Interrupted), false));
        assert!(needs_running(Some(Status::InfraError), false));
        assert!(!needs_running(Some(Status::EvalError), false));
        assert!(needs_running(Some(Status::EvalError), true));
        assert!(!needs_running(Some(Status::Finished), true));
    }
}
