//! Agent sessions outside an episode, and a package's evaluator on any workspace.
//!
//! Seed 002's extractors (§4.1, A.9.4) are agents too: each works over a copy of a delivered
//! workspace after the run, converts the artifact into the case evaluator's input format, and
//! stops. [`run_side_session`] drives one such agent with the shell profile's tools — `bash`
//! (a command in the sandbox, the workspace as working directory and only writable place,
//! extra directories mounted read-only) and `submit` (the work is done) — under a turn budget
//! and the [`SessionLink`]'s deadline. Nothing is evaluated, fed back or written to an
//! episode: the caller gets the transcript and decides. Command results are the episode's own
//! (exit status, stdout and stderr within the same cap), so the agent sees what it would see
//! in an episode.
//!
//! End rules: `submit` ends the session (other calls of that turn do not run); the turn
//! budget, the deadline (wall budget or stop request), two consecutive replies without a tool
//! call (the first gets a reminder), three consecutive refusals, a full context window, or an
//! agent with nothing more to do end it too. A tool other than `bash` and `submit` gets a tool
//! error, as in an episode.
//!
//! A caller may also offer [`CHECK_OUTPUT`] ([`SideSession::check_output`]): a tool without
//! arguments whose result is whatever the caller's check says about the working directory now
//! (seed 002 A.9.4 lets extractors run the case evaluator on their output; the extraction
//! panel's check reports structural failures only).
//!
//! [`evaluate_workspace`] runs a package's evaluator on a workspace exactly as an episode's
//! submission is evaluated, and scores the result by the task's scoring kind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use specgap_protocol::event::{ToolSpec, UserMessageKind};
use specgap_protocol::result::{EvalResult, Scored};
use specgap_sandbox::{CommandSpec, HostView, SandboxConfig, Session, Shell};
use specgap_task::TaskPackage;

use crate::condition::{Budgets, Condition};
use crate::episode::EpisodeError;
use crate::sandbox_ops;
use crate::session::{Agent, AgentError, AgentReply, Incoming, Opening, SessionLink};
use crate::tools::{self, CommandArgs, DEFAULT_COMMAND_TIMEOUT_SEC, MAX_COMMAND_TIMEOUT_SEC, names};

/// The reminder after a reply without a tool call.
pub const SIDE_REMINDER: &str = "Your last reply called no tool. Work with the bash tool, and call submit when the files are written. Another reply without a tool call ends the session.";
/// The reminder after a refusal.
pub const SIDE_REFUSAL_REMINDER: &str = "Please continue with the tools you have.";

/// The name of the optional check tool ([`SideSession::check_output`]).
pub const CHECK_OUTPUT: &str = "check_output";

/// A check of the working directory the agent may ask for ([`CHECK_OUTPUT`]): the text it
/// returns is the tool's result.
pub type OutputCheck<'a> = &'a dyn Fn() -> String;

/// Where and how long a side session runs.
#[derive(Clone)]
pub struct SideSession<'a> {
    /// The writable working directory of every command.
    pub workspace: &'a Path,
    /// Directories mounted read-only: (host path, path inside the sandbox).
    pub read_only: Vec<(PathBuf, PathBuf)>,
    /// The task's resolved `[environment]`.
    pub host: &'a HostView,
    /// Sandbox settings.
    pub sandbox: &'a SandboxConfig,
    /// Agent turns allowed.
    pub turns: u32,
    /// The [`CHECK_OUTPUT`] tool's check, when the session offers it.
    pub check_output: Option<OutputCheck<'a>>,
}

impl std::fmt::Debug for SideSession<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SideSession")
            .field("workspace", &self.workspace)
            .field("read_only", &self.read_only)
            .field("turns", &self.turns)
            .field("check_output", &self.check_output.is_some())
            .finish_non_exhaustive()
    }
}

/// How a side session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEnd {
    /// The agent called `submit`.
    Submitted,
    /// The turn budget was used up.
    TurnBudget,
    /// The deadline passed.
    WallBudget,
    /// A stop was requested (the session's work is to be dropped).
    Interrupted,
    /// Two consecutive replies without a tool call.
    NoToolCall,
    /// Three consecutive refusals.
    Refusals,
    /// The context window is full.
    ContextOverflow,
    /// The agent had nothing more to do.
    AgentDone,
}

