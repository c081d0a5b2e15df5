//! The seam each of the four roles is played through: any [`Role`] answers a [`RoleRequest`]
//! with the text of its hand-off.
//!
//! [`ScriptedRole`] (`scripted:<file>`) is the offline player: it answers from a script, one
//! step per request, and can write files into the request's working directory first, as a
//! Builder agent would. [`crate::chat::ChatRole`] (`chat:<model>`) plays a role as a
//! conversation with a model. [`crate::cli_role::CliRole`] (`cli:<adapter>`) runs an agent
//! program per request in the role's sandbox view; its configuration is resolved by the
//! caller (`specgap synthesize`), so [`role_from_spec`] names it without building it.
//! `replay:` agents do not play roles (a replay script is an episode's tool calls, not a
//! hand-off); [`role_from_spec`] refuses them pointing to `scripted:`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
pub use specgap_protocol::event::Usage;

/// Version of the `scripted:` file format.
pub const SCRIPT_FORMAT: u32 = 1;

/// One of the four pipeline roles (seed 000 §4.2, Figure 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleName {
    /// Reads the source and writes the design brief.
    Planner,
    /// Writes the package from the brief.
    Builder,
    /// Reviews the package read-only.
    Auditor,
    /// Reads calibration rollouts.
    Calibrator,
    /// The Auditor's sufficiency episode: implements from the full instruction and the
    /// workspace alone (seed 000 App. E.3 item 4).
    Implementer,
}

impl RoleName {
    /// `planner`, `builder`, `auditor` or `calibrator`.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleName::Planner => "planner",
            RoleName::Builder => "builder",
            RoleName::Auditor => "auditor",
            RoleName::Calibrator => "calibrator",
            RoleName::Implementer => "implementer",
        }
    }
}

/// What a role is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleRequest {
    /// Which role.
    pub role: RoleName,
    /// The role's prompt, already filled in.
    pub prompt: String,
    /// The structured inputs (the brief, the package path, the fixes to apply, ...).
    pub inputs: serde_json::Value,
    /// A directory the role may write into (the Builder's); `None` for read-only roles.
    pub work_dir: Option<PathBuf>,
    /// When this request repeats one whose answer was malformed: why it was refused.
    pub retry_reason: Option<String>,
}

