//! `specgap run`: run agents through episodes on a suite and record everything in a run store.
//!
//! ```text
//! specgap run [SUITE...] --agent A[,B] --condition C[,D] --start clean|residual:<id>|residual:all
//!             --repeats N --jobs J --seed S --out DIR [axis overrides] [budgets]
//!             [--user relay] [--shard i/n|auto [--shards N]] [--publish DIR] [--retries N] [--no-sandbox]
//!             [--require-limits]
//! specgap run --resume DIR [--jobs J] [--publish DIR] [--require-limits]
//! ```
//!
//! Without a suite, the bundled example suite runs with the scripted agents (gold, literal,
//! starter) under `partial,full,literal,hidden,blind` from `clean,residual:all` into `runs/<timestamp>` (with a `runs/latest` link),
//! offline, and the report is printed. The planning, worker pool, retries and stop handling
//! live in `specgap_engine::runner`; this module resolves flags into a [`RunConfig`], shows
//! progress and handles Ctrl-C.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use specgap_engine::condition::{BudgetFlags, Condition, Overrides, Start, parse_profile};
use specgap_engine::runner::{
    self, CpuPerSandbox, EpisodeReport, PlanInput, PlannedEpisode, RunInputs, RunObserver, RunOptions, Shard, SpendingLimit,
};
use specgap_protocol::package::Budget;
use specgap_protocol::run::{ComponentRef, RunConfig, TaskRef};
use specgap_store::{Status, Store};
use specgap_task::TaskPackage;

mod agents;
mod config;
mod environments;
mod protocol;
mod scale_out;

/// Exit code after Ctrl-C (128 + SIGINT), as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit code when episodes ran but none finished: every one ended in an infrastructure or
/// evaluation error (a dead model endpoint, a broken evaluator), so the run has no result.
pub const EXIT_NO_RESULT: u8 = 3;
/// Exit code when the run ended before every planned episode ran because its model cost
/// passed `--max-cost` or its prompt + completion tokens passed `--max-tokens` (or the cap
/// stored in run.toml): the held-back episodes run with `specgap run --resume DIR
/// --max-cost <higher>` (or `--max-tokens <higher>`; docs/decisions.md "Exit codes").
pub const EXIT_HELD_BACK: u8 = 4;

/// Examples and exit status, printed after `specgap run --help`'s flags.
pub const HELP_AFTER: &str = "\
Examples:
  specgap run                          the bundled suite with scripted agents, offline
  specgap run examples/tasks/payment-retry --agent scripted:gold --condition partial,full
  specgap run my-suite --agent chat:qwen2.5-coder --base-url http://localhost:8000/v1
  specgap run my-suite --shard 1/4 --out runs/s1   (then: specgap merge runs/s* --out runs/all)
  specgap run my-suite --shard auto --out /tmp/shard --publish /shared/study/shards
                                       in a Slurm array or Kubernetes Indexed Job (docs/scale-out.md)
  specgap run --resume runs/latest     continue an interrupted or failed run

Exit status: 0 when every planned episode ran (episodes that ended in errors are reported apart);
3 when episodes ran but none finished (every one ended in an infrastructure or evaluation error,
e.g. an unreachable model server); 4 when --max-cost held episodes back (resumable with a higher
--max-cost); 130 when interrupted (resumable); 2 on a usage or harness error.";

/// The agents of a run without `--agent`.
pub const DEFAULT_AGENTS: &str = "scripted:gold,scripted:literal,scripted:starter";
/// The conditions of a run without `--condition`.
pub const DEFAULT_CONDITIONS: &str = "partial,full,literal,hidden,blind";
/// The starts of a run without `--start`: every task from its clean workspace, and tasks with
/// residual states from each of them too (`residual:all` expands to nothing elsewhere).
pub const DEFAULT_STARTS: &str = "clean,residual:all";

