//! External agents through the `specgap` binary (issue 14): the real `mini-swe-agent` package
//! (installed by `specgap agents install mini-swe-agent`; with `SPECGAP_REQUIRE_EXTERNAL=1` a
//! missing installation fails the test) against a scripted mock upstream that checks every
//! request, and seed 001's measures over what it did.

use std::ffi::OsStr;
use std::path::PathBuf;

use serde_json::{Value, json};
use specgap_gateway::mock::MockUpstream;
use specgap_gateway::mock::replies::{self, Call, Tokens};

use crate::support::*;

const MODEL: &str = "mock-mini-model";
const KEY_ENV: &str = "SPECGAP_TEST_MINI_KEY";
const KEY: &str = "sk-mini-test-5a7c1e0b9d";

/// The installed mini-swe-agent (installed into the shared test cache on first use), or
/// `None` (the test is then skipped, or fails under `SPECGAP_REQUIRE_EXTERNAL=1`).
pub fn mini_installed() -> Option<PathBuf> {
    crate::agents::installed_mini_swe_agent()
}

/// mini's answer running `command` with its `bash` tool.
fn mini_bash(n: u64, command: &str) -> specgap_gateway::mock::MockReply {
    let call = [Call::new(&format!("call-{n}"), "bash", json!({ "command": command }))];
    replies::openai_chat(MODEL, &format!("THOUGHT: step {n}."), &call, Tokens { input: 1000 + n, output: 20 + n, ..Tokens::default() })
}

#[test]
fn a_mini_swe_agent_episodes_reads_and_writes_feed_opened_and_inspected() {
    let Some(_) = mini_installed() else { return };
    // Each of the three episodes (clean, residual:root-refresh, residual:trim-only, in plan
    // order, one job) looks at the inherited changes, reads ivtree/node.py and declares the
    // work done with mini's own completion marker; nothing is changed.
    let per_episode = ["git status", "cat ivtree/node.py | head -20", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"];
    let mut script = Vec::new();
    for episode in 0..3u64 {
        for (i, command) in per_episode.iter().enumerate() {
            script.push(mini_bash(episode * 10 + i as u64, command));
        }
    }
    let mock = MockUpstream::start(script).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let suite = repo().join("examples/tasks/interval-tree");
    let base_url = format!("{}/v1", mock.url());
    let args: Vec<&OsStr> = [
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("cli:mini-swe-agent"),
        OsStr::new("--model"),
        OsStr::new(MODEL),
        OsStr::new("--base-url"),
        OsStr::new(&base_url),
        OsStr::new("--api-key-env"),
        OsStr::new(KEY_ENV),
        OsStr::new("--condition"),
        OsStr::new("blind"),
        OsStr::new("--start"),
        OsStr::new("clean,residual:all"),
        OsStr::new("--jobs"),
        OsStr::new("1"),
        OsStr::new("--no-report"),
        OsStr::new("--out"),
        out.as_os_str(),
    ]
    .to_vec();
    assert_succeeded(specgap().args(&args).env(KEY_ENV, KEY).env("XDG_CACHE_HOME", crate::agents::test_cache()).output().unwrap());
    let requests = mock.requests();
    assert_eq!(requests.len(), 9, "three model calls per episode: mini ends at its marker without asking again");
    for row in episodes(&out) {
        // mini and litellm (its bundled cost map, telemetry off) reach nothing but the gateway.
        assert_no_network_attempt(&events(&out, &row.id));
    }
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.path(), "/v1/chat/completions", "request {i}");
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()), "request {i}");
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["model"], MODEL);
        assert_eq!(body["tools"][0]["function"]["name"], "bash", "mini's one tool");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        // blind adds nothing to the scaffold's prompts: mini's task text holds the request alone.
        let task = messages[1]["content"].as_str().unwrap();
        assert!(task.starts_with("Please solve this issue: # `IntervalTree.chop()`"), "{task}");
        assert!(!task.contains("submit"), "no harness prompt under blind");
        // Every earlier call's observation is in the conversation (mini.yaml's JSON form).
        let step = i % 3;
        assert_eq!(messages.len(), 2 + 2 * step, "request {i}");
        if step > 0 {
            assert_eq!(messages[3]["role"], "tool");
            assert!(messages[3]["content"].as_str().unwrap().contains("\"returncode\": 0"), "{}", messages[3]);
        }
    }
    let rows = episodes(&out);
    assert_eq!(rows.len(), 3);
    for row in &rows {
        assert_eq!(row.end_reason.map(|r| r.as_str()), Some("submitted"), "{}: the marker is an agent-declared submit", row.start);
        assert_eq!((row.turns, row.tool_calls), (3, 3));
        // The marker command ran and mini ended on its output (issue 29 item 4): its result is
        // what it printed, never the "not executed" padding mini's log gives it; the submit
        // it stands for gets the harness's answer to the delivery.
        let results: Vec<String> = events(&out, &row.id)
            .into_iter()
            .filter_map(|e| match e.kind {
                specgap_protocol::event::EventKind::ToolResult { output, .. } => Some(output),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 4, "{}: {results:?}", row.start);
        assert_eq!(results[2], "exit status 0\n--- stdout ---\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n", "{}", row.start);
        assert_eq!(results[3], "The delivery was received. The work is finished.", "{}", row.start);
        assert!(results.iter().all(|r| !r.contains("not executed")), "{results:?}");
    }
    let report = report_json(&out);
    let acceptance = &report["residual"][0]["measures"]["acceptance"];
    // Both continuations are normally submitted (the marker is mini's own submit, seed 001
    // App. D.1) and fail their hidden tests (nothing was changed). Each ran `git status`:
    // inspected = 1. root-refresh leaves ivtree/node.py out (L = {node.py}); `cat
    // ivtree/node.py | head -20` shows it: opened = 1; nothing was changed: changed = 0, and
    // every inherited line is kept.
    assert_eq!(acceptance["continuations"], 2, "{acceptance:#}");
    assert_eq!(acceptance["inspected"].as_f64(), Some(1.0), "{acceptance:#}");
    assert_eq!(acceptance["left_out_opened"].as_f64(), Some(1.0), "{acceptance:#}");
    assert_eq!(acceptance["left_out_residual"].as_f64(), Some(0.0), "{acceptance:#}");
    assert_eq!(acceptance["kept_failed"].as_f64(), Some(1.0), "{acceptance:#}");
}

