//! `specgap plan-study [PILOT…] --difference D [--a SEL] [--b SEL] [--assume task-sd=X,repeat-sd=Y]
//! [--power P] [--alpha A] [--tests M] [--max-repeats R] [--tasks N] [--format md|json]`:
//! the tasks and repeats a paired comparison needs to detect a difference with a given power,
//! per measure of each seed, from pilot runs or assumed sds, with a seeded simulation check.
//! The computation lives in `specgap_report::study`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use specgap_report::RunData;
use specgap_report::compare::Selection;
use specgap_report::study::{Assumption, StudyOptions, plan_from_assumption, plan_from_pilot, render_plan_json, render_plan_markdown};

use crate::compare::Format;

/// Arguments of `specgap plan-study`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pilot run directories (pooled). Not with --assume.
    #[arg(required_unless_present = "assume", conflicts_with = "assume")]
    pub pilots: Vec<PathBuf>,
    /// Assumed sds instead of a pilot: `task-sd=X,repeat-sd=Y[,rate=P]` (task-sd: spread
    /// across tasks of the true difference; repeat-sd: of one episode around its task mean;
    /// rate: every task's success rate for the binary measures' simulation, default 0.5).
    #[arg(long, value_name = "SDS")]
    pub assume: Option<String>,
    /// The difference B − A to detect, in the measure's units (0.1 = 10 points of a rate).
    #[arg(long)]
    pub difference: f64,
    /// Target power.
    #[arg(long, default_value_t = 0.8)]
    pub power: f64,
    /// Two-sided level of one test.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Tests in the comparison's family (the level becomes alpha / tests, as in `compare`).
    #[arg(long, default_value_t = 1)]
    pub tests: usize,
    /// Largest number of repeats per task and side to consider.
    #[arg(long, default_value_t = 5)]
    pub max_repeats: usize,
    /// The suite's size, when fixed: the plan says how many repeats it needs.
    #[arg(long)]
    pub tasks: Option<usize>,
    /// k of pass^k.
    #[arg(long, default_value_t = 4)]
    pub pass_k: usize,
    /// Measures to plan, comma-separated (Score@1, Score@4, Success@1, Success@4,
    /// Res/Clean gap, Quality, DSR, pass^k); default: every measure the pilot has (Score@1
    /// with --assume).
    #[arg(long, value_delimiter = ',')]
    pub measures: Vec<String>,
    /// Pilot episodes of side A (key=value,…); alone, the pilot is one-sided.
    #[arg(long = "a", default_value = "")]
    pub select_a: String,
    /// Pilot episodes of side B: with it, the task spread of the difference is measured.
    #[arg(long = "b")]
    pub select_b: Option<String>,
    /// Designs simulated by the check.
    #[arg(long, default_value_t = 2000)]
    pub simulations: usize,
    /// Seed of the simulation check.
    #[arg(long, default_value_t = 12345)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Write the plan to this file instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Parses `task-sd=X,repeat-sd=Y[,rate=P]`.
fn parse_assumption(text: &str) -> anyhow::Result<Assumption> {
    let mut assumption = Assumption { task_sd: f64::NAN, repeat_sd: f64::NAN, rate: 0.5 };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').with_context(|| format!("--assume {text}: `{part}` is not key=value"))?;
        let value: f64 = value.trim().parse().with_context(|| format!("--assume {text}: `{part}` is not a number"))?;
        match key.trim() {
            "task-sd" => assumption.task_sd = value,
            "repeat-sd" => assumption.repeat_sd = value,
            "rate" => assumption.rate = value,
            other => anyhow::bail!("--assume {text}: unknown key `{other}`; expected task-sd, repeat-sd or rate"),
        }
    }
    if assumption.task_sd.is_nan() || assumption.repeat_sd.is_nan() {
        anyhow::bail!("--assume {text}: give both task-sd and repeat-sd");
    }
    Ok(assumption)
}

/// Runs `specgap plan-study`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let options = StudyOptions {
        difference: args.difference,
        power: args.power,
        alpha: args.alpha,
        tests: args.tests,
        max_repeats: args.max_repeats,
        tasks: args.tasks,
        pass_k: args.pass_k,
        simulations: args.simulations,
        seed: args.seed,
        measures: args.measures.clone(),
        select_a: Selection::parse_flag("--a", &args.select_a)?,
        select_b: args.select_b.as_deref().map(|s| Selection::parse_flag("--b", s)).transpose()?,
    };
    let plan = match &args.assume {
        Some(text) => plan_from_assumption(&parse_assumption(text)?, &options)?,
        None => {
            let pilots = args
                .pilots
                .iter()
                .map(|dir| RunData::load(dir).with_context(|| format!("cannot read pilot run {}", dir.display())))
                .collect::<anyhow::Result<Vec<_>>>()?;
            plan_from_pilot(&pilots, &options)?
        }
    };
    let text = match args.format {
        Format::Md => render_plan_markdown(&plan),
        Format::Json => render_plan_json(&plan)?,
    };
    match &args.out {
        Some(path) => fs_err::write(path, text)?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
