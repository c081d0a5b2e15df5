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
    run_ok([
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
    ]);
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
    assert!(
        stderr.contains(&format!("{n} of {n} checkpoints, {} requests sent (0 failed)", 2 * recorded.len(), n = recorded.len())),
        "{stderr}"
    );
    // Picking by a review finding needs a user review of the run first.
    let unreviewed = specgap()
        .args(["resample", run.to_str().unwrap(), "--seed", "7", "--finding", "any", "--out", tmp.path().join("x").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(unreviewed.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unreviewed.stderr).contains(&format!("--finding any: run {} has no user review", run.display())),
        "{}",
        String::from_utf8_lossy(&unreviewed.stderr)
    );
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
    let support =
        reply["agreements"].as_array().unwrap().iter().find(|a| a["label"] == "support" && a["without_uncertain"] == false).unwrap();
    assert_eq!(support["percent"]["value"], json!(0.0));
    let refused = specgap()
        .args(["audit", "import", run.to_str().unwrap(), tmp.path().join("ann.csv").to_str().unwrap(), "--rater", "ann"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("rater ann has labelled audit sample"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// The gold agent's delivery on retail-replenishment with an extraction panel's verdict
/// recorded as `specgap extract` records it, then an extraction audit through the binary:
/// sample, page, import, report; then its task package sampled, and no candidate to sample.
#[test]
fn audit_of_extraction_verdicts_and_tasks_round_trips_through_the_binary() {
    use specgap_store::{Ballot, BallotOutcome, Extraction, ExtractionStatus, PanelRecord, PanelUse, Store};
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let task = repo().join("examples/tasks/retail-replenishment");
    run_ok(["run", task.to_str().unwrap(), "--agent", "scripted:gold", "--condition", "interact", "--out", run.to_str().unwrap()]);
    let id = episodes(&run).into_iter().next().expect("one episode").id;
    let store = Store::open(&run).unwrap();
    let panel = "panel:0000000000e1";
    store
        .record_panel(&PanelRecord {
            name: panel.into(),
            use_: PanelUse::Extractor,
            config: json!({"models": [{"model": "m"}]}),
            prompt_version: "v1".into(),
            prompt_hash: "00".into(),
        })
        .unwrap();
    let ballot = Ballot {
        panel: panel.into(),
        subject: "submission:1".into(),
        seat: 0,
        model: "m".into(),
        position: 0,
        prompt_version: "v1".into(),
        outcome: BallotOutcome::Ballot,
        vote: Some(json!({"files": ["plan.json"], "summary": "<script>window.__pwned=1</script>", "score": 0.8125})),
        request: json!([{"system": "CANARY-PROMPT-e1"}]),
        response: json!([]),
        error: None,
    };
    let extraction = Extraction {
        panel: panel.into(),
        k: 1,
        status: ExtractionStatus::Scored,
        score: Some(0.8125),
        success: Some(false),
        valid: Some(true),
        objective: None,
        signature: None,
        routes: 1,
        agreeing: 1,
    };
    store.record_extraction(&id, &[ballot], &extraction).unwrap();
    let out = tmp.path().join("audit");
    run_ok([
        "audit",
        "sample",
        run.to_str().unwrap(),
        "--unit",
        "extraction",
        "--rubric",
        "seed002-extraction",
        "--by",
        "status",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let sheet = fs_err::read_to_string(out.join("sheet.csv")).unwrap();
    let lines: Vec<&str> = sheet.lines().collect();
    assert_eq!(lines[0], "sample,item,page,fidelity,note");
    assert_eq!(lines.len(), 2);
    assert!(lines[1].contains(&format!(",{id}#panel={panel}#k=1,pages/0001.html,")), "{}", lines[1]);
    let page = fs_err::read_to_string(out.join("pages/0001.html")).unwrap();
    assert!(page.contains("<p>scored: 1 of 1 extractions agreed on the score</p>"));
    assert!(page.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;") && !page.contains("<script"));
    assert!(!page.contains("0.8125") && !page.contains("CANARY-PROMPT-e1"));
    let labelled = tmp.path().join("r1.csv");
    fs_err::write(&labelled, format!("{}\n{}\n", lines[0], lines[1].replacen(",,", ",correct,", 1))).unwrap();
    run_ok(["audit", "import", run.to_str().unwrap(), labelled.to_str().unwrap(), "--rater", "r1"]);
    let json: Value = serde_json::from_slice(&run_ok(["audit", "report", run.to_str().unwrap(), "--json"]).stdout).unwrap();
    let sample = json.as_array().unwrap().iter().find(|s| s["unit"] == "extraction").unwrap();
    let correct = sample["rates"].as_array().unwrap().iter().find(|r| r["value"] == "correct").unwrap();
    assert_eq!((correct["count"].clone(), correct["share"]["value"].clone()), (json!(1), json!(1.0)));

    // The same run's task package, and no candidate: the gold delivery passed.
    let tasks = tmp.path().join("tasks");
    run_ok([
        "audit",
        "sample",
        run.to_str().unwrap(),
        "--unit",
        "task",
        "--rubric",
        "seed000-task",
        "--seed",
        "5",
        "--out",
        tasks.to_str().unwrap(),
    ]);
    let sheet = fs_err::read_to_string(tasks.join("sheet.csv")).unwrap();
    assert_eq!(sheet.lines().count(), 2);
    assert!(sheet.lines().nth(1).unwrap().contains(",task:examples/retail-replenishment,pages/0001.html,"), "{sheet}");
    let none = specgap()
        .args([
            "audit",
            "sample",
            run.to_str().unwrap(),
            "--unit",
            "candidate",
            "--rubric",
            "seed001-review",
            "--seed",
            "5",
            "--out",
            tmp.path().join("c").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("the runs hold no candidate unit to sample"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
}
