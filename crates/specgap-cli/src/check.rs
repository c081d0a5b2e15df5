//! `specgap check`: validate task packages — the loader's rules, then each scoring kind's
//! checks through the real evaluator in the sandbox (`specgap_task::check`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_task::SandboxJudge;
use specgap_task::check::{CheckOptions, CheckSummary, check_paths_with, render_table};

const AFTER_HELP: &str = "\
Each package gets a table of checks (pass / fail / warn / skip, with the reason). The exit
status is 0 when no check of any package fails, 1 otherwise, 2 when no package was found.

--strict holds requirement-scored packages to the paper's construction (seed 000 App. E.2):
instruction.full.md, user.toml, the literal reference and one mutant per requirement must
exist, and each mutant must fail its requirement with a failure mode observations.toml
registers for it; a `shape` row warns unless there are 5 requirements with at most 2 stated.

Examples:
  specgap check examples/tasks                  every package below a directory
  specgap check examples/tasks/payment-retry    one package
  specgap check examples/tasks --jobs 4 --json  four packages at a time, machine-readable
  specgap check my-task --strict                everything the paper's construction demands
  specgap check my-task --no-sandbox            without bubblewrap (trusted code only)

See docs/writing-tasks.md for what each check means.";

/// Arguments of `specgap check`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Package directories, suites to search for packages, or task.toml files.
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Print one JSON document (stable shape, version 2) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Fail requirement-scored packages that lack anything seed 000's construction demands
    /// (instruction.full.md, user.toml, literal reference, one mutant per requirement failing
    /// with a registered failure mode); warn when a task departs from the paper's shape.
    #[arg(long)]
    pub strict: bool,
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
    let options = CheckOptions { strict: args.strict };
    let reports = check_paths_with(&args.paths, &judge, jobs, &options).context("finding task packages")?;
    let summary = CheckSummary::new(reports, &options);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        let tables: Vec<String> = summary.tasks.iter().map(render_table).collect();
        print!("{}", tables.join("\n"));
        let failed = summary.tasks.iter().filter(|t| !t.passed).count();
        let mode = if summary.strict { " (strict)" } else { "" };
        println!("\n{} checked{mode}, {failed} failed", summary.tasks.len());
    }
    Ok(if summary.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
