//! `specgap run --config FILE.toml`: a run configuration file (docs/run-config.md) declaring
//! agents (each with its own endpoint), the user, conditions, starts, repeats, seed and
//! budgets, resolved into the same [`RunSpec`](super::RunSpec) the flags make.
//!
//! Relative paths in the file (suites, replay scripts, price tables) are relative to the
//! file's directory. Unknown keys are errors, as in `task.toml`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::Deserialize;
use specgap_agents::chat::{ChatConfig, Price, PriceTable};
use specgap_agents::prompt_dir::PromptDir;
use specgap_protocol::run::ComponentRef;

use super::agents;

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// Suites (directories of packages, or packages).
    #[serde(default)]
    pub suites: Vec<String>,
    /// Condition presets.
    #[serde(default)]
    pub conditions: Vec<String>,
    /// Starts.
    #[serde(default)]
    pub starts: Vec<String>,
    /// Repeats per combination.
    pub repeats: Option<u32>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Retries after infrastructure or evaluation errors.
    pub retries: Option<u32>,
    /// `false` runs without bubblewrap (debugging only).
    pub sandbox: Option<bool>,
    /// Clarification rounds per delivery episode.
    pub clarification_rounds: Option<u32>,
    /// A price table for every model without a `price` of its own.
    pub prices: Option<String>,
    /// A directory of replacement prompts (as `--prompts DIR`; docs/prompts.md).
    pub prompts: Option<String>,
    /// Axis overrides of every condition.
    #[serde(default)]
    pub overrides: OverridesEntry,
    /// Budgets.
    #[serde(default)]
    pub budget: BudgetEntry,
    /// The agents, in order.
    #[serde(default, rename = "agent")]
    pub agents: Vec<AgentEntry>,
    /// The simulated owner / customer (default: relay).
    pub user: Option<UserEntry>,
}

/// `[overrides]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverridesEntry {
    /// Submission budget.
    pub submissions: Option<u32>,
    /// `on` or `off`.
    pub ask: Option<String>,
    /// `on` or `off`.
    pub feedback: Option<String>,
    /// `owner` or `shell`.
    pub profile: Option<String>,
    /// `on` or `off`: interact-req's hard clarify-first gate (`--clarify-gate`).
    pub clarify_gate: Option<String>,
}

/// `[budget]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetEntry {
    /// Turns per episode.
    pub turns: Option<u32>,
    /// Tool calls per episode.
    pub tool_calls: Option<u32>,
    /// Wall-clock seconds per episode.
    pub wall_sec: Option<u64>,
}

/// A model endpoint's settings, shared by `chat` and `cli` agents and `chat` users.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointEntry {
    /// Base URL up to `/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Extra request fields.
    pub model_args: Option<toml::Table>,
    /// Streamed responses.
    pub stream: Option<bool>,
    /// Tools in the prompt instead of native calls.
    pub emulate_tools: Option<bool>,
    /// The model's context window.
    pub context_tokens: Option<u64>,
    /// Seconds per request try.
    pub request_timeout: Option<f64>,
    /// Retries of a failed request.
    pub max_retries: Option<u32>,
    /// The model's price (else the file's `prices` table).
    pub price: Option<Price>,
}

/// One `[[agent]]`: `kind` says which other keys apply.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    /// The agent's name in episodes and reports (default: its spec; a replay agent's is
    /// `replay:<file name>`).
    pub name: Option<String>,
    /// `scripted`, `replay`, `chat` or `cli`.
    pub kind: String,
    /// `scripted`: gold, literal, starter or mutant:<id>.
    pub solution: Option<String>,
    /// `replay`: a script or stored episode.
    pub path: Option<String>,
    /// `chat` and `cli`: the model.
    pub model: Option<String>,
    /// `cli`: the adapter (specgap agents list).
    pub adapter: Option<String>,
    /// `cli`: the adapter's version (default: its pinned one).
    pub version: Option<String>,
    /// `cli` with adapter `command`: the command template.
    pub command: Option<String>,
    /// `cli`: the ask channel, `text`, `native` or `mcp` (as `--ask-channel`; default: the
    /// adapter's).
    pub ask_channel: Option<String>,
    /// `chat` and `cli`: the endpoint.
    #[serde(flatten)]
    pub endpoint: EndpointEntry,
}

