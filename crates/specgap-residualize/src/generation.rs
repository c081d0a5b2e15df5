//! Stage I, trajectory generation (seed 001 §3.2, App. C.1): the protocol under which
//! `specgap residualize generate` runs predecessors. Generation is an ordinary run (the
//! engine's runner, through `specgap run`'s plumbing), so the store records everything the
//! paper keeps per predecessor run and any agent, built-in or external, can be a predecessor.
//!
//! * **Start**: the clean workspace only.
//! * **Condition**: `blind` — the original request alone under a neutral prompt, nothing to
//!   ask, no feedback, one submission, the shell profile: the predecessor declares completion
//!   by calling `submit` once, and Stage II keeps only such runs.
//! * **Budgets**: generous, so that as many runs as possible reach a submission: the paper's
//!   eight hours of wall time per run, and turn and tool-call budgets that an eight-hour run
//!   would not exhaust first.

/// The generation protocol: a condition with its axis overrides, and budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerationProtocol {
    /// The condition preset.
    pub condition: &'static str,
    /// `--submissions` override, if the preset needs one.
    pub submissions: Option<u32>,
    /// `--ask on|off` override.
    pub ask: Option<bool>,
    /// `--feedback on|off` override.
    pub feedback: Option<bool>,
    /// `--profile` override.
    pub profile: Option<&'static str>,
    /// Turn budget per run.
    pub turns: u32,
    /// Tool-call budget per run.
    pub tool_calls: u32,
    /// Wall-clock budget per run, in seconds.
    pub wall_sec: u64,
}

/// Seed 001's generation protocol in specgap's terms: the `blind` preset — the task's
/// `instruction.md` under a neutral software-engineering prompt that says nothing about
/// missing information or earlier work, no `ask_user`, no feedback, one submission, profile
/// `shell` — the same setting as the continuations that will start from the states (App. B:
/// predecessors use the evaluated agents' harness), with the long budgets.
pub const PROTOCOL: GenerationProtocol = GenerationProtocol {
    condition: "blind",
    submissions: None,
    ask: None,
    feedback: None,
    profile: None,
    turns: 1000,
    tool_calls: 3000,
    wall_sec: 8 * 3600,
};

/// The start every predecessor run has.
pub const START: &str = "clean";
