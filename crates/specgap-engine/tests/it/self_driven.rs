//! Agents that drive themselves (external `cli:` agents, issue 14): the engine reads their
//! model exchanges, harness calls and exit under the one set of episode rules. A scripted
//! stand-in plays the agent: each step is a reply, optionally after it changes the workspace
//! the way the agent's own tools would.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;
use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, ObservedResult, ObservedTurn, Opening, Workplace};
use specgap_protocol::event::{EventKind, ToolCall, Usage, UserMessageKind};
use specgap_protocol::run::EndReason;

use specgap_engine::BudgetFlags;

use crate::support::{Options, fixture, fixture_dir, run};

/// One step of the stand-in: optionally write files into the workspace, then reply.
struct Step {
    writes: Vec<(&'static str, String)>,
    reply: AgentReply,
}

fn step(reply: AgentReply) -> Step {
    Step { writes: Vec::new(), reply }
}

/// A model exchange that is a turn with these bash commands (ids `c<turn>-<n>`).
fn turn(n: u32, commands: &[&str]) -> AgentReply {
    let calls = commands
        .iter()
        .enumerate()
        .map(|(i, c)| ToolCall { id: format!("c{n}-{i}"), tool: "bash".into(), arguments: json!({"command": c}) })
        .collect();
    AgentReply::Observed {
        results: Vec::new(),
        exchange: Some(Box::new(exchange(n))),
        turn: Some(ObservedTurn { text: Some(format!("step {n}")), tool_calls: calls, usage: None, refusal: false }),
    }
}

fn exchange(seq: u32) -> EventKind {
    EventKind::ModelExchange {
        request: u64::from(seq),
        class: "main".into(),
        method: "POST".into(),
        path: "/v1/chat/completions".into(),
        model: Some("m".into()),
        stream: false,
        status: 200,
        outcome: "completed".into(),
        detail: String::new(),
        messages: Vec::new(),
        new_messages: Vec::new(),
        usage: Usage::default(),
        duration_ms: 0,
    }
}

fn result(call_id: &str, output: &str, blank_success: bool) -> ObservedResult {
    ObservedResult { call_id: call_id.into(), tool: "bash".into(), output: output.into(), is_error: false, blank_success }
}

fn harness(tool: &str, arguments: serde_json::Value) -> AgentReply {
    AgentReply::HarnessCall { call: ToolCall { id: String::new(), tool: tool.into(), arguments } }
}

fn exited(text: Option<&str>, can_resume: bool) -> AgentReply {
    AgentReply::Exited {
        text: text.map(str::to_string),
        can_resume,
        exit: Box::new(EventKind::AgentExit { status: Some(0), how: "exited".into(), stderr_tail: String::new(), note: String::new() }),
    }
}

/// What the stand-in was asked to do, in order.
#[derive(Debug, Default)]
struct Log {
    calls: Vec<String>,
    opening: Option<Opening>,
    inboxes: Vec<Vec<Incoming>>,
    undelivered: Vec<Incoming>,
}

struct Driving {
    steps: VecDeque<Step>,
    workspace: Option<PathBuf>,
    log: Arc<Mutex<Log>>,
}

impl Driving {
    fn new(steps: Vec<Step>) -> (Self, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        (Driving { steps: steps.into(), workspace: None, log: log.clone() }, log)
    }

    fn note(&self, what: &str) {
        self.log.lock().unwrap().calls.push(what.into());
    }
}

impl Agent for Driving {
    fn drives_itself(&self) -> bool {
        true
    }

    fn enter(&mut self, place: &Workplace) -> Result<(), AgentError> {
        self.workspace = Some(place.workspace.clone());
        self.note(if place.scaffold_prompt_only { "enter scaffold-only" } else { "enter" });
        Ok(())
    }

    fn start(&mut self, opening: &Opening) -> Result<(), AgentError> {
        self.log.lock().unwrap().opening = Some(opening.clone());
        self.note("start");
        Ok(())
    }

