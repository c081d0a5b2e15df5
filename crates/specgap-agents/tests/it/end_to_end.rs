//! End to end on the example suite: `chat:` agents against the mock server playing a scripted
//! competent agent (reads records, writes the gold files, submits) with a `chat:` user on the
//! same server, through the real runner, sandbox, evaluators and store. Every captured
//! request is checked for the invariants and scanned for what its role must never see; the
//! API key must appear nowhere in the run directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};
use specgap_agents::Agents;
use specgap_agents::chat::user::Users;
use specgap_agents::chat::{ChatConfig, Price};
use specgap_engine::condition::{BudgetFlags, Budgets, Condition};
use specgap_engine::runner::{self, PlanInput, RunInputs, RunOptions, RunSummary, Silent, SpendingLimit};
use specgap_protocol::run::{ComponentRef, EndReason, RunConfig};
use specgap_store::{Role, Status, Store};
use specgap_task::TaskPackage;

use crate::mock_server::{Captured, MockServer, Scripted, check_request, completion};

const KEY_ENV: &str = "SPECGAP_TEST_KEY_E2E";
const KEY: &str = "sk-e2e-7f3a9c-distinctive-key";
const AGENT_MODEL: &str = "agent-model";
const USER_MODEL: &str = "user-model";
const USER_REPLY: &str = "I only know what I saw myself; please find the rest out from the project.";

pub(crate) fn example(name: &str) -> TaskPackage {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks").join(name);
    specgap_task::load(dir).unwrap()
}

/// The gold overlay's files (path relative to the workspace, text).
fn gold_files(package: &TaskPackage) -> Vec<(String, String)> {
    files_under(&package.root().join("solutions/gold"))
}

fn files_under(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = fs_err::read_to_string(&path) {
                out.push((path.strip_prefix(root).unwrap().to_string_lossy().into_owned(), text));
            }
        }
    }
    out.sort();
    out
}

fn tool_names(request: &Captured) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// The scripted competent agent: the calls of each turn, decided from the opening.
fn script(request: &Captured, tasks: &[TaskPackage]) -> Vec<Vec<(String, Value)>> {
    let opening = request.messages()[1]["content"].as_str().unwrap();
    let package = tasks
        .iter()
        .find(|p| {
            let head: String = p.instruction().chars().take(60).collect();
            let full_head: String = p.instruction_full().unwrap_or("\u{0}").chars().take(60).collect();
            opening.starts_with(&head) || opening.starts_with(&full_head)
        })
        .expect("the opening names a known task");
    let tools = tool_names(request);
    let has = |t: &str| tools.iter().any(|n| n == t);
    let clarify_first = request.system().contains("contains no question mark");
    let mut turns: Vec<Vec<(String, Value)>> = Vec::new();
    let one = |tool: &str, args: Value| vec![(tool.to_string(), args)];
    if package.is_delivery() {
        if has("ask_user") {
            turns.push(one("ask_user", json!({"question": "How should a store be supplied when its own city's warehouse runs out?"})));
        }
        if clarify_first {
            turns.push(one("ask_user", json!({"question": "Thank you, I have what I need."})));
        }
        turns.push(one("list_files", json!({"path": "data"})));
    } else {
        if has("ask_user") {
            turns.push(one("ask_user", json!({"question": "Which of the records should I trust most?"})));
        }
        turns.push(vec![("list_files".into(), json!({"path": "records"})), ("read_text".into(), json!({"path": "README.md"}))]);
        if opening_is_partial(package, opening) && has("ask_user") && !has("write_plan") {
            // Under partial: deliver the untouched project once to hear the owner's feedback.
            turns.push(one("submit", json!({"summary": "first look"})));
        }
        if has("write_plan") {
            turns.push(one("write_plan", json!({"plan": "Read the records, then write the fix and submit."})));
        }
    }
    turns.push(
        gold_files(package)
            .into_iter()
            .map(|(path, content)| ("write_text".to_string(), json!({"path": path, "content": content})))
            .collect(),
    );
    turns.push(one("submit", json!({"summary": "done"})));
    turns
}

