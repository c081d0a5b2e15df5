//! `specgap synthesize`: seed 000's task-construction pipeline (`specgap_synth`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use specgap_synth::cli_role::CliRole;
use specgap_synth::handoff::BriefLimits;
use specgap_synth::pipeline::{Config, Limits, Roles, synthesize};
use specgap_synth::prompts::Prompts;
use specgap_synth::role::{ChatEndpoint, Role, RoleName, role_from_spec_with};
use specgap_synth::rollouts::{CALIBRATION_CONDITIONS, RolloutBudget, RolloutError, RolloutSummary, Rollouts};
use specgap_task::SandboxJudge;

const AFTER_HELP: &str = "\
Runs Planner -> Builder -> acceptance checks -> [sufficiency test] -> Auditor -> Calibrator
(seed 000 §4.2). A failing acceptance check, a failing sufficiency test (--implementer: an
implementation from instruction.full.md and the workspace alone, run through the evaluator) or a
`fix` verdict sends the numbered list back to the Builder; a `redesign` sends the Auditor's
reason back to the Planner. With --reference AGENT, the agent runs on the package under full,
partial and literal (--rollouts N each) as a run store in <out>/rollouts/, and the Calibrator
gets the episodes' summaries. Every hand-off, check and verdict goes to
<out>/journal.json; the accepted package is copied to <out>/package.

