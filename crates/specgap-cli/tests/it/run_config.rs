//! `specgap run --config FILE.toml` (docs/run-config.md): several agents on different
//! endpoints in one run, resolved into run.toml and resumed from it; flags that conflict or
//! override; `cli:` entries validated against the adapter registry and the installations.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use specgap_protocol::run::RunConfig;
use specgap_store::{Status, Store};

use crate::chat::mock_server::{Captured, MockServer, Scripted, check_request, completion};
use crate::support::*;

const KEY_A: &str = "sk-config-a-81f0c2";
const KEY_B: &str = "sk-config-b-4be9d1";

fn payment_retry() -> PathBuf {
    repo().join("examples/tasks/payment-retry")
}

/// A competent agent on payment-retry (reads, writes the gold fix, submits); while `broken`
/// is set, every request gets HTTP 400 (not retried: a deterministic infrastructure error).
fn agent_server(broken: Arc<AtomicBool>) -> MockServer {
    let gold = fs_err::read_to_string(payment_retry().join("solutions/gold/shop/checkout.py")).unwrap();
    MockServer::start(move |request: &Captured, _| {
        if broken.load(Ordering::SeqCst) {
            return Scripted::status(400, r#"{"error": {"message": "model is loading"}}"#);
        }
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        let call: Option<(&str, Value)> = match step {
            0 => Some(("read_text", json!({"path": "README.md"}))),
            1 => Some(("write_text", json!({"path": "shop/checkout.py", "content": gold}))),
            2 => Some(("submit", json!({"summary": "retries added"}))),
            _ => None,
        };
        match call {
            Some((tool, args)) => Scripted::json(completion(None, &[(&format!("c{step}"), tool, args)], "tool_calls")),
            None => Scripted::json(completion(Some("Done."), &[], "stop")),
        }
    })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs_err::write(&path, text).unwrap();
    path
}

fn run_with(config: &Path, extra: &[&str]) -> Output {
    specgap().env("CONFIG_KEY_A", KEY_A).env("CONFIG_KEY_B", KEY_B).arg("run").arg("--config").arg(config).args(extra).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Two chat agents on two endpoints, each its own model, key variable and arguments.
fn two_endpoints(a: &MockServer, b: &MockServer) -> String {
    format!(
        r#"
suites = ["{suite}"]
conditions = ["partial"]
starts = ["clean"]
seed = 3
retries = 0

[budget]
turns = 20

[[agent]]
kind = "chat"
model = "mock-a"
base_url = "{a}"
api_key_env = "CONFIG_KEY_A"
model_args = {{ temperature = 0 }}

[[agent]]
name = "second"
kind = "chat"
model = "mock-b"
base_url = "{b}"
api_key_env = "CONFIG_KEY_B"
model_args = {{ max_tokens = 512 }}
max_retries = 0
price = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}
"#,
        suite = payment_retry().display(),
        a = a.url,
        b = b.url
    )
}

#[test]
fn two_chat_agents_on_two_endpoints_run_resolve_into_run_toml_and_resume_from_it() {
    let (a, b) = (agent_server(Arc::default()), agent_server(Arc::default()));
    let broken_b = Arc::new(AtomicBool::new(true));
    let b = {
        drop(b);
        agent_server(Arc::clone(&broken_b))
    };
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "experiment.toml", &two_endpoints(&a, &b));
    let out = tmp.path().join("run");

    let dry = run_with(&config, &["--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(stderr(&dry), "dry run: 2 episodes planned, 0 combinations not applicable; nothing was created\n");
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&dry.stdout)).unwrap();
    assert!(!out.exists());
    assert!(a.requests().is_empty() && b.requests().is_empty());

    // Endpoint B answers 400 at first: its episode is an infrastructure error.
    let first = run_with(&config, &["--out", out.to_str().unwrap(), "--jobs", "1", "--no-report"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let stored = Store::open(&out).unwrap().config().clone();
    assert_eq!(stored, resolved, "run.toml is what the dry run resolved");
    assert_eq!(stored.seed, 3);
    assert_eq!(stored.budget.turns, Some(20));
    let labels: Vec<&str> = stored.agents.iter().map(|c| c.label()).collect();
    assert_eq!(labels, ["chat:mock-a", "second"]);
    assert_eq!(stored.agents[1].spec, "chat:mock-b");
    let url = |i: usize| stored.agents[i].config["base_url"].as_str().unwrap().to_string();
    assert_eq!((url(0), url(1)), (a.url.clone(), b.url.clone()));
    assert_eq!(stored.agents[0].config["api_key_env"].as_str(), Some("CONFIG_KEY_A"));
    assert_eq!(stored.agents[1].config["price"]["input_per_mtok"].as_float(), Some(1.0));
    assert!(!fs_err::read_to_string(out.join("run.toml")).unwrap().contains(KEY_A));

    let status_of = |label: &str| {
        let store = Store::open(&out).unwrap();
        store.episodes().unwrap().into_iter().filter(|e| e.agent == label).map(|e| e.status).collect::<Vec<_>>()
    };
    assert_eq!(status_of("chat:mock-a"), [Status::Finished]);
    assert_eq!(status_of("second"), [Status::InfraError]);
    let a_requests = a.requests().len();
    assert_eq!(a_requests, 3, "read, write, submit");
    assert_eq!(b.requests().len(), 1, "a 400 is not retried");

    // Endpoint B is up again: --resume runs the failed episode from run.toml alone.
    broken_b.store(false, Ordering::SeqCst);
    let resumed = specgap().env("CONFIG_KEY_B", KEY_B).args(["run", "--resume", out.to_str().unwrap(), "--no-report"]).output().unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(status_of("second"), [Status::Finished]);
    assert_eq!(a.requests().len(), a_requests, "the finished episode of agent A is not run again");
    for (server, model, key, arg) in [(&a, "mock-a", KEY_A, ("temperature", json!(0))), (&b, "mock-b", KEY_B, ("max_tokens", json!(512)))] {
        for request in server.requests() {
            assert_eq!(request.body["model"], model);
            assert_eq!(request.header("authorization"), Some(format!("Bearer {key}").as_str()));
            assert_eq!(request.body[arg.0], arg.1, "{model}");
            check_request(
                &request,
                &["list_files", "read_text", "write_text", "replace_text", "run_project", "run_experiment", "ask_user", "submit"],
            );
        }
    }
    assert_eq!(b.requests().iter().filter(|r| r.body.get("temperature").is_some()).count(), 0, "agent A's arguments stay A's");
}

#[test]
fn flags_that_declare_the_matrix_conflict_and_scalar_flags_override_the_file() {
    let (a, b) = (agent_server(Arc::default()), agent_server(Arc::default()));
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "experiment.toml", &two_endpoints(&a, &b));
    let conflict = run_with(&config, &["--agent", "scripted:gold", "--base-url", "http://127.0.0.1:1/v1", "--dry-run"]);
    assert_eq!(conflict.status.code(), Some(2));
    assert_eq!(
        stderr(&conflict),
        format!(
            "error: --agent, --base-url cannot be combined with --config: the file declares the agents, the user, the prompts, the suites, conditions and starts (edit {} instead)\n",
            config.display()
        )
    );
    let overridden =
        run_with(&config, &["--seed", "9", "--repeats", "2", "--turns", "5", "--submissions", "2", "--shard", "1/2", "--dry-run"]);
    assert!(overridden.status.success(), "{}", stderr(&overridden));
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&overridden.stdout)).unwrap();
    assert_eq!((resolved.seed, resolved.repeats, resolved.budget.turns, resolved.shard), (9, 2, Some(5), Some([1, 2])));
    assert_eq!(resolved.conditions, ["partial+submissions=2"]);
    let resume = specgap().args(["run", "--resume", "somewhere", "--config"]).arg(&config).output().unwrap();
    assert_eq!(resume.status.code(), Some(2));
    assert!(stderr(&resume).contains("--config cannot be combined with it"), "{}", stderr(&resume));
}