    fn next_turn(&mut self, inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        self.log.lock().unwrap().inboxes.push(inbox.to_vec());
        let Some(step) = self.steps.pop_front() else { return Ok(exited(None, false)) };
        for (path, content) in step.writes {
            let full = self.workspace.as_ref().unwrap().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        Ok(step.reply)
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }

    fn suspend(&mut self) {
        self.note("suspend");
    }

    fn resume(&mut self) {
        self.note("resume");
    }

    fn stop(&mut self, undelivered: &[Incoming]) {
        let mut log = self.log.lock().unwrap();
        if log.calls.last().map(String::as_str) != Some("stop") {
            log.calls.push("stop".into());
            log.undelivered = undelivered.to_vec();
        }
    }
}

fn gold_fees() -> String {
    std::fs::read_to_string(fixture_dir("req-basic").join("solutions/gold/billing/fees.py")).unwrap()
}

fn literal_fees() -> String {
    std::fs::read_to_string(fixture_dir("req-basic").join("solutions/literal/billing/fees.py")).unwrap()
}

fn calls_of(log: &Arc<Mutex<Log>>) -> Vec<String> {
    log.lock().unwrap().calls.clone()
}

#[test]
fn a_driving_agent_is_offered_only_the_harness_tools_and_its_bridge_submit_gets_the_feedback() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        step(turn(1, &["cat billing/fees.py"])),
        step(AgentReply::TurnRequested),
        Step { writes: vec![("billing/fees.py", literal_fees())], reply: turn(2, &["submit 'first try'"]) },
        step(harness("submit", json!({"summary": "first try"}))),
        step(AgentReply::TurnRequested),
        Step { writes: vec![("billing/fees.py", gold_fees())], reply: turn(3, &["submit"]) },
        step(harness("submit", json!({}))),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::Accepted);
    assert_eq!((outcome.turns, outcome.tool_calls), (3, 3), "bridge calls are not counted again");
    assert_eq!(outcome.submissions.iter().map(|s| (s.k, s.automatic)).collect::<Vec<_>>(), vec![(1, false), (2, false)]);
    let log = log.lock().unwrap();
    let tools: Vec<String> = log.opening.as_ref().unwrap().tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(tools, ["ask_user", "submit"]);
    // The failed submission's result, then the owner's message, reached the agent together.
    let after_first = &log.inboxes[4];
    assert_eq!(after_first.len(), 2, "{after_first:?}");
    assert!(matches!(&after_first[0], Incoming::ToolResult { tool, is_error: false, .. } if tool == "submit"));
    assert!(matches!(&after_first[1], Incoming::UserMessage { kind: UserMessageKind::Feedback, .. }));
    // The last result was never asked for by a next turn: it is handed on at the stop.
    assert!(matches!(&log.undelivered[..], [Incoming::ToolResult { tool, output, .. }] if tool == "submit" && output.contains("accepted")));
    drop(log);
    // Frozen while each submission was copied, stopped at the end.
    assert_eq!(calls_of(&agent.log), ["enter", "start", "suspend", "resume", "suspend", "resume", "suspend", "stop"]);
    let kinds: Vec<&str> = r
        .kinds()
        .iter()
        .map(|k| match k {
            EventKind::ModelExchange { .. } => "model_exchange",
            EventKind::AgentTurn { .. } => "agent_turn",
            EventKind::BridgeCall { .. } => "bridge_call",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::Submission { .. } => "submission",
            EventKind::Evaluation { .. } => "evaluation",
            EventKind::UserMessage { .. } => "user_message",
            EventKind::End { .. } => "end",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "other",
            "model_exchange",
            "agent_turn",
            "model_exchange",
            "agent_turn",
            "bridge_call",
            "submission",
            "evaluation",
            "user_message",
            "tool_result",
            "model_exchange",
            "agent_turn",
            "bridge_call",
            "submission",
            "evaluation",
            "tool_result",
            "end"
        ]
    );
}

#[test]
fn the_turn_budget_refuses_the_next_request_after_the_last_turns_calls_ran() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        step(turn(1, &["ls"])),
        step(AgentReply::TurnRequested),
        Step { writes: vec![("billing/fees.py", literal_fees())], reply: turn(2, &["submit"]) },
        // The last turn's harness call still runs.
        step(harness("submit", json!({}))),
        step(AgentReply::TurnRequested),
    ]);
    let flags = BudgetFlags { turns: Some(2), ..BudgetFlags::default() };
    let r = run(&package, "partial", &mut agent, Options { flags, ..Options::default() });
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::TurnBudget);
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.submissions.len(), 1, "the workspace did not change since the agent's submission: no automatic one");
    assert!(!outcome.submissions[0].automatic);
    assert!(r.kinds().contains(&&EventKind::Budget { which: "turns".into(), used: 2, limit: 2 }));
    assert_eq!(calls_of(&log).last().map(String::as_str), Some("stop"));
}