fn opening_is_partial(package: &TaskPackage, opening: &str) -> bool {
    !package.is_delivery() && opening.trim_end() == package.instruction().trim_end()
}

/// The turns of a scripted agent; a turn `[("say", {"text": …})]` is a reply without a tool
/// call.
type Script = fn(&Captured, &[TaskPackage]) -> Vec<Vec<(String, Value)>>;

fn handler(tasks: Arc<Vec<TaskPackage>>, script: Script) -> impl Fn(&Captured, usize) -> Scripted + Send + Sync {
    move |request, _| {
        if request.body["model"] == USER_MODEL {
            return Scripted::json(completion(Some(USER_REPLY), &[], "stop"));
        }
        let turns = script(request, &tasks);
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        let Some(calls) = turns.get(step) else {
            return Scripted::json(completion(Some("All done."), &[], "stop"));
        };
        if let [(tool, args)] = calls.as_slice()
            && tool == "say"
        {
            return Scripted::json(completion(args["text"].as_str(), &[], "stop"));
        }
        let calls: Vec<(String, String, Value)> =
            calls.iter().enumerate().map(|(i, (tool, args))| (format!("t{step}-{i}"), tool.clone(), args.clone())).collect();
        let refs: Vec<(&str, &str, Value)> = calls.iter().map(|(id, t, a)| (id.as_str(), t.as_str(), a.clone())).collect();
        Scripted::json(completion(None, &refs, "tool_calls"))
    }
}

pub(crate) fn component(spec: &str, config: &ChatConfig) -> ComponentRef {
    let mut table = config.to_table().unwrap();
    table.insert("kind".into(), toml::Value::String("chat".into()));
    ComponentRef { spec: spec.into(), name: None, config: table, hash: format!("{:x}", spec.len() * 7919 + config.model.len()) }
}

struct E2e {
    store: Store,
    requests: Vec<Captured>,
    tasks: Vec<TaskPackage>,
    dir: tempfile::TempDir,
    summary: RunSummary,
    agents: Vec<ComponentRef>,
    user: ComponentRef,
    conditions: Vec<Condition>,
    server: MockServer,
}

/// Run settings the tests vary.
struct Tweaks {
    jobs: usize,
    price: Option<Price>,
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
    script: Script,
}

impl Default for Tweaks {
    fn default() -> Self {
        Tweaks { jobs: 2, price: None, max_cost_usd: None, max_tokens: None, script }
    }
}

