//! Budgets and ends of `cli:` agents (issue 14 items 4 and 6), with `cli:command` running our
//! small test agent against a scripted mock upstream: a loop past the turn budget, a program
//! that ignores SIGTERM and keeps writing past its wall budget, one that exits without
//! submitting, an upstream that answers 500s and cuts streams, and a dead upstream.

use std::time::Duration;

use specgap_engine::condition::BudgetFlags;
use specgap_gateway::mock::{MockBody, MockReply, MockUpstream};
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;
use specgap_store::{Role, Status};

use crate::cli_support::*;

const SPEC: &str = "cli:command=python3 cli-agent.py";

fn agent_usage(run: &CliRun) -> specgap_protocol::event::Usage {
    let rows: Vec<_> = run.detail.usage.iter().filter(|u| u.role == Role::Agent).collect();
    assert_eq!(rows.len(), 1, "one attempt, one agent usage row");
    rows[0].usage.clone()
}

#[test]
fn an_agent_that_loops_past_the_turn_budget_has_its_next_request_refused() {
    let mock = MockUpstream::start((1..=3).map(|n| bash(n, &format!("echo {n} >> steps.txt"), false))).unwrap();
    mock.set_fallback(bash(9, "echo more >> steps.txt", false));
    let config = command_config(&mock, false);
    let flags = BudgetFlags { turns: Some(3), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    let episode = &run.detail.episode;
    assert_eq!((episode.status, episode.end_reason), (Status::Finished, Some(EndReason::TurnBudget)));
    assert_eq!((episode.turns, episode.tool_calls), (3, 3));
    assert_eq!(run.requests.len(), 3, "the fourth request was refused by the gateway and never reached the upstream");
    check_requests(&run.requests);
    assert_eq!(
        run.turns(),
        vec![(1, vec!["echo 1 >> steps.txt".into()]), (2, vec!["echo 2 >> steps.txt".into()]), (3, vec!["echo 3 >> steps.txt".into()])]
    );
    // The last turn's command ran before the budget ended the episode: the automatic
    // submission holds all three steps.
    assert_eq!(run.detail.submissions.len(), 1);
    assert!(run.detail.submissions[0].automatic);
    assert!(run.diff(1).contains("+1\n+2\n+3\n"), "{}", run.diff(1));
    assert!(run.events.iter().any(|e| e.kind == EventKind::Budget { which: "turns".into(), used: 3, limit: 3 }));
    // The fourth request came after the end: it is in the trajectory too (issue 31 item 6),
    // refused (by the budget, or as ended once the gateway was abandoned), or given up by an
    // agent the end killed first.
    let outcomes: Vec<(u64, String)> = exchanges(&run).into_iter().map(|(seq, outcome, _)| (seq, outcome)).collect();
    assert_eq!(outcomes[..3], [(0, "completed".to_string()), (1, "completed".to_string()), (2, "completed".to_string())]);
    assert_eq!(outcomes.len(), 4, "{outcomes:?}");
    assert!(matches!((outcomes[3].0, outcomes[3].1.as_str()), (3, "refused" | "client_gone")), "{outcomes:?}");
    let end_at = run.events.iter().position(|e| matches!(e.kind, EventKind::End { .. })).unwrap();
    let fourth_at = run.events.iter().position(|e| matches!(e.kind, EventKind::ModelExchange { request: 3, .. })).unwrap();
    assert!(fourth_at < end_at, "recorded before the end event");
    let usage = agent_usage(&run);
    assert_eq!(
        (usage.requests, usage.input_tokens, usage.output_tokens, usage.cached_tokens),
        (3, 101 + 102 + 103, 11 + 12 + 13, 1 + 2 + 3)
    );
    // The fourth request is journalled: refused (by the budget, or as ended once the gateway
    // was abandoned), or given up by an agent the end killed first; it reached nothing.
    let journal = fs_err::read_to_string(run.store.episode_dir(&run.id).join("gateway-1.jsonl")).unwrap();
    let exchanges: Vec<serde_json::Value> =
        journal.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).filter(|v| v["kind"] == "exchange").collect();
    assert_eq!(exchanges.len(), 4, "{journal}");
    let outcome = exchanges[3]["outcome"]["outcome"].as_str().unwrap();
    assert!(matches!(outcome, "refused" | "client_gone"), "{}", exchanges[3]);
    assert_eq!(exchanges[3]["usage"]["requests"], 0);
}

