//! # specgap-bridge
//!
//! The harness tools of a `cli:` agent (DESIGN §5; issue 14 item 5): an external agent runs
//! inside the episode's sandbox and reaches `ask_user`, `submit` and `write_plan` through a
//! small program, `specgap-bridge`, that talks to the harness over a Unix socket mounted into
//! the sandbox.
//!
//! ```text
//!  sandbox (uid 1000, no network)                        harness
//!  ┌──────────────────────────────────────┐          ┌────────────────────────────────┐
//!  │ agent ─ MCP stdio ─ specgap-bridge mcp│          │ BridgeEndpoint (UnixListener)  │
//!  │ agent ─ exec ─ ask_user / submit ─────┼─ socket ─┤  token, tool and shape checks  │
//!  │   ($SPECGAP_BRIDGE_SOCKET, _TOKEN)    │  lines   │  one call at a time ─► engine  │
//!  └──────────────────────────────────────┘  of JSON  └────────────────────────────────┘
//! ```
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`wire`] | the line protocol: [`Request`], [`Response`] (`text`, `is_error`, `end`), [`HarnessTool`], the environment variables |
//! | [`tools`] | the harness tools' specs in the bridge's words and the [`Offer`] of an episode |
//! | [`endpoint`] | the harness side: [`BridgeEndpoint`] hands each call to the engine as a [`PendingCall`] |
//! | [`client`] | the in-sandbox side: [`BridgeClient`] |
//! | [`mcp`] | the MCP stdio server (rmcp) offering only the harness tools |
//! | [`command`] | `ask_user "<question>" [...]` and `submit ["<summary>"]`, with their exit statuses |
//! | [`home`] | reading and writing in the agent-writable home without following links |
//! | [`install`] | where the harness finds the program, and the tools directory put on `PATH` |
//!
//! The program ([`main`]) picks its role from `argv[0]`: `ask_user` and `submit` (links to
//! it in the tools directory) run the commands; `specgap-bridge mcp` serves MCP on standard
//! input and output; `specgap-bridge ask_user ...` / `submit ...` also work. It needs nothing
//! from the sandbox but the socket and the C library: no network, no writable disk, any uid.
//! The binary target is declared by `specgap-cli` (so `cargo install --path
//! crates/specgap-cli` installs it beside `specgap`); it only calls [`main`].
#![deny(missing_docs)]

pub mod client;
pub mod command;
pub mod endpoint;
pub mod home;
pub mod install;
pub mod mcp;
pub mod tools;
pub mod wire;

use std::process::ExitCode;

pub use client::{BridgeClient, ClientError};
pub use endpoint::{BridgeEndpoint, CallReceiver, EndpointError, PendingCall, new_token};
pub use install::{LocateError, locate_bridge, make_tools_dir};
pub use tools::{Asked, Offer, OfferError, tool_spec};
pub use wire::{HarnessTool, Request, Response};

const USAGE: &str = "\
usage: specgap-bridge mcp [--rename TOOL=NAME]...  serve the harness tools over MCP (stdio),
                                                   TOOL under NAME
       specgap-bridge ask_user \"<question>\"...  or the link ask_user
       specgap-bridge submit [\"<summary>\"]      or the link submit
Runs inside a specgap episode's sandbox; the harness sets SPECGAP_BRIDGE_SOCKET and SPECGAP_BRIDGE_TOKEN.";

/// The `specgap-bridge` program: dispatches on `argv[0]` (module guide) and returns the exit
/// status ([`command::exit`]; 2 for a usage error, 5 when the MCP server cannot reach its
/// client or harness).
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    ExitCode::from(dispatch(&args))
}

