//! `specgap run --agent chat:<model> --user chat:<model>` against the hand-written
//! OpenAI-compatible mock server of `specgap-agents` (shared by path): the flags reach the
//! requests, the store and run.toml hold the configuration and usage, `show` and the report
//! show usage and cost, `--max-cost` and `--max-tokens` hold episodes back for `--resume`, and the API key
//! appears nowhere in the run directory.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use specgap_protocol::run::EndReason;
use specgap_store::{Role, Status, Store};

use specgap_test_support::files::walk;

use crate::support::*;

#[allow(dead_code)]
#[path = "../../../specgap-agents/tests/it/mock_server.rs"]
pub(crate) mod mock_server;

use mock_server::{Captured, MockServer, Scripted, check_request, completion};

const KEY_ENV: &str = "SPECGAP_CLI_CHAT_TEST_KEY";
const KEY: &str = "sk-cli-5d1e77-distinctive-key";
const USER_REPLY: &str = "I only know what I saw myself; please find the rest out from the project.";
/// Every mock completion: 100 prompt tokens (40 cached), 20 completion tokens (5 reasoning).
const PRICES: &str = "[models.\"mock\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\ncached_input_per_mtok = 0.5\n";
const PER_REQUEST_USD: f64 = (60.0 * 1.0 + 40.0 * 0.5 + 20.0 * 2.0) / 1_000_000.0;

fn payment_retry() -> std::path::PathBuf {
    repo().join("examples/tasks/payment-retry")
}

/// A competent agent on payment-retry: asks once, reads, writes the gold fix, submits. User
/// requests (no tools offered) get [`USER_REPLY`].
fn handler() -> impl Fn(&Captured, usize) -> Scripted + Send + Sync {
    let gold = fs_err::read_to_string(payment_retry().join("solutions/gold/shop/checkout.py")).unwrap();
    move |request, _| {
        if request.body.get("tools").is_none() {
            return Scripted::json(completion(Some(USER_REPLY), &[], "stop"));
        }
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        let call: Option<(&str, Value)> = match step {
            0 => Some(("ask_user", json!({"question": "Which of the records should I trust most?"}))),
            1 => Some(("read_text", json!({"path": "README.md"}))),
            2 => Some(("write_text", json!({"path": "shop/checkout.py", "content": gold}))),
            3 => Some(("submit", json!({"summary": "retries added"}))),
            _ => None,
        };
        match call {
            Some((tool, args)) => Scripted::json(completion(None, &[(&format!("c{step}"), tool, args)], "tool_calls")),
            None => Scripted::json(completion(Some("All done."), &[], "stop")),
        }
    }
}

/// `specgap run` on payment-retry with the chat flags and `extra` arguments.
fn chat_run(server: &MockServer, out: &Path, prices: &Path, extra: &[&str]) -> Output {
    assert_succeeded(chat_run_any_status(server, out, prices, extra))
}

/// [`chat_run`] without the check that it exited 0.
fn chat_run_any_status(server: &MockServer, out: &Path, prices: &Path, extra: &[&str]) -> Output {
    let mut cmd = specgap();
    cmd.env(KEY_ENV, KEY)
        .arg("run")
        .arg(payment_retry())
        .args(["--agent", "chat:mock", "--base-url", &server.url, "--api-key-env", KEY_ENV])
        .args(["--user", "chat:mock", "--model-arg", "temperature=0", "--user-model-arg", "max_tokens=300"])
        .args(["--condition", "partial,full", "--jobs", "1", "--max-retries", "1"])
        .arg("--prices")
        .arg(prices)
        .arg("--out")
        .arg(out)
        .args(extra);
    cmd.output().expect("spawn specgap")
}

fn write_prices(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("prices.toml");
    fs_err::write(&path, PRICES).unwrap();
    path
}

