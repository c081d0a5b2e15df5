//! Through the real runner, sandbox, evaluator and store: the wall budget binds while a model
//! request is in flight (issue 10 item 1), model usage is never lost (item 5), and failures
//! of the user model are called deterministic when they repeat (item 6). Durations are
//! checked only as bounds on the recorded budget use.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use specgap_agents::Agents;
use specgap_agents::chat::user::Users;
use specgap_agents::chat::{ChatConfig, Price};
use specgap_engine::condition::{BudgetFlags, Condition};
use specgap_engine::runner::{self, PlanInput, RunInputs, RunOptions, RunSummary, Silent};
use specgap_protocol::event::EventKind;
use specgap_protocol::run::{ComponentRef, EndReason, RunConfig};
use specgap_store::{Role, Status, Store};
use specgap_task::TaskPackage;

use crate::end_to_end::{component, example, options};
use crate::mock_server::{Captured, MockServer, Scripted, completion};

const AGENT_MODEL: &str = "agent-model";
const USER_MODEL: &str = "user-model";
/// A reply slower than anything these tests wait for.
const FOREVER: Duration = Duration::from_secs(300);

/// A chat component on `server` for `model`, tweaked.
fn chat(server: &MockServer, model: &str, tweak: impl FnOnce(&mut ChatConfig)) -> ComponentRef {
    let mut config = ChatConfig::new(model);
    config.base_url = server.url.clone();
    config.api_key_env = "SPECGAP_TEST_NO_SUCH_KEY".into();
    config.retry_base_ms = 1;
    config.max_retries = 1;
    tweak(&mut config);
    component(&format!("chat:{model}"), &config)
}

/// The agent step a request is for: the assistant messages before it.
fn step(request: &Captured) -> usize {
    request.messages().iter().filter(|m| m["role"] == "assistant").count()
}

fn call(tool: &str, args: Value) -> Scripted {
    Scripted::json(completion(None, &[("c", tool, args)], "tool_calls"))
}

fn write(path: &str) -> Scripted {
    call("write_text", json!({"path": path, "content": "written by the agent\n"}))
}

fn ask() -> Scripted {
    call("ask_user", json!({"question": "Which of the records should I trust most?"}))
}

/// Runs the plan of `tasks` × `agents` × `conditions` (clean starts, one repeat) into
/// `dir/run`, with `tweak` applied to the runner's options.
fn execute(
    dir: &Path,
    tasks: Vec<TaskPackage>,
    agents: Vec<ComponentRef>,
    user: ComponentRef,
    conditions: &[&str],
    tweak: impl FnOnce(&mut RunOptions),
) -> (Store, RunSummary) {
    let conditions: Vec<Condition> = conditions.iter().map(|c| Condition::parse(c).unwrap()).collect();
    let mut options = options(1, dir, None);
    tweak(&mut options);
    let config = RunConfig {
        specgap_version: "test".into(),
        protocol_version: specgap_protocol::run::PROTOCOL_VERSION,
        seed: 11,
        repeats: 1,
        retries: options.retries,
        sandbox: true,
        shard: None,
        plan_hash: None,
        max_cost_usd: None,
        max_tokens: None,
        merge: None,
        tasks: vec![],
        agents: agents.clone(),
        users: vec![user.clone()],
        conditions: conditions.iter().map(Condition::canonical).collect(),
        starts: vec!["clean".into()],
        budget: Default::default(),
        clarification_rounds: None,
        protocols: Vec::new(),
    };
    let store = Store::create(&dir.join("run"), &config).unwrap();
    let starts = vec!["clean".to_string()];
    let input = PlanInput {
        tasks: &tasks,
        agents: &agents,
        user: &user,
        conditions: &conditions,
        starts: &starts,
        repeats: 1,
        seed: 11,
        shard: None,
    };
    let plan = runner::plan(&input, &runner::AllAgentsApply).unwrap();
    let inputs = RunInputs { tasks: &tasks, agents: &agents, user: &user };
    let summary = runner::execute(&plan, inputs, &store, &Agents, &Users, &Silent, &options).unwrap();
    (store, summary)
}

