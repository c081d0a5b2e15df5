//! Agent and user specs of a run: their configuration in `run.toml`, which tasks they apply
//! to, and the factory that makes a fresh agent for each attempt.

use anyhow::{Context as _, bail};
use sha2::{Digest as _, Sha256};
use specgap_agents::prompt_dir::PromptDir;
use specgap_agents::{AgentSpec, parse_agent_spec};
use specgap_engine::condition::NotApplicable;
use specgap_engine::prompt_files::Replacements;
use specgap_engine::runner::AgentApplicability;
use specgap_protocol::run::{COMMAND_AGENT_PREFIX, ComponentRef};
use specgap_task::TaskPackage;

/// Lowercase hex sha256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A [`ComponentRef`] for `spec` with `config`: the hash is the sha256 of the canonical JSON
/// `{"config": …, "spec": …}` (keys sorted).
pub fn component_ref(spec: &str, config: toml::Table) -> ComponentRef {
    let canonical = serde_json::json!({ "spec": spec, "config": config });
    let hash = sha256_hex(canonical.to_string().as_bytes());
    ComponentRef { spec: spec.to_string(), name: None, config, hash }
}

/// The replacement prompts of `--prompts DIR` (none without the flag), split into the system
/// prompts every agent stores and the user prompts a `chat:` user stores. The run
/// configuration file calls this with its own directory.
///
/// # Errors
/// An unreadable directory, a file named after no prompt, or an unusable file
/// ([`specgap_agents::prompt_dir::PromptDirError`]).
pub fn prompt_replacements(dir: Option<&std::path::Path>) -> anyhow::Result<PromptDir> {
    let Some(dir) = dir else { return Ok(PromptDir::default()) };
    specgap_agents::prompt_dir::load(dir).context("cannot use --prompts")
}

/// The replaced prompts stored with a component in run.toml (their texts are checked against
/// their stored sha256).
///
/// # Errors
/// A `prompts` table of another shape, or a text that does not match its hash.
pub fn stored_prompts(component: &ComponentRef) -> anyhow::Result<Replacements> {
    Replacements::from_config(&component.config).with_context(|| format!("cannot read the stored prompts of {}", component.spec))
}

/// The stored configuration of an agent spec: its kind and arguments, and for a replay the
/// sha256 of the script or trajectory it replays (so an edited script keys new episodes),
/// plus the run's replaced system prompts (`prompts`: name → sha256 and text), which the
/// engine renders for every agent.
///
/// # Errors
/// A spec that does not parse, or a replay source that cannot be read.
pub fn component(spec: &str, chat: &super::ChatArgs, prompts: &Replacements, missing: MissingInstall) -> anyhow::Result<ComponentRef> {
    let parsed = parse_agent_spec(spec)?;
    let mut config = toml::Table::new();
    let put = |config: &mut toml::Table, key: &str, value: String| {
        config.insert(key.into(), toml::Value::String(value));
    };
    match &parsed {
        AgentSpec::Scripted(solution) => {
            put(&mut config, "kind", "scripted".into());
            put(&mut config, "solution", solution.name());
        }
        AgentSpec::Replay(path) => {
            put(&mut config, "kind", "replay".into());
            put(&mut config, "source_sha256", replay_source_hash(path)?);
            // A script that does not parse is refused here, naming its line, not found by
            // every episode as "cannot build the agent" (issue 31 item 10).
            specgap_agents::replay::ReplayAgent::load(path)
                .map_err(|e| anyhow::anyhow!("replay:{}: {}", path.display(), specgap_protocol::text::error_chain(&e)))?;
        }
        AgentSpec::Chat(model) => return chat_component(model, &chat.agent_config(model)?, prompts),
        AgentSpec::Cli(cli) => {
            let target = CliTarget::from_spec(cli)?;
            return cli_component(&parsed.canonical(), &target, chat.cli_endpoint()?, chat.ask_channel, prompts, missing);
        }
    }
    prompts.store_in(&mut config);
    let spec = parsed.canonical();
    Ok(match &parsed {
        AgentSpec::Replay(_) => replay_component_ref(&spec, config),
        _ => component_ref(&spec, config),
    })
}

/// What a replay agent's configuration hash covers in place of its spec: the kind without
/// the source's path. Where a script lies is a fact of one machine; what it replays is its
/// content, which `source_sha256` in the configuration pins (docs/decisions.md "Portable
/// agent names").
const REPLAY_HASHED_SPEC: &str = "replay:";

