//! The optional model summary on episode pages: one request per episode unit to a scripted
//! mock, given only what the agent saw and did, shown escaped, usage under `summarizer`.

use serde_json::Value;
use specgap_agents::chat::ChatConfig;
use specgap_audit::sample::{Manifest, draw, write_with};
use specgap_audit::summary::{SUMMARY_SYSTEM, Summarizer};
use specgap_audit::{Rubric, UnitKind};
use specgap_store::Role;

use crate::fixture::{AGENT_SCRIPT, audit_run, ep};
use crate::mock::{MockServer, completion};

#[test]
fn episode_pages_carry_an_escaped_model_summary_whose_usage_is_the_summarizers() {
    let server = MockServer::start(|_, _| (200, completion("The agent <b>listed</b> files, then submitted.")));
    let run = audit_run(&[ep(0, "a1", 0, false), ep(0, "a2", 0, false)]);
    let manifest = Manifest {
        unit: UnitKind::FailedEpisode,
        rubric: Rubric::builtin("seed001-continuation").unwrap(),
        runs: vec![run.run.clone()],
        by: vec![],
        n: None,
        seed: 1,
        batch: None,
    };
    let sample = draw(std::slice::from_ref(&run.store), manifest).unwrap();
    let out = tempfile::tempdir().unwrap();
    let summarizer = Summarizer { config: ChatConfig { base_url: server.url.clone(), max_retries: 0, ..ChatConfig::new("summary-model") } };
    write_with(std::slice::from_ref(&run.store), &sample, out.path(), Some(&summarizer)).unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request per episode");
    for request in &requests {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["model"], "summary-model");
        assert_eq!(body["messages"][0]["content"], SUMMARY_SYSTEM);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.starts_with("REQUEST:\n"), "{user:.80}");
        assert!(user.contains(AGENT_SCRIPT) && user.contains("call bash {\"command\":\"ls\"}"));
        // Nothing the agent did not see: not the evaluation's failing requirement.
        assert!(!String::from_utf8_lossy(&request.body).contains("record-identity"));
    }
    let page = std::fs::read_to_string(out.path().join("pages/0001.html")).unwrap();
    assert!(page.contains("A model&#39;s summary of the trajectory (chat:summary-model;"));
    assert!(page.contains("The agent &lt;b&gt;listed&lt;/b&gt; files, then submitted."));
    let usage = run.store.usage().unwrap();
    let rows: Vec<_> = usage.iter().filter(|u| u.role == Role::Summarizer).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|u| u.usage.requests == 1 && u.usage.input_tokens == 100 && u.usage.output_tokens == 20));

    // A failing model leaves the page saying so; the sheet is still written.
    let down = MockServer::start(|_, _| (500, "{\"error\":\"down\"}".into()));
    let failing = Summarizer { config: ChatConfig { base_url: down.url.clone(), max_retries: 0, ..ChatConfig::new("summary-model") } };
    let out = tempfile::tempdir().unwrap();
    write_with(std::slice::from_ref(&run.store), &sample, out.path(), Some(&failing)).unwrap();
    let page = std::fs::read_to_string(out.path().join("pages/0001.html")).unwrap();
    assert!(page.contains("The summary failed: episode "), "{page}");
}
