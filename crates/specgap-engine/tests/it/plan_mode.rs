//! Plan mode (seed 000 §5.4, App. F.3): the planning phase offers no editing tools and no
//! `submit`; `write_plan` switches the system prompt and the tools.

use serde_json::json;
use specgap_engine::episode::PLAN_SAVED;
use specgap_engine::prompts::system_prompts;
use specgap_engine::{BudgetFlags, Budgets, Condition};
use specgap_protocol::event::{EventKind, ToolSpec};
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture, fixture_dir, one, run};

fn names(tools: &[ToolSpec]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn execute_prompt(package: &specgap_task::TaskPackage) -> String {
    let plan = Condition::parse("plan").unwrap();
    let budgets = Budgets::resolve(&plan, &package.manifest().budget, &BudgetFlags::default());
    system_prompts(&plan, &budgets).execute_phase.unwrap()
}

#[test]
fn the_tools_before_and_after_write_plan() {
    let package = fixture("req-basic");
    let agent = TestAgent::new(vec![
        one("write_text", json!({"path": "x.txt", "content": "x"})),
        one("run_experiment", json!({"command": "echo probing"})),
        one("submit", json!({})),
        one("write_plan", json!({"plan": "1. exempt disputed invoices\n2. cap the fee"})),
        one("write_text", json!({"path": "x.txt", "content": "x"})),
        one("write_plan", json!({"plan": "again"})),
        one("submit", json!({})),
    ])
    .takes_phases();
    let seen = agent.seen.clone();
    let mut agent = agent;
    let r = run(&package, "plan", &mut agent, Options::default());
    let opening = seen.lock().unwrap().opening.clone().unwrap();
    assert_eq!(names(&opening.tools), ["list_files", "read_text", "run_project", "run_experiment", "ask_user", "write_plan"]);
    let results = r.results();
    let planning = "list_files, read_text, run_project, run_experiment, ask_user, write_plan";
    assert_eq!(results[0].1, format!("unknown tool `write_text`; the tools are: {planning}"));
    assert_eq!(results[1].1, "exit status 0\n--- stdout ---\nprobing");
    assert_eq!(results[2].1, format!("unknown tool `submit`; the tools are: {planning}"));
    assert_eq!((results[3].1.as_str(), results[3].2), (PLAN_SAVED, false));
    assert!(!results[4].2, "{}", results[4].1);
    let execution = "list_files, read_text, write_text, replace_text, run_project, run_experiment, ask_user, submit";
    assert_eq!(results[5].1, format!("unknown tool `write_plan`; the tools are: {execution}"));
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    // The agent was handed the execution phase after four turns, before its fifth.
    let phases = seen.lock().unwrap().phases.clone();
    assert_eq!(phases.len(), 1);
    let (turns_before, change) = &phases[0];
    assert_eq!(*turns_before, 4);
    assert_eq!(change.phase, "execute");
    assert_eq!(change.system_prompt, execute_prompt(&package));
    assert_eq!(
        names(&change.tools),
        ["list_files", "read_text", "write_text", "replace_text", "run_project", "run_experiment", "ask_user", "submit"]
    );
    // The trajectory records the change right after write_plan's result.
    let kinds = r.kinds();
    let at = kinds.iter().position(|k| matches!(k, EventKind::PhaseChange { .. })).unwrap();
    assert!(matches!(kinds[at - 1], EventKind::ToolResult { tool, .. } if tool == "write_plan"));
    assert_eq!(
        kinds[at],
        &EventKind::PhaseChange { phase: "execute".into(), system_prompt: change.system_prompt.clone(), tools: change.tools.clone() }
    );
    let plan = fs_err::read_to_string(r.workspace().join("PLAN.md")).unwrap();
    assert_eq!(plan, "1. exempt disputed invoices\n2. cap the fee");
}

#[test]
fn an_agent_that_keeps_no_prompt_gets_the_execution_prompt_in_the_result() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("write_plan", json!({"plan": "fix it"})), one("submit", json!({}))]);
    let r = run(&package, "plan", &mut agent, Options::default());
    let results = r.results();
    assert_eq!(results[0].1, format!("{PLAN_SAVED}\n\n{}", execute_prompt(&package)));
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
}

