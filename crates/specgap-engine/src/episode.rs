//! One episode (DESIGN §3): materialize, open, loop, end.
//!
//! [`run_episode`] is the public entry. It drives one attempt of one episode: it writes
//! every event to the [`EpisodeWriter`], records submissions, questions and usage, and
//! returns an [`EpisodeOutcome`] for the runner to `finish` the writer with, or an
//! [`EpisodeError`]: an infrastructure error the runner may retry from a fresh
//! materialization, or an evaluation error left after the frozen state was re-evaluated
//! ([`crate::evaluation`]). Errors are never scored.
//!
//! # End rules (DESIGN §3.5), as implemented
//!
//! * **Submissions**: a successful submission ends with `accepted`; any submission under a
//!   condition without feedback ends with `submitted`; otherwise the user gets consequence
//!   feedback ([`crate::feedback`]) unless that was the last submission
//!   (`submission_budget`).
//! * **Stages** (a package with `[stages]`, Harbor's `[[steps]]`; docs/writing-tasks.md
//!   "Stages"): submission k answers stage k and is evaluated with `SPECGAP_STAGE=k`. Then,
//!   under every condition, the episode ends `submitted` after the last stage or after a stage
//!   before the last that fell short of its `min_reward` (its Score, or a key of the result's
//!   `rewards` under a per-key table: [`stage_shortfall`]; the `end` detail names it,
//!   [`stage_stop_detail`]); otherwise stage k+1's instruction is a `stage` user message after
//!   the turn's results. A stage's success ends nothing, no feedback is asked for, the
//!   submission budget does not apply, and an end that submits automatically submits the open
//!   stage even when the workspace is unchanged. The store aggregates the stage Scores
//!   (`EpisodeWriter::aggregate_stages`).
//! * **Budgets**: the turn budget is checked after each turn (an agent gets exactly `turns`
//!   turns); the tool-call budget after each charged call (exactly `tool_calls` calls run;
//!   calls that are not run are not charged, see *Batched turns*); the wall
//!   budget before each turn, when each reply arrives, after each call and after each user
//!   reply. Commands' timeouts are capped by the remaining wall time, and the agent and user
//!   get the episode's [`Deadline`] ([`crate::session::SessionLink`]): a model request in
//!   flight when the wall budget ends is abandoned ([`AgentReply::Abandoned`],
//!   [`UserError::abandoned`]) and the episode ends with `wall_budget`; a reply that arrives
//!   after the budget ended is recorded but none of its calls run. A stop request (Ctrl-C)
//!   abandons requests the same way and ends the episode `interrupted`.
//! * **Usage**: the agent and user write every model request's usage to the store as it
//!   completes, through their [`UsageSink`]s; the engine records none itself, except the
//!   [`Agent::usage`] of an agent that never used its sink, once at the end.
//! * **Loops**, each only under a protocol that has the rule ([`Budgets::rules`], from
//!   `specgap_rules::EndRules`; the counts below are seed 000's, `tiganeval`): the 4th consecutive identical call (same tool, same arguments, compared as
//!   JSON values; `submit` neither counts nor breaks the run) is not run and ends with
//!   `loop_repeated_call`; the 4th consecutive call that is a `run_experiment` / `bash` which
//!   exits 0 with blank stdout and stderr runs, then ends with `loop_blank_output` (any other
//!   call in between breaks the run); the 4th consecutive `ask_user` under an owner
//!   condition (calls, not questions) is not answered and ends with `loop_ask_user`; under a
//!   delivery condition a round beyond the clarification-round limit gets [`PROCEED_REPLY`] (or the run's `round_limit_reply.md`)
//!   and the episode goes on (a `budget` event `clarification_rounds` marks the first).
//!   Two consecutive replies without a tool call end with `no_tool_call` under `fde-bench`
//!   (the first gets a reminder; without the rule every such reply gets [`NO_TOOL_REMINDER_GOES_ON`]; under delivery conditions the text channel below comes first); three consecutive refusals end with `refusals`; context overflow ends at
//!   once. Feedback resets every consecutive counter; an answer resets the identical-call
//!   and blank-output counters (not the question counter, which the answers themselves
//!   would otherwise always reset).
//! * **Batched turns** (seed 000 App. F.1): the calls of a turn run in order; an offered
//!   `submit`, `ask_user` or `write_plan` ends the turn, so the calls after it get "not run"
//!   results and are charged to no budget (nor to the loop counters). The 4th identical call
//!   is not run either.
//! * **Plan mode** (seed 000 §5.4, App. F.3): the planning phase offers no editing tools and no
//!   `submit` (a call to one is an unknown tool), and it is read-only: its commands
//!   (`run_experiment`, `bash`, `run_project`) run in a sandbox of their own whose workspace is
//!   mounted read-only (`sandbox_ops::planning_session`), so nothing written while planning is
//!   delivered (scripted calibration agents are not held by the phases); a successful `write_plan` saves PLAN.md and
//!   begins the execution phase ([`PhaseChange`]: the execution prompt and the full toolset),
//!   recorded as a `phase_change` event after the call's result and handed to the agent with
//!   [`Agent::change_phase`] (an agent that does not take it gets the prompt in the result).
//! * **Automatic submission**: every end except `accepted`, `submitted`,
//!   `submission_budget` and `interrupted` submits the current workspace when its diff
//!   against the base differs from the last submission's (or the starting state's), with
//!   `automatic = true`; it is evaluated and scored like any other and gets no feedback. When
//!   the workspace is unchanged no submission is made and the `end` event's detail says so
//!   ([`unchanged_at_end`]).
//! * Calls left in a turn after the episode ended get an error result saying they did not
//!   run, so every call has exactly one result in the trajectory.
//! * **Delivery text channel** ([`crate::text_channel`], seed 002 A.9.3): under delivery
//!   conditions that offer `ask_user`, questions under a `## Questions for the client`
//!   heading (any turn), or the question sentences of a reply without a tool call while no
//!   file matches `[delivery].artifact`, are answered one by one by the user, recorded like
//!   `ask_user` questions, and returned as one `answer` message after the turn's tool
//!   results; each such message is one clarification round, as one `ask_user` call is (a
//!   `question` or a `questions` list). Past the limit the round gets [`PROCEED_REPLY`]; in a
//!   reply without a tool call it counts toward the `no_tool_call` end. An answered exchange
//!   resets the no-tool-call counter. Under `interact-req+gate=on` (the optional hard gate),
//!   once a question was answered, a reply without a tool call and without a question mark
//!   unlocks the work like an `ask_user` statement. Under every
//!   delivery condition, a reply without a tool call and without a question, while no
//!   deliverable exists, gets a `continuation` message instead of the reminder, at most
//!   three times per episode; the no-tool-call rule applies after that.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use specgap_protocol::event::{EventKind, ToolCall, Usage, UserMessageKind};
use specgap_protocol::reads::Observation;
use specgap_protocol::result::{EvalResult, Scored};
use specgap_protocol::run::EndReason;
use specgap_sandbox::{Base, BaseCache, HostView, Reads, SandboxConfig, Session, Shell};
use specgap_store::{EpisodeWriter, Role, StoreError, SubmissionRecord};
use specgap_task::TaskPackage;
use specgap_task::matching::linked_targets;

use crate::condition::{Ask, Budgets, Condition, Start};
use crate::confine::WorkspaceRoot;
use crate::detector::{QuestionDetector, ReplyText, SentenceRule};
use crate::evaluation::{self, Evaluated, GoldChecks};
use crate::feedback::{Escalation, NO_OBSERVATION, failing_requirement};
use crate::lock;
use crate::machine::{EpisodeMachine, MachineSnapshot};
use crate::prompt_files::{self, Replacements};
use crate::prompts::{opening_message, system_prompts_with};
use crate::sandbox_ops::{self, CommandResult};
use crate::session::{
    Agent, AgentError, AgentReply, Deadline, Incoming, Opening, PhaseChange, Question, Reply, SessionLink, UsageSink, User, UserError,
};
use crate::text_channel::{self, CONTINUATION_LIMIT};
use crate::tools::{self, ToolOutput, names};

mod self_driven;
mod stages;

/// Evaluations of residual starting states, keyed by (task hash, state id), shared across the
/// episodes of a run so each state is evaluated once.
pub type StartResults = Arc<Mutex<HashMap<(String, String), EvalResult>>>;

/// Shared cache of resolved `[environment]` host views, keyed by package content hash:
/// resolving runs version-manager lookups and writes the synthetic `/etc`, so a run does it
/// once per package rather than once per episode.
pub type HostViews = Arc<Mutex<HashMap<String, HostView>>>;

/// `four` for 4 (the papers' counts in words), digits beyond ten.
pub(crate) fn count_word(n: u32) -> String {
    const WORDS: [&str; 11] = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    WORDS.get(n as usize).map_or_else(|| n.to_string(), |w| (*w).to_string())
}

/// `fourth` for 4, `11th` beyond ten.
pub(crate) fn ordinal_word(n: u32) -> String {
    const WORDS: [&str; 11] = ["zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"];
    WORDS.get(n as usize).map_or_else(|| format!("{n}th"), |w| (*w).to_string())
}

/// Whether a loop rule with count `limit` (`None`: the protocol has no such rule) is reached
/// by `count` consecutive occurrences. The counts are the protocol's
/// ([`specgap_rules::EndRules`], carried in [`Budgets::rules`]).
pub(crate) fn reached(limit: Option<u32>, count: u32) -> bool {
    limit.is_some_and(|n| count >= n)
}

/// The harness's reminder after a reply without a tool call, under a protocol whose
/// no-tool-call rule ends the episode on the next one.
pub const NO_TOOL_REMINDER: &str = "Your last reply called no tool. Continue the work by calling a tool; when you \
    are done, deliver with submit. Another reply without a tool call ends the work.";
/// The reminder after a reply without a tool call under a protocol without that end rule
/// (seed 000 lists none): the work goes on.
pub const NO_TOOL_REMINDER_GOES_ON: &str =
    "Your last reply called no tool. Continue the work by calling a tool; when you are done, deliver with submit.";