fn wall_sec(seconds: u64) -> impl FnOnce(&mut RunOptions) {
    move |o| o.budget_flags = BudgetFlags { wall_sec: Some(seconds), ..BudgetFlags::default() }
}

/// The stored diff of submission `k` of episode `id`.
fn stored_diff(store: &Store, id: &str, k: u32) -> String {
    fs_err::read_to_string(store.episode_dir(id).join(format!("submissions/{k}/workspace.diff"))).unwrap()
}

/// (attempt, role, requests, retries, input tokens) of every usage row.
fn usage_rows(store: &Store) -> Vec<(u32, Role, u64, u64, u64)> {
    store.usage().unwrap().iter().map(|u| (u.attempt, u.role, u.usage.requests, u.usage.retries, u.usage.input_tokens)).collect()
}

/// The `wall_sec` budget event of the only episode: (used, limit).
fn wall_event(store: &Store, id: &str) -> (u64, u64) {
    let trajectory = specgap_store::read_trajectory(store.dir(), id).unwrap();
    trajectory
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Budget { which, used, limit } if which == "wall_sec" => Some((*used, *limit)),
            _ => None,
        })
        .expect("a wall budget event")
}

/// Bound on the recorded wall use of a 2-second episode: the budget, the automatic
/// submission's evaluation and slack for a loaded machine — far below the slow reply.
const WALL_BOUND_MS: u64 = 2_000 + 8_000;

#[test]
fn the_wall_budget_binds_during_a_slow_agent_request_and_its_late_call_never_runs() {
    let server = MockServer::start(|request, _| match step(request) {
        0 => write("notes.txt"),
        _ => Scripted::after(FOREVER, write("late.txt")),
    });
    let tmp = tempfile::tempdir().unwrap();
    let agent = chat(&server, AGENT_MODEL, |_| {});
    let user = chat(&server, USER_MODEL, |_| {});
    let (store, summary) = execute(tmp.path(), vec![example("payment-retry")], vec![agent], user, &["partial"], wall_sec(2));
    assert_eq!(summary.finished, 1);
    let episodes = store.episodes().unwrap();
    let e = &episodes[0];
    assert_eq!((e.status, e.end_reason, e.turns, e.tool_calls), (Status::Finished, Some(EndReason::WallBudget), 1, 1));
    assert!(e.wall_ms < WALL_BOUND_MS, "recorded wall use {} ms", e.wall_ms);
    let (used, limit) = wall_event(&store, &e.id);
    assert_eq!(limit, 2);
    assert!(used < WALL_BOUND_MS / 1000, "budget event used {used} s");
    // The automatic submission carries the first call's file, never the late one.
    let submissions = store.submissions().unwrap();
    assert_eq!(submissions.iter().map(|s| (s.k, s.automatic, s.agent_declared)).collect::<Vec<_>>(), [(1, true, false)]);
    let diff = stored_diff(&store, &e.id, 1);
    assert!(diff.contains("b/notes.txt") && !diff.contains("late.txt"), "{diff}");
    let trajectory = specgap_store::read_trajectory(store.dir(), &e.id).unwrap();
    let turns = trajectory.events.iter().filter(|ev| matches!(ev.kind, EventKind::AgentTurn { .. })).count();
    assert_eq!(turns, 1, "the abandoned request is no turn");
    // Both requests reached the server; only the answered one counts as a request, and the
    // abandoned one's wait is in the latency.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(usage_rows(&store), [(1, Role::Agent, 1, 0, 100)]);
}

