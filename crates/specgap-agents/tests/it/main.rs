//! Integration tests of specgap-agents: one binary (`cargo test -p specgap-agents`).
//!
//! The chat agent and the chat user talk to a hand-written OpenAI-compatible mock server
//! (`mock_server`) that captures and checks every request.

mod chat_agent;
mod chat_user;
mod cli_alone;
mod cli_bridge;
mod cli_ends;
mod cli_image;
mod cli_isolation;
mod cli_reads;
mod cli_support;
mod cli_tripwire;
mod cli_vendors;
mod deadline;
mod end_to_end;
mod mock_server;
mod run_limits;
