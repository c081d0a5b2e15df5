//! # specgap-agents
//!
//! Agents that drive episode sessions through [`specgap_engine::session::Agent`] (DESIGN §5):
//!
//! * [`scripted`]: `scripted:gold | literal | starter | mutant:<id>`, apply a solution overlay
//!   and submit;
//! * [`replay`]: `replay:<file>`, a plain JSON Lines script or a stored trajectory;
//! * [`chat`]: `chat:<model>`, the tool-calling loop over an OpenAI-compatible endpoint, and
//!   the LLM owner / customer ([`chat::ChatUser`]);
//! * [`cli`]: `cli:<adapter>`, external CLI agents (`cli:mini-swe-agent[@version]`,
//!   `cli:command=<template>`) run in the episode's sandbox behind the model gateway.
//!
//! [`prompt_dir`] reads a `--prompts DIR` of replacement prompt files (engine and user prompts).
//!
//! [`parse_agent_spec`] turns a command-line spec into an [`AgentSpec`], which says whether it
//! applies to a task ([`AgentSpec::applicability`]) and builds the agent ([`AgentSpec::build`]).
#![deny(missing_docs)]

pub mod chat;
pub mod cli;
pub mod prompt_dir;
pub mod replay;
pub mod scripted;

use std::path::PathBuf;

use specgap_engine::condition::NotApplicable;
use specgap_engine::runner::{AgentFactory, PlannedEpisode};
use specgap_engine::session::{Agent, AgentError};
use specgap_protocol::run::ComponentRef;
use specgap_task::TaskPackage;

pub use replay::{ReplayAgent, ReplayError, ScriptTurn, parse_script};
pub use scripted::{ScriptedAgent, Solution};

/// A parsed agent spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSpec {
    /// `scripted:<solution>`.
    Scripted(Solution),
    /// `replay:<path>`.
    Replay(PathBuf),
    /// `chat:<model>`.
    Chat(String),
    /// `cli:<adapter>`.
    Cli(CliSpec),
}

/// The adapter part of a `cli:` spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliSpec {
    /// `cli:mini-swe-agent` or `cli:mini-swe-agent@<version>`.
    MiniSweAgent {
        /// The pinned version, when given.
        version: Option<String>,
    },
    /// `cli:command=<template>`.
    Command {
        /// The command template.
        template: String,
    },
    /// A vendor's agent CLI installed from npm or PyPI ([`VENDOR_ADAPTERS`]): `cli:<adapter>` or
    /// `cli:<adapter>@<version>`.
    Vendor {
        /// The adapter's name (`claude-code`, `codex`, `opencode`, `gemini-cli`, `openhands`).
        adapter: &'static str,
        /// The pinned version, when given.
        version: Option<String>,
    },
}

/// The vendors' agent CLIs with an adapter (issue 15; `openhands`, from PyPI, issue 24):
/// `cli:<name>[@version]`.
pub const VENDOR_ADAPTERS: &[&str] = &["claude-code", "codex", "opencode", "gemini-cli", "openhands"];

impl CliSpec {
    /// The adapter's name as stored (`mini-swe-agent`, `command`).
    pub fn adapter(&self) -> &'static str {
        match self {
            CliSpec::MiniSweAgent { .. } => "mini-swe-agent",
            CliSpec::Command { .. } => "command",
            CliSpec::Vendor { adapter, .. } => adapter,
        }
    }

    /// The version the spec pins (`cli:<adapter>@<version>`), if any; `None` means the
    /// adapter's pinned default, and always for `cli:command`.
    pub fn version(&self) -> Option<&str> {
        match self {
            CliSpec::MiniSweAgent { version } | CliSpec::Vendor { version, .. } => version.as_deref(),
            CliSpec::Command { .. } => None,
        }
    }
}