/// The `end` event's detail when the agent's model request was abandoned at the deadline.
pub const AGENT_ABANDONED: &str = "the agent's model request in flight was abandoned";
/// The `end` event's detail when the agent was halted at the deadline (or a stop) with no
/// model request in flight ([`AgentReply::Halted`]).
pub const AGENT_HALTED: &str = "the agent was halted with no model request in flight";
/// The `end` event's detail when the user's reply was abandoned at the deadline.
pub const USER_ABANDONED: &str = "the user's reply in flight was abandoned";

/// The result of a successful `write_plan` (followed by the execution-phase prompt for an
/// agent that did not take the [`PhaseChange`] itself).
pub const PLAN_SAVED: &str = "Plan saved to PLAN.md. The execution phase begins now: editing files and `submit` are \
    available, and the system prompt of the execution phase applies.";

/// The harness's reminder after a refusal.
pub const REFUSAL_REMINDER: &str = "Please continue the work with the tools you have.";
/// The customer's reply to questions past the clarification-round limit, on both channels
/// (seed 002 A.9.3 has the customer tell the agent to proceed; these are our words).
pub const PROCEED_REPLY: &str =
    "That is as much as I can clarify for now. Please carry on with the work and use your best judgement on anything still open.";
/// The `ask_user` result that unlocks work under `interact-req+gate=on`.
pub const UNLOCK_ACKNOWLEDGEMENT: &str = "Understood. Editing, running commands and submitting are now available; go ahead with the work.";

/// Everything one episode attempt needs besides the agent, the user and the writer.
#[derive(Debug, Clone, Copy)]
pub struct EpisodeContext<'a> {
    /// Episode id (for the `episode_start` event).
    pub episode_id: &'a str,
    /// The task.
    pub package: &'a TaskPackage,
    /// The condition.
    pub condition: &'a Condition,
    /// Where the episode starts.
    pub start: &'a Start,
    /// The agent spec, as recorded in `episode_start`.
    pub agent_spec: &'a str,
    /// The run's replaced system prompts ([`crate::prompt_files`]; none for specgap's own).
    pub prompts: &'a Replacements,
    /// Resolved budgets ([`Budgets::resolve`]).
    pub budgets: Budgets,
    /// Sandbox settings for every command and evaluator run.
    pub sandbox: &'a SandboxConfig,
    /// The harness's own base copies of clean workspaces.
    pub bases: &'a BaseCache,
    /// A fresh directory for this attempt; the workspace and frozen submissions go inside.
    pub workdir: &'a Path,
    /// Run seed.
    pub seed: u64,
    /// 0-based repeat (seeds the `oracle:R` subset).
    pub repeat: u32,
    /// Shared cache of residual-start evaluations.
    pub start_results: &'a StartResults,
    /// Shared cache of host views.
    pub host_views: &'a HostViews,
    /// Shared cache of gold checks (the attribution of evaluator failures, [`crate::evaluation`]).
    pub gold_checks: &'a GoldChecks,
    /// Re-evaluations of a frozen state after an evaluation error (the run's retry limit).
    pub eval_retries: u32,
    /// The run's stop request: when set, the episode ends as `interrupted` before its next
    /// turn, and model requests in flight are abandoned (it is part of the [`Deadline`]).
    pub stop: Option<&'a Arc<AtomicBool>>,
}

/// One evaluated submission.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionOutcome {
    /// 1-based submission number.
    pub k: u32,
    /// The automatic final submission of a budget or loop end.
    pub automatic: bool,
    /// Score and Success by the task's scoring kind.
    pub scored: Scored,
    /// The highest-priority failing requirement, if any.
    pub failing_requirement: Option<String>,
}

/// How an episode attempt ended (the runner turns it into `EpisodeSummary`).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeOutcome {
    /// Why it ended.
    pub end_reason: EndReason,
    /// Evaluated submissions, in order.
    pub submissions: Vec<SubmissionOutcome>,
    /// Agent turns taken.
    pub turns: u32,
    /// Tool calls charged to the budget: every call that was run or answered with a tool
    /// error; calls that were not run (after a turn-ending call, the 4th identical call, after
    /// the end) are not charged.
    pub tool_calls: u32,
    /// Questions answered.
    pub questions: u32,
    /// Wall-clock duration in milliseconds.
    pub wall_ms: u64,
    /// The agent's usage.
    pub agent_usage: Usage,
}

impl EpisodeOutcome {
    /// The store summary of a finished episode.
    pub fn summary(&self) -> specgap_store::EpisodeSummary {
        let status =
            if self.end_reason == EndReason::Interrupted { specgap_store::Status::Interrupted } else { specgap_store::Status::Finished };
        specgap_store::EpisodeSummary {
            status,
            end_reason: Some(self.end_reason),
            turns: self.turns,
            tool_calls: self.tool_calls,
            wall_ms: self.wall_ms,
            error: None,
        }
    }
}

/// Why an attempt failed without a score (DESIGN §3 "Infrastructure failures").
#[derive(Debug, thiserror::Error)]
pub enum EpisodeError {
    /// The evaluator did not produce a valid `result.json` (DESIGN §2).
    #[error("evaluation error: {message}")]
    Evaluation {
        /// What went wrong.
        message: String,
        /// Tail of the evaluator's stderr.
        stderr_tail: String,
        /// Whether a retry cannot help.
        deterministic: bool,
    },
    /// The sandbox, the agent service or the user service failed.
    #[error("infrastructure error: {message}")]
    Infrastructure {
        /// What went wrong.
        message: String,
        /// Whether a retry cannot help.
        deterministic: bool,
        /// The cause.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The store could not record the episode (fatal for the run).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EpisodeError {
    /// An infrastructure error with a cause.
    pub fn infrastructure(message: impl Into<String>, deterministic: bool, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        EpisodeError::Infrastructure { message: message.into(), deterministic, source: Some(Box::new(source)) }
    }

    /// Whether the failure says a retry cannot help.
    pub fn deterministic(&self) -> bool {
        match self {
            EpisodeError::Evaluation { deterministic, .. } | EpisodeError::Infrastructure { deterministic, .. } => *deterministic,
            EpisodeError::Store(_) => true,
        }
    }

    /// The end reason recorded for this error.
    pub fn end_reason(&self) -> EndReason {
        match self {
            EpisodeError::Evaluation { .. } => EndReason::EvaluationError,
            _ => EndReason::InfrastructureError,
        }
    }

    /// The store's error class, `None` for a store failure (which is not an attempt error).
    pub fn class(&self) -> Option<specgap_store::ErrorClass> {
        match self {
            EpisodeError::Evaluation { .. } => Some(specgap_store::ErrorClass::Evaluation),
            EpisodeError::Infrastructure { .. } => Some(specgap_store::ErrorClass::Infrastructure),
            EpisodeError::Store(_) => None,
        }
    }

    /// The stderr tail, when the error has one.
    pub fn stderr_tail(&self) -> &str {
        match self {
            EpisodeError::Evaluation { stderr_tail, .. } => stderr_tail,
            _ => "",
        }
    }
}

impl From<AgentError> for EpisodeError {
    fn from(e: AgentError) -> Self {
        EpisodeError::Infrastructure { message: format!("agent: {}", e.message), deterministic: e.deterministic, source: Some(Box::new(e)) }
    }
}

impl From<UserError> for EpisodeError {
    /// A user failure as an infrastructure error (an abandoned reply never gets here: the
    /// engine turns it into the end of the episode).
    fn from(e: UserError) -> Self {
        EpisodeError::Infrastructure { message: format!("user: {}", e.message), deterministic: e.deterministic, source: Some(Box::new(e)) }
    }
}

/// Writes what the agent's surroundings recorded since the last time
/// ([`Agent::records_since_last`]), each event stamped with the moment it happened.
fn write_agent_records(agent: &mut dyn Agent, writer: &mut EpisodeWriter) -> Result<(), StoreError> {
    for (at, record) in agent.records_since_last() {
        writer.event_at(record, at)?;
    }
    Ok(())
}

/// After [`Agent::stop`]: the last of [`write_agent_records`], then the agent's closing records.
fn write_closing_records(agent: &mut dyn Agent, writer: &mut EpisodeWriter) -> Result<(), StoreError> {
    write_agent_records(agent, writer)?;
    for record in agent.closing_records() {
        writer.event(record)?;
    }
    Ok(())
}

/// Runs one episode attempt (module guide). The writer is not finished here: on `Ok` the
/// runner calls `writer.finish(outcome.summary())`; on `Err` it records the error and
/// retries or finishes with an error status. An `error` event and an `end` event are written
/// to the trajectory either way.
///
/// # Errors
/// [`EpisodeError::Evaluation`] when an evaluation fails, [`EpisodeError::Infrastructure`]
/// when the sandbox, agent or user fails, [`EpisodeError::Store`] when the store fails.
pub fn run_episode(
    ctx: &EpisodeContext<'_>,
    agent: &mut dyn Agent,
    user: &mut dyn User,
    writer: &mut EpisodeWriter,
) -> Result<EpisodeOutcome, EpisodeError> {
    let started = Instant::now();
    let links = Links::new(ctx, started, writer);
    agent.attach(&links.agent);
    user.attach(&links.user);
    if let Some(detector) = user.detector() {
        detector.attach(&links.detector);
    }
    let result = Episode::open(ctx, agent, user, writer, started, &links).and_then(|mut episode| episode.run());
    // Whatever still serves the episode (a gateway request, an external agent's program)
    // stops now, on every path.
    links.agent.deadline.abandon();
    agent.stop(&[]);
    links.check_usage()?;
    let usage = agent.usage();
    if !links.agent.usage.is_used() && usage != Usage::default() {
        // An agent that does not use its sink: its usage is stored once, at the end.
        writer.record_usage(Role::Agent, &usage)?;
    }
    match result {
        Ok(mut outcome) => {
            outcome.agent_usage = usage;
            Ok(outcome)
        }
        Err(error) => {
            if !matches!(error, EpisodeError::Store(_)) {
                // What the agent's surroundings recorded (a `cli:` agent's network attempts)
                // happened whatever ended the episode; `end` writes it on the other paths.
                write_closing_records(agent, writer)?;
                let class = match error {
                    EpisodeError::Evaluation { .. } => "evaluation",
                    _ => "infrastructure",
                };
                writer.event(EventKind::Error {
                    class: class.into(),
                    message: specgap_protocol::text::error_chain(&error),
                    stderr_tail: error.stderr_tail().to_string(),
                })?;
                writer.event(EventKind::End { reason: error.end_reason().as_str().into(), detail: String::new() })?;
            }
            Err(error)
        }
    }
}

/// The [`SessionLink`]s of the agent and the user: one deadline (wall budget and stop
/// request), one usage sink per role writing to this attempt's `usage` rows.
struct Links {
    agent: SessionLink,
    user: SessionLink,
    detector: SessionLink,
}

impl Links {
    fn new(ctx: &EpisodeContext<'_>, started: Instant, writer: &EpisodeWriter) -> Self {
        let at = started.checked_add(Duration::from_secs(ctx.budgets.wall_sec));
        let mut deadline = at.map_or_else(Deadline::none, Deadline::at);
        if let Some(stop) = ctx.stop {
            deadline = deadline.with_stop(Arc::clone(stop));
        }
        let link = |role| SessionLink { deadline: deadline.clone(), usage: UsageSink::to_store(role, writer.usage_recorder()) };
        Links { agent: link(Role::Agent), user: link(Role::User), detector: link(Role::Detector) }
    }