#[test]
fn a_program_that_ignores_sigterm_and_keeps_writing_past_its_wall_budget_submits_only_its_work_before_the_end() {
    let writer = "trap 'echo late > late.txt' TERM; i=0; while :; do i=$((i+1)); echo $i > tick.txt; sleep 0.01; done # 615243";
    let mock = MockUpstream::start([bash(1, "echo early > early.txt", false), bash(2, writer, false)]).unwrap();
    let config = command_config(&mock, false);
    let flags = BudgetFlags { wall_sec: Some(4), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    let episode = &run.detail.episode;
    assert_eq!(episode.end_reason, Some(EndReason::WallBudget));
    assert!(episode.wall_ms < 4_000 + 30_000, "the episode ended near its wall budget ({} ms)", episode.wall_ms);
    assert_eq!(run.detail.submissions.len(), 1);
    assert!(run.detail.submissions[0].automatic);
    let diff = run.diff(1);
    assert!(diff.contains("early.txt") && diff.contains("tick.txt"), "the work before the end is submitted: {diff}");
    assert!(!diff.contains("late.txt"), "what the SIGTERM handler wrote after the end is not: {diff}");
    assert_eq!(processes_with("615243"), Vec::<u32>::new(), "no process of the agent survived");
    assert_eq!(run.requests.len(), 2);
    check_requests(&run.requests);
}

/// The detail of the only episode's `end` event.
fn end_detail(run: &CliRun) -> String {
    let details: Vec<&String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::End { detail, .. } => Some(detail),
            _ => None,
        })
        .collect();
    assert_eq!(details.len(), 1);
    details[0].clone()
}

#[test]
fn a_wall_budget_end_while_the_agent_runs_a_command_says_no_model_request_was_in_flight() {
    // Issue 31 item 7: every wall-budget end said a model request in flight was abandoned.
    let mock = MockUpstream::start([bash(1, "sleep 60 # 730912", false)]).unwrap();
    let config = command_config(&mock, false);
    let flags = BudgetFlags { wall_sec: Some(3), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::WallBudget));
    assert_eq!(end_detail(&run), format!("{}; {}", specgap_engine::episode::AGENT_HALTED, specgap_engine::episode::unchanged_at_end(None)));
    assert_eq!(run.requests.len(), 1);
}

#[test]
fn a_wall_budget_end_during_a_model_request_says_the_request_was_abandoned() {
    let slow = bash(2, "echo never > never.txt", false).with_delay(Duration::from_secs(60));
    let mock = MockUpstream::start([bash(1, "echo early > early.txt", false), slow]).unwrap();
    let config = command_config(&mock, false);
    let flags = BudgetFlags { wall_sec: Some(3), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::WallBudget));
    assert_eq!(end_detail(&run), specgap_engine::episode::AGENT_ABANDONED);
    assert!(run.diff(1).contains("early.txt"), "{}", run.diff(1));
}

#[test]
fn an_agent_that_exits_without_submitting_has_its_changed_workspace_submitted() {
    let mock = MockUpstream::start([bash(1, "printf 'x = 1\\n' > notes.py", true), done(2, "That is all I will do.", true)]).unwrap();
    let config = command_config(&mock, true);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    let episode = &run.detail.episode;
    assert_eq!((episode.end_reason, episode.turns), (Some(EndReason::AgentExit), 2));
    assert_eq!(run.detail.submissions.len(), 1);
    let submission = &run.detail.submissions[0];
    assert!(submission.automatic && !submission.agent_declared && submission.valid_evaluation);
    assert!(run.diff(1).contains("+x = 1"));
    let exit = run.events.iter().find_map(|e| match &e.kind {
        EventKind::AgentExit { status, how, .. } => Some((*status, how.clone())),
        _ => None,
    });
    assert_eq!(exit, Some((Some(0), "exited".to_string())));
    // The streamed second request carried the first command's result, recorded as its result.
    let result = run.events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult { call_id, output, .. } if call_id == "call-1" => Some(output.clone()),
        _ => None,
    });
    assert_eq!(result.as_deref(), Some("exit status 0\n(no output)"));
    check_requests(&run.requests);
    let streamed: Vec<bool> =
        run.requests.iter().map(|r| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()["stream"] == true).collect();
    assert_eq!(streamed, [true, true]);
    let usage = agent_usage(&run);
    assert_eq!((usage.requests, usage.input_tokens, usage.output_tokens), (2, 101 + 102, 11 + 12));
}

