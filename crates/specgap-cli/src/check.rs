//! `specgap check` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap check`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap check`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap check` is not implemented yet")
}
