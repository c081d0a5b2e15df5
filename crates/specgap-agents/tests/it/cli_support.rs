//! Shared set-up of the `cli:` agent tests: a scripted mock upstream (the gateway crate's
//! `mock` feature) that records every request, a `cli:` agent configuration pointing at it,
//! one run through the real runner, sandbox, gateway, evaluator and store, and readers for
//! what the run stored.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value;
use specgap_agents::Agents;
use specgap_agents::chat::user::Users;
use specgap_agents::cli::CliConfig;
use specgap_engine::condition::{BudgetFlags, Condition};
use specgap_engine::runner::{self, PlanInput, RunInputs, RunOptions, RunSummary, Silent};
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};
use specgap_protocol::event::{Event, EventKind};
use specgap_protocol::run::{ComponentRef, RunConfig};
use specgap_store::{EpisodeDetail, Store};
use specgap_task::TaskPackage;

/// The model the mock answers as.
pub const MODEL: &str = "mock-cli-model";
/// The variable the harness reads the upstream key from.
pub const KEY_ENV: &str = "SPECGAP_TEST_CLI_KEY";

/// The real key: a fixed prefix (which probes inside the sandbox look for) and a random tail
/// (which nothing inside could guess).
pub fn canary_key() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let mut bytes = [0u8; 12];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut bytes).unwrap();
        format!("sk-canary-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
    })
}

/// The test agent script (`cli-agent.py`).
pub fn agent_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli-agent.py")
}

/// A bundled example package.
pub fn example(name: &str) -> TaskPackage {
    specgap_task::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks").join(name)).unwrap()
}

/// Tokens of the `n`-th scripted answer (distinct per answer, so usage sums are checkable).
pub fn tokens(n: u64) -> Tokens {
    Tokens { input: 100 + n, output: 10 + n, cached: n, ..Tokens::default() }
}

/// An answer running `command` with the `bash` tool (call id `call-<n>`).
pub fn bash(n: u64, command: &str, stream: bool) -> MockReply {
    let call = [Call::new(&format!("call-{n}"), "bash", serde_json::json!({ "command": command }))];
    if stream {
        replies::openai_chat_stream(MODEL, &format!("step {n}"), &call, tokens(n))
    } else {
        replies::openai_chat(MODEL, &format!("step {n}"), &call, tokens(n))
    }
}

/// An answer without a tool call: the test agent then exits.
pub fn done(n: u64, text: &str, stream: bool) -> MockReply {
    if stream { replies::openai_chat_stream(MODEL, text, &[], tokens(n)) } else { replies::openai_chat(MODEL, text, &[], tokens(n)) }
}

/// A `cli:command` configuration running the test agent against `mock`.
pub fn command_config(mock: &MockUpstream, stream: bool) -> CliConfig {
    let flag = if stream { " --stream" } else { "" };
    let mut config = CliConfig::new("command", MODEL);
    config.command = Some(format!("python3 {}{flag}", agent_script().display()));
    config.endpoint.base_url = format!("{}/v1", mock.url());
    config.endpoint.api_key_env = KEY_ENV.into();
    config.endpoint.retry_base_ms = 1;
    config.endpoint.max_retries = 3;
    config.stop_grace_ms = 500;
    config
}

/// The component of `config` as `run.toml` stores it.
pub fn component(spec: &str, config: &CliConfig) -> ComponentRef {
    let mut table = config.to_table().unwrap();
    table.insert("kind".into(), toml::Value::String("cli".into()));
    ComponentRef { spec: spec.into(), name: None, config: table, hash: format!("{:x}", spec.len() * 7919 + config.endpoint.model.len()) }
}

/// One finished run of one episode.
pub struct CliRun {
    pub store: Store,
    pub summary: RunSummary,
    pub id: String,
    pub events: Vec<Event>,
    pub detail: EpisodeDetail,
    pub requests: Vec<ReceivedRequest>,
    _dir: tempfile::TempDir,
}

impl CliRun {
    /// The diff of submission `k`.
    pub fn diff(&self, k: u32) -> String {
        let path = self.store.episode_dir(&self.id).join(format!("submissions/{k}/workspace.diff"));
        fs_err::read_to_string(path).unwrap()
    }

    /// Every byte the run directory holds, trajectories decompressed.
    pub fn everything_stored(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut stack = vec![self.store.dir().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs_err::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let bytes = fs_err::read(&path).unwrap();
                    if path.extension().is_some_and(|e| e == "zst") {
                        out.extend(zstd::stream::decode_all(bytes.as_slice()).unwrap_or_default());
                    } else {
                        out.extend(bytes);
                    }
                }
            }
        }
        out
    }

    /// The agent turns: (turn, bash commands).
    pub fn turns(&self) -> Vec<(u32, Vec<String>)> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::AgentTurn { turn, tool_calls, .. } => Some((
                    *turn,
                    tool_calls.iter().map(|c| c.arguments.get("command").and_then(Value::as_str).unwrap_or("").to_string()).collect(),
                )),
                _ => None,
            })
            .collect()
    }
}

