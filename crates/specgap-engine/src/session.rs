//! The session interface between the engine and whoever drives or answers an episode
//! (DESIGN §5): the [`Agent`] under test and the [`User`] playing the owner or customer.
//!
//! An agent receives an [`Opening`] (system prompt, opening message, tools), then is asked
//! for one [`AgentReply`] per turn with everything that arrived since its last turn (tool
//! results, in call order, then any user message). Every tool call it makes gets exactly one
//! [`Incoming::ToolResult`]. Scripted, replay and chat agents, and later an MCP bridge,
//! implement [`Agent`] without engine changes.
//!
//! # Agents that drive themselves
//! An external (`cli:`) agent is not pulled turn by turn: its own loop sends model requests
//! (through the episode's gateway) and runs its own tools inside the sandbox; only the harness
//! tools (`ask_user`, `submit`, `write_plan`) come back to the engine. Such an agent says so
//! ([`Agent::drives_itself`]); the engine then offers it only the harness tools, hands it a
//! [`Workplace`] ([`Agent::enter`]) before [`Agent::start`], and keeps its one set of episode
//! rules by reading what the agent did as replies: [`AgentReply::Observed`] (one model
//! exchange — a turn when it was a forwarded main-loop request — with the results of earlier
//! tool calls that the request carried), [`AgentReply::HarnessCall`] (a harness tool call,
//! dispatched like any call; its result, and for a failed `submit` the owner's feedback, go to
//! the agent in the next inbox) and [`AgentReply::Exited`] (its program ended). Calling
//! [`Agent::next_turn`] is the engine's permission for the agent's next step: the agent holds
//! its next model request until then, so a budget or loop rule that ends the episode refuses
//! it. Before the engine copies the workspace (a submission, the end) it calls
//! [`Agent::suspend`], which stops every process of the agent, and [`Agent::resume`] after;
//! at the end, [`Agent::stop`] ends them for good. Pulled agents ignore all of these.
//!
//! In plan mode (seed 000 App. F.3) the system prompt and the tools change once, when
//! `write_plan` succeeds: the engine calls [`Agent::change_phase`] with the execution phase's
//! [`PhaseChange`] before the next turn. An agent that rebuilds its requests from it (the chat
//! agent) says so; for any other agent the engine puts the new system prompt into the
//! `write_plan` result instead, so every agent learns it.
//!
//! Before the episode starts, the engine hands the agent and the user a [`SessionLink`]
//! ([`Agent::attach`], [`User::attach`]): the episode's [`Deadline`] (the end of its wall
//! budget, and the signal that a stop was requested) and a [`UsageSink`] that writes model
//! usage to the store as each request completes. Anything making model requests for the
//! episode — the chat agent and user, a judge, the external-agent gateway — caps each request
//! by the deadline, abandons it when the deadline says so, and records every request's usage
//! in the sink; agents and users without model requests (scripted, replay, `relay`) ignore
//! the link.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use specgap_protocol::event::{ToolCall, ToolSpec, Usage, UserMessageKind};
use specgap_protocol::package::Observation;
use specgap_store::{Role, StoreError, UsageRecorder};

/// How often a wait on a [`Deadline`] wakes to look for a stop request.
pub const DEADLINE_POLL: Duration = Duration::from_millis(50);

/// The end of an episode's wall budget (DESIGN §3.5) and the signal to abandon model requests
/// in flight. Cheap to clone; clones share the signal.
///
/// A request is to be abandoned — its reply discarded, nothing it returns acted on — once
/// [`Deadline::is_over`]: the budget's instant has passed, the run was asked to stop
/// (Ctrl-C), or the engine called [`Deadline::abandon`] because the episode ended. Each try of
/// a request gets at most [`Deadline::remaining`] time ([`Deadline::cap`]), and each backoff
/// sleep is cut short at the deadline ([`Deadline::sleep`]).
#[derive(Debug, Clone)]
pub struct Deadline {
    /// `None`: no wall budget (standalone use, tests).
    at: Option<Instant>,
    /// The run's stop request, shared with the runner.
    stop: Option<Arc<AtomicBool>>,
    /// Set by [`Deadline::abandon`], shared by every clone.
    abandoned: Arc<AtomicBool>,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::none()
    }
}

impl Deadline {
    /// A deadline at `at`.
    pub fn at(at: Instant) -> Self {
        Deadline { at: Some(at), stop: None, abandoned: Arc::default() }
    }

