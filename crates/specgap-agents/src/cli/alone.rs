//! One `cli:` agent program run outside an engine episode: no task package, no evaluator, no
//! submissions: the program is started with a message, in the same sandbox and behind the
//! same model gateway as in an episode ([`super::CliAgent`]: the key stays in the harness,
//! the sandbox's network reaches nothing but the gateway), and runs until it exits or its wall
//! time is up. `specgap synthesize` plays each of its roles this way (`specgap-synth`
//! `cli_role`).
//!
//! The driver is the engine's own protocol of an agent that drives itself, reduced to what a
//! lone program needs: every [`Agent::next_turn`] admits the next step; model exchanges are
//! written, in order, to the job's `trajectory.jsonl` (one [`EventKind`] as JSON per line,
//! tool results before the exchange that carried them) and their usage summed; a harness
//! call (`ask_user`, `submit`) is answered with [`NO_HARNESS`] as an error, since no harness
//! tool is offered; the program's exit ends the run with its final text. At the wall time the
//! agent is halted and the run is [`AloneEnd::WallTime`].
//!
//! What the sandbox shows: the job's `workspace` writable at `/workspace` (the working
//! directory), then the job's `mounts` in order (a read-only mount at `/workspace` covers the
//! workspace), the agent's private home and installation as in an episode.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use specgap_engine::condition::{BudgetFlags, Budgets, Condition, Preset};
use specgap_engine::session::{Agent, AgentError, AgentReply, Deadline, Incoming, Opening, SessionLink, UsageSink, Workplace};
use specgap_protocol::event::{EventKind, Usage};
use specgap_sandbox::Mount;

use super::{CliAgent, CliConfig};

/// What a harness call gets: a lone program is offered no harness tool.
pub const NO_HARNESS: &str = "no harness tool is offered here; write what you were asked to write and end your turn";

/// One lone run (module guide).
#[derive(Debug, Clone)]
pub struct AloneJob {
    /// A label for the gateway's retry seed and messages (`planner-1`).
    pub id: String,
    /// Mounted writable at `/workspace`, the working directory.
    pub workspace: PathBuf,
    /// Mounts after the workspace's.
    pub mounts: Vec<Mount>,
    /// A fresh private directory of the run (the agent's home, its task files).
    pub scratch: PathBuf,
    /// Where `trajectory.jsonl` and the gateway's journal (`gateway-1.jsonl`) go.
    pub record_dir: PathBuf,
    /// The system prompt (given as the adapter takes one: its own option, or the message's
    /// preamble).
    pub system_prompt: String,
    /// The message the program starts with.
    pub message: String,
    /// Wall time of the run.
    pub wall: Duration,
}

/// How a lone run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AloneEnd {
    /// The program exited.
    Exited,
    /// Its wall time ran out (it was halted).
    WallTime,
}

/// What a lone run left.
#[derive(Debug, Clone, PartialEq)]
pub struct AloneOutcome {
    /// How it ended.
    pub end: AloneEnd,
    /// The program's final reply text, when it had one.
    pub final_text: Option<String>,
    /// Its exit status (`None` when it did not exit, or was killed by a signal).
    pub exit_status: Option<i32>,
    /// What its model requests spent (priced by the endpoint's `price`, when it has one).
    pub usage: Usage,
    /// Model exchanges made.
    pub exchanges: u32,
    /// `<record_dir>/trajectory.jsonl`.
    pub trajectory: PathBuf,
}

/// A lone run that failed, with what its model requests spent before it did (the requests the
/// gateway answered count: a run whose model service failed at its third request spent the
/// first two).
#[derive(Debug)]
pub struct AloneFailure {
    /// Why it failed.
    pub error: AgentError,
    /// What its model requests spent up to the failure (zero when it failed before any).
    pub usage: Usage,
    /// `<record_dir>/trajectory.jsonl`, as far as it was written.
    pub trajectory: PathBuf,
}

