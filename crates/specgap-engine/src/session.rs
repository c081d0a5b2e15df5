//! The session interface between the engine and whoever drives or answers an episode
//! (DESIGN §5): the [`Agent`] under test and the [`User`] playing the owner or customer.
//!
//! An agent receives an [`Opening`] (system prompt, opening message, tools), then is asked
//! for one [`AgentReply`] per turn with everything that arrived since its last turn (tool
//! results, in call order, then any user message). Every tool call it makes gets exactly one
//! [`Incoming::ToolResult`]. Scripted, replay and chat agents, and later an MCP bridge,
//! implement [`Agent`] without engine changes.

use specgap_protocol::event::{ToolCall, ToolSpec, Usage, UserMessageKind};
use specgap_protocol::package::Observation;

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
    pub fn with_source(
        message: impl Into<String>,
        deterministic: bool,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        AgentError { message: message.into(), deterministic, source: Some(Box::new(source)) }
    }
}

/// The agent under test, driven one turn at a time.
pub trait Agent {
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

    /// Usage summed over the session so far.
    fn usage(&self) -> Usage;

    /// Whether the harness accepts `apply_overlay` from this agent: true only for scripted
    /// agents and replays of scripted agents' trajectories.
    fn allows_harness_actions(&self) -> bool {
        false
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

/// Why the user could not reply (a user-model service failure): an infrastructure error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UserError {
    /// What went wrong, lowercase.
    pub message: String,
    /// Whether retrying cannot help.
    pub deterministic: bool,
    /// The cause.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl UserError {
    /// An error without a cause.
    pub fn new(message: impl Into<String>, deterministic: bool) -> Self {
        UserError { message: message.into(), deterministic, source: None }
    }
}

/// The simulated owner or customer (DESIGN §5).
pub trait User {
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
}