    /// No deadline: requests run to their own timeouts unless [`Deadline::abandon`] is called.
    pub fn none() -> Self {
        Deadline { at: None, stop: None, abandoned: Arc::default() }
    }

    /// The same deadline, also over once `stop` is set (the runner's stop request).
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// The instant the wall budget ends, if there is one.
    pub fn instant(&self) -> Option<Instant> {
        self.at
    }

    /// Time left until the instant (zero once passed); `None` without one.
    pub fn remaining(&self) -> Option<Duration> {
        self.at.map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// `limit`, shortened to the time left: the most a request try may take.
    pub fn cap(&self, limit: Duration) -> Duration {
        self.remaining().map_or(limit, |left| left.min(limit))
    }

    /// Whether the wall budget's instant has passed.
    pub fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// Whether a stop was requested or [`Deadline::abandon`] was called (the instant aside).
    pub fn stop_requested(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst) || self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
    }

    /// Whether requests in flight must be abandoned: the instant passed or a stop was requested.
    pub fn is_over(&self) -> bool {
        self.passed() || self.stop_requested()
    }

    /// Makes the deadline over for every clone (the engine calls it when the episode ends, so
    /// whatever still serves the episode — a gateway request — stops).
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
    }

    /// Sleeps `duration`, waking every [`DEADLINE_POLL`] and returning early once the deadline
    /// is over. Returns `true` when the whole duration was slept.
    pub fn sleep(&self, duration: Duration) -> bool {
        let until = Instant::now() + duration;
        loop {
            if self.is_over() {
                return false;
            }
            let now = Instant::now();
            if now >= until {
                return true;
            }
            let mut step = (until - now).min(DEADLINE_POLL);
            if let Some(left) = self.remaining() {
                // Wake at the instant itself, not up to one poll after it.
                step = step.min(left.max(Duration::from_millis(1)));
            }
            std::thread::sleep(step);
        }
    }
}

/// Where an agent or user records model usage: one call of [`UsageSink::record`] per model
/// request, answered or not (a failed try's requests and retries, an abandoned request's
/// latency), as soon as it is known. Cheap to clone; clones share one total.
///
/// A sink made by the engine writes each record to the store at once (one committed upsert
/// into the attempt's `usage` row of its [`Role`]), so usage survives a failing user model,
/// a killed process and a resumed run, and `--max-cost` sees it while the episode still runs.
/// A store failure is kept and ends the episode with [`crate::EpisodeError::Store`] at the
/// engine's next step.
#[derive(Debug, Clone)]
pub struct UsageSink {
    role: Role,
    recorder: Option<UsageRecorder>,
    state: Arc<Mutex<SinkState>>,
}

#[derive(Debug, Default)]
struct SinkState {
    total: Usage,
    records: u64,
    failure: Option<StoreError>,
}

impl UsageSink {
    /// A sink that only sums (nothing reaches a store): for agents and users used outside an
    /// episode, and tests.
    pub fn detached(role: Role) -> Self {
        UsageSink { role, recorder: None, state: Arc::default() }
    }

    /// A sink writing to the store through `recorder` under `role`.
    pub fn to_store(role: Role, recorder: UsageRecorder) -> Self {
        UsageSink { role, recorder: Some(recorder), state: Arc::default() }
    }

    /// The role usage is recorded under.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Records the usage of one request (or part of one), adding it to the store's row.
    pub fn record(&self, usage: &Usage) {
        let written = self.recorder.as_ref().map_or(Ok(()), |r| r.record(self.role, usage));
        let mut state = crate::lock(&self.state);
        state.total.add(usage);
        state.records += 1;
        if let Err(error) = written {
            state.failure.get_or_insert(error);
        }
    }

    /// Everything recorded so far.
    pub fn total(&self) -> Usage {
        crate::lock(&self.state).total.clone()
    }

    /// Whether anything was recorded.
    pub fn is_used(&self) -> bool {
        crate::lock(&self.state).records > 0
    }

    /// The first store failure of a record, once.
    pub fn take_failure(&self) -> Option<StoreError> {
        crate::lock(&self.state).failure.take()
    }
}

/// What the engine shares with an agent or user for one episode attempt (module guide).
#[derive(Debug, Clone)]
pub struct SessionLink {
    /// The episode's wall-budget deadline and stop signal.
    pub deadline: Deadline,
    /// Where the model usage of this agent or user goes.
    pub usage: UsageSink,
}