/// Why an agent spec does not parse or build.
#[derive(Debug, thiserror::Error)]
pub enum AgentSpecError {
    /// Not a known agent kind.
    #[error(
        "unknown agent `{0}`; expected scripted:gold|literal|starter|mutant:<id>, replay:<file>, chat:<model>, \
         cli:mini-swe-agent|claude-code|codex|opencode|gemini-cli|openhands[@version] or cli:command=<template>"
    )]
    Unknown(String),
    /// `cli:` with an unknown adapter.
    #[error(
        "unknown cli: adapter in `{0}`; expected cli:mini-swe-agent|claude-code|codex|opencode|gemini-cli|openhands[@version] or cli:command=<template>"
    )]
    BadAdapter(String),
    /// `scripted:` with an unknown solution.
    #[error("unknown scripted agent `{0}`; expected scripted:gold, scripted:literal, scripted:starter or scripted:mutant:<id>")]
    BadSolution(String),
    /// `replay:` or `chat:` with nothing after the colon.
    #[error("agent `{0}` needs a value after the colon")]
    Empty(String),
    /// The replay source cannot be read.
    #[error("cannot load agent `{spec}`")]
    Replay {
        /// The spec.
        spec: String,
        /// Why.
        #[source]
        source: ReplayError,
    },
    /// This crate cannot build the agent kind.
    #[error("agent `{0}` is not built by specgap-agents yet")]
    NotBuilt(String),
}

/// Parses `scripted:gold|literal|starter|mutant:<id>`, `replay:<file>` or `chat:<model>`.
///
/// # Errors
/// [`AgentSpecError`] saying what was expected.
pub fn parse_agent_spec(text: &str) -> Result<AgentSpec, AgentSpecError> {
    let text = text.trim();
    let (kind, value) = text.split_once(':').ok_or_else(|| AgentSpecError::Unknown(text.into()))?;
    match kind {
        "scripted" => Solution::parse(value).map(AgentSpec::Scripted).ok_or_else(|| AgentSpecError::BadSolution(text.into())),
        "replay" if value.is_empty() => Err(AgentSpecError::Empty(text.into())),
        "replay" => Ok(AgentSpec::Replay(PathBuf::from(value))),
        "chat" if value.is_empty() => Err(AgentSpecError::Empty(text.into())),
        "chat" => Ok(AgentSpec::Chat(value.into())),
        "cli" => parse_cli(value).map(AgentSpec::Cli).ok_or_else(|| AgentSpecError::BadAdapter(text.into())),
        _ => Err(AgentSpecError::Unknown(text.into())),
    }
}

/// The adapter part of `cli:<value>`.
fn parse_cli(value: &str) -> Option<CliSpec> {
    if let Some(template) = value.strip_prefix("command=") {
        return (!template.trim().is_empty()).then(|| CliSpec::Command { template: template.to_string() });
    }
    let (name, version) = match value.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (value, None),
    };
    let version_ok = version.is_none_or(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'));
    if !version_ok {
        return None;
    }
    if name == "mini-swe-agent" {
        return Some(CliSpec::MiniSweAgent { version: version.map(str::to_string) });
    }
    let adapter = VENDOR_ADAPTERS.iter().find(|a| **a == name)?;
    Some(CliSpec::Vendor { adapter, version: version.map(str::to_string) })
}

impl AgentSpec {
    /// The canonical spec string.
    pub fn canonical(&self) -> String {
        match self {
            AgentSpec::Scripted(s) => format!("scripted:{}", s.name()),
            AgentSpec::Replay(path) => format!("replay:{}", path.display()),
            AgentSpec::Chat(model) => format!("chat:{model}"),
            AgentSpec::Cli(CliSpec::MiniSweAgent { version: None }) => "cli:mini-swe-agent".into(),
            AgentSpec::Cli(CliSpec::MiniSweAgent { version: Some(v) }) => format!("cli:mini-swe-agent@{v}"),
            AgentSpec::Cli(CliSpec::Command { template }) => format!("cli:command={template}"),
            AgentSpec::Cli(CliSpec::Vendor { adapter, version: None }) => format!("cli:{adapter}"),
            AgentSpec::Cli(CliSpec::Vendor { adapter, version: Some(v) }) => format!("cli:{adapter}@{v}"),
        }
    }

