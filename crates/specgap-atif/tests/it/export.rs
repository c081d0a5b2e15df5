//! An episode with every event kind (and one this build does not know) exported to ATIF:
//! the steps, calls, results and token counts are the store's, private evaluations stay out
//! unless asked for, and Harbor's own models accept the files.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};
use specgap_atif::{ExportOptions, episode_trajectory, export_run};
use specgap_protocol::event::{EventKind, ToolCall, ToolSpec, Usage, UserMessageKind};
use specgap_protocol::package::Family;
use specgap_protocol::result::{Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Role, Status, Store, SubmissionRecord, trajectory_path};

const CANARY: &str = "private-canary-5e1f";

fn config() -> RunConfig {
    toml::from_str(
        r#"
specgap_version = "0.2.0-test"
protocol_version = 2
seed = 3
repeats = 1
retries = 0
sandbox = true
conditions = ["partial"]
starts = ["clean"]

[[tasks]]
name = "t/x"
hash = "h"
path = "/nowhere"

[[agents]]
spec = "chat:mock-model"
hash = "a1"
config = { kind = "chat", model = "mock-model", base_url = "http://10.9.8.7:8000/v1", api_key_env = "LAB_KEY", price = { input_per_mtok = 1.0, output_per_mtok = 2.0 } }

[[users]]
spec = "relay"
hash = "u1"
config = {}
"#,
    )
    .unwrap()
}

fn usage(input: u64, output: u64, cached: u64, cost: f64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_tokens: cached,
        reasoning_tokens: 3,
        requests: 1,
        retries: 0,
        latency_ms: 40,
        cost_usd: cost,
    }
}

/// The key of repeat 0 of `agent` on task `t/x` of [`config`].
fn key(agent: &str) -> EpisodeKey {
    EpisodeKey {
        task: "t/x".into(),
        task_hash: "h".into(),
        agent: agent.into(),
        agent_hash: "a1".into(),
        user_hash: "u1".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat: 0,
        seed: 3,
    }
}