#[test]
fn unknown_keys_kinds_and_misplaced_keys_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("[[agent]]\nkind = \"chat\"\nmodel = \"m\"\ntemprature = 0\n", "unknown field `temprature`"),
        ("[[agent]]\nkind = \"robot\"\n", "agent 1: unknown kind `robot`; expected scripted, replay, chat or cli"),
        ("[[agent]]\nkind = \"chat\"\nmodel = \"m\"\nsolution = \"gold\"\n", "agent 1: solution does not apply to a chat agent"),
        (
            "[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\nbase_url = \"http://x/v1\"\n",
            "agent 1: an endpoint setting (base_url, api_key_env, model_args, ...) does not apply to a scripted agent",
        ),
        ("[[agent]]\nname = \"x\"\nkind = \"chat\"\n", "agent 1 (`x`): a chat agent needs `model`"),
        (
            "[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\n[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\n",
            "two agents are called `scripted:gold`; give each a distinct `name`",
        ),
        ("colour = \"blue\"\n[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\n", "unknown field `colour`"),
        ("conditions = [\"partial\"]\n", "declares no agent"),
        (
            "[overrides]\nask = \"maybe\"\n[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\n",
            "overrides.ask must be \"on\" or \"off\", not \"maybe\"",
        ),
        ("[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\n[user]\nkind = \"chat\"\n", "user: a chat user needs `model`"),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let config = write(tmp.path(), &format!("c{i}.toml"), &format!("suites = [\"{}\"]\n{text}", payment_retry().display()));
        let output = run_with(&config, &["--dry-run"]);
        assert_eq!(output.status.code(), Some(2), "{text}");
        assert!(stderr(&output).contains(expected), "{text}\nexpected: {expected}\ngot: {}", stderr(&output));
    }
}