/// What a side session did.
#[derive(Debug, Clone, PartialEq)]
pub struct SideOutcome {
    /// Why it ended.
    pub end: SideEnd,
    /// The `submit` summary, if it submitted with one.
    pub summary: Option<String>,
    /// Agent turns taken.
    pub turns: u32,
    /// Every turn and tool result, in order, as JSON objects (`{"turn", "text", "calls"}`,
    /// `{"result", "tool", "output", "is_error"}`, `{"message", "text"}`).
    pub transcript: Vec<Value>,
}

/// Why a side session could not run: the agent's service failed (after its retries) or the
/// sandbox failed.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    /// The agent failed.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// A command could not run in the sandbox.
    #[error(transparent)]
    Sandbox(#[from] EpisodeError),
}

/// The tools of a side session: `bash` and `submit` (profile `shell` without `ask_user`).
pub fn side_tools() -> Vec<ToolSpec> {
    // `hidden` offers no ask_user; the shell profile gives bash.
    match Condition::parse("hidden+profile=shell") {
        Ok(condition) => {
            // One submission: `submit` ends the session.
            let budgets = Budgets::resolve(&condition, &Default::default(), &Default::default());
            tools::tool_specs(&condition, &budgets, false)
        }
        Err(_) => Vec::new(),
    }
}

/// [`side_tools`], with [`CHECK_OUTPUT`] before `submit` when `check_output` is set.
pub fn side_tools_with(check_output: bool) -> Vec<ToolSpec> {
    let mut specs = side_tools();
    if check_output {
        let check = ToolSpec {
            name: CHECK_OUTPUT.into(),
            description: "Run the scoring program on the files in your working directory as they are now and hear \
                          whether it could read them. It says what is wrong with their form, never how good the \
                          answer is."
                .into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        };
        let at = specs.iter().position(|t| t.name == names::SUBMIT).unwrap_or(specs.len());
        specs.insert(at, check);
    }
    specs
}

