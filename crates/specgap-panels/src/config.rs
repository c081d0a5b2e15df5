//! The panel file (TOML): the models of a panel, optional prompt overrides and the extraction
//! settings. One file serves all three uses; each use takes the models and the prompts it
//! needs.
//!
//! ```toml
//! [[model]]
//! model = "glm-5.2"                         # sent as `model`
//! base_url = "https://api.example.com/v1"   # default http://127.0.0.1:8000/v1
//! api_key_env = "GLM_API_KEY"               # the variable holding the key, never the key
//! args = { max_tokens = 2000 }              # request arguments; temperature 0 unless given
//! price = { input_per_mtok = 0.6, output_per_mtok = 2.2 }   # optional, for cost
//!
//! [[model]]
//! model = "qwen3.8-27b"
//! # ...
//!
//! [prompts]                                 # optional: a file replaces a built-in prompt
//! judge_user = "prompts/judge_user.txt"     # relative to this file
//!
//! [extraction]                              # optional: limits of one extractor session
//! turns = 40
//! wall_sec = 900
//! check_output = true                       # the check_output tool (the case evaluator, form only)
//! ```
//!
//! Other per-model keys: `stream`, `emulate_tools` (extractor sessions of models without
//! native tool calls), `context_tokens`, `request_timeout_sec`, `max_retries`,
//! `retry_base_ms` — the chat client's settings ([`specgap_agents::chat::ChatConfig`]), with
//! its defaults. Unknown keys are errors.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use specgap_agents::chat::{ChatConfig, Price};

use crate::error::PanelError;
use crate::prompts::{PromptSet, Prompts};

/// Default turns of one extractor session.
pub const DEFAULT_EXTRACTION_TURNS: u32 = 40;
/// Default wall-clock seconds of one extractor session.
pub const DEFAULT_EXTRACTION_WALL_SEC: u64 = 900;

/// One `[[model]]` of a panel file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelModel {
    /// Model name sent as `model`.
    pub model: String,
    /// Base URL up to `/v1`.
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// Environment variable holding the API key (absent or empty: no `Authorization`).
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    /// Request arguments passed through (`max_tokens`, `seed`, `response_format`, …);
    /// `temperature` is 0 unless given (seed 002 A.9.5: "calls use temperature zero").
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
    /// Streamed (SSE) responses.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Tools described in the system prompt (extractor sessions only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emulate_tools: bool,
    /// Context window in tokens (extractor sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Request timeout in seconds.
    #[serde(default = "default_timeout")]
    pub request_timeout_sec: f64,
    /// Retries of a failed request (the chat client's backoff).
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First backoff delay in milliseconds.
    #[serde(default = "default_retry_base")]
    pub retry_base_ms: u64,
    /// Price for the cost columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

fn default_base_url() -> String {
    specgap_agents::chat::DEFAULT_BASE_URL.into()
}
fn default_api_key_env() -> String {
    specgap_agents::chat::DEFAULT_API_KEY_ENV.into()
}
fn default_timeout() -> f64 {
    specgap_agents::chat::DEFAULT_REQUEST_TIMEOUT_SEC
}
fn default_retries() -> u32 {
    specgap_agents::chat::DEFAULT_MAX_RETRIES
}
fn default_retry_base() -> u64 {
    specgap_agents::chat::DEFAULT_RETRY_BASE_MS
}

impl PanelModel {
    /// The chat client configuration of this model, temperature 0 unless the file gives one.
    pub fn chat_config(&self) -> ChatConfig {
        let mut config = ChatConfig::new(self.model.clone());
        config.base_url = self.base_url.clone();
        config.api_key_env = self.api_key_env.clone();
        config.model_args = self.args_with_defaults();
        config.stream = self.stream;
        config.emulate_tools = self.emulate_tools;
        config.context_tokens = self.context_tokens;
        config.request_timeout_sec = self.request_timeout_sec;
        config.max_retries = self.max_retries;
        config.retry_base_ms = self.retry_base_ms;
        config.price = self.price;
        config
    }

    /// The request arguments with `temperature: 0` added when absent.
    pub fn args_with_defaults(&self) -> Map<String, Value> {
        let mut args = self.args.clone();
        args.entry("temperature").or_insert(json!(0));
        args
    }