fn cli_config(dir: &Path, agents: &str) -> PathBuf {
    write(
        dir,
        "cli.toml",
        &format!("suites = [\"{}\"]\nconditions = [\"partial\"]\nstarts = [\"clean\"]\n{agents}", payment_retry().display()),
    )
}

fn dry_run_in_cache(config: &Path, cache: &Path) -> Output {
    specgap().env("XDG_CACHE_HOME", cache).arg("run").arg("--config").arg(config).arg("--dry-run").output().unwrap()
}

#[test]
fn cli_entries_are_validated_against_the_registry_and_the_installations() {
    let tmp = tempfile::tempdir().unwrap();
    let empty_cache = tmp.path().join("cache");
    let refused = [
        (
            "[[agent]]\nkind = \"cli\"\nadapter = \"aider\"\n",
            "agent 1: unknown agent adapter `aider`; the adapters are mini-swe-agent, claude-code, codex, opencode, gemini-cli, openhands",
        ),
        (
            "[[agent]]\nkind = \"cli\"\nadapter = \"mini-swe-agent\"\nversion = \"9.9\"\n",
            "agent 1: mini-swe-agent 9.9 has no lock file in this specgap (locked: 2.4.6)",
        ),
        ("[[agent]]\nkind = \"cli\"\nmodel = \"m\"\n", "agent 1: a cli agent needs `adapter`"),
        ("[[agent]]\nkind = \"cli\"\nadapter = \"command\"\n", "agent 1: the command adapter needs `command`"),
        ("[[agent]]\nkind = \"cli\"\nadapter = \"codex\"\ncommand = \"x\"\n", "agent 1: `command` applies to the command adapter only"),
        (
            "[[agent]]\nkind = \"cli\"\nadapter = \"command\"\ncommand = \"x\"\n",
            "agent 1: a cli agent needs `model` (the model its gateway forwards)",
        ),
        (
            "[[agent]]\nkind = \"cli\"\nadapter = \"command\"\ncommand = \"x\"\nmodel = \"m\"\nask_channel = \"voice\"\n",
            "agent 1: ask_channel: unknown ask channel `voice`; expected text, native or mcp",
        ),
        (
            "[[agent]]\nkind = \"cli\"\nadapter = \"codex\"\nmodel = \"m\"\nask_channel = \"native\"\n",
            "agent 1: --ask-channel native: cli:codex has no question tool of its own that specgap serves (only cli:opencode has); use text or mcp",
        ),
        (
            "[[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\nask_channel = \"text\"\n",
            "agent 1: ask_channel does not apply to a scripted agent",
        ),
    ];
    for (text, expected) in refused {
        let output = dry_run_in_cache(&cli_config(tmp.path(), text), &empty_cache);
        assert_eq!(output.status.code(), Some(2), "{text}");
        assert!(stderr(&output).contains(expected), "{text}\nexpected: {expected}\ngot: {}", stderr(&output));
    }
    // opencode's own channel is accepted; the dry run only notes the missing installation.
    let native = "[[agent]]\nkind = \"cli\"\nadapter = \"opencode\"\nmodel = \"m\"\nask_channel = \"native\"\n";
    let output = dry_run_in_cache(&cli_config(tmp.path(), native), &empty_cache);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .starts_with("dry run: cli agent opencode@1.18.33 is not installed; install it with `specgap agents install opencode@1.18.33`"),
        "{}",
        stderr(&output)
    );
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    assert_eq!(resolved.agents[0].config["ask_channel"].as_str(), Some("native"));
    let command = "[[agent]]\nkind = \"cli\"\nadapter = \"command\"\ncommand = \"my-agent --task-file {instruction_file}\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n";
    let output = dry_run_in_cache(&cli_config(tmp.path(), command), &empty_cache);
    assert!(output.status.success(), "{}", stderr(&output));
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    assert_eq!(resolved.agents[0].spec, "cli:command=my-agent --task-file {instruction_file}");
    assert_eq!(resolved.agents[0].config["endpoint"]["model"].as_str(), Some("m"));
    assert_eq!(resolved.agents[0].config["ask_channel"].as_str(), Some("mcp"), "cli:command's default, stored");
    let text = dry_run_in_cache(&cli_config(tmp.path(), &format!("{command}ask_channel = \"text\"\n")), &empty_cache);
    assert!(text.status.success(), "{}", stderr(&text));
    let text: RunConfig = toml::from_str(&String::from_utf8_lossy(&text.stdout)).unwrap();
    assert_eq!(text.agents[0].config["ask_channel"].as_str(), Some("text"));
    assert_ne!(text.agents[0].hash, resolved.agents[0].hash, "the channel keys the agent's episodes");
}