/// Runs `task` under `condition` with the `cli:` agent `config`.
pub fn run_cli(
    task: TaskPackage,
    condition: &str,
    start: &str,
    spec: &str,
    config: &CliConfig,
    mock: &MockUpstream,
    flags: BudgetFlags,
) -> CliRun {
    // SAFETY: set only here, to the same value, by tests of this binary.
    unsafe { std::env::set_var(KEY_ENV, canary_key()) };
    let agent = component(spec, config);
    let user = ComponentRef { spec: "relay".into(), name: None, config: toml::Table::new(), hash: "relay".into() };
    let dir = tempfile::tempdir().unwrap();
    let conditions = vec![Condition::parse(condition).unwrap()];
    let starts = vec![start.to_string()];
    let run_config = RunConfig {
        specgap_version: "test".into(),
        protocol_version: specgap_protocol::run::PROTOCOL_VERSION,
        seed: 5,
        repeats: 1,
        retries: 0,
        sandbox: true,
        shard: None,
        tasks: vec![],
        agents: vec![agent.clone()],
        users: vec![user.clone()],
        conditions: conditions.iter().map(Condition::canonical).collect(),
        starts: starts.clone(),
        budget: Default::default(),
        clarification_rounds: None,
        protocols: Vec::new(),
        plan_hash: None,
        max_cost_usd: None,
        max_tokens: None,
        merge: None,
    };
    let store = Store::create(&dir.path().join("run"), &run_config).unwrap();
    let tasks = vec![task];
    let agents = vec![agent];
    let input = PlanInput {
        tasks: &tasks,
        agents: &agents,
        user: &user,
        conditions: &conditions,
        starts: &starts,
        repeats: 1,
        seed: 5,
        shard: None,
    };
    let plan = runner::plan(&input, &runner::AllAgentsApply).unwrap();
    assert_eq!(plan.episodes.len(), 1, "one episode per test run");
    let options = RunOptions {
        jobs: 1,
        retries: 0,
        sandbox: true,
        budget_flags: flags,
        protocol: None,
        seed: 5,
        stop: Arc::new(AtomicBool::new(false)),
        work_root: Some(dir.path().to_path_buf()),
        rerun_eval_errors: false,
        max_cost_usd: None,
        max_tokens: None,
        cpu_per_sandbox: Default::default(),
    };
    let inputs = RunInputs { tasks: &tasks, agents: &agents, user: &user };
    let summary = runner::execute(&plan, inputs, &store, &Agents, &Users, &Silent, &options).unwrap();
    let id = plan.episodes[0].id.clone();
    let events = specgap_store::read_trajectory(store.dir(), &id).unwrap().events;
    let detail = store.episode_detail(&id).unwrap().unwrap();
    let requests = mock.requests();
    CliRun { store, summary, id, events, detail, requests, _dir: dir }
}

/// Checks what every request that reached the upstream must be: the chat path, the real key
/// (never the token), the one model, a body the agent sent (with its tools).
pub fn check_requests(requests: &[ReceivedRequest]) {
    for (i, request) in requests.iter().enumerate() {
        assert_eq!((request.method.as_str(), request.path()), ("POST", "/v1/chat/completions"), "request {i}");
        assert_eq!(request.header("authorization"), Some(format!("Bearer {}", canary_key()).as_str()), "request {i} carries the real key");
        assert!(!request.contains("sgw-"), "request {i} carries the sandbox's token");
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["model"], MODEL, "request {i}");
        assert_eq!(body["tools"][0]["function"]["name"], "bash", "request {i}");
    }
}

/// Processes whose command line holds `needle` (the test process excluded).
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

pub use specgap_test_support::tripwire::{assert_no_network_attempt, network_record};

/// Installs `adapter` at its pinned version into the shared test cache (kept between runs; the
/// installer's lock makes concurrent processes share it), points this process's cache at it,
/// and returns the installation's directory; `None` when it cannot be installed (no package
/// registry): the test is then skipped, or fails under `SPECGAP_REQUIRE_EXTERNAL=1`.
pub fn installed(adapter: &str) -> Option<PathBuf> {
    specgap_test_support::installs::installed_adapter(adapter)
}

/// Any request past the script gets an OpenAI-shaped 500 naming it unscripted.
pub fn refuse_unscripted_openai(mock: &MockUpstream) {
    mock.set_fallback(specgap_gateway::mock::MockReply::json(
        500,
        "{\"error\":{\"message\":\"unscripted request\",\"type\":\"server_error\",\"param\":null,\"code\":null}}",
    ));
}

/// Any request past the script gets an Anthropic-shaped 500 naming it unscripted.
pub fn refuse_unscripted_anthropic(mock: &MockUpstream) {
    mock.set_fallback(specgap_gateway::mock::MockReply::json(
        500,
        "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"unscripted request\"}}",
    ));
}

/// A `cli:<adapter>` configuration at `version` against `mock`: one quick retry and a short
/// stop grace (the Anthropic upstream takes the origin; the gateway drops a trailing `/v1`, so
/// both spellings work).
pub fn vendor_config(adapter: &str, version: &str, mock: &MockUpstream) -> CliConfig {
    let mut config = CliConfig::new(adapter, MODEL);
    config.version = Some(version.into());
    config.endpoint.base_url = format!("{}/v1", mock.url());
    config.endpoint.api_key_env = KEY_ENV.into();
    config.endpoint.retry_base_ms = 1;
    config.endpoint.max_retries = 1;
    config.stop_grace_ms = 500;
    config
}