/// `[user]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserEntry {
    /// `relay` or `chat`.
    pub kind: String,
    /// `chat`: the model.
    pub model: Option<String>,
    /// A panel file whose models detect questions in reply text (as `--detector-panel`);
    /// relative to the file.
    pub detector_panel: Option<String>,
    /// `chat`: the endpoint.
    #[serde(flatten)]
    pub endpoint: EndpointEntry,
}

/// Reads and parses `path`.
///
/// # Errors
/// An unreadable file, or TOML that is not a run configuration (the message names the key).
pub fn read(path: &Path) -> anyhow::Result<RunFile> {
    let text = fs_err::read_to_string(path).context("cannot read the run configuration")?;
    let file: RunFile =
        toml::from_str(&text).with_context(|| format!("{} is not a valid run configuration (docs/run-config.md)", path.display()))?;
    refuse_zero_counts(&file, path)?;
    Ok(file)
}

/// Refuses the counts of `file` that must be at least 1 when it gives them as 0, naming the
/// file, the key and the value (a 0 there never means "no cap": docs/decisions.md "Run
/// configuration: zero budgets are refused").
fn refuse_zero_counts(file: &RunFile, path: &Path) -> anyhow::Result<()> {
    let counts = [
        ("repeats", file.repeats.map(u64::from), "1 repeat"),
        (
            "clarification_rounds",
            file.clarification_rounds.map(u64::from),
            "1 round (to withdraw asking, use the hidden condition or overrides.ask = \"off\")",
        ),
        ("overrides.submissions", file.overrides.submissions.map(u64::from), "1 submission"),
        ("budget.wall_sec", file.budget.wall_sec, "1 second (leave the key out for the protocol's wall clock)"),
    ];
    for (key, value, least) in counts {
        if value == Some(0) {
            bail!("{}: {key} = 0; expected at least {least}", path.display());
        }
    }
    Ok(())
}

/// What resolving a file needs besides the file.
pub struct FileContext<'a> {
    /// The file itself, for messages.
    pub file: &'a Path,
    /// The file's directory (relative paths start there).
    pub dir: &'a Path,
    /// The file's price table, loaded.
    pub prices: Option<(PathBuf, PriceTable)>,
    /// The file's replacement prompts, loaded (empty without `prompts`).
    pub prompts: &'a PromptDir,
    /// What a `cli:` agent that is not installed does to the resolution (a dry run notes it).
    pub missing_install: agents::MissingInstall,
}

impl FileContext<'_> {
    /// `text` as a path: absolute as it is, relative to the file's directory.
    pub fn path(&self, text: &str) -> PathBuf {
        let path = Path::new(text);
        if path.is_absolute() { path.to_path_buf() } else { self.dir.join(path) }
    }

    fn price(&self, model: &str, own: Option<&Price>) -> Option<Price> {
        if let Some(price) = own {
            return Some(*price);
        }
        let (path, table) = self.prices.as_ref()?;
        let price = table.price(model);
        if price.is_none() {
            tracing::warn!("the price table {} has no entry for model {model}; its cost counts as 0", path.display());
        }
        price
    }
}

/// Loads the file's price table, if it names one.
///
/// # Errors
/// An unreadable or malformed table.
pub fn load_prices(file: &RunFile, dir: &Path) -> anyhow::Result<Option<(PathBuf, PriceTable)>> {
    let Some(prices) = &file.prices else { return Ok(None) };
    let path = if Path::new(prices).is_absolute() { PathBuf::from(prices) } else { dir.join(prices) };
    let table = PriceTable::load(&path).with_context(|| format!("cannot read the price table {}", path.display()))?;
    Ok(Some((path, table)))
}

/// Keys that apply to each kind (besides `name` and `kind`).
fn allowed_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "scripted" => &["solution"],
        "replay" => &["path"],
        "chat" => &["model", "endpoint"],
        "cli" => &["adapter", "version", "command", "model", "ask_channel", "endpoint"],
        _ => &[],
    }
}