/// Writes one episode with every event kind; returns its id.
fn episode(store: &Store) -> String {
    let key = key("chat:mock-model");
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement };
    let mut w = store.begin_episode(&key, &meta).unwrap();
    let id = w.id().to_string();
    w.event(EventKind::EpisodeStart {
        episode: id.clone(),
        task: "t/x".into(),
        condition: "partial".into(),
        start: "clean".into(),
        agent: "chat:mock-model".into(),
        system_prompt: "You are an engineer.".into(),
        opening_message: "Please add retries.".into(),
        tools: vec![
            ToolSpec {
                name: "read_text".into(),
                description: "Read a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolSpec { name: "submit".into(), description: "Deliver.".into(), parameters: json!({"type": "object", "properties": {}}) },
        ],
    })
    .unwrap();
    w.event(EventKind::StartEvaluation { state: CANARY.into(), score: 0.5, success: false }).unwrap();
    w.event(EventKind::AgentTurn {
        turn: 1,
        text: Some("Reading first.".into()),
        tool_calls: vec![
            ToolCall { id: "c1".into(), tool: "read_text".into(), arguments: json!({"path": "README.md"}) },
            ToolCall { id: "c2".into(), tool: "read_text".into(), arguments: json!({"path": "nope.md"}) },
        ],
        usage: Some(usage(100, 20, 40, 0.00014)),
    })
    .unwrap();
    w.event(EventKind::ToolResult { call_id: "c1".into(), tool: "read_text".into(), output: "1 | hello".into(), is_error: false }).unwrap();
    w.event(EventKind::ToolResult { call_id: "c2".into(), tool: "read_text".into(), output: "no such file".into(), is_error: true })
        .unwrap();
    w.event(EventKind::UserMessage { kind: UserMessageKind::Answer, text: "Yes, retry.".into(), usage: None }).unwrap();
    w.event(EventKind::PhaseChange {
        phase: "execute".into(),
        system_prompt: "Carry out the plan.".into(),
        tools: vec![ToolSpec {
            name: "submit".into(),
            description: "Deliver.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }],
    })
    .unwrap();
    w.event(EventKind::AgentTurn {
        turn: 2,
        text: None,
        tool_calls: vec![ToolCall { id: "c3".into(), tool: "submit".into(), arguments: json!({"summary": "done"}) }],
        usage: Some(usage(150, 10, 100, 0.00017)),
    })
    .unwrap();
    w.event(EventKind::Submission { k: 1, summary: Some("done".into()), automatic: false }).unwrap();
    w.event(EventKind::Evaluation { k: 1, score: 0.4, success: false, failing_requirement: Some(CANARY.into()) }).unwrap();
    w.event(EventKind::ToolResult { call_id: "c3".into(), tool: "submit".into(), output: "submitted".into(), is_error: false }).unwrap();
    w.event(EventKind::Error { class: "evaluation".into(), message: format!("expected {CANARY}"), stderr_tail: CANARY.into() }).unwrap();
    w.event(EventKind::End { reason: "submission_budget".into(), detail: String::new() }).unwrap();
    w.record_usage(Role::Agent, &usage(250, 30, 140, 0.00031)).unwrap();
    w.record_usage(Role::User, &usage(9, 2, 0, 0.0)).unwrap();
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: None,
        scored: Some(Scored { kind: ScoringKind::Requirement, score: 0.4, success: false }),
        failing_requirement: Some(CANARY.into()),
        error: None,
        diff: Vec::new(),
    };
    w.write_submission(1, &record).unwrap();
    w.finish(EpisodeSummary {
        status: Status::Finished,
        end_reason: Some(EndReason::SubmissionBudget),
        turns: 2,
        tool_calls: 3,
        wall_ms: 9,
        error: None,
    })
    .unwrap();
    // An event kind this build does not know (written by a newer specgap), appended raw.
    let line = format!(
        "{{\"seq\":12,\"ts_ms\":1764580260123,\"elapsed_ms\":77,\"type\":\"model_exchange\",\"model\":\"m\",\"note\":\"{CANARY}\"}}\n"
    );
    let frame = zstd::bulk::compress(line.as_bytes(), 3).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(trajectory_path(store.dir(), &id)).unwrap();
    file.write_all(&frame).unwrap();
    id
}

fn export(dir: &Path, out: &Path, include_private: bool) -> Value {
    let summary = export_run(dir, out, ExportOptions { include_private }).unwrap();
    assert_eq!(summary.trajectories, 1);
    let index: Value = serde_json::from_str(&fs_err::read_to_string(&summary.index).unwrap()).unwrap();
    let rel = index["episodes"][0]["trajectory"].as_str().unwrap().to_string();
    serde_json::from_str(&fs_err::read_to_string(out.join(rel)).unwrap()).unwrap()
}

#[test]
fn every_event_kind_maps_to_its_step_and_totals_are_the_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let store = Store::create(&run, &config()).unwrap();
    let id = episode(&store);
    drop(store);
    let t = export(&run, &tmp.path().join("out"), false);
    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["session_id"], id);
    assert_eq!(t["agent"]["name"], "chat:mock-model");
    assert_eq!(t["agent"]["version"], "0.2.0-test");
    assert_eq!(t["agent"]["model_name"], "mock-model");
    assert_eq!(
        t["agent"]["tool_definitions"][0],
        json!({"type": "function", "function": {"name": "read_text", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}})
    );
    let steps = t["steps"].as_array().unwrap();
    let outline: Vec<(u64, &str, &str)> =
        steps.iter().map(|s| (s["step_id"].as_u64().unwrap(), s["source"].as_str().unwrap(), s["message"].as_str().unwrap())).collect();
    assert_eq!(
        outline,
        vec![
            (1, "system", "You are an engineer."),
            (2, "user", "Please add retries."),
            (3, "agent", "Reading first."),
            (4, "user", "Yes, retry."),
            (5, "system", "Carry out the plan."),
            (6, "agent", ""),
            (7, "system", "submission 1: submitted by the agent"),
            (8, "system", "evaluation error (details are private)"),
            (9, "system", "episode ended: submission_budget"),
            (10, "system", "specgap event `model_exchange` (a kind this exporter does not map)"),
        ]
    );
    let turn1 = &steps[2];
    assert_eq!(
        turn1["tool_calls"],
        json!([
            {"tool_call_id": "c1", "function_name": "read_text", "arguments": {"path": "README.md"}},
            {"tool_call_id": "c2", "function_name": "read_text", "arguments": {"path": "nope.md"}},
        ])
    );
    let results = turn1["observation"]["results"].as_array().unwrap();
    assert_eq!(
        results.iter().map(|r| (r["source_call_id"].as_str().unwrap(), r["content"].as_str().unwrap())).collect::<Vec<_>>(),
        vec![("c1", "1 | hello"), ("c2", "no such file")]
    );
    assert_eq!(results[1]["extra"]["specgap"]["is_error"], true);
    assert_eq!(
        turn1["metrics"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 40, "cost_usd": 0.00014, "extra": {"reasoning_tokens": 3, "requests": 1, "retries": 0, "latency_ms": 40}})
    );
    assert!(turn1.get("llm_call_count").is_none(), "a model agent's calls per turn are not claimed");
    // Plan mode's phase change: the new prompt, with the phase and its tools beside it.
    assert_eq!(steps[4]["extra"]["specgap"]["kind"], "phase_change");
    assert_eq!(steps[4]["extra"]["specgap"]["phase"], "execute");
    assert_eq!(
        steps[4]["extra"]["specgap"]["tool_definitions"],
        json!([{"type": "function", "function": {"name": "submit", "description": "Deliver.", "parameters": {"type": "object", "properties": {}}}}])
    );
    // The submit call's result came after the submission event, and is still its call's
    // observation (it was a system step of its own, without `source_call_id`).
    assert_eq!(steps[5]["tool_calls"][0]["tool_call_id"], "c3");
    assert_eq!(
        steps[5]["observation"]["results"],
        json!([{"source_call_id": "c3", "content": "submitted", "extra": {"specgap": {"tool": "submit", "is_error": false, "seq": 10}}}])
    );
    assert!(steps[6].get("observation").is_none(), "{}", steps[6]);
    assert_eq!(steps[9]["timestamp"], "2025-12-01T09:11:00.123Z");
    // The machine the run was made on stays out of a public export: no model server address,
    // no key variable; the rest of the configuration is there.
    let exported = &t["agent"]["extra"]["specgap"]["config"];
    assert_eq!(exported.get("base_url"), None, "{exported}");
    assert_eq!(exported.get("api_key_env"), None, "{exported}");
    assert_eq!(exported["model"], "mock-model");
    let fm = &t["final_metrics"];
    assert_eq!(
        (fm["total_prompt_tokens"].as_u64(), fm["total_completion_tokens"].as_u64(), fm["total_cached_tokens"].as_u64()),
        (Some(250), Some(30), Some(140))
    );
    assert_eq!(fm["total_cost_usd"], 0.00031);
    assert_eq!(fm["total_steps"], 10);
    assert_eq!(fm["extra"]["specgap"]["usage"][1]["role"], "user");
    assert_eq!(t["extra"]["specgap"]["final_score"], 0.4);
    assert_eq!(t["extra"]["specgap"]["end_reason"], "submission_budget");
    let text = t.to_string();
    assert!(!text.contains(CANARY), "private text left the store: {text}");
    assert!(t["notes"].as_str().unwrap().contains("2 private event(s) left out"));

    let private = export(&run, &tmp.path().join("private"), true);
    let messages: Vec<&str> = private["steps"].as_array().unwrap().iter().map(|s| s["message"].as_str().unwrap()).collect();
    assert!(messages.contains(&"PRIVATE evaluation of submission 1 (never shown to the agent): score 0.4, success false"), "{messages:?}");
    assert!(
        messages.contains(
            &format!("PRIVATE evaluation of the inherited state `{CANARY}` (never shown to the agent): score 0.5, success false").as_str()
        ),
        "{messages:?}"
    );
    assert!(private.to_string().contains(CANARY));
    assert_eq!(private["agent"]["extra"]["specgap"]["config"]["base_url"], "http://10.9.8.7:8000/v1");

    let files = [
        tmp.path().join("out").join(&id).join("agent/trajectory.json"),
        tmp.path().join("private").join(&id).join("agent/trajectory.json"),
    ];
    if let Some(lines) = crate::harbor::validate(&files) {
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("ATIF-v1.7 steps=10"), "{lines:?}");
        assert!(lines[1].ends_with("ATIF-v1.7 steps=12"), "{lines:?}");
    }
}