impl SessionLink {
    /// A link without a deadline whose usage is only summed (tests, standalone use).
    pub fn detached(role: Role) -> Self {
        SessionLink { deadline: Deadline::none(), usage: UsageSink::detached(role) }
    }
}

/// What the agent is told when the episode starts (DESIGN §3.3).
#[derive(Debug, Clone, PartialEq)]
pub struct Opening {
    /// The system prompt of the condition, budget filled in.
    pub system_prompt: String,
    /// The opening user message (the instruction, plus information or answers per condition).
    pub message: String,
    /// The tools offered, in a stable order.
    pub tools: Vec<ToolSpec>,
}

/// Where an agent that drives itself ([`Agent::drives_itself`]) does its work, given once
/// before [`Agent::start`] ([`Agent::enter`]).
#[derive(Debug, Clone)]
pub struct Workplace {
    /// The episode id.
    pub episode_id: String,
    /// The attempt (1-based).
    pub attempt: u32,
    /// The materialized workspace on the host (the sandbox shows it at `/workspace`).
    pub workspace: std::path::PathBuf,
    /// A fresh private directory of this attempt for the agent's own files (its home, the
    /// harness sockets); removed with the attempt, never inside the workspace or the store.
    pub scratch: std::path::PathBuf,
    /// The episode's directory in the run store (the gateway's journal goes there).
    pub store_dir: std::path::PathBuf,
    /// What of the host the task's commands see (`[environment]`).
    pub host: specgap_sandbox::HostView,
    /// Sandbox settings.
    pub sandbox: specgap_sandbox::SandboxConfig,
    /// The resolved budgets.
    pub budgets: crate::condition::Budgets,
    /// Whether the condition keeps the scaffold's own prompts unchanged (`blind`: seed 001
    /// gives the agent the request alone, so nothing of the condition's system prompt is added).
    pub scaffold_prompt_only: bool,
    /// Whether questions in the agent's final reply reach its counterpart when its program
    /// exits (the text exchange: delivery conditions that offer `ask_user`, seed 002 App.
    /// A.9.3). Where they do not (owner conditions), a `cli:` agent's `text` ask channel
    /// still offers `ask_user`: the owner has no other way in.
    pub text_questions: bool,
}

/// One tool call's result that an agent driving itself reported afterwards (its next model
/// request carried it, or its own log).
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedResult {
    /// The call answered.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The result as the agent saw it, in the harness's command-result form where the adapter
    /// knows the tool's output format.
    pub output: String,
    /// Whether the agent's tool reported an error.
    pub is_error: bool,
    /// A shell command that exited 0 with blank output (the blank-output loop rule).
    pub blank_success: bool,
}

/// A main-loop model exchange of an agent driving itself: one turn (issue 14 item 1).
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedTurn {
    /// The answer's text, if any.
    pub text: Option<String>,
    /// The tool calls in the answer (run by the agent itself, not by the engine).
    pub tool_calls: Vec<ToolCall>,
    /// The exchange's usage.
    pub usage: Option<Usage>,
    /// Whether the answer is a refusal or a content-filter stop.
    pub refusal: bool,
}

/// A new phase of the episode (plan mode's execution phase, seed 000 App. F.3): from the next
/// turn on, the agent works under this system prompt with these tools, which replace the
/// opening's. The engine records it as a `phase_change` event.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseChange {
    /// The phase now beginning (`execute`).
    pub phase: String,
    /// The system prompt from now on.
    pub system_prompt: String,
    /// The tools offered from now on, in a stable order.
    pub tools: Vec<ToolSpec>,
}

/// Something the agent receives before its next turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The result of one tool call of the previous turn.
    ToolResult {
        /// The call id answered.
        call_id: String,
        /// The tool that was called.
        tool: String,
        /// Text for the agent.
        output: String,
        /// Whether the call failed (refused, bad arguments, tool error).
        is_error: bool,
    },
    /// A message from the owner / customer (feedback) or the harness (reminder).
    UserMessage {
        /// Why it was sent.
        kind: UserMessageKind,
        /// The text.
        text: String,
    },
}

