//! `specgap report RUN... [--group-by DIMS] [--format md|html|json] [--out FILE]`: the measures
//! of one or more runs (seeds 000, 001 and 002), as Markdown, one self-contained HTML page
//! with SVG charts, or versioned JSON (docs/report-schema.md).
//!
//! Reading a run also runs the offline clarification-coverage judge on delivery episodes that
//! have no offline judgement yet and records its verdicts in the run's store. `--judge panel`
//! takes the clarification measures from a coverage panel's stored verdicts instead (seed
//! 002); with `--panel FILE` the panel first judges what the store lacks, so only the first
//! such report asks models. The computation lives in `specgap_report` and `specgap_panels`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use specgap_report::render::{render_html, render_json, render_markdown};
use specgap_report::{Dim, ReportOptions, RunData, build_report};

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown tables.
    Md,
    /// One self-contained HTML page with inline SVG charts.
    Html,
    /// The report as JSON (schema `specgap-report`).
    Json,
}

/// Arguments of `specgap report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directories (the `--out` of `specgap run`); several runs are pooled, and each one
    /// is a seed replicate for the mean ± sd tables. A directory given twice is refused;
    /// shards, missing results and replicates that differ in more than the seed are warned
    /// about in the report.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Grouping dimensions of the main table, comma-separated: agent, condition, start,
    /// family, task.
    #[arg(long, value_delimiter = ',', default_value = "agent,condition,start")]
    pub group_by: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Resamples of the 95% case-bootstrap intervals of seed 002's cells (seed 002 App. A.4:
    /// 2,000); 0 leaves the intervals out.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
    /// Seed of those intervals' resample stream (seed 002 App. A.4: 12345).
    #[arg(long, default_value_t = 12345)]
    pub bootstrap_seed: u64,
    /// Write the report to this file instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Whose coverage verdicts feed Recall, Precision, Ask-F1 and the other clarification
    /// measures: `offline` (the shared matching rule), `panel` (the one coverage panel that
    /// judged the runs, `specgap judge`) or a panel's name `panel:<hash>`.
    #[arg(long, default_value = "offline")]
    pub judge: String,
    /// A panel file: before reporting, its coverage panel judges every episode it has not
    /// judged yet (as `specgap judge RUN --panel FILE`); implies `--judge panel:<its name>`.
    #[arg(long)]
    pub panel: Option<PathBuf>,
    /// Delivery scores of cases with a submission schema: `auto` (the extraction panel's
    /// verdicts when `specgap extract` made some, else the direct artifacts), `direct`, or a
    /// panel's name `panel:<hash>`.
    #[arg(long, default_value = "auto")]
    pub extraction: String,
    /// Leave out the episodes with a severe finding (helped / hindered the agent) of this user
    /// review (`specgap review-user`; its reviewer name, e.g. `rules:1`); the report lists
    /// them in its simulated-user section.
    #[arg(long, value_name = "REVIEWER")]
    pub exclude_user_findings: Option<String>,
    /// Show run time against Quality also when every agent is scripted or replayed (their run
    /// times measure the machine, so it is left out by default).
    #[arg(long)]
    pub show_timing: bool,
}

/// Runs `specgap report`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let group_by = args.group_by.iter().map(|d| Dim::parse(d)).collect::<Result<Vec<_>, _>>()?;
    let judge = match &args.panel {
        Some(panel) => judge_with_panel(&args.runs, panel, &args.judge)?,
        None => args.judge.clone(),
    };
    let text = render_runs(
        &args.runs,
        &ReportOptions {
            group_by,
            judge,
            extraction: args.extraction.clone(),
            intervals: specgap_report::cases::IntervalSettings {
                resamples: args.resamples,
                seed: args.bootstrap_seed,
                ..Default::default()
            },
            exclude_user_findings: args.exclude_user_findings.clone(),
            show_timing: args.show_timing,
        },
        args.format,
    )?;
    match &args.out {
        Some(path) => {
            fs_err::write(path, text)?;
            // The file is the output; one line on stderr says where it went.
            eprintln!("report written to {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Judges every run with the coverage panel of `panel` (what each store lacks) and returns the
/// panel's name for the report.
fn judge_with_panel(runs: &[PathBuf], panel: &Path, requested: &str) -> anyhow::Result<String> {
    if !matches!(requested, "offline" | "panel") {
        anyhow::bail!("--panel judges with the file's panel; leave out --judge {requested} or use --judge panel");
    }
    let mut name = String::new();
    for dir in runs {
        let store = specgap_store::Store::open(dir).with_context(|| format!("cannot open run {}", dir.display()))?;
        let summary = crate::judge::judge(&store, panel, 4, None)?;
        if summary.episodes > 0 {
            eprintln!("{}: {} judged {} episode(s) now", dir.display(), summary.panel, summary.episodes);
        }
        name = summary.panel;
    }
    Ok(name)
}

/// The report of the run in `run_dir` with the default grouping, rendered in `format` (used
/// by `specgap run` after a run).
pub fn render(run_dir: &Path, format: Format) -> anyhow::Result<String> {
    render_runs(&[run_dir.to_path_buf()], &ReportOptions::default(), format)
}

fn render_runs(dirs: &[PathBuf], options: &ReportOptions, format: Format) -> anyhow::Result<String> {
    // Before loading: a run given twice would be read (and judged) twice for nothing.
    specgap_report::inputs::distinct_run_dirs(dirs)?;
    let runs = dirs
        .iter()
        .map(|dir| RunData::load(dir).with_context(|| format!("cannot read run {}", dir.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for run in &runs {
        for warning in &run.warnings {
            tracing::warn!("{}: {warning}", run.dir.display());
        }
    }
    let report = build_report(&runs, options)?;
    let title = match dirs {
        [one] => format!("Run {}", one.display()),
        many => format!("Runs {}", many.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")),
    };
    Ok(match format {
        Format::Md => render_markdown(&report, &title),
        Format::Html => render_html(&report, &title),
        Format::Json => render_json(&report)?,
    })
}
