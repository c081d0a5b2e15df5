//! `specgap compare` (under construction).

use std::process::ExitCode;

/// Arguments of `specgap compare`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `specgap compare`.
pub fn exec(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`specgap compare` is not implemented yet")
}