/// A replay agent's [`ComponentRef`]: its spec (with the source's path, which `--resume`
/// reads) and a hash that leaves the path out, so copies of one script in two places key the
/// same episodes.
fn replay_component_ref(spec: &str, config: toml::Table) -> ComponentRef {
    let hashed = component_ref(REPLAY_HASHED_SPEC, config);
    ComponentRef { spec: spec.to_string(), ..hashed }
}

/// Whether a stored replay agent's hash is the one a run made before portable names computed
/// for `config` (over the spec with its path), so that `--resume` of such a run goes on.
pub fn is_legacy_replay_hash(stored: &ComponentRef, config: &toml::Table) -> bool {
    stored.spec.starts_with("replay:") && component_ref(&stored.spec, config.clone()).hash == stored.hash
}

/// Gives every agent without a name whose spec carries the machine's paths a portable label,
/// so episodes, reports and exports do not carry them (docs/decisions.md "Portable agent
/// names"):
/// - a replay agent gets `replay:<file name>` (the script's, or a stored episode directory's,
///   last path component), with `@<first 8 hex digits of the source's sha256>` appended where
///   two replay agents' file names coincide;
/// - a `cli:command=<template>` agent whose template holds absolute paths gets the template
///   with each reduced to its file name ([`specgap_protocol::run::without_local_paths`]), with
///   `@<first 8 hex digits of the template's sha256>` appended where two reduce alike.
///
/// Other agents are unchanged; the hash each agent keys episodes by is not touched.
pub fn name_agents_portably(agents: &mut [ComponentRef]) {
    let bases: Vec<Option<(String, String)>> = agents.iter().map(portable_base).collect();
    for (i, agent) in agents.iter_mut().enumerate() {
        let Some((base, content_hash)) = &bases[i] else { continue };
        let shared = bases.iter().enumerate().any(|(j, other)| j != i && other.as_ref().map(|(b, _)| b) == Some(base));
        agent.name = Some(if shared { format!("{base}@{}", &content_hash[..content_hash.len().min(8)]) } else { base.clone() });
    }
}

/// The portable label of an unnamed agent whose spec holds local paths, with the hash that
/// tells apart two agents sharing it; `None` for named agents and specs without paths.
fn portable_base(agent: &ComponentRef) -> Option<(String, String)> {
    if agent.name.is_some() {
        return None;
    }
    if let Some(path) = agent.spec.strip_prefix("replay:") {
        let name = std::path::Path::new(path).file_name()?.to_string_lossy().into_owned();
        let source = agent.config.get("source_sha256").and_then(toml::Value::as_str).unwrap_or_default();
        return Some((format!("replay:{name}"), source.to_string()));
    }
    let template = agent.spec.strip_prefix(COMMAND_AGENT_PREFIX)?;
    let portable = specgap_protocol::run::without_local_paths(template);
    if portable == template {
        return None;
    }
    let digest = sha256_hex(template.as_bytes());
    Some((format!("{COMMAND_AGENT_PREFIX}{portable}"), digest))
}

/// A `chat:<model>` agent with its own endpoint configuration and the run's replaced system
/// prompts.
///
/// # Errors
/// A configuration that cannot be stored in run.toml.
pub fn chat_component(model: &str, chat: &specgap_agents::chat::ChatConfig, prompts: &Replacements) -> anyhow::Result<ComponentRef> {
    let mut config = chat.to_table()?;
    config.insert("kind".into(), toml::Value::String("chat".into()));
    config.insert("prompt_version".into(), toml::Value::String(specgap_engine::PROMPT_VERSION.into()));
    prompts.store_in(&mut config);
    Ok(component_ref(&format!("chat:{model}"), config))
}

/// What resolving a `cli:` agent does when its adapter version is not installed (or its
/// installation was interrupted): a run refuses to start; a dry run (`--dry-run`) says so,
/// names the install command and resolves the agent without the installation's tree hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingInstall {
    /// Fail with the installation's error (which names `specgap agents install`).
    Refuse,
    /// Print a note on stderr and go on without the tree hash (the plan is then provisional), and
    /// without the `specgap-bridge` program (nothing runs).
    Note,
}

