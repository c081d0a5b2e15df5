//! `specgap synthesis-review`: human review of a package `specgap synthesize` built
//! (`specgap_synth::review`, seed 000 §4.2).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_synth::review::{import_review, write_review_pages};
use specgap_task::SandboxJudge;
use specgap_task::synthesis::ReviewStatus;

const AFTER_HELP: &str = "\
With --pages DIR: writes review.md, review.html and the blank sheet.csv for the package's four
criteria (consistency, plausibility, inferability, no-leak; seed 000 §4.2). With
--review NAME=CSV (repeatable): re-runs the acceptance checks (check --strict), then records the
reviewers' verdicts in the package's synthesis.toml as the next review version; `specgap check`
then reports it as the row synthesis:review.

Exit status: 0 pages written or the package reviewed; 1 the review rejected it; 2 unusable
arguments, a malformed sheet, or failing acceptance checks.";

/// Arguments of `specgap synthesis-review`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The synthesized package (`<out>/package` of `specgap synthesize`).
    #[arg(value_name = "PACKAGE")]
    pub package: PathBuf,
    /// Write the review pages and the blank sheet into this directory.
    #[arg(long, value_name = "DIR", conflicts_with = "review", required_unless_present = "review")]
    pub pages: Option<PathBuf>,
    /// A reviewer's filled sheet, NAME=CSV. Repeatable.
    #[arg(long, value_name = "NAME=CSV")]
    pub review: Vec<String>,
    /// Run evaluators without bubblewrap (trusted code only).
    #[arg(long)]
    pub no_sandbox: bool,
}

/// Runs `specgap synthesis-review`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.pages {
        let pages = write_review_pages(&args.package, dir)?;
        println!("wrote {}, {} and {}", pages.markdown.display(), pages.html.display(), pages.sheet.display());
        return Ok(ExitCode::SUCCESS);
    }
    let sheets = args
        .review
        .iter()
        .map(|spec| {
            let (name, path) = spec.split_once('=').with_context(|| format!("--review {spec}: write NAME=CSV"))?;
            anyhow::ensure!(!name.trim().is_empty(), "--review {spec}: the reviewer's name is empty");
            Ok((name.trim().to_owned(), PathBuf::from(path)))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let judge = SandboxJudge::new(!args.no_sandbox).context("cannot set up the evaluator sandbox")?;
    let review = import_review(&args.package, &sheets, &judge)?;
    let status = match review.status {
        ReviewStatus::Reviewed => "reviewed",
        ReviewStatus::Rejected => "rejected",
    };
    println!("review version {}: {status}", review.version);
    Ok(if review.status == ReviewStatus::Reviewed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