/// One reply of the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentReply {
    /// A turn: optional text and zero or more tool calls (in order).
    Turn {
        /// Assistant text, if any.
        text: Option<String>,
        /// Tool calls; an empty list is a reply without a tool call (DESIGN §3.5).
        tool_calls: Vec<ToolCall>,
        /// Model usage of this turn, if known.
        usage: Option<Usage>,
    },
    /// The agent has nothing more to do (a script ran out). The engine makes the automatic
    /// final submission when the workspace changed, and ends with `agent_done`.
    Done,
    /// The model refused or a content filter stopped it; three in a row end the episode.
    Refusal {
        /// Whatever text came back.
        text: Option<String>,
        /// Model usage, if known.
        usage: Option<Usage>,
    },
    /// The model's context window is full; ends the episode with `context_overflow`.
    ContextOverflow,
    /// An agent driving itself made one model exchange (module guide). The engine records
    /// `results` (earlier calls' results the request carried) as `tool_result` events,
    /// `exchange` (a `model_exchange` event) and, for a turn, an `agent_turn`; it counts the
    /// turn and its tool calls and checks the loop rules and budgets on them without running
    /// any call.
    Observed {
        /// Results of earlier calls, in order.
        results: Vec<ObservedResult>,
        /// The exchange, as the event to record ([`specgap_protocol::event::EventKind::ModelExchange`]);
        /// `None` for results the agent's own log reported after its program ended.
        exchange: Option<Box<specgap_protocol::event::EventKind>>,
        /// The turn, when the exchange was a forwarded main-loop request.
        turn: Option<ObservedTurn>,
    },
    /// The next main-loop model request of an agent driving itself waits for admission
    /// (module guide: the engine's permission). The engine checks the turn and tool-call
    /// budgets here — after the previous turn's calls ran, as for a pulled agent — and either
    /// ends the episode (the request is refused) or calls [`Agent::next_turn`] again, which
    /// admits it. Nothing is recorded.
    TurnRequested,
    /// An agent driving itself called a harness tool (`ask_user`, `submit`, `write_plan`):
    /// dispatched through the same gates as any call, recorded as a `bridge_call` event and
    /// its result; not a turn, and not counted as a tool call again (the model's call that
    /// led to it was).
    HarnessCall {
        /// The call (an empty id gets one from the engine).
        call: ToolCall,
    },
    /// An agent driving itself reported what its steps did to the workspace's files (from
    /// its own log), recorded as an `actions` event.
    Actions {
        /// The actions, in order.
        actions: Vec<specgap_protocol::action::FileAction>,
    },
    /// The files the processes of an agent driving itself read during a turn, measured by its
    /// sandbox, with those each result showed: `file_reads` events, recorded as they are
    /// (issue 24 item 4; docs/decisions.md "Opened and inspected, measured").
    FileReads {
        /// The events ([`specgap_protocol::event::EventKind::FileReads`]), one per result of
        /// the turn.
        reads: Vec<specgap_protocol::event::EventKind>,
    },
    /// The program of an agent driving itself ended. When the protocol expects another turn
    /// (questions in `text` under a delivery condition that answers them, a delivery not yet
    /// made) and `can_resume`, the engine puts that message in the inbox and the next
    /// [`Agent::next_turn`] starts the agent again with it; otherwise the episode ends
    /// `agent_exit` (with its automatic submission of a changed workspace).
    Exited {
        /// The agent's final reply text, if any.
        text: Option<String>,
        /// Whether the agent can be started again with a new message.
        can_resume: bool,
        /// The exit, as the event to record ([`specgap_protocol::event::EventKind::AgentExit`]).
        exit: Box<specgap_protocol::event::EventKind>,
    },
    /// The request in flight was abandoned because the episode's [`Deadline`] became over (the
    /// wall budget ended, or a stop was requested); nothing came back to act on. The engine
    /// ends the episode with `wall_budget` and its automatic submission, or with `interrupted`
    /// after a stop. Its usage is already in the [`UsageSink`]. Not an infrastructure error.
    Abandoned,
    /// The episode's [`Deadline`] became over (or a stop was requested) while the agent had
    /// no model request in flight: it was halted where it was and nothing was abandoned (a
    /// `cli:` agent between requests, or one that never made any). The engine ends the episode
    /// as after [`AgentReply::Abandoned`], with its own end detail.
    Halted,
}