/// The test agent of `specgap-agents` (a small tool loop over OpenAI chat completions).
fn test_agent() -> PathBuf {
    std::fs::canonicalize(repo().join("crates/specgap-agents/tests/fixtures/cli-agent.py")).unwrap()
}

/// Answers by the step of the conversation (its assistant messages so far), so every attempt of
/// every episode gets the same answers whatever ran before: a slow first command carrying
/// `marker`, a second command, then a reply without a tool call.
fn answer_by_step(marker: String) -> impl Fn(&specgap_gateway::mock::ReceivedRequest) -> specgap_gateway::mock::MockReply + Send + Sync {
    move |request| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()) as u64;
        let tokens = Tokens { input: 500 + step, output: 5 + step, ..Tokens::default() };
        let call = |command: &str| [Call::new(&format!("call-{step}"), "bash", json!({ "command": command }))];
        match step {
            0 => replies::openai_chat(MODEL, "first", &call(&format!("sleep 3; echo {marker} > /dev/null; echo one >> log.txt")), tokens),
            1 => replies::openai_chat(MODEL, "second", &call("echo two >> log.txt"), tokens),
            _ => replies::openai_chat(MODEL, "Done.", &[], tokens),
        }
    }
}

fn command_run_args(mock: &MockUpstream, out: &std::path::Path) -> Vec<std::ffi::OsString> {
    let agent = format!("cli:command=python3 {}", test_agent().display());
    let base_url = format!("{}/v1", mock.url());
    let suite = repo().join("examples/tasks/interval-tree");
    [
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new(&agent),
        OsStr::new("--model"),
        OsStr::new(MODEL),
        OsStr::new("--base-url"),
        OsStr::new(&base_url),
        OsStr::new("--api-key-env"),
        OsStr::new(KEY_ENV),
        OsStr::new("--condition"),
        OsStr::new("blind"),
        OsStr::new("--start"),
        OsStr::new("clean"),
        OsStr::new("--repeats"),
        OsStr::new("2"),
        OsStr::new("--jobs"),
        OsStr::new("1"),
        OsStr::new("--seed"),
        OsStr::new("3"),
        OsStr::new("--no-report"),
        OsStr::new("--out"),
        out.as_os_str(),
    ]
    .iter()
    .map(|s| s.to_os_string())
    .collect()
}

