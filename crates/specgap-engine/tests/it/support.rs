//! Shared helpers: fixtures, a store per test, a scripted test agent, and a runner.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use specgap_engine::prompt_files::Replacements;
use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening, PhaseChange, User};
use specgap_engine::{
    BudgetFlags, Budgets, Condition, EpisodeContext, EpisodeError, EpisodeOutcome, HostViews, RelayUser, Start, StartResults, run_episode,
};
use specgap_protocol::event::{Event, EventKind, ToolCall, Usage};
use specgap_protocol::run::{EpisodeKey, RunConfig};
use specgap_sandbox::{BaseCache, SandboxConfig};
use specgap_store::{EpisodeMeta, Store, read_trajectory};
use specgap_task::TaskPackage;
use specgap_test_support::files::copy_dir;

/// The task crate's fixture directory `name`.
pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-task/tests/fixtures").join(name)
}

/// Loads a fixture package.
pub fn fixture(name: &str) -> TaskPackage {
    specgap_task::load(fixture_dir(name)).unwrap()
}

/// A copy of a fixture in a temporary directory, for tests that change the package.
pub fn fixture_copy(name: &str, into: &Path) -> PathBuf {
    let dest = into.join(name);
    copy_dir(&fixture_dir(name), &dest);
    dest
}

/// A tool call with an engine-assigned id.
pub fn call(tool: &str, arguments: Value) -> ToolCall {
    ToolCall { id: String::new(), tool: tool.into(), arguments }
}

/// A turn of calls.
pub fn turn(calls: Vec<ToolCall>) -> AgentReply {
    AgentReply::Turn { text: None, tool_calls: calls, usage: None }
}

/// A turn of one call.
pub fn one(tool: &str, arguments: Value) -> AgentReply {
    turn(vec![call(tool, arguments)])
}

/// What a [`TestAgent`] saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// The opening.
    pub opening: Option<Opening>,
    /// The inbox of every turn, in order.
    pub inboxes: Vec<Vec<Incoming>>,
    /// The phase changes it was handed, with the number of turns taken before each.
    pub phases: Vec<(usize, PhaseChange)>,
}

/// A test agent replaying fixed replies, then `Done`.
pub struct TestAgent {
    replies: VecDeque<AgentReply>,
    harness: bool,
    takes_phases: bool,
    delay: Option<Duration>,
    /// Delays of single replies (0-based reply index), instead of `delay`.
    delays: Vec<(usize, Duration)>,
    given: usize,
    /// What it saw (shared so the test can read it after the run).
    pub seen: Arc<Mutex<Seen>>,
}

impl TestAgent {
    /// An agent with these replies.
    pub fn new(replies: Vec<AgentReply>) -> Self {
        TestAgent {
            replies: replies.into(),
            harness: false,
            takes_phases: false,
            delay: None,
            delays: Vec::new(),
            given: 0,
            seen: Arc::default(),
        }
    }

    /// Allows `apply_overlay`.
    pub fn harness(mut self) -> Self {
        self.harness = true;
        self
    }

    /// Takes phase changes itself (as the chat agent does), instead of leaving the new
    /// prompt to the tool result.
    pub fn takes_phases(mut self) -> Self {
        self.takes_phases = true;
        self
    }

    /// Sleeps before each reply.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Sleeps before reply `index` (0-based) only.
    pub fn delay_reply(mut self, index: usize, delay: Duration) -> Self {
        self.delays.push((index, delay));
        self
    }

