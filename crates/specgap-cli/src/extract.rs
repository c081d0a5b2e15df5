//! `specgap extract RUN --panel FILE`: the extraction panel of seed 002 (§4.1, A.3, A.9.4)
//! over a finished run, as a resumable step. For every delivery case that names a submission
//! schema, extractor sessions (the built-in chat agent, shell profile, in the sandbox) convert
//! the delivered artifact into the schema's format and the case evaluator scores each; the
//! agreed score replaces the direct artifact's in `specgap report` (docs/decisions.md "Panels:
//! extraction"). The work lives in `specgap_panels::extract`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use specgap_panels::{ExtractOptions, ExtractSummary, PanelFile};
use specgap_sandbox::SandboxConfig;
use specgap_store::{PanelUse, Store};

/// Arguments of `specgap extract`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run directory.
    pub run: PathBuf,
    /// The panel file (TOML: `[[model]]` tables, optional `[extraction]` limits; README
    /// "Model panels").
    #[arg(long)]
    pub panel: PathBuf,
}

/// Runs `specgap extract`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let store = Store::open(&args.run).with_context(|| format!("cannot open run {}", args.run.display()))?;
    let panel = PanelFile::load(&args.panel)?.panel(PanelUse::Extractor);
    let sandbox = SandboxConfig { enabled: store.config().sandbox };
    sandbox.check()?;
    let stop = Arc::new(AtomicBool::new(false));
    crate::run::install_stop_handler(&stop, "stopping: the submission being extracted is dropped; extracted ones are kept")?;
    let summary = specgap_panels::extract_run(&store, &panel, &ExtractOptions { sandbox, stop: Some(stop) })
        .with_context(|| format!("cannot extract run {}", args.run.display()))?;
    for warning in &summary.warnings {
        tracing::warn!("{}: {warning}", args.run.display());
    }
    eprintln!("{}", summary_line(&summary));
    Ok(if summary.interrupted { ExitCode::from(crate::run::EXIT_INTERRUPTED) } else { ExitCode::SUCCESS })
}

fn summary_line(s: &ExtractSummary) -> String {
    let mut line = format!(
        "{}: {} submission(s) extracted by {} extractor session(s): {} scored, {} unavailable (no majority){}; {} already extracted; {} delivery run(s) of cases without a schema scored from the direct artifact",
        s.panel,
        s.submissions,
        s.routes,
        s.scored,
        s.unavailable.len(),
        if s.unavailable.is_empty() { String::new() } else { format!(": {}", s.unavailable.join(", ")) },
        s.already,
        s.without_schema,
    );
    if s.interrupted {
        line.push_str("; interrupted: run `specgap extract` again to finish");
    }
    line
}