impl E2e {
    /// Executes the run's plan again on its store (as `--resume` does), under `--max-cost
    /// max_cost_usd` and `--max-tokens max_tokens`.
    fn execute_again(&mut self, max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> RunSummary {
        let starts = vec!["clean".to_string()];
        let input = PlanInput {
            tasks: &self.tasks,
            agents: &self.agents,
            user: &self.user,
            conditions: &self.conditions,
            starts: &starts,
            repeats: 1,
            seed: 11,
            shard: None,
        };
        let plan = runner::plan(&input, &runner::AllAgentsApply).unwrap();
        let options = RunOptions { max_tokens, ..options(1, self.dir.path(), max_cost_usd) };
        let inputs = RunInputs { tasks: &self.tasks, agents: &self.agents, user: &self.user };
        let summary = runner::execute(&plan, inputs, &self.store, &Agents, &Users, &Silent, &options).unwrap();
        self.requests = self.server.requests();
        summary
    }
}

pub(crate) fn options(jobs: usize, work_root: &Path, max_cost_usd: Option<f64>) -> RunOptions {
    RunOptions {
        jobs,
        retries: 0,
        sandbox: true,
        budget_flags: BudgetFlags::default(),
        protocol: None,
        seed: 11,
        stop: Arc::new(AtomicBool::new(false)),
        work_root: Some(work_root.to_path_buf()),
        rerun_eval_errors: false,
        max_cost_usd,
        max_tokens: None,
        cpu_per_sandbox: Default::default(),
    }
}

fn run(conditions: &[&str], tasks: Vec<TaskPackage>) -> E2e {
    run_with(conditions, tasks, Tweaks::default())
}

fn run_with(conditions: &[&str], tasks: Vec<TaskPackage>, tweaks: Tweaks) -> E2e {
    // SAFETY: this variable is set only here, to the same value, by tests of this binary.
    unsafe { std::env::set_var(KEY_ENV, KEY) };
    let shared = Arc::new(tasks.clone());
    let server = MockServer::start(handler(Arc::clone(&shared), tweaks.script));
    let mut agent_config = ChatConfig::new(AGENT_MODEL).with_model_args(&["temperature=0"]).unwrap();
    agent_config.base_url = server.url.clone();
    agent_config.api_key_env = KEY_ENV.into();
    agent_config.retry_base_ms = 1;
    agent_config.price = tweaks.price;
    let mut user_config = agent_config.clone();
    user_config.model = USER_MODEL.into();
    let agent = component(&format!("chat:{AGENT_MODEL}"), &agent_config);
    let user = component(&format!("chat:{USER_MODEL}"), &user_config);
    let dir = tempfile::tempdir().unwrap();
    let conditions: Vec<Condition> = conditions.iter().map(|c| Condition::parse(c).unwrap()).collect();
    let config = RunConfig {
        specgap_version: "test".into(),
        protocol_version: specgap_protocol::run::PROTOCOL_VERSION,
        seed: 11,
        repeats: 1,
        retries: 0,
        sandbox: true,
        shard: None,
        plan_hash: None,
        max_cost_usd: None,
        max_tokens: None,
        merge: None,
        tasks: vec![],
        agents: vec![agent.clone()],
        users: vec![user.clone()],
        conditions: conditions.iter().map(Condition::canonical).collect(),
        starts: vec!["clean".into()],
        budget: Default::default(),
        clarification_rounds: None,
        protocols: Vec::new(),
    };
    let store = Store::create(&dir.path().join("run"), &config).unwrap();
    let agents = vec![agent];
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
    let options = RunOptions { max_tokens: tweaks.max_tokens, ..options(tweaks.jobs, dir.path(), tweaks.max_cost_usd) };
    let inputs = RunInputs { tasks: &tasks, agents: &agents, user: &user };
    let summary = runner::execute(&plan, inputs, &store, &Agents, &Users, &Silent, &options).unwrap();
    let requests = server.requests();
    E2e { store, requests, tasks, dir, summary, agents, user, conditions, server }
}

/// Every string in a request body, with tool-call argument strings decoded.
fn visible_text(request: &Captured) -> String {
    fn walk(value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
                if let Ok(inner @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str::<Value>(s) {
                    walk(&inner, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    walk(&request.body["messages"], &mut out);
    out
}

fn longest_line(text: &str) -> String {
    text.lines().map(str::trim).max_by_key(|l| l.len()).unwrap_or("").to_string()
}

/// Each end-to-end run holds one task.
fn task_of<'a>(_request: &Captured, tasks: &'a [TaskPackage]) -> &'a TaskPackage {
    assert_eq!(tasks.len(), 1);
    &tasks[0]
}

fn check_privacy(e2e: &E2e) {
    for request in &e2e.requests {
        let text = visible_text(request);
        let package = task_of(request, &e2e.tasks);
        let evaluator = fs_err::read_to_string(package.root().join("evaluator/evaluate.py")).unwrap();
        let forbidden_everywhere: Vec<String> = package
            .requirement_ids()
            .iter()
            .cloned()
            .chain(package.clarifications().iter().map(|t| t.id.clone()))
            .chain([longest_line(&evaluator), "failure_mode".to_string()])
            .collect();
        for needle in &forbidden_everywhere {
            assert!(!text.contains(needle.as_str()), "a request of {} shows `{needle}`", request.body["model"]);
        }
        let full = text.contains(package.instruction_full().map_or("\u{0}", |f| f.lines().next().unwrap()));
        if !full {
            for requirement in package.requirements() {
                let head: String = requirement.description.chars().take(50).collect();
                assert!(!text.contains(&head), "requirement description shown to {}", request.body["model"]);
            }
        }
        for observation in package.observations() {
            let static_detail = observation.detail.split('{').next().unwrap().trim();
            if static_detail.len() > 20 {
                assert!(!text.contains(static_detail), "an unreleased observation detail was shown");
            }
            if request.body["model"] == AGENT_MODEL {
                assert!(!text.contains(observation.scene.trim()), "the agent saw an observation scene");
            }
        }
        if request.body["model"] == AGENT_MODEL {
            // Solution files the agent did not write itself.
            let gold: Vec<String> = gold_files(package).into_iter().map(|(_, t)| t).collect();
            for (_, other) in files_under(&package.root().join("solutions")) {
                if !gold.contains(&other) {
                    assert!(
                        !text.contains(longest_line(&other).as_str()) || gold.iter().any(|g| g.contains(longest_line(&other).as_str()))
                    );
                }
            }
            if let Some(information) = package.information() {
                let line = longest_line(information);
                let full_info = request.system().contains("business information");
                assert_eq!(text.contains(&line), full_info, "information.md is shown to the agent exactly under full-info");
            }
        }
    }
}

fn check_no_key(dir: &Path, store: &Store) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files += 1;
                let bytes = fs_err::read(&path).unwrap();
                assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "the API key is in {}", path.display());
            }
        }
    }
    assert!(files > 3);
    for episode in store.episodes().unwrap() {
        let trajectory = specgap_store::read_trajectory(store.dir(), &episode.id).unwrap();
        let text = serde_json::to_string(&trajectory.events).unwrap();
        assert!(!text.contains(KEY));
    }
}

