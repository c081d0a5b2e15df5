//! `specgap resample RUN --checkpoints N --samples K --seed S --out DIR` (seed 000 §5.6,
//! App. G): re-sends N recorded user-model requests K times each, byte for byte, to the same
//! model configuration, stores the replies beside the originals and writes a label sheet
//! (rubric `seed000-resample`) for `specgap audit import`. The work lives in
//! `specgap_audit::resample`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use specgap_audit::resample::{ResampleOptions, resample_run};
use specgap_store::Store;

/// Arguments of `specgap resample`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run directory (episodes with a `chat:` user).
    pub run: PathBuf,
    /// Recorded requests to pick (seed 000 App. G: 30).
    #[arg(long, default_value_t = 30)]
    pub checkpoints: usize,
    /// Resamples of each (seed 000 App. G: 5).
    #[arg(long, default_value_t = 5)]
    pub samples: u32,
    /// Seed of the pick.
    #[arg(long)]
    pub seed: u64,
    /// Only requests for `answer` (questions) or `feedback` (observations).
    #[arg(long, value_parser = ["answer", "feedback"])]
    pub purpose: Option<String>,
    /// Only requests on a user turn the run's user reviews (`specgap review-user`) tag: a tag
    /// (off-profile, volunteered, contradiction, revealed, broke-character, wrong-refusal,
    /// stopped-early) or `any`.
    #[arg(long, value_parser = finding_names())]
    pub finding: Option<String>,
    /// Output directory of the label sheet and pages.
    #[arg(long)]
    pub out: PathBuf,
}

/// The values of `--finding`: every review tag (specgap_report's, the one list) and `any`.
fn finding_names() -> clap::builder::PossibleValuesParser {
    let tags = specgap_report::simulator::Tag::ALL.map(|t| t.as_str());
    clap::builder::PossibleValuesParser::new(tags.into_iter().chain(["any"]))
}

/// Runs `specgap resample`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let store = Store::open(&args.run).with_context(|| format!("cannot open run {}", args.run.display()))?;
    let options = ResampleOptions {
        checkpoints: args.checkpoints,
        samples: args.samples,
        seed: args.seed,
        purpose: args.purpose,
        finding: args.finding,
        out: args.out,
    };
    let s = match resample_run(&store, &options) {
        Ok(summary) => summary,
        Err(err @ specgap_audit::AuditError::NoReplies { .. }) => {
            // Requests were sent and none was answered: like a run where no episode finished
            // (docs/decisions.md "Exit codes").
            eprintln!("error: {err}");
            return Ok(ExitCode::from(crate::run::EXIT_NO_RESULT));
        }
        Err(err) => return Err(err.into()),
    };
    eprintln!(
        "{}: {} of {} checkpoints, {} requests sent ({} failed), {} already stored; user model usage: {} requests, {} input and {} output tokens",
        s.batch, s.checkpoints, s.available, s.sent, s.failed, s.already, s.usage.requests, s.usage.input_tokens, s.usage.output_tokens
    );
    eprintln!("{}: label sheet {}", s.sample, s.sheet.display());
    Ok(ExitCode::SUCCESS)
}
