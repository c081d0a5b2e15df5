//! `specgap export RUN --format atif --out DIR`: every episode of a run as an ATIF trajectory
//! (Harbor's Agent Trajectory Interchange Format), by `specgap-atif`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const AFTER_HELP: &str = "\
Writes DIR/<episode id>/agent/trajectory.json per episode (the path Harbor gives an agent's
trajectory inside a trial) and DIR/index.json listing them. Private evaluations are left out
unless --include-private is given. The run store is only read.

Example:
  specgap export runs/latest --format atif --out runs/latest-atif";

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// ATIF (Harbor's Agent Trajectory Interchange Format), version 1.7.
    Atif,
}

/// Arguments of `specgap export`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The run directory.
    pub run: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Output directory (created).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Include private evaluations, evaluation-error details and unknown events' content.
    #[arg(long)]
    pub include_private: bool,
}

/// Runs `specgap export`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    match args.format {
        Format::Atif => {
            let options = specgap_atif::ExportOptions { include_private: args.include_private };
            let summary = specgap_atif::export_run(&args.run, &args.out, options)
                .with_context(|| format!("exporting {} as ATIF into {}", args.run.display(), args.out.display()))?;
            println!(
                "wrote {} ATIF trajectories ({}) into {}; index: {}",
                summary.trajectories,
                specgap_atif::ATIF_VERSION,
                args.out.display(),
                summary.index.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