#[test]
fn an_upstream_that_answers_500s_and_cuts_streams_is_retried_and_every_try_counted() {
    let error = MockReply::json(500, "{\"error\": {\"message\": \"overloaded\"}}");
    let cut = {
        let whole = bash(2, "echo two >> log.txt", true);
        let chunks = whole.chunks();
        whole.with_body(MockBody::CutAfter(chunks[..2].to_vec()))
    };
    let mock = MockUpstream::start([
        error.clone(),
        error,
        bash(1, "echo one >> log.txt", true),
        cut,
        bash(2, "echo two >> log.txt", true),
        done(3, "Finished.", true),
    ])
    .unwrap();
    let config = command_config(&mock, true);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    let episode = &run.detail.episode;
    assert_eq!(episode.end_reason, Some(EndReason::AgentExit));
    assert_eq!(run.requests.len(), 6, "every scripted answer was asked for");
    check_requests(&run.requests);
    // Turns are forwarded main-loop requests: the 500s were retried inside the first one, the
    // cut stream was a turn of its own, which the agent asked again.
    assert_eq!(episode.turns, 4);
    let outcomes: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelExchange { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, ["completed", "stream_cut", "completed", "completed"]);
    let usage = agent_usage(&run);
    assert_eq!((usage.requests, usage.retries), (6, 2), "every upstream answer is a request; the two 500s were retried");
    assert!(run.diff(1).contains("+one\n+two\n"), "the cut answer's command never ran: {}", run.diff(1));
}

#[test]
fn a_dead_upstream_is_an_infrastructure_error_not_the_agents_failure() {
    let mock = MockUpstream::start([]).unwrap();
    mock.set_fallback(MockReply::json(503, "{\"error\": {\"message\": \"down\"}}"));
    let config = command_config(&mock, false);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    let episode = &run.detail.episode;
    assert_eq!(episode.status, Status::InfraError);
    assert!(episode.error.as_deref().unwrap_or_default().contains("model service failed"), "{:?}", episode.error);
    assert_eq!(run.requests.len(), 4, "one try and three retries");
    assert!(run.detail.submissions.is_empty());
    assert_eq!(run.summary.infra_errors, 1);
    let _ = Duration::ZERO;
}

/// The `model_exchange` events: (request, outcome, detail).
fn exchanges(run: &CliRun) -> Vec<(u64, String, String)> {
    run.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelExchange { request, outcome, detail, .. } => Some((*request, outcome.clone(), detail.clone())),
            _ => None,
        })
        .collect()
}

/// The `budget` event's `(which, used, limit)`.
fn budget_event(run: &CliRun) -> Option<(String, u64, u64)> {
    run.events.iter().find_map(|e| match &e.kind {
        EventKind::Budget { which, used, limit } => Some((which.clone(), *used, *limit)),
        _ => None,
    })
}

/// The `tool_result` event of `call_id`: (output, is_error).
fn tool_result(run: &CliRun, call_id: &str) -> Option<(String, bool)> {
    run.events.iter().find_map(|e| match &e.kind {
        EventKind::ToolResult { call_id: id, output, is_error, .. } if id == call_id => Some((output.clone(), *is_error)),
        _ => None,
    })
}

