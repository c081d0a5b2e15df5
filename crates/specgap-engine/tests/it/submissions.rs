//! Submissions, scores and consequence feedback on the `req-basic` fixture.
//!
//! req-basic has three requirements by priority: disputed-exempt (1), fee-cap (2),
//! monthly-rate (3). The starter fails all three; the literal solution passes only
//! monthly-rate; gold passes all.

use serde_json::json;
use specgap_agents::{ReplayAgent, ScriptedAgent, Solution};
use specgap_engine::session::AgentReply;
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture, fixture_dir, one, run};

const DISPUTED_INCIDENT: &str = "A customer who is contesting an invoice with us complained that the statement \
    added a late fee on top of the amount they are contesting.";

fn fees_without_cap() -> String {
    r#"from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from billing.invoices import DISPUTED, Invoice
from billing.policy import DAYS_PER_PERIOD, LATE_FEE_RATE


def late_fee(invoice: Invoice, paid_on: date) -> Decimal:
    if invoice.status == DISPUTED:
        return Decimal("0.00")
    days_late = (paid_on - invoice.due).days
    if days_late <= 0:
        return Decimal("0.00")
    periods = -(-days_late // DAYS_PER_PERIOD)
    return (invoice.principal * LATE_FEE_RATE * periods).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
"#
    .to_string()
}

fn gold_fees() -> String {
    fs_err::read_to_string(fixture_dir("req-basic").join("solutions/gold/billing/fees.py")).unwrap()
}

#[test]
fn gold_succeeds_at_submission_1() {
    let package = fixture("req-basic");
    let mut agent = ScriptedAgent::new(Solution::Gold);
    let r = run(&package, "partial", &mut agent, Options { agent_spec: Some("scripted:gold".into()), ..Options::default() });
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
    assert!(outcome.submissions[0].scored.success);
    assert_eq!(outcome.turns, 2);
    assert!(r.kinds().contains(&&EventKind::Overlay { name: "gold".into() }));
    // The diff is against the harness's base: the rewritten file and the deleted draft.
    let diff = fs_err::read_to_string(r.episode_dir().join("submissions/1/workspace.diff")).unwrap();
    assert!(diff.contains("diff --git a/billing/fees.py b/billing/fees.py"), "{diff}");
    assert!(diff.contains("deleted file mode"), "{diff}");
    assert!(r.episode_dir().join("submissions/1/result.json").is_file());
    let rows = r.store.submissions().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].k, rows[0].success, rows[0].automatic), (1, Some(true), false));
    assert_eq!(r.results().last().unwrap().1, "The delivery was accepted. The work is finished.");
}

#[test]
fn starter_feedback_escalates_from_incident_to_detail() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("submit", json!({})), one("submit", json!({"summary": "again"}))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(r.scores(), [0.0, 0.0]);
    assert_eq!(outcome.submissions[0].failing_requirement.as_deref(), Some("disputed-exempt"));
    let detail = "Invoice INV-9201 is marked as disputed and its statement shows a late fee of 6.00.";
    let expected = vec![DISPUTED_INCIDENT.to_string(), format!("{DISPUTED_INCIDENT}\n\n{detail}")];
    assert_eq!(agent.user_messages(), expected);
    assert_eq!(r.user_messages(), expected);
    // The script ran out without changing anything: no automatic submission.
    assert_eq!(outcome.end_reason, EndReason::AgentDone);
    assert_eq!(outcome.submissions.len(), 2);
}

