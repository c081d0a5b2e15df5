//! `chat:<model>`: a role played as a conversation with a model on an OpenAI-compatible
//! endpoint, through the chat agent's own client ([`specgap_agents::chat::ChatClient`]: its
//! retries, its usage per request).
//!
//! **What each request sends.** A fresh conversation per hand-off: the role's filled prompt as
//! the system message, then one user message holding the request's structured inputs (JSON)
//! and the files the paper gives that role (seed 000 App. E), each file as its relative path
//! and its full text:
//!
//! | role | files shown |
//! | --- | --- |
//! | Planner | the source task (`inputs.source`, a directory or one file) |
//! | Builder | its working directory as it stands (empty in round 1, the previous round's files after) |
//! | Auditor | the package, evaluator and solutions included (`inputs.package`); it writes nothing |
//! | Calibrator | each rollout's trajectory ([`crate::trajectory`]), after its inputs (the summaries) |
//! | Implementer | its working directory: the package's workspace only |
//!
//! A model has no tools here, so the roles that write (Builder, Implementer) are told to put
//! every file in the hand-off's `files` object (path relative to the working directory → full
//! content); specgap checks the paths and writes them (docs/decisions.md "synthesize: a chat
//! Builder writes through its hand-off").
//!
//! **Retries.** When the pipeline asks again because the last answer was malformed, the same
//! conversation continues: the refused answer as the assistant's message, then a user message
//! with the reason, so the model sees what it sent and why it was refused.
//!
//! A reply wrapped in one Markdown code fence (```` ```json ... ``` ````) is unwrapped before
//! it is parsed; anything else is passed on verbatim. Files that are not UTF-8 or larger than
//! [`MAX_SHOWN_FILE_BYTES`] are named but not shown.

use std::path::{Path, PathBuf};

use specgap_agents::chat::wire::WireMessage;
use specgap_agents::chat::{ChatClient, ChatConfig};

use crate::role::{Role, RoleError, RoleName, RoleRequest, Usage};

/// Largest file shown to a chat role whole, in bytes.
pub const MAX_SHOWN_FILE_BYTES: u64 = 64 * 1024;

/// The backoff-jitter seed of every chat role's client: fixed, so a synthesis against the
/// same server behaves the same.
pub const CHAT_ROLE_SEED: u64 = 0;

/// What a writing role without tools is told about the `files` object.
const FILES_NOTE: &str = "You cannot run commands or edit files directly. Put every file you create or change into the hand-off's \
`files` object: the key is the path relative to your working directory, the value the file's complete new text. Files you \
leave out stay as they are shown above.";

/// A role played by a model.
pub struct ChatRole {
    label: String,
    role: RoleName,
    client: ChatClient,
    /// The conversation of the current hand-off (kept for a retry).
    messages: Vec<WireMessage>,
    usage: Option<Usage>,
}

impl std::fmt::Debug for ChatRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatRole").field("label", &self.label).field("role", &self.role).finish_non_exhaustive()
    }
}

impl ChatRole {
    /// A chat role playing `role` with the model of `config`.
    ///
    /// # Errors
    /// [`RoleError::ChatSetup`] when the HTTP client cannot be made.
    pub fn new(config: ChatConfig, role: RoleName) -> Result<ChatRole, RoleError> {
        let client = ChatClient::new(&config, CHAT_ROLE_SEED).map_err(|source| RoleError::ChatSetup { role: role.as_str(), source })?;
        Ok(ChatRole { label: format!("chat:{}", config.model), role, client, messages: Vec::new(), usage: None })
    }

    /// The conversation's opening for `request`: the prompt as system message, the inputs and
    /// files as the user message.
    fn open(&self, request: &RoleRequest) -> Result<Vec<WireMessage>, RoleError> {
        let inputs = serde_json::to_string_pretty(&request.inputs).unwrap_or_default();
        let mut user = format!("The inputs of this step, as JSON:\n\n{inputs}\n");
        if let Some(dir) = shown_path(request) {
            let label = match request.role {
                RoleName::Planner => "the source task",
                RoleName::Auditor => "the package (read-only)",
                _ => "your working directory",
            };
            user.push_str(&format!("\nThe files of {label} ({}):\n\n", dir.display()));
            user.push_str(&render_files(&dir, request.role)?);
        }
        if request.role == RoleName::Calibrator {
            user.push_str(&render_rollouts(&request.inputs)?);
        }
        if request.work_dir.is_some() {
            user.push('\n');
            user.push_str(FILES_NOTE);
            user.push('\n');
        }
        user.push_str("\nAnswer with the JSON hand-off only.");
        Ok(vec![WireMessage::text("system", request.prompt.clone()), WireMessage::text("user", user)])
    }
}

