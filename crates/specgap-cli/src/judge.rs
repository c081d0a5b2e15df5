//! `specgap judge RUN --panel FILE`: the coverage-judge panel of seed 002 (§4.1, A.3, A.9.5)
//! over a finished run, as a resumable step. Verdicts and every ballot go to the run's store;
//! a later `specgap report RUN --judge panel` reads them and asks no model. Running it again
//! judges only what is not decided yet (Ctrl-C keeps every episode already judged).
//! The work lives in `specgap_panels::judge`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use specgap_panels::{JudgeOptions, JudgeSummary, PanelFile};
use specgap_store::{PanelUse, Store};

/// Arguments of `specgap judge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run directory.
    pub run: PathBuf,
    /// The panel file (TOML: `[[model]]` tables; README "Model panels").
    #[arg(long)]
    pub panel: PathBuf,
    /// Episodes judged at once.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
}

/// Runs `specgap judge`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let store = Store::open(&args.run).with_context(|| format!("cannot open run {}", args.run.display()))?;
    let stop = Arc::new(AtomicBool::new(false));
    crate::run::install_stop_handler(&stop, "stopping: the episode being judged is dropped; judged ones are kept")?;
    let summary = judge(&store, &args.panel, args.jobs, Some(stop))?;
    eprintln!("{}", summary_line(&summary));
    Ok(if summary.interrupted { ExitCode::from(crate::run::EXIT_INTERRUPTED) } else { ExitCode::SUCCESS })
}

/// Loads the panel file and judges what the store lacks (also used by `specgap report
/// --panel`); warnings about unreadable packages go to the log.
pub fn judge(store: &Store, panel: &std::path::Path, jobs: usize, stop: Option<Arc<AtomicBool>>) -> anyhow::Result<JudgeSummary> {
    let file = PanelFile::load(panel)?;
    let panel = file.panel(PanelUse::Judge);
    let summary = specgap_panels::judge_run(store, &panel, &JudgeOptions { jobs, stop })
        .with_context(|| format!("cannot judge run {}", store.dir().display()))?;
    for warning in &summary.warnings {
        tracing::warn!("{}: {warning}", store.dir().display());
    }
    Ok(summary)
}

fn summary_line(s: &JudgeSummary) -> String {
    let mut line = format!(
        "{}: {} episode{} judged, {} target verdict{} ({} covered, {} unavailable), {} ballot{} dropped; {} episode{} already judged",
        s.panel,
        s.episodes,
        plural(s.episodes),
        s.targets,
        plural(s.targets),
        s.covered,
        s.unavailable,
        s.dropped,
        plural(s.dropped),
        s.already,
        plural(s.already)
    );
    if s.interrupted {
        line.push_str("; interrupted: run `specgap judge` again to finish");
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