/// The keys an entry sets (the endpoint's counted as `endpoint`, named by the first one set).
fn keys_set(entry: &AgentEntry) -> Vec<&'static str> {
    let e = &entry.endpoint;
    let endpoint = e.base_url.is_some()
        || e.api_key_env.is_some()
        || e.model_args.is_some()
        || e.stream.is_some()
        || e.emulate_tools.is_some()
        || e.context_tokens.is_some()
        || e.request_timeout.is_some()
        || e.max_retries.is_some()
        || e.price.is_some();
    [
        ("solution", entry.solution.is_some()),
        ("path", entry.path.is_some()),
        ("model", entry.model.is_some()),
        ("adapter", entry.adapter.is_some()),
        ("version", entry.version.is_some()),
        ("command", entry.command.is_some()),
        ("ask_channel", entry.ask_channel.is_some()),
        ("endpoint", endpoint),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(key, _)| key)
    .collect()
}

fn describe(index: usize, entry: &AgentEntry) -> String {
    match &entry.name {
        Some(name) => format!("agent {} (`{name}`)", index + 1),
        None => format!("agent {}", index + 1),
    }
}

/// The endpoint of a `chat` / `cli` agent or `chat` user (`what`: `agent 1`, `user`) for
/// `model`; warns when the file names an API key variable that is not set.
fn chat_config(model: &str, endpoint: &EndpointEntry, context: &FileContext<'_>, what: &str) -> anyhow::Result<ChatConfig> {
    let mut config = ChatConfig::new(model);
    if let Some(url) = &endpoint.base_url {
        specgap_agents::chat::client::check_base_url(url)
            .map_err(|why| anyhow::anyhow!("`base_url` of {what} in {}: {why}", context.file.display()))?;
        config.base_url.clone_from(url);
    }
    if let Some(var) = &endpoint.api_key_env {
        config.api_key_env.clone_from(var);
        let source = format!("`api_key_env` of {what} in {}", context.file.display());
        specgap_agents::chat::client::warn_unset_api_key(var, &source);
    }
    if let Some(args) = &endpoint.model_args {
        for (key, value) in args {
            let json = serde_json::to_value(value).with_context(|| format!("model argument `{key}` cannot be sent as JSON"))?;
            config.model_args.insert(key.clone(), json);
        }
    }
    config.stream = endpoint.stream.unwrap_or(false);
    config.emulate_tools = endpoint.emulate_tools.unwrap_or(false);
    config.context_tokens = endpoint.context_tokens;
    if let Some(timeout) = endpoint.request_timeout {
        if !(timeout.is_finite() && timeout > 0.0) {
            bail!("request_timeout must be a positive number of seconds, not {timeout}");
        }
        config.request_timeout_sec = timeout;
    }
    if let Some(retries) = endpoint.max_retries {
        config.max_retries = retries;
    }
    config.price = context.price(model, endpoint.price.as_ref());
    Ok(config)
}

/// Resolves one `[[agent]]` into its stored configuration.
///
/// # Errors
/// A kind that does not exist, a key that does not apply to the kind, a missing key, an
/// unknown adapter or unlocked version, an adapter that is not installed.
pub fn agent_component(index: usize, entry: &AgentEntry, context: &FileContext<'_>) -> anyhow::Result<ComponentRef> {
    let what = describe(index, entry);
    let allowed = allowed_keys(&entry.kind);
    if allowed.is_empty() {
        bail!("{what}: unknown kind `{}`; expected scripted, replay, chat or cli", entry.kind);
    }
    if let Some(key) = keys_set(entry).into_iter().find(|k| !allowed.contains(k)) {
        let key = if key == "endpoint" { "an endpoint setting (base_url, api_key_env, model_args, ...)" } else { key };
        bail!("{what}: {key} does not apply to a {} agent", entry.kind);
    }
    let required = |value: &Option<String>, key: &str| -> anyhow::Result<String> {
        value.clone().filter(|v| !v.trim().is_empty()).with_context(|| format!("{what}: a {} agent needs `{key}`", entry.kind))
    };
    let mut component = match entry.kind.as_str() {
        "scripted" => agents::component(
            &format!("scripted:{}", required(&entry.solution, "solution")?),
            &super::ChatArgs::defaults(),
            &context.prompts.system,
            context.missing_install,
        ),
        "replay" => {
            let path = context.path(&required(&entry.path, "path")?);
            agents::component(
                &format!("replay:{}", path.display()),
                &super::ChatArgs::defaults(),
                &context.prompts.system,
                context.missing_install,
            )
        }
        "chat" => {
            let model = required(&entry.model, "model")?;
            let config = chat_config(&model, &entry.endpoint, context, &what)?;
            agents::chat_component(&model, &config, &context.prompts.system)
        }
        _ => cli_component(entry, context, &what),
    }
    .with_context(|| what.clone())?;
    if let Some(name) = &entry.name {
        check_name(name).with_context(|| what.clone())?;
        component.name = Some(name.clone());
    }
    Ok(component)
}