/// The usage of each episode's last attempt, by role (a killed attempt keeps its own row).
fn last_attempt_usage(dir: &std::path::Path) -> Vec<(String, String, u64, u64, u64)> {
    let store = specgap_store::Store::open(dir).unwrap();
    let mut last: std::collections::BTreeMap<(String, String), (u32, specgap_protocol::event::Usage)> = Default::default();
    for row in store.usage().unwrap() {
        let key = (row.episode.clone(), format!("{:?}", row.role));
        if last.get(&key).is_none_or(|(attempt, _)| row.attempt > *attempt) {
            last.insert(key, (row.attempt, row.usage));
        }
    }
    last.into_iter().map(|((e, r), (_, u))| (e, r, u.requests, u.input_tokens, u.output_tokens)).collect()
}

#[test]
fn sigkill_of_the_runner_during_a_cli_episode_then_resume_equals_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = marker("cli-sigkill");
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(answer_by_step(marker.clone()));
    let reference = tmp.path().join("reference");
    assert_succeeded(specgap().args(command_run_args(&mock, &reference)).env(KEY_ENV, KEY).output().unwrap());
    assert_eq!(episodes(&reference).len(), 2);

    let out = tmp.path().join("killed");
    let stderr = std::fs::File::create(tmp.path().join("stderr.txt")).unwrap();
    let mut child =
        specgap().args(command_run_args(&mock, &out)).env(KEY_ENV, KEY).stdout(std::process::Stdio::null()).stderr(stderr).spawn().unwrap();
    // Kill it while the second episode's agent sleeps in its first command.
    let ready = wait_for(std::time::Duration::from_secs(120), || finished_count(&out) >= 1 && !processes_with(&marker).is_empty());
    if !ready {
        let _ = child.kill();
        panic!("the run never reached its second episode: {:#?}", episodes(&out));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = wait_for(std::time::Duration::from_secs(30), || {
        processes_with(&marker).is_empty() && processes_with(&test_agent().display().to_string()).is_empty()
    });
    assert!(gone, "agent processes outlived the runner: {:?}", processes_with(&marker));
    assert!(episodes(&out).iter().any(|e| e.status == specgap_store::Status::Running));

    assert_succeeded(specgap().args([OsStr::new("run"), OsStr::new("--resume"), out.as_os_str()]).env(KEY_ENV, KEY).output().unwrap());
    let rows = episodes(&out);
    assert!(rows.iter().all(|e| e.status == specgap_store::Status::Finished), "{rows:#?}");
    assert!(rows.iter().any(|e| e.attempts == 2), "the killed episode ran again");
    let (mut expected, mut got) = (tables_without_attempts(&reference), tables_without_attempts(&out));
    // Usage is kept per attempt: the killed attempt's requests stay counted (its own row).
    expected.remove("usage");
    got.remove("usage");
    for (table, rows) in &expected {
        assert_eq!(Some(rows), got.get(table), "table {table} of the resumed run differs");
    }
    assert_eq!(expected.len(), got.len());
    assert_eq!(last_attempt_usage(&reference), last_attempt_usage(&out));
    for row in episodes(&out) {
        assert_eq!((row.end_reason.map(|r| r.as_str()), row.turns), (Some("agent_exit"), 3));
    }
}

/// A shell command writing the payment-retry solution `solution`'s shop/checkout.py into the
/// workspace (mini's sandbox cannot see the package, so the bytes travel in the command).
fn write_checkout(solution: &str) -> String {
    let bytes = fs_err::read(repo().join("examples/tasks/payment-retry/solutions").join(solution).join("shop/checkout.py")).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("python3 -c \"import sys; open('shop/checkout.py', 'wb').write(bytes.fromhex(sys.argv[1]))\" {hex}")
}

