//! `cli:<adapter>`: external CLI agents (issue 14; DESIGN §5), run inside the episode's sandbox
//! under the engine's one set of episode rules.
//!
//! ## How an episode runs
//! 1. [`CliAgent::enter`] gets the episode's [`Workplace`]; [`CliAgent::start`] writes the
//!    opening message (and the condition's system prompt, as the adapter takes it) into a
//!    directory mounted read-only at `/run/specgap/task`, makes the private home (mounted at
//!    `/home/specgap`, `HOME`), builds the sandbox ([`specgap_sandbox::AgentSandbox`]: the
//!    workspace, the home, `/tmp` and nothing else writable; the adapter's installation
//!    read-only), binds the model gateway's listener inside the sandbox's network namespace
//!    (nothing outside the sandbox can reach it, and nothing inside can reach anything else),
//!    arms the network tripwire there ([`network`]: every other lookup or connection is
//!    recorded and goes nowhere), and starts the adapter's command with the gateway as its OpenAI base URL and a
//!    per-episode token as its API key. The real key stays in the harness.
//! 2. Everything the agent does arrives in order on one queue ([`link`]): model exchanges
//!    (recorded with their usage as they end), turn requests (its next main-loop request,
//!    held until the engine's next [`Agent::next_turn`] grants it), harness calls, and the
//!    exit of its program. Each becomes one [`AgentReply`] (module guide of
//!    `specgap_engine::session`); [`exchange`] turns exchanges into trajectory material.
//! 3. The engine's [`Agent::suspend`] freezes the sandbox while the workspace is copied; at
//!    the wall budget the agent is frozen at once and told nothing more; [`Agent::stop`]
//!    refuses every further request, answers a waiting harness call, SIGTERMs the program,
//!    SIGKILLs the whole sandbox after the grace period and shuts the gateway down.
//!
//! Adapters ([`adapter::Adapter`], docs/adapters.md): [`mini_swe_agent`], [`command`],
//! [`claude_code`], [`codex`], [`opencode`], [`gemini_cli`] and [`openhands`].
//!
//! How the agent's questions reach the customer is its ask channel ([`channel`]: `text`,
//! `mcp`, or `native`, the CLI's own question tool, which only opencode's adapter serves:
//! [`opencode_server`]), stored in its configuration; under `text` and `native` in a delivery
//! condition the harness tools it is offered leave `ask_user` out.
#![allow(clippy::module_name_repetitions)]

pub mod adapter;
pub mod alone;
mod bridge;
pub mod channel;
pub mod claude_code;
pub mod codex;
pub mod command;
mod exchange;
pub mod gemini_cli;
mod harness;
pub mod home;
pub mod image;
mod link;
pub mod mini_swe_agent;
mod network;
pub mod opencode;
pub mod opencode_server;
pub mod openhands;
mod venv;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening, SessionLink, Workplace};
use specgap_gateway::{GatewayConfig, GatewayHandle, Protocol, RetryPolicy, Secret, Upstream};
use specgap_protocol::event::{EventKind, Usage, UserMessageKind};
use specgap_sandbox::{AgentSandbox, CommandSpec, Limits, Mount};

use self::adapter::{Adapter, Launch, SANDBOX_HOME, SANDBOX_TASK_DIR, SystemPromptRoute, TOKEN_ENV};
use self::exchange::Conversation;
use self::harness::{PendingCall, SignalledSubmit};
use self::link::{Happened, Link, Supervision};

/// How long the engine's thread waits on the queue before it looks at the program again.
const POLL: Duration = Duration::from_millis(5);
/// How long a harness call waits for the main-loop stream under way to be recorded: a CLI
/// acts on a tool call as soon as it streams in, and a response ends moments after its last
/// call (a stream still going after that releases the call anyway).
const CALL_ORDER_WAIT: Duration = Duration::from_secs(2);
/// The text a harness call gets once the episode is over.
pub const EPISODE_OVER: &str = "the work has ended: nothing more is accepted; stop working";
/// The longest the end waits for the gateway to hand its last refusals to the agent.
const REFUSAL_DELIVERY: Duration = Duration::from_millis(200);
/// The detail of an exchange abandoned at the wall budget (its `model_exchange` event).
pub const ABANDONED_AT_WALL_BUDGET: &str = "abandoned at the wall budget";
/// The detail of an exchange abandoned by a stop request (Ctrl-C).
pub const ABANDONED_AT_STOP: &str = "abandoned when the run was stopped";
/// The detail of an exchange abandoned when the episode ended for another reason (a budget,
/// a loop rule, a submission).
pub const ABANDONED_AT_END: &str = "abandoned at the end of the episode";
/// Bytes of the program's standard error kept in the `agent_exit` event.
const STDERR_TAIL: usize = 2048;

/// The stored configuration of a `cli:` agent: its table in `run.toml` (docs/store-schema.md),
/// `kind = "cli"`, `adapter`, for installed adapters `version`, `package` and `tree_hash`,
/// for `cli:command` its `command` template, and the model endpoint the gateway forwards to as
/// `[endpoint]` (a chat configuration: model, base URL, the variable holding the key — never
/// the key — model arguments, timeout, retries, price).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CliConfig {
    /// `mini-swe-agent` or `command`.
    pub adapter: String,
    /// The installed version (adapters installed by `specgap agents install`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The registry package of the installation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The installed tree's hash (part of the agent's configuration hash, so of its episode
    /// keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_hash: Option<String>,
    /// The command template (`cli:command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The model endpoint: the gateway serves `endpoint.model` alone and forwards it to
    /// `endpoint.base_url` with the key from `endpoint.api_key_env`. Streaming, emulated tools
    /// and the context window are the CLI's own business and are ignored.
    pub endpoint: crate::chat::ChatConfig,
    /// Between SIGTERM and SIGKILL at the end, milliseconds.
    #[serde(default = "default_grace_ms", skip_serializing_if = "is_default_grace")]
    pub stop_grace_ms: u64,
    /// How its questions reach the customer ([`channel::AskChannel`]), resolved when the run
    /// is configured ([`CliConfig::resolve_ask_channel`]). `None` is a configuration stored
    /// before the channel was a setting, which ran with `mcp`
    /// ([`CliConfig::effective_ask_channel`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask_channel: Option<channel::AskChannel>,
}

