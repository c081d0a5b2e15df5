//! `specgap run` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap run`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap run` is not implemented yet")
}
