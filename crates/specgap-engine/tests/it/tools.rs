//! Tools: confinement, gates, arguments, openings (batched turns: `batched.rs`; plan mode: `plan_mode.rs`).

use serde_json::json;
use specgap_engine::episode::UNLOCK_ACKNOWLEDGEMENT;
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture, one, run};

#[test]
fn paths_outside_the_workspace_are_refused() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("read_text", json!({"path": "/etc/passwd"})),
        one("read_text", json!({"path": "billing/../../secret"})),
        one("run_experiment", json!({"command": "ln -s /etc outside && ln -s ../.. up"})),
        one("read_text", json!({"path": "outside/passwd"})),
        one("write_text", json!({"path": "up/escape.txt", "content": "x"})),
        one("list_files", json!({"path": "outside"})),
        one("read_text", json!({"path": "billing/policy.py", "limit": 1})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let results = r.results();
    let refusals: Vec<(&str, bool)> = results.iter().map(|(_, o, e)| (o.as_str(), *e)).collect();
    assert_eq!(refusals[0], ("`/etc/passwd` is absolute; paths must be relative to the workspace", true));
    assert_eq!(refusals[1], ("`billing/../../secret` contains `..`; paths must stay inside the workspace", true));
    assert_eq!(refusals[3], ("`outside/passwd` goes through a link that leads outside the workspace", true));
    assert_eq!(refusals[4], ("`up/escape.txt` goes through a link that leads outside the workspace", true));
    assert_eq!(refusals[5], ("`outside` goes through a link that leads outside the workspace", true));
    assert_eq!(
        refusals[6],
        ("     1\t\"\"\"Numbers agreed with the accountants (shared with the invoicing job; do not edit).\"\"\"\n[lines 1-1 of 7]", false)
    );
    assert!(!r.workdir.join("escape.txt").exists());
}

#[test]
fn unknown_tools_and_bad_arguments_are_tool_errors() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("delete_everything", json!({})),
        one("read_text", json!({"file": "README.md"})),
        one("replace_text", json!({"path": "README.md", "old": "billing", "new": "x"})),
        one("ask_user", json!({"question": "Anyone there?"})),
    ]);
    let r = run(&package, "literal", &mut agent, Options::default());
    let results = r.results();
    assert!(results[0].1.starts_with("unknown tool `delete_everything`; the tools are: list_files, read_text, write_text, replace_text, run_project, run_experiment, submit"), "{}", results[0].1);
    assert!(results[1].1.starts_with("bad arguments for read_text: unknown field `file`"), "{}", results[1].1);
    assert_eq!(results[2].1, "`old` occurs 6 times in `README.md`; it must occur exactly once, nothing was changed");
    // Literal offers no ask_user.
    assert!(results[3].1.starts_with("unknown tool `ask_user`"));
    assert!(results.iter().all(|(_, _, e)| *e));
}

#[test]
fn run_project_replays_a_record() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("run_project", json!({"record": "account-harbor-tea.json"})),
        one("run_project", json!({"record": "missing.json"})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let results = r.results();
    assert!(results[0].1.starts_with("exit status 0\n--- stdout ---\nINV-1101  status=paid"), "{}", results[0].1);
    assert_eq!(results[1].1, "no record `missing.json` under `project_records`; list it with list_files");
}

#[test]
fn the_interact_req_gate_withholds_work_until_the_agent_has_asked_and_is_satisfied() {
    let package = fixture("delivery-basic");
    let plan = json!({"path": "plan.json", "content": "{\"boxes\": []}"});
    let mut agent = TestAgent::new(vec![
        one("write_text", plan.clone()),
        one("ask_user", json!({"question": "I have what I need."})),
        one("write_text", plan.clone()),
        one("ask_user", json!({"question": "Thanks, that settles it."})),
        one("write_text", plan.clone()),
        one("submit", json!({})),
    ]);
    let r = run(&package, "interact-req+gate=on", &mut agent, Options::default());
    let results = r.results();
    let withheld = "`write_text` is withheld until you have asked the client what the request leaves open and then told \
                    them, in an ask_user message without a question mark, that you have what you need";
    assert_eq!((results[0].1.as_str(), results[0].2), (withheld, true));
    // Before any question, a message without a question mark is one question unit: answered.
    assert_eq!(results[1].1, specgap_engine::relay::UNKNOWN_ANSWER);
    assert_eq!((results[2].1.as_str(), results[2].2), (withheld, true));
    assert_eq!(results[3].1, UNLOCK_ACKNOWLEDGEMENT);
    assert!(!results[4].2);
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert_eq!(r.ok().questions, 1);
    // An empty plan misses every item: invalid, score 0.
    assert_eq!(r.scores(), [0.0]);
}

