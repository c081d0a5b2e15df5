//! The line protocol between the in-sandbox bridge (MCP server, commands) and the harness's
//! [`crate::BridgeEndpoint`]: one JSON object per line each way, over a Unix socket.
//!
//! ```text
//! → {"v":1,"token":"<episode token>","op":"tools"}
//! ← {"text":"","is_error":false,"end":false,"tools":[{"name":"ask_user","description":…,"parameters":…}, …]}
//! → {"v":1,"token":"<episode token>","op":"call","tool":"ask_user","arguments":{"question":"…"}}
//! ← {"text":"<the owner's reply>","is_error":false,"end":false}
//! ```
//!
//! A connection may carry several requests, answered in order; the bridge opens one per call.
//! A request line is at most [`MAX_REQUEST_BYTES`]; anything malformed gets an error response
//! (`is_error: true`), never a dropped connection without a word, except after a wrong token
//! or an over-long line, which close the connection after the error.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use specgap_protocol::event::ToolSpec;

/// Environment variable holding the socket path inside the sandbox (set by the harness).
pub const SOCKET_ENV: &str = "SPECGAP_BRIDGE_SOCKET";
/// Environment variable holding the episode's bridge token (set by the harness).
pub const TOKEN_ENV: &str = "SPECGAP_BRIDGE_TOKEN";
/// The version of this line protocol, sent as `v` in every request.
pub const WIRE_VERSION: u32 = 1;
/// Longest request line the endpoint reads, in bytes (newline excluded); longer lines are
/// refused and the connection closed.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// Longest response line the bridge reads, in bytes.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// The tools the bridge serves (DESIGN §3 tool table, the session tools); nothing else is
/// accepted on either side of the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HarnessTool {
    /// `ask_user`: `question`, or `questions` (an array, each answered separately; seed 002
    /// A.9.3); one call is one clarification round.
    AskUser,
    /// `submit`: `summary` (optional).
    Submit,
    /// `write_plan`: `plan`; offered only in plan mode.
    WritePlan,
}

impl HarnessTool {
    /// Every harness tool, in the order they are listed.
    pub const ALL: [HarnessTool; 3] = [HarnessTool::AskUser, HarnessTool::Submit, HarnessTool::WritePlan];

    /// The tool's normative name.
    pub fn name(self) -> &'static str {
        match self {
            HarnessTool::AskUser => "ask_user",
            HarnessTool::Submit => "submit",
            HarnessTool::WritePlan => "write_plan",
        }
    }

    /// The tool called `name`, if it is one of the three.
    pub fn from_name(name: &str) -> Option<HarnessTool> {
        HarnessTool::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// The tools offered now (their specs), answered by the endpoint itself.
    Tools,
    /// A tool call, handed to the harness.
    Call,
}

/// One request line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// [`WIRE_VERSION`].
    pub v: u32,
    /// The episode's token ([`TOKEN_ENV`]).
    pub token: String,
    /// What is asked.
    pub op: Op,
    /// The tool, for [`Op::Call`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The arguments object, for [`Op::Call`] (absent: `{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl Request {
    /// A request for the tool list.
    pub fn tools(token: &str) -> Self {
        Request { v: WIRE_VERSION, token: token.to_string(), op: Op::Tools, tool: None, arguments: None }
    }

    /// A call of `tool` with `arguments`.
    pub fn call(token: &str, tool: &str, arguments: Value) -> Self {
        Request { v: WIRE_VERSION, token: token.to_string(), op: Op::Call, tool: Some(tool.to_string()), arguments: Some(arguments) }
    }
}

/// One response line: the tool result's text, whether it is an error, and whether the
/// episode is over (the agent should stop: nothing more will be accepted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Text for the agent: the reply, the submission's result message, or why the call was
    /// refused.
    pub text: String,
    /// The call was refused or failed (a tool error, as a built-in agent would get).
    pub is_error: bool,
    /// The episode has ended: later calls are refused.
    pub end: bool,
    /// For [`Op::Tools`]: the tools offered now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolSpec>>,
}

impl Response {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        Response { text: text.into(), is_error: false, end: false, tools: None }
    }

    /// A refusal or tool error.
    pub fn error(text: impl Into<String>) -> Self {
        Response { text: text.into(), is_error: true, end: false, tools: None }
    }

    /// The same response, marking the episode as over.
    #[must_use]
    pub fn ended(mut self) -> Self {
        self.end = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_reject_unknown_fields() {
        let call = Request::call("t", "ask_user", serde_json::json!({"question": "why?"}));
        let line = serde_json::to_string(&call).unwrap();
        assert_eq!(line, r#"{"v":1,"token":"t","op":"call","tool":"ask_user","arguments":{"question":"why?"}}"#);
        assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), call);
        assert_eq!(serde_json::to_string(&Request::tools("t")).unwrap(), r#"{"v":1,"token":"t","op":"tools"}"#);
        assert!(serde_json::from_str::<Request>(r#"{"v":1,"token":"t","op":"tools","extra":1}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"v":1,"token":"t","op":"exec"}"#).is_err());
    }

    #[test]
    fn tool_names_are_the_three_harness_tools() {
        for tool in HarnessTool::ALL {
            assert_eq!(HarnessTool::from_name(tool.name()), Some(tool));
        }
        assert_eq!(HarnessTool::from_name("bash"), None);
        assert_eq!(HarnessTool::from_name("Ask_User"), None);
    }
}