#[test]
fn loop_rules_read_the_observed_calls_and_results() {
    let package = fixture("req-basic");
    // The 4th identical call in a row ends the episode.
    let (mut agent, _) = Driving::new(vec![step(turn(1, &["ls", "ls"])), step(AgentReply::TurnRequested), step(turn(2, &["ls", "ls"]))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!((r.ok().end_reason, r.ok().tool_calls), (EndReason::LoopRepeatedCall, 4));
    // Four blank successful commands in a row, as the next requests report them.
    let blank = |n: u32, calls: &[&str]| AgentReply::Observed {
        results: (0..calls.len()).map(|i| result(&format!("c{}-{i}", n - 1), "", true)).collect(),
        exchange: Some(Box::new(exchange(n))),
        turn: Some(ObservedTurn { text: None, tool_calls: Vec::new(), usage: None, refusal: false }),
    };
    let (mut agent, _) = Driving::new(vec![
        step(turn(1, &["true", "cd ."])),
        step(AgentReply::TurnRequested),
        step(turn(2, &["true; true", ":"])),
        step(AgentReply::TurnRequested),
        step(blank(3, &["a", "b", "c", "d"])),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::LoopBlankOutput);
    assert_eq!(r.results().len(), 4, "every reported result is recorded");
}

#[test]
fn an_agent_that_exits_without_submitting_has_its_changed_workspace_submitted() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        Step { writes: vec![("billing/fees.py", gold_fees())], reply: turn(1, &["python3 edit.py"]) },
        step(exited(Some("All done."), false)),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::AgentExit);
    assert_eq!(outcome.submissions.len(), 1);
    assert!(outcome.submissions[0].automatic);
    assert!(outcome.submissions[0].scored.success, "the automatic submission is scored like any other");
    // Frozen at the end and again (idempotent) as the automatic submission is copied; never resumed.
    assert_eq!(calls_of(&log)[2..], ["suspend", "suspend", "stop"]);
    assert!(r.kinds().iter().any(|k| matches!(k, EventKind::AgentExit { how, .. } if how == "exited")));
}

#[test]
fn a_resumable_agent_gets_the_customers_answers_and_continuations_after_it_exits() {
    let package = fixture("delivery-basic");
    let (mut agent, log) = Driving::new(vec![
        step(turn(1, &["ls"])),
        step(exited(Some("Before I build it:\n## Questions for the client\n- Which unit are the amounts in?"), true)),
        step(turn(2, &["ls"])),
        step(exited(Some("I will get to it."), true)),
        step(exited(None, true)),
        step(exited(None, true)),
        step(exited(None, true)),
    ]);
    let r = run(&package, "interact", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentExit, "after three continuations the exit ends the work");
    assert_eq!(r.ok().questions, 1);
    let log = log.lock().unwrap();
    let resumed_with: Vec<UserMessageKind> = log
        .inboxes
        .iter()
        .flatten()
        .filter_map(|i| match i {
            Incoming::UserMessage { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        resumed_with,
        [UserMessageKind::Answer, UserMessageKind::Continuation, UserMessageKind::Continuation, UserMessageKind::Continuation]
    );
}

#[test]
fn blind_keeps_the_scaffolds_prompt_and_offers_only_submit() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![step(exited(None, false))]);
    let r = run(&package, "blind", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentExit);
    assert_eq!(calls_of(&log)[0], "enter scaffold-only");
    let tools: Vec<String> = log.lock().unwrap().opening.as_ref().unwrap().tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(tools, ["submit"], "blind offers no ask_user");
}

/// The messages of kind `kind` the stand-in was handed, in order.
fn messages_of(log: &Arc<Mutex<Log>>, kind: UserMessageKind) -> Vec<String> {
    log.lock()
        .unwrap()
        .inboxes
        .iter()
        .flatten()
        .filter_map(|i| match i {
            Incoming::UserMessage { kind: k, text } if *k == kind => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_agent_that_exits_after_a_returned_submission_is_started_again_with_the_feedback_and_is_accepted_at_k2() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        Step { writes: vec![("billing/fees.py", literal_fees())], reply: turn(1, &["submit 'first try'"]) },
        step(harness("submit", json!({"summary": "first try"}))),
        // It read the feedback with submit's result and exited at once.
        step(exited(Some("Submitted."), true)),
        Step { writes: vec![("billing/fees.py", gold_fees())], reply: turn(2, &["submit"]) },
        step(harness("submit", json!({}))),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::Accepted);
    assert_eq!(
        outcome.submissions.iter().map(|s| (s.k, s.automatic, s.scored.success)).collect::<Vec<_>>(),
        vec![(1, false, false), (2, false, true)]
    );
    let feedback = messages_of(&log, UserMessageKind::Feedback);
    assert_eq!(feedback.len(), 1, "the feedback came once with submit's result");
    let resumed = messages_of(&log, UserMessageKind::Continuation);
    assert_eq!(
        resumed,
        [format!(
            "Your delivery (submission 1) was returned. The owner's message about it:\n\n{}\n\nYou have 3 submissions left. Carry on with the work in the workspace and submit again when it is ready.",
            feedback[0].trim()
        )]
    );
    // The resume is recorded as the harness's continuation message after the exit.
    let kinds = r.kinds();
    let exit = kinds.iter().position(|k| matches!(k, EventKind::AgentExit { .. })).unwrap();
    assert!(matches!(&kinds[exit + 1], EventKind::UserMessage { kind: UserMessageKind::Continuation, text, .. } if *text == resumed[0]));
}

#[test]
fn an_agent_started_again_after_a_returned_submission_that_exits_again_without_submitting_ends_agent_exit() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        Step { writes: vec![("billing/fees.py", literal_fees())], reply: turn(1, &["submit"]) },
        step(harness("submit", json!({}))),
        step(exited(None, true)),
        step(turn(2, &["cat billing/fees.py"])),
        step(exited(Some("I give up."), true)),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentExit, "one resume per returned submission");
    assert_eq!(messages_of(&log, UserMessageKind::Continuation).len(), 1);
}

