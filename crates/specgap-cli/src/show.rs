//! `specgap show` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap show`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap show`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap show` is not implemented yet")
}