/// An agent failure that is not the agent's behaviour: a model service error after retries,
/// an unreadable script. Ends the attempt as an infrastructure error (DESIGN §3).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct AgentError {
    /// What went wrong, lowercase.
    pub message: String,
    /// Whether retrying cannot help (a script that does not parse, a model that always fails).
    pub deterministic: bool,
    /// The cause.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl AgentError {
    /// An error without a cause.
    pub fn new(message: impl Into<String>, deterministic: bool) -> Self {
        AgentError { message: message.into(), deterministic, source: None }
    }

    /// An error with a cause.
    pub fn with_source(message: impl Into<String>, deterministic: bool, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        AgentError { message: message.into(), deterministic, source: Some(Box::new(source)) }
    }
}

/// The agent under test, driven one turn at a time.
pub trait Agent {
    /// Receives the episode's [`SessionLink`], once, before [`Agent::start`]. An agent that
    /// makes model requests keeps it: it caps every request by the deadline, answers
    /// [`AgentReply::Abandoned`] when the deadline is over, and records every request's usage
    /// in the sink — the engine writes no agent usage itself (except for an agent that never
    /// records anything: its [`Agent::usage`] is stored once at the end). The default ignores
    /// the link (scripted and replay agents make no requests).
    fn attach(&mut self, _link: &SessionLink) {}

    /// Starts the session.
    ///
    /// # Errors
    /// [`AgentError`] when the agent cannot start (an infrastructure error).
    fn start(&mut self, opening: &Opening) -> Result<(), AgentError>;

    /// The next reply, given everything received since the previous turn (empty before the
    /// first turn).
    ///
    /// # Errors
    /// [`AgentError`] when the agent service fails (an infrastructure error).
    fn next_turn(&mut self, inbox: &[Incoming]) -> Result<AgentReply, AgentError>;

    /// Usage summed over the session so far (for the outcome; the store gets usage from the
    /// [`UsageSink`], see [`Agent::attach`]).
    fn usage(&self) -> Usage;

    /// The episode enters a new phase (module guide): from the next turn on, `change`'s system
    /// prompt and tools replace the ones the agent has. Returns `true` when the agent now
    /// works under them (its next model request carries them); `false` — the default, for
    /// agents without a system prompt of their own (scripted, replay) — makes the engine put
    /// the new system prompt into the result of the call that changed the phase.
    fn change_phase(&mut self, _change: &PhaseChange) -> bool {
        false
    }

    /// Whether the harness accepts `apply_overlay` from this agent: true only for scripted
    /// agents and replays of scripted agents' trajectories.
    fn allows_harness_actions(&self) -> bool {
        false
    }

    /// Whether the agent drives itself (an external `cli:` agent; module guide). Default:
    /// `false`.
    fn drives_itself(&self) -> bool {
        false
    }

    /// How the agent puts questions to its counterpart, as the condition's prompts tell it
    /// ([`crate::prompts::AskRoute`]), where `text_questions` says whether the engine reads
    /// questions in its replies (delivery conditions that offer `ask_user`). Default: the
    /// harness's `ask_user` by that name.
    fn ask_route(&self, _text_questions: bool) -> crate::prompts::AskRoute {
        crate::prompts::AskRoute::ask_user()
    }

    /// Receives the [`Workplace`], once, before [`Agent::start`]; called only for agents
    /// that drive themselves.
    ///
    /// # Errors
    /// [`AgentError`] when the agent cannot work there (an infrastructure error).
    fn enter(&mut self, _place: &Workplace) -> Result<(), AgentError> {
        Ok(())
    }

    /// Stops every process of the agent until [`Agent::resume`]: the engine is about to copy
    /// the workspace. Idempotent; a no-op for pulled agents.
    fn suspend(&mut self) {}

    /// Lets the agent's processes run again after [`Agent::suspend`].
    fn resume(&mut self) {}

    /// The episode is over: the agent stops for good (an agent driving itself ends its
    /// program, SIGTERM then SIGKILL after a short grace, and closes its gateway).
    /// `undelivered` is what arrived for the agent since its last turn (the result of the call
    /// that ended the episode), which it may still hand on before it stops. Called at every
    /// end, errors included, possibly more than once.
    fn stop(&mut self, _undelivered: &[Incoming]) {}

    /// Events the agent's surroundings recorded beside its replies since the last call, each
    /// with the moment it happened (an external agent's network tripwire: a `network_attempt`
    /// per attempt). The engine asks at every turn and once more after [`Agent::stop`], and
    /// writes them stamped with those moments, so they stand where they happened in the
    /// trajectory (and reach a live viewer then). Default: none.
    fn records_since_last(&mut self) -> Vec<(Instant, specgap_protocol::event::EventKind)> {
        Vec::new()
    }

