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
//! * [`AskChannel::Native`]: the CLI's own question tool (opencode's), which no adapter
//!   implements yet: choosing it is refused with a message saying so.
//!
//! Each adapter has a default ([`super::adapter::Adapter::default_ask_channel`]): the vendor
//! CLIs the paper runs with text exchanges (claude-code, codex, gemini-cli) default to `text`;
//! opencode, whose paper channel is its native tool, defaults to `mcp` until that tool is
//! served; mini-swe-agent, which cannot be resumed (so a text exchange could never bring its
//! answers back), and `cli:command` default to `mcp` (docs/decisions.md "CLI agents: the ask
//! channel").

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

/// Refuses a channel no adapter named `adapter` can use whatever its installation: `native`,
/// since no adapter's own question tool is served yet (for opencode the message names its
/// default). Called before the installation is looked at, so the refusal names the real
/// reason.
///
/// # Errors
/// [`AgentError`] (deterministic) for `Some(AskChannel::Native)`.
pub fn refuse_unserved(adapter: &str, requested: Option<AskChannel>) -> Result<(), AgentError> {
    if requested != Some(AskChannel::Native) {
        return Ok(());
    }
    let message = if adapter == "opencode" {
        "--ask-channel native: specgap does not serve opencode's own question tool yet, so questions asked with it could not reach the customer; use mcp (opencode's default) or text".to_string()
    } else {
        format!("--ask-channel native: cli:{adapter} has no question tool of its own; use text or mcp")
    };
    Err(AgentError::new(message, true))
}