/// Why a role could not answer at all (a malformed answer is not this: see
/// [`crate::handoff::HandoffError`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoleError {
    /// The role spec names an agent kind this pipeline cannot play.
    #[error("`{spec}` cannot play a synthesize role: only `scripted:<file>`, `chat:<model>` and `cli:<adapter>` roles are supported")]
    Unsupported {
        /// The spec given.
        spec: String,
    },
    /// A `replay:` spec: replay scripts replay an episode's tool calls against a task package,
    /// and a role answers a request with a hand-off, so the offline path is `scripted:`
    /// (docs/decisions.md "synthesize: no `replay:` roles").
    #[error(
        "`{spec}` cannot play a synthesize role: a replay: script replays an episode's tool calls, and a role answers with a hand-off; for the offline path write a `scripted:<file>` role script (docs/synthesize.md \"Roles\")"
    )]
    Replay {
        /// The spec given.
        spec: String,
    },
    /// A `cli:` spec given to [`role_from_spec_with`]: its agent configuration is resolved
    /// by the caller (installation, model), then played with [`crate::cli_role::CliRole`].
    #[error("`{spec}` is a cli: role: resolve its agent configuration and play it with CliRole (specgap synthesize does)")]
    CliUnresolved {
        /// The spec given.
        spec: String,
    },
    /// A script file could not be read.
    #[error("cannot read the role script {}", path.display())]
    ReadScript {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A script file is not a valid script.
    #[error("role script {} is malformed at `{field}`: {problem}", path.display())]
    BadScript {
        /// The file.
        path: PathBuf,
        /// JSON path of the problem.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The script has no step left for this request.
    #[error("role script {} has no step left for request {request} of the {role} (it has {steps})", path.display())]
    ScriptExhausted {
        /// The file.
        path: PathBuf,
        /// The role played.
        role: &'static str,
        /// 1-based number of the request.
        request: usize,
        /// Steps in the script.
        steps: usize,
    },
    /// A step's files could not be written into the working directory.
    #[error("cannot copy {} into the working directory {}", from.display(), to.display())]
    WriteFiles {
        /// The step's `write_from` directory.
        from: PathBuf,
        /// The working directory.
        to: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A `chat:` role's spec names no model.
    #[error("`{spec}` names no model; write chat:<model>")]
    NoModel {
        /// The spec given.
        spec: String,
    },
    /// A `chat:` role's client could not be made.
    #[error("cannot set up the chat client of the {role}")]
    ChatSetup {
        /// The role played.
        role: &'static str,
        /// The cause.
        #[source]
        source: specgap_agents::chat::ClientError,
    },
    /// A `chat:` role's model request failed (after the client's own retries).
    #[error("the {role}'s model request failed")]
    Chat {
        /// The role played.
        role: &'static str,
        /// The cause.
        #[source]
        source: specgap_agents::chat::ClientError,
    },
    /// A file or directory a `chat:` role is shown could not be read.
    #[error("cannot read {} to show it to the {role}", path.display())]
    ReadContext {
        /// The role played.
        role: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A rollout's trajectory, shown to a `chat:` Calibrator, could not be read.
    #[error("cannot read the trajectory of rollout `{rollout}` to show it to the calibrator")]
    ReadTrajectory {
        /// The rollout (episode id).
        rollout: String,
        /// The cause (boxed: a store error is large).
        #[source]
        source: Box<specgap_store::StoreError>,
    },
    /// A `cli:` role's sandbox view could not be made.
    #[error("cannot set up the {role}'s sandbox")]
    View {
        /// The role played.
        role: &'static str,
        /// The cause.
        #[source]
        source: crate::sandbox_view::ViewError,
    },
    /// A `cli:` role's run directory could not be prepared or read.
    #[error("cannot prepare or read the {role}'s run directory {}", path.display())]
    RunDir {
        /// The role played.
        role: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A `cli:` role's program could not be run (sandbox, gateway, model service).
    #[error("the {role}'s agent program could not be run")]
    Cli {
        /// The role played.
        role: &'static str,
        /// The cause.
        #[source]
        source: Box<specgap_engine::session::AgentError>,
    },
    /// A `cli:` role wrote no hand-off file and ended without a final message.
    #[error("the {role} wrote no /handoff/handoff.json and ended without a final message (trajectory {})", trajectory.display())]
    NoHandoff {
        /// The role played.
        role: &'static str,
        /// Its `trajectory.jsonl`.
        trajectory: PathBuf,
    },
    /// A step writes files but the request gives no working directory.
    #[error("step {step} of role script {} writes files, but the {role} is read-only", path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// The role played.
        role: &'static str,
        /// 1-based step number.
        step: usize,
    },
}

/// Anything that can play a role: answers each request with the text of its hand-off.
pub trait Role {
    /// A label for the journal (`scripted:planner.json`).
    fn label(&self) -> String;

    /// Answers `request`.
    ///
    /// # Errors
    /// [`RoleError`] when the role cannot answer at all.
    fn answer(&mut self, request: &RoleRequest) -> Result<String, RoleError>;

    /// Told, when a synthesis is resumed, how many of this role's answers the journal already
    /// holds (they are reused, not asked again). A script skips that many steps; a role that
    /// starts a fresh episode per request has nothing to do (the default).
    fn resume_after(&mut self, _answered: usize) {}

    /// What the last [`Role::answer`] spent on model requests (tokens, requests, cost), taken
    /// once; `None` for a role that calls no model (a script).
    fn take_usage(&mut self) -> Option<Usage> {
        None
    }
}

/// Builds the role named by `spec` with the default chat endpoint
/// ([`role_from_spec_with`]).
///
/// # Errors
/// As [`role_from_spec_with`].
pub fn role_from_spec(spec: &str) -> Result<Box<dyn Role>, RoleError> {
    role_from_spec_with(spec, RoleName::Planner, &ChatEndpoint::default())
}

/// Builds the role named by `spec` to play `role`: `scripted:<file>`, or `chat:<model>` on
/// `endpoint` ([`crate::chat::ChatRole`]).
///
/// # Errors
/// [`RoleError::CliUnresolved`] for `cli:`, [`RoleError::Replay`] for `replay:`,
/// [`RoleError::Unsupported`] for any other spec,
/// [`RoleError::NoModel`] for `chat:` alone;
/// the script's own errors for `scripted:`, [`RoleError::ChatSetup`] for `chat:`.
pub fn role_from_spec_with(spec: &str, role: RoleName, endpoint: &ChatEndpoint) -> Result<Box<dyn Role>, RoleError> {
    if let Some(path) = spec.strip_prefix("scripted:") {
        return Ok(Box::new(ScriptedRole::load(Path::new(path))?));
    }
    if let Some(model) = spec.strip_prefix("chat:") {
        if model.trim().is_empty() {
            return Err(RoleError::NoModel { spec: spec.to_owned() });
        }
        let config = endpoint.config(model.trim());
        return Ok(Box::new(crate::chat::ChatRole::new(config, role)?));
    }
    if spec.starts_with("cli:") {
        return Err(RoleError::CliUnresolved { spec: spec.to_owned() });
    }
    if spec.starts_with("replay:") {
        return Err(RoleError::Replay { spec: spec.to_owned() });
    }
    Err(RoleError::Unsupported { spec: spec.to_owned() })
}

/// Where `chat:<model>` roles send their requests: one endpoint shared by every chat role of
/// a synthesis (`--base-url`, `--api-key-env`, `--model-arg`).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatEndpoint {
    /// Base URL up to `/v1`.
    pub base_url: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Extra request fields (`temperature`, `max_tokens`, ...).
    pub model_args: serde_json::Map<String, serde_json::Value>,
    /// `--prices`: the price table each chat role's model is priced by (as `specgap run`
    /// prices its agents); `None`, or a model it lacks: cost 0.
    pub prices: Option<specgap_agents::chat::PriceTable>,
}

impl Default for ChatEndpoint {
    fn default() -> Self {
        ChatEndpoint {
            base_url: specgap_agents::chat::DEFAULT_BASE_URL.into(),
            api_key_env: specgap_agents::chat::DEFAULT_API_KEY_ENV.into(),
            model_args: serde_json::Map::new(),
            prices: None,
        }
    }
}

impl ChatEndpoint {
    /// The chat configuration of `model` on this endpoint (every other setting the chat
    /// agent's default).
    pub fn config(&self, model: &str) -> specgap_agents::chat::ChatConfig {
        let mut config = specgap_agents::chat::ChatConfig::new(model);
        config.base_url.clone_from(&self.base_url);
        config.api_key_env.clone_from(&self.api_key_env);
        config.model_args.clone_from(&self.model_args);
        config.price = self.prices.as_ref().and_then(|table| table.price(model));
        config
    }
}

/// A `scripted:` file: `{"format": 1, "steps": [...]}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    format: u32,
    steps: Vec<ScriptStep>,
}

/// One answer of a script. Exactly one of `reply` (a JSON value, sent as its JSON text) and
/// `reply_text` (sent verbatim, for malformed answers); `write_from` (relative to the script's
/// directory) is copied into the working directory before answering.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptStep {
    #[serde(default)]
    write_from: Option<PathBuf>,
    #[serde(default)]
    reply: Option<serde_json::Value>,
    #[serde(default)]
    reply_text: Option<String>,
}

