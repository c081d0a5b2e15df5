//! `specgap compare RUN_A RUN_B [--a SEL] [--b SEL] [--seed N] [--resamples N] [--format md|json]`:
//! two runs paired by task — per-task values, the mean difference B − A with a seeded paired
//! bootstrap interval, and Wilcoxon signed-rank tests with Holm's correction over every
//! compared measure (seed 002 §5.1, App. A.6). The computation lives in
//! `specgap_report::compare`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use specgap_report::compare::{render_comparison_json, render_comparison_markdown};
use specgap_report::{CompareOptions, RunData, Selection, compare};

/// Output format of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown tables.
    Md,
    /// JSON (schema `specgap-compare`).
    Json,
}

/// Arguments of `specgap compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run A (the reference; differences are B − A).
    pub run_a: PathBuf,
    /// Run B (may be the same directory as A with other selections).
    pub run_b: PathBuf,
    /// Episodes of A to use: key=value pairs, comma-separated (agent, condition, start,
    /// family, task).
    #[arg(long = "a", default_value = "")]
    pub select_a: String,
    /// Episodes of B to use, as for --a.
    #[arg(long = "b", default_value = "")]
    pub select_b: String,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 12345)]
    pub seed: u64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Write the comparison to this file instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs `specgap compare`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let load = |dir: &PathBuf| {
        RunData::load(dir).with_context(|| format!("cannot read run {}", dir.display()))
    };
    let a = load(&args.run_a)?;
    let b = load(&args.run_b)?;
    let options = CompareOptions {
        select_a: Selection::parse_flag("--a", &args.select_a)?,
        select_b: Selection::parse_flag("--b", &args.select_b)?,
        seed: args.seed,
        resamples: args.resamples,
        ..CompareOptions::default()
    };
    let comparison = compare(&a, &b, &options)?;
    let text = match args.format {
        Format::Md => render_comparison_markdown(&comparison),
        Format::Json => render_comparison_json(&comparison)?,
    };
    match &args.out {
        Some(path) => fs_err::write(path, text)?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