#[test]
fn an_exit_after_a_returned_submission_ends_the_episode_when_the_adapter_cannot_resume_or_no_feedback_was_given() {
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        Step { writes: vec![("billing/fees.py", literal_fees())], reply: turn(1, &["submit"]) },
        step(harness("submit", json!({}))),
        step(exited(None, false)),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::AgentExit);
    assert!(messages_of(&log, UserMessageKind::Continuation).is_empty());

    // Under a condition without feedback the first submission ends the work.
    let (mut agent, _) = Driving::new(vec![
        Step { writes: vec![("billing/fees.py", literal_fees())], reply: turn(1, &["submit"]) },
        step(harness("submit", json!({}))),
        step(exited(None, true)),
    ]);
    let r = run(&package, "partial+feedback=off", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
}

#[test]
fn an_agent_that_drives_itself_never_gets_a_writable_planning_phase() {
    // Plan mode's planning phase is read-only (seed 000 App. F.3), which only the harness's own
    // commands can be held to; a driving agent's tools write where they like. The runner marks
    // `plan` not applicable to `cli:` agents, and the engine refuses one that gets here anyway,
    // before the agent starts or writes anything.
    let package = fixture("req-basic");
    let (mut agent, log) = Driving::new(vec![
        Step { writes: vec![("billing/fees.py", gold_fees())], reply: turn(1, &["edit billing/fees.py"]) },
        step(harness("write_plan", json!({"plan": "done already"}))),
    ]);
    let r = run(&package, "plan", &mut agent, Options::default());
    let Err(error) = &r.outcome else { panic!("ran: {:?}", r.outcome) };
    assert!(error.deterministic());
    assert_eq!(
        error.to_string(),
        "infrastructure error: plan mode needs an agent the harness holds to its phases; an agent that drives itself has tools of its own"
    );
    assert!(log.lock().unwrap().opening.is_none(), "the agent was never started");
    assert!(!calls_of(&agent.log).contains(&"enter".to_string()));
}

#[test]
fn a_driving_agent_that_exits_after_each_stage_is_started_again_with_the_next_stage() {
    use crate::stages::{STAGE_2, THREE_STAGES, staged};
    let dir = tempfile::tempdir().unwrap();
    let package = staged(dir.path(), THREE_STAGES);
    let (mut agent, log) = Driving::new(vec![
        Step { writes: vec![("stage1.txt", "1".into())], reply: turn(1, &["submit"]) },
        step(harness("submit", json!({}))),
        step(exited(Some("Done with this part."), true)),
        Step { writes: vec![("stage2.txt", "0.5".into())], reply: turn(2, &["submit"]) },
        step(harness("submit", json!({}))),
        // Exits after stage 2 (started again with stage 3), then exits once more: one resume
        // per stage...
        step(exited(None, true)),
        step(exited(None, true)),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    let outcome = r.ok();
    // ...so the episode ends there and the open stage 3 is submitted automatically.
    assert_eq!(outcome.end_reason, EndReason::AgentExit);
    assert_eq!(r.scores(), [1.0, 0.5, 0.0]);
    let stage_message = messages_of(&log, UserMessageKind::Stage);
    assert_eq!(stage_message.len(), 2, "each next stage came once with submit's result");
    assert_eq!(stage_message[0], STAGE_2);
    let resumed = messages_of(&log, UserMessageKind::Continuation);
    assert_eq!(
        resumed[0],
        "Your delivery for stage 1 was received. The next stage of the task:\n\nNow write the second part.\n\nCarry on with the work in the workspace and submit when this stage is ready."
    );
    assert_eq!(resumed.len(), 2);
}