#[test]
fn openings_follow_the_condition() {
    let package = fixture("req-basic");
    let opening = |condition: &str| {
        let agent = TestAgent::new(vec![]);
        let seen = agent.seen.clone();
        let mut agent = agent;
        run(&package, condition, &mut agent, Options::default());
        seen.lock().unwrap().opening.clone().unwrap()
    };
    let partial = opening("partial");
    assert_eq!(partial.message, package.instruction().trim_end());
    let names: Vec<_> = partial.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["list_files", "read_text", "write_text", "replace_text", "run_project", "run_experiment", "ask_user", "submit"]);
    let full = opening("full");
    assert_eq!(full.message, package.instruction_full().unwrap().trim_end());
    // Seed 000 §5.1: Full shares Partial's system prompt byte for byte on the same task; only
    // the opening and the submission budget (in `submit`'s description) differ.
    assert_eq!(full.system_prompt, partial.system_prompt);
    let submit = |o: &specgap_engine::Opening| o.tools.iter().find(|t| t.name == "submit").unwrap().description.clone();
    assert_ne!(submit(&full), submit(&partial));
    assert!(submit(&full).contains("You deliver once: your first submission ends the work."));
    let shell = opening("partial+profile=shell");
    let names: Vec<_> = shell.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bash", "ask_user", "submit"]);

    let delivery = fixture("delivery-basic");
    let seen_opening = |condition: &str| {
        let agent = TestAgent::new(vec![]);
        let seen = agent.seen.clone();
        let mut agent = agent;
        run(&delivery, condition, &mut agent, Options::default());
        seen.lock().unwrap().opening.clone().unwrap()
    };
    let info = seen_opening("full-info");
    assert!(info.message.starts_with(delivery.instruction().trim_end()));
    assert!(info.message.ends_with(delivery.information().unwrap().trim_end()));
    let oracle = seen_opening("oracle:1");
    for target in delivery.clarifications() {
        assert!(oracle.message.contains(&format!("- {}", target.answer)), "{}", oracle.message);
    }
    let hidden = seen_opening("hidden");
    assert_eq!(hidden.message, delivery.instruction().trim_end());
    assert!(!hidden.tools.iter().any(|t| t.name == "ask_user"));
}

#[test]
fn an_evaluator_that_crashes_is_an_evaluation_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::support::fixture_copy("req-basic", dir.path());
    fs_err::write(root.join("evaluator/evaluate.py"), "import sys\nsys.stderr.write('boom: evaluator broke\\n')\nsys.exit(3)\n").unwrap();
    let package = specgap_task::load(&root).unwrap();
    let mut agent = specgap_agents::ScriptedAgent::new(specgap_agents::Solution::Gold);
    let r = run(&package, "partial", &mut agent, Options::default());
    let Err(specgap_engine::EpisodeError::Evaluation { message, stderr_tail, .. }) = &r.outcome else {
        panic!("expected an evaluation error, got {:?}", r.outcome.as_ref().map(|o| o.end_reason));
    };
    assert_eq!(message, "evaluator exited with status 3");
    assert_eq!(stderr_tail, "boom: evaluator broke\n");
    let kinds = r.kinds();
    assert!(kinds.contains(&&EventKind::Error {
        class: "evaluation".into(),
        message: "evaluation error: evaluator exited with status 3".into(),
        stderr_tail: "boom: evaluator broke\n".into(),
    }));
    assert_eq!(kinds.last().cloned().cloned(), Some(EventKind::End { reason: "evaluation_error".into(), detail: String::new() }));
    // The attempt's submission is recorded as not validly evaluated.
    let rows = r.store.submissions().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].valid_evaluation);
}

#[test]
fn commands_share_tmp_until_one_takes_the_sandbox_down() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("run_experiment", json!({"command": "echo kept > /tmp/note"})),
        one("run_experiment", json!({"command": "cat /tmp/note"})),
        one("run_experiment", json!({"command": "sleep 30", "timeout_sec": 1})),
        one("run_experiment", json!({"command": "ls -A /tmp; echo listed"})),
        one("run_experiment", json!({"command": "true", "timeout_sec": 0})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let results = r.results();
    assert_eq!((results[4].1.as_str(), results[4].2), ("timeout_sec must be at least 1 (seconds)", true));
    let outputs: Vec<String> = results.iter().map(|(_, o, _)| o.clone()).collect();
    assert_eq!(outputs[1], "exit status 0\n--- stdout ---\nkept");
    assert_eq!(
        outputs[2],
        "killed: timed out after 1 s\n(no output)\n(the sandbox ended with this command; the next command starts in a fresh one, with an empty /tmp)"
    );
    assert_eq!(outputs[3], "exit status 0\n--- stdout ---\nlisted");
}

#[test]
fn command_output_cuts_are_stated_once_with_true_counts() {
    // 65,536 bytes of stdout (4,096 lines of 16 bytes) and a short stderr: one marker with the
    // true bytes and lines removed, both headings, at most 16 KiB in all.
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("run_experiment", json!({"command": "yes 0123456789abcde | head -c 65536; echo warn >&2"}))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let (_, output, is_error) = &r.results()[0];
    let line = "0123456789abcde\n";
    let expected = format!(
        "exit status 0\n--- stdout ---\n{}[... 49248 bytes (3078 lines) cut ...]\n{}0123456789abcde\n--- stderr ---\nwarn",
        line.repeat(509),
        line.repeat(508)
    );
    assert_eq!((output.as_str(), *is_error), (expected.as_str(), false));
    assert_eq!(65536 - 2 * 509 * 16, 49248);
    assert!(output.len() <= specgap_engine::tools::OUTPUT_CAP, "{}", output.len());
}

/// Issue 24 item 4: the `bash` tool (blind and residual conditions, seed 001) runs its commands
/// with bash, so `pushd` and brace lists work; `run_experiment` (seed 000) keeps `/bin/sh`.
#[test]
fn the_bash_tool_runs_bash_and_run_experiment_runs_sh() {
    let package = fixture("req-basic");
    let command = json!({"command": "pushd billing >/dev/null && echo {a,b}.py && pwd"});
    let mut agent = TestAgent::new(vec![one("bash", command.clone())]);
    let r = run(&package, "blind", &mut agent, Options::default());
    assert_eq!(r.results()[0].1, "exit status 0\n--- stdout ---\na.py b.py\n/workspace/billing");
    let mut agent = TestAgent::new(vec![one("run_experiment", command)]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let (_, output, _) = &r.results()[0];
    assert!(output.starts_with("exit status 127\n"), "{output}");
    assert!(output.contains("pushd: not found"), "{output}");
}