#[test]
fn a_scripted_agent_s_steps_are_deterministic_dispatches_and_an_empty_episode_still_validates() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let mut cfg = config();
    cfg.agents[0].spec = "scripted:gold".into();
    let store = Store::create(&run, &cfg).unwrap();
    let key = key("scripted:gold");
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement };
    let mut w = store.begin_episode(&key, &meta).unwrap();
    let id = w.id().to_string();
    w.event(EventKind::Overlay { name: "gold".into() }).unwrap();
    w.event(EventKind::AgentTurn {
        turn: 1,
        text: None,
        tool_calls: vec![ToolCall { id: "call-1".into(), tool: "submit".into(), arguments: json!("odd") }],
        usage: None,
    })
    .unwrap();
    w.event(EventKind::ToolResult { call_id: "call-1".into(), tool: "submit".into(), output: "ok".into(), is_error: false }).unwrap();
    drop(w);
    let key2 = EpisodeKey { repeat: 1, ..key };
    let w2 = store.begin_episode(&key2, &meta).unwrap();
    let empty_id = w2.id().to_string();
    drop(w2);
    std::fs::remove_file(trajectory_path(store.dir(), &empty_id)).unwrap();
    let t = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions::default()).unwrap()).unwrap();
    assert_eq!(t["steps"][0]["llm_call_count"], 0);
    assert_eq!(t["steps"][0]["source"], "agent");
    assert_eq!(t["steps"][1]["llm_call_count"], 0);
    assert_eq!(t["steps"][1]["tool_calls"][0]["arguments"], json!({"value": "odd"}));
    assert_eq!(t["steps"][1]["observation"]["results"][0]["source_call_id"], "call-1");
    assert!(t["final_metrics"].get("total_cost_usd").is_some(), "the run has a price table");
    let empty = serde_json::to_value(episode_trajectory(&store, &empty_id, ExportOptions::default()).unwrap()).unwrap();
    assert_eq!(empty["steps"].as_array().unwrap().len(), 1);
    let err = episode_trajectory(&store, "0000000000000000", ExportOptions::default()).err().map(|e| e.to_string());
    assert_eq!(err.as_deref(), Some("episode 0000000000000000 is not in the store"));
    let out = tmp.path().join("out");
    for (name, value) in [("a.json", &t), ("b.json", &empty)] {
        fs_err::write(out.join(name), value.to_string())
            .or_else(|_| {
                fs_err::create_dir_all(&out).unwrap();
                fs_err::write(out.join(name), value.to_string())
            })
            .unwrap();
    }
    if let Some(lines) = crate::harbor::validate(&[out.join("a.json"), out.join("b.json")]) {
        assert_eq!(lines.len(), 2, "{lines:?}");
    }
}

