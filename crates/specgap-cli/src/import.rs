//! `specgap import harbor <task-dir|dataset-dir> --out <dir>`: Harbor tasks as specgap
//! packages, by `specgap-harbor` (docs/harbor.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const AFTER_HELP: &str = "\
Writes DIR/<task directory name>/ per Harbor task (format-2 packages) and prints one line per
task, imported or refused with its reasons, then a summary table. The task's own
tests/test.sh becomes the package's private evaluator; solution/solve.sh, run once in the
sandbox on the starter, becomes solutions/gold/. What could not be mapped is listed in each
package's NOTES.md. An image task's image is built at import (podman or docker, --engine),
its work directory's files becoming the starter; one that cannot be built is imported with
its starter marked incomplete. Compose files, GPUs, Windows tasks and tasks that need the
network at run time are refused. A directory with no task.toml in or below it is reported as
not a Harbor task. Exits 0 when every task was imported complete, 1 when some were refused,
had an incomplete starter or were not tasks.

Example:
  specgap import harbor ~/harbor-tasks/my-dataset --out suites/my-dataset
  specgap check suites/my-dataset";

/// Arguments of `specgap import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to import.
    #[command(subcommand)]
    pub source: Source,
}

/// Formats `specgap import` reads.
#[derive(Debug, clap::Subcommand)]
pub enum Source {
    /// Harbor task directories (task.toml, instruction.md, environment/, tests/, solution/),
    /// one task or a dataset of them.
    #[command(after_help = AFTER_HELP)]
    Harbor(HarborArgs),
}

/// Arguments of `specgap import harbor`.
#[derive(Debug, clap::Args)]
pub struct HarborArgs {
    /// A Harbor task directory, or a dataset directory with task directories below it.
    pub path: PathBuf,
    /// Output directory: one package per task is written below it.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Do not run solution/solve.sh (no gold overlay).
    #[arg(long)]
    pub no_gold: bool,
    /// Run solve.sh without bubblewrap, for machines without it; trusted tasks only.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Container engine that builds an image task's environment at import, so the files its
    /// image has in the work directory become the starter: auto (podman, else docker, else
    /// none), podman, docker, or none. A task whose image cannot be built is imported with its
    /// starter marked incomplete (its evaluator then refuses to score) and the import exits 1.
    #[arg(long, default_value = "auto")]
    pub engine: specgap_env::EngineChoice,
    /// A Harbor simulated-user persona file (what `harbor run --user-persona-path` takes):
    /// written into every package's user.toml, so `--user chat:…` answers in character.
    #[arg(long, value_name = "FILE")]
    pub user_persona: Option<PathBuf>,
}

/// Runs `specgap import`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    match args.source {
        Source::Harbor(args) => harbor(args),
    }
}

fn harbor(args: HarborArgs) -> anyhow::Result<ExitCode> {
    let persona = match &args.user_persona {
        Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("reading the persona file {}", path.display()))?),
        None => None,
    };
    let options = specgap_harbor::ImportOptions { gold: !args.no_gold, sandbox: !args.no_sandbox, persona, engine: args.engine };
    let outcomes = specgap_harbor::import(&args.path, &args.out, &options)
        .with_context(|| format!("importing the Harbor tasks of {} into {}", args.path.display(), args.out.display()))?;
    for outcome in &outcomes {
        println!("{}", outcome.line());
    }
    println!();
    print!("{}", specgap_harbor::summary(&outcomes));
    let protocol = args.out.join(specgap_harbor::PROTOCOL_FILE);
    if protocol.is_file() {
        println!(
            "\nHarbor's protocol: {}\nrun with: specgap run {} --protocol {} --condition hidden --start clean --agent ...",
            protocol.display(),
            args.out.display(),
            protocol.display()
        );
    }
    let failed = outcomes.iter().any(specgap_harbor::Outcome::is_failure);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