/// Regression: a dry run of a configuration with `cli:` agents failed when they were not
/// installed; it now prints the plan and names each missing installation, while a real run
/// still refuses before it creates anything.
#[test]
fn a_dry_run_names_cli_agents_that_are_not_installed_and_a_real_run_refuses_them() {
    let tmp = tempfile::tempdir().unwrap();
    let empty_cache = tmp.path().join("cache");
    let codex = "[[agent]]\nkind = \"cli\"\nadapter = \"codex\"\nmodel = \"m\"\nask_channel = \"mcp\"\n";
    let config = cli_config(tmp.path(), codex);
    let note = "dry run: cli agent codex@0.171.0 is not installed; install it with `specgap agents install codex@0.171.0`; a real run refuses to start without it (until then its tree hash is unknown, so the plan hash and episode keys shown are provisional)\n";
    let output = dry_run_in_cache(&config, &empty_cache);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), format!("{note}dry run: 1 episode planned, 0 combinations not applicable; nothing was created\n"));
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    assert_eq!(resolved.agents[0].spec, "cli:codex");
    assert_eq!(resolved.agents[0].config["version"].as_str(), Some("0.171.0"));
    assert_eq!(resolved.agents[0].config.get("tree_hash"), None, "nothing installed to hash");
    assert_eq!(resolved.agents[0].config["ask_channel"].as_str(), Some("mcp"), "the requested channel is kept");

    // The same agent from the flags.
    let flags = specgap()
        .env("XDG_CACHE_HOME", &empty_cache)
        .arg("run")
        .arg(payment_retry())
        .args(["--agent", "cli:codex", "--model", "m", "--condition", "partial", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(flags.status.code(), Some(0), "{}", stderr(&flags));
    assert!(stderr(&flags).starts_with(note), "{}", stderr(&flags));

    // A real run refuses with the installation's message and leaves no run directory.
    let out = tmp.path().join("run");
    let real =
        specgap().env("XDG_CACHE_HOME", &empty_cache).arg("run").arg("--config").arg(&config).arg("--out").arg(&out).output().unwrap();
    assert_eq!(real.status.code(), Some(2), "{}", stderr(&real));
    assert_eq!(
        stderr(&real),
        "error: agent 1: cli agent codex@0.171.0 is not installed; install it with `specgap agents install codex@0.171.0`\n"
    );
    assert!(!out.exists());
}

#[test]
fn an_installed_cli_adapter_resolves_with_its_tree_hash_and_needs_names_to_pair_models() {
    let Some(dir) = crate::agents::installed_mini_swe_agent() else { return };
    let manifest = specgap_adapters::manifest::Manifest::read(&dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let two = "[[agent]]\nkind = \"cli\"\nadapter = \"mini-swe-agent\"\nmodel = \"qwen3\"\n[[agent]]\nkind = \"cli\"\nadapter = \"mini-swe-agent\"\nmodel = \"llama\"\n";
    let unnamed = dry_run_in_cache(&cli_config(tmp.path(), two), &crate::agents::test_cache());
    assert!(stderr(&unnamed).contains("two agents are called `cli:mini-swe-agent`; give each a distinct `name`"), "{}", stderr(&unnamed));
    let named = two.replacen("[[agent]]\n", "[[agent]]\nname = \"mini/qwen3\"\n", 1).replacen(
        "model = \"llama\"",
        "model = \"llama\"\nname = \"mini/llama\"",
        1,
    );
    let output = dry_run_in_cache(&cli_config(tmp.path(), &named), &crate::agents::test_cache());
    assert!(output.status.success(), "{}", stderr(&output));
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    let agent = &resolved.agents[0];
    assert_eq!((agent.spec.as_str(), agent.label()), ("cli:mini-swe-agent", "mini/qwen3"));
    assert_eq!(agent.config["version"].as_str(), Some("2.4.6"));
    assert_eq!(agent.config["package"].as_str(), Some("mini-swe-agent"));
    assert_eq!(agent.config["tree_hash"].as_str(), Some(manifest.tree_hash.as_str()));
    assert_eq!(agent.config["endpoint"]["model"].as_str(), Some("qwen3"));
    assert_ne!(agent.hash, resolved.agents[1].hash, "the model is part of the configuration hash");
}

#[test]
fn a_prompts_directory_in_the_file_is_stored_with_every_agent_and_the_chat_user() {
    let tmp = tempfile::tempdir().unwrap();
    let prompts = tmp.path().join("my-prompts");
    fs_err::create_dir(&prompts).unwrap();
    fs_err::write(prompts.join("evidence.md"), "Paper wording. Budget: {turns} turns and {tool_calls} tool calls.\n").unwrap();
    fs_err::write(prompts.join("owner.md"), "You are the owner: {persona}\n").unwrap();
    let text = format!(
        "suites = [\"{}\"]\nconditions = [\"partial\"]\nprompts = \"my-prompts\"\n\
         [[agent]]\nkind = \"scripted\"\nsolution = \"gold\"\n\
         [[agent]]\nkind = \"chat\"\nmodel = \"m\"\n\
         [user]\nkind = \"chat\"\nmodel = \"u\"\n",
        payment_retry().display()
    );
    let config = write(tmp.path(), "with-prompts.toml", &text);
    let output = run_with(&config, &["--dry-run"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let resolved: toml::Table = toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    let agents = resolved["agents"].as_array().unwrap();
    for agent in agents {
        let stored = &agent["config"]["prompts"];
        assert_eq!(stored["evidence.md"]["text"].as_str(), Some("Paper wording. Budget: {turns} turns and {tool_calls} tool calls.\n"));
        assert!(stored.get("owner.md").is_none(), "owner prompts go with the user");
    }
    assert!(resolved["users"][0]["config"]["prompts"].get("owner.md").is_some());
    let flag = run_with(&config, &["--prompts", prompts.to_str().unwrap(), "--dry-run"]);
    assert_eq!(flag.status.code(), Some(2));
    assert!(stderr(&flag).starts_with("error: --prompts cannot be combined with --config"), "{}", stderr(&flag));
}

const KEY_C: &str = "sk-config-c-0d93a7";

/// A scripted upstream for our small `cli:` test agent on payment-retry, answering as
/// `model` by step (assistant messages so far): look at the file, write the gold fix with a
/// shell command, `submit` from the shell; while `down` is set every request gets 503.
fn cli_upstream(model: &'static str, down: Arc<AtomicBool>) -> specgap_gateway::mock::MockUpstream {
    use specgap_gateway::mock::replies::{self, Call, Tokens};
    use specgap_gateway::mock::{MockReply, MockUpstream};
    let gold = fs_err::read(payment_retry().join("solutions/gold/shop/checkout.py")).unwrap();
    let hex: String = gold.iter().map(|b| format!("{b:02x}")).collect();
    let write = format!("python3 -c \"import sys; open('shop/checkout.py', 'wb').write(bytes.fromhex(sys.argv[1]))\" {hex}");
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(move |request| {
        if down.load(Ordering::SeqCst) {
            return MockReply::json(503, "{\"error\": {\"message\": \"down\"}}");
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        let command = match step {
            0 => "head -3 shop/checkout.py".to_string(),
            1 => write.clone(),
            _ => "submit 'retries added'".to_string(),
        };
        let call = [Call::new(&format!("call-{step}"), "bash", json!({ "command": command }))];
        replies::openai_chat(model, "working", &call, Tokens { input: 50, output: 5, ..Tokens::default() })
    });
    mock
}

#[test]
fn two_cli_agents_and_a_chat_agent_on_three_endpoints_run_resolve_into_run_toml_and_resume_from_it() {
    let chat = agent_server(Arc::default());
    let cli_a = cli_upstream("cli-model-a", Arc::default());
    let down_b = Arc::new(AtomicBool::new(true));
    let cli_b = cli_upstream("cli-model-b", Arc::clone(&down_b));
    let agent = fs_err::canonicalize(repo().join("crates/specgap-agents/tests/fixtures/cli-agent.py")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
suites = ["{suite}"]
conditions = ["partial"]
starts = ["clean"]
seed = 4
retries = 0

[[agent]]
name = "chat"
kind = "chat"
model = "mock-a"
base_url = "{chat}"
api_key_env = "CONFIG_KEY_A"

[[agent]]
name = "cli-a"
kind = "cli"
adapter = "command"
command = "python3 {agent}"
model = "cli-model-a"
base_url = "{a}/v1"
api_key_env = "CONFIG_KEY_B"

[[agent]]
name = "cli-b"
kind = "cli"
adapter = "command"
command = "python3 {agent}"
model = "cli-model-b"
base_url = "{b}/v1"
api_key_env = "CONFIG_KEY_C"
max_retries = 0
"#,
        suite = payment_retry().display(),
        chat = chat.url,
        agent = agent.display(),
        a = cli_a.url(),
        b = cli_b.url(),
    );
    let config = write(tmp.path(), "matrix.toml", &text);
    let out = tmp.path().join("run");
    let keys = |command: &mut std::process::Command| {
        command.env("CONFIG_KEY_A", KEY_A).env("CONFIG_KEY_B", KEY_B).env("CONFIG_KEY_C", KEY_C);
    };

    let mut dry = specgap();
    keys(&mut dry);
    let dry = dry.arg("run").arg("--config").arg(&config).arg("--dry-run").output().unwrap();
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(stderr(&dry), "dry run: 3 episodes planned, 0 combinations not applicable; nothing was created\n");
    let resolved: RunConfig = toml::from_str(&String::from_utf8_lossy(&dry.stdout)).unwrap();

    // cli-b's upstream is down at first: its episode is an infrastructure error.
    let mut first = specgap();
    keys(&mut first);
    let first = first.arg("run").arg("--config").arg(&config).args(["--jobs", "1", "--no-report", "--out"]).arg(&out).output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let stored = Store::open(&out).unwrap().config().clone();
    assert_eq!(stored, resolved, "run.toml is what the dry run resolved");
    let labels: Vec<&str> = stored.agents.iter().map(|c| c.label()).collect();
    assert_eq!(labels, ["chat", "cli-a", "cli-b"]);
    let command_spec = format!("cli:command=python3 {}", agent.display());
    assert_eq!((stored.agents[1].spec.as_str(), stored.agents[2].spec.as_str()), (command_spec.as_str(), command_spec.as_str()));
    for (i, url, model, key_env) in [(1, cli_a.url(), "cli-model-a", "CONFIG_KEY_B"), (2, cli_b.url(), "cli-model-b", "CONFIG_KEY_C")] {
        let endpoint = &stored.agents[i].config["endpoint"];
        assert_eq!(endpoint["base_url"].as_str(), Some(format!("{url}/v1").as_str()));
        assert_eq!((endpoint["model"].as_str(), endpoint["api_key_env"].as_str()), (Some(model), Some(key_env)));
        assert_eq!(stored.agents[i].config["kind"].as_str(), Some("cli"));
    }
    assert_ne!(stored.agents[1].hash, stored.agents[2].hash);
    let run_toml = fs_err::read_to_string(out.join("run.toml")).unwrap();
    assert!(!run_toml.contains(KEY_B) && !run_toml.contains(KEY_C));

    let outcome = |label: &str| {
        let store = Store::open(&out).unwrap();
        store.episodes().unwrap().into_iter().filter(|e| e.agent == label).map(|e| (e.status, e.final_success)).collect::<Vec<_>>()
    };
    assert_eq!(outcome("chat"), [(Status::Finished, Some(true))]);
    assert_eq!(outcome("cli-a"), [(Status::Finished, Some(true))]);
    assert_eq!(outcome("cli-b").iter().map(|o| o.0).collect::<Vec<_>>(), [Status::InfraError]);
    let (chat_seen, a_seen) = (chat.requests().len(), cli_a.requests().len());
    assert_eq!(a_seen, 3, "look, write, submit");
    assert_eq!(cli_b.requests().len(), 1, "max_retries = 0: one try");

    // The upstream is back: --resume runs cli-b's episode from run.toml alone.
    down_b.store(false, Ordering::SeqCst);
    let resumed = specgap().env("CONFIG_KEY_C", KEY_C).args(["run", "--resume", out.to_str().unwrap(), "--no-report"]).output().unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(outcome("cli-b"), [(Status::Finished, Some(true))]);
    assert_eq!((chat.requests().len(), cli_a.requests().len()), (chat_seen, a_seen), "finished episodes are not run again");
    assert_eq!(cli_b.requests().len(), 1 + 3);
    for (mock, model, key) in [(&cli_a, "cli-model-a", KEY_B), (&cli_b, "cli-model-b", KEY_C)] {
        for request in mock.requests() {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert_eq!(body["model"], model);
            assert_eq!(
                request.header("authorization"),
                Some(format!("Bearer {key}").as_str()),
                "each cli agent's gateway adds its own key"
            );
        }
    }
}

/// A fresh user's finding: after the README's main job (`cargo run -p specgap-cli`, which
/// builds `specgap` alone) a dry run of a `cli:` agent failed for want of `specgap-bridge`,
/// although a dry run runs nothing. It now notes the missing program; a real run still refuses.
#[test]
fn a_dry_run_of_a_cli_agent_without_the_bridge_program_notes_it_and_a_real_run_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let command = "[[agent]]\nkind = \"cli\"\nadapter = \"command\"\ncommand = \"my-agent\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n";
    let config = cli_config(tmp.path(), command);
    let missing = tmp.path().join("no-bridge");
    let dry = specgap().env("SPECGAP_BRIDGE", &missing).arg("run").arg("--config").arg(&config).arg("--dry-run").output().unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let note = format!(
        "dry run: SPECGAP_BRIDGE is set to {}, which is not an executable file; a real run with a cli: agent refuses to start without it\n",
        missing.display()
    );
    assert!(stderr(&dry).starts_with(&note), "{}", stderr(&dry));
    let out = tmp.path().join("run");
    let real = specgap().env("SPECGAP_BRIDGE", &missing).arg("run").arg("--config").arg(&config).arg("--out").arg(&out).output().unwrap();
    assert_eq!(real.status.code(), Some(2), "{}", stderr(&real));
    assert!(stderr(&real).contains("a cli: agent needs the harness tools' program"), "{}", stderr(&real));
    assert!(!out.exists(), "nothing is created");
}