#[test]
fn a_named_cli_agent_is_found_by_its_label_and_its_endpoint_names_the_model() {
    // Episodes name an agent by its label; the export looked agents up by spec and lost the
    // model and configuration of every agent a run configuration file had named.
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let mut cfg = config();
    cfg.agents[0].spec = "cli:mini-swe-agent".into();
    cfg.agents[0].name = Some("mini".into());
    cfg.agents[0].config = toml::from_str("kind = \"cli\"\nadapter = \"mini-swe-agent\"\n[endpoint]\nmodel = \"gw-model\"\n").unwrap();
    let store = Store::create(&run, &cfg).unwrap();
    let key = EpisodeKey {
        task: "t/x".into(),
        task_hash: "h".into(),
        agent: "mini".into(),
        agent_hash: "a1".into(),
        user_hash: "u1".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat: 0,
        seed: 3,
    };
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement };
    let mut w = store.begin_episode(&key, &meta).unwrap();
    let id = w.id().to_string();
    w.event(EventKind::AgentTurn { turn: 1, text: Some("hi".into()), tool_calls: vec![], usage: None }).unwrap();
    drop(w);
    let t = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions::default()).unwrap()).unwrap();
    assert_eq!(t["agent"]["name"], "mini");
    assert_eq!(t["agent"]["model_name"], "gw-model");
    assert_eq!(t["agent"]["extra"]["specgap"]["config"]["adapter"], "mini-swe-agent");
    assert!(t["steps"][0].get("llm_call_count").is_none(), "a cli: agent calls a model: its calls per turn are not claimed");
}