/// The adapter of `cli:command=<template>` agents: the user's own command, nothing installed.
pub const COMMAND_ADAPTER: &str = "command";

/// What a `cli:` agent runs: an installed adapter at a locked version, or the user's own
/// command (`cli:command=<template>`, nothing installed).
#[derive(Debug, Clone)]
pub enum CliTarget {
    /// An adapter of the registry at a version with a lock file.
    Installed(specgap_adapters::AdapterVersion),
    /// A command template.
    Command(String),
}

impl CliTarget {
    /// The target of a `--agent cli:…` spec.
    ///
    /// # Errors
    /// An adapter or version the registry does not lock.
    pub fn from_spec(spec: &specgap_agents::CliSpec) -> anyhow::Result<Self> {
        Ok(match spec {
            specgap_agents::CliSpec::Command { template } => CliTarget::Command(template.clone()),
            installed => CliTarget::Installed(specgap_adapters::AdapterVersion::resolve(installed.adapter(), installed.version())?),
        })
    }
}

/// The one way a `cli:` agent's configuration is resolved, for `--agent cli:…` and for the
/// run configuration file's `kind = "cli"` entries alike: its stored configuration
/// ([`specgap_agents::cli::CliConfig`]) holds the adapter, for an installed adapter the
/// exact version, the package and the installed tree's hash (so a changed installation keys
/// new episodes), for `cli:command` the template, the model endpoint the gateway forwards
/// to, and the ask channel (`ask_channel`, `None` for the adapter's default, resolved and
/// stored so it is part of the hash: `specgap_agents::cli::channel`); plus `kind`, the
/// prompt version and the run's replaced system prompts.
///
/// # Errors
/// The version is not installed (naming `specgap agents install`; with
/// [`MissingInstall::Note`] a note instead, and the adapter's own checks and default ask
/// channel wait for the installation), its installation is incomplete or changed, the adapter
/// cannot run it (no runtime adapter yet, a bad template), an ask channel the adapter cannot
/// use (`native` for all but opencode; `text` for an adapter that cannot be resumed), the
/// `specgap-bridge` program cannot be found, or the configuration cannot be
/// stored.
pub fn cli_component(
    spec: &str,
    target: &CliTarget,
    endpoint: specgap_agents::chat::ChatConfig,
    ask_channel: Option<specgap_agents::cli::channel::AskChannel>,
    prompts: &Replacements,
    missing: MissingInstall,
) -> anyhow::Result<ComponentRef> {
    let adapter = match target {
        CliTarget::Command(_) => COMMAND_ADAPTER,
        CliTarget::Installed(version) => version.adapter.name,
    };
    specgap_agents::cli::channel::refuse_unserved(adapter, ask_channel).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let mut cli = match target {
        CliTarget::Command(template) => {
            let mut cli = specgap_agents::cli::CliConfig::new(COMMAND_ADAPTER, endpoint.model.clone());
            cli.command = Some(template.clone());
            cli
        }
        CliTarget::Installed(version) => {
            let mut cli = specgap_agents::cli::CliConfig::new(version.adapter.name, endpoint.model.clone());
            cli.version = Some(version.version.clone());
            cli.package = Some(version.adapter.package.into());
            cli.tree_hash = installed_tree_hash(version, missing)?;
            cli
        }
    };
    cli.endpoint = endpoint;
    if matches!(target, CliTarget::Installed(_)) && cli.tree_hash.is_none() {
        // Not installed (dry run): the adapter cannot be built, so its default channel is
        // not known; the requested one is kept.
        cli.ask_channel = ask_channel;
    } else {
        // Resolving the channel builds the adapter, which checks now, not in the first
        // episode, that it can run; so does finding the program that serves it the harness
        // tools.
        cli.resolve_ask_channel(ask_channel).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    }
    require_bridge(missing)?;
    let mut config = cli.to_table()?;
    config.insert("kind".into(), toml::Value::String("cli".into()));
    config.insert("prompt_version".into(), toml::Value::String(specgap_engine::PROMPT_VERSION.into()));
    prompts.store_in(&mut config);
    Ok(component_ref(spec, config))
}

