//! `specgap eval`: evaluate a directory as a submission of a task and print the outcome —
//! the task author's inner loop (`specgap_task::eval`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_task::SandboxJudge;
use specgap_task::eval::{eval_dir, render_eval};

const AFTER_HELP: &str = "\
Prints each requirement (priority, stated, pass/fail, failure mode and measured values), each
test, the delivery verdict and reward as reported, the derived Score and Success, and the
observation feedback would send. Exit status: 0 when the submission succeeds, 1 when it was
judged and does not succeed, 2 on an evaluation error (reason and stderr tail printed).

Examples:
  specgap eval examples/tasks/payment-retry ./my-fix
  cp -r my-task/workspace /tmp/try && cp -r my-task/solutions/gold/. /tmp/try/
  specgap eval my-task /tmp/try --json";

/// Arguments of `specgap eval`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The task package directory.
    #[arg(value_name = "TASK")]
    pub task: PathBuf,
    /// The directory to evaluate as the submitted workspace.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Print the report as JSON (stable shape, version 1).
    #[arg(long)]
    pub json: bool,
    /// Run the evaluator without bubblewrap (trusted code only).
    #[arg(long)]
    pub no_sandbox: bool,
}

/// Runs `specgap eval`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let package = specgap_task::load(&args.task).with_context(|| format!("loading {}", args.task.display()))?;
    anyhow::ensure!(args.dir.is_dir(), "{} is not a directory", args.dir.display());
    let judge = SandboxJudge::new(!args.no_sandbox).context("preparing the evaluator sandbox")?;
    let report = match eval_dir(&package, &args.dir, &judge) {
        Ok(report) => report,
        Err(err) => {
            // One `error:` line, as every verb's failure (the error's own "evaluation error: "
            // would say it twice).
            let text = specgap_task::check::describe_error_chain(&err);
            let text = text.strip_prefix("evaluation error: ").unwrap_or(&text);
            eprintln!("error: cannot evaluate {}: {text}", args.dir.display());
            if let Some(tail) = err.stderr_tail().filter(|t| !t.trim().is_empty()) {
                eprintln!("evaluator stderr (tail):\n{}", tail.trim_end());
            }
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_eval(&report));
    }
    Ok(if report.success { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