#[test]
fn scripted_agents_are_not_held_by_the_phases() {
    let package = fixture("req-basic");
    let mut agent = specgap_agents::ScriptedAgent::new(specgap_agents::Solution::Gold);
    let r = run(&package, "plan", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
}

/// The files a stored submission's diff touches (`diff --git a/<path> b/<path>` lines).
fn diff_paths(r: &crate::support::Run, k: u32) -> Vec<String> {
    let diff = fs_err::read_to_string(r.episode_dir().join(format!("submissions/{k}/workspace.diff"))).unwrap();
    diff.lines().filter_map(|l| l.strip_prefix("diff --git a/")).map(|l| l.split(" b/").next().unwrap().to_string()).collect()
}

#[test]
fn the_planning_phase_is_read_only_and_its_writes_are_never_delivered() {
    // Seed 000 App. F.3: the planning phase is "a read-only investigation". Commands still run
    // (and /tmp takes scratch files), but a write to the workspace fails; after write_plan the
    // same command writes, and only PLAN.md and that write are delivered.
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("run_experiment", json!({"command": "echo planned > notes.txt"})),
        one("run_experiment", json!({"command": "sed -i 's/0.01/0.05/' billing/fees.py; echo done"})),
        one("run_experiment", json!({"command": "echo scratch > /tmp/s && cat /tmp/s && ls notes.txt 2>&1"})),
        one("write_plan", json!({"plan": "1. cap the fee"})),
        one("run_experiment", json!({"command": "cat /tmp/s 2>&1; echo executed > notes.txt && cat notes.txt"})),
        one("submit", json!({})),
    ]);
    let fees_before = fs_err::read_to_string(fixture_dir("req-basic").join("workspace/billing/fees.py")).unwrap();
    let r = run(&package, "plan", &mut agent, Options::default());
    let results = r.results();
    assert_eq!(results[0].1, "exit status 2\n--- stderr ---\n/bin/sh: 1: cannot create notes.txt: Read-only file system");
    assert_eq!(
        results[1].1,
        "exit status 0\n--- stdout ---\ndone\n--- stderr ---\nsed: couldn't open temporary file billing/sedAAAAAA: Read-only file system"
            .replace("sedAAAAAA", sed_temp(&results[1].1))
    );
    assert_eq!(results[2].1, "exit status 2\n--- stdout ---\nscratch\nls: cannot access 'notes.txt': No such file or directory");
    assert_eq!(results[3].1, PLAN_SAVED.to_string() + "\n\n" + &execute_prompt(&package));
    // The execution phase has a sandbox of its own: the planning /tmp is gone.
    assert_eq!(results[4].1, "exit status 0\n--- stdout ---\ncat: /tmp/s: No such file or directory\nexecuted");
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert_eq!(diff_paths(&r, 1), ["PLAN.md", "notes.txt"]);
    assert_eq!(fs_err::read_to_string(r.workspace().join("billing/fees.py")).unwrap(), fees_before);
}

/// The random name of sed's temporary file in its message.
fn sed_temp(output: &str) -> &str {
    let start = output.find("billing/").unwrap() + "billing/".len();
    let end = output[start..].find(':').unwrap() + start;
    &output[start..end]
}

#[test]
fn records_replay_alike_in_both_phases() {
    // What the read-only view costs a replay: nothing, for the fixture's replay.
    let package = fixture("req-basic");
    let replay = || one("run_project", json!({"record": "account-harbor-tea.json"}));
    let mut agent = TestAgent::new(vec![replay(), one("write_plan", json!({"plan": "p"})), replay(), one("submit", json!({}))]);
    let r = run(&package, "plan", &mut agent, Options::default());
    let results = r.results();
    assert!(results[0].1.starts_with("exit status 0\n--- stdout ---\nINV-"), "{}", results[0].1);
    assert_eq!(results[0].1, results[2].1);
}

#[test]
fn partial_commands_still_write_the_workspace() {
    // Only plan mode's planning phase is read-only.
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("run_experiment", json!({"command": "echo x > notes.txt"})), one("submit", json!({}))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.results()[0].1, "exit status 0\n(no output)");
    assert_eq!(diff_paths(&r, 1), ["notes.txt"]);
}