/// The installed tree hash of `version`; `None` after a note when it is not installed (or
/// its installation was interrupted) and `missing` is [`MissingInstall::Note`].
fn installed_tree_hash(version: &specgap_adapters::AdapterVersion, missing: MissingInstall) -> anyhow::Result<Option<String>> {
    match specgap_adapters::installed_tree_hash(version) {
        Ok(hash) => Ok(Some(hash)),
        Err(err @ (specgap_adapters::InstallError::NotInstalled { .. } | specgap_adapters::InstallError::Incomplete { .. }))
            if missing == MissingInstall::Note =>
        {
            eprintln!(
                "dry run: {err}; a real run refuses to start without it (until then its tree hash is unknown, so the plan hash and episode keys shown are provisional)"
            );
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}

/// Finds the program that serves a `cli:` agent the harness tools; a dry run (`missing` is
/// [`MissingInstall::Note`]) only notes its absence, since it runs nothing.
fn require_bridge(missing: MissingInstall) -> anyhow::Result<()> {
    match specgap_bridge::locate_bridge() {
        Ok(_) => Ok(()),
        Err(err) if missing == MissingInstall::Note => {
            eprintln!("dry run: {err}; a real run with a cli: agent refuses to start without it");
            Ok(())
        }
        Err(err) => Err(anyhow::Error::new(err).context("a cli: agent needs the harness tools' program")),
    }
}

/// Checks on `--resume` that each `cli:` agent's installation is still the one the run was
/// configured with (same tree hash).
///
/// # Errors
/// An installation that is gone or changed.
pub fn check_stored_cli_agent(agent: &ComponentRef) -> anyhow::Result<()> {
    let text = |key: &str| agent.config.get(key).and_then(toml::Value::as_str);
    if text("adapter") == Some(COMMAND_ADAPTER) {
        return Ok(());
    }
    let (Some(adapter), Some(version), Some(stored)) = (text("adapter"), text("version"), text("tree_hash")) else {
        bail!("agent {} in run.toml has no adapter, version or tree_hash", agent.label());
    };
    let version = specgap_adapters::AdapterVersion::resolve(adapter, Some(version))?;
    let now = specgap_adapters::installed_tree_hash(&version)?;
    if now != stored {
        bail!(
            "agent {}: the installation of {} has tree hash {now}, and the run began with {stored}; resuming would mix installations",
            agent.label(),
            version.label()
        );
    }
    Ok(())
}

/// sha256 of what a replay reads: the file itself, or a stored episode's trajectory.
fn replay_source_hash(path: &std::path::Path) -> anyhow::Result<String> {
    let file = if path.is_dir() { path.join(specgap_store::TRAJECTORY_FILE) } else { path.to_path_buf() };
    let bytes = fs_err::read(&file).with_context(|| format!("cannot read the replay source {}", path.display()))?;
    Ok(sha256_hex(&bytes))
}

/// The stored configuration of a user spec: `relay`, or `chat:<model>` with its endpoint
/// configuration (never the API key, only the variable that holds it) and the run's replaced
/// owner / customer prompts. The relay has no prompts: replacements given with it are not
/// used (a warning says so) and not stored.
///
/// # Errors
/// An unknown user, bad model arguments or an unreadable price table.
pub fn user_component(spec: &str, chat: &super::ChatArgs, prompts: &Replacements) -> anyhow::Result<ComponentRef> {
    let mut config = toml::Table::new();
    if spec == "relay" {
        if !prompts.is_empty() {
            let names: Vec<&str> = prompts.names().collect();
            tracing::warn!("the relay user has no prompts, so --prompts' {} is not used", names.join(", "));
        }
        config.insert("kind".into(), toml::Value::String("relay".into()));
        return Ok(component_ref(spec, config));
    }
    let Some(model) = spec.strip_prefix("chat:").filter(|m| !m.is_empty()) else {
        bail!("unknown user `{spec}`; expected relay or chat:<model>");
    };
    chat_user_component(model, &chat.user_config(model)?, prompts)
}

/// A `chat:<model>` user with its own endpoint configuration and the run's replaced owner /
/// customer prompts.
///
/// # Errors
/// A configuration that cannot be stored in run.toml.
pub fn chat_user_component(model: &str, chat: &specgap_agents::chat::ChatConfig, prompts: &Replacements) -> anyhow::Result<ComponentRef> {
    let mut config = chat.to_table()?;
    config.insert("kind".into(), toml::Value::String("chat".into()));
    config.insert("user_prompt_version".into(), toml::Value::String(specgap_agents::chat::user::USER_PROMPT_VERSION.into()));
    prompts.store_in(&mut config);
    Ok(component_ref(&format!("chat:{model}"), config))
}

/// `user` with the detector panel of the panel file `file` in its configuration (table
/// `detector`: models, prompt texts and version), so the detector is part of the user hash and
/// of every episode key, and `--resume` rebuilds it from `run.toml`.
///
/// # Errors
/// A panel file that cannot be read, or a panel that cannot be stored.
pub fn with_detector(user: ComponentRef, file: &std::path::Path) -> anyhow::Result<ComponentRef> {
    let panel = specgap_panels::PanelFile::load(file)?.panel(specgap_store::PanelUse::Detector);
    let mut config = user.config;
    config.insert(specgap_panels::detector::DETECTOR_KEY.into(), toml::Value::Table(panel.to_table()?));
    Ok(component_ref(&user.spec, config))
}

/// Checks, on `--resume`, that the prompt texts of the stored `chat:` agents and users are
/// the ones this build has: their stored configuration is used as is, so a changed prompt would
/// mix prompt versions in one run.
///
/// # Errors
/// A stored `prompt_version` / `user_prompt_version` that differs from this build's.
pub fn check_stored_prompt_versions(config: &specgap_protocol::run::RunConfig) -> anyhow::Result<()> {
    let chat = |c: &&ComponentRef| c.spec.starts_with("chat:");
    let model_agent = |c: &&ComponentRef| c.spec.starts_with("chat:") || c.spec.starts_with("cli:");
    let checks = config
        .agents
        .iter()
        .filter(model_agent)
        .map(|a| (a, "prompt_version", specgap_engine::PROMPT_VERSION))
        .chain(config.users.iter().filter(chat).map(|u| (u, "user_prompt_version", specgap_agents::chat::user::USER_PROMPT_VERSION)));
    for (component, key, now) in checks {
        let stored = component.config.get(key).and_then(toml::Value::as_str).unwrap_or("none");
        if stored != now {
            bail!(
                "{} was run with {key} {stored}, and this specgap has {now}; resuming would mix prompt versions (start a new run instead)",
                component.spec
            );
        }
    }
    Ok(())
}

impl super::ChatArgs {
    /// The flags' defaults (for re-deriving non-chat components on `--resume`).
    pub fn defaults() -> Self {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            chat: super::ChatArgs,
        }
        Only::parse_from(["specgap"]).chat
    }

    fn base_url(&self) -> String {
        self.base_url.clone().unwrap_or_else(|| specgap_agents::chat::DEFAULT_BASE_URL.to_string())
    }

    fn api_key_env(&self) -> String {
        self.api_key_env.clone().unwrap_or_else(|| specgap_agents::chat::DEFAULT_API_KEY_ENV.to_string())
    }

    fn request_timeout(&self) -> f64 {
        self.request_timeout.unwrap_or(specgap_agents::chat::DEFAULT_REQUEST_TIMEOUT_SEC)
    }

    fn max_retries(&self) -> u32 {
        self.max_retries.unwrap_or(specgap_agents::chat::DEFAULT_MAX_RETRIES)
    }

    /// Names of the agent and user endpoint flags given (they conflict with `--config`).
    pub fn flags_given(&self) -> Vec<&'static str> {
        let given = [
            ("--base-url", self.base_url.is_some()),
            ("--model", self.model.is_some()),
            ("--api-key-env", self.api_key_env.is_some()),
            ("--model-arg", !self.model_args.is_empty()),
            ("--stream", self.stream),
            ("--emulate-tools", self.emulate_tools),
            ("--context-tokens", self.context_tokens.is_some()),
            ("--request-timeout", self.request_timeout.is_some()),
            ("--max-retries", self.max_retries.is_some()),
            ("--ask-channel", self.ask_channel.is_some()),
            ("--prices", self.prices.is_some()),
            ("--user-base-url", self.user_base_url.is_some()),
            ("--user-api-key-env", self.user_api_key_env.is_some()),
            ("--user-model-arg", !self.user_model_args.is_empty()),
        ];
        given.into_iter().filter(|(_, g)| *g).map(|(name, _)| name).collect()
    }

    fn price(&self, model: &str) -> anyhow::Result<Option<specgap_agents::chat::Price>> {
        let Some(path) = &self.prices else { return Ok(None) };
        let table = specgap_agents::chat::PriceTable::load(path)?;
        let price = table.price(model);
        if price.is_none() {
            tracing::warn!("the price table {} has no entry for model {model}; its cost counts as 0", path.display());
        }
        Ok(price)
    }

    /// The agent's endpoint configuration for `model`.
    pub fn agent_config(&self, model: &str) -> anyhow::Result<specgap_agents::chat::ChatConfig> {
        let mut config = specgap_agents::chat::ChatConfig::new(model).with_model_args(&self.model_args)?;
        config.base_url = self.base_url();
        specgap_agents::chat::client::check_base_url(&config.base_url).map_err(|why| anyhow::anyhow!("--base-url: {why}"))?;
        config.api_key_env = self.api_key_env();
        specgap_agents::chat::client::warn_unset_api_key(&config.api_key_env, "--api-key-env");
        config.stream = self.stream;
        config.emulate_tools = self.emulate_tools;
        config.context_tokens = self.context_tokens;
        config.request_timeout_sec = self.request_timeout();
        config.max_retries = self.max_retries();
        config.price = self.price(model)?;
        Ok(config)
    }

    /// The model endpoint of a `--agent cli:…`: the model (`--model`), the upstream its
    /// gateway forwards to, the model arguments, the gateway's retries and the price.
    ///
    /// # Errors
    /// No `--model`, bad model arguments or an unreadable price table.
    pub fn cli_endpoint(&self) -> anyhow::Result<specgap_agents::chat::ChatConfig> {
        let Some(model) = self.model.clone().filter(|m| !m.trim().is_empty()) else {
            bail!("a cli: agent needs --model <name>: the model its gateway forwards to {}", self.base_url());
        };
        self.agent_config(&model)
    }

    /// The user's endpoint configuration for `model` (URL and key variable default to the
    /// agent's).
    pub fn user_config(&self, model: &str) -> anyhow::Result<specgap_agents::chat::ChatConfig> {
        let mut config = specgap_agents::chat::ChatConfig::new(model).with_model_args(&self.user_model_args)?;
        config.base_url = self.user_base_url.clone().unwrap_or_else(|| self.base_url());
        let flag = if self.user_base_url.is_some() { "--user-base-url" } else { "--base-url" };
        specgap_agents::chat::client::check_base_url(&config.base_url).map_err(|why| anyhow::anyhow!("{flag}: {why}"))?;
        config.api_key_env = self.user_api_key_env.clone().unwrap_or_else(|| self.api_key_env());
        let flag = if self.user_api_key_env.is_some() { "--user-api-key-env" } else { "--api-key-env" };
        specgap_agents::chat::client::warn_unset_api_key(&config.api_key_env, flag);
        config.request_timeout_sec = self.request_timeout();
        config.max_retries = self.max_retries();
        config.price = self.price(model)?;
        Ok(config)
    }
}

