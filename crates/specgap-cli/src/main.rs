//! The `specgap` binary: parses arguments and hands each verb to its module.
//!
//! Each verb lives in its own module (`check`, `eval`, `run`, `show`, `merge`, `judge`,
//! `extract`, `report`, `compare`, `plan_study`, `review_user`, `residualize`, `agents`, `view`, `export`, `audit`,
//! `resample`) with an `Args`
//! struct (clap) and an `exec` function. The modules stay thin: the work happens in the library
//! crates, which return typed errors; only this binary uses anyhow.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod agents;
mod audit;
mod check;
mod compare;
mod env;
mod eval;
mod export;
mod export_task;
mod extract;
mod import;
mod judge;
mod merge;
mod mock_model;
mod plan_study;
mod report;
mod resample;
mod residualize;
mod review_user;
mod run;
mod show;
mod synthesis_review;
mod synthesize;
mod view;

/// specgap evaluates AI agents on work that starts incomplete.
#[derive(Debug, Parser)]
#[command(name = "specgap", version, about, long_about = None, after_help = EXAMPLES)]
struct Cli {
    /// Log more (repeat for more detail); logs go to stderr.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

const EXAMPLES: &str = "\
Examples:
  specgap check examples/tasks                 validate every package of a suite
  specgap eval examples/tasks/payment-retry ./my-fix
  specgap run                                  run the bundled suite with scripted agents
  specgap judge runs/latest --panel panel.toml  coverage verdicts of a model panel
  specgap report runs/latest --judge panel     measures from the panel's verdicts
  specgap extract runs/latest --panel panel.toml  delivery scores through extractor sessions
  specgap report runs/latest --format html --out runs/latest/report.html
  specgap view runs/latest                     browse the run in the browser (live while it runs)
  specgap export runs/latest --format atif --out runs/latest-atif

  specgap audit sample runs/latest --unit failed-episode --rubric seed000-failure --by agent --n 30 --seed 7 --out audit/
  specgap resample runs/latest --checkpoints 30 --samples 5 --seed 7 --out resample/
  specgap review-user runs/latest              check the relay user's turns (offline rules)
  specgap plan-study runs/pilot --difference 0.1 --a condition=partial --b condition=full";

// The enum is built once per process; boxing `run`'s many flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Validate task packages: format, evaluator runs of every solution, leak scan.
    Check(check::Args),
    /// Evaluate a directory as a submission of a task and print the outcome.
    Eval(eval::Args),
    /// Run agents through episodes on a suite and record everything in a run store.
    #[command(after_help = run::HELP_AFTER)]
    Run(run::Args),
    /// Show a run, or one episode's transcript.
    Show(show::Args),
    /// Join shards of one run into one store.
    Merge(merge::Args),
    /// Judge clarification coverage with a model panel (seed 002) and store the verdicts.
    Judge(judge::Args),
    /// Score deliveries through a model panel of artifact extractors (seed 002).
    Extract(extract::Args),
    /// Compute the measures of a run and write a report.
    Report(report::Args),
    /// Compare two runs task by task, with paired statistics.
    Compare(compare::Args),
    /// Make residual states from predecessor runs (seed 001 Residualization): generate,
    /// filter, review, reconstruct and validate.
    Residualize(residualize::Args),
    /// Install and list external agent CLIs (`cli:<adapter>` agents).
    Agents(agents::Args),
    /// Build, list and prune task environments from container images (root filesystems).
    Env(env::Args),
    /// Browse runs in the browser: a read-only viewer on 127.0.0.1, or a static site.
    View(view::Args),
    /// Export a run's episodes in another format (ATIF trajectories).
    Export(export::Args),
    /// Import tasks of another harness as specgap packages (Harbor task directories).
    Import(import::Args),
    /// Write a task package as a Harbor task directory (not `export`, which exports runs).
    ExportTask(export_task::Args),
    /// Human audits: draw a label sample, import raters' sheets, report agreement.
    Audit(audit::Args),
    /// Re-send recorded user-model requests to measure the simulated user's stability.
    Resample(resample::Args),
    /// Plan a study: tasks and repeats needed to detect a difference with a given power.
    PlanStudy(plan_study::Args),
    /// Review the simulated owner / customer's turns of a run (offline rules or a model panel).
    ReviewUser(review_user::Args),
    /// Serve a scripted model (any protocol) to dry-run an agent without a model.
    MockModel(mock_model::Args),
    /// Turn a fully specified task into a checked partial / full package (seed 000 §4.2).
    Synthesize(synthesize::Args),
    /// Review a synthesized package: pages and sheets, then import the reviewers' verdicts.
    SynthesisReview(synthesis_review::Args),
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let outcome = match cli.command {
        Command::Check(args) => check::exec(args),
        Command::Eval(args) => eval::exec(args),
        Command::Run(args) => run::exec(args),
        Command::Show(args) => show::exec(args),
        Command::Merge(args) => merge::exec(args),
        Command::Judge(args) => judge::exec(args),
        Command::Extract(args) => extract::exec(args),
        Command::Report(args) => report::exec(args),
        Command::Compare(args) => compare::exec(args),
        Command::Residualize(args) => residualize::exec(args),
        Command::Agents(args) => agents::exec(args),
        Command::Env(args) => env::exec(args),
        Command::View(args) => view::exec(args),
        Command::Export(args) => export::exec(args),
        Command::Import(args) => import::exec(args),
        Command::ExportTask(args) => export_task::exec(args),
        Command::Audit(args) => audit::exec(args),
        Command::Resample(args) => resample::exec(args),
        Command::PlanStudy(args) => plan_study::exec(args),
        Command::ReviewUser(args) => review_user::exec(args),
        Command::MockModel(args) => mock_model::exec(args),
        Command::Synthesize(args) => synthesize::exec(args),
        Command::SynthesisReview(args) => synthesis_review::exec(args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}", error_line(&err));
            ExitCode::from(2)
        }
    }
}

/// The one line every verb's failure prints: `error: ` and the error with its causes, each
/// said once (a cause whose text the line already holds is left out, as errors that repeat
/// their source in their own message would otherwise print it twice).
fn error_line(err: &anyhow::Error) -> String {
    let text = specgap_protocol::text::error_chain(err.as_ref());
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    format!("error: {}", text.trim_end())
}

/// Lets a closed stdout end the process quietly, as it does for other command-line tools.
///
/// Rust starts programs with SIGPIPE ignored, so writing to a closed pipe
/// (`specgap show RUN | head`) returns an error and `print!` panics on it. With the default
/// disposition the kernel ends the process on that write instead, which is what a pipeline
/// expects.
fn restore_default_sigpipe() {
    // SAFETY: called first thing in `main`, before any other thread exists; setting a signal's
    // disposition to SIG_DFL installs no handler code and touches no Rust state.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SPECGAP_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Log lines go through the progress bar of `specgap run` when one is shown; colour only
    // on a terminal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(run::LogWriter).init();
}
