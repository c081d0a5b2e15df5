//! `cli:` roles (issue 27 item 1): the Planner and the Auditor played by specgap-agents' test
//! agent (`cli:command`, python) against a scripted mock model behind the real gateway and
//! sandbox, the Builder and Calibrator scripted; payment-retry driven to `ready` with exact
//! hand-offs, verdicts, retries and usage, and each role shown only its view.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use specgap_agents::cli::CliConfig;
use specgap_gateway::mock::MockUpstream;
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_synth::cli_role::CliRole;
use specgap_synth::pipeline::{Config, Limits, Roles, synthesize};
use specgap_synth::role::{Role, RoleName};

use crate::support::{
    Scripts, accepted_at_first_iteration, audit_pass, brief, package_copy, payment_retry, step, steps, without_latency, write_handoff,
};

const MODEL: &str = "mock-role-model";
const KEY_ENV: &str = "SPECGAP_TEST_SYNTH_CLI_KEY";

fn tokens(n: u64) -> Tokens {
    Tokens { input: 1000 + n, output: 100 + n, cached: 0, ..Tokens::default() }
}

fn bash(n: u64, command: &str) -> specgap_gateway::mock::MockReply {
    let call = [Call::new(&format!("call-{n}"), "bash", json!({ "command": command }))];
    replies::openai_chat(MODEL, &format!("step {n}"), &call, tokens(n))
}

fn done(n: u64, text: &str) -> specgap_gateway::mock::MockReply {
    replies::openai_chat(MODEL, text, &[], tokens(n))
}

fn config(mock: &MockUpstream) -> CliConfig {
    let script = fs_err::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-agents/tests/fixtures/cli-agent.py")).unwrap();
    let mut config = CliConfig::new("command", MODEL);
    config.command = Some(format!("python3 {}", script.display()));
    config.endpoint.base_url = format!("{}/v1", mock.url());
    config.endpoint.api_key_env = KEY_ENV.into();
    config.endpoint.retry_base_ms = 1;
    config.endpoint.max_retries = 1;
    config.stop_grace_ms = 500;
    config
}

fn cli_role(mock: &MockUpstream, role: RoleName, runs: &Path) -> Box<dyn Role> {
    Box::new(CliRole::new("cli:command=cli-agent.py", config(mock), role, runs.to_owned(), Duration::from_secs(300)))
}

fn usage_of(requests: &[u64]) -> Value {
    json!({
        "input_tokens": requests.iter().map(|n| 1000 + n).sum::<u64>(),
        "output_tokens": requests.iter().map(|n| 100 + n).sum::<u64>(),
        "cached_tokens": 0, "reasoning_tokens": 0, "requests": requests.len(), "retries": 0, "cost_usd": 0.0
    })
}

#[test]
fn cli_planner_and_auditor_drive_payment_retry_to_ready_in_their_own_views() {
    // SAFETY: set only here, always to the same value.
    unsafe { std::env::set_var(KEY_ENV, "sk-synth-cli-test") };
    let scripts = Scripts::new();
    let good = package_copy(&scripts.tmp.path().join("good"));
    let runs: PathBuf = scripts.tmp.path().join("runs");
    let planner_guard = "test -f /source/instruction.full.md && test ! -e /package";
    let auditor_guard = "test -f /package/evaluator/evaluate.py && test ! -e /source && ! touch /package/x 2>/dev/null";
    let mock = MockUpstream::start([
        // Planner run 1: no file, prose as its final message: malformed.
        done(1, "I would rather describe the task in prose."),
        // Planner run 2 (the retry, a fresh run): writes the brief.
        bash(2, &write_handoff(planner_guard, &brief())),
        done(3, "brief written"),
        // Auditor: reads the package read-only, writes its verdict.
        bash(4, &write_handoff(auditor_guard, &audit_pass()["reply"])),
        done(5, "verdict written"),
    ])
    .unwrap();
    let planner = cli_role(&mock, RoleName::Planner, &runs);
    let auditor = cli_role(&mock, RoleName::Auditor, &runs);
    let done = scripts.run_planner_and_auditor(planner, auditor, &good).unwrap();
    assert_eq!((done.designs, done.iterations), (1, 1));

    let journal = scripts.journal();
    let mut expected = vec![step("planner", 1, 0, 1, "malformed")];
    expected.extend(accepted_at_first_iteration(2));
    assert_eq!(steps(&journal), expected);
    let entries = journal["entries"].as_array().unwrap();
    assert_eq!(entries[0]["reply"], "I would rather describe the task in prose.");
    assert_eq!(entries[1]["detail"], brief());
    assert_eq!(entries[4]["detail"]["verdict"], "pass");
    assert_eq!(journal["roles"]["planner"], "cli:command=cli-agent.py");
    assert_eq!(journal["outcome"]["status"], "ready");
    assert_eq!(without_latency(entries[0]["usage"].clone()), usage_of(&[1]));
    assert_eq!(without_latency(entries[1]["usage"].clone()), usage_of(&[2, 3]));
    assert_eq!(without_latency(journal["usage"]["planner"].clone()), usage_of(&[1, 2, 3]));
    assert_eq!(without_latency(journal["usage"]["auditor"].clone()), usage_of(&[4, 5]));

    // Each request was a fresh run with its own records; the retry's message says why.
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let first_user = |i: usize| {
        let body: Value = serde_json::from_slice(&requests[i].body).unwrap();
        body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap().to_owned()
    };
    assert!(first_user(0).contains("- /source (read-only)\n- /handoff (writable)\n"), "{}", first_user(0));
    assert!(!first_user(0).contains("refused"));
    assert!(first_user(1).contains(&format!("Your last answer was refused: {}", entries[0]["detail"].as_str().unwrap())));
    assert!(first_user(3).contains("- /package (read-only)\n- /handoff (writable)\n"));
    for run in ["planner-1", "planner-2", "auditor-1"] {
        assert!(runs.join(run).join("record/trajectory.jsonl").is_file(), "{run}");
    }
    assert!(!runs.join("planner-1/handoff/handoff.json").exists());
    assert_eq!(
        serde_json::from_str::<Value>(&fs_err::read_to_string(runs.join("planner-2/handoff/handoff.json")).unwrap()).unwrap(),
        brief()
    );
}

