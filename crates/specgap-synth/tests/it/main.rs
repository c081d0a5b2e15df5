//! Integration tests of specgap-synth (one binary, modules by topic).

mod acceptance;
mod chat;
mod cli_claude_code;
mod cli_role;
mod handoff;
mod pipeline;
mod prompts;
mod review;
mod role;
mod rollout_caps;
mod sandbox_view;
mod support;