#[test]
fn literal_scores_are_exact_at_every_submission() {
    let package = fixture("req-basic");
    let mut replies = vec![one("apply_overlay", json!({"name": "literal"}))];
    replies.extend((0..4).map(|_| one("submit", json!({}))));
    let mut agent = TestAgent::new(replies).harness();
    let r = run(&package, "literal", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(r.scores(), [1.0 / 3.0; 4]);
    assert!(outcome.submissions.iter().all(|s| s.failing_requirement.as_deref() == Some("disputed-exempt")));
    assert_eq!(outcome.end_reason, EndReason::SubmissionBudget);
    // Three returned deliveries get feedback; the fourth used the budget.
    let detail = "Invoice INV-9201 is marked as disputed and its statement shows a late fee of 12.00.";
    let escalated = format!("{DISPUTED_INCIDENT}\n\n{detail}");
    assert_eq!(agent.user_messages(), [DISPUTED_INCIDENT.to_string(), escalated.clone(), escalated]);
    assert!(r.kinds().contains(&&EventKind::Budget { which: "submissions".into(), used: 4, limit: 4 }));
}

#[test]
fn scripted_literal_and_mutant_scores() {
    let package = fixture("req-basic");
    let mut literal = ScriptedAgent::new(Solution::Literal);
    let r = run(&package, "full", &mut literal, Options::default());
    assert_eq!(r.scores(), [1.0 / 3.0]);
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    let mut mutant = ScriptedAgent::new(Solution::Mutant("fee-cap".into()));
    let r = run(&package, "full", &mut mutant, Options::default());
    assert_eq!(r.scores(), [2.0 / 3.0]);
    assert_eq!(r.ok().submissions[0].failing_requirement.as_deref(), Some("fee-cap"));
    let mut starter = ScriptedAgent::new(Solution::Starter);
    let r = run(&package, "full", &mut starter, Options::default());
    assert_eq!(r.scores(), [0.0]);
}

#[test]
fn replay_script_partial_fix_then_full_fix() {
    let package = fixture("req-basic");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fix.jsonl");
    let lines = [
        "// first a partial fix: no cap".to_string(),
        json!({"tool": "write_text", "arguments": {"path": "billing/fees.py", "content": fees_without_cap()}}).to_string(),
        json!({"tool": "submit"}).to_string(),
        String::new(),
        "# then the whole rule".to_string(),
        json!({"tool": "write_text", "arguments": {"path": "billing/fees.py", "content": gold_fees()}}).to_string(),
        json!({"tool": "submit", "arguments": {"summary": "capped"}}).to_string(),
    ];
    fs_err::write(&script, lines.join("\n")).unwrap();
    let mut agent = ReplayAgent::load(&script).unwrap();
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(r.scores(), [2.0 / 3.0, 1.0]);
    assert!(!outcome.submissions[0].scored.success);
    assert_eq!(outcome.submissions[0].failing_requirement.as_deref(), Some("fee-cap"));
    assert!(outcome.submissions[1].scored.success);
    assert_eq!(outcome.end_reason, EndReason::Accepted);
    let incident = "The accountant flagged a statement whose late fee looked far too large for the size of the invoice.";
    assert_eq!(r.user_messages(), [incident]);
}

#[test]
fn stored_trajectory_replays_with_its_overlay() {
    let package = fixture("req-basic");
    let mut agent = ScriptedAgent::new(Solution::Gold);
    let first = run(&package, "partial", &mut agent, Options { agent_spec: Some("scripted:gold".into()), ..Options::default() });
    let mut replay = ReplayAgent::load(&first.episode_dir()).unwrap();
    assert!(specgap_engine::Agent::allows_harness_actions(&replay));
    let second = run(&package, "partial", &mut replay, Options::default());
    assert_eq!(second.scores(), [1.0]);
    assert_eq!(second.ok().end_reason, EndReason::Accepted);
}

#[test]
fn plain_scripts_cannot_apply_overlays() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("apply_overlay", json!({"name": "gold"}))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let (tool, output, is_error) = &r.results()[0];
    assert_eq!(tool, "apply_overlay");
    assert!(is_error);
    assert!(output.starts_with("unknown tool `apply_overlay`; the tools are: list_files, read_text"), "{output}");
    assert!(r.ok().submissions.is_empty());
}

#[test]
fn automatic_submission_when_the_script_ends_with_changes() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![one("write_text", json!({"path": "billing/fees.py", "content": gold_fees()}))]);
    let r = run(&package, "partial", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::AgentDone);
    assert_eq!(outcome.submissions.len(), 1);
    assert!(outcome.submissions[0].automatic);
    assert_eq!(r.scores(), [1.0]);
    let rows = r.store.submissions().unwrap();
    assert_eq!((rows[0].automatic, rows[0].agent_declared), (true, false));
    assert!(r.kinds().contains(&&EventKind::Submission { k: 1, summary: None, automatic: true }));
    let last = r.kinds().last().cloned().cloned();
    assert_eq!(last, Some(EventKind::End { reason: "agent_done".into(), detail: String::new() }));
}

#[test]
fn no_automatic_submission_when_nothing_changed_since_the_last() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "billing/fees.py", "content": fees_without_cap()})),
        one("submit", json!({})),
        one("read_text", json!({"path": "billing/fees.py"})),
        AgentReply::ContextOverflow,
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::ContextOverflow);
    assert_eq!(r.scores(), [2.0 / 3.0]);
}

#[test]
fn an_unchanged_workspace_at_a_budget_end_is_not_submitted_again_and_the_store_says_so() {
    // Seed 000 Alg. 1 line 18 submits the current workspace at a budget end; specgap skips an
    // unchanged one (DESIGN §3.5): its evaluation would repeat the last one. The store says
    // what happened: the `end` detail, and a budget end without an automatic row.
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "billing/fees.py", "content": fees_without_cap()})),
        one("submit", json!({})),
        one("read_text", json!({"path": "billing/fees.py", "limit": 1})),
    ]);
    let mut options = Options::default();
    options.flags.turns = Some(3);
    let r = run(&package, "partial", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::TurnBudget);
    assert!(EndReason::TurnBudget.makes_automatic_submission());
    let rows = r.store.submissions().unwrap();
    assert_eq!(rows.iter().map(|s| (s.k, s.automatic)).collect::<Vec<_>>(), [(1, false)]);
    let last = r.kinds().last().cloned().cloned();
    assert_eq!(
        last,
        Some(EventKind::End {
            reason: "turn_budget".into(),
            detail: "no automatic submission: the workspace is unchanged since submission 1".into()
        })
    );
    // Without any submission the detail names the start.
    let mut idle = TestAgent::new(vec![one("read_text", json!({"path": "README.md", "limit": 1}))]);
    let mut options = Options::default();
    options.flags.tool_calls = Some(1);
    let r = run(&package, "partial", &mut idle, options);
    assert_eq!(r.ok().end_reason, EndReason::ToolCallBudget);
    assert!(r.store.submissions().unwrap().is_empty());
    let last = r.kinds().last().cloned().cloned();
    assert_eq!(
        last,
        Some(EventKind::End {
            reason: "tool_call_budget".into(),
            detail: "no automatic submission: the workspace is unchanged since the start".into()
        })
    );
}
