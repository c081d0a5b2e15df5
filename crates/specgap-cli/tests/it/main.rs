//! End-to-end tests of the `specgap` binary (`env!("CARGO_BIN_EXE_specgap")`) on small fixture
//! packages: the task crate's `tests/fixtures` and this crate's `tests/fixtures`.

mod agents;
mod audit;
mod bridge;
mod chat;
mod check;
mod cli_agents;
mod cli_gemini;
mod cli_opencode;
mod cli_support;
mod containment;
mod determinism;
mod env;
mod env_run;
mod examples;
mod export;
mod harbor;
mod harbor_image_verifier;
mod harbor_starter;
mod hardening;
mod panels;
mod protocols;
mod report_inputs;
mod residualize;
mod resume;
mod retries;
mod review_user;
mod run_basic;
mod run_config;
mod scale_out;
mod seed_measures;
mod show_report;
mod soak;
mod support;
mod synthesize;
mod view;
