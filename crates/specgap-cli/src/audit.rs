//! `specgap audit sample | import | report`: human audits of runs (seed 000 §4.2, §5.5;
//! seed 001 §3.2, §5; seed 002 §4.3, A.8). `sample` draws a seeded stratified sample and writes
//! a label sheet and one page per item; `import` checks and stores one rater's filled sheet;
//! `report` gives rates and agreement with case-cluster bootstrap intervals. The work lives in
//! `specgap_audit`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use specgap_agents::chat::ChatConfig;
use specgap_audit::sample::{Manifest, draw, write_with};
use specgap_audit::summary::Summarizer;
use specgap_audit::{Rubric, UnitKind};
use specgap_store::Store;

/// Arguments of `specgap audit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Verb,
}

#[derive(Debug, clap::Subcommand)]
enum Verb {
    /// Draw a seeded stratified sample of units and write its label sheet and pages.
    Sample(SampleArgs),
    /// Check one rater's filled sheet and store its labels.
    Import(ImportArgs),
    /// Rates and agreement of every sample of a run, with bootstrap intervals.
    Report(ReportArgs),
}

/// Arguments of `specgap audit sample`.
#[derive(Debug, clap::Args)]
struct SampleArgs {
    /// Run directories; the sample is stored in the first.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// The unit: episode, failed-episode, question, reply, resample, extraction, task or candidate.
    #[arg(long)]
    unit: String,
    /// The rubric: a built-in name (seed000-task, seed000-failure, seed000-resample,
    /// seed001-review, seed001-continuation, seed002-customer, seed002-extraction,
    /// seed002-coverage) or a TOML file.
    #[arg(long)]
    rubric: String,
    /// Stratum fields, comma-separated: task, agent, user, condition, start, family, outcome
    /// (question units also target, resamples purpose).
    #[arg(long, value_delimiter = ',')]
    by: Vec<String>,
    /// Units drawn per stratum (all of a smaller stratum); without it, every unit.
    #[arg(long)]
    n: Option<usize>,
    /// Seed of the draw, the row order and the report's bootstrap.
    #[arg(long)]
    seed: u64,
    /// Output directory (sheet.csv, pages/).
    #[arg(long)]
    out: PathBuf,
    /// A model that summarizes each episode unit's trajectory on its page (seed 001 Stage III);
    /// its usage is recorded under the role `summarizer`.
    #[arg(long)]
    summary_model: Option<String>,
    /// The summary model's endpoint, up to `/v1`.
    #[arg(long, requires = "summary_model", default_value = specgap_agents::chat::DEFAULT_BASE_URL)]
    summary_base_url: String,
    /// The variable holding the summary model's API key.
    #[arg(long, requires = "summary_model", default_value = specgap_agents::chat::DEFAULT_API_KEY_ENV)]
    summary_api_key_env: String,
}

/// Arguments of `specgap audit import`.
#[derive(Debug, clap::Args)]
struct ImportArgs {
    /// The run holding the sample (the first run given to `sample`).
    run: PathBuf,
    /// The filled sheet.
    sheet: PathBuf,
    /// The rater's name (one sheet per rater and sample).
    #[arg(long)]
    rater: String,
    /// Replace the labels and notes this rater imported for the sample before (a corrected
    /// sheet); without it a rater's second sheet is refused.
    #[arg(long)]
    replace: bool,
}

/// Arguments of `specgap audit report`.
#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// The run holding the samples.
    run: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `specgap audit`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Verb::Sample(a) => sample(a),
        Verb::Import(a) => import(a),
        Verb::Report(a) => report(a),
    }
}

fn open(run: &std::path::Path) -> anyhow::Result<Store> {
    Store::open(run).with_context(|| format!("cannot open run {}", run.display()))
}

fn sample(args: SampleArgs) -> anyhow::Result<ExitCode> {
    let stores = args.runs.iter().map(|r| open(r)).collect::<anyhow::Result<Vec<_>>>()?;
    let manifest = Manifest {
        unit: UnitKind::parse(&args.unit)?,
        rubric: Rubric::named(&args.rubric)?,
        runs: args.runs.clone(),
        by: args.by.iter().map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect(),
        n: args.n,
        seed: args.seed,
        batch: None,
    };
    let sample = draw(&stores, manifest)?;
    let summarizer = args.summary_model.as_ref().map(|model| Summarizer {
        config: ChatConfig {
            base_url: args.summary_base_url.clone(),
            api_key_env: args.summary_api_key_env.clone(),
            ..ChatConfig::new(model)
        },
    });
    let sheet = write_with(&stores, &sample, &args.out, summarizer.as_ref())?;
    for (stratum, (population, taken)) in &sample.strata {
        eprintln!("  {stratum}: {taken} of {population}");
    }
    eprintln!("{}: {} items; label sheet {}", sample.id, sample.items.len(), sheet.display());
    Ok(ExitCode::SUCCESS)
}

fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let store = open(&args.run)?;
    let mode = if args.replace { specgap_audit::import::ImportMode::Replace } else { specgap_audit::import::ImportMode::New };
    let imported = specgap_audit::import::import_sheet(&store, &args.sheet, &args.rater, mode)?;
    let how = if imported.replaced { "stored in place of the rater's earlier sheet" } else { "stored" };
    eprintln!(
        "{}: rater {}: {} rows, {} labels and {} notes {how}",
        imported.sample, imported.rater, imported.rows, imported.labels, imported.notes
    );
    Ok(ExitCode::SUCCESS)
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let store = open(&args.run)?;
    let reports = specgap_audit::agreement::report(&store)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        print!("{}", specgap_audit::agreement::render_text(&reports));
    }
    Ok(ExitCode::SUCCESS)
}
