//! Applicability (DESIGN §4), agent failures and interruption.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::json;
use specgap_agents::parse_agent_spec;
use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening};
use specgap_engine::{Condition, EpisodeError, NotApplicable, Start, applicability};
use specgap_protocol::event::Usage;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture, one, run};

fn check(package: &specgap_task::TaskPackage, condition: &str, start: Start) -> Result<(), String> {
    applicability(package, &Condition::parse(condition).unwrap(), &start).map_err(|NotApplicable { reason }| reason)
}

#[test]
fn conditions_a_task_cannot_support_are_not_applicable() {
    let req = fixture("req-basic");
    let delivery = fixture("delivery-basic");
    assert_eq!(check(&req, "partial", Start::Clean), Ok(()));
    assert_eq!(check(&req, "full", Start::Clean), Ok(()));
    assert_eq!(check(&req, "plan", Start::Clean), Ok(()));
    assert_eq!(check(&delivery, "full", Start::Clean), Err("condition full needs instruction.full.md".into()));
    assert_eq!(
        check(&delivery, "partial", Start::Clean),
        Err("condition partial gives feedback and the task has no observations.toml entries".into())
    );
    assert_eq!(check(&delivery, "hidden", Start::Clean), Ok(()));
    assert_eq!(
        check(&delivery, "hidden+feedback=on", Start::Clean).map_err(|r| r.starts_with("condition hidden+feedback=on gives feedback")),
        Err(true)
    );
    assert_eq!(check(&req, "interact", Start::Clean), Err("condition interact needs information.md".into()));
    assert_eq!(check(&req, "interact-req", Start::Clean), Err("condition interact-req needs information.md".into()));
    assert_eq!(check(&req, "full-info", Start::Clean), Err("condition full-info needs information.md".into()));
    assert_eq!(check(&delivery, "full-info", Start::Clean), Ok(()));
    assert_eq!(check(&req, "oracle:0.5", Start::Clean), Err("condition oracle:0.5 needs clarifications.toml targets".into()));
    assert_eq!(check(&delivery, "oracle:0.5", Start::Clean), Ok(()));
    assert_eq!(check(&req, "partial", Start::Residual("r9".into())), Err("start residual:r9 needs residual/r9/".into()));
}

#[test]
fn scripted_agents_need_their_overlay() {
    let req = fixture("req-basic");
    let delivery = fixture("delivery-basic");
    let applies = |spec: &str, package| parse_agent_spec(spec).unwrap().applicability(package).map_err(|e| e.reason);
    assert_eq!(applies("scripted:gold", &req), Ok(()));
    assert_eq!(applies("scripted:mutant:fee-cap", &req), Ok(()));
    assert_eq!(applies("scripted:mutant:nope", &req), Err("agent scripted:mutant:nope needs solutions/mutants/nope/".into()));
    assert_eq!(applies("scripted:literal", &delivery), Err("agent scripted:literal needs solutions/literal/".into()));
    assert_eq!(applies("scripted:starter", &delivery), Ok(()));
}

struct FailingAgent;

impl Agent for FailingAgent {
    fn start(&mut self, _opening: &Opening) -> Result<(), AgentError> {
        Ok(())
    }
    fn next_turn(&mut self, _inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        Err(AgentError::new("model service returned 503 after 3 retries", false))
    }
    fn usage(&self) -> Usage {
        Usage::default()
    }
}

#[test]
fn an_agent_service_failure_is_an_infrastructure_error() {
    let package = fixture("req-basic");
    let r = run(&package, "partial", &mut FailingAgent, Options::default());
    match &r.outcome {
        Err(EpisodeError::Infrastructure { message, deterministic, .. }) => {
            assert_eq!(message, "agent: model service returned 503 after 3 retries");
            assert!(!deterministic);
        }
        other => panic!("expected an infrastructure error, got {:?}", other.as_ref().map(|o| o.end_reason)),
    }
    assert_eq!(r.outcome.as_ref().err().and_then(EpisodeError::class), Some(specgap_store::ErrorClass::Infrastructure));
}

#[test]
fn a_stop_request_ends_the_episode_as_interrupted_without_submitting() {
    let package = fixture("req-basic");
    let stop = Arc::new(AtomicBool::new(true));
    let mut agent = TestAgent::new(vec![one("write_text", json!({"path": "x.txt", "content": "x"}))]);
    let r = run(&package, "partial", &mut agent, Options { stop: Some(stop), ..Options::default() });
    assert_eq!(r.ok().end_reason, EndReason::Interrupted);
    assert_eq!(r.ok().turns, 0);
    assert!(r.ok().submissions.is_empty());
}
