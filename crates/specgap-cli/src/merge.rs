//! `specgap merge` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap merge`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap merge`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap merge` is not implemented yet")
}
