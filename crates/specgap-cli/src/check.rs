//! `specgap check`: validate task packages — the loader's rules, then each scoring kind's
//! checks through the real evaluator in the sandbox (`specgap_task::check`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_task::SandboxJudge;
use specgap_task::check::{CheckSummary, check_paths, render_table};

const AFTER_HELP: &str = "\
Each package gets a table of checks (pass / fail / warn / skip, with the reason). The exit
status is 0 when no check of any package fails, 1 otherwise, 2 when no package was found.

Examples:
  specgap check examples/tasks                  every package below a directory
  specgap check examples/tasks/payment-retry    one package
  specgap check examples/tasks --jobs 4 --json  four packages at a time, machine-readable
  specgap check my-task --no-sandbox            without bubblewrap (trusted code only)

See docs/writing-tasks.md for what each check means.";

/// Arguments of `specgap check`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Package directories, suites to search for packages, or task.toml files.
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Print one JSON document (stable shape, version 1) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Packages checked in parallel. Default: the number of CPUs, as for `specgap run`.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Run evaluators without bubblewrap (for machines without it; trusted code only).
    #[arg(long)]
    pub no_sandbox: bool,
}

/// Runs `specgap check`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let judge = SandboxJudge::new(!args.no_sandbox).context("preparing the evaluator sandbox")?;
    let jobs = args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get), usize::from);
    let reports = check_paths(&args.paths, &judge, jobs)
        .context("finding task packages")?;
    let summary = CheckSummary::new(reports);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        let tables: Vec<String> = summary.tasks.iter().map(render_table).collect();
        print!("{}", tables.join("\n"));
        let failed = summary.tasks.iter().filter(|t| !t.passed).count();
        println!("\n{} checked, {failed} failed", summary.tasks.len());
    }
    Ok(if summary.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