/// Scripted agents need their solution overlay (DESIGN §4); `specgap-agents` decides.
#[derive(Debug, Clone, Copy)]
pub struct Applicability;

impl AgentApplicability for Applicability {
    fn applicable(&self, agent: &ComponentRef, package: &TaskPackage) -> Result<(), NotApplicable> {
        match parse_agent_spec(&agent.spec) {
            Ok(spec) => spec.applicability(package),
            // Specs were parsed when the run was configured; one that no longer parses
            // cannot run anywhere.
            Err(e) => Err(NotApplicable::new(e.to_string())),
        }
    }

    fn applicable_under(&self, agent: &ComponentRef, condition: &specgap_engine::Condition) -> Result<(), NotApplicable> {
        match parse_agent_spec(&agent.spec) {
            Ok(spec) => spec.applicability_under(condition),
            Err(e) => Err(NotApplicable::new(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_hash_covers_spec_and_config() {
        let mut config = toml::Table::new();
        config.insert("solution".into(), toml::Value::String("gold".into()));
        let a = component_ref("scripted:gold", config.clone());
        assert_eq!(a.hash.len(), 64);
        assert_eq!(a.hash, component_ref("scripted:gold", config.clone()).hash);
        assert_ne!(a.hash, component_ref("scripted:literal", config).hash);
        assert_ne!(a.hash, component_ref("scripted:gold", toml::Table::new()).hash);
    }
}
