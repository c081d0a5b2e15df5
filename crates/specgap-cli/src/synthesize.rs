//! `specgap synthesize`: seed 000's task-construction pipeline (`specgap_synth`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_synth::handoff::BriefLimits;
use specgap_synth::pipeline::{Config, Limits, Roles, synthesize};
use specgap_synth::prompts::Prompts;
use specgap_synth::role::role_from_spec;
use specgap_task::SandboxJudge;

const AFTER_HELP: &str = "\
Runs Planner -> Builder -> acceptance checks -> [sufficiency test] -> Auditor -> Calibrator
(seed 000 §4.2). A failing acceptance check, a failing sufficiency test (--implementer: an
implementation from instruction.full.md and the workspace alone, run through the evaluator) or a
`fix` verdict sends the numbered list back to the Builder; a `redesign` sends the Auditor's
reason back to the Planner. Every hand-off, check and verdict goes to
<out>/journal.json; the accepted package is copied to <out>/package.

Roles are `scripted:<file>` for now (docs/synthesize.md describes the script and hand-off
formats); other agent kinds are refused by name.

Exit status: 0 when the package is ready, 1 when the pipeline stopped (a limit reached, a
hand-off still malformed, a role unable to answer), 2 for unusable arguments.

Example (the bundled offline role scripts):
  specgap synthesize examples/tasks/payment-retry --out synth-demo/ \\
    --planner scripted:examples/synthesize/payment-retry/planner.json \\
    --builder scripted:examples/synthesize/payment-retry/builder.json \\
    --auditor scripted:examples/synthesize/payment-retry/auditor.json \\
    --calibrator scripted:examples/synthesize/payment-retry/calibrator.json";

/// Arguments of `specgap synthesize`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The source task: a package or any directory whose instruction states every requirement.
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// Output directory (must be missing or empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Who plays the Planner (`scripted:<file>`).
    #[arg(long, value_name = "ROLE")]
    pub planner: String,
    /// Who plays the Builder.
    #[arg(long, value_name = "ROLE")]
    pub builder: String,
    /// Who plays the Auditor.
    #[arg(long, value_name = "ROLE")]
    pub auditor: String,
    /// Who plays the Calibrator.
    #[arg(long, value_name = "ROLE")]
    pub calibrator: String,
    /// Who implements from the full instruction and the workspace alone for the Auditor's
    /// sufficiency test (specgap evaluates the result); without it the test is skipped.
    #[arg(long, value_name = "ROLE")]
    pub implementer: Option<String>,
    /// Builder rounds per design before the synthesis stops.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_iterations: u16,
    /// Redesigns allowed after the first design.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub max_redesigns: u16,
    /// Extra attempts at a malformed hand-off.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_retries: u16,
    /// Requirements the brief must have.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub requirements: u16,
    /// Fewest requirements the partial instruction must withhold.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub min_withheld: u16,
    /// Directory of replacement prompts (planner.md, builder.md, auditor.md, calibrator.md).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Continue the synthesis journaled in --out: its recorded hand-offs are reused, the
    /// acceptance checks run again, and the roles are asked from where it stopped.
    #[arg(long)]
    pub resume: bool,
    /// Run evaluators without bubblewrap (trusted code only).
    #[arg(long)]
    pub no_sandbox: bool,
}

/// Runs `specgap synthesize`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let prompts = match &args.prompts {
        Some(dir) => Prompts::with_dir(dir)?,
        None => Prompts::default(),
    };
    let mut roles = Roles {
        planner: role_from_spec(&args.planner).context("--planner")?,
        builder: role_from_spec(&args.builder).context("--builder")?,
        auditor: role_from_spec(&args.auditor).context("--auditor")?,
        calibrator: role_from_spec(&args.calibrator).context("--calibrator")?,
        implementer: args.implementer.as_deref().map(role_from_spec).transpose().context("--implementer")?,
    };
    let limits = Limits {
        max_iterations: args.max_iterations.into(),
        max_redesigns: args.max_redesigns.into(),
        max_retries: args.max_retries.into(),
        brief: BriefLimits { requirements: args.requirements.into(), min_withheld: args.min_withheld.into() },
    };
    let config = Config { source: args.source, out: args.out, limits, prompts, resume: args.resume };
    let judge = SandboxJudge::new(!args.no_sandbox).context("preparing the evaluator sandbox")?;
    match synthesize(&config, &mut roles, &judge) {
        Ok(done) => {
            println!(
                "ready: {} (design {}, builder iteration {}); journal {}",
                done.package.display(),
                done.designs,
                done.iterations,
                done.journal.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("error: {:#}", anyhow::Error::from(err));
            Ok(ExitCode::from(1))
        }
    }
}