    /// What decides this model's ballots — model, endpoint, request arguments, streaming and
    /// tool emulation — for the panel's name; prices, timeouts and retries are left out, so
    /// adding a price to a panel keeps its verdicts.
    pub(crate) fn identity(&self) -> Value {
        json!({
            "model": self.model,
            "base_url": self.base_url,
            "args": self.args_with_defaults(),
            "stream": self.stream,
            "emulate_tools": self.emulate_tools,
            "context_tokens": self.context_tokens,
        })
    }
}

/// `[prompts]`: files replacing built-in prompts (paths relative to the panel file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptFiles {
    /// The coverage judge's system message.
    pub judge_system: Option<PathBuf>,
    /// The coverage judge's user message template (`{{target_id}}`, `{{target}}`,
    /// `{{triggers}}`, `{{questions}}`).
    pub judge_user: Option<PathBuf>,
    /// The text put before the judge's user message on its one repair retry.
    pub judge_repair: Option<PathBuf>,
    /// The question detector's system message.
    pub detector_system: Option<PathBuf>,
    /// The question detector's user message template (`{{reply}}`).
    pub detector_user: Option<PathBuf>,
    /// The text put before the detector's user message on its one repair retry.
    pub detector_repair: Option<PathBuf>,
    /// The extractor's system message.
    pub extractor_system: Option<PathBuf>,
    /// The extractor's instructions (`{{delivered}}`, `{{case}}`, `{{schema_path}}`,
    /// `{{schema}}`, `{{output}}`, `{{check_block}}`).
    pub extractor: Option<PathBuf>,
    /// The extractor's verification block, put at `{{check_block}}` when its sessions offer
    /// `check_output` (seed 002 A.9.4's verification block).
    pub extractor_check: Option<PathBuf>,
}

/// `[extraction]`: the limits of one extractor session and whether it may check its output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractionSettings {
    /// Agent turns per extractor session.
    #[serde(default = "default_turns")]
    pub turns: u32,
    /// Wall-clock seconds per extractor session.
    #[serde(default = "default_wall")]
    pub wall_sec: u64,
    /// Whether extractors get the `check_output` tool, which runs the case evaluator on their
    /// output and reports failures of form only (seed 002 A.9.4's verification block; the
    /// paper withholds it only for its case with a heavyweight evaluator). Default true.
    #[serde(default = "default_check_output")]
    pub check_output: bool,
}

impl Default for ExtractionSettings {
    fn default() -> Self {
        ExtractionSettings { turns: DEFAULT_EXTRACTION_TURNS, wall_sec: DEFAULT_EXTRACTION_WALL_SEC, check_output: true }
    }
}

fn default_check_output() -> bool {
    true
}

fn default_turns() -> u32 {
    DEFAULT_EXTRACTION_TURNS
}
fn default_wall() -> u64 {
    DEFAULT_EXTRACTION_WALL_SEC
}

/// A panel file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PanelFileText {
    #[serde(rename = "model", default)]
    models: Vec<PanelModel>,
    #[serde(default)]
    prompts: PromptFiles,
    #[serde(default)]
    extraction: ExtractionSettings,
}

/// A panel file, read and checked, with its prompt overrides loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The models, in file order: a model's 0-based position is its *seat*.
    pub models: Vec<PanelModel>,
    /// Built-in prompts with the file's overrides applied.
    pub prompts: Prompts,
    /// Extractor session limits.
    pub extraction: ExtractionSettings,
}