    /// Events about the agent's surroundings as a whole (an external agent's one
    /// `network_tripwire` summary), handed over once, after [`Agent::stop`] and the last
    /// [`Agent::records_since_last`]; the engine records them before `budget` and `end`.
    /// Default: none.
    fn closing_records(&mut self) -> Vec<specgap_protocol::event::EventKind> {
        Vec::new()
    }
}

/// A question put to the user with `ask_user`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// 0-based index of the question in the episode.
    pub index: u32,
    /// 1-based turn in which it was asked.
    pub turn: u32,
    /// The text as the agent wrote it.
    pub text: String,
}

/// A reply of the user.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// The text the agent receives.
    pub text: String,
    /// Model usage of the user model, if any.
    pub usage: Option<Usage>,
    /// The model request the reply came from (a model-played user); the engine records it
    /// in the trajectory as a `user_request` event.
    pub request: Option<UserModelRequest>,
}

/// The model request behind a user's reply, stored once per message
/// ([`specgap_protocol::request`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserModelRequest {
    /// The body sent, as segments.
    pub body: Vec<specgap_protocol::request::BodySegment>,
    /// Messages of the body no earlier request of this attempt sent.
    pub new_messages: Vec<specgap_protocol::request::StoredMessage>,
    /// Completions made with the body (1 plus the empty replies asked again).
    pub tries: u32,
}

/// What the user learns after a failed submission (DESIGN §3.4): the observation of the
/// highest-priority failing requirement. Never the requirement's id or text.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedbackContext {
    /// The observation: scene (for the user model only), incident, detail.
    pub observation: Observation,
    /// `detail` with its `{key}` placeholders filled from the evaluator's measured values.
    pub detail: String,
    /// Whether this failure mode was reported before, so the detail is due.
    pub escalated: bool,
    /// The escalated observation text: the incident, or the incident then the filled detail.
    pub text: String,
}

/// Why the user could not reply: a user-model service failure (an infrastructure error), or
/// a request abandoned at the episode's [`Deadline`] ([`UserError::abandoned`]).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UserError {
    /// What went wrong, lowercase.
    pub message: String,
    /// Whether retrying cannot help.
    pub deterministic: bool,
    /// The request was abandoned because the deadline became over: not a failure; the engine
    /// ends the episode with `wall_budget` (or `interrupted` after a stop).
    pub abandoned: bool,
    /// The cause.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl UserError {
    /// An error without a cause.
    pub fn new(message: impl Into<String>, deterministic: bool) -> Self {
        UserError { message: message.into(), deterministic, abandoned: false, source: None }
    }

    /// An error with a cause.
    pub fn with_source(message: impl Into<String>, deterministic: bool, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        UserError { message: message.into(), deterministic, abandoned: false, source: Some(Box::new(source)) }
    }

    /// The reply was abandoned at the deadline.
    pub fn abandoned() -> Self {
        UserError {
            message: "the reply was abandoned: the work ended before it came".into(),
            deterministic: false,
            abandoned: true,
            source: None,
        }
    }
}

/// The simulated owner or customer (DESIGN §5).
pub trait User {
    /// Receives the episode's [`SessionLink`], once, before the first question or feedback; as
    /// for [`Agent::attach`], a user with a model caps its requests by the deadline, fails with
    /// [`UserError::abandoned`] when it is over, and records every request's usage in the sink
    /// (the engine records no user usage itself). The default ignores it (`relay`).
    fn attach(&mut self, _link: &SessionLink) {}

    /// Answers a question from what the owner / customer knows.
    ///
    /// # Errors
    /// [`UserError`] on a user-model failure.
    fn answer(&mut self, question: &Question) -> Result<Reply, UserError>;

    /// Turns an observation into the owner's next message.
    ///
    /// # Errors
    /// [`UserError`] on a user-model failure.
    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError>;

    /// The question detector through which this user hears reply text under delivery
    /// conditions ([`crate::detector`]); `None` (the default): the engine's deterministic
    /// [`crate::detector::SentenceRule`].
    fn detector(&mut self) -> Option<&mut dyn crate::detector::QuestionDetector> {
        None
    }
}
