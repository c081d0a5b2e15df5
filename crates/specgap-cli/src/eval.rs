//! `specgap eval` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap eval`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap eval`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap eval` is not implemented yet")
}
