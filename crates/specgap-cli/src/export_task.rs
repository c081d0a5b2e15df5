//! `specgap export-task PACKAGE --out DIR`: a specgap package as a Harbor task directory, by
//! `specgap-harbor` (docs/harbor.md). Not `specgap export`, which exports runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const AFTER_HELP: &str = "\
Writes DIR as a Harbor task (Harbor 0.25.0's format) for what Harbor can express: the full
instruction (instruction.full.md when the package has one), one submission, no owner, and the
package's evaluator, run by tests/test.sh, whose score becomes /logs/verifier/reward.json.
A staged package ([stages]) becomes one [[steps]] entry per stage (steps/<name>/: its
instruction, tests scoring that stage, workdir/ from its files, solution/ from its gold).
A package imported with `specgap import harbor` is written back as the task it came from.

Example:
  specgap export-task examples/tasks/payment-retry --out harbor-tasks/payment-retry
  harbor run --path harbor-tasks/payment-retry ...";

/// Arguments of `specgap export-task`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The package directory.
    pub package: PathBuf,
    /// The Harbor task directory to write (must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Runs `specgap export-task`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let exported = specgap_harbor::export::export_task(&args.package, &args.out)
        .with_context(|| format!("exporting {} as a Harbor task into {}", args.package.display(), args.out.display()))?;
    match exported {
        specgap_harbor::export::Exported::Original => {
            println!("wrote the Harbor task {} was imported from into {}", args.package.display(), args.out.display());
        }
        specgap_harbor::export::Exported::Converted { gold, steps: 0 } => println!(
            "wrote {} as a Harbor task into {} ({})",
            args.package.display(),
            args.out.display(),
            if gold { "with solution/solve.sh from the gold" } else { "no gold, so no solution/solve.sh" }
        ),
        specgap_harbor::export::Exported::Converted { gold, steps } => println!(
            "wrote {} as a Harbor task of {steps} steps into {} ({})",
            args.package.display(),
            args.out.display(),
            if gold { "with steps/<name>/solution/solve.sh from the stages' gold" } else { "no gold, so no solve.sh" }
        ),
    }
    Ok(ExitCode::SUCCESS)
}
