//! How a `cli:` agent's questions reach the customer (issue 15 item 4; seed 002 App. A.9.3):
//! the *ask channel*, part of the agent's stored configuration and so of its episode keys.
//!
//! * [`AskChannel::Text`]: under the delivery conditions, whose customer reads questions in
//!   the agent's final reply, the harness's `ask_user` is not offered (neither as an MCP tool
//!   nor as a command). The agent asks in its reply; when its program exits, the engine reads
//!   the questions from its final reply and, for an adapter that can resume, starts it again
//!   with the customer's answers (the text exchange of the paper's CLI configurations, seed
//!   002 App. A.9.3). Under owner conditions, which have no text exchange, `ask_user` stays
//!   offered ([`AskChannel::withholds_ask_user`]).
//! * [`AskChannel::Mcp`]: `ask_user` is offered through the bridge's MCP server and its
//!   `ask_user` command, like every other harness tool.
//! * [`AskChannel::Native`]: the CLI's own question tool, served by the harness where the
//!   adapter declares one ([`super::adapter::Adapter::question_server`]): opencode's
//!   `question` tool, answered through opencode's own server ([`super::opencode_server`]);
//!   each request is one `ask_user` round. `ask_user` is withheld like under `text` (the
//!   agent asks with its own tool; questions in its reply still reach the customer). Refused
//!   for every other adapter.
//!
//! Each adapter has a default ([`super::adapter::Adapter::default_ask_channel`]): the vendor
//! CLIs the paper runs with text exchanges (claude-code, codex, gemini-cli) and openhands, whose
//! user-response callback the text exchange serves, default to `text`;
//! opencode, whose paper channel is its native tool, defaults to `native`; mini-swe-agent,
//! which cannot be resumed (so a text exchange could never bring its answers back), and
//! `cli:command` default to `mcp` (docs/decisions.md "CLI agents: the ask channel").

use serde::{Deserialize, Serialize};
use specgap_engine::session::AgentError;

/// The ask channel of a `cli:` agent (module guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AskChannel {
    /// Questions in the reply, answers by resuming the session.
    Text,
    /// The CLI's own question tool.
    Native,
    /// The harness's `ask_user` over MCP (and its command).
    Mcp,
}

impl AskChannel {
    /// Its name as the flag and the stored configuration spell it.
    pub fn name(self) -> &'static str {
        match self {
            AskChannel::Text => "text",
            AskChannel::Native => "native",
            AskChannel::Mcp => "mcp",
        }
    }

    /// Whether the harness's `ask_user` is withheld from the agent under this channel, where
    /// `text_questions` says whether questions in its final reply reach the customer (the
    /// engine's text exchange, delivery conditions). Under an owner condition there is no
    /// text exchange, so `ask_user` stays offered whatever the channel: withholding it would
    /// leave the agent no way to ask at all.
    pub fn withholds_ask_user(self, text_questions: bool) -> bool {
        self != AskChannel::Mcp && text_questions
    }
}

/// An ask channel name that is not `text`, `native` or `mcp`.
#[derive(Debug, thiserror::Error)]
#[error("unknown ask channel `{0}`; expected text, native or mcp")]
pub struct UnknownAskChannel(pub String);

impl std::str::FromStr for AskChannel {
    type Err = UnknownAskChannel;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "text" => Ok(AskChannel::Text),
            "native" => Ok(AskChannel::Native),
            "mcp" => Ok(AskChannel::Mcp),
            other => Err(UnknownAskChannel(other.to_string())),
        }
    }
}

impl std::fmt::Display for AskChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Refuses a channel the adapter named `adapter` cannot use whatever its installation:
/// `native` for every adapter but opencode, the only CLI whose own question tool is served.
/// Called before the installation is looked at, so the refusal names the real reason.
///
/// # Errors
/// [`AgentError`] (deterministic) for `Some(AskChannel::Native)` and another adapter.
pub fn refuse_unserved(adapter: &str, requested: Option<AskChannel>) -> Result<(), AgentError> {
    if requested != Some(AskChannel::Native) || adapter == NATIVE_ADAPTER {
        return Ok(());
    }
    Err(AgentError::new(
        format!(
            "--ask-channel native: cli:{adapter} has no question tool of its own that specgap serves (only cli:opencode has); use text or mcp"
        ),
        true,
    ))
}

/// The adapter whose own question tool the harness serves.
pub const NATIVE_ADAPTER: &str = "opencode";
