//! # specgap-engine
//!
//! The episode state machine (DESIGN §3): it materializes a workspace, opens the session with
//! the condition's system prompt and opening message, lets the agent call tools, evaluates
//! each submission privately, feeds back only what a person would observe, and ends the
//! episode by the rules of DESIGN §3.5.
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`episode`] | [`run_episode`]: one attempt of one episode, its loop and end rules (DESIGN §3) |
//! | [`evaluation`] | evaluating frozen states: re-evaluation after evaluation errors, the gold check that attributes evaluator failures on delivered artifacts |
//! | [`condition`] | presets, overrides, canonical condition strings, starts, applicability, budgets, the `oracle:R` subset (DESIGN §4) |
//! | [`prompts`] | system prompts (`src/prompts/*.md`, [`PROMPT_VERSION`]) and the opening message |
//! | [`prompt_files`] | the prompt files a run may replace (`--prompts DIR`) and how a run stores them |
//! | [`tools`] | tool specs per profile, argument parsing, output caps, the file tools |
//! | [`confine`] | workspace path confinement (and quoted byte names given back by the agent) |
//! | [`session`] | the [`Agent`] and [`User`] traits the episode talks to (opening, turns, plan mode's [`PhaseChange`]); the [`Deadline`] and [`UsageSink`] it shares with them |
//! | [`feedback`] | observation choice and escalation after a failed submission |
//! | [`relay`] | the deterministic `relay` user: observations (and their format-2 requests) as the owner's messages, answers from `user.toml` or the clarification targets |
//! | [`side_session`] | agent sessions outside an episode (seed 002's extractors: bash and submit over a workspace) and a package's evaluator on any workspace |
//! | [`detector`] | which questions a reply's text asks the client: the [`QuestionDetector`](detector::QuestionDetector) interface and the deterministic default | seed 002 A.9.3 |
//! | [`text_channel`] | the delivery text channel: questions in reply text, continuations (seed 002 A.9.3) |
//!
//! The run orchestration that plans episodes, retries failed attempts and fills the store
//! lives in `runner`.
#![deny(missing_docs)]

pub mod condition;
pub mod confine;
pub mod detector;
pub mod episode;
pub mod evaluation;
pub mod feedback;
mod machine;
pub mod prompt_files;
pub mod prompts;
pub mod relay;
pub mod runner;
mod sandbox_ops;
pub mod session;
mod shown;
pub mod side_session;
pub mod text_channel;
pub mod tools;

pub use condition::{
    Ask, BudgetFlags, Budgets, Condition, ConditionError, NotApplicable, OpeningKind, Overrides, Preset, Profile, PromptKind, Start,
    applicability, expand_starts,
};
pub use episode::{EpisodeContext, EpisodeError, EpisodeOutcome, HostViews, StartResults, SubmissionOutcome, run_episode};
pub use prompts::PROMPT_VERSION;

/// Locks a mutex, reusing it if a panicking worker poisoned it: the engine keeps only plain
/// counters, queues and caches behind locks, valid between any two statements.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
pub use relay::RelayUser;
pub use session::{
    Agent, AgentError, AgentReply, Deadline, FeedbackContext, Incoming, ObservedResult, ObservedTurn, Opening, PhaseChange, Question,
    Reply, SessionLink, UsageSink, User, UserError, Workplace,
};