impl PanelFile {
    /// Reads a panel file and the prompt files it names.
    ///
    /// # Errors
    /// [`PanelError::Read`] / [`PanelError::Parse`] naming the file; [`PanelError::NoModels`]
    /// for a file without `[[model]]`; [`PanelError::BadModel`] for a blank model name or
    /// URL; [`PanelError::Read`] for a prompt file that cannot be read.
    pub fn load(path: &Path) -> Result<PanelFile, PanelError> {
        let text = fs_err::read_to_string(path).map_err(|source| PanelError::Read { path: path.to_path_buf(), source })?;
        let parsed: PanelFileText =
            toml::from_str(&text).map_err(|source| PanelError::Parse { path: path.to_path_buf(), source: Box::new(source) })?;
        if parsed.models.is_empty() {
            return Err(PanelError::NoModels { path: path.to_path_buf() });
        }
        for (seat, model) in parsed.models.iter().enumerate() {
            if model.model.trim().is_empty() || model.base_url.trim().is_empty() {
                return Err(PanelError::BadModel {
                    path: path.to_path_buf(),
                    seat,
                    problem: "`model` and `base_url` must not be blank".into(),
                });
            }
            if model.args.contains_key("messages") || model.args.contains_key("model") {
                return Err(PanelError::BadModel {
                    path: path.to_path_buf(),
                    seat,
                    problem: "`args` may not set `messages` or `model`".into(),
                });
            }
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let prompts = Prompts::with_overrides(&parsed.prompts, base)?;
        Ok(PanelFile { path: path.to_path_buf(), models: parsed.models, prompts, extraction: parsed.extraction })
    }

    /// The panel of one use: its models, the prompts it sends, its name and record.
    pub fn panel(&self, use_: specgap_store::PanelUse) -> Panel {
        let prompts = self.prompts.set(use_);
        let mut identity = json!({
            "use": use_.as_str(),
            "models": self.models.iter().map(PanelModel::identity).collect::<Vec<_>>(),
            "prompt_hash": prompts.hash(),
        });
        if use_ == specgap_store::PanelUse::Extractor {
            identity["extraction"] = json!(self.extraction);
        }
        let name = format!("panel:{}", &crate::hex_sha256(identity.to_string().as_bytes())[..12]);
        Panel { name, use_, models: self.models.clone(), prompts, extraction: self.extraction }
    }
}

/// The panel of one use, ready to run. It serializes whole (models without keys, prompt
/// texts), so a live detector's panel is stored in `run.toml` and rebuilt from it on
/// `--resume` ([`Panel::to_table`], [`Panel::from_table`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// `panel:<12 hex digits>`: a hash of the use, each model's identity, the prompt texts
    /// and (extraction) the session limits. Judge verdicts carry it as their judge name.
    pub name: String,
    /// What the panel is for.
    #[serde(rename = "use")]
    pub use_: specgap_store::PanelUse,
    /// The models by seat.
    pub models: Vec<PanelModel>,
    /// The prompts it sends.
    pub prompts: PromptSet,
    /// Extractor session limits (extraction only).
    pub extraction: ExtractionSettings,
}

impl Panel {
    /// The configured seats.
    pub fn seats(&self) -> usize {
        self.models.len()
    }

    /// Ballots needed for a coverage verdict or an agreed extraction score: a strict majority
    /// of the configured seats — 3 of seed 002's 5 (§4.1 "at least three of five"; A.3 "three
    /// scores agree").
    pub fn majority(&self) -> usize {
        self.models.len() / 2 + 1
    }

    /// The row of `panels` for this panel: its configuration (models without keys, the vote
    /// rule, the limits), prompt version and prompt hash.
    pub fn record(&self) -> specgap_store::PanelRecord {
        let rule = match self.use_ {
            specgap_store::PanelUse::Judge => {
                format!("covered when at least {} of the {} configured judges say covered", self.majority(), self.seats())
            }
            specgap_store::PanelUse::Extractor => {
                format!("scored when {} extractions give the same score to 4 decimal places; later extractors are skipped", self.majority())
            }
            specgap_store::PanelUse::Detector => "asking when a strict majority of the ballots returned say asking".to_string(),
        };
        let mut config = json!({ "models": self.models, "rule": rule });
        if self.use_ == specgap_store::PanelUse::Extractor {
            config["extraction"] = json!(self.extraction);
        }
        specgap_store::PanelRecord {
            name: self.name.clone(),
            use_: self.use_,
            config,
            prompt_version: self.prompts.version.clone(),
            prompt_hash: self.prompts.hash(),
        }
    }

    /// Whether any model has a price (so cost columns mean something).
    pub fn priced(&self) -> bool {
        self.models.iter().any(|m| m.price.is_some())
    }

    /// The panel as a TOML table (for a component of `run.toml`).
    ///
    /// # Errors
    /// [`PanelError::Stored`] when a request argument cannot be written as TOML (`null`).
    pub fn to_table(&self) -> Result<toml::Table, PanelError> {
        toml::Table::try_from(self).map_err(|e| PanelError::Stored(e.to_string()))
    }

    /// A panel stored with [`Panel::to_table`].
    ///
    /// # Errors
    /// [`PanelError::Stored`] when the table is not a stored panel.
    pub fn from_table(table: &toml::Table) -> Result<Panel, PanelError> {
        toml::Value::Table(table.clone()).try_into().map_err(|e: toml::de::Error| PanelError::Stored(e.to_string()))
    }
}
