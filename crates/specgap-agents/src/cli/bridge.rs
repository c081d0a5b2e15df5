//! The harness tools inside a `cli:` agent's sandbox (issue 14 item 5; DESIGN §5): one
//! [`specgap_bridge::BridgeEndpoint`] per episode attempt, whose calls join the agent's queue
//! ([`Link`]) as harness calls, in the order they arrive.
//!
//! What the sandbox gets:
//! * the tools directory ([`specgap_bridge::make_tools_dir`]: the `specgap-bridge` program and
//!   the normative commands `ask_user` and `submit`) read-only at
//!   [`specgap_bridge::install::SANDBOX_BIN_DIR`], first on `PATH`;
//! * the socket read-only at [`specgap_bridge::install::SANDBOX_SOCKET`], and its address and
//!   per-episode token in `SPECGAP_BRIDGE_SOCKET` / `SPECGAP_BRIDGE_TOKEN` (the token only
//!   admits calls to this episode's harness tools; it is not a model key);
//! * an MCP configuration, `~/.specgap/mcp.json` (`{"mcpServers": {"specgap": …}}`, the common
//!   shape), naming `specgap-bridge mcp` as a stdio server; adapters whose CLI wants another
//!   format write their own from [`super::adapter::McpServer`].
//!
//! The endpoint accepts only the tools the engine offers the condition and the ask channel
//! allows ([`super::channel`]: no `ask_user` under `text` in a delivery condition; the harness
//! tools of the opening's toolset, with the engine's descriptions, so `submit` states the submission
//! budget as it does for a built-in agent). The socket lives in a fresh directory under the
//! system's temporary directory (a Unix socket path holds at most 107 bytes, and the
//! episode's scratch directory may be deeper), removed with the bridge.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use specgap_bridge::install::{SANDBOX_BIN_DIR, SANDBOX_SOCKET};
use specgap_bridge::wire::{SOCKET_ENV, TOKEN_ENV};
use specgap_bridge::{BridgeEndpoint, Offer, Response};
use specgap_engine::session::AgentError;
use specgap_protocol::event::{ToolCall, ToolSpec};
use specgap_sandbox::Mount;

use super::adapter::{McpServer, SANDBOX_HOME};
use super::harness::PendingCall;
use super::link::{Happened, Link};

/// The MCP configuration the harness writes into every `cli:` agent's home, relative to it.
pub const MCP_CONFIG: &str = ".specgap/mcp.json";
/// The name of the harness tools' MCP server in the agent's MCP configuration.
pub const MCP_SERVER_NAME: &str = "specgap";

/// A bridge call waiting for the engine's answer.
#[derive(Debug)]
struct BridgeCall(specgap_bridge::PendingCall);

impl PendingCall for BridgeCall {
    fn tool_call(&self, id: String) -> ToolCall {
        self.0.to_tool_call(id)
    }

    fn answer(self: Box<Self>, text: String, is_error: bool, end: bool) {
        let response = if is_error { Response::error(text) } else { Response::ok(text) };
        self.0.respond(if end { response.ended() } else { response });
    }
}

/// One attempt's bridge (module guide). Dropping it closes the endpoint (waiting clients are
/// told the harness is gone) and removes the socket's directory.
#[derive(Debug)]
pub(crate) struct EpisodeBridge {
    endpoint: Option<BridgeEndpoint>,
    token: String,
    tools_dir: PathBuf,
    socket_dir: PathBuf,
    forwarder: Option<std::thread::JoinHandle<()>>,
}

fn io_error(what: &str) -> impl FnOnce(std::io::Error) -> AgentError + '_ {
    move |e| AgentError::with_source(format!("cannot prepare the harness tools ({what})"), false, e)
}