#[test]
fn owner_conditions_with_a_chat_owner() {
    let e2e = run(&["partial", "full", "literal", "plan"], vec![example("payment-retry")]);
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 4);
    for episode in &episodes {
        assert_eq!(episode.status, Status::Finished, "{}: {:?}", episode.condition, episode);
        assert_eq!(episode.final_score, Some(1.0), "{}", episode.condition);
        assert_eq!(episode.end_reason, Some(EndReason::Accepted), "{}", episode.condition);
        let expected_submissions = if episode.condition == "partial" { 2 } else { 1 };
        assert_eq!(episode.submissions, expected_submissions, "{}", episode.condition);
    }
    for request in &e2e.requests {
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        if request.body["model"] == AGENT_MODEL {
            let names = tool_names(request);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            check_request(request, &names);
            // Plan mode's planning phase offers no submit (seed 000 App. F.3).
            let planning = request.system().contains("PLANNING phase");
            assert_eq!(names.contains(&"submit"), !planning, "{names:?}");
            assert!(names.contains(&"read_text"));
            assert_eq!(request.body["temperature"], 0);
        }
    }
    // Plan mode: the request after `write_plan` carries the execution prompt and its tools.
    let plan = Condition::parse("plan").unwrap();
    let package = &e2e.tasks[0];
    let budgets = Budgets::resolve(&plan, &package.manifest().budget, &BudgetFlags::default());
    let execute = specgap_engine::prompts::system_prompts(&plan, &budgets).execute_phase.unwrap();
    let after_plan: Vec<&Captured> = e2e
        .requests
        .iter()
        .filter(|r| {
            r.body["model"] == AGENT_MODEL
                && r.messages().iter().any(|m| m["content"].as_str().is_some_and(|c| c.starts_with("Plan saved to PLAN.md.")))
        })
        .collect();
    assert_eq!(after_plan.len(), 2, "the gold write and the submit");
    for request in after_plan {
        assert_eq!(request.system(), execute);
        assert_eq!(
            tool_names(request),
            ["list_files", "read_text", "write_text", "replace_text", "run_project", "run_experiment", "ask_user", "submit"]
        );
        let saved = request
            .messages()
            .iter()
            .find(|m| m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.starts_with("Plan saved")))
            .unwrap();
        assert_eq!(saved["content"], specgap_engine::episode::PLAN_SAVED);
    }
    // The owner was asked a question (partial, full, plan) and gave feedback once (partial).
    let user_requests: Vec<&Captured> = e2e.requests.iter().filter(|r| r.body["model"] == USER_MODEL).collect();
    assert_eq!(user_requests.len(), 4);
    let feedback: Vec<&&Captured> = user_requests.iter().filter(|r| visible_text(r).contains("What happened:")).collect();
    assert_eq!(feedback.len(), 1);
    let questions = e2e.store.questions().unwrap();
    assert_eq!(questions.len(), 3);
    assert!(questions.iter().all(|q| q.question.answer == USER_REPLY));
    let usage = e2e.store.usage().unwrap();
    let agent_rows: Vec<_> = usage.iter().filter(|u| u.role == Role::Agent).collect();
    let user_rows: Vec<_> = usage.iter().filter(|u| u.role == Role::User).collect();
    assert_eq!(agent_rows.len(), 4);
    let agent_requests = e2e.requests.iter().filter(|r| r.body["model"] == AGENT_MODEL).count() as u64;
    assert_eq!(agent_rows.iter().map(|u| u.usage.requests).sum::<u64>(), agent_requests);
    assert_eq!(agent_rows.iter().map(|u| u.usage.input_tokens).sum::<u64>(), 100 * agent_requests);
    assert_eq!(user_rows.iter().map(|u| u.usage.requests).sum::<u64>(), 4);
    check_privacy(&e2e);
    check_no_key(e2e.dir.path(), &e2e.store);
}