/// Arguments of `specgap run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Suites: directories holding task packages at any depth, or single packages. Default:
    /// the bundled example suite (`examples/tasks`).
    pub suites: Vec<PathBuf>,
    /// Agents, comma-separated: scripted:gold|literal|starter|mutant:<id>, replay:<file or
    /// RUN/episodes/<id>>, chat:<model> (see the chat flags below), and real CLI agents behind
    /// the gateway (installed with `specgap agents install`; see --model, --base-url):
    /// cli:mini-swe-agent, cli:claude-code, cli:codex, cli:opencode, cli:gemini-cli, cli:openhands
    /// (seed 002's OpenHands: local runtime, 200 agent steps), each with an optional @<version>, and cli:command=<template> for your own program (docs/adapters.md).
    /// Default: scripted:gold,scripted:literal,scripted:starter.
    #[arg(long = "agent", value_delimiter = ',')]
    pub agents: Vec<String>,
    /// Condition presets, comma-separated: partial, full, literal, plan, blind, hidden, interact,
    /// interact-req, full-info, oracle:R. Default: partial,full,literal,hidden,blind (owner
    /// tasks run the first three; every kind of task, delivery and test-scored included, runs
    /// `hidden` and `blind`).
    #[arg(long = "condition", value_delimiter = ',')]
    pub conditions: Vec<String>,
    /// Starts, comma-separated: clean, residual:<id>, residual:all. Default: clean,residual:all.
    #[arg(long = "start", value_delimiter = ',')]
    pub starts: Vec<String>,
    /// Repeats of each task × agent × condition × start. Default: 1.
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Episodes run at once. Default: the number of CPUs.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run seed; every random choice derives from it. Default: 0.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The run directory. Default: runs/<UTC timestamp>, linked from runs/latest.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Submission budget, overriding every listed preset.
    #[arg(long)]
    pub submissions: Option<u32>,
    /// Offer `ask_user` (on) or withdraw it (off), overriding every listed preset.
    #[arg(long, value_parser = ["on", "off"])]
    pub ask: Option<String>,
    /// Consequence feedback on or off, overriding every listed preset.
    #[arg(long, value_parser = ["on", "off"])]
    pub feedback: Option<String>,
    /// Tool profile, overriding every listed preset.
    #[arg(long, value_parser = ["owner", "shell"])]
    pub profile: Option<String>,
    /// The hard clarify-first gate of interact-req (editing, running and submitting withheld
    /// until the agent has asked and says it has what it needs). Default: off, as in seed 002,
    /// where interact-req only prompts; on adds `+gate=on` to the condition.
    #[arg(long = "clarify-gate", value_parser = ["on", "off"])]
    pub clarify_gate: Option<String>,
    /// Turn budget per episode (overrides task.toml [budget]).
    #[arg(long)]
    pub turns: Option<u32>,
    /// Tool-call budget per episode.
    #[arg(long)]
    pub tool_calls: Option<u32>,
    /// Wall-clock budget per episode, in seconds.
    #[arg(long)]
    pub wall_sec: Option<u64>,
    /// Clarification rounds per delivery episode (an ask_user call or a text exchange of
    /// questions each); questions beyond it get a reply to proceed with best judgement, and
    /// the episode goes on. Default: 30.
    #[arg(long, value_name = "N")]
    pub clarification_rounds: Option<u32>,
    /// The simulated owner / customer: relay, or chat:<model> (a model playing them; see the
    /// --user-* flags). Default: relay.
    #[arg(long)]
    pub user: Option<String>,
    /// A panel file (README "Model panels"): its models detect, by majority vote, the
    /// questions in replies without a `## Questions for the client` heading under delivery
    /// conditions (seed 002 A.9.3), instead of the deterministic question-mark rule. Part of
    /// the user's configuration, so of the episode key.
    #[arg(long, value_name = "FILE")]
    pub detector_panel: Option<PathBuf>,
    /// Replace specgap's prompts by the files of DIR, each named after the prompt it replaces:
    /// system prompts evidence.md, literal.md, plan.md, plan_execute.md, neutral.md, delivery.md; condition
    /// blocks delivery_hidden.md, delivery_interact.md, delivery_interact_req.md,
    /// delivery_full_info.md, delivery_oracle.md; the reply past the clarification-round limit
    /// round_limit_reply.md; the harness's messages no_tool_reminder.md,
    /// no_tool_reminder_goes_on.md, refusal_reminder.md, continuation.md, plan_saved.md,
    /// unlock_acknowledgement.md; tool descriptions tool_list_files.md, tool_read_text.md,
    /// tool_write_text.md, tool_replace_text.md, tool_run_project.md, tool_run_experiment.md,
    /// tool_bash.md, tool_ask_user.md, tool_submit.md, tool_write_plan.md; chat owner / customer prompts owner.md,
    /// owner_opening.md, owner_observation.md, owner_question.md, customer.md,
    /// customer_opening.md, customer_question.md (docs/prompts.md: what each is and its
    /// placeholders). Any other name in DIR is an error. The texts and their sha256 are stored
    /// in run.toml and key the episodes; --resume uses the stored texts.
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// The paper protocol the run follows: tiganeval (seed 000), swe-residual (seed 001),
    /// fde-bench (seed 002), or the path of a custom protocol file (docs/run-config.md
    /// "Custom protocols"). It sets the budgets, the end rules, the model roles and the
    /// repeats, and the run is refused when a condition or start is not the protocol's or a model
    /// role would be played offline (unless --allow-stand-in). Without it each condition runs
    /// under its paper's protocol, and the report names every deviation.
    #[arg(long, value_name = "NAME|FILE")]
    pub protocol: Option<String>,
    /// Run a named protocol with offline stand-ins for its model roles (the relay owner or
    /// customer, the question-mark rule); the report names each as a deviation.
    #[arg(long)]
    pub allow_stand_in: bool,
    /// Continue the run in DIR with its own configuration (run.toml): only episodes never
    /// begun, unfinished, or failed with an infrastructure or evaluation error run again.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run only shard i of n (1-based): the episodes whose position in the run's plan is
    /// i−1 modulo n. `auto` reads the shard from a Kubernetes Indexed Job
    /// (JOB_COMPLETION_INDEX, 0-based, with --shards N or SPECGAP_SHARDS) or a Slurm array
    /// (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT). Merge the shards with `specgap merge`.
    #[arg(long, value_name = "i/n|auto")]
    pub shard: Option<String>,
    /// With --shard auto: the number of shards (a Kubernetes Indexed Job's completions; for
    /// a Slurm array, a check of SLURM_ARRAY_TASK_COUNT).
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// When the run has ended, copy it to DIR/shard-<i>-of-<n> (a shard) or DIR/<name of
    /// --out>: the SQLite WAL checkpointed, copied under a temporary name in DIR, fsynced and
    /// renamed, so DIR (shared storage) never holds half a run; an existing copy is never
    /// replaced (the next is DIR/<name>.2). Keep --out on local disk (SQLite over NFS is
    /// unsafe).
    #[arg(long, value_name = "DIR")]
    pub publish: Option<PathBuf>,
    /// Retries of an episode after an infrastructure or evaluation error. Default: 2.
    #[arg(long)]
    pub retries: Option<u32>,
    /// Run commands without bubblewrap (debugging only: the agent is then not contained).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Refuse to run when the per-command process and memory limits (cgroup `pids` and
    /// `memory`, v1 or v2) cannot be applied here — as a non-root user without a delegated
    /// cgroup, or in a container whose /sys/fs/cgroup is read-only — instead of running
    /// without them after a warning (docs/scale-out.md "Process and memory limits").
    #[arg(long)]
    pub require_limits: bool,
    /// Cap on the apparent size (sparse files count whole) of all files in an episode's
    /// workspace, with an image episode's machine changes, in bytes; measured after every agent
    /// turn and before every diff. Over it the episode ends `workspace_limit`, scored, without
    /// reading the workspace. Default: 536870912 (512 MiB). Not stored: give it again on
    /// --resume.
    #[arg(long, value_name = "BYTES")]
    pub max_workspace_bytes: Option<u64>,
    /// Cap on the apparent size of any one file in the workspace, in bytes (ends the episode
    /// `workspace_limit`). Default: 67108864 (64 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_file_bytes: Option<u64>,
    /// Cap on one submission's diff, in bytes (ends the episode `workspace_limit`, the diff not
    /// stored). Default: 67108864 (64 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_diff_bytes: Option<u64>,
    /// CPU time each sandbox (command, session, agent, evaluator) may use: a number of cores
    /// (like 1.5; at least 0.01), or `off` for no limit. Applied as a cgroup `cpu` quota
    /// (`cpu.max` on v2, `cpu.cfs_quota_us` on v1) per 100 ms period; where the `cpu`
    /// controller is not usable, `run` says so once and sandboxes run at nice 10 instead.
    /// Default: the machine's cores divided by --jobs (at least 0.1). Not stored: give it again
    /// on --resume.
    #[arg(long, value_name = "CORES|off", value_parser = parse_cpu_per_sandbox)]
    pub cpu_per_sandbox: Option<CpuPerSandbox>,
    /// Do not print the report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// A run configuration file (docs/run-config.md): agents with their own endpoints, the
    /// user, conditions, starts, repeats, seed, budgets. Flags that declare agents, the user or
    /// the matrix (SUITE, --agent, --condition, --start, --user, endpoint flags) conflict with
    /// it; the scalar flags (--repeats, --seed, --retries, budgets, axis overrides, --shard,
    /// --no-sandbox) override the file's values.
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// Resolve the run (flags or --config), print the resolved run.toml and the plan's size,
    /// and stop: nothing is created or run. `cli:` agents need not be installed: those that
    /// are not are named with their `specgap agents install` command.
    #[arg(long)]
    pub dry_run: bool,
    /// Where episodes' scratch files go (materialized workspaces, frozen submissions,
    /// evaluator copies; removed as each episode ends). Default: /dev/shm when it is a
    /// memory file system with room for the run, else the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Flags of `chat:<model>` agents and users (issue "chat agent").
    #[command(flatten)]
    pub chat: ChatArgs,
}

// ---------------------------------------------------------------------------------------
// Chat agent and LLM user flags (owned by the chat-agent work; see specgap_agents::chat).
// ---------------------------------------------------------------------------------------