#[test]
fn a_stalled_request_body_does_not_hold_the_episode_past_its_wall_budget_and_is_in_the_trajectory() {
    // Issue 31 items 3 and 6: the agent sends a request's headers, then 1 of 1,000 body bytes,
    // then stalls. It held every episode ~10 s past its budget (`wall_sec 15 of 5`), and the
    // abandoned request was in the journal only.
    let mock = MockUpstream::start([]).unwrap();
    let mut config = command_config(&mock, false);
    config.command = Some(format!("python3 {} --stall 1:1:1000", agent_script().display()));
    let flags = BudgetFlags { wall_sec: Some(5), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::WallBudget));
    assert_eq!(
        end_detail(&run),
        format!("{}; {}", specgap_engine::episode::AGENT_ABANDONED, specgap_engine::episode::unchanged_at_end(None))
    );
    // The end is recorded within a few seconds of the budget (the stop used to wait 10 s more
    // for the stalled upload; this bound is generous, not a timing measurement).
    let (which, used, limit) = budget_event(&run).unwrap();
    assert_eq!((which.as_str(), limit), ("wall_sec", 5));
    assert!(used < limit + 5, "wall_sec {used} of {limit}");
    assert_eq!(exchanges(&run), vec![(0, "abandoned".to_string(), specgap_agents::cli::ABANDONED_AT_WALL_BUDGET.to_string())]);
    assert_eq!(run.requests.len(), 0, "nothing of the stalled request reached the upstream");
    let journal = fs_err::read_to_string(run.store.episode_dir(&run.id).join("gateway-1.jsonl")).unwrap();
    let entry: serde_json::Value =
        journal.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["kind"] == "exchange").unwrap();
    assert_eq!((entry["outcome"]["outcome"].as_str(), entry["body_incomplete"].as_bool()), (Some("abandoned"), Some(true)), "{entry}");
}

#[test]
fn the_result_carried_by_a_request_stalled_mid_body_at_the_wall_budget_is_in_the_transcript() {
    // Issue 29 item 5 (a request cut while being sent): the second request carries the first
    // command's result in its complete messages, and its body never finishes.
    let mock = MockUpstream::start([bash(1, "echo early > early.txt", false)]).unwrap();
    let mut config = command_config(&mock, false);
    // Everything but the last 20 bytes (which lie in its `tools`, after the messages).
    config.command = Some(format!("python3 {} --stall 2:-20", agent_script().display()));
    let flags = BudgetFlags { wall_sec: Some(4), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::WallBudget));
    assert_eq!(tool_result(&run, "call-1"), Some(("exit status 0\n(no output)".to_string(), false)));
    let outcomes: Vec<(u64, String)> = exchanges(&run).into_iter().map(|(seq, outcome, _)| (seq, outcome)).collect();
    assert_eq!(outcomes, vec![(0, "completed".to_string()), (1, "abandoned".to_string())]);
    assert_eq!(run.requests.len(), 1);
}

#[test]
fn the_result_carried_by_a_model_request_that_hangs_until_the_wall_budget_is_in_the_transcript() {
    // Issue 29 item 5 (as seen with Claude Code): the request carrying the first command's
    // result hangs upstream until the wall budget; the result was missing from the transcript.
    let slow = bash(2, "echo never > never.txt", false).with_delay(Duration::from_secs(60));
    let mock = MockUpstream::start([bash(1, "echo early > early.txt", false), slow]).unwrap();
    let config = command_config(&mock, false);
    let flags = BudgetFlags { wall_sec: Some(4), ..BudgetFlags::default() };
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, flags);
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::WallBudget));
    assert_eq!(tool_result(&run, "call-1"), Some(("exit status 0\n(no output)".to_string(), false)));
    assert_eq!(
        exchanges(&run),
        vec![
            (0, "completed".to_string(), String::new()),
            (1, "abandoned".to_string(), specgap_agents::cli::ABANDONED_AT_WALL_BUDGET.to_string())
        ]
    );
    // The result comes before the exchange that carried it, and both before the end.
    let position = |wanted: &dyn Fn(&EventKind) -> bool| run.events.iter().position(|e| wanted(&e.kind)).unwrap();
    let result_at = position(&|k| matches!(k, EventKind::ToolResult { call_id, .. } if call_id == "call-1"));
    let abandoned_at = position(&|k| matches!(k, EventKind::ModelExchange { request: 1, .. }));
    let end_at = position(&|k| matches!(k, EventKind::End { .. }));
    assert!(result_at < abandoned_at && abandoned_at < end_at, "{result_at} {abandoned_at} {end_at}");
}