    /// The first store failure of a usage record, as the episode's store error.
    fn check_usage(&self) -> Result<(), EpisodeError> {
        let failure = self.agent.usage.take_failure().or_else(|| self.user.usage.take_failure());
        match failure.or_else(|| self.detector.usage.take_failure()) {
            Some(error) => Err(EpisodeError::Store(error)),
            None => Ok(()),
        }
    }
}

/// Consecutive counters of the loop rules.
#[derive(Debug, Default)]
struct Counters {
    last_call: Option<(String, Value)>,
    identical: u32,
    blank: u32,
    asks: u32,
    no_tool: u32,
    refusals: u32,
}

impl Counters {
    fn owner_answered(&mut self) {
        self.last_call = None;
        self.identical = 0;
        self.blank = 0;
    }

    fn owner_feedback(&mut self) {
        *self = Counters::default();
    }
}

/// How a clarification round went.
enum Round {
    /// Every question was answered: (question, answer) pairs and the user's summed usage.
    Answered { pairs: Vec<(String, String)>, usage: Option<Usage> },
    /// The episode ended during the round.
    Ended(EndReason),
}

/// What a dispatched call did besides its result text.
#[derive(Debug, Default)]
struct Effect {
    /// The call ended the episode.
    end: Option<EndReason>,
    /// A command that exited 0 with blank output.
    blank_success: bool,
    /// An answered `ask_user` question.
    answered: bool,
    /// Feedback to deliver after the turn's results.
    feedback: Option<String>,
    /// The files a command read (a `file_reads` event, written after its result).
    file_reads: Option<EventKind>,
    /// A staged task's next instruction, delivered after the turn's results.
    next_stage: Option<String>,
}

/// The view an episode starts on: the task's, with a whole-machine residual state's layer over
/// its image when the episode starts from one.
fn start_view(ctx: &EpisodeContext<'_>, task: HostView) -> Result<HostView, EpisodeError> {
    let Start::Residual(id) = ctx.start else { return Ok(task) };
    match ctx.package.residual(id).and_then(|state| state.machine.as_deref()) {
        Some(layer) => crate::machine::layered_view(&task, layer),
        None => Ok(task),
    }
}

struct Episode<'c, 'a> {
    ctx: &'c EpisodeContext<'a>,
    links: &'c Links,
    agent: &'c mut dyn Agent,
    user: &'c mut dyn User,
    writer: &'c mut EpisodeWriter,
    started: Instant,
    /// The view the evaluator and the gold check run on: the task's (a residual state's
    /// machine layer over its image included), never the agent's machine.
    host: HostView,
    /// The view the agent's commands run on: `host`, or `host` on the episode's machine.
    command_host: HostView,
    /// An image episode's copy-on-write machine ([`crate::machine`]).
    machine: Option<EpisodeMachine>,
    /// Why the workspace passed a cap ([`specgap_sandbox::quota`]), once it did: the episode
    /// then ends `workspace_limit` and this is its `end` event's detail.
    over_cap: Option<String>,
    /// The sandbox every command of the episode runs in (built by the first command).
    session: Session,
    /// Plan mode, until `write_plan` succeeds: the planning phase's sandbox, whose workspace is
    /// read-only ([`sandbox_ops::planning_session`]); its commands run there instead.
    planning_session: Option<Session>,
    base: Base,
    ws_dir: PathBuf,
    ws: WorkspaceRoot,
    /// The tools offered now (the planning phase's, then the execution phase's, in plan mode).
    offered: Vec<String>,
    /// Every tool of the episode's phases: what scripted calibration agents may call at any
    /// time (they are not held by plan mode's phases).
    every_phase_tools: Vec<String>,
    /// Plan mode: the execution phase that a successful `write_plan` begins.
    execution: Option<PhaseChange>,
    /// A phase change made by the call being dispatched, recorded after its result.
    phase_changed: Option<PhaseChange>,
    turns: u32,
    tool_calls: u32,
    questions: u32,
    /// Model requests of the user recorded so far (`user_request` events).
    user_requests: u32,
    /// Clarification rounds used: agent turns whose questions (`ask_user` calls and
    /// text-channel exchanges) were answered, each turn once.
    clarification_rounds: u32,
    /// The agent turn of the last clarification round counted (its other questions join it).
    round_turn: Option<u32>,
    /// Whether a question came past the round limit (its `budget` event is written once).
    round_limit_reached: bool,
    /// Continuation messages sent (delivery text channel).
    continuations: u32,
    counters: Counters,
    plan_written: bool,
    asked_before_unlock: u32,
    unlocked: bool,
    escalation: Escalation,
    last_diff: Vec<u8>,
    last_result: Option<EvalResult>,
    submissions: Vec<SubmissionOutcome>,
    inbox: Vec<Incoming>,
    /// Whose request was abandoned at the deadline, for the `end` event's detail.
    abandoned: Option<&'static str>,
    /// Why a staged task ended before its last stage (a `min_reward` stop), for the `end`
    /// event's detail.
    stage_stop: Option<String>,
    /// What the engine keeps about an agent that drives itself.
    driven: self_driven::Driven,
}

/// Whether questions in the reply text are answered under `condition`: delivery conditions
/// that offer `ask_user` (seed 002 A.9.3).
fn text_questions_offered(condition: &Condition) -> bool {
    condition.is_delivery() && condition.ask() != Ask::Off
}

impl<'c, 'a> Episode<'c, 'a> {
    fn open(
        ctx: &'c EpisodeContext<'a>,
        agent: &'c mut dyn Agent,
        user: &'c mut dyn User,
        writer: &'c mut EpisodeWriter,
        started: Instant,
        links: &'c Links,
    ) -> Result<Self, EpisodeError> {
        let package = ctx.package;
        if ctx.condition.is_plan() && agent.drives_itself() {
            // Its own tools would write during the planning phase, which must be read-only
            // (seed 000 App. F.3); the runner plans no such episode (`plan` is not applicable to
            // `cli:` agents), so reaching here is a harness error, never a silent writable phase.
            return Err(EpisodeError::Infrastructure {
                message: "plan mode needs an agent the harness holds to its phases; an agent that drives itself has tools of its own"
                    .into(),
                deterministic: true,
                source: None,
            });
        }
        let route = agent.ask_route(text_questions_offered(ctx.condition));
        let prompts = system_prompts_with(ctx.condition, &ctx.budgets, ctx.prompts, &route);
        let message = opening_message(package, ctx.condition, ctx.seed, ctx.repeat).ok_or_else(|| EpisodeError::Infrastructure {
            message: format!("condition {} does not apply to task {}", ctx.condition, package.name()),
            deterministic: true,
            source: None,
        })?;
        let has_project = package.manifest().project.is_some();
        let mut tools = tools::tool_specs(ctx.condition, &ctx.budgets, has_project);
        tools::describe_with(&mut tools, ctx.prompts, ctx.condition, &ctx.budgets);
        let mut system_prompt = prompts.initial.clone();
        if agent.drives_itself() {
            // An external agent has its own tools; the harness serves it only its own. Under
            // `blind` it keeps its scaffold's prompts: nothing is added (seed 001).
            tools.retain(|t| self_driven::HARNESS_TOOLS.contains(&t.name.as_str()));
            if ctx.condition.preset() == crate::condition::Preset::Blind {
                system_prompt.clear();
            }
        }
        let execution = prompts.execute_phase.map(|system_prompt| PhaseChange {
            phase: "execute".into(),
            system_prompt,
            tools: {
                let mut tools = tools::execution_tool_specs(ctx.condition, &ctx.budgets, has_project);
                tools::describe_with(&mut tools, ctx.prompts, ctx.condition, &ctx.budgets);
                tools
            },
        });
        let opening = Opening { system_prompt, message, tools };
        let mut every_phase_tools: Vec<String> = opening.tools.iter().map(|t| t.name.clone()).collect();
        for tool in execution.iter().flat_map(|e| &e.tools) {
            if !every_phase_tools.contains(&tool.name) {
                every_phase_tools.push(tool.name.clone());
            }
        }
        writer.event(EventKind::EpisodeStart {
            episode: ctx.episode_id.into(),
            task: package.name().into(),
            condition: ctx.condition.canonical(),
            start: ctx.start.canonical(),
            agent: ctx.agent_spec.into(),
            system_prompt: opening.system_prompt.clone(),
            opening_message: opening.message.clone(),
            tools: opening.tools.clone(),
        })?;
        let host = start_view(ctx, sandbox_ops::host_view(ctx)?)?;
        let machine = EpisodeMachine::for_view(&host, ctx.sandbox.enabled)?;
        let command_host = match &machine {
            Some(machine) => machine.view()?,
            None => host.clone(),
        };
        let ws_dir = ctx.workdir.join("workspace");
        let base = sandbox_ops::materialize(ctx, &ws_dir)?;
        let ws =
            WorkspaceRoot::new(&ws_dir).map_err(|e| EpisodeError::infrastructure("cannot open the materialized workspace", false, e))?;
        // A clean start is a copy of the base, so its diff is empty without asking git.
        let last_diff = match ctx.start {
            Start::Clean => Vec::new(),
            Start::Residual(_) => sandbox_ops::diff(&base, &ws_dir)?,
        };
        let session = sandbox_ops::command_session(ctx, &command_host, &ws_dir);
        // Scripted calibration agents are not held by the phases (module guide).
        // protocol: plan mode is seed 000's (§5.4, App. F.3); the read-only planning phase
        // belongs to that protocol, known here by the condition.
        let planning_session =
            (ctx.condition.is_plan() && !agent.allows_harness_actions()).then(|| sandbox_ops::planning_session(ctx, &host, &ws_dir));
        let mut episode = Episode {
            ctx,
            links,
            agent,
            user,
            writer,
            started,
            host,
            command_host,
            machine,
            over_cap: None,
            session,
            planning_session,
            base,
            ws_dir,
            ws,
            offered: opening.tools.iter().map(|t| t.name.clone()).collect(),
            every_phase_tools,
            execution,
            phase_changed: None,
            turns: 0,
            tool_calls: 0,
            questions: 0,
            user_requests: 0,
            clarification_rounds: 0,
            round_turn: None,
            round_limit_reached: false,
            continuations: 0,
            counters: Counters::default(),
            plan_written: false,
            asked_before_unlock: 0,
            unlocked: false,
            escalation: Escalation::default(),
            last_diff,
            last_result: None,
            submissions: Vec::new(),
            inbox: Vec::new(),
            abandoned: None,
            stage_stop: None,
            driven: self_driven::Driven::default(),
        };
        if let Some(stages) = package.stages() {
            episode.writer.aggregate_stages(stages.score);
        }
        if let Start::Residual(id) = ctx.start {
            // The harness's own diff of the state, for seed 001's Kept (docs/store-schema.md).
            episode.writer.write_start_diff(&episode.last_diff)?;
            episode.evaluate_start(id)?;
        }
        if episode.agent.drives_itself() {
            let place = episode.workplace();
            episode.agent.enter(&place)?;
        }
        episode.agent.start(&opening)?;
        Ok(episode)
    }