#[test]
fn delivery_conditions_with_a_chat_customer() {
    let e2e = run(&["hidden", "interact", "interact-req", "full-info"], vec![example("retail-replenishment")]);
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 4);
    for episode in &episodes {
        assert_eq!(episode.status, Status::Finished, "{}: {:?}", episode.condition, episode);
        assert_eq!(episode.final_score, Some(1.0), "{}", episode.condition);
        assert_eq!(episode.final_success, Some(true), "{}", episode.condition);
    }
    for request in e2e.requests.iter().filter(|r| r.body["model"] == AGENT_MODEL) {
        let names = tool_names(request);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        check_request(request, &names);
    }
    // interact and interact-req each asked one real question; the unlock message is no question.
    let customer: Vec<&Captured> = e2e.requests.iter().filter(|r| r.body["model"] == USER_MODEL).collect();
    assert_eq!(customer.len(), 2);
    for request in &customer {
        let text = visible_text(request);
        assert!(
            text.contains(e2e.tasks[0].information().unwrap().lines().find(|l| l.len() > 40).unwrap()),
            "the customer knows information.md"
        );
    }
    check_privacy(&e2e);
    check_no_key(e2e.dir.path(), &e2e.store);
}

/// A delivery agent that uses the text channel: questions under the heading in a reply
/// without a tool call, then a statement that gets a continuation, then the work.
fn text_channel_script(request: &Captured, tasks: &[TaskPackage]) -> Vec<Vec<(String, Value)>> {
    let package = &tasks[0];
    let say = |text: &str| vec![("say".to_string(), json!({ "text": text }))];
    let mut turns = vec![
        say(TEXT_QUESTIONS),
        say("Thank you. I will now build the replenishment plan."),
        vec![("list_files".to_string(), json!({"path": "data"}))],
    ];
    assert!(tool_names(request).contains(&"ask_user".to_string()));
    turns.push(
        gold_files(package)
            .into_iter()
            .map(|(path, content)| ("write_text".to_string(), json!({"path": path, "content": content})))
            .collect(),
    );
    turns.push(vec![("submit".to_string(), json!({"summary": "done"}))]);
    turns
}

const TEXT_QUESTIONS: &str = "I have read the request.\n\n## Questions for the client\n1. How should a store be supplied when its own city's warehouse runs out?\n2. Which currency are the costs in?\n";