fn dispatch(args: &[String]) -> u8 {
    let name = args.first().map(|a| std::path::Path::new(a).file_name().map_or(a.clone(), |n| n.to_string_lossy().into_owned()));
    let (role, rest) = match name.as_deref() {
        Some(command @ ("ask_user" | "submit")) => (command, args.get(1..).unwrap_or_default()),
        _ => match args.get(1).map(String::as_str) {
            Some(role) => (role, args.get(2..).unwrap_or_default()),
            None => ("", &[][..]),
        },
    };
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    match role {
        "ask_user" => command::run(HarnessTool::AskUser, rest, BridgeClient::from_env(), &mut out, &mut err),
        "submit" => command::run(HarnessTool::Submit, rest, BridgeClient::from_env(), &mut out, &mut err),
        "mcp" => match mcp_renames(rest) {
            Ok(renames) => {
                drop((out, err));
                serve_mcp(renames)
            }
            Err(why) => {
                use std::io::Write as _;
                let _ = writeln!(err, "specgap-bridge: {why}\n{USAGE}");
                command::exit::USAGE
            }
        },
        "--version" | "-V" => {
            use std::io::Write as _;
            let _ = writeln!(out, "specgap-bridge {}", env!("CARGO_PKG_VERSION"));
            command::exit::OK
        }
        "--help" | "-h" => {
            use std::io::Write as _;
            let _ = writeln!(out, "{USAGE}");
            command::exit::OK
        }
        _ => {
            use std::io::Write as _;
            let _ = writeln!(err, "{USAGE}");
            command::exit::USAGE
        }
    }
}

/// The `--rename TOOL=NAME` options of `mcp` (each tool renamed at most once).
fn mcp_renames(args: &[String]) -> Result<Vec<mcp::Rename>, String> {
    let mut renames: Vec<mcp::Rename> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = match arg.strip_prefix("--rename=") {
            Some(value) => value,
            None if arg == "--rename" => args.next().ok_or("--rename needs TOOL=NAME")?,
            None => return Err(format!("`mcp` takes only --rename TOOL=NAME, not `{arg}`")),
        };
        let rename: mcp::Rename = value.parse().map_err(|e: mcp::BadRename| e.to_string())?;
        if renames.iter().any(|r| r.tool == rename.tool || r.name == rename.name) {
            return Err(format!("--rename {value}: the tool or the name is renamed twice"));
        }
        renames.push(rename);
    }
    Ok(renames)
}

fn serve_mcp(renames: Vec<mcp::Rename>) -> u8 {
    let client = match BridgeClient::from_env() {
        Ok(client) => client,
        Err(e) => {
            eprintln!("specgap-bridge: {e}");
            return command::exit::UNREACHABLE;
        }
    };
    match mcp::serve_stdio(client, renames) {
        Ok(()) => command::exit::OK,
        Err(e) => {
            eprintln!("specgap-bridge: {e}");
            command::exit::UNREACHABLE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn mcp_takes_renames_and_nothing_else() {
        let renames = mcp_renames(&strings(&["--rename", "ask_user=ask_question", "--rename=submit=hand_in"])).unwrap();
        assert_eq!(
            renames.iter().map(|r| (r.tool, r.name.as_str())).collect::<Vec<_>>(),
            [(HarnessTool::AskUser, "ask_question"), (HarnessTool::Submit, "hand_in")]
        );
        assert_eq!(mcp_renames(&[]).unwrap(), Vec::new());
        assert_eq!(mcp_renames(&strings(&["--rename"])).unwrap_err(), "--rename needs TOOL=NAME");
        assert_eq!(mcp_renames(&strings(&["--verbose"])).unwrap_err(), "`mcp` takes only --rename TOOL=NAME, not `--verbose`");
        assert_eq!(
            mcp_renames(&strings(&["--rename", "ask_user=a", "--rename", "ask_user=b"])).unwrap_err(),
            "--rename ask_user=b: the tool or the name is renamed twice"
        );
        assert_eq!(dispatch(&strings(&["specgap-bridge", "mcp", "--rename", "bash=x"])), command::exit::USAGE);
    }
}