    fn run(&mut self) -> Result<EpisodeOutcome, EpisodeError> {
        let reason = self.turn_loop()?;
        self.end(reason)
    }

    fn turn_loop(&mut self) -> Result<EndReason, EpisodeError> {
        loop {
            if self.stop_requested() {
                return Ok(EndReason::Interrupted);
            }
            if self.wall_exhausted() {
                return Ok(EndReason::WallBudget);
            }
            let inbox = std::mem::take(&mut self.inbox);
            let reply = self.agent.next_turn(&inbox);
            self.links.check_usage()?;
            // What happened around the agent while it worked goes before what it replied.
            write_agent_records(self.agent, self.writer)?;
            // A reply that comes after the wall budget ended (or a stop) is recorded, not acted on.
            let late = self.deadline_end();
            let ended = match reply? {
                AgentReply::Abandoned => return Ok(self.abandoned_end(AGENT_ABANDONED)),
                AgentReply::Halted => return Ok(self.abandoned_end(AGENT_HALTED)),
                AgentReply::Done => return Ok(EndReason::AgentDone),
                AgentReply::ContextOverflow => return Ok(EndReason::ContextOverflow),
                AgentReply::Refusal { text, usage } => self.refusal(text, usage, late)?,
                AgentReply::Turn { text, tool_calls, usage } => self.turn(text, tool_calls, usage, late)?,
                AgentReply::Observed { results, exchange, turn } => self.observed(results, exchange.map(|e| *e), turn, late)?,
                AgentReply::TurnRequested => self.turn_requested(late),
                AgentReply::HarnessCall { call } => self.harness_call(call, late)?,
                AgentReply::Actions { actions } => self.actions(actions)?,
                AgentReply::FileReads { reads } => self.file_reads_measured(reads)?,
                AgentReply::Exited { text, can_resume, exit } => self.agent_exited(text, can_resume, *exit, late)?,
            };
            if let Some(reason) = ended {
                return Ok(reason);
            }
            if self.workspace_over_cap()? {
                return Ok(EndReason::WorkspaceLimit);
            }
            // An agent driving itself runs its last turn's calls first; its budgets end the
            // episode when it asks for the next turn (`turn_requested`).
            if self.turns >= self.ctx.budgets.turns && !self.agent.drives_itself() {
                return Ok(EndReason::TurnBudget);
            }
        }
    }

    /// Whether the workspace (with the machine's changes) passes a cap of
    /// `budgets.workspace` now; the first time, the reason is kept for the `end` event. Only
    /// file metadata is read (issue 31 item 1).
    fn workspace_over_cap(&mut self) -> Result<bool, EpisodeError> {
        if self.over_cap.is_some() {
            return Ok(true);
        }
        let upper = self.machine.as_ref().map(EpisodeMachine::upper);
        let mut roots = vec![self.ws_dir.as_path()];
        roots.extend(upper.as_deref());
        let over = specgap_sandbox::over_limit(&roots, &self.ctx.budgets.workspace)
            .map_err(|e| EpisodeError::infrastructure("cannot measure the workspace", false, e))?;
        self.over_cap = over;
        Ok(self.over_cap.is_some())
    }

    /// The workspace's patch when it is at most `--max-diff-bytes`, else `None` with the
    /// reason in `over_cap`; a longer patch is counted, never held (issue 31 item 1).
    fn diff_within_cap(&mut self) -> Result<Option<Vec<u8>>, EpisodeError> {
        let cap = self.ctx.budgets.workspace.max_diff_bytes;
        let diff = sandbox_ops::diff_within(&self.base, &self.ws_dir, cap)?;
        // The patch is dropped exactly when it is longer than the cap, so `diff_over` says why.
        self.over_cap = self.ctx.budgets.workspace.diff_over(diff.bytes);
        Ok(diff.patch.filter(|_| self.over_cap.is_none()))
    }

    fn wall_exhausted(&self) -> bool {
        self.links.agent.deadline.passed()
    }

    fn stop_requested(&self) -> bool {
        self.ctx.stop.is_some_and(|s| s.load(Ordering::SeqCst))
    }

    /// The end due now because of the clock or a stop request, if any.
    fn deadline_end(&self) -> Option<EndReason> {
        if self.stop_requested() {
            Some(EndReason::Interrupted)
        } else if self.wall_exhausted() {
            Some(EndReason::WallBudget)
        } else {
            None
        }
    }

    /// The end of an episode whose agent or user abandoned a request at the deadline
    /// (`whose` says which, in the `end` event).
    fn abandoned_end(&mut self, whose: &'static str) -> EndReason {
        self.abandoned = Some(whose);
        if self.stop_requested() { EndReason::Interrupted } else { EndReason::WallBudget }
    }

    fn remaining_wall_sec(&self) -> u64 {
        self.ctx.budgets.wall_sec.saturating_sub(self.started.elapsed().as_secs()).max(1)
    }

    fn refusal(&mut self, text: Option<String>, usage: Option<Usage>, late: Option<EndReason>) -> Result<Option<EndReason>, EpisodeError> {
        self.turns += 1;
        self.writer.event(EventKind::AgentTurn { turn: self.turns, text, tool_calls: Vec::new(), usage })?;
        if late.is_some() {
            return Ok(late);
        }
        self.counters.refusals += 1;
        if reached(self.ctx.budgets.rules.refusals(), self.counters.refusals) {
            return Ok(Some(EndReason::Refusals));
        }
        let text = self.harness_text(&prompt_files::REFUSAL_REMINDER_FILE);
        self.harness_message(UserMessageKind::Reminder, &text)?;
        Ok(None)
    }

    fn harness_message(&mut self, kind: UserMessageKind, text: &str) -> Result<(), EpisodeError> {
        self.writer.event(EventKind::UserMessage { kind, text: text.into(), usage: None })?;
        self.inbox.push(Incoming::UserMessage { kind, text: text.into() });
        Ok(())
    }