impl EpisodeBridge {
    /// Opens the bridge of an attempt whose scratch directory is `scratch`, offering the
    /// harness tools among `tools` (without `ask_user`, neither as an MCP tool nor as a
    /// command, when `withhold_ask_user`: the ask channel is `text` under a delivery
    /// condition, [`super::channel::AskChannel::withholds_ask_user`]), and forwards its calls
    /// to `link`.
    ///
    /// # Errors
    /// [`AgentError`]: the `specgap-bridge` program cannot be found (deterministic: the
    /// message says how to install it), or the socket or tools directory cannot be made.
    pub(crate) fn open(scratch: &Path, tools: &[ToolSpec], withhold_ask_user: bool, link: Arc<Link>) -> Result<Self, AgentError> {
        let program = specgap_bridge::locate_bridge()
            .map_err(|e| AgentError::with_source("cannot offer the harness tools to a cli: agent", true, e))?;
        let harness_tools = offered_harness_tools(tools, withhold_ask_user);
        let offered: Vec<String> = harness_tools.iter().map(|t| t.name.clone()).collect();
        let offer = Offer::from_specs(harness_tools).map_err(|e| AgentError::with_source("cannot offer the harness tools", false, e))?;
        let tools_dir = scratch.join("bridge-bin");
        make_tools_dir(&tools_dir, &program, &offered)?;
        let token = specgap_bridge::new_token().map_err(io_error("token"))?;
        let socket_dir = private_socket_dir(&token)?;
        let bound = BridgeEndpoint::bind(&socket_dir.join("bridge.sock"), token.clone(), offer);
        let (endpoint, calls) = match bound {
            Ok(bound) => bound,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&socket_dir);
                return Err(AgentError::with_source("cannot open the harness tools' socket", false, e));
            }
        };
        let forwarder = std::thread::Builder::new()
            .name("cli-bridge".into())
            .spawn(move || {
                while let Some(call) = calls.recv() {
                    if link.is_ended() {
                        call.respond(Response::error(super::EPISODE_OVER).ended());
                    } else {
                        link.push(Happened::Call(Box::new(BridgeCall(call))));
                    }
                }
            })
            .map_err(io_error("forwarding thread"))?;
        Ok(EpisodeBridge { endpoint: Some(endpoint), token, tools_dir, socket_dir, forwarder: Some(forwarder) })
    }

    /// The tools directory on the host (mounted at `SANDBOX_BIN_DIR`).
    pub(crate) fn tools_dir(&self) -> &Path {
        &self.tools_dir
    }

    /// The sandbox's mounts: the tools directory and the socket, both read-only.
    pub(crate) fn mounts(&self) -> Vec<Mount> {
        let mut mounts = vec![Mount { host: self.tools_dir.clone(), sandbox: SANDBOX_BIN_DIR.into(), writable: false }];
        if let Some(endpoint) = &self.endpoint {
            mounts.push(Mount { host: endpoint.path().to_path_buf(), sandbox: SANDBOX_SOCKET.into(), writable: false });
        }
        mounts
    }

    /// The variables every process in the sandbox gets (socket and bridge token).
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![(SOCKET_ENV.into(), SANDBOX_SOCKET.into()), (TOKEN_ENV.into(), self.token.clone())]
    }

    /// The MCP server as adapters write it into a CLI's configuration.
    pub(crate) fn mcp_server(&self) -> McpServer {
        McpServer {
            name: MCP_SERVER_NAME.into(),
            command: format!("{SANDBOX_BIN_DIR}/{}", specgap_bridge::install::BRIDGE_PROGRAM),
            args: vec!["mcp".into()],
            env: self.env(),
            config_file: format!("{SANDBOX_HOME}/{MCP_CONFIG}"),
        }
    }

    /// Writes the common MCP configuration into the home (`home` on the host).
    ///
    /// # Errors
    /// [`AgentError`] when the file cannot be written.
    pub(crate) fn write_mcp_config(&self, home: &Path) -> Result<(), AgentError> {
        let server = self.mcp_server();
        let env: serde_json::Map<String, serde_json::Value> =
            server.env.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        let config = serde_json::json!({
            "mcpServers": { server.name: { "type": "stdio", "command": server.command, "args": server.args, "env": env } }
        });
        let bytes =
            serde_json::to_vec_pretty(&config).map_err(|e| AgentError::with_source("cannot write the MCP configuration", false, e))?;
        super::home::write_file(home, Path::new(MCP_CONFIG), &bytes)
            .map_err(|e| AgentError::with_source("cannot write the MCP configuration", false, e))
    }

    /// The episode is over: every later call is answered so, without reaching the engine.
    pub(crate) fn end(&self) {
        if let Some(endpoint) = &self.endpoint {
            endpoint.end_episode();
        }
    }
}

