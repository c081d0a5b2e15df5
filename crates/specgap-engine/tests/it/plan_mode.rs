//! Plan mode (seed 000 §5.4, App. F.3): the planning phase offers no editing tools and no
//! `submit`; `write_plan` switches the system prompt and the tools.

use serde_json::json;
use specgap_engine::episode::PLAN_SAVED;
use specgap_engine::prompts::system_prompts;
use specgap_engine::{BudgetFlags, Budgets, Condition};
use specgap_protocol::event::{EventKind, ToolSpec};
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture, one, run};

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