#[test]
fn delivery_text_channel_with_a_chat_customer() {
    let tweaks = Tweaks { script: text_channel_script, ..Tweaks::default() };
    let e2e = run_with(&["interact"], vec![example("retail-replenishment")], tweaks);
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].status, Status::Finished, "{:?}", episodes[0]);
    assert_eq!(episodes[0].final_score, Some(1.0));
    assert_eq!(episodes[0].end_reason, Some(EndReason::Accepted));
    // The customer model got each question on its own.
    let customer: Vec<&Captured> = e2e.requests.iter().filter(|r| r.body["model"] == USER_MODEL).collect();
    assert_eq!(customer.len(), 2);
    assert!(visible_text(customer[0]).contains("How should a store be supplied when its own city's warehouse runs out?"));
    assert!(!visible_text(customer[0]).contains("Which currency"));
    assert!(visible_text(customer[1]).contains("Which currency are the costs in?"));
    // Both are recorded, like ask_user questions, in the turn that asked them.
    let questions = e2e.store.questions().unwrap();
    let texts: Vec<&str> = questions.iter().map(|q| q.question.text.as_str()).collect();
    assert_eq!(texts, ["How should a store be supplied when its own city's warehouse runs out?", "Which currency are the costs in?"]);
    assert!(questions.iter().all(|q| q.question.turn == 1 && q.question.answer == USER_REPLY));
    // The agent got the answers as one user message, then the continuation.
    let agent: Vec<&Captured> = e2e.requests.iter().filter(|r| r.body["model"] == AGENT_MODEL).collect();
    assert_eq!(agent.len(), 5);
    let user_text = |request: &Captured| -> Vec<String> {
        request.messages().iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
    };
    let answers = format!(
        "- How should a store be supplied when its own city's warehouse runs out?\n  {USER_REPLY}\n- Which currency are the costs in?\n  {USER_REPLY}"
    );
    assert_eq!(&user_text(agent[1])[1..], std::slice::from_ref(&answers));
    assert_eq!(user_text(agent[2])[1..], [answers, specgap_engine::text_channel::CONTINUATION.to_string()]);
    for request in &agent {
        let names = tool_names(request);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        check_request(request, &names);
    }
    check_privacy(&e2e);
    check_no_key(e2e.dir.path(), &e2e.store);
}

/// A model that declines in plain text on every turn (no tool call, no refusal field).
fn plain_refusal_script(_request: &Captured, _tasks: &[TaskPackage]) -> Vec<Vec<(String, Value)>> {
    let say = |text: &str| vec![("say".to_string(), json!({ "text": text }))];
    vec![say("I'm sorry, but I can't help with that."), say("I cannot assist with this request."), say("Sorry — I won't do that.")]
}

/// Issue 10 item 7: a plain-text refusal ended as `no_tool_call`, not `refusals`.
#[test]
fn plain_text_refusals_end_the_episode_as_refusals() {
    let tweaks = Tweaks { script: plain_refusal_script, jobs: 1, ..Tweaks::default() };
    let e2e = run_with(&["partial"], vec![example("payment-retry")], tweaks);
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].status, Status::Finished, "{:?}", episodes[0]);
    assert_eq!(episodes[0].end_reason, Some(EndReason::Refusals));
    assert_eq!(episodes[0].turns, 3);
    assert_eq!(episodes[0].submissions, 0, "nothing changed, so nothing is submitted");
    let agent: Vec<&Captured> = e2e.requests.iter().filter(|r| r.body["model"] == AGENT_MODEL).collect();
    assert_eq!(agent.len(), 3);
    // Each refusal is followed by the refusal reminder, not the no-tool-call one.
    let last_user = agent[2].messages().iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone();
    assert_eq!(last_user, json!(specgap_engine::episode::REFUSAL_REMINDER));
    check_privacy(&e2e);
}

