//! `specgap residualize`: seed 001's Residualization (§3.2, App. B) as one resumable command.
//!
//! ```text
//! specgap residualize generate [SUITE...] --agent A[,B] --out RUN [specgap run's flags]   Stage I: an ordinary run store
//! specgap residualize DIR [--from RUN]... [--ignore GLOB]... [--no-default-ignores]
//!                         [--review NAME=SHEET.csv --review NAME=SHEET.csv]
//!                         [--write-to PACKAGES | --in-place] [--json] [--no-sandbox]
//! ```
//!
//! The pipeline lives in `specgap_residualize`; this module turns flags into its
//! [`Request`] and, for `generate`, into a `specgap run` with the generation protocol.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use specgap_residualize::generation::{PROTOCOL, START};
use specgap_residualize::pipeline::{Reached, Request, TargetRequest, advance};

use crate::run;

const AFTER_HELP: &str = "\
Stages (seed 001 §3.2, App. B): I. generate predecessor runs from the clean state (or take
existing runs with --from); II. keep the runs that submitted, got a valid verdict, still fail,
changed something beyond build outputs, caches and logs, and hit no infrastructure failure,
each final state once; III. two reviewers judge each candidate from its bundle
(DIR/residualize/review/) and their sheets are imported, with Cohen's kappa; IV. each kept
candidate becomes residual/<id>/state.patch and meta.toml, is rebuilt, run and verified again,
and is installed into a copy of its package (--write-to) or the package itself (--in-place).
Every call stores what it decided in DIR/residualize/ and prints the funnel (Table 5);
calling again continues where it stopped.

Examples:
  specgap residualize generate examples/tasks --agent chat:some-model --out runs/pred
  specgap residualize runs/pred                       filter and write review bundles
  specgap residualize runs/pred --review alice=alice.csv --review bob=bob.csv --write-to residual-tasks
  specgap check residual-tasks                        the new states pass the package checks
  specgap residualize work --from runs/a --from runs/b --ignore 'dist/'";

/// Arguments of `specgap residualize`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, after_help = AFTER_HELP)]
pub struct Args {
    /// `generate`: Stage I only.
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// The pipeline's flags.
    #[command(flatten)]
    pub pipeline: PipelineArgs,
}

/// Subcommands of `specgap residualize`.
#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Stage I: run predecessors from the clean state under the generation protocol (`blind`:
    /// the request under a neutral prompt, no questions or feedback, one submission, shell
    /// profile; 8-hour budget) into an ordinary run store. Takes `specgap run`'s flags.
    #[command(
        mut_arg("agents", |a| a.required_unless_present("resume").help("Predecessor agents, comma-separated (as for specgap run).")),
        mut_arg("conditions", |a| a.help("Conditions instead of the generation protocol's `blind` (used as given, with any axis flags).")),
        mut_arg("starts", |a| a.hide(true)),
        mut_arg("turns", |a| a.help("Turn budget per run. Default: 1000.")),
        mut_arg("tool_calls", |a| a.help("Tool-call budget per run. Default: 3000.")),
        mut_arg("wall_sec", |a| a.help("Wall-clock budget per run, in seconds. Default: 28800 (8 hours, seed 001 App. C.1).")),
        mut_arg("no_report", |a| a.hide(true))
    )]
    Generate(GenerateArgs),
}

/// Flags of the pipeline (stages II–IV).
#[derive(Debug, clap::Args)]
pub struct PipelineArgs {
    /// The pipeline directory: its stages go to DIR/residualize/. Without --from it must be a
    /// run store (the predecessor runs).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A run store holding predecessor runs (repeatable); default: DIR itself.
    #[arg(long = "from", value_name = "RUN")]
    pub from: Vec<PathBuf>,
    /// An extra incidental-artifact rule (repeatable): `name/` a directory at any depth,
    /// `*.ext` a file name at any depth, `a/b` anchored at the workspace root.
    #[arg(long = "ignore", value_name = "GLOB")]
    pub ignore: Vec<String>,
    /// Drop the default incidental-artifact rules (__pycache__/, *.pyc, .pytest_cache/,
    /// node_modules/, target/, *.log, …); only --ignore rules remain.
    #[arg(long)]
    pub no_default_ignores: bool,
    /// A reviewer's filled label sheet, NAME=SHEET.csv; give two.
    #[arg(long = "review", value_name = "NAME=SHEET.csv")]
    pub review: Vec<String>,
    /// Write the states into copies of their packages under this directory
    /// (PACKAGES/<task name>/).
    #[arg(long, value_name = "PACKAGES", conflicts_with = "in_place")]
    pub write_to: Option<PathBuf>,
    /// Write the states into the packages the runs read.
    #[arg(long)]
    pub in_place: bool,
    /// Print the funnel as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Rebuild and verify states without bubblewrap (trusted code only).
    #[arg(long)]
    pub no_sandbox: bool,
}

