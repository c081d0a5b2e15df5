//! `specgap report` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap report`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap report` is not implemented yet")
}