#[test]
fn the_wall_budget_binds_during_a_slow_user_reply() {
    let server = MockServer::start(|request, _| {
        if request.body["model"] == USER_MODEL {
            return Scripted::after(FOREVER, Scripted::json(completion(Some("too late"), &[], "stop")));
        }
        match step(request) {
            0 => write("notes.txt"),
            1 => ask(),
            _ => write("late.txt"),
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let agent = chat(&server, AGENT_MODEL, |_| {});
    let user = chat(&server, USER_MODEL, |_| {});
    let (store, _) = execute(tmp.path(), vec![example("payment-retry")], vec![agent], user, &["partial"], wall_sec(2));
    let e = &store.episodes().unwrap()[0];
    assert_eq!((e.status, e.end_reason, e.turns), (Status::Finished, Some(EndReason::WallBudget), 2));
    assert!(e.wall_ms < WALL_BOUND_MS, "recorded wall use {} ms", e.wall_ms);
    assert!(store.questions().unwrap().is_empty(), "the question was never answered");
    let submissions = store.submissions().unwrap();
    assert_eq!(submissions.iter().map(|s| (s.k, s.automatic)).collect::<Vec<_>>(), [(1, true)]);
    assert!(!stored_diff(&store, &e.id, 1).contains("late.txt"));
    let trajectory = specgap_store::read_trajectory(store.dir(), &e.id).unwrap();
    let ask_result = trajectory.events.iter().find_map(|ev| match &ev.kind {
        EventKind::ToolResult { tool, output, .. } if tool == "ask_user" => Some(output.clone()),
        _ => None,
    });
    assert_eq!(ask_result.as_deref(), Some("not answered: the work ended (wall_budget) before the reply came"));
    // The user's abandoned request leaves a row: no answer, so no request or tokens counted.
    assert_eq!(usage_rows(&store), [(1, Role::Agent, 2, 0, 200), (1, Role::User, 0, 0, 0)]);
}

/// A scripted agent that asks the owner first; the user model's replies are `user`.
fn asking_agent(user: fn(usize) -> Scripted) -> MockServer {
    let counter = Mutex::new(0usize);
    MockServer::start(move |request, _| {
        if request.body["model"] == USER_MODEL {
            let mut n = counter.lock().unwrap();
            *n += 1;
            return user(*n - 1);
        }
        match step(request) {
            0 => ask(),
            _ => call("submit", json!({})),
        }
    })
}

fn user_requests(server: &MockServer) -> usize {
    server.requests().iter().filter(|r| r.body["model"] == USER_MODEL).count()
}

/// (attempt, deterministic) of every error row.
fn error_rows(store: &Store) -> Vec<(u32, bool)> {
    store.errors().unwrap().iter().map(|e| (e.attempt, e.error.deterministic)).collect()
}

#[test]
fn a_user_model_giving_empty_replies_keeps_its_usage_and_is_deterministic_after_two_attempts() {
    let server = asking_agent(|_| Scripted::json(completion(Some("   "), &[], "stop")));
    let tmp = tempfile::tempdir().unwrap();
    let agent = chat(&server, AGENT_MODEL, |_| {});
    let user = chat(&server, USER_MODEL, |_| {});
    let (store, summary) = execute(tmp.path(), vec![example("payment-retry")], vec![agent], user, &["partial"], |o| o.retries = 4);
    assert_eq!((summary.infra_errors, summary.retried_attempts), (1, 1));
    let e = &store.episodes().unwrap()[0];
    assert_eq!((e.status, e.attempts), (Status::InfraError, 2));
    assert_eq!(error_rows(&store), [(1, false), (2, true)]);
    // Each attempt: three answered (empty) user requests, every one in the store.
    assert_eq!(user_requests(&server), 6);
    assert_eq!(
        usage_rows(&store),
        [(1, Role::Agent, 1, 0, 100), (1, Role::User, 3, 0, 300), (2, Role::Agent, 1, 0, 100), (2, Role::User, 3, 0, 300)]
    );
}

#[test]
fn a_user_model_answering_http_500_is_deterministic_after_two_attempts() {
    let server = asking_agent(|_| Scripted::status(500, "internal error"));
    let tmp = tempfile::tempdir().unwrap();
    let agent = chat(&server, AGENT_MODEL, |_| {});
    let user = chat(&server, USER_MODEL, |_| {});
    let (store, summary) = execute(tmp.path(), vec![example("payment-retry")], vec![agent], user, &["partial"], |o| o.retries = 4);
    assert_eq!(summary.infra_errors, 1);
    let e = &store.episodes().unwrap()[0];
    assert_eq!((e.status, e.attempts, e.end_reason), (Status::InfraError, 2, Some(EndReason::InfrastructureError)));
    assert!(e.error.as_deref().unwrap().ends_with("(deterministic: not retried again)"), "{:?}", e.error);
    assert_eq!(error_rows(&store), [(1, false), (2, true)]);
    // Two attempts of one try and max_retries = 1 retry: exactly four user requests.
    assert_eq!(user_requests(&server), 4);
    assert_eq!(
        usage_rows(&store),
        [(1, Role::Agent, 1, 0, 100), (1, Role::User, 2, 1, 0), (2, Role::Agent, 1, 0, 100), (2, Role::User, 2, 1, 0)]
    );
}

/// Polls `check` every 20 ms for up to `limit`; whether it held.
fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

#[test]
fn max_cost_counts_usage_written_while_an_episode_runs() {
    // Three episodes on two workers: the priced agent's episode starts first and spends with
    // its first request; a free agent's episode runs meanwhile, and when it ends the priced
    // episode is still running. The third episode must not start: the spend is in the store.
    let tmp = tempfile::tempdir().unwrap();
    let run_dir: PathBuf = tmp.path().join("run");
    let store_view: Arc<Mutex<Option<Store>>> = Arc::default();
    let view = Arc::clone(&store_view);
    let read = move |f: &dyn Fn(&Store) -> bool| -> bool {
        let mut guard = view.lock().unwrap();
        if guard.is_none() && run_dir.join("run.toml").is_file() {
            *guard = Store::open(&run_dir).ok();
        }
        guard.as_ref().is_some_and(f)
    };
    let server = MockServer::start(move |request, _| {
        let model = request.body["model"].as_str().unwrap_or("").to_string();
        match (model.as_str(), step(request)) {
            ("priced-model", 0) => write("notes.txt"),
            ("priced-model", _) => {
                // Still running when the free episode ends; then a moment for the free
                // worker to decide (it starts the third episode only if it missed the spend).
                let free_done =
                    |s: &Store| s.episodes().unwrap().iter().any(|e| e.agent == "chat:free-model" && e.status == Status::Finished);
                wait_until(Duration::from_secs(60), || read(&free_done));
                wait_until(Duration::from_secs(2), || read(&|s: &Store| s.episodes().unwrap().len() > 2));
                call("submit", json!({}))
            }
            ("free-model", 0) => {
                // Not before the priced request's usage is in the store.
                let spent = |s: &Store| s.usage().unwrap().iter().any(|u| u.usage.cost_usd > 0.0);
                assert!(wait_until(Duration::from_secs(60), || read(&spent)), "the priced request's usage never reached the store");
                write("free.txt")
            }
            _ => call("submit", json!({})),
        }
    });
    let price = Price { input_per_mtok: 1.0, output_per_mtok: 2.0, cached_input_per_mtok: Some(0.5) };
    let per_request = (60.0 * 1.0 + 40.0 * 0.5 + 20.0 * 2.0) / 1_000_000.0;
    let priced = chat(&server, "priced-model", |c| c.price = Some(price));
    let free = chat(&server, "free-model", |_| {});
    let also_free = chat(&server, "also-free-model", |_| {});
    let user = chat(&server, USER_MODEL, |_| {});
    let (store, summary) = execute(tmp.path(), vec![example("payment-retry")], vec![priced, free, also_free], user, &["full"], |o| {
        o.jobs = 2;
        o.max_cost_usd = Some(per_request / 2.0);
    });
    assert_eq!(summary.limit_reached, Some(runner::SpendingLimit::Cost));
    assert_eq!((summary.finished, summary.not_started), (2, 1));
    let agents: Vec<String> = store.episodes().unwrap().iter().map(|e| e.agent.clone()).collect();
    assert_eq!(agents.len(), 2);
    assert!(!agents.contains(&"chat:also-free-model".to_string()), "{agents:?}");
    assert!(server.requests().iter().all(|r| r.body["model"] != "also-free-model"));
}