/// A role played from a script file, one step per request.
#[derive(Debug)]
pub struct ScriptedRole {
    path: PathBuf,
    steps: Vec<ScriptStep>,
    next: usize,
}

impl ScriptedRole {
    /// Reads and checks a script file.
    ///
    /// # Errors
    /// [`RoleError::ReadScript`], or [`RoleError::BadScript`] naming the field.
    pub fn load(path: &Path) -> Result<ScriptedRole, RoleError> {
        let text = fs_err::read_to_string(path).map_err(|source| RoleError::ReadScript { path: path.to_owned(), source })?;
        let bad = |field: String, problem: String| RoleError::BadScript { path: path.to_owned(), field, problem };
        let mut deserializer = serde_json::Deserializer::from_str(&text);
        let script: ScriptFile =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|e| bad(e.path().to_string(), e.inner().to_string()))?;
        if script.format != SCRIPT_FORMAT {
            return Err(bad(
                "format".into(),
                format!("format {} is not supported; this specgap reads format {SCRIPT_FORMAT}", script.format),
            ));
        }
        for (index, step) in script.steps.iter().enumerate() {
            if step.reply.is_some() == step.reply_text.is_some() {
                return Err(bad(format!("steps[{index}]"), "needs exactly one of `reply` and `reply_text`".into()));
            }
        }
        Ok(ScriptedRole { path: path.to_owned(), steps: script.steps, next: 0 })
    }

    fn script_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

impl Role for ScriptedRole {
    fn label(&self) -> String {
        format!("scripted:{}", self.path.display())
    }

    fn resume_after(&mut self, answered: usize) {
        self.next = answered;
    }

    fn answer(&mut self, request: &RoleRequest) -> Result<String, RoleError> {
        let index = self.next;
        let Some(step) = self.steps.get(index).cloned() else {
            return Err(RoleError::ScriptExhausted {
                path: self.path.clone(),
                role: request.role.as_str(),
                request: index + 1,
                steps: self.steps.len(),
            });
        };
        self.next += 1;
        if let Some(from) = &step.write_from {
            let Some(work_dir) = &request.work_dir else {
                return Err(RoleError::ReadOnly { path: self.path.clone(), role: request.role.as_str(), step: index + 1 });
            };
            let from = self.script_dir().join(from);
            crate::tree::copy_tree(&from, work_dir).map_err(|source| RoleError::WriteFiles { from, to: work_dir.clone(), source })?;
        }
        Ok(match (step.reply, step.reply_text) {
            (Some(value), _) => value.to_string(),
            (None, Some(text)) => text,
            (None, None) => String::new(),
        })
    }
}