/// Drives `agent` through one side session (module guide), holding it to `link`'s deadline;
/// its model usage goes to `link`'s sink.
///
/// # Errors
/// [`SideError`] when the agent's service or the sandbox fails.
pub fn run_side_session(
    agent: &mut dyn Agent,
    system_prompt: &str,
    message: &str,
    settings: &SideSession<'_>,
    link: &SessionLink,
) -> Result<SideOutcome, SideError> {
    let mut template = CommandSpec::shell("", settings.workspace);
    for (host, inside) in &settings.read_only {
        template = template.read_only(host.clone(), inside.clone());
    }
    let mut session = Session::new(template, settings.host.clone(), settings.sandbox.clone());
    agent.attach(link);
    let tools = side_tools_with(settings.check_output.is_some());
    let names_list: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let unknown_hint = match names_list.as_slice() {
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => String::new(),
    };
    agent.start(&Opening { system_prompt: system_prompt.to_string(), message: message.to_string(), tools })?;
    let mut outcome = SideOutcome { end: SideEnd::TurnBudget, summary: None, turns: 0, transcript: Vec::new() };
    let mut inbox: Vec<Incoming> = Vec::new();
    let (mut no_call, mut refusals) = (0u32, 0u32);
    let deadline = &link.deadline;
    let over = |deadline: &crate::session::Deadline| if deadline.stop_requested() { SideEnd::Interrupted } else { SideEnd::WallBudget };
    loop {
        if deadline.is_over() {
            outcome.end = over(deadline);
            return Ok(outcome);
        }
        if outcome.turns >= settings.turns {
            outcome.end = SideEnd::TurnBudget;
            return Ok(outcome);
        }
        let reply = agent.next_turn(&std::mem::take(&mut inbox))?;
        outcome.turns += 1;
        match reply {
            AgentReply::Turn { text, tool_calls, .. } => {
                outcome.transcript.push(json!({ "turn": outcome.turns, "text": text, "calls": tool_calls }));
                refusals = 0;
                if tool_calls.is_empty() {
                    no_call += 1;
                    if no_call >= 2 {
                        outcome.end = SideEnd::NoToolCall;
                        return Ok(outcome);
                    }
                    inbox.push(message_in(&mut outcome, UserMessageKind::Reminder, SIDE_REMINDER));
                    continue;
                }
                no_call = 0;
                for call in &tool_calls {
                    if deadline.is_over() {
                        outcome.end = over(deadline);
                        return Ok(outcome);
                    }
                    let (output, is_error) = match call.tool.as_str() {
                        names::SUBMIT => {
                            outcome.summary = call.arguments.get("summary").and_then(Value::as_str).map(str::to_string);
                            outcome.end = SideEnd::Submitted;
                            return Ok(outcome);
                        }
                        names::BASH => run_bash(&mut session, &call.arguments, deadline)?,
                        CHECK_OUTPUT if settings.check_output.is_some() => {
                            (settings.check_output.map(|check| check()).unwrap_or_default(), false)
                        }
                        other => (format!("unknown tool `{other}`; the tools are {unknown_hint}"), true),
                    };
                    outcome.transcript.push(json!({ "result": call.id, "tool": call.tool, "output": output, "is_error": is_error }));
                    inbox.push(Incoming::ToolResult { call_id: call.id.clone(), tool: call.tool.clone(), output, is_error });
                }
            }
            AgentReply::Refusal { text, .. } => {
                outcome.transcript.push(json!({ "turn": outcome.turns, "refusal": text }));
                refusals += 1;
                if refusals >= 3 {
                    outcome.end = SideEnd::Refusals;
                    return Ok(outcome);
                }
                inbox.push(message_in(&mut outcome, UserMessageKind::Reminder, SIDE_REFUSAL_REMINDER));
            }
            AgentReply::Done => {
                outcome.end = SideEnd::AgentDone;
                return Ok(outcome);
            }
            AgentReply::ContextOverflow => {
                outcome.end = SideEnd::ContextOverflow;
                return Ok(outcome);
            }
            AgentReply::Abandoned | AgentReply::Halted => {
                outcome.end = over(deadline);
                return Ok(outcome);
            }
            AgentReply::Observed { .. }
            | AgentReply::TurnRequested
            | AgentReply::HarnessCall { .. }
            | AgentReply::Actions { .. }
            | AgentReply::FileReads { .. }
            | AgentReply::Exited { .. } => {
                // An agent that drives itself (cli:) needs an episode's sandbox and gateway.
                return Err(AgentError::new("a side session runs only agents the engine drives turn by turn, not cli: agents", true).into());
            }
        }
    }
}

fn message_in(outcome: &mut SideOutcome, kind: UserMessageKind, text: &str) -> Incoming {
    outcome.transcript.push(json!({ "message": kind, "text": text }));
    Incoming::UserMessage { kind, text: text.to_string() }
}

/// Runs one `bash` call, its timeout capped by the deadline; bad arguments are a tool error.
fn run_bash(session: &mut Session, arguments: &Value, deadline: &crate::session::Deadline) -> Result<(String, bool), SideError> {
    let args: CommandArgs = match tools::parse_args(names::BASH, arguments) {
        Ok(args) => args,
        Err(message) => return Ok((message, true)),
    };
    let wanted = args.timeout_sec.unwrap_or(DEFAULT_COMMAND_TIMEOUT_SEC).clamp(1, MAX_COMMAND_TIMEOUT_SEC);
    let left = deadline.cap(Duration::from_secs(wanted)).as_secs().max(1);
    let result = sandbox_ops::run_command(session, Shell::Bash, &args.command, left)?;
    let output = result.to_output();
    Ok((output.output, output.is_error))
}

/// Runs `package`'s evaluator on `workspace` (its scratch copies under `scratch`) and scores
/// the result by the task's scoring kind, exactly as a submission's evaluation.
///
/// # Errors
/// [`EpisodeError::Evaluation`] when the evaluator fails or its result cannot be scored;
/// [`EpisodeError::Infrastructure`] when it cannot start in the sandbox.
pub fn evaluate_workspace(
    package: &TaskPackage,
    sandbox: &SandboxConfig,
    host: &HostView,
    workspace: &Path,
    scratch: &Path,
) -> Result<(EvalResult, Scored), EpisodeError> {
    sandbox_ops::evaluate_package(package, sandbox, host, workspace, scratch)
}