impl Role for ChatRole {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn answer(&mut self, request: &RoleRequest) -> Result<String, RoleError> {
        match &request.retry_reason {
            Some(reason) if !self.messages.is_empty() => {
                self.messages.push(WireMessage::text("user", retry_message(reason)));
            }
            // A first request, or a retry of an answer replayed from a resumed journal (this
            // process never saw the conversation): start one.
            _ => self.messages = self.open(request)?,
        }
        let completion = self.client.complete(&self.messages, &[]);
        let completion = match completion {
            Ok(completion) => completion,
            Err(source) => {
                self.usage = Some(source.usage());
                return Err(RoleError::Chat { role: request.role.as_str(), source });
            }
        };
        self.usage = Some(completion.usage.clone());
        self.messages.push(WireMessage::text("assistant", completion.text.clone()));
        Ok(unfence(&completion.text).to_owned())
    }

    fn take_usage(&mut self) -> Option<Usage> {
        self.usage.take()
    }
}

/// What a refused answer is followed by.
fn retry_message(reason: &str) -> String {
    format!("That answer was refused: {reason}\nSend the corrected JSON hand-off only.")
}

/// The trajectories of the rollouts in the Calibrator's `inputs.rollouts` (the summaries), in
/// their order, each as `--- rollout <id> (<condition>, repeat <r>) ---` and its rendering;
/// empty without rollouts.
fn render_rollouts(inputs: &serde_json::Value) -> Result<String, RoleError> {
    let Some(rollouts) = inputs.get("rollouts").and_then(|r| r.as_array()).filter(|r| !r.is_empty()) else {
        return Ok(String::new());
    };
    let mut text = format!(
        "\nThe trajectories of the rollouts, numbered by turn (tool results cut at {} bytes, each trajectory at {}):\n\n",
        crate::trajectory::MAX_OUTPUT_BYTES,
        crate::trajectory::MAX_TRAJECTORY_BYTES
    );
    for rollout in rollouts {
        let field = |key: &str| rollout.get(key).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).unwrap_or_default();
        let id = field("rollout");
        text.push_str(&format!("--- rollout {id} ({}, repeat {}) ---\n", field("condition"), field("repeat")));
        let rendering = crate::trajectory::render_episode(Path::new(&field("episode_dir")))
            .map_err(|source| RoleError::ReadTrajectory { rollout: id, source: Box::new(source) })?;
        text.push_str(&rendering);
    }
    Ok(text)
}

/// The directory (or file) the role is shown, per the module guide's table.
fn shown_path(request: &RoleRequest) -> Option<PathBuf> {
    let from_inputs = |key: &str| request.inputs.get(key).and_then(|v| v.as_str()).map(PathBuf::from);
    match request.role {
        RoleName::Planner => from_inputs("source"),
        RoleName::Auditor => from_inputs("package"),
        RoleName::Builder | RoleName::Implementer => request.work_dir.clone(),
        RoleName::Calibrator => None,
    }
}

/// Every file under `root` (or `root` itself when it is a file), sorted by path, as
/// `--- <relative path> ---` and its text.
fn render_files(root: &Path, role: RoleName) -> Result<String, RoleError> {
    let unreadable = |path: &Path, source: std::io::Error| RoleError::ReadContext { role: role.as_str(), path: path.to_owned(), source };
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(root).to_owned();
            unreadable(&path, std::io::Error::other(e))
        })?;
        if entry.file_type().is_file() {
            files.push(entry.into_path());
        }
    }
    if files.is_empty() {
        return Ok("(no files)\n".into());
    }
    let mut text = String::new();
    for path in files {
        let name = path.strip_prefix(root).ok().filter(|p| !p.as_os_str().is_empty()).unwrap_or(&path).display().to_string();
        let name = if path == root { path.file_name().map_or(name.clone(), |n| n.to_string_lossy().into_owned()) } else { name };
        let size = fs_err::metadata(&path).map_err(|e| unreadable(&path, e))?.len();
        let body = if size > MAX_SHOWN_FILE_BYTES {
            format!("(not shown: {size} bytes, more than {MAX_SHOWN_FILE_BYTES})\n")
        } else {
            let bytes = fs_err::read(&path).map_err(|e| unreadable(&path, e))?;
            match String::from_utf8(bytes) {
                Ok(content) if content.ends_with('\n') || content.is_empty() => content,
                Ok(content) => content + "\n",
                Err(_) => "(not shown: not UTF-8 text)\n".into(),
            }
        };
        text.push_str(&format!("--- {name} ---\n{body}"));
    }
    Ok(text)
}

/// The inside of a reply wrapped in one Markdown code fence; the reply itself otherwise.
pub fn unfence(reply: &str) -> &str {
    let trimmed = reply.trim();
    let Some(rest) = trimmed.strip_prefix("```") else { return reply };
    let Some(body) = rest.strip_suffix("```") else { return reply };
    // Drop the info string (`json`) on the opening line.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('{') => inner.trim(),
        _ => body.trim(),
    }
}