/// Asserts `KEY` is in no file of `dir` (trajectories decompressed).
fn assert_key_nowhere(dir: &Path) {
    let mut files = 0;
    for entry in walk(dir) {
        files += 1;
        let bytes = fs_err::read(&entry).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "the API key is in {}", entry.display());
    }
    assert!(files >= 4, "only {files} files in the run directory");
    let store = Store::open(dir).unwrap();
    for episode in store.episodes().unwrap() {
        let trajectory = specgap_store::read_trajectory(store.dir(), &episode.id).unwrap();
        assert!(!serde_json::to_string(&trajectory.events).unwrap().contains(KEY));
    }
}

#[test]
fn chat_agent_and_user_run_with_usage_in_the_store_show_and_report() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let prices = write_prices(tmp.path());
    let output = chat_run(&server, &out, &prices, &[]);

    // Requests: the key as bearer token, the model arguments, the tool-call invariants.
    let requests = server.requests();
    let (agent, user): (Vec<&Captured>, Vec<&Captured>) = requests.iter().partition(|r| r.body.get("tools").is_some());
    assert_eq!((agent.len(), user.len()), (8, 2));
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
        assert_eq!(request.body["model"], "mock");
    }
    for request in &agent {
        assert_eq!(request.body["temperature"], 0);
        assert!(request.body.get("max_tokens").is_none());
        assert!(request.body.get("stream").is_none_or(|s| s == false));
        let names: Vec<String> =
            request.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect();
        check_request(request, &names.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert!(user.iter().all(|r| r.body["max_tokens"] == 300 && r.body.get("temperature").is_none()));

    // The store.
    let store = Store::open(&out).unwrap();
    let episodes = store.episodes().unwrap();
    assert_eq!(episodes.len(), 2);
    for e in &episodes {
        assert_eq!(
            (e.status, e.end_reason, e.final_score, e.submissions),
            (Status::Finished, Some(EndReason::Accepted), Some(1.0), 1),
            "{e:?}"
        );
    }
    let questions = store.questions().unwrap();
    assert_eq!(questions.len(), 2);
    assert!(questions.iter().all(|q| q.question.text == "Which of the records should I trust most?" && q.question.answer == USER_REPLY));
    let usage = store.usage().unwrap();
    assert_eq!(usage.len(), 4);
    for row in &usage {
        let requests = if row.role == Role::Agent { 4 } else { 1 };
        assert_eq!(
            (row.usage.requests, row.usage.input_tokens, row.usage.cached_tokens, row.usage.output_tokens),
            (requests, 100 * requests, 40 * requests, 20 * requests)
        );
        assert!((row.usage.cost_usd - requests as f64 * PER_REQUEST_USD).abs() < 1e-12, "{row:?}");
    }

    // run.toml: the whole configuration, the key's variable, never the key.
    let run_toml = fs_err::read_to_string(out.join("run.toml")).unwrap();
    let config: toml::Table = toml::from_str(&run_toml).unwrap();
    let agent_table = config["agents"].as_array().unwrap()[0]["config"].as_table().unwrap();
    assert_eq!(agent_table["model"].as_str(), Some("mock"));
    assert_eq!(agent_table["base_url"].as_str(), Some(server.url.as_str()));
    assert_eq!(agent_table["api_key_env"].as_str(), Some(KEY_ENV));
    assert_eq!(agent_table["prompt_version"].as_str(), Some(specgap_engine::PROMPT_VERSION));
    assert_eq!(agent_table["model_args"]["temperature"].as_integer(), Some(0));
    assert_eq!(agent_table["price"]["input_per_mtok"].as_float(), Some(1.0));
    let user_table = config["users"].as_array().unwrap()[0]["config"].as_table().unwrap();
    assert_eq!(user_table["user_prompt_version"].as_str(), Some(specgap_agents::chat::user::USER_PROMPT_VERSION));
    assert_eq!(user_table["model_args"]["max_tokens"].as_integer(), Some(300));

    // The report printed after the run shows usage and cost per group and role.
    let report = String::from_utf8(output.stdout).unwrap();
    assert!(report.contains("## Model usage and cost"), "{report}");
    for condition in ["full", "partial"] {
        let agent_row = format!("| chat:mock | {condition} | clean | agent | 1 | 4 | 0 | 400 | 160 | 80 | 20 | ");
        let user_row = format!("| chat:mock | {condition} | clean | user | 1 | 1 | 0 | 100 | 40 | 20 | 5 | ");
        let line = |start: &str| report.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no {start:?} in\n{report}"));
        assert!(line(&agent_row).ends_with(" | 0.0005 | 0.0005 |"), "{}", line(&agent_row));
        assert!(line(&user_row).ends_with(" | 0.0001 | 0.0001 |"), "{}", line(&user_row));
    }

    // `specgap show`: per episode, then per role for the run and for one episode.
    let table = String::from_utf8(run_ok([std::ffi::OsStr::new("show"), out.as_os_str()]).stdout).unwrap();
    let header = table.lines().next().unwrap();
    assert!(header.ends_with("requests  tokens in/out  cost"), "{table}");
    for e in &episodes {
        let row = table.lines().find(|l| l.starts_with(&e.id)).unwrap();
        assert!(row.ends_with("5         500/100        $0.0006"), "{row}");
    }
    assert!(table.contains("model usage of the run (all episodes and attempts):\n  agent 8 requests (0 retried) · 800 input tokens (320 cached) · 160 output tokens (40 reasoning) · "), "{table}");
    assert!(
        table.contains("  user  2 requests (0 retried) · 200 input tokens (80 cached) · 40 output tokens (10 reasoning) · "),
        "{table}"
    );
    assert!(table.trim_end().ends_with("  total $0.0012"), "{table}");
    let transcript =
        String::from_utf8(run_ok([std::ffi::OsStr::new("show"), out.as_os_str(), std::ffi::OsStr::new(&episodes[0].id)]).stdout).unwrap();
    assert!(
        transcript.contains(
            "  model usage:\n  agent 4 requests (0 retried) · 400 input tokens (160 cached) · 80 output tokens (20 reasoning) · "
        ),
        "{transcript}"
    );
    assert!(
        transcript.contains("  user  1 requests (0 retried) · 100 input tokens (40 cached) · 20 output tokens (5 reasoning) · "),
        "{transcript}"
    );
    assert!(transcript.contains("  total $0.0006\n"), "{transcript}");

    assert_key_nowhere(&out);
}

/// Regression: in a priced run, a model without a price showed `$0.0000` in `show` and the
/// report, was added into the totals as 0, and was 0 in the report's JSON.
#[test]
fn a_model_without_a_price_in_a_priced_run_is_unpriced_not_zero() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let prices = write_prices(tmp.path());
    let output = specgap()
        .env(KEY_ENV, KEY)
        .arg("run")
        .arg(payment_retry())
        .args(["--agent", "chat:mock", "--base-url", &server.url, "--api-key-env", KEY_ENV])
        .args(["--user", "chat:unlisted", "--condition", "partial", "--jobs", "1", "--no-report", "--prices"])
        .arg(&prices)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_succeeded(output);

    let table = String::from_utf8(run_ok([std::ffi::OsStr::new("show"), out.as_os_str()]).stdout).unwrap();
    let episode = crate::support::episodes(&out).remove(0);
    let row = table.lines().find(|l| l.starts_with(&episode.id)).unwrap();
    assert!(row.ends_with("5         500/100        $0.0005 + unpriced"), "{row}");
    assert!(
        table.contains(" · $0.0005\n  user  1 requests (0 retried) · 100 input tokens (40 cached) · 20 output tokens (5 reasoning) · "),
        "{table}"
    );
    let tail = "s latency · unpriced\n  total $0.0005 + unpriced\n  unpriced: model unlisted has no price in the run's price table (--prices, or the panel file), so its calls' cost is unknown and in no total\n";
    assert!(table.ends_with(tail), "{table}");
    let transcript =
        String::from_utf8(run_ok([std::ffi::OsStr::new("show"), out.as_os_str(), std::ffi::OsStr::new(&episode.id)]).stdout).unwrap();
    assert!(transcript.contains(tail), "{transcript}");

    let report = |format: &str| {
        run_ok([std::ffi::OsStr::new("report"), out.as_os_str(), std::ffi::OsStr::new("--format"), std::ffi::OsStr::new(format)]).stdout
    };
    let json: Value = serde_json::from_slice(&report("json")).unwrap();
    let usage = json["usage"].as_array().unwrap();
    assert_eq!(usage.len(), 2);
    assert_eq!((usage[0]["role"].as_str(), usage[1]["role"].as_str()), (Some("agent"), Some("user")));
    assert!((usage[0]["cost_usd"].as_f64().unwrap() - 4.0 * PER_REQUEST_USD).abs() < 1e-12, "{}", usage[0]);
    assert_eq!(usage[0]["unpriced_models"], json!([]));
    assert_eq!(usage[1]["cost_usd"], Value::Null);
    assert_eq!(usage[1]["priced_cost_usd"], json!(0.0));
    assert_eq!(usage[1]["unpriced_models"], json!(["unlisted"]));
    let markdown = String::from_utf8(report("md")).unwrap();
    let user_row =
        markdown.lines().find(|l| l.starts_with("| chat:mock | partial | clean | user | ")).unwrap_or_else(|| panic!("{markdown}"));
    assert!(user_row.ends_with(" | unpriced | — |"), "{user_row}");
    assert!(markdown.contains("unpriced: model unlisted has no price in the run's price table"), "{markdown}");
}