fn default_grace_ms() -> u64 {
    DEFAULT_STOP_GRACE_MS
}

fn is_default_grace(ms: &u64) -> bool {
    *ms == DEFAULT_STOP_GRACE_MS
}

/// The default grace between SIGTERM and SIGKILL when an episode ends, milliseconds.
pub const DEFAULT_STOP_GRACE_MS: u64 = 3000;

/// Why a `cli:` configuration cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CliConfigError {
    /// The stored table is not a `cli:` configuration.
    #[error("the stored agent configuration is not a cli: configuration")]
    FromToml(#[source] toml::de::Error),
    /// The configuration cannot be written as a TOML table.
    #[error("cannot store the cli: configuration in run.toml")]
    ToToml(#[source] toml::ser::Error),
}

impl CliConfig {
    /// Defaults for `adapter` and `model` (the chat agent's endpoint defaults).
    pub fn new(adapter: impl Into<String>, model: impl Into<String>) -> Self {
        CliConfig {
            adapter: adapter.into(),
            version: None,
            package: None,
            tree_hash: None,
            command: None,
            endpoint: crate::chat::ChatConfig::new(model),
            stop_grace_ms: DEFAULT_STOP_GRACE_MS,
            ask_channel: None,
        }
    }

    /// The ask channel its episodes use: the stored one, `mcp` for a configuration stored
    /// without one.
    pub fn effective_ask_channel(&self) -> channel::AskChannel {
        self.ask_channel.unwrap_or(channel::AskChannel::Mcp)
    }

    /// Stores the ask channel `requested` (the adapter's default when `None`), checked against
    /// what the adapter can do.
    ///
    /// # Errors
    /// [`AgentError`] (deterministic): the adapter cannot be made ([`CliConfig::adapter`]);
    /// `native` for an adapter whose own question tool is not served (all but opencode);
    /// `text` for an adapter that cannot be resumed, whose answers could never come back.
    pub fn resolve_ask_channel(&mut self, requested: Option<channel::AskChannel>) -> Result<(), AgentError> {
        channel::refuse_unserved(&self.adapter, requested)?;
        let adapter = self.adapter()?;
        let chosen = requested.unwrap_or_else(|| adapter.default_ask_channel());
        if chosen == channel::AskChannel::Text && !adapter.can_resume() {
            return Err(AgentError::new(
                format!(
                    "--ask-channel text: {} cannot be resumed, so answers to questions in its reply could never reach it; use mcp",
                    adapter.spec()
                ),
                true,
            ));
        }
        self.ask_channel = Some(chosen);
        Ok(())
    }

    /// As a TOML table for `run.toml`.
    ///
    /// # Errors
    /// [`CliConfigError::ToToml`].
    pub fn to_table(&self) -> Result<toml::Table, CliConfigError> {
        toml::Table::try_from(self).map_err(CliConfigError::ToToml)
    }

    /// Read back from a stored table (`kind` ignored).
    ///
    /// # Errors
    /// [`CliConfigError::FromToml`].
    pub fn from_table(table: &toml::Table) -> Result<Self, CliConfigError> {
        toml::Value::Table(table.clone()).try_into().map_err(CliConfigError::FromToml)
    }

    /// The installation of an installed adapter (`specgap agents install`) at the stored
    /// version, in the default cache ([`specgap_adapters::default_root`]), checked against the
    /// stored tree hash: an episode never runs a tree other than the one its key names.
    ///
    /// # Errors
    /// [`AgentError`] (deterministic): an adapter or version without a lock, an installation
    /// that is missing (naming the install command), incomplete or changed.
    pub fn installation(&self) -> Result<specgap_adapters::Installation, AgentError> {
        let refused = |e: &dyn std::fmt::Display| AgentError::new(e.to_string(), true);
        let version = specgap_adapters::AdapterVersion::resolve(&self.adapter, self.version.as_deref()).map_err(|e| refused(&e))?;
        let root = specgap_adapters::default_root().map_err(|e| refused(&e))?;
        let installation = specgap_adapters::Installation::open(&root, &version).map_err(|e| refused(&e))?;
        installation.verify().map_err(|e| refused(&e))?;
        if let Some(stored) = &self.tree_hash
            && stored != installation.tree_hash()
        {
            return Err(AgentError::new(
                format!(
                    "the installation of {} has tree hash {}, and this agent was configured with {stored}; reinstall the configured tree or start a new run",
                    version.label(),
                    installation.tree_hash()
                ),
                true,
            ));
        }
        Ok(installation)
    }

    /// The adapter this configuration names, over its installation.
    ///
    /// # Errors
    /// [`AgentError`] (deterministic) for an unknown adapter, a missing installation or a bad
    /// template.
    pub fn adapter(&self) -> Result<Box<dyn Adapter>, AgentError> {
        match self.adapter.as_str() {
            "mini-swe-agent" => {
                let installation = self.installation()?;
                let version = installation.manifest().version.clone();
                let adapter = mini_swe_agent::MiniSweAgent::new(&installation.dir().join("venv"), &version)
                    .map_err(|e| AgentError::new(format!("the installation of cli:mini-swe-agent@{version} is unusable ({e}); reinstall it with `specgap agents install mini-swe-agent@{version}`"), true))?;
                Ok(Box::new(adapter))
            }
            "opencode" => {
                let installation = self.installation()?;
                let version = installation.manifest().version.clone();
                let adapter = opencode::OpenCode::new(installation.dir(), &version).map_err(|e| AgentError::new(e, true))?;
                Ok(Box::new(adapter.with_native_questions(self.effective_ask_channel() == channel::AskChannel::Native)))
            }
            "gemini-cli" => {
                let installation = self.installation()?;
                let version = installation.manifest().version.clone();
                let node = installation.manifest().node.as_ref().map(|n| n.path.clone());
                let adapter = gemini_cli::GeminiCli::new(installation.dir(), &version, node, &installation.mounts())
                    .map_err(|e| AgentError::new(e, true))?;
                Ok(Box::new(adapter))
            }
            "command" => {
                let template = self.command.clone().unwrap_or_default();
                Ok(Box::new(command::CommandAdapter::new(&template).map_err(|e| AgentError::new(e, true))?))
            }
            "claude-code" => {
                let installation = self.installation()?;
                let version = installation.manifest().version.clone();
                let adapter =
                    claude_code::ClaudeCode::new(installation.dir(), &version).map_err(|e| unusable("claude-code", &version, &e))?;
                Ok(Box::new(adapter))
            }
            "openhands" => {
                let installation = self.installation()?;
                let version = installation.manifest().version.clone();
                let adapter = openhands::OpenHands::new(&installation.dir().join("venv"), &version)
                    .map_err(|e| unusable("openhands", &version, &e))?;
                Ok(Box::new(adapter))
            }
            "codex" => {
                let installation = self.installation()?;
                let version = installation.manifest().version.clone();
                let adapter = codex::Codex::new(installation.dir(), &version).map_err(|e| unusable("codex", &version, &e))?;
                Ok(Box::new(adapter))
            }
            other => Err(AgentError::new(
                format!("unknown cli: adapter `{other}`; expected {} or command=<template>", ADAPTERS.join(", ")),
                true,
            )),
        }
    }
}

/// The installed adapters `cli:<name>` can name (besides `cli:command=<template>`), in the
/// order `specgap run --help` lists them.
pub const ADAPTERS: &[&str] = &["mini-swe-agent", "claude-code", "codex", "opencode", "gemini-cli", "openhands"];

/// The error for an installation its adapter cannot use.
fn unusable(adapter: &str, version: &str, why: &str) -> AgentError {
    AgentError::new(
        format!(
            "the installation of cli:{adapter}@{version} is unusable ({why}); reinstall it with `specgap agents install {adapter}@{version}`"
        ),
        true,
    )
}

/// Where installed adapters live: the cache `specgap agents install` fills
/// ([`specgap_adapters::default_root`]); [`CliConfig::installation`] finds and checks one.
pub mod install {
    use std::path::PathBuf;

    /// The directory of installed agents: `$XDG_CACHE_HOME/specgap/agents`, else
    /// `~/.cache/specgap/agents` (a path that does not exist when neither is set).
    pub fn agents_dir() -> PathBuf {
        specgap_adapters::default_root().unwrap_or_else(|_| PathBuf::from("/nonexistent/specgap/agents"))
    }

    /// The installation directory of an adapter's `version` (`<agents dir>/<adapter>/<version>`).
    pub fn dir(adapter: &str, version: &str) -> PathBuf {
        agents_dir().join(adapter).join(version)
    }

    /// The virtual environment of a Python adapter's installed `version`.
    pub fn venv(adapter: &str, version: &str) -> PathBuf {
        dir(adapter, version).join("venv")
    }
}

/// One `cli:` agent for one episode attempt (module guide).
pub struct CliAgent {
    config: CliConfig,
    adapter: Box<dyn Adapter>,
    link: Arc<Link>,
    session: Option<SessionLink>,
    place: Option<Workplace>,
    opening: Option<Opening>,
    sandbox: Option<AgentSandbox>,
    gateway: Option<GatewayHandle>,
    conversation: Conversation,
    /// The harness call the engine is answering.
    pending: Option<Box<dyn PendingCall>>,
    /// Harness calls that came while the response carrying them was still streaming, and
    /// since when the first waits: they go to the engine after that exchange (bounded by
    /// [`CALL_ORDER_WAIT`]), so the trajectory shows the exchange before its calls.
    held: VecDeque<Box<dyn PendingCall>>,
    held_since: Option<Instant>,
    /// The turn request the engine was last given (granted by its next `next_turn`).
    granting: Option<u64>,
    /// Replies made ahead (the exit's log, its completion signal, the exit itself).
    queued: VecDeque<AgentReply>,
    /// The program's exit, seen but not yet reported (the queue is drained first).
    exited: Option<specgap_sandbox::ProgramExit>,
    /// How many times the program was started.
    starts: u32,
    token: String,
    stopped: bool,
    /// The gateway's base URL inside the sandbox.
    base_url: String,
    /// The gateway's base URL of each protocol the adapter speaks.
    protocol_urls: Vec<(Protocol, String)>,
    /// The harness tools' endpoint (from the start on).
    bridge: Option<bridge::EpisodeBridge>,
    /// The watcher of the CLI's own questions for the current start (`--ask-channel native`).
    questions: Option<opencode_server::QuestionWatcher>,
    /// The network tripwire (from the start on; taken by [`Agent::closing_records`]).
    tripwire: Option<network::EpisodeTripwire>,
    /// How many of the tripwire's attempts were handed to the engine already.
    attempts_taken: usize,
    /// The arrival of the exchange [`Agent::next_turn`] handed out last (and of the replies
    /// queued after it), `None` when what it handed out has no exchange: the engine writes
    /// that exchange after [`Agent::records_since_last`], so only attempts made before it
    /// may go first; the later ones wait for the next turn.
    records_until: Option<Instant>,
    /// On an image environment: the host runtime's mounts and the entry wrappers ([`image`]).
    image: Option<image::ImageLaunch>,
    /// Exchanges that ended after the engine stopped reading the agent (at the deadline or
    /// the end), as trajectory events for [`Agent::records_since_last`]: every exchange is in
    /// the trajectory with its outcome (issue 31 item 6).
    late: Vec<(Instant, EventKind)>,
    /// Mounts added after the workspace's ([`CliAgent::with_mounts`]): a role of `specgap
    /// synthesize` sees its inputs there ([`alone`]).
    extra_mounts: Vec<Mount>,
}

impl std::fmt::Debug for CliAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliAgent").field("adapter", &self.adapter.spec()).field("starts", &self.starts).finish_non_exhaustive()
    }
}

