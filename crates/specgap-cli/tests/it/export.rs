//! `specgap export --format atif` of a `chat:` agent episode made against the mock
//! OpenAI-compatible server: the ATIF steps carry the same turns, tool calls, results and
//! token counts as the store, and Harbor's own pinned models accept every file.

use std::path::Path;

use serde_json::{Value, json};
use specgap_protocol::event::EventKind;
use specgap_store::{Role, Store};

use crate::support::*;

#[allow(dead_code)]
#[path = "../../../specgap-atif/tests/it/harbor.rs"]
mod harbor;

use crate::chat::mock_server::{Captured, MockServer, Scripted, check_request, completion};

/// One agent turn as the store holds it: text, calls (id, tool, arguments), usage.
type Turn = (Option<String>, Vec<(String, String, Value)>, specgap_protocol::event::Usage);

const KEY_ENV: &str = "SPECGAP_CLI_EXPORT_TEST_KEY";

/// A competent agent on payment-retry with a reply text, a batched turn, a question, the
/// gold fix and a submission; the relay user answers the question.
fn handler() -> impl Fn(&Captured, usize) -> Scripted + Send + Sync {
    let gold = fs_err::read_to_string(repo().join("examples/tasks/payment-retry/solutions/gold/shop/checkout.py")).unwrap();
    move |request, _| {
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        let (text, calls): (Option<&str>, Vec<(&str, Value)>) = match step {
            0 => (
                Some("Let me look around first."),
                vec![("list_files", json!({"path": "records"})), ("read_text", json!({"path": "README.md"}))],
            ),
            1 => (None, vec![("ask_user", json!({"question": "Which of the records should I trust most?"}))]),
            2 => (None, vec![("write_text", json!({"path": "shop/checkout.py", "content": gold}))]),
            3 => (Some("Submitting."), vec![("submit", json!({"summary": "retries added"}))]),
            _ => return Scripted::json(completion(Some("All done."), &[], "stop")),
        };
        let ids: Vec<String> = (0..calls.len()).map(|i| format!("c{step}-{i}")).collect();
        let refs: Vec<(&str, &str, Value)> = calls.iter().zip(&ids).map(|((tool, args), id)| (id.as_str(), *tool, args.clone())).collect();
        Scripted::json(completion(text, &refs, "tool_calls"))
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs_err::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn export_atif_of_a_chat_agent_episode_carries_the_stores_turns_calls_and_tokens() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let prices = tmp.path().join("prices.toml");
    fs_err::write(&prices, "[models.\"mock\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\ncached_input_per_mtok = 0.5\n").unwrap();
    let mut cmd = specgap();
    cmd.env(KEY_ENV, "sk-export-test")
        .arg("run")
        .arg(repo().join("examples/tasks/payment-retry"))
        .args([
            "--agent",
            "chat:mock",
            "--base-url",
            &server.url,
            "--api-key-env",
            KEY_ENV,
            "--condition",
            "partial",
            "--max-retries",
            "1",
            "--no-report",
        ])
        .arg("--prices")
        .arg(&prices)
        .arg("--out")
        .arg(&run);
    assert_succeeded(cmd.output().unwrap());
    let requests = server.requests();
    for request in &requests {
        let names: Vec<String> =
            request.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect();
        check_request(request, &names.iter().map(String::as_str).collect::<Vec<_>>());
    }

    let out = tmp.path().join("atif");
    let printed = String::from_utf8(
        run_ok(["export".as_ref(), run.as_os_str(), "--format".as_ref(), "atif".as_ref(), "--out".as_ref(), out.as_os_str()]).stdout,
    )
    .unwrap();
    assert_eq!(
        printed,
        format!("wrote 1 ATIF trajectories (ATIF-v1.7) into {}; index: {}\n", out.display(), out.join("index.json").display())
    );
    let store = Store::open(&run).unwrap();
    let episode = store.episodes().unwrap().remove(0);
    let index = read_json(&out.join("index.json"));
    assert_eq!(index["episodes"][0]["episode"], episode.id);
    let file = out.join(&episode.id).join("agent/trajectory.json");
    let atif = read_json(&file);

    // The store's view of the episode.
    let trajectory = specgap_store::read_trajectory(&run, &episode.id).unwrap();
    let turns: Vec<Turn> = trajectory
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AgentTurn { text, tool_calls, usage, .. } => Some((
                text.clone(),
                tool_calls.iter().map(|c| (c.id.clone(), c.tool.clone(), c.arguments.clone())).collect(),
                usage.clone().unwrap(),
            )),
            _ => None,
        })
        .collect();
    let results: Vec<(String, String)> = trajectory
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { call_id, output, .. } => Some((call_id.clone(), output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(turns.len() as u32, episode.turns);
    assert_eq!(turns.len(), requests.len(), "one model request per turn");

    // The ATIF view of it.
    assert_eq!(atif["agent"]["name"], "chat:mock");
    assert_eq!(atif["agent"]["model_name"], "mock");
    let tools: Vec<&str> =
        atif["agent"]["tool_definitions"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    let offered: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, offered, "the tools the model was offered");
    let steps = atif["steps"].as_array().unwrap();
    let agent_steps: Vec<&Value> = steps.iter().filter(|s| s["source"] == "agent").collect();
    assert_eq!(agent_steps.len(), turns.len());
    for (step, (text, calls, usage)) in agent_steps.iter().zip(&turns) {
        assert_eq!(step["message"].as_str().unwrap(), text.as_deref().unwrap_or(""));
        let atif_calls: Vec<(String, String, Value)> = step["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (c["tool_call_id"].as_str().unwrap().to_string(), c["function_name"].as_str().unwrap().to_string(), c["arguments"].clone())
            })
            .collect();
        assert_eq!(&atif_calls, calls);
        assert_eq!(step["metrics"]["prompt_tokens"].as_u64(), Some(usage.input_tokens));
        assert_eq!(step["metrics"]["completion_tokens"].as_u64(), Some(usage.output_tokens));
        assert_eq!(step["metrics"]["cached_tokens"].as_u64(), Some(usage.cached_tokens));
        assert_eq!((usage.input_tokens, usage.output_tokens, usage.cached_tokens), (100, 20, 40), "the mock's counts");
        assert_eq!(step["metrics"]["cost_usd"].as_f64(), Some(usage.cost_usd));
    }
    let observed: Vec<(String, String)> = steps
        .iter()
        .flat_map(|s| s["observation"]["results"].as_array().cloned().unwrap_or_default())
        .map(|r| {
            (
                r["source_call_id"].as_str().or(r["extra"]["specgap"]["call_id"].as_str()).unwrap().to_string(),
                r["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(observed, results, "every tool result, in order");
    let agent_usage = store.usage().unwrap().into_iter().find(|u| u.role == Role::Agent).unwrap().usage;
    let fm = &atif["final_metrics"];
    assert_eq!(fm["total_prompt_tokens"].as_u64(), Some(agent_usage.input_tokens));
    assert_eq!(fm["total_completion_tokens"].as_u64(), Some(agent_usage.output_tokens));
    assert_eq!(fm["total_cached_tokens"].as_u64(), Some(agent_usage.cached_tokens));
    assert_eq!(agent_usage.input_tokens, 100 * turns.len() as u64);
    assert!((fm["total_cost_usd"].as_f64().unwrap() - agent_usage.cost_usd).abs() < 1e-15);
    assert_eq!(fm["total_steps"].as_u64(), Some(steps.len() as u64));
    assert!(!atif.to_string().contains("PRIVATE evaluation"), "evaluations stay out by default");

    if let Some(lines) = harbor::validate(&[file]) {
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("valid ") && lines[0].contains(" ATIF-v1.7 "), "{lines:?}");
    }
}
