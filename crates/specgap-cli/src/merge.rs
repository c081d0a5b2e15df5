//! `specgap merge`: join shards of one run (`specgap run --shard i/n`) into one store.
//!
//! The work is `specgap_store::merge`; this module parses arguments and prints what was done.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const AFTER_HELP: &str = "\
Every run must have the same configuration apart from `--shard` (same tasks with the same
content hashes, agents, users, conditions, starts, seed, repeats); the first difference is
named otherwise. An episode found in two runs must have the same results in both.

Example:
  specgap run --shard 1/2 --out runs/s1 && specgap run --shard 2/2 --out runs/s2
  specgap merge runs/s1 runs/s2 --out runs/all";

/// Arguments of `specgap merge`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Run directories to join (shards of one run).
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// New run directory for the merged store (must be empty or absent).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Runs `specgap merge`: prints a one-line summary, and a warning when shards are missing.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let summary = specgap_store::merge(&args.runs, &args.out).with_context(|| {
        format!(
            "merging {} runs into {}",
            args.runs.len(),
            args.out.display()
        )
    })?;
    println!(
        "merged {} into {}: {} ({} found in more than one run), {} not applicable",
        count(summary.runs, "run"),
        args.out.display(),
        count(summary.episodes, "episode"),
        summary.duplicates,
        summary.not_applicable
    );
    if !summary.missing_shards.is_empty() {
        let missing: Vec<String> = summary.missing_shards.iter().map(u32::to_string).collect();
        eprintln!(
            "warning: the merged run is incomplete; shards not given: {}",
            missing.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// "1 run", "2 runs".
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
