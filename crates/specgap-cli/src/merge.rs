//! `specgap merge`: join shards of one run (`specgap run --shard i/n`) into one store.
//!
//! The work is `specgap_store::merge_with`; this module expands directories of shard runs,
//! parses arguments and prints what was done.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_store::MergeOptions;

const AFTER_HELP: &str = "\
Every run must have the same configuration apart from `--shard` (same tasks with the same
content hashes, agents, users, conditions, starts, seed, repeats) and the same plan; the first
difference is named otherwise. Every shard 1..n must be there (a missing one is refused unless
--allow-partial), each once: a shard given twice is kept once when the copies hold the same
results (a retried shard published again) and refused when they differ; one run directory
given twice (the same path, or two paths to it) is refused. A merged run can be
merged again, alone or with the shards it lacks; `specgap run --resume` of a merged run runs
only the episodes no shard finished.

Examples:
  specgap run --shard 1/2 --out runs/s1 && specgap run --shard 2/2 --out runs/s2
  specgap merge runs/s1 runs/s2 --out runs/all
  specgap merge /shared/study/shards --out runs/all      every run published into the directory";

/// Arguments of `specgap merge`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Run directories to join (shards of one run), or directories holding them (every run
    /// directly inside, hidden names skipped: what `specgap run --publish DIR` fills).
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// New run directory for the merged store (must be empty or absent).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Merge even when shards are missing; the merged run.toml records which (`[merge]
    /// missing`), the report counts the episodes they leave without a result, and `specgap
    /// merge` of the merged run with the missing shards, or `specgap run --resume`, completes it.
    #[arg(long)]
    pub allow_partial: bool,
}

/// Runs `specgap merge`: prints a one-line summary, each identical copy left out, and a
/// warning when shards are missing (with `--allow-partial`).
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let runs = specgap_store::run_dirs(&args.runs)?;
    let options = MergeOptions { allow_partial: args.allow_partial };
    let summary = specgap_store::merge_with(&runs, &args.out, options)
        .with_context(|| format!("merging {} into {}", count(runs.len(), "run"), args.out.display()))?;
    for (shard, left_out, kept) in &summary.identical_copies {
        eprintln!(
            "note: shard {shard}/{} is given twice with the same results; kept {}, left out {}",
            summary.shards,
            kept.display(),
            left_out.display()
        );
    }
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
            "warning: the merged run is incomplete: shard{} {} of {} missing (recorded in its run.toml); merge it again with them, or run the missing episodes with `specgap run --resume {}`",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            summary.shards,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// "1 run", "2 runs".
fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}
