//! The MCP stdio server a `cli:` agent starts from its MCP configuration (`specgap-bridge
//! mcp`): `tools/list` lists the harness tools the episode offers now (asked from the harness
//! each time, so plan mode's switch shows), `tools/call` forwards a call to the harness and
//! returns its answer as the tool result. Nothing else is served: no resources, prompts or
//! other tools, and a call of any other name is refused without reaching the harness.
//!
//! A tool may be served under another name (`specgap-bridge mcp --rename ask_user=NAME`,
//! [`Rename`]) for a CLI that withholds MCP tools named like one of its own: gemini-cli
//! 0.61.0 drops every tool called `ask_user` in headless mode, its own and any MCP server's
//! (docs/decisions.md "CLI agents: gemini-cli"). The renamed tool answers to the new name only.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerInfo, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::client::{BridgeClient, ClientError};
use crate::wire::HarnessTool;

/// What the server tells the agent about itself at `initialize`. It names no tool: which are
/// offered changes with the episode (no `ask_user` on a text channel, `write_plan` in plan
/// mode), and some CLIs show this text with every request (Codex CLI as its namespace's
/// description).
const INSTRUCTIONS: &str = "Tools of the person you work for; each tool's description says what it does. Each call stands alone.";

/// One harness tool served under another name (`TOOL=NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// The harness tool.
    pub tool: HarnessTool,
    /// The name the agent sees and calls.
    pub name: String,
}

/// A `--rename` value that is not `TOOL=NAME` with a harness tool and a usable new name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "--rename {0}: expected TOOL=NAME, TOOL one of ask_user, submit, write_plan and NAME 1 to 64 letters, digits, `_` or `-`, not another harness tool's name"
)]
pub struct BadRename(pub String);

impl std::str::FromStr for Rename {
    type Err = BadRename;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadRename(text.to_string());
        let (tool, name) = text.split_once('=').ok_or_else(bad)?;
        let tool = HarnessTool::from_name(tool).ok_or_else(bad)?;
        let usable = (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let taken = HarnessTool::from_name(name).is_some_and(|other| other != tool);
        if !usable || taken {
            return Err(bad());
        }
        Ok(Rename { tool, name: name.to_string() })
    }
}

/// The MCP server of one episode (module guide).
#[derive(Debug, Clone)]
pub struct McpBridge {
    client: Arc<BridgeClient>,
    renames: Vec<Rename>,
}

impl McpBridge {
    /// A server forwarding to the harness through `client`.
    pub fn new(client: BridgeClient) -> Self {
        McpBridge { client: Arc::new(client), renames: Vec::new() }
    }

    /// The same server with tools served under the names `renames` give them.
    pub fn with_renames(mut self, renames: Vec<Rename>) -> Self {
        self.renames = renames;
        self
    }

    /// The name `tool` is served under.
    fn served_name(&self, tool: HarnessTool) -> &str {
        self.renames.iter().find(|r| r.tool == tool).map_or(tool.name(), |r| r.name.as_str())
    }

    /// The harness tool served as `name`.
    fn tool_named(&self, name: &str) -> Option<HarnessTool> {
        HarnessTool::ALL.into_iter().find(|t| self.served_name(*t) == name)
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&BridgeClient) -> Result<T, ClientError> + Send + 'static,
    ) -> Result<T, ClientError> {
        let client = Arc::clone(&self.client);
        match tokio::task::spawn_blocking(move || work(&client)).await {
            Ok(result) => result,
            Err(e) => Err(ClientError::BadResponse(format!("the bridge's worker failed: {e}"))),
        }
    }
}

/// A harness tool's spec as an MCP tool called `name`.
fn as_tool(spec: &specgap_protocol::event::ToolSpec, name: &str) -> Option<Tool> {
    let Value::Object(schema) = spec.parameters.clone() else { return None };
    Some(Tool::new(name.to_string(), spec.description.clone(), schema))
}

impl rmcp::ServerHandler for McpBridge {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("specgap", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let specs = self.blocking(BridgeClient::tools).await.map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let tools = specs.iter().filter_map(|spec| as_tool(spec, self.served_name(HarnessTool::from_name(&spec.name)?))).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
        let Some(tool) = self.tool_named(&request.name) else {
            let served: Vec<&str> = HarnessTool::ALL.into_iter().map(|t| self.served_name(t)).collect();
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "this server has only {}, {} and {}; `{}` is not one of them",
                served[0], served[1], served[2], request.name
            ))]));
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let answer = self.blocking(move |client| client.call(tool, arguments)).await;
        Ok(match answer {
            Ok(response) if response.is_error => CallToolResult::error(vec![ContentBlock::text(response.text)]),
            Ok(response) => CallToolResult::success(vec![ContentBlock::text(response.text)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        })
    }
}

/// Why the MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    /// The async runtime could not start.
    #[error("cannot start the bridge's runtime")]
    Runtime(#[source] std::io::Error),
    /// The MCP session could not start (a broken `initialize`).
    #[error("the MCP session did not start: {0}")]
    Initialize(String),
    /// The session's task failed.
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// Serves MCP over this process's standard input and output until the client closes them.
///
/// # Errors
/// [`McpServeError`].
pub fn serve_stdio(client: BridgeClient, renames: Vec<Rename>) -> Result<(), McpServeError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(McpServeError::Runtime)?;
    runtime.block_on(serve(McpBridge::new(client).with_renames(renames), rmcp::transport::stdio()))
}

/// Serves MCP over any byte stream pair (tests use an in-memory pipe).
///
/// # Errors
/// [`McpServeError`].
pub async fn serve<R, W>(bridge: McpBridge, transport: (R, W)) -> Result<(), McpServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let running = bridge.serve(transport).await.map_err(|e| McpServeError::Initialize(e.to_string()))?;
    running.waiting().await.map_err(|e| McpServeError::Session(e.to_string()))?;
    Ok(())
}
