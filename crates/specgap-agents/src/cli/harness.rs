//! The harness tools of a `cli:` agent as the agent module sees them: a call waiting for the
//! engine's answer, whichever way it came in (the bridge's MCP server or its `ask_user` /
//! `submit` commands, or an adapter's own completion signal, such as mini-swe-agent's final
//! marker, which stands for an agent-declared `submit`).

use specgap_protocol::event::ToolCall;

/// A harness tool call waiting for its result.
pub(crate) trait PendingCall: Send + std::fmt::Debug {
    /// The call, with the engine's id for it.
    fn tool_call(&self, id: String) -> ToolCall;

    /// Hands the result back to the agent; `end` says the episode is over (later calls are
    /// refused). Dropping a pending call unanswered tells the agent the harness is gone.
    fn answer(self: Box<Self>, text: String, is_error: bool, end: bool);
}

/// A call the adapter made itself from the agent's completion signal: its result goes
/// nowhere (the agent has exited), but it is dispatched like any `submit`.
#[derive(Debug)]
pub(crate) struct SignalledSubmit {
    /// What the agent gave as its final output, if anything.
    pub(crate) summary: Option<String>,
}

impl PendingCall for SignalledSubmit {
    fn tool_call(&self, id: String) -> ToolCall {
        let arguments = match &self.summary {
            Some(summary) => serde_json::json!({ "summary": summary }),
            None => serde_json::json!({}),
        };
        ToolCall { id, tool: "submit".into(), arguments }
    }

    fn answer(self: Box<Self>, _text: String, _is_error: bool, _end: bool) {}
}