/// The configuration of the `cli:` agent `spec` on the endpoint of `chat` (`--model`,
/// `--base-url`, `--api-key-env`, `--model-arg`, `--prices`), resolved exactly as `--agent`
/// resolves it (installed version, tree hash, ask channel): `specgap synthesize` plays its
/// `cli:` roles with it.
///
/// # Errors
/// As `--agent cli:…`: an unknown adapter, a missing installation, no `--model`, an
/// unreadable price table.
pub fn cli_agent_config(spec: &str, chat: &ChatArgs) -> anyhow::Result<specgap_agents::cli::CliConfig> {
    let component = agents::component(spec, chat, &specgap_engine::prompt_files::Replacements::default(), agents::MissingInstall::Refuse)?;
    Ok(specgap_agents::cli::CliConfig::from_table(&component.config)?)
}

/// Flags of `--agent chat:<model>` and `--user chat:<model>`.
#[derive(Debug, Clone, clap::Args)]
pub struct ChatArgs {
    /// Base URL of the agent's OpenAI-compatible endpoint, up to /v1 (for a cli: agent, the
    /// upstream its model gateway forwards to). Default: http://127.0.0.1:8000/v1.
    #[arg(long)]
    pub base_url: Option<String>,
    /// The model of cli: agents (their spec names the scaffold): the one model their gateway
    /// forwards.
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable holding the agent endpoint's API key (unset: no Authorization
    /// header). Default: OPENAI_API_KEY.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// A request field for the agent model, key=value (value parsed as JSON when it parses),
    /// e.g. temperature=0, max_tokens=4096, seed=1, reasoning_effort=low. Repeatable.
    #[arg(long = "model-arg", value_name = "KEY=VALUE")]
    pub model_args: Vec<String>,
    /// Streaming (SSE) responses.
    #[arg(long)]
    pub stream: bool,
    /// For models without native tool calls: tools described in the system prompt, calls
    /// parsed from ```tool_call blocks.
    #[arg(long)]
    pub emulate_tools: bool,
    /// The agent model's context window in tokens; our estimate (characters / 4) above it ends
    /// the episode with context_overflow.
    #[arg(long)]
    pub context_tokens: Option<u64>,
    /// Seconds before a model request times out (then it is retried). Default: 600.
    #[arg(long)]
    pub request_timeout: Option<f64>,
    /// Retries of a failed model request (429, 5xx, timeouts, broken responses) before the
    /// episode is an infrastructure error. Default: 6.
    #[arg(long)]
    pub max_retries: Option<u32>,
    /// Price table, TOML: [models."<name>"] input_per_mtok, output_per_mtok, cached_input_per_mtok.
    #[arg(long, value_name = "FILE.toml")]
    pub prices: Option<PathBuf>,
    /// Stop starting new episodes once the run's summed model cost passes this many US dollars.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop starting new episodes once the run's summed prompt + completion tokens (every
    /// model request's input and output tokens, all roles) pass this many.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// How a cli: agent's questions reach the customer: text (under delivery conditions: asked in
    /// its reply, answered by resuming its session; no ask_user tool), mcp (the harness's ask_user tool and command)
    /// or native (the CLI's own question tool, answered through its own server; opencode
    /// only). Part of the episode key. Default: the adapter's (text for claude-code, codex,
    /// gemini-cli and openhands, whose user-response callback it serves; native for opencode; mcp for mini-swe-agent and command).
    #[arg(long, value_name = "text|native|mcp", value_parser = parse_ask_channel)]
    pub ask_channel: Option<specgap_agents::cli::channel::AskChannel>,
    /// Base URL of the user model's endpoint (default: --base-url).
    #[arg(long)]
    pub user_base_url: Option<String>,
    /// Environment variable holding the user endpoint's API key (default: --api-key-env).
    #[arg(long)]
    pub user_api_key_env: Option<String>,
    /// A request field for the user model, key=value. Repeatable.
    #[arg(long = "user-model-arg", value_name = "KEY=VALUE")]
    pub user_model_args: Vec<String>,
}

fn parse_ask_channel(name: &str) -> Result<specgap_agents::cli::channel::AskChannel, String> {
    name.parse().map_err(|e: specgap_agents::cli::channel::UnknownAskChannel| e.to_string())
}

impl Args {
    /// Names of the flags given that `--resume` ignores.
    fn flags_resume_ignores(&self) -> Vec<&'static str> {
        let given = [
            ("SUITE", !self.suites.is_empty()),
            ("--agent", !self.agents.is_empty()),
            ("--condition", !self.conditions.is_empty()),
            ("--start", !self.starts.is_empty()),
            ("--repeats", self.repeats.is_some()),
            ("--seed", self.seed.is_some()),
            ("--out", self.out.is_some()),
            ("--submissions", self.submissions.is_some()),
            ("--ask", self.ask.is_some()),
            ("--feedback", self.feedback.is_some()),
            ("--profile", self.profile.is_some()),
            ("--clarify-gate", self.clarify_gate.is_some()),
            ("--turns", self.turns.is_some()),
            ("--tool-calls", self.tool_calls.is_some()),
            ("--wall-sec", self.wall_sec.is_some()),
            ("--clarification-rounds", self.clarification_rounds.is_some()),
            ("--user", self.user.is_some()),
            ("--detector-panel", self.detector_panel.is_some()),
            ("--prompts", self.prompts.is_some()),
            ("--protocol", self.protocol.is_some()),
            ("--allow-stand-in", self.allow_stand_in),
            ("--shard", self.shard.is_some()),
            ("--shards", self.shards.is_some()),
            ("--retries", self.retries.is_some()),
            ("--no-sandbox", self.no_sandbox),
        ];
        given.into_iter().filter(|(_, g)| *g).map(|(name, _)| name).collect()
    }
}

/// Everything a run needs, resolved from flags or from a stored `run.toml`.
struct Resolved {
    config: RunConfig,
    /// The protocol `--protocol` named, which holds every episode; `None`: each condition's
    /// paper protocol.
    protocol: Option<specgap_rules::Protocol>,
    tasks: Vec<TaskPackage>,
    conditions: Vec<Condition>,
    shard: Option<Shard>,
}