#[test]
fn mini_swe_agent_reads_asks_the_owner_submits_reads_the_feedback_fixes_and_is_accepted() {
    let Some(_) = mini_installed() else { return };
    let answer = "Anything under shop/ except shop/gateway.py, which mirrors Paylane's SDK; the records are history and stay as they are.";
    let script = [
        mini_bash(1, "head -3 shop/checkout.py"),
        mini_bash(2, "ask_user 'May I edit shop/gateway.py, or the records?'"),
        mini_bash(3, &write_checkout("literal")),
        mini_bash(4, "submit 'retries added'"),
        mini_bash(5, &write_checkout("gold")),
        mini_bash(6, "submit 'retries only where they are safe'"),
    ];
    let mock = MockUpstream::start(script).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let base_url = format!("{}/v1", mock.url());
    let suite = repo().join("examples/tasks/payment-retry");
    let output = specgap()
        .args([
            OsStr::new("run"),
            suite.as_os_str(),
            OsStr::new("--agent"),
            OsStr::new("cli:mini-swe-agent"),
            OsStr::new("--model"),
            OsStr::new(MODEL),
        ])
        .args(["--base-url", &base_url, "--api-key-env", KEY_ENV, "--condition", "partial", "--start", "clean", "--no-report", "--out"])
        .arg(&out)
        .env(KEY_ENV, KEY)
        .env("XDG_CACHE_HOME", crate::agents::test_cache())
        .output()
        .unwrap();
    assert_succeeded(output);
    let requests = mock.requests();
    assert_eq!(requests.len(), 6, "mini was stopped at the acceptance");
    for request in &requests {
        assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    }
    // The owner's answer was the output of mini's `ask_user` command, in its next request;
    // the first submission's feedback was the output of `submit` (exit status 1).
    let tool_output = |i: usize| -> String {
        let body: Value = serde_json::from_slice(&requests[i].body).unwrap();
        body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
    };
    let observation = |i: usize| -> Value { serde_json::from_str(&tool_output(i)).unwrap() };
    assert_eq!(observation(2), json!({ "returncode": 0, "output": format!("{answer}\n") }));
    let feedback = observation(4);
    assert_eq!(feedback["returncode"], 1, "{feedback}");
    assert!(feedback["output"].as_str().unwrap().len() > 40, "the owner's feedback is submit's output: {feedback}");
    let rows = episodes(&out);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("accepted"));
    assert_eq!((row.turns, row.tool_calls, row.submissions), (6, 6, 2));
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)));
    let usage = last_attempt_usage(&out);
    let agent: Vec<_> = usage.iter().filter(|u| u.1 == "Agent").collect();
    assert_eq!(agent.len(), 1, "{usage:?}");
    // mini_bash(n) answers with 1000 + n input and 20 + n output tokens.
    assert_eq!((agent[0].2, agent[0].3, agent[0].4), (6, (1001..=1006).sum::<u64>(), (21..=26).sum::<u64>()));
}