impl CliAgent {
    /// An agent for one attempt from its stored configuration.
    ///
    /// # Errors
    /// [`AgentError`] (deterministic) when the adapter cannot be used ([`CliConfig::adapter`]).
    pub fn new(config: &CliConfig) -> Result<Self, AgentError> {
        let adapter = config.adapter()?;
        Ok(CliAgent {
            config: config.clone(),
            adapter,
            link: Arc::default(),
            session: None,
            place: None,
            opening: None,
            sandbox: None,
            gateway: None,
            conversation: Conversation::default(),
            pending: None,
            held: VecDeque::new(),
            held_since: None,
            granting: None,
            queued: VecDeque::new(),
            exited: None,
            starts: 0,
            token: String::new(),
            stopped: false,
            base_url: String::new(),
            protocol_urls: Vec::new(),
            bridge: None,
            questions: None,
            tripwire: None,
            attempts_taken: 0,
            records_until: None,
            image: None,
            late: Vec::new(),
            extra_mounts: Vec::new(),
        })
    }

    /// The same agent with `mounts` added to its sandbox right after the workspace's, so a
    /// read-only mount at `/workspace` covers the workspace (outside an engine episode:
    /// [`alone`]). An engine episode adds none.
    #[must_use]
    pub fn with_mounts(mut self, mounts: Vec<Mount>) -> Self {
        self.extra_mounts = mounts;
        self
    }