    /// Whether the agent can run under `condition`: a `cli:` agent cannot switch its tools
    /// between the planning and the execution phase, so `plan` does not apply to it (issue 14
    /// item 1; recorded as not applicable).
    ///
    /// # Errors
    /// [`NotApplicable`] saying why.
    pub fn applicability_under(&self, condition: &specgap_engine::Condition) -> Result<(), NotApplicable> {
        if matches!(self, AgentSpec::Cli(_)) && condition.is_plan() {
            return Err(NotApplicable::new(format!(
                "agent {} cannot switch its tools between planning and execution, which plan mode needs",
                self.canonical()
            )));
        }
        Ok(())
    }

    /// Whether the agent can run on `package` (DESIGN §4): a scripted agent needs its overlay
    /// (`starter` always applies). A `cli:` agent applies to image environments too; whether
    /// its CLI can run in a particular image is checked once the image is built
    /// ([`cli::image::check`]), before anything starts.
    ///
    /// # Errors
    /// [`NotApplicable`] naming the missing overlay.
    pub fn applicability(&self, package: &TaskPackage) -> Result<(), NotApplicable> {
        let AgentSpec::Scripted(solution) = self else { return Ok(()) };
        let name = solution.name();
        if *solution == Solution::Starter || package.solution(&name).is_some() {
            return Ok(());
        }
        let dir = match solution {
            Solution::Mutant(id) => format!("solutions/mutants/{id}/"),
            other => format!("solutions/{}/", other.name()),
        };
        Err(NotApplicable::new(format!("agent scripted:{name} needs {dir}")))
    }

    /// Builds a fresh agent for one episode attempt.
    ///
    /// # Errors
    /// [`AgentSpecError::Replay`] when a replay source cannot be read;
    /// [`AgentSpecError::NotBuilt`] for `chat:`, which needs its configuration
    /// ([`AgentSpec::build_with`]).
    pub fn build(&self) -> Result<Box<dyn Agent + Send>, AgentSpecError> {
        match self {
            AgentSpec::Scripted(solution) => Ok(Box::new(ScriptedAgent::new(solution.clone()))),
            AgentSpec::Replay(path) => ReplayAgent::load(path)
                .map(|agent| Box::new(agent) as Box<dyn Agent + Send>)
                .map_err(|source| AgentSpecError::Replay { spec: self.canonical(), source }),
            AgentSpec::Chat(_) | AgentSpec::Cli(_) => Err(AgentSpecError::NotBuilt(self.canonical())),
        }
    }
}

impl AgentSpec {
    /// Builds a fresh agent for one episode attempt from its stored configuration (the
    /// component table of `run.toml`): `chat:` reads a [`chat::ChatConfig`] from `config`;
    /// other kinds ignore it and behave as [`AgentSpec::build`]. `seed` seeds the chat
    /// agent's retry jitter (derive it from the run seed and the episode).
    ///
    /// # Errors
    /// [`AgentError`] when the configuration is not a chat configuration, the HTTP client
    /// cannot be built, or [`AgentSpec::build`] fails.
    pub fn build_with(&self, config: &toml::Table, seed: u64) -> Result<Box<dyn Agent + Send>, AgentError> {
        match self {
            AgentSpec::Chat(_) => {
                let chat = chat::ChatConfig::from_table(config)
                    .map_err(|e| AgentError::with_source("cannot read the chat agent configuration", true, e))?;
                Ok(Box::new(chat::ChatAgent::new(&chat, seed)?))
            }
            AgentSpec::Cli(_) => {
                let cli = cli::CliConfig::from_table(config)
                    .map_err(|e| AgentError::with_source("cannot read the cli: agent configuration", true, e))?;
                Ok(Box::new(cli::CliAgent::new(&cli)?))
            }
            _ => Ok(self.build()?),
        }
    }
}

/// A seed for an episode's model clients: the run seed mixed with the episode id (FNV-1a)
/// and a per-role `salt`, so retries' jitter differs between episodes yet is reproducible.
pub fn episode_seed(episode: &PlannedEpisode, salt: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in episode.id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^ episode.key.seed.rotate_left(17) ^ salt
}

/// The agent factory of a run: parses each agent's spec and builds it from its stored
/// configuration ([`AgentSpec::build_with`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Agents;