/// Flags of `specgap residualize generate`: those of `specgap run`, with the generation
/// protocol's defaults.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// `specgap run`'s flags.
    #[command(flatten)]
    pub run: run::Args,
}

/// Runs `specgap residualize`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(Sub::Generate(generate)) => exec_generate(generate),
        None => exec_pipeline(args.pipeline),
    }
}

fn exec_generate(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let mut run_args = args.run;
    run_args.no_report = true;
    if let Some(dir) = run_args.resume.clone() {
        // A resumed generation keeps the protocol stored in its run.toml.
        let code = run::exec(run_args)?;
        eprintln!("predecessor runs stored in {}; next: specgap residualize {}", dir.display(), dir.display());
        return Ok(code);
    }
    if run_args.starts.iter().any(|s| s != START) {
        bail!("predecessors start from the clean state; residualize generate takes no --start");
    }
    run_args.starts = vec![START.to_string()];
    if run_args.conditions.is_empty() {
        run_args.conditions = vec![PROTOCOL.condition.to_string()];
        run_args.submissions = run_args.submissions.or(PROTOCOL.submissions);
        run_args.ask = run_args.ask.or(PROTOCOL.ask.map(on_off));
        run_args.feedback = run_args.feedback.or(PROTOCOL.feedback.map(on_off));
        run_args.profile = run_args.profile.or(PROTOCOL.profile.map(str::to_string));
    }
    run_args.turns = Some(run_args.turns.unwrap_or(PROTOCOL.turns));
    run_args.tool_calls = Some(run_args.tool_calls.unwrap_or(PROTOCOL.tool_calls));
    run_args.wall_sec = Some(run_args.wall_sec.unwrap_or(PROTOCOL.wall_sec));
    let Some(out) = run_args.out.clone() else {
        bail!("name the run directory of the predecessors: residualize generate ... --out RUN");
    };
    let code = run::exec(run_args)?;
    eprintln!("predecessor runs stored in {}; next: specgap residualize {}", out.display(), out.display());
    Ok(code)
}

fn on_off(on: bool) -> String {
    if on { "on" } else { "off" }.to_string()
}

fn exec_pipeline(args: PipelineArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = args.dir else {
        bail!("give the pipeline directory: specgap residualize DIR [--from RUN]... (or specgap residualize generate ...)");
    };
    let reviews = args.review.iter().map(|flag| parse_review(flag)).collect::<anyhow::Result<Vec<_>>>()?;
    let ignore = (!args.ignore.is_empty() || args.no_default_ignores).then(|| {
        let rules = specgap_residualize::ignore::DEFAULT_IGNORES.iter().filter(|_| !args.no_default_ignores).map(|r| (*r).to_string());
        rules.chain(args.ignore.iter().map(|r| r.trim().to_string())).collect()
    });
    let target = match (args.write_to, args.in_place) {
        (Some(dir), _) => Some(TargetRequest::WriteTo(dir)),
        (None, true) => Some(TargetRequest::InPlace),
        (None, false) => None,
    };
    let request = Request { dir: dir.clone(), sources: args.from, ignore, reviews, target, sandbox: !args.no_sandbox };
    let advanced = advance(&request, None, &|line| eprintln!("{line}")).with_context(|| format!("residualize {}", dir.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&advanced.funnel)?);
    } else {
        print!("{}", advanced.funnel.markdown());
    }
    let shown = dir.display();
    let review_dir = advanced.work_dir.join("review");
    match advanced.reached {
        Reached::NoCandidates => eprintln!("no predecessor run is a candidate residual state; nothing to review"),
        Reached::AwaitingReviews => eprintln!(
            "{} candidate(s) await review: read {} (or index.md), have each of two reviewers fill a copy of {}, then:\n  specgap residualize {shown} --review NAME=SHEET.csv --review NAME=SHEET.csv --write-to PACKAGES",
            advanced.funnel.stages.get(2).map_or(0, |s| s.pending),
            review_dir.join("index.html").display(),
            review_dir.join("sheet.csv").display()
        ),
        Reached::AwaitingTarget => {
            eprintln!("reviews imported; name where the states go:\n  specgap residualize {shown} --write-to PACKAGES   (or --in-place)")
        }
        Reached::Built => eprintln!(
            "{} residual state(s) included; check the packages with specgap check (records in {})",
            advanced.funnel.included.unwrap_or(0),
            advanced.work_dir.join("build.json").display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `NAME=SHEET.csv`.
fn parse_review(flag: &str) -> anyhow::Result<(String, PathBuf)> {
    let Some((name, path)) = flag.split_once('=') else {
        bail!("--review takes NAME=SHEET.csv (the reviewer's name and their filled sheet), not `{flag}`");
    };
    if name.trim().is_empty() || path.is_empty() {
        bail!("--review takes NAME=SHEET.csv with a reviewer name and a file, not `{flag}`");
    }
    Ok((name.trim().to_string(), PathBuf::from(path)))
}