/// `--max-tokens` as `--max-cost`, counting prompt + completion tokens: every mock completion
/// is 100 prompt tokens (40 cached) and 20 completion tokens (5 reasoning), and an episode
/// makes 4 agent requests and 1 user request, so the first episode spends 600 tokens.
#[test]
fn max_tokens_holds_episodes_back_exits_4_and_a_resume_at_the_spend_runs_the_rest() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let prices = write_prices(tmp.path());
    let output = chat_run_any_status(&server, &out, &prices, &["--max-tokens", "599", "--no-report"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    let held_back = format!(
        "incomplete: 1 planned episode was not started because the run's prompt + completion tokens passed --max-tokens 599. Continue with:\n  specgap run --resume {} --max-tokens <higher>\n",
        out.display()
    );
    assert!(stderr.ends_with(&held_back), "{stderr}");
    assert!(
        stderr.contains(
            "the run's prompt + completion tokens are 600, above --max-tokens 599: no further episodes start (1 not started; running ones finish). Continue later with --resume and a higher --max-tokens"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "2 episodes: 1 finished, 0 evaluation errors, 0 infrastructure errors, 0 interrupted, 0 already done; 0 not applicable; 1 not started because the run's prompt + completion tokens passed --max-tokens (continue with specgap run --resume {} --max-tokens <higher>)",
            out.display()
        )),
        "{stderr}"
    );
    let episodes = episodes(&out);
    assert_eq!(episodes.len(), 1);
    assert_eq!((episodes[0].status, episodes[0].end_reason), (Status::Finished, Some(EndReason::Accepted)));
    let usage = Store::open(&out).unwrap().usage().unwrap();
    assert_eq!(usage.iter().map(|u| u.usage.input_tokens + u.usage.output_tokens).sum::<u64>(), 600);

    // run.toml keeps the cap (and no cost cap): a plain --resume starts nothing new.
    let toml_text = std::fs::read_to_string(out.join("run.toml")).unwrap();
    assert!(toml_text.contains("max_tokens = 599\n"), "{toml_text}");
    assert!(!toml_text.contains("max_cost_usd"), "{toml_text}");
    let output = specgap().env(KEY_ENV, KEY).args(["run", "--no-report", "--resume"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.ends_with(&held_back), "{stderr}");
    assert_eq!(crate::support::episodes(&out).len(), 1);
    // A cap equal to the 600 spent is not passed: the held-back episode runs.
    let output = specgap().env(KEY_ENV, KEY).args(["run", "--no-report", "--max-tokens", "600", "--resume"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "2 episodes: 1 finished, 0 evaluation errors, 0 infrastructure errors, 0 interrupted, 1 already done; 0 not applicable\n"
        ),
        "{stderr}"
    );
    let episodes = crate::support::episodes(&out);
    assert_eq!(episodes.len(), 2);
    assert!(episodes.iter().all(|e| e.status == Status::Finished && e.final_score == Some(1.0)));
}

#[test]
fn max_cost_holds_episodes_back_exits_4_and_a_plain_resume_keeps_the_stored_cap() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let prices = write_prices(tmp.path());
    // One request already passes this limit: the first episode runs to its end, the second
    // never starts.
    let limit = format!("{}", PER_REQUEST_USD / 2.0);
    let output = chat_run_any_status(&server, &out, &prices, &["--max-cost", &limit, "--no-report"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Regression: a run the cap cut short used to exit 0 like a complete one.
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    let held_back = format!(
        "incomplete: 1 planned episode was not started because the run's model cost passed --max-cost ${limit}. Continue with:\n  specgap run --resume {} --max-cost <higher>\n",
        out.display()
    );
    assert!(stderr.ends_with(&held_back), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the run's model cost is $0.0006, above --max-cost ${limit}: no further episodes start (1 not started; running ones finish)"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("2 episodes: 1 finished, 0 evaluation errors, 0 infrastructure errors, 0 interrupted, 0 already done; 0 not applicable; 1 not started because the run's model cost passed --max-cost"), "{stderr}");
    let episodes = episodes(&out);
    assert_eq!(episodes.len(), 1);
    assert_eq!((episodes[0].status, episodes[0].end_reason), (Status::Finished, Some(EndReason::Accepted)));
    // The report says the run is incomplete (docs/decisions.md "Report: input checks").
    let report: serde_json::Value = serde_json::from_slice(
        &run_ok([std::ffi::OsStr::new("report"), out.as_os_str(), std::ffi::OsStr::new("--format"), std::ffi::OsStr::new("json")]).stdout,
    )
    .unwrap();
    assert_eq!(
        report["warnings"],
        serde_json::json!([format!(
            "run {0}: 1 of 2 planned episodes has no result (1 absent from the store); the measures use the other 1 — resume with `specgap run --resume {0}`",
            out.display()
        )])
    );

    // run.toml keeps the cap: a plain --resume starts nothing new (regression: it used to run
    // the held-back episodes without any cap).
    let toml_text = std::fs::read_to_string(out.join("run.toml")).unwrap();
    assert!(toml_text.contains(&format!("max_cost_usd = {limit}")), "{toml_text}");
    let mut resume = specgap();
    let output = resume.env(KEY_ENV, KEY).args(["run", "--no-report", "--resume"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1 not started because the run's model cost passed --max-cost"), "{stderr}");
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.ends_with(&held_back), "{stderr}");
    assert_eq!(crate::support::episodes(&out).len(), 1);
    // A higher cap given to --resume lets the rest run.
    let mut resume = specgap();
    let output = resume.env(KEY_ENV, KEY).args(["run", "--no-report", "--max-cost", "1", "--resume"]).arg(&out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("2 episodes: 1 finished, 0 evaluation errors, 0 infrastructure errors, 0 interrupted, 1 already done"),
        "{stderr}"
    );
    let episodes = crate::support::episodes(&out);
    assert_eq!(episodes.len(), 2);
    assert!(episodes.iter().all(|e| e.status == Status::Finished && e.final_score == Some(1.0)));
    assert_key_nowhere(&out);
}

#[test]
fn clarification_rounds_flag_limits_text_questions_of_a_chat_agent() {
    // Every agent turn asks under the heading and calls no tool; the relay customer answers.
    let server = MockServer::start(|_request: &Captured, _| {
        let text = "## Questions for the client\n- How should a store be supplied when its own city's warehouse runs out?";
        Scripted::json(completion(Some(text), &[], "stop"))
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let output = specgap()
        .env_remove("OPENAI_API_KEY")
        .arg("run")
        .arg(repo().join("examples/tasks/retail-replenishment"))
        .args(["--agent", "chat:mock", "--base-url", &server.url, "--condition", "interact", "--clarification-rounds", "2"])
        .args(["--jobs", "1", "--no-report", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows = episodes(&out);
    assert_eq!(rows.len(), 1);
    // Two rounds answered; the third gets the reply to proceed (the episode goes on), and
    // the fourth reply that only asks, like a second reply without a call, ends it.
    assert_eq!((rows[0].status, rows[0].end_reason, rows[0].turns), (Status::Finished, Some(EndReason::NoToolCall), 4));
    let store = Store::open(&out).unwrap();
    let questions = store.questions().unwrap();
    assert_eq!(questions.len(), 2);
    assert!(questions.iter().all(|q| q.question.text == "How should a store be supplied when its own city's warehouse runs out?"));
    // The agent got the first answer as a user message in the text-channel shape.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.header("authorization").is_none()));
    let last_user = requests[1].messages().iter().rev().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap().to_string();
    assert!(last_user.starts_with("- How should a store be supplied when its own city's warehouse runs out?\n  "), "{last_user}");
    let proceed = requests[3].messages().iter().rev().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap().to_string();
    assert_eq!(proceed, specgap_engine::episode::PROCEED_REPLY);
    assert_eq!(store.config().clarification_rounds, Some(2));
}

#[test]
fn an_api_key_variable_that_is_not_set_is_warned_about_once() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let output = specgap()
        .env_remove("SPECGAP_UNSET_KEY_7F3A9D")
        .arg("run")
        .arg(payment_retry())
        .args(["--agent", "chat:mock", "--base-url", &server.url, "--api-key-env", "SPECGAP_UNSET_KEY_7F3A9D"])
        .args(["--condition", "partial,full", "--jobs", "1", "--no-report", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warning =
        "environment variable SPECGAP_UNSET_KEY_7F3A9D (--api-key-env) is not set or empty; requests carry no Authorization header";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("SPECGAP_UNSET_KEY_7F3A9D").count(), 1, "one warning in all: {stderr}");
    assert!(server.requests().iter().all(|r| r.header("authorization").is_none()));

    // Regression: a resumed run said `--api-key-env` although the name came from run.toml.
    let resumed = specgap().env_remove("SPECGAP_UNSET_KEY_7F3A9D").args(["run", "--no-report", "--resume"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    let warning = format!(
        "environment variable SPECGAP_UNSET_KEY_7F3A9D (`api_key_env` of agent chat:mock in {}) is not set or empty; requests carry no Authorization header",
        out.join("run.toml").display()
    );
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("SPECGAP_UNSET_KEY_7F3A9D").count(), 1, "{stderr}");
}

/// Regression: the warning named `--api-key-env` when the variable's name came from a
/// `--config` file; it now names the file and the entry.
#[test]
fn an_api_key_variable_named_by_a_config_file_that_is_not_set_is_warned_about_with_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("experiment.toml");
    let text = format!(
        "suites = [\"{}\"]\nconditions = [\"partial\"]\n[[agent]]\nkind = \"chat\"\nmodel = \"mock\"\napi_key_env = \"SPECGAP_UNSET_KEY_A1\"\n[user]\nkind = \"chat\"\nmodel = \"mock\"\napi_key_env = \"SPECGAP_UNSET_KEY_B2\"\n",
        payment_retry().display()
    );
    fs_err::write(&config, text).unwrap();
    let output = specgap()
        .env_remove("SPECGAP_UNSET_KEY_A1")
        .env_remove("SPECGAP_UNSET_KEY_B2")
        .args(["run", "--dry-run", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for (var, entry) in [("SPECGAP_UNSET_KEY_A1", "agent 1"), ("SPECGAP_UNSET_KEY_B2", "[user]")] {
        let warning = format!(
            "environment variable {var} (`api_key_env` of {entry} in {}) is not set or empty; requests carry no Authorization header",
            config.display()
        );
        assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    }
    assert!(!stderr.contains("--api-key-env"), "{stderr}");
}

/// A mock agent on payment-retry that reads, then — while `hang` is set — never answers its
/// second request; otherwise it writes the gold fix and submits.
fn hanging_agent(hang: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> MockServer {
    let hang = std::sync::Arc::clone(hang);
    let gold = fs_err::read_to_string(payment_retry().join("solutions/gold/shop/checkout.py")).unwrap();
    MockServer::start(move |request, _| {
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        match step {
            0 => Scripted::json(completion(None, &[("c0", "read_text", json!({"path": "README.md"}))], "tool_calls")),
            1 if hang.load(std::sync::atomic::Ordering::SeqCst) => Scripted::Hang,
            1 => Scripted::json(completion(
                None,
                &[("c1", "write_text", json!({"path": "shop/checkout.py", "content": gold}))],
                "tool_calls",
            )),
            _ => Scripted::json(completion(None, &[("c2", "submit", json!({}))], "tool_calls")),
        }
    })
}

/// Starts `specgap run` of the hanging agent under `full` into `out` and waits until its
/// second model request is in flight (the first was answered).
fn start_until_second_request(server: &MockServer, out: &Path, tmp: &Path) -> std::process::Child {
    let prices = write_prices(tmp);
    let stderr = std::fs::File::create(tmp.join("stderr.txt")).unwrap();
    let mut child = specgap()
        .env(KEY_ENV, KEY)
        .arg("run")
        .arg(payment_retry())
        .args(["--agent", "chat:mock", "--base-url", &server.url, "--api-key-env", KEY_ENV, "--condition", "full"])
        .args(["--jobs", "1", "--no-report", "--prices"])
        .arg(&prices)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    if !wait_for(std::time::Duration::from_secs(120), || server.requests().len() >= 2) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the run never reached its second model request: {}", std::fs::read_to_string(tmp.join("stderr.txt")).unwrap());
    }
    child
}

/// (attempt, role, requests, input tokens) of every usage row of the store in `out`.
fn usage_rows(out: &Path) -> Vec<(u32, Role, u64, u64)> {
    Store::open(out).unwrap().usage().unwrap().iter().map(|u| (u.attempt, u.role, u.usage.requests, u.usage.input_tokens)).collect()
}

#[test]
fn sigkill_mid_episode_keeps_the_killed_attempts_usage_for_after_the_resume() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let hang = std::sync::Arc::new(AtomicBool::new(true));
    let server = hanging_agent(&hang);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut child = start_until_second_request(&server, &out, tmp.path());
    child.kill().unwrap(); // SIGKILL, while the episode waits for the model
    child.wait().unwrap();

    // The answered request of the killed attempt is in the store before any resume.
    assert_eq!(usage_rows(&out), [(1, Role::Agent, 1, 100)]);
    assert_eq!(episodes(&out)[0].status, Status::Running);

    hang.store(false, Ordering::SeqCst);
    let resumed = specgap().env(KEY_ENV, KEY).args(["run", "--no-report", "--resume"]).arg(&out).output().unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let rows = episodes(&out);
    assert_eq!((rows[0].status, rows[0].end_reason, rows[0].attempts), (Status::Finished, Some(EndReason::Accepted), 2));
    // Both attempts were paid for: the killed one's row is kept beside the resumed one's.
    assert_eq!(usage_rows(&out), [(1, Role::Agent, 1, 100), (2, Role::Agent, 3, 300)]);
    let table = String::from_utf8(run_ok([std::ffi::OsStr::new("show"), out.as_os_str()]).stdout).unwrap();
    assert!(
        table.contains("model usage of the run (all episodes and attempts):\n  agent 4 requests (0 retried) · 400 input tokens (160 cached) · 80 output tokens (20 reasoning) · "),
        "{table}"
    );
}

#[test]
fn ctrl_c_abandons_a_model_request_in_flight_and_the_episode_ends_interrupted() {
    use std::sync::atomic::AtomicBool;
    let hang = std::sync::Arc::new(AtomicBool::new(true));
    let server = hanging_agent(&hang);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut child = start_until_second_request(&server, &out, tmp.path());
    send_signal(child.id(), libc::SIGINT);
    // The request would hang for its 600 s timeout; the stop abandons it (the limit here only
    // guards against hanging the test).
    let exited = wait_for(std::time::Duration::from_secs(60), || child.try_wait().unwrap().is_some());
    if !exited {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    assert!(exited, "the run did not end after Ctrl-C while a model request was in flight");
    assert_eq!(status.code(), Some(130), "{}", std::fs::read_to_string(tmp.path().join("stderr.txt")).unwrap());
    let rows = episodes(&out);
    assert_eq!((rows[0].status, rows[0].end_reason), (Status::Interrupted, Some(EndReason::Interrupted)));
    assert_eq!(usage_rows(&out), [(1, Role::Agent, 1, 100)]);
    let end = events(&out, &rows[0].id).into_iter().last().map(|e| e.kind);
    assert_eq!(
        end,
        Some(specgap_protocol::event::EventKind::End {
            reason: "interrupted".into(),
            detail: specgap_engine::episode::AGENT_ABANDONED.into()
        })
    );
}

#[test]
fn a_prompts_override_reaches_the_models_and_keys_new_episodes() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let prices = write_prices(tmp.path());
    let plain = tmp.path().join("plain");
    chat_run(&server, &plain, &prices, &[]);
    let before = server.requests().len();

    let prompts = tmp.path().join("prompts");
    fs_err::create_dir(&prompts).unwrap();
    fs_err::write(prompts.join("evidence.md"), "Paper wording. Budget: {turns} turns and {tool_calls} tool calls.\n").unwrap();
    fs_err::write(prompts.join("owner.md"), "You are the owner: {persona}\n").unwrap();
    let replaced = tmp.path().join("replaced");
    chat_run(&server, &replaced, &prices, &["--prompts", prompts.to_str().unwrap()]);

    // The agent's system prompt is the file, filled in; the owner's is too.
    let requests = server.requests();
    let (agent, user): (Vec<&Captured>, Vec<&Captured>) = requests[before..].iter().partition(|r| r.body.get("tools").is_some());
    assert!(!agent.is_empty() && !user.is_empty());
    for request in &agent {
        assert_eq!(request.system(), "Paper wording. Budget: 120 turns and 360 tool calls.");
    }
    let persona = specgap_task::load(payment_retry()).unwrap().user().unwrap().persona.trim().to_string();
    for request in &user {
        assert_eq!(request.system(), format!("You are the owner: {persona}"));
    }
    // New episodes: the stored texts and their hashes key them.
    let ids = |dir: &Path| episodes(dir).into_iter().map(|e| e.id).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(ids(&plain).len(), 2);
    assert!(ids(&plain).is_disjoint(&ids(&replaced)));
    let config: toml::Table = toml::from_str(&fs_err::read_to_string(replaced.join("run.toml")).unwrap()).unwrap();
    let agent_prompts = &config["agents"][0]["config"]["prompts"];
    // sha256 of the file's text (printf 'Paper wording. Budget: {turns} turns and {tool_calls} tool calls.\n' | sha256sum).
    assert_eq!(
        agent_prompts["evidence.md"]["sha256"].as_str(),
        Some(specgap_engine::prompt_files::sha256_hex("Paper wording. Budget: {turns} turns and {tool_calls} tool calls.\n").as_str())
    );
    assert!(config["users"][0]["config"]["prompts"].get("owner.md").is_some());
    assert!(agent_prompts.get("owner.md").is_none());

    // --resume uses the stored texts, even with the directory gone.
    fs_err::remove_dir_all(&prompts).unwrap();
    let output = specgap().env(KEY_ENV, KEY).args(["run", "--resume"]).arg(&replaced).arg("--no-report").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    // A file named after no prompt is refused, naming it.
    fs_err::create_dir(&prompts).unwrap();
    fs_err::write(prompts.join("system.md"), "x").unwrap();
    let output = specgap()
        .arg("run")
        .arg(payment_retry())
        .args(["--prompts", prompts.to_str().unwrap(), "--out"])
        .arg(tmp.path().join("bad"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{} holds a name that no prompt has: system.md; the prompt files are evidence.md, literal.md",
            prompts.display()
        )),
        "{stderr}"
    );
}