#[test]
fn a_cli_agent_without_the_bridge_program_is_refused_when_the_run_is_configured() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("specgap-bridge");
    let suite = repo().join("examples/tasks/interval-tree");
    let output = specgap()
        .env("SPECGAP_BRIDGE", &missing)
        .arg("run")
        .arg(&suite)
        .args(["--agent", "cli:command=true", "--model", MODEL, "--out"])
        .arg(tmp.path().join("run"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a cli: agent needs the harness tools' program"), "{stderr}");
    assert!(stderr.contains(&format!("SPECGAP_BRIDGE is set to {}, which is not an executable file", missing.display())), "{stderr}");
    assert!(!tmp.path().join("run").exists(), "nothing was created");
}

/// `specgap run --dry-run` of one `cli:command` agent with `extra` flags: the resolved
/// configuration, or the failed output.
fn dry_run_cli(extra: &[&str]) -> Result<specgap_protocol::run::RunConfig, std::process::Output> {
    let tmp = tempfile::tempdir().unwrap();
    let output = specgap()
        .arg("run")
        .arg(repo().join("examples/tasks/interval-tree"))
        .args(["--agent", "cli:command=true", "--model", MODEL, "--dry-run", "--out"])
        .arg(tmp.path().join("run"))
        .args(extra)
        .output()
        .unwrap();
    if output.status.success() { Ok(toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap()) } else { Err(output) }
}

#[test]
fn the_ask_channel_is_stored_with_a_cli_agent_and_changes_its_episode_key() {
    let default = dry_run_cli(&[]).unwrap();
    let mcp = dry_run_cli(&["--ask-channel", "mcp"]).unwrap();
    let text = dry_run_cli(&["--ask-channel", "text"]).unwrap();
    let channel =
        |c: &specgap_protocol::run::RunConfig| c.agents[0].config.get("ask_channel").and_then(toml::Value::as_str).map(str::to_string);
    assert_eq!(channel(&default).as_deref(), Some("mcp"), "cli:command's default is stored, not left implicit");
    assert_eq!(channel(&text).as_deref(), Some("text"));
    assert_eq!(default.agents[0].hash, mcp.agents[0].hash, "naming the default is the same agent");
    assert_ne!(text.agents[0].hash, mcp.agents[0].hash, "the channel is part of the agent hash, so of every episode key");

    for (value, expected) in [
        (
            "native",
            "--ask-channel native: cli:command has no question tool of its own that specgap serves (only cli:opencode has); use text or mcp",
        ),
        ("voice", "invalid value 'voice' for '--ask-channel <text|native|mcp>': unknown ask channel `voice`; expected text, native or mcp"),
    ] {
        let refused = dry_run_cli(&["--ask-channel", value]).unwrap_err();
        assert_eq!(refused.status.code(), Some(2), "{value}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(expected), "{value}: {stderr}");
    }
}

#[test]
fn opencode_native_question_tool_is_accepted_and_a_dry_run_only_notes_the_missing_installation() {
    let refused = specgap()
        .env("XDG_CACHE_HOME", tempfile::tempdir().unwrap().path())
        .arg("run")
        .arg(repo().join("examples/tasks/interval-tree"))
        .args(["--agent", "cli:opencode", "--model", MODEL, "--dry-run", "--ask-channel", "native"])
        .output()
        .unwrap();
    // A dry run plans it and notes the missing installation (a real run would refuse then).
    assert_eq!(refused.status.code(), Some(0), "{}", String::from_utf8_lossy(&refused.stderr));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!stderr.contains("--ask-channel native"), "native is opencode's own channel: {stderr}");
    assert!(
        stderr
            .starts_with("dry run: cli agent opencode@1.18.33 is not installed; install it with `specgap agents install opencode@1.18.33`"),
        "{stderr}"
    );
}

/// A `cli:command` agent that looks a vendor's API up and connects to it: `specgap report`
/// warns with the count and the attempts, and `specgap show` lists each attempt.
#[test]
fn network_attempts_of_a_cli_agent_are_a_report_warning_and_lines_of_its_transcript() {
    let tmp = tempfile::tempdir().unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(|request: &specgap_gateway::mock::ReceivedRequest| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        let command = "python3 -c \"import socket; socket.create_connection(('api.anthropic.com', 443), 10).close()\"";
        match step {
            0 => replies::openai_chat(MODEL, "", &[Call::new("call-0", "bash", json!({ "command": command }))], Tokens::default()),
            _ => replies::openai_chat(MODEL, "Done.", &[], Tokens::default()),
        }
    });
    let out = tmp.path().join("run");
    let mut args = command_run_args(&mock, &out);
    let repeats = args.iter().position(|a| a == "--repeats").unwrap();
    args[repeats + 1] = "1".into();
    assert_succeeded(specgap().args(&args).env(KEY_ENV, KEY).output().unwrap());
    let report: Value =
        serde_json::from_slice(&run_ok([OsStr::new("report"), out.as_os_str(), OsStr::new("--format"), OsStr::new("json")]).stdout)
            .unwrap();
    let warnings: Vec<String> = serde_json::from_value(report["warnings"].clone()).unwrap();
    let network: Vec<&String> = warnings.iter().filter(|w| w.contains("network")).collect();
    assert_eq!(
        network,
        [
            "1 of 1 cli: episodes tried to reach the network outside the model gateway (3 attempt(s), none got through: dns A api.anthropic.com ×1, dns AAAA api.anthropic.com ×1, tcp 127.0.0.2:443 ×1); `specgap show` lists them"
        ],
        "{warnings:#?}"
    );
    let id = episodes(&out)[0].id.clone();
    let transcript = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str(), OsStr::new(&id)]).stdout).unwrap();
    assert!(transcript.contains("  [network attempt outside the gateway: dns A api.anthropic.com]\n"), "{transcript}");
    // Each attempt stands where it happened, before the turn that came after the bash call
    // (the agent's closing "Done."), not after the end; the tripwire's summary closes the record.
    let attempt = transcript.find("  [network attempt outside the gateway: tcp 127.0.0.2:443]\n").expect("the tcp attempt is listed");
    let done = transcript.rfind("Done.").expect("the closing reply");
    let summary = transcript.find("  [network tripwire: armed, 3 attempt(s)]\n").expect("the tripwire summary");
    assert!(attempt < done && done < summary, "{transcript}");
}

