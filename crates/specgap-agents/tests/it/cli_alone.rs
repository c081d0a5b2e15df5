//! A `cli:` program run outside an engine episode ([`specgap_agents::cli::alone`], issue 27):
//! the test agent against a scripted mock upstream sees its workspace and its mounts only,
//! cannot write a read-only mount, writes its hand-off file into the writable one, and the
//! outcome carries the exact usage of its three requests.

use std::time::Duration;

use specgap_agents::cli::alone::{AloneEnd, AloneJob, run_alone};
use specgap_gateway::mock::MockUpstream;
use specgap_sandbox::Mount;

use crate::cli_support::*;

#[test]
fn a_lone_program_sees_only_its_mounts_writes_its_hand_off_and_reports_exact_usage() {
    // SAFETY: set only by tests of this binary, always to the same value.
    unsafe { std::env::set_var(KEY_ENV, canary_key()) };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let handoff = dir.path().join("handoff");
    let outside = dir.path().join("outside");
    for d in [&source, &handoff, &outside, &dir.path().join("work")] {
        fs_err::create_dir_all(d).unwrap();
    }
    fs_err::write(source.join("brief.txt"), "the brief\n").unwrap();
    let secret = outside.join("secret.txt");
    fs_err::write(&secret, "not for the agent\n").unwrap();
    let look = format!(
        "cat /src/brief.txt > seen.txt; (echo x > /src/new.txt) 2>/dev/null && echo rw > src-mode.txt || echo ro > src-mode.txt; \
         cat {} > leaked.txt 2>/dev/null || echo hidden > outside.txt",
        secret.display()
    );
    let mock = MockUpstream::start([
        bash(1, &look, false),
        bash(2, r#"printf '{"requirements": 5}' > /handoff/handoff.json"#, false),
        done(3, "hand-off written", false),
    ])
    .unwrap();
    let config = command_config(&mock, false);
    let job = AloneJob {
        id: "planner-1".into(),
        workspace: dir.path().join("work"),
        mounts: vec![
            Mount { host: source.clone(), sandbox: "/src".into(), writable: false },
            Mount { host: handoff.clone(), sandbox: "/handoff".into(), writable: true },
        ],
        scratch: dir.path().join("scratch"),
        record_dir: dir.path().join("record"),
        system_prompt: "You are the planner.".into(),
        message: "Read /src and write /handoff/handoff.json.".into(),
        wall: Duration::from_secs(120),
    };
    let outcome = run_alone(&config, &job).unwrap();
    assert_eq!(outcome.end, AloneEnd::Exited);
    assert_eq!(outcome.exit_status, Some(0));
    assert_eq!(outcome.final_text.as_deref(), Some("hand-off written"));
    assert_eq!(outcome.exchanges, 3);
    let usage = &outcome.usage;
    assert_eq!(
        (usage.requests, usage.input_tokens, usage.output_tokens, usage.cached_tokens),
        (3, 101 + 102 + 103, 11 + 12 + 13, 1 + 2 + 3)
    );
    let work = dir.path().join("work");
    assert_eq!(fs_err::read_to_string(work.join("seen.txt")).unwrap(), "the brief\n", "the read-only mount is visible");
    assert_eq!(fs_err::read_to_string(work.join("src-mode.txt")).unwrap(), "ro\n", "and not writable");
    assert!(!source.join("new.txt").exists());
    assert_eq!(fs_err::read_to_string(work.join("outside.txt")).unwrap(), "hidden\n", "a host path not mounted is not visible");
    assert_eq!(fs_err::read_to_string(handoff.join("handoff.json")).unwrap(), r#"{"requirements": 5}"#);
    // The trajectory: three exchanges and the exit, in order, tool results before the
    // exchange that carried them.
    let kinds: Vec<String> = fs_err::read_to_string(&outcome.trajectory)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(kinds.iter().filter(|k| *k == "model_exchange").count(), 3, "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("agent_exit"), "{kinds:?}");
    check_requests(&mock.requests());
    assert_eq!(mock.requests().len(), 3);
}