    /// The user messages (feedback, reminders) it received, in order.
    pub fn user_messages(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.inboxes
            .iter()
            .flatten()
            .filter_map(|i| match i {
                Incoming::UserMessage { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// The tool results it received, in order: (tool, output, is_error).
    pub fn results(&self) -> Vec<(String, String, bool)> {
        let seen = self.seen.lock().unwrap();
        seen.inboxes
            .iter()
            .flatten()
            .filter_map(|i| match i {
                Incoming::ToolResult { tool, output, is_error, .. } => Some((tool.clone(), output.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }
}

impl Agent for TestAgent {
    fn start(&mut self, opening: &Opening) -> Result<(), AgentError> {
        self.seen.lock().unwrap().opening = Some(opening.clone());
        Ok(())
    }

    fn next_turn(&mut self, inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        self.seen.lock().unwrap().inboxes.push(inbox.to_vec());
        let index = self.given;
        self.given += 1;
        let delay = self.delays.iter().find(|(i, _)| *i == index).map(|(_, d)| *d).or(self.delay);
        if let Some(delay) = delay {
            std::thread::sleep(delay);
        }
        Ok(self.replies.pop_front().unwrap_or(AgentReply::Done))
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }

    fn allows_harness_actions(&self) -> bool {
        self.harness
    }

    fn change_phase(&mut self, change: &PhaseChange) -> bool {
        self.seen.lock().unwrap().phases.push((self.given, change.clone()));
        self.takes_phases
    }
}

/// One finished test episode.
pub struct Run {
    /// What `run_episode` returned.
    pub outcome: Result<EpisodeOutcome, EpisodeError>,
    /// The trajectory.
    pub events: Vec<Event>,
    /// The store.
    pub store: Store,
    /// Episode id.
    pub id: String,
    /// The attempt's work directory.
    pub workdir: PathBuf,
    _dir: tempfile::TempDir,
}

impl Run {
    /// The outcome, which must be `Ok`.
    pub fn ok(&self) -> &EpisodeOutcome {
        match &self.outcome {
            Ok(outcome) => outcome,
            Err(e) => panic!("episode failed: {e:?}"),
        }
    }

    /// Scores of the evaluated submissions, in order.
    pub fn scores(&self) -> Vec<f64> {
        self.ok().submissions.iter().map(|s| s.scored.score).collect()
    }

    /// The event kinds.
    pub fn kinds(&self) -> Vec<&EventKind> {
        self.events.iter().map(|e| &e.kind).collect()
    }

    /// The tool results in the trajectory: (tool, output, is_error).
    pub fn results(&self) -> Vec<(String, String, bool)> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolResult { tool, output, is_error, .. } => Some((tool.clone(), output.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }

    /// The user messages in the trajectory: (kind, text).
    pub fn user_messages(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::UserMessage { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// The episode directory in the store.
    pub fn episode_dir(&self) -> PathBuf {
        self.store.episode_dir(&self.id)
    }

    /// The agent's workspace.
    pub fn workspace(&self) -> PathBuf {
        self.workdir.join("workspace")
    }
}

/// Options of a test run.
#[derive(Default)]
pub struct Options {
    /// Budget flags.
    pub flags: BudgetFlags,
    /// The start (clean by default).
    pub start: Option<Start>,
    /// Shared start results.
    pub start_results: Option<StartResults>,
    /// The agent spec recorded.
    pub agent_spec: Option<String>,
    /// Stop flag.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The user (the relay when `None`).
    pub user: Option<Box<dyn User>>,
    /// Replaced system prompts (none by default).
    pub prompts: Replacements,
    /// The 0-based repeat (seeds the `oracle:R` subset).
    pub repeat: u32,
    /// Re-evaluations after an evaluation error (0 unless set).
    pub eval_retries: u32,
    /// Shared gold checks.
    pub gold_checks: Option<specgap_engine::evaluation::GoldChecks>,
    /// Run commands and evaluators without bubblewrap (tests whose evaluator keeps a count in
    /// a host file).
    pub no_sandbox: bool,
    /// The protocol (`None`: the condition's paper protocol).
    pub protocol: Option<specgap_rules::Protocol>,
}

/// Runs one episode of `package` under `condition` with `agent` and the relay user.
pub fn run(package: &TaskPackage, condition: &str, agent: &mut dyn Agent, options: Options) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let condition = Condition::parse(condition).unwrap();
    let start = options.start.unwrap_or(Start::Clean);
    let agent_spec = options.agent_spec.unwrap_or_else(|| "test".into());
    let config = RunConfig {
        specgap_version: "test".into(),
        protocol_version: specgap_protocol::run::PROTOCOL_VERSION,
        seed: 7,
        repeats: 1,
        retries: 0,
        sandbox: true,
        shard: None,
        plan_hash: None,
        max_cost_usd: None,
        max_tokens: None,
        merge: None,
        tasks: vec![],
        agents: vec![],
        users: vec![],
        conditions: vec![condition.canonical()],
        starts: vec![start.canonical()],
        budget: Default::default(),
        clarification_rounds: None,
        protocols: Vec::new(),
    };
    let store = Store::create(&dir.path().join("run"), &config).unwrap();
    let key = EpisodeKey {
        task: package.name().into(),
        task_hash: package.hash().into(),
        agent: agent_spec.clone(),
        agent_hash: "a".into(),
        user_hash: "u".into(),
        condition: condition.canonical(),
        start: start.canonical(),
        repeat: options.repeat,
        seed: 7,
    };
    let id = key.id();
    let meta = EpisodeMeta {
        user: "relay".into(),
        family: package.manifest().task.family,
        scoring_kind: package.static_scoring_kind().unwrap_or(specgap_protocol::result::ScoringKind::Delivery),
    };
    let mut writer = store.begin_episode(&key, &meta).unwrap();
    let bases = BaseCache::new(dir.path().join("bases")).unwrap();
    let workdir = dir.path().join("work");
    fs_err::create_dir_all(&workdir).unwrap();
    let start_results = options.start_results.unwrap_or_default();
    let budgets = match &options.protocol {
        Some(protocol) => Budgets::resolve_under(protocol, &condition, &package.manifest().budget, &options.flags),
        None => Budgets::resolve(&condition, &package.manifest().budget, &options.flags),
    };
    let sandbox = SandboxConfig { enabled: !options.no_sandbox };
    let gold_checks = options.gold_checks.unwrap_or_default();
    let ctx = EpisodeContext {
        episode_id: &id,
        package,
        condition: &condition,
        start: &start,
        agent_spec: &agent_spec,
        prompts: &options.prompts,
        budgets,
        sandbox: &sandbox,
        bases: &bases,
        workdir: &workdir,
        seed: 7,
        repeat: options.repeat,
        start_results: &start_results,
        host_views: &HostViews::default(),
        gold_checks: &gold_checks,
        eval_retries: options.eval_retries,
        stop: options.stop.as_ref(),
    };
    let mut user = options.user.unwrap_or_else(|| Box::new(RelayUser::new(package)));
    let outcome = run_episode(&ctx, agent, user.as_mut(), &mut writer);
    if let Ok(done) = &outcome {
        writer.finish(done.summary()).unwrap();
    } else {
        drop(writer);
    }
    let events = read_trajectory(store.dir(), &id).unwrap().events;
    Run { outcome, events, store, id, workdir, _dir: dir }
}