    fn turn(
        &mut self,
        text: Option<String>,
        mut calls: Vec<ToolCall>,
        usage: Option<Usage>,
        late: Option<EndReason>,
    ) -> Result<Option<EndReason>, EpisodeError> {
        self.turns += 1;
        for (i, call) in calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("turn-{}-call-{}", self.turns, i + 1);
            }
        }
        self.writer.event(EventKind::AgentTurn { turn: self.turns, text: text.clone(), tool_calls: calls.clone(), usage })?;
        if let Some(reason) = late {
            for call in &calls {
                self.tool_result(call, not_run(reason))?;
            }
            return Ok(late);
        }
        self.counters.refusals = 0;
        let text = text.unwrap_or_default();
        if calls.is_empty() {
            return self.reply_without_call(&text);
        }
        self.counters.no_tool = 0;
        let mut ended: Option<EndReason> = None;
        // Seed 000 App. F.1: `submit`, `ask_user` (and plan mode's `write_plan`) end the turn.
        let mut turn_ended_by: Option<String> = None;
        let mut feedback = None;
        let mut next_stage = None;
        for call in &calls {
            // Calls that are not run get a "not run" result and are charged to no budget.
            if let Some(reason) = ended {
                self.tool_result(call, not_run(reason))?;
                continue;
            }
            if let Some(tool) = turn_ended_by.as_deref().filter(|tool| !self.joins_the_round(tool, call)) {
                self.tool_result(call, not_run_after(tool))?;
                continue;
            }
            if self.repeated(call) {
                let times = self.counters.identical;
                self.tool_result(
                    call,
                    ToolOutput::error(format!("not run: the same call was repeated {} times in a row", count_word(times))),
                )?;
                ended = Some(EndReason::LoopRepeatedCall);
                continue;
            }
            if self.ends_the_turn(call) {
                turn_ended_by = Some(call.tool.clone());
            }
            self.tool_calls += 1;
            let effect = self.dispatch(call)?;
            self.count(call, &effect);
            if effect.feedback.is_some() {
                feedback = effect.feedback;
            }
            if effect.next_stage.is_some() {
                next_stage = effect.next_stage;
            }
            ended = effect.end;
            if ended.is_none() && reached(self.ctx.budgets.rules.blank_output(), self.counters.blank) {
                ended = Some(EndReason::LoopBlankOutput);
            }
            if ended.is_none() && self.tool_calls >= self.ctx.budgets.tool_calls {
                ended = Some(EndReason::ToolCallBudget);
            }
            if ended.is_none() {
                ended = self.deadline_end();
            }
        }
        if let Some(text) = feedback {
            self.inbox.push(Incoming::UserMessage { kind: UserMessageKind::Feedback, text });
        }
        if let Some(text) = next_stage {
            self.inbox.push(Incoming::UserMessage { kind: UserMessageKind::Stage, text });
        }
        if ended.is_none() && self.text_questions_offered() {
            let questions = match text_channel::heading_questions(&text) {
                Some(listed) => listed,
                None => self.detect(&text, true)?,
            };
            if !questions.is_empty() {
                ended = self.text_exchange(questions, false)?;
            }
        }
        Ok(ended)
    }

    /// A reply without a tool call: the delivery text channel (module guide), else one
    /// reminder and then the `no_tool_call` end.
    fn reply_without_call(&mut self, text: &str) -> Result<Option<EndReason>, EpisodeError> {
        let artifact_missing = self.artifact_missing();
        if self.text_questions_offered() {
            let questions = match text_channel::heading_questions(text) {
                Some(listed) => listed,
                None => self.detect(text, false)?,
            };
            if !questions.is_empty() {
                return self.text_exchange(questions, true);
            }
        }
        if self.gate_closed() && self.asked_before_unlock > 0 && !text_channel::has_question_mark(text) {
            self.unlocked = true;
            self.counters.no_tool = 0;
            let text = self.harness_text(&prompt_files::UNLOCK_FILE);
            self.harness_message(UserMessageKind::Continuation, &text)?;
            return Ok(None);
        }
        if self.ctx.condition.is_delivery() && artifact_missing == Some(true) && self.continuations < CONTINUATION_LIMIT {
            self.continuations += 1;
            let text = self.harness_text(&prompt_files::CONTINUATION_FILE);
            self.harness_message(UserMessageKind::Continuation, &text)?;
            return Ok(None);
        }
        self.counters.no_tool += 1;
        if reached(self.ctx.budgets.rules.no_tool_call(), self.counters.no_tool) {
            return Ok(Some(EndReason::NoToolCall));
        }
        let file = if self.ctx.budgets.rules.no_tool_call().is_some() {
            &prompt_files::NO_TOOL_REMINDER_FILE
        } else {
            &prompt_files::NO_TOOL_REMINDER_GOES_ON_FILE
        };
        let reminder = self.harness_text(file);
        self.harness_message(UserMessageKind::Reminder, &reminder)?;
        Ok(None)
    }

    /// The questions of a reply without the questions heading, by the user's detector (or the
    /// deterministic [`SentenceRule`]); its ballots are recorded. A detector whose models all
    /// failed is an infrastructure error of the attempt; one abandoned at the deadline finds
    /// no question (the deadline ends the episode next).
    fn detect(&mut self, text: &str, with_tool_calls: bool) -> Result<Vec<String>, EpisodeError> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let reply = ReplyText { text, turn: self.turns, with_tool_calls, artifact_missing: self.artifact_missing() };
        let mut rule = SentenceRule;
        let detector: &mut dyn QuestionDetector = match self.user.detector() {
            Some(detector) => detector,
            None => &mut rule,
        };
        let detected = detector.detect(&reply);
        self.links.check_usage()?;
        match detected {
            Ok(detection) => {
                if !detection.ballots.is_empty() {
                    self.writer.record_ballots(&detection.ballots)?;
                }
                Ok(detection.questions)
            }
            Err(error) => {
                if !error.ballots.is_empty() {
                    self.writer.record_ballots(&error.ballots)?;
                }
                if error.abandoned {
                    return Ok(Vec::new());
                }
                Err(EpisodeError::Infrastructure {
                    message: format!("the question detector failed: {}", error.message),
                    deterministic: false,
                    source: None,
                })
            }
        }
    }

    /// Whether questions in the reply text are answered ([`text_questions_offered`]).
    fn text_questions_offered(&self) -> bool {
        text_questions_offered(self.ctx.condition)
    }

    /// Whether no workspace file matches `[delivery].artifact`; `None` for a task without one.
    fn artifact_missing(&self) -> Option<bool> {
        let delivery = self.ctx.package.manifest().delivery.as_ref()?;
        Some(!text_channel::artifact_exists(&self.ws_dir, &delivery.artifact))
    }

    /// One text-channel clarification round: every question answered and recorded, the
    /// answers delivered as one message. Beyond the round limit the message is
    /// [`PROCEED_REPLY`]; in a reply without a tool call it then stands in for the reminder
    /// and counts toward the `no_tool_call` end, so an agent that only keeps asking stops.
    fn text_exchange(&mut self, questions: Vec<String>, without_call: bool) -> Result<Option<EndReason>, EpisodeError> {
        if self.rounds_exhausted()? {
            let text = self.round_limit_reply();
            self.writer.event(EventKind::UserMessage { kind: UserMessageKind::Answer, text: text.clone(), usage: None })?;
            self.inbox.push(Incoming::UserMessage { kind: UserMessageKind::Answer, text });
            if without_call {
                self.counters.no_tool += 1;
                if reached(self.ctx.budgets.rules.no_tool_call(), self.counters.no_tool) {
                    return Ok(Some(EndReason::NoToolCall));
                }
            }
            return Ok(None);
        }
        let (pairs, usage) = match self.clarification_round(questions)? {
            Round::Answered { pairs, usage } => (pairs, usage),
            Round::Ended(reason) => return Ok(Some(reason)),
        };
        self.counters.no_tool = 0;
        self.counters.owner_answered();
        let text = text_channel::answer_message(&pairs);
        self.writer.event(EventKind::UserMessage { kind: UserMessageKind::Answer, text: text.clone(), usage })?;
        self.inbox.push(Incoming::UserMessage { kind: UserMessageKind::Answer, text });
        Ok(None)
    }

    /// Puts one question to the user and records it in the questions table (its usage is
    /// in the store already, through the user's sink); the channel (tool or text) is the
    /// caller's. `None` when the user abandoned the reply at the deadline.
    fn put_question(&mut self, text: &str) -> Result<Option<Reply>, EpisodeError> {
        let question = Question { index: self.questions, turn: self.turns, text: text.to_string() };
        let answered = self.user.answer(&question);
        self.links.check_usage()?;
        let mut reply = match answered {
            Ok(reply) => reply,
            Err(error) if error.abandoned => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        self.record_user_request(&mut reply, UserMessageKind::Answer)?;
        let matched = linked_targets(text, self.ctx.package.clarifications()).into_iter().map(|t| t.id.clone()).collect();
        self.writer.record_question(&specgap_store::Question {
            turn: self.turns,
            text: text.to_string(),
            answer: reply.text.clone(),
            matched_targets: matched,
        })?;
        self.questions += 1;
        Ok(Some(reply))
    }

    /// Writes the model request behind `reply`, if the user made one, as a `user_request`
    /// event (before the event that delivers the reply).
    fn record_user_request(&mut self, reply: &mut Reply, purpose: UserMessageKind) -> Result<(), EpisodeError> {
        let Some(request) = reply.request.take() else { return Ok(()) };
        self.writer.event(EventKind::UserRequest {
            request: self.user_requests,
            purpose,
            body: request.body,
            new_messages: request.new_messages,
            reply: reply.text.clone(),
            tries: request.tries,
        })?;
        self.user_requests += 1;
        Ok(())
    }

    /// Updates the identical-call counter; true when this call is the 4th in a row.
    fn repeated(&mut self, call: &ToolCall) -> bool {
        if call.tool == names::SUBMIT {
            return false;
        }
        let key = (call.tool.clone(), call.arguments.clone());
        if self.counters.last_call.as_ref() == Some(&key) {
            self.counters.identical += 1;
        } else {
            self.counters.last_call = Some(key);
            self.counters.identical = 1;
        }
        reached(self.ctx.budgets.rules.repeated_call(), self.counters.identical)
    }

    /// Updates the blank-output and question counters after a call.
    fn count(&mut self, call: &ToolCall, effect: &Effect) {
        self.counters.blank = if effect.blank_success { self.counters.blank + 1 } else { 0 };
        if effect.answered {
            self.counters.asks += 1;
            self.counters.owner_answered();
        } else if call.tool != names::ASK_USER {
            self.counters.asks = 0;
        }
        if effect.feedback.is_some() || effect.next_stage.is_some() {
            self.counters.owner_feedback();
        }
    }

    fn tool_result(&mut self, call: &ToolCall, output: ToolOutput) -> Result<(), EpisodeError> {
        self.writer.event(EventKind::ToolResult {
            call_id: call.id.clone(),
            tool: call.tool.clone(),
            output: output.output.clone(),
            is_error: output.is_error,
        })?;
        self.inbox.push(Incoming::ToolResult {
            call_id: call.id.clone(),
            tool: call.tool.clone(),
            output: output.output,
            is_error: output.is_error,
        });
        Ok(())
    }

    /// Runs one call and records its result.
    fn dispatch(&mut self, call: &ToolCall) -> Result<Effect, EpisodeError> {
        let mut effect = Effect::default();
        let output = match self.gate(call) {
            Some(refusal) => ToolOutput::error(refusal),
            None => match call.tool.as_str() {
                names::LIST_FILES => with_args(call, |a| tools::list_files(&self.ws, &a)),
                names::READ_TEXT => with_args(call, |a| tools::read_text(&self.ws, &a)),
                names::WRITE_TEXT => with_args(call, |a| tools::write_text(&self.ws, &a)),
                names::REPLACE_TEXT => with_args(call, |a| tools::replace_text(&self.ws, &a)),
                names::RUN_EXPERIMENT | names::BASH => self.command_tool(call, &mut effect)?,
                names::RUN_PROJECT => self.run_project(call, &mut effect)?,
                names::WRITE_PLAN => self.write_plan(call),
                names::ASK_USER => self.ask_user(call, &mut effect)?,
                names::SUBMIT => self.submit_tool(call, &mut effect)?,
                names::APPLY_OVERLAY => self.apply_overlay(call)?,
                other => unreachable_tool(other),
            },
        };
        self.tool_result(call, output)?;
        if let Some(text) = &effect.next_stage {
            self.writer.event(EventKind::UserMessage { kind: UserMessageKind::Stage, text: text.clone(), usage: None })?;
        }
        if let Some(reads) = effect.file_reads.take() {
            self.writer.event(reads)?;
        }
        if let Some(change) = self.phase_changed.take() {
            self.writer.event(EventKind::PhaseChange { phase: change.phase, system_prompt: change.system_prompt, tools: change.tools })?;
        }
        Ok(effect)
    }

    /// Whether `call`, after the turn was ended by a call to `ended_by`, still runs: under a
    /// delivery condition every `ask_user` of a turn is answered, all in the turn's one
    /// clarification round (seed 002 A.3: one interaction turn is one exchange with the
    /// customer, however many questions it holds; docs/decisions.md "Engine: parallel
    /// `ask_user` calls"). The other calls after it are not run, as under seed 000 (App. F.1).
    fn joins_the_round(&self, ended_by: &str, call: &ToolCall) -> bool {
        // protocol: seed 002 (delivery conditions); seed 000's owner conditions keep F.1.
        self.ctx.condition.is_delivery() && ended_by == names::ASK_USER && call.tool == names::ASK_USER
    }

    /// Whether `call` ends its turn: an offered `submit`, `ask_user` or `write_plan` (a call to
    /// one of them that is not offered is an unknown tool, which ends nothing).
    fn ends_the_turn(&self, call: &ToolCall) -> bool {
        let tool = call.tool.as_str();
        let offered = self.offered.iter().any(|t| t == tool)
            || (self.agent.allows_harness_actions() && self.every_phase_tools.iter().any(|t| t == tool));
        offered && matches!(tool, names::SUBMIT | names::ASK_USER | names::WRITE_PLAN)
    }

    /// Refuses calls that are not offered or not yet allowed; `None` lets the call run.
    fn gate(&self, call: &ToolCall) -> Option<String> {
        let tool = call.tool.as_str();
        let harness = self.agent.allows_harness_actions();
        if tool == names::APPLY_OVERLAY && harness {
            return None;
        }
        // Scripted calibration agents are not held by plan mode's phases nor the clarify-first
        // gate, so calibration runs under every condition.
        if harness && self.every_phase_tools.iter().any(|t| t == tool) {
            return None;
        }
        if !self.offered.iter().any(|t| t == tool) {
            // Plan mode's editing tools and `submit` are not offered before `write_plan` (seed 000
            // App. F.3): calling one is calling an unknown tool, as for any tool not offered.
            return Some(format!("unknown tool `{tool}`; the tools are: {}", self.offered.join(", ")));
        }
        let editing = matches!(tool, names::WRITE_TEXT | names::REPLACE_TEXT);
        let working = editing || matches!(tool, names::RUN_EXPERIMENT | names::BASH | names::RUN_PROJECT | names::SUBMIT);
        if self.gate_closed() && working {
            return Some(format!(
                "`{tool}` is withheld until you have asked the client what the request leaves open and then told them, \
                 in an ask_user message without a question mark, that you have what you need"
            ));
        }
        None
    }

    fn command_tool(&mut self, call: &ToolCall, effect: &mut Effect) -> Result<ToolOutput, EpisodeError> {
        let args: tools::CommandArgs = match tools::parse_args(&call.tool, &call.arguments) {
            Ok(args) => args,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        if args.command.contains('\0') {
            // No shell can receive one; refusing here keeps it the agent's mistake, not an
            // infrastructure failure.
            return Ok(ToolOutput::error("a command cannot contain a NUL byte"));
        }
        if args.timeout_sec == Some(0) {
            return Ok(ToolOutput::error("timeout_sec must be at least 1 (seconds)"));
        }
        let shell = if call.tool == names::BASH { Shell::Bash } else { Shell::Sh };
        let result = self.run_command(shell, &args.command, args.timeout_sec)?;
        effect.blank_success = result.blank_success();
        let output = result.to_output();
        effect.file_reads = Some(self.file_reads(call, &output.output));
        Ok(output)
    }

    /// The `file_reads` event of the command just run by `call`, whose result the agent gets
    /// as `observation`: the files its processes read and those whose content the observation
    /// shows (docs/decisions.md "Opened and inspected, measured").
    fn file_reads(&self, call: &ToolCall, observation: &str) -> EventKind {
        let session = self.planning_session.as_ref().unwrap_or(&self.session);
        let call_id = call.id.clone();
        match session.last_reads() {
            Reads::Measured(files) => {
                let seen = Observation::new(observation);
                let shown = files.iter().filter(|f| crate::shown::file_shown(&self.ws_dir.join(f), &seen)).cloned().collect();
                EventKind::FileReads { call_id, read: files.iter().cloned().collect(), shown, unmeasured: String::new() }
            }
            Reads::Unmeasured(why) => EventKind::FileReads { call_id, read: Vec::new(), shown: Vec::new(), unmeasured: why.clone() },
        }
    }

    fn run_command(&mut self, shell: Shell, command: &str, timeout_sec: Option<u64>) -> Result<CommandResult, EpisodeError> {
        let timeout = timeout_sec
            .unwrap_or(tools::DEFAULT_COMMAND_TIMEOUT_SEC)
            .clamp(1, tools::MAX_COMMAND_TIMEOUT_SEC)
            .min(self.remaining_wall_sec());
        let session = self.planning_session.as_mut().unwrap_or(&mut self.session);
        sandbox_ops::run_command(session, shell, command, timeout)
    }

    fn run_project(&mut self, call: &ToolCall, effect: &mut Effect) -> Result<ToolOutput, EpisodeError> {
        let args: tools::RunProjectArgs = match tools::parse_args(&call.tool, &call.arguments) {
            Ok(args) => args,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        let Some(project) = self.ctx.package.manifest().project.as_ref() else {
            return Ok(ToolOutput::error("this project has no recorded runs to replay"));
        };
        let record = match tools::project_record(&self.ws, &project.records, &args.record) {
            Ok(record) => record,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        let command = project.replay.replace("{record}", &tools::shell_quote(&record));
        let output = self.run_command(Shell::Sh, &command, None)?.to_output();
        effect.file_reads = Some(self.file_reads(call, &output.output));
        Ok(output)
    }

    fn write_plan(&mut self, call: &ToolCall) -> ToolOutput {
        let args: tools::WritePlanArgs = match tools::parse_args(&call.tool, &call.arguments) {
            Ok(args) => args,
            Err(message) => return ToolOutput::error(message),
        };
        if self.plan_written {
            return ToolOutput::error("the plan is already written; you are in the execution phase");
        }
        if let Err(message) = tools::write_file(&self.ws, "PLAN.md", &args.plan) {
            return ToolOutput::error(message);
        }
        self.plan_written = true;
        // The execution phase's commands write to the workspace again; the planning sandbox
        // (and its /tmp) ends here.
        self.planning_session = None;
        let saved = self.harness_text(&prompt_files::PLAN_SAVED_FILE);
        let Some(change) = self.execution.take() else { return ToolOutput::ok(saved) };
        self.offered = change.tools.iter().map(|t| t.name.clone()).collect();
        let applied = self.agent.change_phase(&change);
        let output = if applied {
            ToolOutput::ok(saved)
        } else {
            // An agent that keeps no system prompt of its own learns the new one here.
            ToolOutput::ok(format!("{saved}\n\n{}", change.system_prompt))
        };
        self.phase_changed = Some(change);
        output
    }

    /// One `ask_user` call: one clarification round, each of its questions answered on its
    /// own (seed 002 A.9.3). Past the delivery round limit the call gets [`PROCEED_REPLY`].
    fn ask_user(&mut self, call: &ToolCall, effect: &mut Effect) -> Result<ToolOutput, EpisodeError> {
        let asked = match tools::parse_args::<tools::AskUserArgs>(&call.tool, &call.arguments).and_then(|a| a.asked()) {
            Ok(asked) => asked,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        let condition = self.ctx.condition;
        let statement = !asked.listed && !text_channel::has_question_mark(&asked.questions[0]);
        if self.gate_closed() && self.asked_before_unlock > 0 && statement {
            self.unlocked = true;
            return Ok(ToolOutput::ok(self.harness_text(&prompt_files::UNLOCK_FILE)));
        }
        if !condition.is_delivery() && reached(self.ctx.budgets.rules.ask_user(), self.counters.asks + 1) {
            effect.end = Some(EndReason::LoopAskUser);
            let nth = self.counters.asks + 1;
            return Ok(ToolOutput::error(format!("not answered: this is the {} question in a row", ordinal_word(nth))));
        }
        if condition.is_delivery() && self.rounds_exhausted()? {
            return Ok(ToolOutput::ok(self.round_limit_reply()));
        }
        let listed = asked.listed;
        let pairs = match self.clarification_round(asked.questions)? {
            Round::Answered { pairs, .. } => pairs,
            Round::Ended(reason) => {
                effect.end = Some(reason);
                return Ok(ToolOutput::error(format!("not answered: the work ended ({}) before the reply came", reason.as_str())));
            }
        };
        effect.answered = true;
        let text = match (listed, pairs.first()) {
            (false, Some((_, answer))) => answer.clone(),
            _ => text_channel::answer_message(&pairs),
        };
        Ok(ToolOutput::ok(text))
    }

    /// A harness message: the run's replacement of `file` (`--prompts DIR`), else its built-in
    /// text, trimmed.
    fn harness_text(&self, file: &prompt_files::PromptFile) -> String {
        self.ctx.prompts.text(file).trim().to_string()
    }

    /// The reply to a round past the limit: the run's `round_limit_reply.md` when it replaces
    /// it (trimmed), else [`PROCEED_REPLY`].
    fn round_limit_reply(&self) -> String {
        self.harness_text(&prompt_files::ROUND_LIMIT_REPLY_FILE)
    }

    /// Whether the hard clarify-first gate (`interact-req+gate=on`) still withholds the work.
    fn gate_closed(&self) -> bool {
        self.ctx.condition.ask() == Ask::Required && !self.unlocked
    }

    /// Whether the delivery clarification-round limit is used up (seed 002 §4.1: at most 30
    /// rounds). The first time it is, a `budget` event `clarification_rounds` is recorded;
    /// the episode goes on.
    fn rounds_exhausted(&mut self) -> Result<bool, EpisodeError> {
        let limit = self.ctx.budgets.clarification_rounds;
        // A turn whose round was already admitted asks within it.
        if self.clarification_rounds < limit || self.round_turn == Some(self.turns) {
            return Ok(false);
        }
        if !self.round_limit_reached {
            self.round_limit_reached = true;
            self.writer.event(EventKind::Budget {
                which: "clarification_rounds".into(),
                used: self.clarification_rounds.into(),
                limit: limit.into(),
            })?;
        }
        Ok(true)
    }

    /// One clarification round, from either channel: every question put to the user on its
    /// own and recorded with this turn; a turn counts one round however many calls and
    /// exchanges its questions came in. A reply abandoned at the deadline, or a deadline that
    /// passed while the user answered, ends the round (answers already given stay recorded,
    /// but are not delivered).
    fn clarification_round(&mut self, questions: Vec<String>) -> Result<Round, EpisodeError> {
        let mut pairs = Vec::with_capacity(questions.len());
        let mut usage: Option<Usage> = None;
        for question in questions {
            let Some(reply) = self.put_question(&question)? else {
                return Ok(Round::Ended(self.abandoned_end(USER_ABANDONED)));
            };
            if let Some(u) = &reply.usage {
                usage.get_or_insert_with(Usage::default).add(u);
            }
            pairs.push((question, reply.text));
            if let Some(reason) = self.deadline_end() {
                return Ok(Round::Ended(reason));
            }
        }
        if self.round_turn != Some(self.turns) {
            self.clarification_rounds += 1;
            self.round_turn = Some(self.turns);
        }
        if self.gate_closed() {
            self.asked_before_unlock += 1;
        }
        Ok(Round::Answered { pairs, usage })
    }

    fn apply_overlay(&mut self, call: &ToolCall) -> Result<ToolOutput, EpisodeError> {
        let args: tools::ApplyOverlayArgs = match tools::parse_args(&call.tool, &call.arguments) {
            Ok(args) => args,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        if args.name != "starter" {
            let Some(overlay) = self.overlay_named(&args.name) else {
                return Ok(ToolOutput::error(format!("the task has no overlay `{}`", args.name)));
            };
            if let Some(overlay) = overlay {
                sandbox_ops::apply_overlay(&self.ws_dir, overlay)?;
            }
        }
        self.writer.event(EventKind::Overlay { name: args.name.clone() })?;
        Ok(ToolOutput::ok(format!("applied overlay `{}`", args.name)))
    }

    fn submit_tool(&mut self, call: &ToolCall, effect: &mut Effect) -> Result<ToolOutput, EpisodeError> {
        let args: tools::SubmitArgs = match tools::parse_args(&call.tool, &call.arguments) {
            Ok(args) => args,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        let Some(outcome) = self.submit(args.summary, false)? else {
            effect.end = Some(EndReason::WorkspaceLimit);
            let why = self.over_cap.clone().unwrap_or_default();
            return Ok(ToolOutput::error(format!("not submitted: {why}. The work is finished.")));
        };
        if let Some(stages) = self.ctx.package.stages() {
            return self.stage_submitted(stages, &outcome, effect);
        }
        let condition = self.ctx.condition;
        if outcome.scored.success {
            effect.end = Some(EndReason::Accepted);
            return Ok(ToolOutput::ok("The delivery was accepted. The work is finished."));
        }
        if !condition.feedback() {
            effect.end = Some(EndReason::Submitted);
            return Ok(ToolOutput::ok("The delivery was received. The work is finished."));
        }
        let used = self.submissions.len() as u32;
        if used >= self.ctx.budgets.submissions {
            effect.end = Some(EndReason::SubmissionBudget);
            return Ok(ToolOutput::ok("The delivery was returned and no submissions are left. The work is finished."));
        }
        let Some(feedback) = self.feedback_text()? else {
            let reason = self.abandoned_end(USER_ABANDONED);
            effect.end = Some(reason);
            return Ok(ToolOutput::ok(format!(
                "The delivery was returned, and the work ended ({}) before the owner's message came.",
                reason.as_str()
            )));
        };
        effect.feedback = Some(feedback);
        let left = self.ctx.budgets.submissions - used;
        let word = if left == 1 { "submission" } else { "submissions" };
        Ok(ToolOutput::ok(format!("The delivery was returned; the owner's message follows. {left} {word} left.")))
    }

    /// After submission k of a staged task (it answers stage k; module guide "Stages"): the
    /// episode ends after the last stage or below the stage's `min_reward`; otherwise the next
    /// stage's instruction follows the turn's results.
    /// Stage k+1's files are applied to the workspace before its instruction is sent.
    fn stage_submitted(
        &mut self,
        stages: &specgap_task::PackageStages,
        outcome: &SubmissionOutcome,
        effect: &mut Effect,
    ) -> Result<ToolOutput, EpisodeError> {
        let k = outcome.k;
        let n = stages.len() as u32;
        // After the last stage there is nothing left to withhold: it ends as any last stage.
        let short = stages.stage(k).filter(|_| k < n).and_then(|stage| {
            let rewards = self.last_result.as_ref().and_then(|result| result.rewards.as_ref());
            stage_shortfall(stage, outcome.scored.score, rewards)
        });
        if let Some(shortfall) = short {
            let name = stages.stage(k).map_or("", |s| s.name.as_str());
            self.stage_stop = Some(stage_stop_detail(k, n, name, &shortfall));
            effect.end = Some(EndReason::Submitted);
            return Ok(ToolOutput::ok(format!("The delivery for stage {k} of {n} was received. The work is finished.")));
        }
        match stages.stage(k + 1).and_then(|stage| stage.instruction.clone()) {
            Some(text) if k < n => {
                self.begin_stage(k + 1)?;
                effect.next_stage = Some(text);
                Ok(ToolOutput::ok(format!("The delivery for stage {k} of {n} was received. The instruction for stage {} follows.", k + 1)))
            }
            _ => {
                effect.end = Some(EndReason::Submitted);
                Ok(ToolOutput::ok(format!("The delivery for stage {k} of {n}, the last, was received. The work is finished.")))
            }
        }
    }

    /// The user's message for a failed submission; recorded as a feedback event. `None` when
    /// the user abandoned it at the deadline.
    fn feedback_text(&mut self) -> Result<Option<String>, EpisodeError> {
        let result = self.last_result.clone().unwrap_or(EvalResult {
            version: specgap_protocol::result::RESULT_VERSION,
            requirements: None,
            tests: None,
            delivery: None,
            reward: None,
            rewards: None,
        });
        let reply = match self.escalation.feedback(self.ctx.package, &result) {
            Some(context) => {
                let given = self.user.feedback(&context);
                self.links.check_usage()?;
                let mut reply = match given {
                    Ok(reply) => reply,
                    Err(error) if error.abandoned => return Ok(None),
                    Err(error) => return Err(error.into()),
                };
                self.record_user_request(&mut reply, UserMessageKind::Feedback)?;
                reply
            }
            None => Reply { text: NO_OBSERVATION.into(), usage: None, request: None },
        };
        self.writer.event(EventKind::UserMessage { kind: UserMessageKind::Feedback, text: reply.text.clone(), usage: reply.usage })?;
        Ok(Some(reply.text))
    }

    /// Evaluates (the sandbox freezes a copy of the workspace first), scores and records
    /// submission k = next.
    /// An evaluation error re-evaluates the frozen copy (kept under `frozen/<k>` until it is
    /// evaluated) instead of running the agent again; a failure the gold check attributes to
    /// the delivery is scored 0 ([`crate::evaluation`]).
    ///
    /// `None`, nothing evaluated or stored, when the workspace or its diff passes a cap
    /// ([`Self::workspace_over_cap`]; the reason is in `over_cap`).
    fn submit(&mut self, summary: Option<String>, automatic: bool) -> Result<Option<SubmissionOutcome>, EpisodeError> {
        let k = self.submissions.len() as u32 + 1;
        // Nothing an external agent runs may change the workspace while it is measured and
        // copied; an automatic submission is made at the end, after which the agent never
        // runs again.
        self.agent.suspend();
        if self.workspace_over_cap()? {
            return Ok(None);
        }
        self.writer.event(EventKind::Submission { k, summary, automatic })?;
        let Some(diff) = self.diff_within_cap()? else {
            return Ok(None);
        };
        let frozen = self.ctx.workdir.join("frozen").join(k.to_string());
        sandbox_ops::freeze(&self.ws_dir, &frozen)?;
        let snapshot = match &self.machine {
            Some(machine) => Some(machine.snapshot(&self.ctx.workdir.join("frozen").join(format!("{k}.machine.tar")))?),
            None => None,
        };
        if !automatic {
            self.agent.resume();
        }
        // Submission k of a staged task answers stage k (one submission per stage).
        let stage = self.ctx.package.stages().map(|_| k);
        let evaluated =
            evaluation::evaluate_with_retries(self.ctx, snapshot.as_ref().map_or(&self.host, |s| &s.host), &frozen, stage, self.writer);
        sandbox_ops::remove_scratch(&frozen);
        if let Some(snapshot) = &snapshot {
            self.record_machine(k, snapshot)?;
        }
        let evaluated = evaluated?;
        let (result, scored, error) = match evaluated {
            Evaluated::Scored(result, scored) => (result, scored, None),
            Evaluated::Failed(failure) if evaluation::failure_is_the_deliverys(self.ctx, &self.host)? => {
                failure.record(self.writer)?;
                let (result, scored) = evaluation::execution_failure(self.ctx)?;
                let why = format!("{}; the gold artifact evaluates, so the delivery failed to execute", failure.message);
                (result, scored, Some(why))
            }
            Evaluated::Failed(failure) => {
                self.writer.write_submission(
                    k,
                    &SubmissionRecord {
                        automatic,
                        agent_declared: !automatic,
                        result: None,
                        scored: None,
                        failing_requirement: None,
                        error: Some(format!("evaluation error: {}", failure.message)),
                        diff,
                    },
                )?;
                return Err(failure.into_error());
            }
        };
        let failing = failing_requirement(self.ctx.package, &result).map(str::to_string);
        self.writer.write_submission(
            k,
            &SubmissionRecord {
                automatic,
                agent_declared: !automatic,
                result: Some(result.clone()),
                scored: Some(scored),
                failing_requirement: failing.clone(),
                error,
                diff: diff.clone(),
            },
        )?;
        self.writer.event(EventKind::Evaluation {
            k,
            score: scored.score,
            success: scored.success,
            failing_requirement: failing.clone(),
        })?;
        self.last_diff = diff;
        self.last_result = Some(result);
        let outcome = SubmissionOutcome { k, automatic, scored, failing_requirement: failing };
        self.submissions.push(outcome.clone());
        Ok(Some(outcome))
    }

    /// Stores submission `k`'s machine layer (when it changes anything) and remembers it as
    /// delivered.
    fn record_machine(&mut self, k: u32, snapshot: &MachineSnapshot) -> Result<(), EpisodeError> {
        if !snapshot.summary.is_empty() {
            self.writer.write_submission_machine(k, &snapshot.layer)?;
        }
        if let Some(machine) = &mut self.machine {
            machine.submitted(snapshot)?;
        }
        let _ = std::fs::remove_file(&snapshot.layer);
        Ok(())
    }

    /// Whether the machine (if any) changed since the last submission delivered it.
    fn machine_changed(&self) -> Result<bool, EpisodeError> {
        match &self.machine {
            Some(machine) => machine.changed_since_submission(&self.ctx.workdir.join("machine-at-end.tar")),
            None => Ok(false),
        }
    }

    /// Evaluates the residual starting state once per (task hash, state id) (re-evaluated
    /// on evaluation errors like a submission) and records it as `start/result.json` with its
    /// Score and Success. A residual state must fail the verifier (seed 001 §3.1, App. B.3):
    /// one that succeeds is flagged by its `start_evaluation` event and `start_results.success
    /// = 1`, and the episode still runs (docs/decisions.md "Engine: a residual start that
    /// passes").
    fn evaluate_start(&mut self, state: &str) -> Result<(), EpisodeError> {
        let key = (self.ctx.package.hash().to_string(), state.to_string());
        let cached = lock(self.ctx.start_results).get(&key).cloned();
        let result = match cached {
            Some(result) => result,
            None => match evaluation::evaluate_with_retries(self.ctx, &self.host, &self.ws_dir, None, self.writer)? {
                Evaluated::Scored(result, _) => {
                    lock(self.ctx.start_results).insert(key, result.clone());
                    result
                }
                Evaluated::Failed(failure) => return Err(failure.into_error()),
            },
        };
        let scored = result.score(&self.ctx.package.scoring_context()).map_err(|problem| EpisodeError::Evaluation {
            message: format!("cannot score the starting state's result.json: {problem}"),
            stderr_tail: String::new(),
            deterministic: true,
        })?;
        self.writer.write_start_result(&result)?;
        self.writer.record_start_score(&scored)?;
        self.writer.event(EventKind::StartEvaluation { state: state.to_string(), score: scored.score, success: scored.success })?;
        Ok(())
    }

    /// Ends the episode: the automatic submission where due, budget and end events.
    fn end(&mut self, reason: EndReason) -> Result<EpisodeOutcome, EpisodeError> {
        // An external agent is stopped where it is: what it writes after the end is never
        // part of the automatic submission (issue 14 item 6).
        self.agent.suspend();
        let mut reason = reason;
        let mut details: Vec<String> = self.abandoned.iter().map(|whose| whose.to_string()).collect();
        details.extend(self.stage_stop.take());
        // An over-cap workspace is never read: the cap, not the budget, ends the episode.
        if submits_automatically(reason) && self.workspace_over_cap()? {
            reason = EndReason::WorkspaceLimit;
        }
        if submits_automatically(reason) {
            match self.diff_within_cap()? {
                None => reason = EndReason::WorkspaceLimit,
                Some(diff) => {
                    // A staged task's open stage has no submission yet, and its tests are not the last
                    // stage's: it is scored even when nothing changed (Harbor verifies every step it ran).
                    let stage_open = self.ctx.package.stages().is_some();
                    if diff != self.last_diff || stage_open || self.machine_changed()? {
                        if self.submit(None, true)?.is_none() {
                            reason = EndReason::WorkspaceLimit;
                        }
                    } else {
                        details.push(unchanged_at_end(self.submissions.last().map(|s| s.k)));
                    }
                }
            }
        }
        if reason == EndReason::WorkspaceLimit {
            details.extend(self.over_cap.clone());
        }
        let undelivered = std::mem::take(&mut self.inbox);
        self.agent.stop(&undelivered);
        write_closing_records(self.agent, self.writer)?;
        if let Some((which, used, limit)) = self.budget_used(reason) {
            self.writer.event(EventKind::Budget { which: which.into(), used, limit })?;
        }
        let detail = details.join("; ");
        self.writer.event(EventKind::End { reason: reason.as_str().into(), detail })?;
        Ok(EpisodeOutcome {
            end_reason: reason,
            submissions: self.submissions.clone(),
            turns: self.turns,
            tool_calls: self.tool_calls,
            questions: self.questions,
            wall_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            agent_usage: Usage::default(),
        })
    }

    fn budget_used(&self, reason: EndReason) -> Option<(&'static str, u64, u64)> {
        let b = &self.ctx.budgets;
        match reason {
            EndReason::TurnBudget => Some(("turns", self.turns.into(), b.turns.into())),
            EndReason::ToolCallBudget => Some(("tool_calls", self.tool_calls.into(), b.tool_calls.into())),
            EndReason::WallBudget => Some(("wall_sec", self.started.elapsed().as_secs(), b.wall_sec)),
            EndReason::SubmissionBudget => Some(("submissions", self.submissions.len() as u64, b.submissions.into())),
            _ => None,
        }
    }
}

/// Whether an end makes the automatic final submission when the workspace changed (module
/// guide; [`EndReason::makes_automatic_submission`]).
pub fn submits_automatically(reason: EndReason) -> bool {
    reason.makes_automatic_submission()
}

/// The `end` event's detail when an end that makes the automatic submission found the
/// workspace unchanged since submission `last` (or since the start, without one), so none
/// was made: "no automatic submission: the workspace is unchanged since submission 2".
pub fn unchanged_at_end(last: Option<u32>) -> String {
    match last {
        Some(k) => format!("no automatic submission: the workspace is unchanged since submission {k}"),
        None => "no automatic submission: the workspace is unchanged since the start".to_string(),
    }
}

/// How a stage submission fell short of its stage's `min_reward`: the text after "stage k
/// `name` " in the `end` detail ("scored 0.5, below its min_reward 0.6"; "reward key
/// `accuracy` is 0.5, below its min_reward 0.8"; "reward key `style` is missing, ...").
/// `None` when it reached every threshold. `score` is the submission's Score; `rewards` the
/// result's `rewards`. Keys are checked in name order, as a missing key never reaches its
/// minimum (Harbor's `-inf`); the first short key is named.
pub fn stage_shortfall(stage: &specgap_task::StageText, score: f64, rewards: Option<&BTreeMap<String, f64>>) -> Option<String> {
    if let Some(min) = stage.min_reward
        && score < min
    {
        return Some(format!("scored {score}, below its min_reward {min}"));
    }
    stage.min_reward_keys.iter().find_map(|(key, min)| match rewards.and_then(|r| r.get(key)) {
        Some(value) if value >= min => None,
        Some(value) => Some(format!("reward key `{key}` is {value}, below its min_reward {min}")),
        None => Some(format!("reward key `{key}` is missing, below its min_reward {min}")),
    })
}

/// The `end` event's detail when stage `k` of `n` (named `name`) fell short of its
/// `min_reward` (`shortfall`, from [`stage_shortfall`]), so the later stages were not given.
pub fn stage_stop_detail(k: u32, n: u32, name: &str, shortfall: &str) -> String {
    let rest = if k + 1 == n { format!("stage {n} was") } else { format!("stages {}-{n} were", k + 1) };
    format!("stage {k} `{name}` {shortfall}: {rest} not given")
}

/// The result of a call that did not run because the episode had ended.
fn not_run(reason: EndReason) -> ToolOutput {
    ToolOutput::error(format!("not run: the work ended ({}) before this call", reason.as_str()))
}

/// The result of a call that came after a turn-ending call (`submit`, `ask_user`,
/// `write_plan`) in the same turn.
fn not_run_after(tool: &str) -> ToolOutput {
    ToolOutput::error(format!("not run: `{tool}` ends the turn, so the calls after it in the same turn are not run"))
}

fn with_args<T: serde::de::DeserializeOwned>(call: &ToolCall, run: impl FnOnce(T) -> ToolOutput) -> ToolOutput {
    match tools::parse_args::<T>(&call.tool, &call.arguments) {
        Ok(args) => run(args),
        Err(message) => ToolOutput::error(message),
    }
}

fn unreachable_tool(tool: &str) -> ToolOutput {
    // `gate` only lets offered tools through, and every offered tool is dispatched above.
    ToolOutput::error(format!("unknown tool `{tool}`"))
}