impl std::fmt::Display for AloneFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for AloneFailure {
    /// The failure's own cause (the display is the [`AgentError`]'s, so its cause is next).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// Runs `config`'s program once for `job` (module guide).
///
/// # Errors
/// [`AloneFailure`]: the adapter cannot be used, the sandbox or the gateway cannot be set up,
/// the model service failed after its retries, the trajectory cannot be written; it carries
/// what the run spent until then.
pub fn run_alone(config: &CliConfig, job: &AloneJob) -> Result<AloneOutcome, AloneFailure> {
    let trajectory = job.record_dir.join("trajectory.jsonl");
    let link = SessionLink { deadline: Deadline::at(Instant::now() + job.wall), usage: UsageSink::detached(specgap_store::Role::Agent) };
    run_linked(config, job, &link).map_err(|error| AloneFailure { error, usage: link.usage.total(), trajectory })
}

/// [`run_alone`] with its session link (whose usage sink outlives a failure).
fn run_linked(config: &CliConfig, job: &AloneJob, link: &SessionLink) -> Result<AloneOutcome, AgentError> {
    let io = |what: &str, e: std::io::Error| AgentError::with_source(format!("cannot write {what}"), false, e);
    std::fs::create_dir_all(&job.record_dir).map_err(|e| io(&job.record_dir.display().to_string(), e))?;
    std::fs::create_dir_all(&job.scratch).map_err(|e| io(&job.scratch.display().to_string(), e))?;
    let trajectory = job.record_dir.join("trajectory.jsonl");
    let mut events = std::fs::File::create(&trajectory).map_err(|e| io(&trajectory.display().to_string(), e))?;
    let mut agent = CliAgent::new(config)?.with_mounts(job.mounts.clone());
    agent.attach(link);
    agent.enter(&workplace(job)?)?;
    let opening = Opening { system_prompt: job.system_prompt.clone(), message: job.message.clone(), tools: Vec::new() };
    let mut write = |event: &EventKind| -> Result<(), AgentError> {
        let line = serde_json::to_string(event).map_err(|e| io("a trajectory event", std::io::Error::other(e)))?;
        writeln!(events, "{line}").map_err(|e| io(&trajectory.display().to_string(), e))
    };
    let result = drive(&mut agent, &opening, &mut write);
    agent.stop(&[]);
    for (_, event) in agent.records_since_last() {
        write(&event)?;
    }
    let (end, final_text, exit_status, exchanges) = result?;
    Ok(AloneOutcome { end, final_text, exit_status, usage: link.usage.total(), exchanges, trajectory })
}

type Driven = (AloneEnd, Option<String>, Option<i32>, u32);

/// The loop of [`run_alone`]: starts the program and answers its replies until it exits.
fn drive(
    agent: &mut CliAgent,
    opening: &Opening,
    write: &mut dyn FnMut(&EventKind) -> Result<(), AgentError>,
) -> Result<Driven, AgentError> {
    agent.start(opening)?;
    let mut inbox: Vec<Incoming> = Vec::new();
    let mut exchanges = 0;
    loop {
        let reply = agent.next_turn(&std::mem::take(&mut inbox))?;
        match reply {
            AgentReply::Observed { results, exchange, .. } => {
                for result in results {
                    write(&EventKind::ToolResult {
                        call_id: result.call_id,
                        tool: result.tool,
                        output: result.output,
                        is_error: result.is_error,
                    })?;
                }
                if let Some(exchange) = exchange {
                    exchanges += 1;
                    write(&exchange)?;
                }
            }
            AgentReply::HarnessCall { call } => {
                inbox.push(Incoming::ToolResult { call_id: call.id, tool: call.tool, output: NO_HARNESS.into(), is_error: true });
            }
            AgentReply::Exited { text, exit, .. } => {
                let status = match exit.as_ref() {
                    EventKind::AgentExit { status, .. } => *status,
                    _ => None,
                };
                write(&exit)?;
                return Ok((AloneEnd::Exited, text, status, exchanges));
            }
            AgentReply::Abandoned | AgentReply::Halted => return Ok((AloneEnd::WallTime, None, None, exchanges)),
            AgentReply::Actions { actions } => write(&EventKind::Actions { turn: exchanges, actions })?,
            // Nothing to do: the next call admits a waiting request; reads are not measured here.
            AgentReply::TurnRequested | AgentReply::FileReads { .. } => {}
            AgentReply::Turn { .. } | AgentReply::Done | AgentReply::Refusal { .. } | AgentReply::ContextOverflow => {
                return Err(AgentError::new("a cli: agent answered as a pulled agent", false));
            }
        }
    }
}

/// The workplace of a lone run: the system's host view, the sandbox on, the job's wall time.
fn workplace(job: &AloneJob) -> Result<Workplace, AgentError> {
    let host = specgap_sandbox::HostView::system().map_err(|e| AgentError::with_source("cannot read the host's system view", false, e))?;
    let flags = BudgetFlags { wall_sec: Some(job.wall.as_secs().max(1)), ..BudgetFlags::default() };
    let budgets = Budgets::resolve(&Condition::new(Preset::Full), &specgap_protocol::package::Budget::default(), &flags);
    Ok(Workplace {
        episode_id: job.id.clone(),
        attempt: 1,
        workspace: job.workspace.clone(),
        scratch: job.scratch.clone(),
        store_dir: job.record_dir.clone(),
        host,
        sandbox: specgap_sandbox::SandboxConfig::default(),
        budgets,
        scaffold_prompt_only: false,
        text_questions: false,
    })
}