impl Drop for EpisodeBridge {
    fn drop(&mut self) {
        // Closing the endpoint closes the call channel, which ends the forwarding thread.
        drop(self.endpoint.take());
        if let Some(forwarder) = self.forwarder.take() {
            let _ = forwarder.join();
        }
        let _ = std::fs::remove_dir_all(&self.socket_dir);
    }
}

/// The harness tools among `tools`, `ask_user` left out when `withhold_ask_user`.
pub(crate) fn offered_harness_tools(tools: &[ToolSpec], withhold_ask_user: bool) -> Vec<ToolSpec> {
    tools
        .iter()
        .filter(|t| match specgap_bridge::HarnessTool::from_name(&t.name) {
            Some(specgap_bridge::HarnessTool::AskUser) => !withhold_ask_user,
            Some(_) => true,
            None => false,
        })
        .cloned()
        .collect()
}

/// The tools directory with a command for each offered harness tool only: a command for a tool
/// not offered would only be refused, and its presence would tell the agent it may ask.
fn make_tools_dir(dir: &Path, program: &Path, offered: &[String]) -> Result<(), AgentError> {
    specgap_bridge::make_tools_dir(dir, program).map_err(io_error("tools directory"))?;
    for command in specgap_bridge::install::COMMANDS {
        if !offered.iter().any(|name| name == command) {
            std::fs::remove_file(dir.join(command)).map_err(io_error("tools directory"))?;
        }
    }
    Ok(())
}

/// A new directory `sgb-<token prefix>` under the temporary directory, mode 0700.
fn private_socket_dir(token: &str) -> Result<PathBuf, AgentError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let short: String = token.chars().filter(char::is_ascii_alphanumeric).take(16).collect();
    let dir = std::env::temp_dir().join(format!("sgb-{short}"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io_error("socket directory"))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec { name: name.into(), description: format!("the {name} tool"), parameters: serde_json::json!({"type": "object"}) }
    }

    #[test]
    fn the_ask_channel_decides_whether_ask_user_is_offered() {
        use crate::cli::channel::AskChannel;
        let tools = [spec("bash"), spec("ask_user"), spec("submit"), spec("write_plan")];
        let names = |channel: AskChannel, delivery: bool| {
            offered_harness_tools(&tools, channel.withholds_ask_user(delivery)).into_iter().map(|t| t.name).collect::<Vec<_>>()
        };
        assert_eq!(names(AskChannel::Mcp, true), ["ask_user", "submit", "write_plan"]);
        assert_eq!(names(AskChannel::Text, true), ["submit", "write_plan"]);
        assert_eq!(names(AskChannel::Text, false), ["ask_user", "submit", "write_plan"], "the owner has no text exchange");
        assert_eq!(names(AskChannel::Mcp, false), ["ask_user", "submit", "write_plan"]);
    }

    #[test]
    fn the_tools_directory_holds_only_the_offered_commands() {
        let tmp = tempfile::tempdir().unwrap();
        let program = tmp.path().join("built");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        let listing = |dir: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
            names.sort();
            names
        };
        make_tools_dir(&tmp.path().join("text"), &program, &["submit".into()]).unwrap();
        assert_eq!(listing(&tmp.path().join("text")), ["specgap-bridge", "submit"]);
        make_tools_dir(&tmp.path().join("mcp"), &program, &["ask_user".into(), "submit".into()]).unwrap();
        assert_eq!(listing(&tmp.path().join("mcp")), ["ask_user", "specgap-bridge", "submit"]);
    }
}