fn cli_component(entry: &AgentEntry, context: &FileContext<'_>, what: &str) -> anyhow::Result<ComponentRef> {
    let adapter = entry.adapter.as_deref().with_context(|| format!("{what}: a cli agent needs `adapter`"))?;
    let (spec, target) = if adapter == agents::COMMAND_ADAPTER {
        if entry.version.is_some() {
            bail!("{what}: the command adapter runs your own command and has no version");
        }
        let command = entry
            .command
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .with_context(|| format!("{what}: the command adapter needs `command`"))?;
        (format!("cli:{}={command}", agents::COMMAND_ADAPTER), agents::CliTarget::Command(command.to_string()))
    } else {
        if entry.command.is_some() {
            bail!("{what}: `command` applies to the command adapter only");
        }
        let version = specgap_adapters::AdapterVersion::resolve(adapter, entry.version.as_deref())?;
        let spec = match &entry.version {
            Some(pinned) => format!("cli:{adapter}@{pinned}"),
            None => format!("cli:{adapter}"),
        };
        (spec, agents::CliTarget::Installed(version))
    };
    let model = entry
        .model
        .as_deref()
        .filter(|m| !m.trim().is_empty())
        .with_context(|| format!("{what}: a cli agent needs `model` (the model its gateway forwards)"))?;
    let endpoint = chat_config(model, &entry.endpoint, context, what)?;
    let ask_channel = entry.ask_channel.as_deref().map(str::parse).transpose().context("ask_channel")?;
    agents::cli_component(&spec, &target, endpoint, ask_channel, &context.prompts.system, context.missing_install)
}

/// Names are labels in reports and episode keys: printable, no commas (lists of agents are
/// comma-separated on the command line), at most 100 characters.
fn check_name(name: &str) -> anyhow::Result<()> {
    if name.trim().is_empty() || name.trim() != name || name.len() > 100 || name.chars().any(|c| c.is_control() || c == ',') {
        bail!("the name `{name}` must be 1 to 100 printable characters without commas or surrounding spaces");
    }
    Ok(())
}

/// Resolves `[user]` (default relay).
///
/// # Errors
/// An unknown kind or a missing model.
pub fn user_component(entry: Option<&UserEntry>, context: &FileContext<'_>) -> anyhow::Result<ComponentRef> {
    let Some(entry) = entry else { return agents::user_component("relay", &super::ChatArgs::defaults(), &context.prompts.user) };
    match entry.kind.as_str() {
        "relay" => {
            if entry.model.is_some() || entry.endpoint.base_url.is_some() || entry.endpoint.model_args.is_some() {
                bail!("user: a relay user has no model or endpoint");
            }
            agents::user_component("relay", &super::ChatArgs::defaults(), &context.prompts.user)
        }
        "chat" => {
            let model = entry.model.as_deref().filter(|m| !m.trim().is_empty()).context("user: a chat user needs `model`")?;
            if entry.endpoint.stream.is_some() || entry.endpoint.emulate_tools.is_some() || entry.endpoint.context_tokens.is_some() {
                bail!("user: stream, emulate_tools and context_tokens apply to agents only");
            }
            let config = chat_config(model, &entry.endpoint, context, "[user]")?;
            agents::chat_user_component(model, &config, &context.prompts.user)
        }
        other => bail!("user: unknown kind `{other}`; expected relay or chat"),
    }
}

/// Checks that agents' labels are unique (names, or specs where no name is given).
///
/// # Errors
/// The first label given twice.
pub fn check_unique_labels(components: &[ComponentRef]) -> anyhow::Result<()> {
    for (i, component) in components.iter().enumerate() {
        if components[..i].iter().any(|c| c.label() == component.label()) {
            bail!(
                "two agents are called `{}`; give each a distinct `name` (e.g. the scaffold and the model, \"mini-swe-agent/qwen3\")",
                component.label()
            );
        }
    }
    Ok(())
}