/// Runs `specgap run`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    if args.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let jobs = args.jobs.unwrap_or_else(default_jobs).max(1);
    if let Some(dir) = &args.work_dir {
        fs_err::create_dir_all(dir).context("cannot prepare --work-dir")?;
    }
    if args.resume.is_some() && args.config.is_some() {
        bail!("--resume continues a run with its stored configuration (run.toml); --config cannot be combined with it");
    }
    if args.dry_run {
        let mut resolved = match &args.resume {
            Some(dir) => {
                let store = Store::open_for_resume(dir).with_context(|| format!("cannot resume {}", dir.display()))?;
                warn_unset_stored_keys(store.config(), dir);
                resolve_stored(store.config())?
            }
            None => resolve_new(&args)?,
        };
        let plan = plan(&resolved)?;
        // The run.toml a run would write, plan hash included (a resumed one has it already).
        if args.resume.is_none() {
            scale_out::record_plan(&mut resolved.config, &plan);
        }
        print!("{}", toml::to_string(&resolved.config).context("cannot print the resolved configuration")?);
        eprintln!(
            "dry run: {} episode{} planned, {} combination{} not applicable; nothing was created",
            plan.episodes.len(),
            if plan.episodes.len() == 1 { "" } else { "s" },
            plan.not_applicable.len(),
            if plan.not_applicable.len() == 1 { "" } else { "s" }
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Before any store is made or opened: a refusal leaves nothing behind.
    scale_out::check_limits(args.require_limits, args.cpu_per_sandbox != Some(CpuPerSandbox::Off))?;
    let (out, store, resolved, plan, resuming, lock) = match &args.resume {
        Some(dir) => {
            let ignored = args.flags_resume_ignores();
            if !ignored.is_empty() {
                eprintln!("note: --resume uses the run's own configuration (run.toml); ignoring {}", ignored.join(", "));
            }
            let store = Store::open_for_resume(dir).with_context(|| format!("cannot resume {}", dir.display()))?;
            let lock = specgap_store::lock_runner(dir)?;
            warn_unset_stored_keys(store.config(), dir);
            let resolved = resolve_stored(store.config())?;
            let plan = plan(&resolved)?;
            scale_out::check_resumed_plan(store.config(), &plan)?;
            environments::build_missing(&resolved.tasks)?;
            environments::check_cli_agents(&resolved.config.agents, &resolved.tasks)?;
            (dir.clone(), store, resolved, plan, true, lock)
        }
        None => {
            let mut resolved = resolve_new(&args)?;
            // Plan before creating the store: a run where nothing applies leaves nothing behind.
            let plan = plan(&resolved)?;
            scale_out::record_plan(&mut resolved.config, &plan);
            environments::build_missing(&resolved.tasks)?;
            environments::check_cli_agents(&resolved.config.agents, &resolved.tasks)?;
            let (out, link_latest) = match &args.out {
                Some(out) => (out.clone(), false),
                None => (default_out_dir()?, true),
            };
            scale_out::warn_if_network_store(&out);
            let (store, lock) =
                Store::create_for_runner(&out, &resolved.config).with_context(|| format!("cannot create run {}", out.display()))?;
            if link_latest {
                link_latest_run(&out);
            }
            (out, store, resolved, plan, false, lock)
        }
    };
    // Held until the run ends: one runner per store (a second would run the same episodes).
    let _runner = lock;
    let limits = SpendingCaps::of(&args.chat, store.config());
    let caps = [args.max_workspace_bytes, args.max_file_bytes, args.max_diff_bytes];
    let cpu_per_sandbox = args.cpu_per_sandbox.unwrap_or_default();
    let how = Execution { jobs, resuming, limits, work_dir: args.work_dir.clone(), caps, cpu_per_sandbox };
    let outcome = run_plan(&store, &resolved, &plan, &how)?;
    if outcome.interrupted {
        eprintln!(
            "interrupted: finished episodes are kept in {}. Continue with:\n  specgap run --resume {}{}",
            out.display(),
            shell_word(&out.display().to_string()),
            args.publish.as_ref().map_or(String::new(), |dir| format!(" --publish {}", shell_word(&dir.display().to_string())))
        );
        if args.publish.is_some() {
            eprintln!("not published: only a run that has ended is copied to --publish");
        }
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if resuming && outcome.held_back == 0 && store.record_merge_completed()? {
        // Every planned episode was run: the shards a partial merge lacked are held now.
        eprintln!("the run now holds every shard its merge lacked; run.toml no longer lists missing shards");
    }
    if let Some(dir) = &args.publish {
        scale_out::publish(&store, dir)?;
    }
    eprintln!("{}", outcome.summary_line);
    if !args.no_report {
        print!("{}", crate::report::render(&out, crate::report::Format::Md)?);
    }
    eprintln!("run stored in {}", out.display());
    if outcome.only_errors {
        eprintln!(
            "error: no episode finished; every one ended in an infrastructure or evaluation error (see the report's error sections or `specgap show`)"
        );
        return Ok(ExitCode::from(EXIT_NO_RESULT));
    }
    if outcome.held_back > 0
        && let Some(limit) = outcome.limit_reached
    {
        eprintln!("{}", held_back_message(outcome.held_back, limit, &limits, &out));
        return Ok(ExitCode::from(EXIT_HELD_BACK));
    }
    Ok(ExitCode::SUCCESS)
}

/// The spending limits this invocation runs under: `--max-cost` and `--max-tokens`, each
/// falling back to the cap stored in run.toml, so a resumed run keeps its caps unless a flag
/// gives a new one.
#[derive(Debug, Clone, Copy)]
struct SpendingCaps {
    /// US dollars.
    max_cost: Option<f64>,
    /// Prompt + completion tokens.
    max_tokens: Option<u64>,
}

impl SpendingCaps {
    fn of(chat: &ChatArgs, stored: &RunConfig) -> SpendingCaps {
        SpendingCaps { max_cost: chat.max_cost.or(stored.max_cost_usd), max_tokens: chat.max_tokens.or(stored.max_tokens) }
    }

    /// `limit`'s cap as messages show it (`$0.5`, `600`).
    fn shown(&self, limit: SpendingLimit) -> String {
        let shown = match limit {
            SpendingLimit::Cost => self.max_cost.map(|usd| format!("${usd}")),
            SpendingLimit::Tokens => self.max_tokens.map(|tokens| tokens.to_string()),
        };
        shown.unwrap_or_else(|| "its cap".to_string())
    }
}

/// What `specgap run` says when it exits with [`EXIT_HELD_BACK`]: how many episodes the
/// spending limit `limit` held back and the command that runs them.
fn held_back_message(held_back: usize, limit: SpendingLimit, caps: &SpendingCaps, out: &Path) -> String {
    let flag = limit.flag();
    format!(
        "incomplete: {held_back} planned episode{} not started because {} passed {flag} {}. Continue with:\n  specgap run --resume {} {flag} <higher>",
        if held_back == 1 { " was" } else { "s were" },
        limit.measure(),
        caps.shown(limit),
        shell_word(&out.display().to_string())
    )
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// What a new run is made of, from flags or from a run configuration file, before the suite
/// is loaded and the conditions parsed.
struct RunSpec {
    suites: Vec<PathBuf>,
    agents: Vec<ComponentRef>,
    user: ComponentRef,
    conditions: Vec<String>,
    overrides: Overrides,
    starts: Vec<String>,
    shard: Option<String>,
    /// `--shards N`: the shard count that goes with `--shard auto` on Kubernetes.
    shards: Option<u32>,
    /// `--repeats`; `None`: the named protocol's, else 1.
    repeats: Option<u32>,
    seed: u64,
    retries: u32,
    sandbox: bool,
    budget: Budget,
    clarification_rounds: Option<u32>,
    /// `--protocol`.
    protocol: Option<String>,
    /// No start was given: the defaults, which a named protocol narrows to its own starts.
    starts_defaulted: bool,
    /// No condition was given: the defaults, which a named protocol narrows to its own.
    conditions_defaulted: bool,
    /// `--allow-stand-in`.
    allow_stand_in: bool,
}

/// Resolves a new run from its flags, or from `--config` and the flags that may go with it.
fn resolve_new(args: &Args) -> anyhow::Result<Resolved> {
    refuse_zero_budget_flags(args)?;
    let spec = match &args.config {
        Some(path) => spec_from_file(args, path)?,
        None => spec_from_flags(args)?,
    };
    let mut resolved = build(spec)?;
    // Stored so that --resume keeps the caps (docs/decisions.md, chat agents' `--max-cost`,
    // "run: --max-tokens").
    resolved.config.max_cost_usd = args.chat.max_cost;
    resolved.config.max_tokens = args.chat.max_tokens;
    Ok(resolved)
}

/// Refuses `--wall-sec 0` and `--clarification-rounds 0`: neither is "no cap" (a protocol's
/// own `0` is, inside its rule table, but a user's 0 would end every episode at once or answer
/// no question; docs/decisions.md "Run configuration: zero budgets are refused").
fn refuse_zero_budget_flags(args: &Args) -> anyhow::Result<()> {
    if args.wall_sec == Some(0) {
        bail!("--wall-sec 0: expected at least 1 second (leave the flag out for the protocol's wall clock)");
    }
    if args.clarification_rounds == Some(0) {
        bail!("--clarification-rounds 0: expected at least 1 round (to withdraw asking, use --ask off or the hidden condition)");
    }
    Ok(())
}

fn flag_overrides(args: &Args) -> Overrides {
    Overrides {
        submissions: args.submissions,
        ask: args.ask.as_deref().map(|v| v == "on"),
        feedback: args.feedback.as_deref().map(|v| v == "on"),
        profile: args.profile.as_deref().and_then(parse_profile),
        gate: args.clarify_gate.as_deref().map(|v| v == "on"),
    }
}

/// Warns about each API key variable run.toml in `dir` names (a `chat` agent's or user's
/// `api_key_env`, a `cli` agent's `endpoint.api_key_env`) that is not set.
fn warn_unset_stored_keys(config: &RunConfig, dir: &Path) {
    let components = config.agents.iter().map(|a| ("agent", a)).chain(config.users.iter().map(|u| ("user", u)));
    for (role, component) in components {
        let table = component.config.get("endpoint").and_then(toml::Value::as_table).unwrap_or(&component.config);
        if let Some(var) = table.get("api_key_env").and_then(toml::Value::as_str) {
            let source = format!("`api_key_env` of {role} {} in {}", component.label(), dir.join("run.toml").display());
            specgap_agents::chat::client::warn_unset_api_key(var, &source);
        }
    }
}

/// A dry run plans without the `cli:` agents' installations; a real run needs them.
fn missing_install(args: &Args) -> agents::MissingInstall {
    if args.dry_run { agents::MissingInstall::Note } else { agents::MissingInstall::Refuse }
}

/// The run the flags describe.
fn spec_from_flags(args: &Args) -> anyhow::Result<RunSpec> {
    let agent_specs = if args.agents.is_empty() { split_list(DEFAULT_AGENTS) } else { clean_list(&args.agents) };
    let agent_specs: Vec<String> = agent_specs.iter().map(|spec| absolute_replay_path(spec)).collect::<anyhow::Result<_>>()?;
    let prompts = agents::prompt_replacements(args.prompts.as_deref())?;
    Ok(RunSpec {
        suites: args.suites.clone(),
        agents: agent_specs
            .iter()
            .map(|spec| agents::component(spec, &args.chat, &prompts.system, missing_install(args)))
            .collect::<anyhow::Result<Vec<_>>>()
            .and_then(|mut agents| {
                agents::name_agents_portably(&mut agents);
                config::check_unique_labels(&agents)?;
                Ok(agents)
            })?,
        user: {
            let user = agents::user_component(args.user.as_deref().unwrap_or("relay"), &args.chat, &prompts.user)?;
            match &args.detector_panel {
                Some(file) => agents::with_detector(user, file)?,
                None => user,
            }
        },
        conditions: if args.conditions.is_empty() { split_list(DEFAULT_CONDITIONS) } else { clean_list(&args.conditions) },
        overrides: flag_overrides(args),
        starts: if args.starts.is_empty() { split_list(DEFAULT_STARTS) } else { clean_list(&args.starts) },
        starts_defaulted: args.starts.is_empty(),
        conditions_defaulted: args.conditions.is_empty(),
        shard: args.shard.clone(),
        shards: args.shards,
        repeats: args.repeats,
        seed: args.seed.unwrap_or(0),
        retries: args.retries.unwrap_or(2),
        sandbox: !args.no_sandbox,
        budget: Budget { turns: args.turns, tool_calls: args.tool_calls, wall_sec: args.wall_sec },
        clarification_rounds: args.clarification_rounds,
        protocol: args.protocol.clone(),
        allow_stand_in: args.allow_stand_in,
    })
}

/// Flags that declare what the file declares: given with `--config`, they are refused.
fn flags_conflicting_with_config(args: &Args) -> Vec<&'static str> {
    let mut given: Vec<&'static str> = [
        ("SUITE", !args.suites.is_empty()),
        ("--agent", !args.agents.is_empty()),
        ("--condition", !args.conditions.is_empty()),
        ("--start", !args.starts.is_empty()),
        ("--user", args.user.is_some()),
        ("--prompts", args.prompts.is_some()),
        ("--detector-panel", args.detector_panel.is_some()),
    ]
    .into_iter()
    .filter(|(_, g)| *g)
    .map(|(name, _)| name)
    .collect();
    given.extend(args.chat.flags_given());
    given
}

fn on_off(value: Option<&str>, key: &str) -> anyhow::Result<Option<bool>> {
    match value {
        None => Ok(None),
        Some("on") => Ok(Some(true)),
        Some("off") => Ok(Some(false)),
        Some(other) => bail!("overrides.{key} must be \"on\" or \"off\", not \"{other}\""),
    }
}

/// The run a configuration file describes, with the scalar flags given overriding its values
/// (docs/run-config.md).
fn spec_from_file(args: &Args, path: &Path) -> anyhow::Result<RunSpec> {
    let conflicting = flags_conflicting_with_config(args);
    if !conflicting.is_empty() {
        bail!(
            "{} cannot be combined with --config: the file declares the agents, the user, the prompts, the suites, conditions and starts (edit {} instead)",
            conflicting.join(", "),
            path.display()
        );
    }
    let file = config::read(path)?;
    let dir = fs_err::canonicalize(path)?.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let prompts = agents::prompt_replacements(
        file.prompts.as_deref().map(|p| if Path::new(p).is_absolute() { PathBuf::from(p) } else { dir.join(p) }).as_deref(),
    )?;
    let context = config::FileContext {
        file: path,
        prices: config::load_prices(&file, &dir)?,
        dir: &dir,
        prompts: &prompts,
        missing_install: missing_install(args),
    };
    if file.agents.is_empty() {
        bail!("{} declares no agent; add at least one [[agent]] (docs/run-config.md)", path.display());
    }
    let mut agents =
        file.agents.iter().enumerate().map(|(i, entry)| config::agent_component(i, entry, &context)).collect::<anyhow::Result<Vec<_>>>()?;
    agents::name_agents_portably(&mut agents);
    config::check_unique_labels(&agents)?;
    let mut user = config::user_component(file.user.as_ref(), &context)?;
    if let Some(panel) = file.user.as_ref().and_then(|u| u.detector_panel.as_deref()) {
        user = agents::with_detector(user, &context.path(panel))?;
    }
    let profile = match file.overrides.profile.as_deref() {
        None => None,
        Some(name) => {
            Some(parse_profile(name).with_context(|| format!("overrides.profile must be \"owner\" or \"shell\", not \"{name}\""))?)
        }
    };
    let from_file = Overrides {
        submissions: file.overrides.submissions,
        ask: on_off(file.overrides.ask.as_deref(), "ask")?,
        feedback: on_off(file.overrides.feedback.as_deref(), "feedback")?,
        profile,
        gate: on_off(file.overrides.clarify_gate.as_deref(), "clarify_gate")?,
    };
    let flags = flag_overrides(args);
    let overrides = Overrides {
        submissions: flags.submissions.or(from_file.submissions),
        ask: flags.ask.or(from_file.ask),
        feedback: flags.feedback.or(from_file.feedback),
        profile: flags.profile.or(from_file.profile),
        gate: flags.gate.or(from_file.gate),
    };
    let list_or = |items: &[String], default: &str| if items.is_empty() { split_list(default) } else { clean_list(items) };
    Ok(RunSpec {
        suites: file.suites.iter().map(|s| context.path(s)).collect(),
        agents,
        user,
        conditions: list_or(&file.conditions, DEFAULT_CONDITIONS),
        overrides,
        starts: list_or(&file.starts, DEFAULT_STARTS),
        starts_defaulted: file.starts.is_empty(),
        conditions_defaulted: file.conditions.is_empty(),
        shard: args.shard.clone(),
        shards: args.shards,
        repeats: args.repeats.or(file.repeats),
        seed: args.seed.or(file.seed).unwrap_or(0),
        retries: args.retries.or(file.retries).unwrap_or(2),
        sandbox: !args.no_sandbox && file.sandbox.unwrap_or(true),
        budget: Budget {
            turns: args.turns.or(file.budget.turns),
            tool_calls: args.tool_calls.or(file.budget.tool_calls),
            wall_sec: args.wall_sec.or(file.budget.wall_sec),
        },
        clarification_rounds: args.clarification_rounds.or(file.clarification_rounds),
        protocol: args.protocol.clone(),
        allow_stand_in: args.allow_stand_in,
    })
}

/// Loads the suite and checks and resolves everything into the run's configuration.
fn build(mut spec: RunSpec) -> anyhow::Result<Resolved> {
    if spec.starts_defaulted {
        spec.starts = protocol::default_starts(spec.protocol.as_deref(), spec.starts)?;
    }
    if spec.conditions_defaulted {
        spec.conditions = protocol::default_conditions(spec.protocol.as_deref(), spec.conditions)?;
    }
    let suites = if spec.suites.is_empty() { vec![default_suite()?] } else { spec.suites };
    let tasks = specgap_task::discover(&suites).context("cannot load the suite")?;
    refuse_blank_instructions(&tasks)?;
    if spec.overrides.submissions == Some(0) {
        bail!("--submissions must be at least 1");
    }
    let conditions = Condition::parse_list(&spec.conditions.join(","), spec.overrides)?;
    for start in &spec.starts {
        if start != "residual:all" {
            Start::parse(start)?;
        }
    }
    let shard = scale_out::shard_flag(spec.shard.as_deref(), spec.shards)?;
    if spec.repeats == Some(0) {
        bail!("--repeats must be at least 1");
    }
    let protocols = protocol::resolve(&protocol::RunShape {
        spec: spec.protocol.as_deref(),
        allow_stand_in: spec.allow_stand_in,
        conditions: &conditions,
        starts: &spec.starts,
        user: &spec.user,
        repeats: spec.repeats,
        budget: &spec.budget,
        clarification_rounds: spec.clarification_rounds,
        tasks: &tasks,
    })?;
    let config = RunConfig {
        specgap_version: env!("CARGO_PKG_VERSION").to_string(),
        protocol_version: specgap_protocol::run::PROTOCOL_VERSION,
        seed: spec.seed,
        repeats: protocols.repeats,
        retries: spec.retries,
        sandbox: spec.sandbox,
        shard: shard.map(|s| s.as_pair()),
        // Set once the plan is made (scale_out::record_plan).
        plan_hash: None,
        max_cost_usd: None,
        max_tokens: None,
        merge: None,
        tasks: tasks.iter().map(task_ref).collect::<anyhow::Result<Vec<_>>>()?,
        agents: spec.agents,
        users: vec![spec.user],
        conditions: dedup(conditions.iter().map(Condition::canonical).collect()),
        starts: dedup(spec.starts),
        budget: spec.budget,
        clarification_rounds: spec.clarification_rounds,
        protocols: protocols.records,
    };
    let conditions = config.conditions.iter().map(|c| Condition::parse(c)).collect::<Result<Vec<_>, _>>()?;
    Ok(Resolved { config, protocol: protocols.named, tasks, conditions, shard })
}

/// Refuses a suite with a package whose instruction.md has no word: it is the agent's
/// opening message, and `check` fails it too (docs/decisions.md "check: an empty
/// instruction.md").
fn refuse_blank_instructions(tasks: &[TaskPackage]) -> anyhow::Result<()> {
    match tasks.iter().find(|t| specgap_task::leak::instruction_words(t.instruction()) == 0) {
        Some(task) => bail!(
            "{}: instruction.md is empty; it is the agent's opening message (specgap check fails it too)",
            task.root().join("instruction.md").display()
        ),
        None => Ok(()),
    }
}

/// Rebuilds a run from its stored configuration, checking that every task still has the
/// content it had and every agent the configuration it had.
fn resolve_stored(config: &RunConfig) -> anyhow::Result<Resolved> {
    let mut tasks = Vec::with_capacity(config.tasks.len());
    for task in &config.tasks {
        let package = specgap_task::load(&task.path).with_context(|| format!("cannot load task {} from {}", task.name, task.path))?;
        // First: a changed environment file also changes the package hash, and the digest
        // says what changed.
        environments::check_stored(task, &package)?;
        if package.hash() != task.hash {
            bail!(
                "task {} at {} changed since the run began (hash {} in run.toml, {} now); resuming would mix versions",
                task.name,
                task.path,
                task.hash,
                package.hash()
            );
        }
        tasks.push(package);
    }
    for agent in config.agents.iter().filter(|a| !a.spec.starts_with("chat:")) {
        // A chat agent's stored configuration is its configuration; a cli agent's installation
        // must still have its tree hash; others are re-derived, with the replaced prompts
        // stored with them (`--prompts`: --resume uses the stored texts).
        if agent.spec.starts_with("cli:") {
            agents::check_stored_cli_agent(agent)?;
            continue;
        }
        let stored = agents::stored_prompts(agent)?;
        let now = agents::component(&agent.spec, &ChatArgs::defaults(), &stored, agents::MissingInstall::Refuse)?;
        if now.hash != agent.hash && !agents::is_legacy_replay_hash(agent, &now.config) {
            bail!("agent {} has a different configuration now than in run.toml (e.g. its replay file changed)", agent.label());
        }
    }
    agents::check_stored_prompt_versions(config)?;
    let conditions = config.conditions.iter().map(|c| Condition::parse(c)).collect::<Result<Vec<_>, _>>()?;
    let shard = config.shard.map(|[index, count]| Shard { index, count });
    let protocol = protocol::stored(&config.protocols)?;
    Ok(Resolved { config: config.clone(), protocol, tasks, conditions, shard })
}

fn task_ref(package: &TaskPackage) -> anyhow::Result<TaskRef> {
    let path = fs_err::canonicalize(package.root())?;
    Ok(TaskRef {
        name: package.name().to_string(),
        hash: package.hash().to_string(),
        path: path.display().to_string(),
        environments: environments::digests(package)?,
    })
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn clean_list(items: &[String]) -> Vec<String> {
    items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// `replay:<path>` with the path made absolute (against the current directory), as task paths
/// and a run configuration file's replay paths are stored, so that `--resume` from another
/// directory finds the source; other specs unchanged.
///
/// # Errors
/// The current directory cannot be read.
fn absolute_replay_path(spec: &str) -> anyhow::Result<String> {
    match spec.strip_prefix("replay:") {
        Some(path) if !path.is_empty() && Path::new(path).is_relative() => {
            let absolute = std::path::absolute(path).with_context(|| format!("cannot make the replay source {path} absolute"))?;
            Ok(format!("replay:{}", absolute.display()))
        }
        _ => Ok(spec.to_string()),
    }
}

/// Keeps the first occurrence of each item, in order.
fn dedup(items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    items.into_iter().filter(|i| seen.insert(i.clone())).collect()
}

/// The bundled example suite: `examples/tasks` under the current directory, else next to the
/// source tree this binary was built from; while that suite has no packages yet, the task
/// crate's test fixtures.
fn default_suite() -> anyhow::Result<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = [PathBuf::from("examples/tasks"), repo.join("examples/tasks"), repo.join("crates/specgap-task/tests/fixtures")];
    for candidate in &candidates {
        if specgap_task::discover_dirs(&[candidate]).is_ok() {
            return Ok(candidate.clone());
        }
    }
    bail!("no suite given and the bundled example suite (examples/tasks) was not found; pass a suite directory")
}

/// `runs/<UTC timestamp>`, with `-2`, `-3`, … when that directory exists.
fn default_out_dir() -> anyhow::Result<PathBuf> {
    let stamp = utc_timestamp(SystemTime::now());
    fs_err::create_dir_all("runs")?;
    // Creating the directory reserves the name, so two runs started in the same second
    // cannot pick the same one.
    let mut n = 1;
    loop {
        let candidate = PathBuf::from("runs").join(if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") });
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", candidate.display())),
        }
    }
}

/// `YYYYMMDD-HHMMSS` in UTC.
fn utc_timestamp(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Points `runs/latest` at the new run (best effort: a failure only warns).
fn link_latest_run(out: &Path) {
    let Some(name) = out.file_name() else { return };
    let link = out.with_file_name("latest");
    // A new link renamed over the old one: runs finishing at once never see a missing or
    // half-made `latest`.
    let staged = out.with_file_name(format!(".latest-{}", std::process::id()));
    let _ = fs_err::remove_file(&staged);
    let made = std::os::unix::fs::symlink(name, &staged).and_then(|()| std::fs::rename(&staged, &link));
    if let Err(e) = made {
        let _ = fs_err::remove_file(&staged);
        tracing::warn!("cannot link {} to {}: {e}", link.display(), out.display());
    }
}

/// Quotes a word for a POSIX shell when needed.
fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

struct Outcome {
    interrupted: bool,
    /// Episodes ran in this invocation, and every one of them ended in an error.
    only_errors: bool,
    /// Planned episodes left unstarted because the run passed a spending limit.
    held_back: usize,
    /// The spending limit the run passed, if it did.
    limit_reached: Option<SpendingLimit>,
    summary_line: String,
}

/// The plan of a resolved run.
fn plan(resolved: &Resolved) -> anyhow::Result<runner::Plan> {
    let config = &resolved.config;
    let user = config.users.first().context("the run configuration names no user")?;
    let input = PlanInput {
        tasks: &resolved.tasks,
        agents: &config.agents,
        user,
        conditions: &resolved.conditions,
        starts: &config.starts,
        repeats: config.repeats,
        seed: config.seed,
        shard: resolved.shard,
    };
    // Printed once per invocation, though a resume plans more than once.
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        for warning in runner::unknown_residual_states(&input) {
            eprintln!("warning: {warning}");
        }
    });
    Ok(runner::plan(&input, &agents::Applicability)?)
}

/// How this invocation executes a plan (flags that are not part of the run's configuration).
struct Execution {
    jobs: usize,
    resuming: bool,
    limits: SpendingCaps,
    work_dir: Option<PathBuf>,
    /// `--max-workspace-bytes`, `--max-file-bytes`, `--max-diff-bytes`.
    caps: [Option<u64>; 3],
    /// `--cpu-per-sandbox`.
    cpu_per_sandbox: CpuPerSandbox,
}

/// `--cpu-per-sandbox`: `off`, or a finite number of cores of at least 0.01.
fn parse_cpu_per_sandbox(text: &str) -> Result<CpuPerSandbox, String> {
    if text == "off" {
        return Ok(CpuPerSandbox::Off);
    }
    match text.parse::<f64>() {
        Ok(cores) if cores.is_finite() && cores >= 0.01 => Ok(CpuPerSandbox::Cores(cores)),
        _ => Err(format!("`{text}` is neither a number of cores of at least 0.01 (like 1.5) nor `off`")),
    }
}

fn run_plan(store: &Store, resolved: &Resolved, plan: &runner::Plan, how: &Execution) -> anyhow::Result<Outcome> {
    let Execution { jobs, resuming, limits, caps: [max_workspace_bytes, max_file_bytes, max_diff_bytes], .. } = *how;
    let config = &resolved.config;
    let user = config.users.first().context("the run configuration names no user")?;
    if let Some(table) = user.config.get(specgap_panels::detector::DETECTOR_KEY).and_then(toml::Value::as_table) {
        // The detector's configuration beside the ballots it casts (the `panels` table).
        store.record_panel(&specgap_panels::Panel::from_table(table)?.record())?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    install_interrupt_handler(&stop)?;
    let todo = plan
        .episodes
        .iter()
        .filter(|e| store.episode_status(&e.id).ok().flatten().is_none_or(|s| s.needs_rerun() || (resuming && s == Status::EvalError)))
        .count();
    let progress = Progress::new(todo as u64);
    if plan.episodes.len() > todo {
        progress.note(&format!("{} of {} episodes are already done in this store", plan.episodes.len() - todo, plan.episodes.len()));
    }
    let options = RunOptions {
        jobs,
        retries: config.retries,
        sandbox: config.sandbox,
        budget_flags: BudgetFlags {
            turns: config.budget.turns,
            tool_calls: config.budget.tool_calls,
            wall_sec: config.budget.wall_sec,
            clarification_rounds: config.clarification_rounds,
            max_workspace_bytes,
            max_file_bytes,
            max_diff_bytes,
        },
        protocol: resolved.protocol.clone(),
        seed: config.seed,
        stop: Arc::clone(&stop),
        work_root: how.work_dir.clone(),
        rerun_eval_errors: resuming,
        max_cost_usd: limits.max_cost,
        max_tokens: limits.max_tokens,
        cpu_per_sandbox: how.cpu_per_sandbox,
    };
    let inputs = RunInputs { tasks: &resolved.tasks, agents: &config.agents, user };
    let users = specgap_panels::DetectingUsers { inner: specgap_agents::chat::user::Users };
    let summary = runner::execute(plan, inputs, store, &specgap_agents::Agents, &users, &progress, &options);
    progress.finish();
    let summary = summary?;
    let stopped = stop.load(Ordering::SeqCst);
    let interrupted = stopped && (summary.interrupted > 0 || summary.not_started > 0);
    // Without a stop request, episodes left unstarted were held back by a spending limit.
    let (interrupted_count, held_back) =
        if stopped { (summary.interrupted + summary.not_started, 0) } else { (summary.interrupted, summary.not_started) };
    let mut summary_line = format!(
        "{} episode{}: {} finished, {} evaluation error{}, {} infrastructure error{}, {} interrupted, {} already done; {} not applicable",
        summary.planned,
        if summary.planned == 1 { "" } else { "s" },
        summary.finished,
        summary.eval_errors,
        if summary.eval_errors == 1 { "" } else { "s" },
        summary.infra_errors,
        if summary.infra_errors == 1 { "" } else { "s" },
        interrupted_count,
        summary.already_done,
        summary.not_applicable
    );
    if let Some(limit) = summary.limit_reached
        && held_back > 0
    {
        summary_line.push_str(&format!(
            "; {held_back} not started because {} passed {flag} (continue with specgap run --resume {} {flag} <higher>)",
            limit.measure(),
            shell_word(&store.dir().display().to_string()),
            flag = limit.flag()
        ));
    }
    let only_errors = summary.finished == 0 && summary.eval_errors + summary.infra_errors > 0;
    let held_back = if summary.limit_reached.is_some() { held_back } else { 0 };
    Ok(Outcome { interrupted, only_errors, held_back, limit_reached: summary.limit_reached, summary_line })
}

/// Ctrl-C (and SIGTERM / SIGHUP): the first one asks the runner to stop starting episodes
/// and end running ones as interrupted; a second one exits at once.
fn install_interrupt_handler(stop: &Arc<AtomicBool>) -> anyhow::Result<()> {
    install_stop_handler(stop, "stopping: no new episodes start; running ones end as interrupted")
}

/// Ctrl-C (and SIGTERM / SIGHUP): the first one sets `stop` and says `message`; a second one
/// exits at once with [`EXIT_INTERRUPTED`].
pub fn install_stop_handler(stop: &Arc<AtomicBool>, message: &'static str) -> anyhow::Result<()> {
    let stop = Arc::clone(stop);
    let presses = AtomicUsize::new(0);
    let result = ctrlc::set_handler(move || {
        if presses.fetch_add(1, Ordering::SeqCst) == 0 {
            stop.store(true, Ordering::SeqCst);
            let message = format!("{message} (Ctrl-C again to quit now)");
            with_bar(|bar| bar.println(&message));
            if active_bar().is_none() {
                eprintln!("{message}");
            }
        } else {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
    match result {
        Ok(()) | Err(ctrlc::Error::MultipleHandlers) => Ok(()),
        Err(e) => Err(e).context("cannot install the Ctrl-C handler"),
    }
}

/// The progress bar of the running `specgap run`, if any; log lines go through it.
static ACTIVE_BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn active_bar() -> Option<ProgressBar> {
    ACTIVE_BAR.lock().ok().and_then(|b| b.clone())
}

fn with_bar(f: impl FnOnce(&ProgressBar)) {
    if let Some(bar) = active_bar() {
        f(&bar);
    }
}

/// A `tracing` writer that prints above the progress bar while one is shown, so log lines
/// never garble it.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;
    fn make_writer(&'a self) -> Self::Writer {
        LogLine(Vec::new())
    }
}

/// One log record, printed when dropped.
#[derive(Debug)]
pub struct LogLine(Vec<u8>);

impl std::io::Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        let text = text.trim_end_matches('\n');
        if text.is_empty() {
            return;
        }
        match active_bar() {
            Some(bar) if !bar.is_hidden() => bar.println(text),
            _ => eprintln!("{text}"),
        }
    }
}

/// The progress display: done/total, errors, rate and ETA on stderr (hidden when stderr is
/// not a terminal).
struct Progress {
    bar: ProgressBar,
    errors: AtomicUsize,
}

impl Progress {
    fn new(total: u64) -> Self {
        let target = if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        let style = ProgressStyle::with_template("{bar:30} {pos}/{len} episodes · {msg} · {per_sec} · ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message("0 errors");
        bar.enable_steady_tick(Duration::from_millis(250));
        if let Ok(mut slot) = ACTIVE_BAR.lock() {
            *slot = Some(bar.clone());
        }
        Progress { bar, errors: AtomicUsize::new(0) }
    }

    fn note(&self, message: &str) {
        if self.bar.is_hidden() {
            eprintln!("{message}");
        } else {
            self.bar.println(message);
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
        if let Ok(mut slot) = ACTIVE_BAR.lock() {
            *slot = None;
        }
    }
}

impl RunObserver for Progress {
    fn attempt_started(&self, episode: &PlannedEpisode, attempt: u32) {
        tracing::info!(episode = %episode.id, task = %episode.key.task, agent = %episode.key.agent, condition = %episode.key.condition, attempt, "episode starts");
    }

    fn episode_ended(&self, report: &EpisodeReport) {
        if matches!(report.status, Status::InfraError | Status::EvalError) {
            let n = self.errors.fetch_add(1, Ordering::SeqCst) + 1;
            self.bar.set_message(format!("{n} errors"));
            self.note(&format!(
                "episode {} ({} · {} · {}) ended with {} after {} attempt(s): {}",
                report.id,
                report.task,
                report.agent,
                report.condition,
                report.status.as_str(),
                report.attempts,
                report.errors.last().map_or("", String::as_str)
            ));
        }
        if report.status != Status::Interrupted {
            self.bar.inc(1);
        }
    }

    fn note(&self, message: &str) {
        Progress::note(self, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_civil_dates() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "19700101-000000");
        // 2026-11-30 03:53:01 UTC.
        let t = UNIX_EPOCH + Duration::from_secs(1_796_010_781);
        assert_eq!(utc_timestamp(t), "20261130-035301");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("runs/2026-x"), "runs/2026-x");
        assert_eq!(shell_word("my run"), "'my run'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