impl AgentFactory for Agents {
    fn make(&self, agent: &ComponentRef, episode: &PlannedEpisode, _package: &TaskPackage) -> Result<Box<dyn Agent + Send>, AgentError> {
        parse_agent_spec(&agent.spec)?.build_with(&agent.config, episode_seed(episode, 0x6167_656e))
    }
}

impl From<AgentSpecError> for AgentError {
    fn from(e: AgentSpecError) -> Self {
        AgentError::with_source("cannot build the agent", true, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for text in [
            "scripted:gold",
            "scripted:literal",
            "scripted:starter",
            "scripted:mutant:rule-a",
            "replay:x/y.jsonl",
            "chat:qwen3",
            "cli:mini-swe-agent",
            "cli:mini-swe-agent@2.4.6",
            "cli:command=my-agent --task-file {instruction_file}",
            "cli:claude-code",
            "cli:claude-code@2.1.332",
            "cli:codex",
            "cli:codex@0.171.0",
        ] {
            assert_eq!(parse_agent_spec(text).unwrap().canonical(), text);
        }
        assert_eq!(parse_agent_spec("scripted:mutant:a").unwrap(), AgentSpec::Scripted(Solution::Mutant("a".into())));
        assert!(matches!(parse_agent_spec("scripted:silver"), Err(AgentSpecError::BadSolution(_))));
        assert!(matches!(parse_agent_spec("scripted:mutant:"), Err(AgentSpecError::BadSolution(_))));
        assert!(matches!(parse_agent_spec("gold"), Err(AgentSpecError::Unknown(_))));
        assert!(matches!(parse_agent_spec("replay:"), Err(AgentSpecError::Empty(_))));
        assert!(matches!(parse_agent_spec("cli:claude"), Err(AgentSpecError::BadAdapter(_))));
        assert!(matches!(parse_agent_spec("cli:command="), Err(AgentSpecError::BadAdapter(_))));
        assert!(matches!(parse_agent_spec("cli:mini-swe-agent@"), Err(AgentSpecError::BadAdapter(_))));
        assert!(matches!(parse_agent_spec("cli:codex@"), Err(AgentSpecError::BadAdapter(_))));
        assert!(matches!(parse_agent_spec("cli:codex@1 2"), Err(AgentSpecError::BadAdapter(_))));
        assert_eq!(
            parse_agent_spec("cli:claude-code@2.1.332").unwrap(),
            AgentSpec::Cli(CliSpec::Vendor { adapter: "claude-code", version: Some("2.1.332".into()) })
        );
        let plan = specgap_engine::Condition::parse("plan").unwrap();
        let why = parse_agent_spec("cli:mini-swe-agent").unwrap().applicability_under(&plan).unwrap_err();
        assert!(why.reason.contains("cannot switch its tools"), "{}", why.reason);
        assert!(parse_agent_spec("chat:m").unwrap().applicability_under(&plan).is_ok());
    }

    #[test]
    fn no_cli_agent_runs_a_planning_phase() {
        // Plan mode's planning phase is read-only (seed 000 App. F.3) and holds only the
        // harness's own commands to it; every `cli:` agent, under every plan variant, is planned
        // as not applicable (and the engine refuses one that arrives anyway).
        for condition in ["plan", "plan+ask=off", "plan+submissions=2"] {
            let condition = specgap_engine::Condition::parse(condition).unwrap();
            for spec in [
                "cli:mini-swe-agent",
                "cli:claude-code",
                "cli:codex",
                "cli:opencode",
                "cli:gemini-cli",
                "cli:openhands",
                "cli:command=my-agent {instruction_file}",
            ] {
                let refused = parse_agent_spec(spec).unwrap().applicability_under(&condition).unwrap_err();
                assert_eq!(
                    refused.reason,
                    format!("agent {spec} cannot switch its tools between planning and execution, which plan mode needs"),
                    "{condition}"
                );
            }
            for spec in ["chat:m", "replay:x.jsonl", "scripted:gold"] {
                assert!(parse_agent_spec(spec).unwrap().applicability_under(&condition).is_ok(), "{spec}");
            }
        }
    }
}