#[test]
fn show_lists_the_request_abandoned_at_the_wall_budget_with_its_outcome_and_the_result_it_carried() {
    // Issue 31 item 6 and issue 29 item 5: the request in flight at the wall budget was in the
    // journal only, and the result it carried was missing from the transcript.
    let tmp = tempfile::tempdir().unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(|request: &specgap_gateway::mock::ReceivedRequest| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        match step {
            0 => replies::openai_chat(
                MODEL,
                "",
                &[Call::new("call-0", "bash", json!({ "command": "echo $((4700+11))" }))],
                Tokens::default(),
            ),
            _ => replies::openai_chat(MODEL, "Done.", &[], Tokens::default()).with_delay(std::time::Duration::from_secs(60)),
        }
    });
    let out = tmp.path().join("run");
    let mut args = command_run_args(&mock, &out);
    let repeats = args.iter().position(|a| a == "--repeats").unwrap();
    args[repeats + 1] = "1".into();
    args.extend(["--wall-sec", "3"].map(std::ffi::OsString::from));
    assert_succeeded(specgap().args(&args).env(KEY_ENV, KEY).output().unwrap());
    let id = episodes(&out)[0].id.clone();
    let transcript = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str(), OsStr::new(&id)]).stdout).unwrap();
    let abandoned = "  [model request 1 main /v1/chat/completions: 403 abandoned (abandoned at the wall budget), 0 in, 0 out]\n";
    let at = transcript.find(abandoned).unwrap_or_else(|| panic!("the abandoned request is listed: {transcript}"));
    let result = transcript.find("4711").expect("the command's result is in the transcript");
    let end = transcript.find("[episode ended: wall_budget").expect("the end");
    assert!(result < at && at < end, "{transcript}");
}

/// A `cli:command=` agent's label keeps the machine's directories out (issue 30 item 3):
/// absolute paths are reduced to file names, two agents that reduce alike are told apart by
/// their templates' hashes, a template without paths keeps its spec as label, and the hash
/// that keys episodes still covers the whole template.
#[test]
fn a_command_agent_is_labelled_without_its_paths_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let templates =
        ["/opt/one/agent --rules=/home/me/r.md", "/opt/two/agent --rules=/home/me/r.md", "/srv/solo/run.sh {instruction_file}", "true"];
    let mut command = specgap();
    command.arg("run").arg(repo().join("examples/tasks/interval-tree"));
    for template in templates {
        command.args(["--agent", &format!("cli:command={template}")]);
    }
    let output = command.args(["--model", MODEL, "--dry-run", "--out"]).arg(tmp.path().join("run")).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let config: specgap_protocol::run::RunConfig = toml::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    let labels: Vec<&str> = config.agents.iter().map(|a| a.label()).collect();
    // The suffixes: the first 8 hex digits of sha256 of each template
    // (`printf %s '/opt/one/agent --rules=/home/me/r.md' | sha256sum`).
    assert_eq!(
        labels,
        [
            "cli:command=agent --rules=r.md@8046cb13",
            "cli:command=agent --rules=r.md@da02b06c",
            "cli:command=run.sh {instruction_file}",
            "cli:command=true"
        ]
    );
    assert_eq!(config.agents[3].name, None, "a template without paths needs no name");
    assert_eq!(config.agents[0].spec, "cli:command=/opt/one/agent --rules=/home/me/r.md", "the spec keeps the path");
    assert_ne!(config.agents[0].hash, config.agents[1].hash, "two programs, two keys");
}