    fn place(&self) -> Result<&Workplace, AgentError> {
        self.place.as_ref().ok_or_else(|| AgentError::new("a cli: agent was started without its workplace", true))
    }

    fn home(&self) -> Result<PathBuf, AgentError> {
        Ok(self.place()?.scratch.join("home"))
    }

    fn task_dir(&self) -> Result<PathBuf, AgentError> {
        Ok(self.place()?.scratch.join("task"))
    }

    fn deadline(&self) -> specgap_engine::session::Deadline {
        self.session.as_ref().map(|s| s.deadline.clone()).unwrap_or_default()
    }

    /// The first message: the opening message, with the condition's system prompt as its
    /// preamble unless the condition keeps the scaffold's prompts or the adapter passes the
    /// prompt through its own option.
    fn first_message(&self, opening: &Opening, scaffold_only: bool) -> String {
        if scaffold_only || opening.system_prompt.trim().is_empty() || self.adapter.system_prompt_route() == SystemPromptRoute::Option {
            return opening.message.clone();
        }
        format!("{}\n\n---\n\n{}", opening.system_prompt.trim_end(), opening.message)
    }

    /// The sandbox template: mounts, environment, limits.
    fn template(&self, place: &Workplace) -> Result<CommandSpec, AgentError> {
        let mut template = CommandSpec::shell("", &place.workspace);
        template.mounts.extend(self.extra_mounts.iter().cloned());
        let io = |what: &str, e: std::io::Error| AgentError::with_source(format!("cannot prepare the agent's {what}"), false, e);
        let home = self.home()?;
        let task = self.task_dir()?;
        std::fs::create_dir_all(&home).map_err(|e| io("home", e))?;
        template.mounts.push(Mount { host: home, sandbox: SANDBOX_HOME.into(), writable: true });
        template.mounts.push(Mount { host: task, sandbox: SANDBOX_TASK_DIR.into(), writable: false });
        for path in self.adapter.mounts() {
            // On an image the host's system directories are not shown: what of them the agent
            // needs comes through the host runtime's own mounts.
            if self.image.is_some() && image::is_host_system_path(&path) {
                continue;
            }
            template.mounts.push(Mount { sandbox: path.clone(), host: path, writable: false });
        }
        let bridge =
            self.bridge.as_ref().ok_or_else(|| AgentError::new("a cli: agent's sandbox was made before its harness tools", false))?;
        template.mounts.extend(bridge.mounts());
        let mut path: Vec<String> = vec![specgap_bridge::install::SANDBOX_BIN_DIR.to_string()];
        match &self.image {
            Some(launch) => {
                template.mounts.extend(launch.mounts.iter().cloned());
                path.push(image::HOST_BIN.to_string());
            }
            None => path.extend(self.adapter.path_dirs().iter().map(|d| d.display().to_string())),
        }
        path.push(place.host.path_var());
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path.join(":")),
            ("HOME".into(), SANDBOX_HOME.into()),
            ("XDG_CONFIG_HOME".into(), format!("{SANDBOX_HOME}/.config")),
            ("XDG_CACHE_HOME".into(), format!("{SANDBOX_HOME}/.cache")),
            ("XDG_DATA_HOME".into(), format!("{SANDBOX_HOME}/.local/share")),
            ("DO_NOT_TRACK".into(), "1".into()),
            ("NO_UPDATE_NOTIFIER".into(), "1".into()),
            ("NO_PROXY".into(), "*".into()),
        ];
        env.extend(bridge.env());
        env.extend(self.adapter.env(&self.launch("", false)));
        template.env.extend(env);
        template.limits = Limits::default();
        Ok(template)
    }

    /// On an image environment: refuses an adapter that cannot run there (before anything
    /// starts, naming the adapter and the image), then brings in the host's runtime and writes
    /// the wrappers of its entry programs and of the harness tools ([`image`]).
    fn prepare_image(
        &self,
        rootfs: &std::path::Path,
        bridge: &bridge::EpisodeBridge,
        place: &Workplace,
    ) -> Result<image::ImageLaunch, AgentError> {
        image::check(&self.config.adapter, rootfs).map_err(|why| {
            AgentError::new(format!("agent {} cannot run in this task's image ({}): {why}", self.adapter.spec(), rootfs.display()), true)
        })?;
        let unprepared = |why: String| AgentError::new(format!("cannot bring agent {} into the image: {why}", self.adapter.spec()), false);
        let runtime = image::HostRuntime::detect().map_err(unprepared)?;
        image::wrap_bridge_tools(&runtime, bridge.tools_dir(), specgap_bridge::install::SANDBOX_BIN_DIR).map_err(unprepared)?;
        let wrappers = place.scratch.join("host-bin");
        if wrappers.exists() {
            std::fs::remove_dir_all(&wrappers).map_err(|e| unprepared(format!("{}: {e}", wrappers.display())))?;
        }
        image::prepare(&runtime, &self.adapter.entry_programs(), &wrappers).map_err(unprepared)
    }

    fn launch(&self, message_file: &str, resumed: bool) -> Launch {
        Launch {
            base_url: self.base_url.clone(),
            token: self.token.clone(),
            model: self.config.endpoint.model.clone(),
            message_file: message_file.to_string(),
            mcp: self.bridge.as_ref().map(bridge::EpisodeBridge::mcp_server).unwrap_or_default(),
            system_prompt_file: (self.adapter.system_prompt_route() == SystemPromptRoute::Option
                && !self.place.as_ref().is_some_and(|p| p.scaffold_prompt_only))
            .then(|| format!("{SANDBOX_TASK_DIR}/system-prompt.md")),
            resumed,
            model_args: self.config.endpoint.model_args.clone(),
            protocol_urls: self.protocol_urls.clone(),
            system_prompt: self.system_prompt_text(),
        }
    }

    /// The condition's system prompt, when it goes through the adapter's own option.
    fn system_prompt_text(&self) -> Option<String> {
        let scaffold_only = self.place.as_ref().is_some_and(|p| p.scaffold_prompt_only);
        if self.adapter.system_prompt_route() != SystemPromptRoute::Option || scaffold_only {
            return None;
        }
        self.opening.as_ref().map(|o| o.system_prompt.clone()).filter(|p| !p.trim().is_empty())
    }

    /// The gateway: the configured upstream for each protocol the adapter speaks, the model,
    /// the real key from the harness's environment, the episode's deadline and journal.
    fn serve_gateway(&mut self, sandbox: &AgentSandbox) -> Result<GatewayHandle, AgentError> {
        let place = self.place()?.clone();
        let endpoint = &self.config.endpoint;
        let key = std::env::var(&endpoint.api_key_env).ok().filter(|k| !k.is_empty()).map(Secret::new);
        let protocols = self.adapter.protocols();
        let upstreams = protocols
            .iter()
            .map(|p| Upstream::new(*p, upstream_base(*p, &endpoint.base_url), key.clone(), vec![endpoint.model.clone()]))
            .collect();
        let token = Secret::random_token().map_err(|e| AgentError::with_source("cannot make the gateway token", false, e))?;
        self.token = token.expose().to_string();
        let mut config = GatewayConfig::new(upstreams, token);
        config.retry = RetryPolicy {
            max_retries: endpoint.max_retries,
            retry_base: Duration::from_millis(endpoint.retry_base_ms),
            seed: fnv(place.episode_id.as_bytes()) ^ u64::from(place.attempt),
            request_timeout: Duration::from_secs_f64(endpoint.request_timeout_sec.max(0.001)),
        };
        let session = self.session.clone().unwrap_or_else(|| SessionLink::detached(specgap_store::Role::Agent));
        config.deadline = session.deadline.instant();
        config.journal_path = Some(place.store_dir.join(format!("gateway-{}.jsonl", place.attempt)));
        let supervision = Supervision {
            link: self.link.clone(),
            deadline: session.deadline.clone(),
            usage: session.usage.clone(),
            price: self.config.endpoint.price,
            toolless_is_side: self.adapter.toolless_requests_are_side(),
        };
        let listener = specgap_gateway::bind_loopback_in_path(&sandbox.network_namespace())
            .map_err(|e| AgentError::with_source("cannot open the model gateway inside the agent's sandbox (this needs root)", true, e))?;
        let gateway = specgap_gateway::serve_tcp(listener, config, Arc::new(supervision))
            .map_err(|e| AgentError::with_source("cannot start the model gateway", false, e))?;
        self.protocol_urls = protocols.iter().filter_map(|p| gateway.base_url(*p).map(|url| (*p, url))).collect();
        self.base_url = gateway
            .base_url(Protocol::OpenaiChat)
            .or_else(|| gateway.base_url(Protocol::OpenaiResponses))
            .or_else(|| self.protocol_urls.first().map(|(_, url)| url.clone()))
            .unwrap_or_default();
        Ok(gateway)
    }

    /// Starts the program with `message` (the `n`-th start).
    fn run_program(&mut self, message: &str) -> Result<(), AgentError> {
        self.starts += 1;
        let resumed = self.starts > 1;
        let name = format!("message-{}.md", self.starts);
        let task = self.task_dir()?;
        std::fs::write(task.join(&name), message).map_err(|e| AgentError::with_source("cannot write the agent's message", false, e))?;
        let launch = self.launch(&format!("{SANDBOX_TASK_DIR}/{name}"), resumed);
        self.adapter.prepare_home(&self.home()?, &launch)?;
        let mut exports = vec![
            ("OPENAI_BASE_URL".to_string(), launch.base_url.clone()),
            ("OPENAI_API_BASE".to_string(), launch.base_url.clone()),
            (TOKEN_ENV.to_string(), launch.token.clone()),
        ];
        exports.extend(self.adapter.env(&launch));
        let env_file = format!("env-{}", self.starts);
        let body: String = exports.iter().map(|(k, v)| format!("export {k}={}\n", adapter::shell_quote(v))).collect();
        std::fs::write(task.join(&env_file), body)
            .map_err(|e| AgentError::with_source("cannot write the agent's environment", false, e))?;
        self.watch_questions()?;
        let start = if self.image.is_some() { self.adapter.command_on_image(&launch) } else { self.adapter.command(&launch) };
        let command = format!(". {}/{env_file}\n{start}", SANDBOX_TASK_DIR);
        let sandbox = self.sandbox.as_mut().ok_or_else(|| AgentError::new("the agent's sandbox is gone", false))?;
        sandbox.run(&command).map_err(|e| AgentError::with_source("cannot start the agent's program", false, e))
    }

    /// Under a native question route, a watcher of the CLI's server for this start (the
    /// previous start's stops first): its questions become harness calls.
    fn watch_questions(&mut self) -> Result<(), AgentError> {
        let Some(server) = self.adapter.question_server() else { return Ok(()) };
        self.questions.take();
        let namespace = self.sandbox.as_ref().ok_or_else(|| AgentError::new("the agent's sandbox is gone", false))?.network_namespace();
        let spec = opencode_server::WatchSpec { namespace, server, home: self.home()?, start: self.starts };
        self.questions = Some(opencode_server::QuestionWatcher::start(spec, self.link.clone())?);
        Ok(())
    }

    /// The reply for one exchange.
    fn observed(&mut self, record: &specgap_gateway::ExchangeRecord) -> AgentReply {
        let reading = self.conversation.read(record, self.adapter.as_ref());
        if !reading.actions.is_empty() {
            // After the results they come from (the queue is drained before anything new).
            self.queued.push_back(AgentReply::Actions { actions: reading.actions });
        }
        // A side request (a title, a token count) comes between a turn's commands and the
        // next main request: the reads wait for the request that carries the results.
        if (!reading.results.is_empty() || reading.turn.is_some())
            && let Some(reads) = self.file_reads(&reading.results)
        {
            self.queued.push_back(reads);
        }
        AgentReply::Observed { results: reading.results, exchange: Some(Box::new(reading.event)), turn: reading.turn }
    }

    /// The `file_reads` reply for one exchange's results: the workspace files the sandbox's
    /// processes read since the last exchange (the turn's commands and the agent's own tools;
    /// the turn's calls ran in between), given to each result with the files its output shows
    /// (`specgap_protocol::reads`). `None` without results (what was read is then dropped: the
    /// program's start-up) or a sandbox.
    fn file_reads(&self, results: &[specgap_engine::session::ObservedResult]) -> Option<AgentReply> {
        let sandbox = self.sandbox.as_ref()?;
        let reads = sandbox.take_reads();
        if results.is_empty() {
            return None;
        }
        let workspace = self.place.as_ref().map(|p| p.workspace.clone());
        let events = results
            .iter()
            .map(|result| {
                let call_id = result.call_id.clone();
                match (&reads, &workspace) {
                    (specgap_sandbox::Reads::Measured(files), Some(workspace)) => {
                        let seen = specgap_protocol::reads::Observation::new(&result.output);
                        let shown = files
                            .iter()
                            .filter(|f| std::fs::read(workspace.join(f)).is_ok_and(|b| seen.shows(&String::from_utf8_lossy(&b))))
                            .cloned()
                            .collect();
                        EventKind::FileReads { call_id, read: files.iter().cloned().collect(), shown, unmeasured: String::new() }
                    }
                    (specgap_sandbox::Reads::Unmeasured(why), _) => {
                        EventKind::FileReads { call_id, read: Vec::new(), shown: Vec::new(), unmeasured: why.clone() }
                    }
                    (_, None) => EventKind::FileReads { call_id, read: Vec::new(), shown: Vec::new(), unmeasured: "no workplace".into() },
                }
            })
            .collect();
        Some(AgentReply::FileReads { reads: events })
    }

    /// The replies for the program's exit: results and actions from its log, its completion
    /// signal as a `submit`, then the exit itself.
    fn on_exit(&mut self, exit: specgap_sandbox::ProgramExit) -> Result<AgentReply, AgentError> {
        let report = self.adapter.read_log(&self.home()?, &self.conversation.unanswered());
        if let Some(message) = report.unknown_format {
            return Err(AgentError::new(message, true));
        }
        for result in &report.results {
            self.conversation.answered(&result.call_id);
        }
        let reads = self.file_reads(&report.results);
        if !report.results.is_empty() {
            self.queued.push_back(AgentReply::Observed { results: report.results, exchange: None, turn: None });
        }
        if let Some(reads) = reads {
            self.queued.push_back(reads);
        }
        if !report.actions.is_empty() {
            self.queued.push_back(AgentReply::Actions { actions: report.actions });
        }
        let how = if report.signalled_submit.is_some() { "submitted" } else { "exited" };
        if let Some(summary) = report.signalled_submit {
            self.queued.push_back(AgentReply::HarnessCall { call: SignalledSubmit { summary }.tool_call(String::new()) });
        }
        let stderr = self.sandbox.as_ref().map(|s| s.stderr().text()).unwrap_or_default();
        let tail = specgap_protocol::text::tail(&stderr, STDERR_TAIL).replace(&self.token, "[token]");
        let event = EventKind::AgentExit { status: exit.status, how: how.into(), stderr_tail: tail, note: report.note };
        let text = report.final_text.or_else(|| self.conversation.last_text());
        self.queued.push_back(AgentReply::Exited { text, can_resume: self.adapter.can_resume(), exit: Box::new(event) });
        self.queued.pop_front().ok_or_else(|| AgentError::new("no reply for the agent's exit", false))
    }

    /// Hands the engine's answers on: a result (with feedback or the next stage appended) to the waiting
    /// harness call; messages for a program that has exited start it again.
    fn deliver(&mut self, inbox: &[Incoming]) -> Result<(), AgentError> {
        let mut result: Option<(String, bool)> = None;
        let mut messages = Vec::new();
        for item in inbox {
            match item {
                Incoming::ToolResult { output, is_error, .. } => result = Some((output.clone(), *is_error)),
                // A staged task's next instruction comes with `submit`'s result, as feedback does.
                Incoming::UserMessage { kind: UserMessageKind::Feedback | UserMessageKind::Stage, text } => match &mut result {
                    Some((output, _)) => {
                        output.push_str("\n\n");
                        output.push_str(text);
                    }
                    None => messages.push(text.clone()),
                },
                Incoming::UserMessage { kind: UserMessageKind::Reminder, .. } => {}
                Incoming::UserMessage { text, .. } => messages.push(text.clone()),
            }
        }
        if let Some(call) = self.pending.take() {
            let (text, is_error) = result.unwrap_or_else(|| ("(no result)".into(), true));
            call.answer(text, is_error, false);
        }
        let running = self.sandbox.as_ref().is_some_and(AgentSandbox::is_running) || self.exited.is_some();
        if !messages.is_empty() && !running && self.adapter.can_resume() {
            self.run_program(&messages.join("\n\n"))?;
        }
        Ok(())
    }

    /// At the deadline: nothing the agent does counts any more.
    /// Freezes the agent and abandons its gateway at the deadline; returns whether a model
    /// request of it was in flight (one under way then, or one the gateway's own deadline cut
    /// just before).
    fn halt_now(&mut self) -> bool {
        if let Some(sandbox) = self.sandbox.as_mut() {
            sandbox.freeze();
        }
        self.end_held();
        let in_flight = self.gateway.as_ref().is_some_and(|gateway| {
            let under_way = gateway.in_flight() > 0;
            gateway.abandon();
            under_way || gateway.report().abandoned_exchanges > 0
        });
        // The abandoned exchanges record themselves at once; keep them for the trajectory.
        self.settle_gateway();
        let left = self.link.end("the episode has ended (its time is up)");
        let why = if self.deadline().passed() { ABANDONED_AT_WALL_BUDGET } else { ABANDONED_AT_STOP };
        self.record_late(left, why);
        in_flight
    }

    /// Waits (bounded) until the abandoned gateway has recorded every exchange in flight.
    fn settle_gateway(&self) {
        if let Some(gateway) = &self.gateway {
            let until = Instant::now() + REFUSAL_DELIVERY;
            while gateway.in_flight() > 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// What happened after the engine stopped reading the agent: each exchange becomes its
    /// `model_exchange` event (an abandoned one saying `why`), preceded by the tool results
    /// its request carried (the results of calls made before the end, which no later
    /// request will carry: issue 29 item 5); a harness call still queued gets the end's
    /// answer.
    fn record_late(&mut self, left: Vec<Happened>, why: &str) {
        for happened in left {
            match happened {
                Happened::Exchange(record) => {
                    let reading = self.conversation.read(&record, self.adapter.as_ref());
                    let at = Instant::now();
                    for result in reading.results {
                        let event = EventKind::ToolResult {
                            call_id: result.call_id,
                            tool: result.tool,
                            output: result.output,
                            is_error: result.is_error,
                        };
                        self.late.push((at, event));
                    }
                    let mut event = reading.event;
                    if let EventKind::ModelExchange { outcome, detail, .. } = &mut event
                        && outcome == "abandoned"
                        && detail.is_empty()
                    {
                        *detail = why.to_string();
                    }
                    self.late.push((at, event));
                }
                Happened::Call(call) => call.answer(EPISODE_OVER.into(), true, true),
                Happened::TurnRequested(_) => {}
            }
        }
    }

    /// The first held harness call, once the exchange that carried it is handed out: no
    /// main-loop stream is under way and no exchange waits in the link, or the call has
    /// waited [`CALL_ORDER_WAIT`] for a stream.
    fn release_held(&mut self) -> Option<AgentReply> {
        let since = self.held_since?;
        let streaming = self.gateway.as_ref().is_some_and(|g| g.main_streams() > 0);
        if (streaming && since.elapsed() < CALL_ORDER_WAIT) || self.link.has_exchange() {
            return None;
        }
        let call = self.held.pop_front()?;
        self.held_since = if self.held.is_empty() { None } else { Some(Instant::now()) };
        let tool_call = call.tool_call(String::new());
        self.pending = Some(call);
        Some(AgentReply::HarnessCall { call: tool_call })
    }

    /// Answers the harness calls still held when the episode ends.
    fn end_held(&mut self) {
        self.held_since = None;
        for call in self.held.drain(..) {
            call.answer(EPISODE_OVER.into(), true, true);
        }
    }
}

impl Agent for CliAgent {
    fn attach(&mut self, link: &SessionLink) {
        self.session = Some(link.clone());
    }

    fn drives_itself(&self) -> bool {
        true
    }

    /// The harness's tool by the name its CLI shows the model where its ask channel offers
    /// `ask_user`; else the CLI's own question tool where the harness serves it (`native`);
    /// else the text route.
    fn ask_route(&self, text_questions: bool) -> specgap_engine::prompts::AskRoute {
        use specgap_engine::prompts::AskRoute;
        if !self.config.effective_ask_channel().withholds_ask_user(text_questions) {
            return AskRoute::Tool(self.adapter.harness_tool_name("ask_user"));
        }
        self.adapter.native_question_tool().map_or(AskRoute::Text, AskRoute::Tool)
    }

    fn enter(&mut self, place: &Workplace) -> Result<(), AgentError> {
        self.place = Some(place.clone());
        Ok(())
    }

    fn start(&mut self, opening: &Opening) -> Result<(), AgentError> {
        let place = self.place()?.clone();
        let task = self.task_dir()?;
        std::fs::create_dir_all(&task).map_err(|e| AgentError::with_source("cannot prepare the agent's task files", false, e))?;
        let system = if place.scaffold_prompt_only { String::new() } else { opening.system_prompt.clone() };
        std::fs::write(task.join("system-prompt.md"), system)
            .map_err(|e| AgentError::with_source("cannot write the system prompt file", false, e))?;
        self.opening = Some(opening.clone());
        let bridge = bridge::EpisodeBridge::open(
            &place.scratch,
            &opening.tools,
            self.config.effective_ask_channel().withholds_ask_user(place.text_questions),
            self.link.clone(),
        )?;
        std::fs::create_dir_all(self.home()?).map_err(|e| AgentError::with_source("cannot prepare the agent's home", false, e))?;
        bridge.write_mcp_config(&self.home()?)?;
        if let Some(rootfs) = place.host.rootfs() {
            self.image = Some(self.prepare_image(rootfs, &bridge, &place)?);
        }
        self.bridge = Some(bridge);
        let template = self.template(&place)?;
        let mut sandbox = AgentSandbox::start(&template, &place.host, &place.sandbox)
            .map_err(|e| AgentError::with_source("cannot build the agent's sandbox", false, e))?;
        self.tripwire = Some(network::arm(&mut sandbox));
        let gateway = self.serve_gateway(&sandbox)?;
        self.sandbox = Some(sandbox);
        self.gateway = Some(gateway);
        let message = self.first_message(opening, place.scaffold_prompt_only);
        self.run_program(&message)
    }

    fn next_turn(&mut self, inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        if let Some(ticket) = self.granting.take() {
            self.link.grant(ticket);
        }
        self.deliver(inbox)?;
        if let Some(reply) = self.queued.pop_front() {
            return Ok(reply);
        }
        self.records_until = None;
        let deadline = self.deadline();
        loop {
            if deadline.is_over() {
                return Ok(if self.halt_now() { AgentReply::Abandoned } else { AgentReply::Halted });
            }
            if let Some(fault) = self.gateway.as_ref().and_then(GatewayHandle::fault) {
                return Err(AgentError::new(format!("the model service failed: {fault}"), false));
            }
            if let Some(reply) = self.release_held() {
                return Ok(reply);
            }
            let mut until = Instant::now() + POLL;
            if let Some(at) = deadline.instant() {
                until = until.min(at);
            }
            match self.link.next(until) {
                Some(Happened::Exchange(record)) => {
                    self.records_until = Some(record.started_at);
                    return Ok(self.observed(&record));
                }
                Some(Happened::TurnRequested(ticket)) => {
                    self.granting = Some(ticket);
                    return Ok(AgentReply::TurnRequested);
                }
                Some(Happened::Call(call)) => {
                    self.held_since.get_or_insert_with(Instant::now);
                    self.held.push_back(call);
                    continue;
                }
                None => {}
            }
            if let Some(sandbox) = self.sandbox.as_mut()
                && self.exited.is_none()
                && let Some(exit) =
                    sandbox.wait_exit(Instant::now()).map_err(|e| AgentError::with_source("lost the agent's sandbox", false, e))?
            {
                // Report it once the queue and the held calls are empty: what the agent did
                // before it exited comes first.
                self.exited = Some(exit);
                continue;
            }
            if self.held.is_empty()
                && let Some(exit) = self.exited.take()
            {
                return self.on_exit(exit);
            }
        }
    }

    fn usage(&self) -> Usage {
        self.session.as_ref().map(|s| s.usage.total()).unwrap_or_default()
    }

    fn suspend(&mut self) {
        if let Some(sandbox) = self.sandbox.as_mut() {
            sandbox.freeze();
        }
    }

    fn resume(&mut self) {
        if !self.stopped
            && let Some(sandbox) = self.sandbox.as_mut()
        {
            sandbox.thaw();
        }
    }

    fn stop(&mut self, undelivered: &[Incoming]) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        // The closing records take every attempt left.
        self.records_until = None;
        if let Some(bridge) = &self.bridge {
            bridge.end();
        }
        let left = self.link.end("the episode has ended; no more model requests are served");
        self.record_late(left, ABANDONED_AT_END);
        self.end_held();
        if let Some(call) = self.pending.take() {
            let text = undelivered.iter().find_map(|i| match i {
                Incoming::ToolResult { output, .. } => Some(output.clone()),
                Incoming::UserMessage { .. } => None,
            });
            call.answer(text.unwrap_or_else(|| EPISODE_OVER.into()), false, true);
        }
        if let Some(gateway) = &self.gateway {
            // Held and in-flight requests are refused now; let the refusals reach the agent
            // before its processes are signalled (bounded: nothing here waits on the agent).
            gateway.abandon();
            let until = Instant::now() + REFUSAL_DELIVERY;
            while gateway.in_flight() > 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // The gateway's listener and the question watcher's thread live in the sandbox's
        // network namespace, which goes back to the pool as soon as the sandbox is gone: close
        // both first, so the next sandbox to borrow the namespace finds neither.
        if let Some(gateway) = self.gateway.take()
            && let Err(e) = gateway.shutdown()
        {
            tracing::warn!("the model gateway did not stop cleanly: {e}");
        }
        // Every exchange is recorded once the gateway has stopped.
        let left = self.link.end("the episode has ended; no more model requests are served");
        self.record_late(left, ABANDONED_AT_END);
        self.questions.take();
        if let Some(mut sandbox) = self.sandbox.take() {
            sandbox.terminate(Duration::from_millis(self.config.stop_grace_ms));
        }
        // After the sandbox is gone: no client is left to wait on the bridge's socket.
        self.bridge.take();
    }

    fn records_since_last(&mut self) -> Vec<(Instant, EventKind)> {
        let mut records = std::mem::take(&mut self.late);
        if let Some(tripwire) = &self.tripwire {
            records.extend(network::new_attempts(tripwire, &mut self.attempts_taken, self.records_until));
        }
        // In the order they happened (stable: an exchange's results stay before it).
        records.sort_by_key(|(at, _)| *at);
        records
    }

    fn closing_records(&mut self) -> Vec<EventKind> {
        self.tripwire.take().map(|t| vec![network::summary(&t)]).unwrap_or_default()
    }
}

impl Drop for CliAgent {
    fn drop(&mut self) {
        self.stop(&[]);
    }
}

/// The upstream base URL of `protocol` from the configured `--base-url`: Anthropic's SDKs
/// append `/v1/messages` themselves, so a trailing `/v1` (the OpenAI-style default) is
/// dropped for the Anthropic Messages upstream; the others take the URL as given.
fn upstream_base(protocol: Protocol, base_url: &str) -> String {
    let trimmed = base_url.trim_end_matches('/');
    match protocol {
        Protocol::AnthropicMessages => trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string(),
        _ => base_url.to_string(),
    }
}

/// FNV-1a of `bytes` (the gateway's retry jitter seed from the episode id).
fn fnv(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anthropic_upstream_drops_an_openai_style_v1() {
        assert_eq!(upstream_base(Protocol::AnthropicMessages, "https://api.anthropic.com"), "https://api.anthropic.com");
        assert_eq!(upstream_base(Protocol::AnthropicMessages, "http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000");
        assert_eq!(upstream_base(Protocol::AnthropicMessages, "http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000");
        assert_eq!(upstream_base(Protocol::OpenaiResponses, "http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1");
    }

    #[test]
    fn the_ask_channel_is_resolved_against_the_adapter() {
        use channel::AskChannel;
        let mut command = CliConfig::new("command", "m");
        command.command = Some("python3 agent.py".into());
        assert_eq!(command.effective_ask_channel(), AskChannel::Mcp, "a configuration stored without a channel ran with mcp");
        command.resolve_ask_channel(None).unwrap();
        assert_eq!(command.ask_channel, Some(AskChannel::Mcp), "cli:command's default");
        command.resolve_ask_channel(Some(AskChannel::Text)).unwrap();
        assert_eq!(command.ask_channel, Some(AskChannel::Text));
        let refused = command.resolve_ask_channel(Some(AskChannel::Native)).unwrap_err();
        assert_eq!(
            refused.message,
            "--ask-channel native: cli:command has no question tool of its own that specgap serves (only cli:opencode has); use text or mcp"
        );
        assert_eq!(command.ask_channel, Some(AskChannel::Text), "a refusal changes nothing");

        // Only opencode's own question tool is served; for another adapter native is refused
        // before its installation is looked at.
        let refused = CliConfig::new("codex", "m").resolve_ask_channel(Some(AskChannel::Native)).unwrap_err();
        assert_eq!(
            refused.message,
            "--ask-channel native: cli:codex has no question tool of its own that specgap serves (only cli:opencode has); use text or mcp"
        );
        assert!(channel::refuse_unserved("opencode", Some(AskChannel::Native)).is_ok());
    }

    #[test]
    fn a_stored_channel_round_trips_and_an_old_table_has_none() {
        let mut config = CliConfig::new("command", "m");
        config.command = Some("true".into());
        let old = config.to_table().unwrap();
        assert!(!old.contains_key("ask_channel"));
        assert_eq!(CliConfig::from_table(&old).unwrap().ask_channel, None);
        config.ask_channel = Some(channel::AskChannel::Text);
        let table = config.to_table().unwrap();
        assert_eq!(table.get("ask_channel").and_then(toml::Value::as_str), Some("text"));
        assert_eq!(CliConfig::from_table(&table).unwrap().ask_channel, Some(channel::AskChannel::Text));
    }
}