#[test]
fn max_cost_stops_starting_episodes_and_resume_runs_the_rest() {
    let price = Price { input_per_mtok: 1.0, output_per_mtok: 2.0, cached_input_per_mtok: Some(0.5) };
    // Every mock completion: 100 prompt tokens (40 cached), 20 completion tokens.
    let per_request = (60.0 * 1.0 + 40.0 * 0.5 + 20.0 * 2.0) / 1_000_000.0;
    let tweaks = Tweaks { jobs: 1, price: Some(price), max_cost_usd: Some(per_request / 2.0), ..Tweaks::default() };
    let mut e2e = run_with(&["full", "literal", "partial"], vec![example("payment-retry")], tweaks);
    assert_eq!(e2e.summary.limit_reached, Some(SpendingLimit::Cost));
    assert_eq!((e2e.summary.finished, e2e.summary.interrupted, e2e.summary.not_started), (1, 0, 2));
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 1, "episodes not started stay out of the store");
    assert_eq!(episodes[0].status, Status::Finished);
    assert_eq!(episodes[0].end_reason, Some(EndReason::Accepted));
    let usage = e2e.store.usage().unwrap();
    let requests = e2e.requests.len() as f64;
    let cost: f64 = usage.iter().map(|u| u.usage.cost_usd).sum();
    assert!((cost - requests * per_request).abs() < 1e-12, "{cost} for {requests} requests");

    // Resuming under the same limit starts nothing; without it, the rest runs.
    let again = e2e.execute_again(Some(per_request / 2.0), None);
    assert_eq!((again.already_done, again.not_started, again.finished), (1, 2, 0));
    let rest = e2e.execute_again(None, None);
    assert_eq!(rest.limit_reached, None);
    assert_eq!((rest.already_done, rest.finished, rest.not_started), (1, 2, 0));
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 3);
    assert!(episodes.iter().all(|e| e.status == Status::Finished && e.final_score == Some(1.0)));
}

/// The run's prompt + completion tokens (`input_tokens + output_tokens` of every usage row).
fn stored_tokens(store: &Store) -> u64 {
    store.usage().unwrap().iter().map(|u| u.usage.input_tokens + u.usage.output_tokens).sum()
}

#[test]
fn max_tokens_stops_starting_episodes_and_a_higher_cap_runs_the_rest() {
    // Every mock completion: 100 prompt tokens (40 of them cached) and 20 completion tokens
    // (5 of them reasoning): 120 tokens a request, so one request already passes 119.
    let tweaks = Tweaks { jobs: 1, max_tokens: Some(119), ..Tweaks::default() };
    let mut e2e = run_with(&["full", "literal", "partial"], vec![example("payment-retry")], tweaks);
    assert_eq!(e2e.summary.limit_reached, Some(SpendingLimit::Tokens));
    assert_eq!((e2e.summary.finished, e2e.summary.interrupted, e2e.summary.not_started), (1, 0, 2));
    assert_eq!(e2e.store.episodes().unwrap().len(), 1, "episodes not started stay out of the store");
    let first = stored_tokens(&e2e.store);
    assert_eq!(first, 120 * e2e.requests.len() as u64);

    // A cap equal to the spend is not passed: one more episode starts, and after it the cap
    // holds the last one back.
    let at_cap = e2e.execute_again(None, Some(first));
    assert_eq!(at_cap.limit_reached, Some(SpendingLimit::Tokens));
    assert_eq!((at_cap.already_done, at_cap.finished, at_cap.not_started), (1, 1, 1));
    let second = stored_tokens(&e2e.store);
    assert_eq!(second, 120 * e2e.requests.len() as u64);
    assert!(second > first);
    // A higher cap lets the rest run.
    let rest = e2e.execute_again(None, Some(second + 1_000_000));
    assert_eq!(rest.limit_reached, None);
    assert_eq!((rest.already_done, rest.finished, rest.not_started), (2, 1, 0));
    let episodes = e2e.store.episodes().unwrap();
    assert_eq!(episodes.len(), 3);
    assert!(episodes.iter().all(|e| e.status == Status::Finished && e.final_score == Some(1.0)));
}