Roles are `scripted:<file>`, `chat:<model>` or `cli:<adapter>` (cli:claude-code, cli:codex,
..., cli:command=<template>; installed with `specgap agents install`): a cli: role runs the
program once per request in its own sandbox, seeing only its inputs, and writes its hand-off to
/handoff/handoff.json (docs/synthesize.md describes the script and hand-off formats). Every chat
and cli role uses the one endpoint of --base-url / --api-key-env / --model-arg (cli roles: the
model of --model), priced by --prices. Other agent kinds are refused by name.

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
    /// Who plays the Planner (`scripted:<file>`, `chat:<model>` or `cli:<adapter>`).
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
    /// The reference agent of the calibration rollouts: any agent `specgap run --agent` takes
    /// (`replay:<file>`, `chat:<model>`, `cli:<scaffold>`). It runs on the package under full,
    /// partial and literal before the Calibrator answers; without it the Calibrator gets no
    /// rollouts.
    #[arg(long, value_name = "AGENT")]
    pub reference: Option<String>,
    /// Repeats per condition of the calibration rollouts.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rollouts: u32,
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
    /// Base URL of the OpenAI-compatible endpoint every `chat:<model>` role talks to, up to
    /// /v1. Default: http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Environment variable holding that endpoint's API key (unset: no Authorization header).
    /// Default: OPENAI_API_KEY.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// A request field for every chat role's model, key=value (value parsed as JSON when it
    /// parses), e.g. temperature=0. Repeatable.
    #[arg(long = "model-arg", value_name = "KEY=VALUE")]
    pub model_args: Vec<String>,
    /// Prompt + completion tokens all roles and calibration rollouts together may spend; the
    /// synthesis stops after the answer (or the rollouts) that goes over. Default: no cap.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// US dollars all roles and calibration rollouts together may spend (priced by
    /// --prices); the synthesis stops after the answer (or the rollouts) that goes over.
    /// Default: no cap.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Price table, TOML, as `specgap run --prices`: [models."<name>"] input_per_mtok,
    /// output_per_mtok, cached_input_per_mtok. Prices the chat and cli roles and is passed to
    /// the rollouts' run. Without it every cost is 0.
    #[arg(long, value_name = "FILE.toml")]
    pub prices: Option<PathBuf>,
    /// The model of the cli: roles and of a cli: --reference (their spec names the program):
    /// the one model their gateway forwards to --base-url.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Wall time of one cli: role run, in seconds (the program is halted at its end).
    #[arg(long, value_name = "SEC", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub role_wall: u64,
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
    let endpoint = chat_endpoint(&args)?;
    let chat = run_chat_args(&args);
    let runs = args.out.join("roles");
    let role = |spec: &str, name: RoleName| -> anyhow::Result<Box<dyn Role>> {
        if spec.starts_with("cli:") {
            let config = crate::run::cli_agent_config(spec, &chat)?;
            let wall = std::time::Duration::from_secs(args.role_wall);
            return Ok(Box::new(CliRole::new(spec, config, name, runs.clone(), wall)));
        }
        Ok(role_from_spec_with(spec, name, &endpoint)?)
    };
    let mut roles = Roles {
        planner: role(&args.planner, RoleName::Planner).context("--planner")?,
        builder: role(&args.builder, RoleName::Builder).context("--builder")?,
        auditor: role(&args.auditor, RoleName::Auditor).context("--auditor")?,
        calibrator: role(&args.calibrator, RoleName::Calibrator).context("--calibrator")?,
        implementer: args.implementer.as_deref().map(|spec| role(spec, RoleName::Implementer)).transpose().context("--implementer")?,
        reference: args.reference.as_ref().map(|agent| {
            Box::new(RunRollouts {
                agent: agent.clone(),
                repeats: args.rollouts,
                no_sandbox: args.no_sandbox,
                endpoint: endpoint_flags(&args),
            }) as Box<dyn Rollouts>
        }),
    };
    let limits = Limits {
        max_iterations: args.max_iterations.into(),
        max_redesigns: args.max_redesigns.into(),
        max_retries: args.max_retries.into(),
        brief: BriefLimits { requirements: args.requirements.into(), min_withheld: args.min_withheld.into() },
        max_tokens: args.max_tokens,
        max_cost_usd: args.max_cost,
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

/// The endpoint of the `chat:` roles from the flags, its base URL checked up front.
fn chat_endpoint(args: &Args) -> anyhow::Result<ChatEndpoint> {
    let mut endpoint = ChatEndpoint::default();
    if let Some(url) = &args.base_url {
        specgap_agents::chat::client::check_base_url(url).map_err(anyhow::Error::msg).context("--base-url")?;
        endpoint.base_url.clone_from(url);
    }
    if let Some(var) = &args.api_key_env {
        specgap_agents::chat::client::warn_unset_api_key(var, "--api-key-env");
        endpoint.api_key_env.clone_from(var);
    }
    for item in &args.model_args {
        let (key, value) = specgap_agents::chat::parse_model_arg(item).context("--model-arg")?;
        endpoint.model_args.insert(key, value);
    }
    if let Some(path) = &args.prices {
        endpoint.prices = Some(specgap_agents::chat::PriceTable::load(path).context("--prices")?);
    }
    Ok(endpoint)
}

/// `specgap run`'s endpoint flags from ours, for resolving the cli: roles as `--agent` would.
fn run_chat_args(args: &Args) -> crate::run::ChatArgs {
    let mut chat = crate::run::ChatArgs::defaults();
    chat.base_url.clone_from(&args.base_url);
    chat.api_key_env.clone_from(&args.api_key_env);
    chat.model.clone_from(&args.model);
    chat.model_args.clone_from(&args.model_args);
    chat.prices.clone_from(&args.prices);
    chat
}

/// The endpoint flags passed on to the rollouts' `specgap run` (as given to us).
fn endpoint_flags(args: &Args) -> Vec<std::ffi::OsString> {
    let mut flags: Vec<std::ffi::OsString> = Vec::new();
    let mut pass = |flag: &str, value: Option<std::ffi::OsString>| {
        if let Some(value) = value {
            flags.extend([flag.into(), value]);
        }
    };
    pass("--base-url", args.base_url.clone().map(Into::into));
    pass("--api-key-env", args.api_key_env.clone().map(Into::into));
    pass("--prices", args.prices.clone().map(Into::into));
    // `--model` names the model of cli: agents only.
    pass("--model", args.model.clone().filter(|_| args.reference.as_deref().is_some_and(|r| r.starts_with("cli:"))).map(Into::into));
    for item in &args.model_args {
        flags.extend(["--model-arg".into(), item.into()]);
    }
    flags
}

/// The calibration rollouts as a `specgap run` in this process: the reference agent on the
/// package under full, partial and literal, `repeats` each, clean start, into the given store
/// (continued with `--resume` when it exists).
struct RunRollouts {
    agent: String,
    repeats: u32,
    no_sandbox: bool,
    /// `--base-url`, `--api-key-env`, `--model`, `--model-arg`, `--prices` as given.
    endpoint: Vec<std::ffi::OsString>,
}

/// `specgap run`'s flags, parsed as its own command line.
#[derive(Debug, clap::Parser)]
struct RunCommand {
    #[command(flatten)]
    run: crate::run::Args,
}

impl RunRollouts {
    fn argv(&self, package: &std::path::Path, store: &std::path::Path, budget: RolloutBudget) -> Vec<std::ffi::OsString> {
        let mut argv: Vec<std::ffi::OsString> = vec!["specgap run".into()];
        if store.join("run.toml").is_file() {
            argv.extend(["--resume".into(), store.as_os_str().to_owned()]);
        } else {
            argv.push(package.as_os_str().to_owned());
            argv.extend(["--agent".into(), self.agent.clone().into()]);
            argv.extend(["--condition".into(), CALIBRATION_CONDITIONS.join(",").into()]);
            argv.extend(["--start".into(), "clean".into(), "--repeats".into(), self.repeats.to_string().into()]);
            argv.extend(["--out".into(), store.as_os_str().to_owned()]);
            if self.no_sandbox {
                argv.push("--no-sandbox".into());
            }
            argv.extend(self.endpoint.iter().cloned());
        }
        // What the synthesis's --max-cost and --max-tokens leave: the run starts no episode
        // once its cost or its prompt + completion tokens pass them (one job, so the stop falls
        // between two rollouts).
        if let Some(usd) = budget.cost_usd {
            argv.extend(["--max-cost".into(), usd.to_string().into()]);
        }
        if let Some(tokens) = budget.tokens {
            argv.extend(["--max-tokens".into(), tokens.to_string().into()]);
        }
        argv.extend(["--jobs".into(), "1".into(), "--no-report".into()]);
        argv
    }

    fn run_and_read(
        &self,
        package: &std::path::Path,
        store: &std::path::Path,
        budget: RolloutBudget,
    ) -> anyhow::Result<Vec<RolloutSummary>> {
        use clap::Parser as _;
        let command = RunCommand::try_parse_from(self.argv(package, store, budget)).context("the rollouts' run arguments")?;
        crate::run::exec(command.run)?;
        let opened =
            specgap_store::Store::open(store).with_context(|| format!("cannot open the rollouts' run store {}", store.display()))?;
        let mut summaries = Vec::new();
        for row in opened.episodes()? {
            // Every attempt and role of the episode counts toward the synthesis's caps.
            let mut usage = specgap_protocol::event::Usage::default();
            for spent in opened.episode_detail(&row.id)?.map(|d| d.usage).unwrap_or_default() {
                usage.add(&spent.usage);
            }
            summaries.push(RolloutSummary {
                episode_dir: opened.episode_dir(&row.id),
                condition: row.condition.clone(),
                repeat: row.repeat,
                status: row.status.as_str().to_owned(),
                end_reason: row.end_reason.map(|r| r.as_str().to_owned()),
                score: row.final_score,
                success: row.final_success,
                submissions: row.submissions,
                turns: row.turns,
                rollout: row.id,
                usage,
            });
        }
        let rank = |condition: &str| CALIBRATION_CONDITIONS.iter().position(|c| *c == condition).unwrap_or(CALIBRATION_CONDITIONS.len());
        summaries.sort_by(|a, b| (rank(&a.condition), a.repeat, &a.rollout).cmp(&(rank(&b.condition), b.repeat, &b.rollout)));
        if summaries.is_empty() {
            anyhow::bail!("the run recorded no episode");
        }
        Ok(summaries)
    }
}

impl Rollouts for RunRollouts {
    fn label(&self) -> String {
        format!("{} x {} per condition", self.agent, self.repeats)
    }

    fn run(
        &mut self,
        package: &std::path::Path,
        store: &std::path::Path,
        budget: RolloutBudget,
    ) -> Result<Vec<RolloutSummary>, RolloutError> {
        self.run_and_read(package, store, budget).map_err(|err| RolloutError {
            package: package.to_owned(),
            store: store.to_owned(),
            source: err.into(),
        })
    }
}
