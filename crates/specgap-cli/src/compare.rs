//! `specgap compare RUN_A RUN_B [--a SEL] [--b SEL] [--measures LIST] [--seed N] [--resamples N]
//! [--format md|json]` or `specgap compare --family FILE`: runs paired by task — per-task
//! values, the mean difference B − A with a seeded paired bootstrap interval, and Wilcoxon
//! signed-rank tests with Holm's correction over the family (every measure of the call, or
//! every comparison of the family file; seed 002 §5.1, App. A.6). The computation lives in
//! `specgap_report::compare`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use specgap_report::compare::{render_comparison_json, render_comparison_markdown};
use specgap_report::{CompareOptions, RunData, Selection, compare, compare_family};

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
    /// Run A (the reference; differences are B − A). Not with --family.
    #[arg(required_unless_present = "family", conflicts_with = "family")]
    pub run_a: Option<PathBuf>,
    /// Run B (may be the same directory as A with other selections). Not with --family.
    #[arg(required_unless_present = "family", conflicts_with = "family")]
    pub run_b: Option<PathBuf>,
    /// A family file (TOML, docs/report-schema.md "Family file"): many comparisons, Holm over
    /// all of their tests together (seed 002 Table 11's 24).
    #[arg(long, value_name = "FILE")]
    pub family: Option<PathBuf>,
    /// Measures to compare, comma-separated (Score@1, Score@4, Success@1, Success@4, Quality,
    /// DSR, Valid, Recall, Precision, Ask-F1); default: every measure that applies.
    #[arg(long, value_delimiter = ',', conflicts_with = "family")]
    pub measures: Vec<String>,
    /// Episodes of A to use: key=value pairs, comma-separated (agent, condition, start,
    /// family, task).
    #[arg(long = "a", default_value = "", conflicts_with = "family")]
    pub select_a: String,
    /// Episodes of B to use, as for --a.
    #[arg(long = "b", default_value = "", conflicts_with = "family")]
    pub select_b: String,
    /// Seed of the bootstrap (a family file's `seed` wins).
    #[arg(long, default_value_t = 12345)]
    pub seed: u64,
    /// Bootstrap resamples (a family file's `resamples` wins).
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
    let defaults = CompareOptions { seed: args.seed, resamples: args.resamples, ..CompareOptions::default() };
    let comparison = match (&args.family, &args.run_a, &args.run_b) {
        (Some(family), _, _) => compare_family(family, &defaults)?,
        (None, Some(run_a), Some(run_b)) => {
            let load = |dir: &PathBuf| RunData::load(dir).with_context(|| format!("cannot read run {}", dir.display()));
            let a = load(run_a)?;
            let b = load(run_b)?;
            let options = CompareOptions {
                select_a: Selection::parse_flag("--a", &args.select_a)?,
                select_b: Selection::parse_flag("--b", &args.select_b)?,
                measures: args.measures.clone(),
                ..defaults
            };
            compare(&a, &b, &options)?
        }
        _ => anyhow::bail!("give two run directories, or --family FILE"),
    };
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
