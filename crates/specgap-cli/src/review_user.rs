//! `specgap review-user RUN [--panel FILE] [--seed N]`: reviews every owner / customer turn
//! of a run against the simulated user's profile — offline rules for the relay user, or a
//! model panel — and writes `RUN/reviews/user-<reviewer>.json`, which `specgap report` shows
//! (simulated-user section) and `--exclude-user-findings REVIEWER` uses. The work is in
//! `specgap_panels::review`.

use std::path::PathBuf;
use std::process::ExitCode;

use specgap_panels::PanelFile;
use specgap_panels::review::{review_with_panel, review_with_rules};
use specgap_report::simulator::{summarize, write_review};

/// Arguments of `specgap review-user`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run directory.
    pub run: PathBuf,
    /// A panel file: review with its models (every seat on every turn) instead of the offline
    /// rules.
    #[arg(long)]
    pub panel: Option<PathBuf>,
    /// Seed of the panel clients' backoff jitter.
    #[arg(long, default_value_t = 12345)]
    pub seed: u64,
}

/// Runs `specgap review-user`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let review = match &args.panel {
        Some(path) => review_with_panel(&args.run, &PanelFile::load(path)?, args.seed)?,
        None => review_with_rules(&args.run)?,
    };
    let path = write_review(&args.run, &review)?;
    let summary = summarize(&args.run.display().to_string(), &review);
    println!(
        "{}: {} episodes, {} user turns, {} findings ({} episodes with a severe finding)",
        review.reviewer,
        summary.episodes,
        summary.turns,
        summary.by_severity.values().sum::<usize>(),
        summary.severe_episodes
    );
    for (tag, rate) in &summary.per_100_turns {
        println!("  {:<16} {rate:.1} per 100 user turns", tag.as_str());
    }
    eprintln!("review written to {}", path.display());
    Ok(ExitCode::SUCCESS)
}