/// Regression: an agent whose model had no price, in a run that priced another component,
/// exported `cost_usd: 0` for its calls; its cost is unknown, so it is left out.
#[test]
fn an_agent_model_without_a_price_has_no_cost_in_a_priced_run() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config();
    cfg.agents[0].config.remove("price");
    cfg.users[0] = toml::from_str(
        "spec = \"chat:talker\"\nhash = \"u1\"\nconfig = { kind = \"chat\", model = \"talker\", price = { input_per_mtok = 1.0, output_per_mtok = 2.0 } }\n",
    )
    .unwrap();
    let store = Store::create(&tmp.path().join("run"), &cfg).unwrap();
    let key = key("chat:mock-model");
    let meta = EpisodeMeta { user: "chat:talker".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement };
    let mut w = store.begin_episode(&key, &meta).unwrap();
    let id = w.id().to_string();
    let turn_usage = usage(100, 20, 40, 0.0);
    w.event(EventKind::AgentTurn { turn: 1, text: Some("done".into()), tool_calls: vec![], usage: Some(turn_usage.clone()) }).unwrap();
    w.record_usage(Role::Agent, &turn_usage).unwrap();
    drop(w);
    let t = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions::default()).unwrap()).unwrap();
    let step = t["steps"].as_array().unwrap().iter().find(|s| s["source"] == "agent").unwrap();
    assert_eq!(step["metrics"]["prompt_tokens"], 100);
    assert_eq!(step["metrics"].get("cost_usd"), None, "{step}");
    assert_eq!(t["final_metrics"].get("total_cost_usd"), None, "{}", t["final_metrics"]);
}

/// A run made before replay agents were named portably labels them by the script's absolute
/// path; a public export names them by the file name (a private one keeps the label).
#[test]
fn a_replay_agent_labelled_by_an_absolute_path_is_exported_by_its_file_name() {
    let tmp = tempfile::tempdir().unwrap();
    let label = "replay:/home/someone/scripts/careful.jsonl";
    let (store, id) = store_of_one_turn(tmp.path(), label, "kind = \"replay\"\nsource_sha256 = \"ab\"\n");
    let public = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions::default()).unwrap()).unwrap();
    assert_eq!(public["agent"]["name"], "replay:careful.jsonl");
    assert!(!public.to_string().contains("/home/someone"), "{public}");
    let private = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions { include_private: true }).unwrap()).unwrap();
    assert_eq!(private["agent"]["name"], label);
}

/// A `cli:command=` agent labelled by its whole template (a run made before portable names, or
/// a label a user gave it) and configured with it: a public export names it and shows its
/// command without the directories of its absolute paths; a private one keeps both.
#[test]
fn a_command_agent_is_exported_without_its_paths_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let label = "cli:command=/home/someone/bin/agent --rules=/home/someone/r.md {instruction_file}";
    let config =
        "kind = \"cli\"\nadapter = \"command\"\ncommand = \"/home/someone/bin/agent --rules=/home/someone/r.md {instruction_file}\"\n";
    let (store, id) = store_of_one_turn(tmp.path(), label, config);
    let public = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions::default()).unwrap()).unwrap();
    assert_eq!(public["agent"]["name"], "cli:command=agent --rules=r.md {instruction_file}");
    assert_eq!(public["agent"]["extra"]["specgap"]["config"]["command"], "agent --rules=r.md {instruction_file}");
    assert!(!public.to_string().contains("/home/someone"), "{public}");
    let private = serde_json::to_value(episode_trajectory(&store, &id, ExportOptions { include_private: true }).unwrap()).unwrap();
    assert_eq!(private["agent"]["name"], label);
    assert_eq!(private["agent"]["extra"]["specgap"]["config"]["command"], label.trim_start_matches("cli:command="));
}

/// A store under `dir/run` whose one agent is labelled `label` (its spec) with the stored
/// configuration `config_toml`, holding one episode of one empty turn; the store and the
/// episode's id.
fn store_of_one_turn(dir: &std::path::Path, label: &str, config_toml: &str) -> (Store, String) {
    let mut cfg = config();
    cfg.agents[0].spec = label.into();
    cfg.agents[0].config = toml::from_str(config_toml).unwrap();
    let store = Store::create(&dir.join("run"), &cfg).unwrap();
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement };
    let mut w = store.begin_episode(&key(label), &meta).unwrap();
    let id = w.id().to_string();
    w.event(EventKind::AgentTurn { turn: 1, text: None, tool_calls: vec![], usage: None }).unwrap();
    drop(w);
    (store, id)
}
