//! `specgap resample` and `specgap audit` through the binary: a run with a chat agent and a
//! chat owner against the scripted mock server, then the owner's recorded requests re-sent
//! (the bytes the server got during the run, again, byte for byte), then an audit round trip
//! (sample, label, import, report).

use serde_json::{Value, json};

use crate::chat::mock_server::{Captured, MockServer, Scripted, completion};
use crate::support::*;

const OWNER_REPLY: &str = "I only saw the receipt printed twice; please look at the records.";

fn payment_retry() -> std::path::PathBuf {
    repo().join("examples/tasks/payment-retry")
}

/// An agent that asks once, then submits without changes (so the owner also gives feedback
/// on the failed submission); owner requests (no tools offered) get [`OWNER_REPLY`].
fn handler() -> impl Fn(&Captured, usize) -> Scripted + Send + Sync {
    move |request, _| {
        if request.body.get("tools").is_none() {
            return Scripted::json(completion(Some(OWNER_REPLY), &[], "stop"));
        }
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        let call: Option<(&str, Value)> = match step {
            0 => Some(("ask_user", json!({"question": "Which records should I trust?"}))),
            1 => Some(("submit", json!({"summary": "nothing changed"}))),
            _ => None,
        };
        match call {
            Some((tool, args)) => Scripted::json(completion(None, &[(&format!("c{step}"), tool, args)], "tool_calls")),
            None => Scripted::json(completion(Some("Stopping here."), &[], "stop")),
        }
    }
}

fn owner_requests(server: &MockServer) -> Vec<String> {
    server.requests().into_iter().filter(|r| r.body.get("tools").is_none()).map(|r| r.raw_body).collect()
}

#[test]
fn resample_resends_the_owner_requests_of_a_chat_run_byte_for_byte_and_audits_round_trip() {
    let server = MockServer::start(handler());
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_ok(
        [
            "run",
            payment_retry().to_str().unwrap(),
            "--agent",
            "chat:mock",
            "--user",
            "chat:mock",
            "--base-url",
            server.url.as_str(),
            "--user-model-arg",
            "temperature=0.7",
            "--condition",
            "partial",
            "--turns",
            "4",
            "--jobs",
            "1",
            "--out",
            run.to_str().unwrap(),
            "--no-report",
        ],
    );
    let recorded = owner_requests(&server);
    assert!(recorded.len() >= 2, "the owner answered and gave feedback: {} requests", recorded.len());
    let sheet_dir = tmp.path().join("resample");
    let before = server.requests().len();
    let output = run_ok([
        "resample",
        run.to_str().unwrap(),
        "--checkpoints",
        "30",
        "--samples",
        "2",
        "--seed",
        "7",
        "--out",
        sheet_dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{n} of {n} checkpoints, {} requests sent (0 failed)", 2 * recorded.len(), n = recorded.len())), "{stderr}");
    let resent: Vec<String> = server.requests()[before..].iter().map(|r| r.raw_body.clone()).collect();
    assert_eq!(resent.len(), 2 * recorded.len());
    // Checkpoints go in (episode, request) order; one episode here, so in recording order.
    let expected: Vec<String> = recorded.iter().flat_map(|r| [r.clone(), r.clone()]).collect();
    assert_eq!(resent, expected, "every recorded owner request is re-sent byte for byte, twice");

    // The resample sheet, labelled and imported, gives the stability summary.
    let sheet = fs_err::read_to_string(sheet_dir.join("sheet.csv")).unwrap();
    let filled: Vec<String> = sheet
        .lines()
        .enumerate()
        .map(|(i, line)| if i == 0 { line.to_string() } else { line.replacen(",,,", ",accept,accept,", 1) })
        .collect();
    let labelled = tmp.path().join("rater.csv");
    fs_err::write(&labelled, filled.join("\n") + "\n").unwrap();
    run_ok(["audit", "import", run.to_str().unwrap(), labelled.to_str().unwrap(), "--rater", "r1"]);
    let report = run_ok(["audit", "report", run.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    let checkpoints = recorded.len();
    assert!(
        text.contains(&format!("stability r1: {} resamples, faithful 1.000, consistent 1.000, both 1.000; of {checkpoints} checkpoints, {checkpoints} with every resample consistent, {checkpoints} with every resample acceptable", 2 * checkpoints)),
        "{text}"
    );

    // An audit of the owner's replies: sample, label, import twice, report as JSON.
    let audit_dir = tmp.path().join("audit");
    run_ok([
        "audit",
        "sample",
        run.to_str().unwrap(),
        "--unit",
        "reply",
        "--rubric",
        "seed002-customer",
        "--seed",
        "3",
        "--out",
        audit_dir.to_str().unwrap(),
    ]);
    let sheet = fs_err::read_to_string(audit_dir.join("sheet.csv")).unwrap();
    assert_eq!(sheet.lines().next(), Some("sample,item,page,support,consistency,note"));
    for (rater, support) in [("ann", "supported"), ("ben", "uncertain")] {
        let filled: Vec<String> = sheet
            .lines()
            .enumerate()
            .map(|(i, line)| if i == 0 { line.to_string() } else { line.replacen(",,,", &format!(",{support},not-applicable,"), 1) })
            .collect();
        let path = tmp.path().join(format!("{rater}.csv"));
        fs_err::write(&path, filled.join("\n") + "\n").unwrap();
        run_ok(["audit", "import", run.to_str().unwrap(), path.to_str().unwrap(), "--rater", rater]);
    }
    let json: Value = serde_json::from_slice(&run_ok(["audit", "report", run.to_str().unwrap(), "--json"]).stdout).unwrap();
    let reply = json.as_array().unwrap().iter().find(|s| s["unit"] == "reply").unwrap();
    assert_eq!(reply["raters"], json!(["ann", "ben"]));
    let support = reply["agreements"].as_array().unwrap().iter().find(|a| a["label"] == "support" && a["without_uncertain"] == false).unwrap();
    assert_eq!(support["percent"]["value"], json!(0.0));
    let refused = specgap().args(["audit", "import", run.to_str().unwrap(), tmp.path().join("ann.csv").to_str().unwrap(), "--rater", "ann"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("rater ann has labelled audit sample"), "{}", String::from_utf8_lossy(&refused.stderr));
}
