//! The MCP stdio server a `cli:` agent starts from its MCP configuration (`specgap-bridge
//! mcp`): `tools/list` lists the harness tools the episode offers now (asked from the harness
//! each time, so plan mode's switch shows), `tools/call` forwards a call to the harness and
//! returns its answer as the tool result. Nothing else is served: no resources, prompts or
//! other tools, and a call of any other name is refused without reaching the harness.

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

/// What the server tells the agent about itself at `initialize`.
const INSTRUCTIONS: &str = "Tools of the person you work for: ask_user puts questions to them, submit hands in the \
    workspace for review, write_plan (when offered) saves your plan. Each call stands alone.";

/// The MCP server of one episode (module guide).
#[derive(Debug, Clone)]
pub struct McpBridge {
    client: Arc<BridgeClient>,
}

impl McpBridge {
    /// A server forwarding to the harness through `client`.
    pub fn new(client: BridgeClient) -> Self {
        McpBridge { client: Arc::new(client) }
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

fn as_tool(spec: &specgap_protocol::event::ToolSpec) -> Option<Tool> {
    HarnessTool::from_name(&spec.name)?;
    let Value::Object(schema) = spec.parameters.clone() else { return None };
    Some(Tool::new(spec.name.clone(), spec.description.clone(), schema))
}

impl rmcp::ServerHandler for McpBridge {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("specgap", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, McpError> {
        let specs = self.blocking(BridgeClient::tools).await.map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(specs.iter().filter_map(as_tool).collect()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResult, McpError> {
        let Some(tool) = HarnessTool::from_name(&request.name) else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "this server has only ask_user, submit and write_plan; `{}` is not one of them",
                request.name
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
pub fn serve_stdio(client: BridgeClient) -> Result<(), McpServeError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(McpServeError::Runtime)?;
    runtime.block_on(serve(McpBridge::new(client), rmcp::transport::stdio()))
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