/// A cli: role that writes no hand-off file and ends with an empty message cannot answer: the
/// synthesis stops naming the run's trajectory, and what the run spent is journaled.
#[test]
fn a_cli_role_without_a_hand_off_file_or_final_message_stops_the_synthesis_naming_its_trajectory() {
    // SAFETY: set only by tests of this binary, always to the same value.
    unsafe { std::env::set_var(KEY_ENV, "sk-synth-cli-test") };
    let scripts = Scripts::new();
    let runs: PathBuf = scripts.tmp.path().join("runs");
    let mock = MockUpstream::start([done(1, "")]).unwrap();
    let mut roles = Roles {
        planner: cli_role(&mock, RoleName::Planner, &runs),
        builder: scripts.role("builder", vec![]),
        auditor: scripts.role("auditor", vec![]),
        calibrator: scripts.role("calibrator", vec![]),
        implementer: None,
        reference: None,
    };
    let config =
        Config { source: payment_retry(), out: scripts.out(), limits: Limits::default(), prompts: Default::default(), resume: false };
    let err = synthesize(&config, &mut roles, &specgap_task::SandboxJudge::new(true).unwrap()).unwrap_err();
    let trajectory = runs.join("planner-1/record/trajectory.jsonl");
    assert_eq!(
        specgap_protocol::text::error_chain(&err),
        format!(
            "the planner could not answer: the planner wrote no /handoff/handoff.json and ended without a final message (trajectory {})",
            trajectory.display()
        )
    );
    assert!(trajectory.is_file());
    let journal = scripts.journal();
    assert_eq!(steps(&journal), vec![step("planner", 1, 0, 1, "error")]);
    assert_eq!(without_latency(journal["usage"]["planner"].clone()), usage_of(&[1]));
}

/// A cli: role run that fails inside the run (the model service refuses its second request)
/// still spent its first request: the journal records it (status `error`), and a resumed
/// synthesis carries it into its caps: with `--max-tokens` one below what the failed run and
/// the resumed one spent together, the resumed synthesis stops after the Planner's answer.
#[test]
fn a_failing_cli_role_runs_spending_is_journaled_and_counts_toward_the_caps_of_a_resumed_synthesis() {
    // SAFETY: set only by tests of this binary, always to the same value.
    unsafe { std::env::set_var(KEY_ENV, "sk-synth-cli-test") };
    let scripts = Scripts::new();
    let runs: PathBuf = scripts.tmp.path().join("runs");
    let refused =
        specgap_gateway::mock::MockReply::json(400, r#"{"error": {"message": "scripted refusal", "type": "invalid_request_error"}}"#);
    let mock = MockUpstream::start([bash(1, "true"), refused]).unwrap();
    let roles = |mock: &MockUpstream| Roles {
        planner: cli_role(mock, RoleName::Planner, &runs),
        builder: scripts.role("builder", vec![]),
        auditor: scripts.role("auditor", vec![]),
        calibrator: scripts.role("calibrator", vec![]),
        implementer: None,
        reference: None,
    };
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let limits = Limits { max_tokens: Some(3311), ..Limits::default() };
    let config = Config { source: payment_retry(), out: scripts.out(), limits, prompts: Default::default(), resume: false };
    let err = synthesize(&config, &mut roles(&mock), &judge).unwrap_err();
    assert!(matches!(err, specgap_synth::pipeline::SynthError::Role { role: "planner", .. }), "{err:?}");
    let journal = scripts.journal();
    assert_eq!(steps(&journal), vec![step("planner", 1, 0, 1, "error")]);
    // Two requests, the refused one spending no token.
    let failed_run = with_requests(usage_of(&[1]), 2);
    assert_eq!(without_latency(journal["entries"][0]["usage"].clone()), failed_run);
    assert_eq!(without_latency(journal["usage"]["planner"].clone()), failed_run);

    // Resumed: the Planner is asked again (a fresh run) and answers; 1102 tokens carried plus
    // 1104 + 1106 now make 3312, over the cap of 3311.
    let mock = MockUpstream::start([bash(2, &write_handoff("true", &brief())), done(3, "brief written")]).unwrap();
    let config = Config { resume: true, ..config };
    let err = synthesize(&config, &mut roles(&mock), &judge).unwrap_err();
    assert_eq!(err.to_string(), "the roles and rollouts spent 3312 tokens, more than --max-tokens 3311");
    let journal = scripts.journal();
    assert_eq!(steps(&journal), vec![step("planner", 1, 0, 1, "accepted")]);
    assert_eq!(without_latency(journal["carried"]["planner"].clone()), failed_run);
    assert_eq!(without_latency(journal["entries"][0]["usage"].clone()), usage_of(&[2, 3]));
    assert_eq!(without_latency(journal["usage"]["planner"].clone()), with_requests(usage_of(&[1, 2, 3]), 4));
    assert_eq!(journal["outcome"]["message"], "the roles and rollouts spent 3312 tokens, more than --max-tokens 3311");
}

fn with_requests(mut usage: Value, requests: u64) -> Value {
    usage["requests"] = json!(requests);
    usage
}
