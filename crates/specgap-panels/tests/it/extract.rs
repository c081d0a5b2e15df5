//! The extraction panel (seed 002 §4.1, A.3, A.9.4) against scripted extractors: chat agents
//! played by a mock server, working in the real sandbox over the bundled retail case (whose
//! format-2 package names `schema/plan.schema.json`), scored by its real evaluator.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use specgap_panels::order::call_order;
use specgap_panels::{ExtractOptions, PanelFile, extract_run};
use specgap_protocol::result::Signature;
use specgap_store::{BallotOutcome, ExtractionStatus, PanelUse, Role, Store};

use crate::fixture::{EpisodeSpec, panel_file, retail, run_store};
use crate::mock::{Captured, MockServer, Reply};

const SEED: u64 = 5;

/// The gold plan of the retail case as CSV rows `day,sku,source,destination,units`.
fn gold_csv(extra: &[&str]) -> String {
    let gold: Value =
        serde_json::from_str(&std::fs::read_to_string(crate::fixture::retail_path().join("solutions/gold/plan.json")).unwrap()).unwrap();
    let mut text = String::from("day,sku,source,destination,units\n");
    for s in gold["shipments"].as_array().unwrap() {
        text.push_str(&format!(
            "{},{},{},{},{}\n",
            s["date"].as_str().unwrap(),
            s["item"].as_str().unwrap(),
            s["from"].as_str().unwrap(),
            s["to"].as_str().unwrap(),
            s["qty"]
        ));
    }
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The workspace diff of a delivery of `files` (path, content) on the clean retail workspace,
/// and the direct evaluation of that delivery by the case evaluator.
fn delivery(files: &[(&str, String)]) -> (Vec<u8>, String) {
    let package = retail();
    let tmp = tempfile::tempdir().unwrap();
    let bases = specgap_sandbox::BaseCache::new(tmp.path().join("bases")).unwrap();
    let base = bases.base(package.hash(), &package.workspace_dir()).unwrap();
    let ws = tmp.path().join("ws");
    specgap_sandbox::materialize(&base, &ws, None).unwrap();
    for (path, content) in files {
        let path = ws.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let diff = specgap_sandbox::diff(&base, &ws).unwrap();
    let host = specgap_sandbox::HostView::resolve(&package.manifest().environment).unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let (result, _) = specgap_engine::side_session::evaluate_workspace(&package, &Default::default(), &host, &ws, &scratch).unwrap();
    (diff, serde_json::to_string(&result).unwrap())
}

fn store_with(dir: &Path, files: &[(&str, String)]) -> (Store, String) {
    let (diff, result) = delivery(files);
    let result: &'static str = Box::leak(result.into_boxed_str());
    let spec = EpisodeSpec { repeat: 0, questions: vec![], submission: Some((diff, result)) };
    let (store, ids) = run_store(dir, SEED, &[spec]);
    (store, ids[0].clone())
}

/// A bash call.
fn bash(step: usize, command: &str) -> Reply {
    Reply::Calls(vec![(format!("c{step}"), "bash".into(), json!({"command": command}))])
}

fn submit(step: usize) -> Reply {
    Reply::Calls(vec![(format!("c{step}"), "submit".into(), json!({"summary": "plan.json written from results/plan.csv"}))])
}

/// Converts the delivered CSV into plan.json and writes the report naming its source; `tweak`
/// is Python applied to the row list `rows` before writing (a "repair").
fn convert(tweak: &str) -> String {
    format!(
        "python3 -c \"import csv, json\nrows = [dict(date=r['day'], item=r['sku'], to=r['destination'], qty=int(r['units']), **{{'from': r['source']}}) for r in csv.DictReader(open('/delivered/results/plan.csv'))]\n{tweak}\njson.dump({{'shipments': rows}}, open('plan.json', 'w'))\n{REPORT}\""
    )
}

/// Python writing `_result.json` that names the delivered CSV as the source.
const REPORT: &str = "json.dump({'status': 'success', 'notes': 'columns renamed', 'files_found': ['/delivered/results/plan.csv'], 'files_normalized': ['plan.json']}, open('_result.json', 'w'))";

/// An extractor that looks, converts with `tweak`, and submits.
fn extractor(request: &Captured, tweak: &str) -> Reply {
    let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
    match step {
        0 => bash(step, "head -3 /delivered/results/plan.csv && cat /schema/submission_schema.json | head -5"),
        1 => bash(step, &convert(tweak)),
        _ => submit(step),
    }
}

fn options() -> ExtractOptions {
    ExtractOptions::default()
}

#[test]
fn a_deliverable_in_another_layout_is_extracted_and_scored_once_three_agree() {
    let server = MockServer::start(|request| extractor(request, ""));
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&[]))]);
    // Scored from the direct artifact, the delivery is invalid: there is no plan.json.
    let direct = store.submissions().unwrap();
    assert_eq!(direct[0].score, Some(0.0));
    let models = ["x1", "x2", "x3", "x4", "x5"];
    let panel =
        PanelFile::load(&panel_file(dir.path(), &server.url, &models, "[extraction]\nturns = 6\n")).unwrap().panel(PanelUse::Extractor);
    let summary = extract_run(&store, &panel, &options()).unwrap();
    assert_eq!((summary.submissions, summary.scored, summary.routes), (1, 1, 3));
    let extractions = store.extractions().unwrap();
    let e = &extractions[0].extraction;
    assert_eq!((e.status, e.k, e.routes, e.agreeing), (ExtractionStatus::Scored, 1, 3, 3));
    assert_eq!((e.score, e.success, e.valid, e.signature), (Some(1.0), Some(true), Some(true), Some(Signature::None)));
    assert_eq!(e.objective, Some(0.99477596));
    // Only the first three models of the seeded order extracted; each ran one session of
    // three requests.
    let order: Vec<&str> = call_order(SEED, &id, "submission:1", 5).iter().map(|s| models[*s as usize]).collect();
    let asked: Vec<String> = {
        let mut seen = Vec::new();
        for r in server.requests() {
            if !seen.contains(&r.model().to_string()) {
                seen.push(r.model().to_string());
            }
        }
        seen
    };
    assert_eq!(asked, order[..3]);
    assert_eq!(server.requests().len(), 9);
    // Each request offers bash, check_output and submit; the opening holds the schema and
    // where the delivery is, and nothing of the evaluator.
    for request in server.requests() {
        let tools: Vec<&str> = request.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["bash", "check_output", "submit"]);
        let text = request.text();
        assert!(text.contains("/delivered"), "{text}");
        assert!(text.contains("/schema/submission_schema.json"));
        assert!(text.contains("\"shipments\""), "the schema is in the opening");
        // Seed 002 A.9.4's rules, in our words: code modules, identifiers, the fallback, the
        // report with provenance, the check.
        for rule in [
            "together with every module of the workspace it imports",
            "look in /case for a naming rule before you touch any name",
            "fall back to the most recent complete version that passes the agent's own validation",
            "An extraction that names none of the agent's files in `files_found` is not counted.",
            "Check your output with the check_output tool",
        ] {
            assert!(text.contains(rule), "{rule}: {text}");
        }
        assert!(!text.contains("evaluate.py") && !text.contains("evaluator/") && !text.contains("0.99477596"), "{text}");
        assert_eq!(request.body["temperature"], json!(0));
    }
    // Ballots: model, prompt version, request (the opening) and response (the transcript).
    let ballots = store.ballots_of(&id).unwrap();
    assert_eq!(ballots.len(), 3);
    for b in &ballots {
        assert_eq!(b.ballot.outcome, BallotOutcome::Ballot);
        assert_eq!(b.ballot.subject, "submission:1");
        assert_eq!(b.ballot.prompt_version, specgap_panels::prompts::EXTRACTOR_PROMPT_VERSION);
        let vote = b.ballot.vote.as_ref().unwrap();
        assert_eq!(vote["score"], json!(1.0));
        assert_eq!(vote["files"], json!(["plan.json"]), "the report is taken out before the evaluator sees the output");
        assert_eq!(vote["end"], json!("submitted"));
        assert_eq!((vote["finding"].clone(), vote["provenance"].clone()), (json!("output"), json!(["results/plan.csv"])));
        assert_eq!(vote["report"]["status"], json!("success"));
        assert_eq!(b.ballot.request[0]["tools"], json!(["bash", "check_output", "submit"]));
        let transcript = b.ballot.response.as_array().unwrap();
        assert_eq!(transcript.len(), 5, "{transcript:#?}");
        assert!(transcript[1]["output"].as_str().unwrap().starts_with("exit status 0\n--- stdout ---\nday,sku,source,destination,units"));
    }
    // Usage under `extractor`: 9 requests of 100 + 10 tokens.
    let usage = store.usage().unwrap();
    let row = usage.iter().find(|u| u.role == Role::Extractor).unwrap();
    assert_eq!((row.usage.requests, row.usage.input_tokens, row.usage.output_tokens), (9, 900, 90));
    // The report scores the run by the extraction (precedence over the direct artifact's 0);
    // `--extraction direct` shows the direct score.
    let quality = |extraction: &str| {
        let run = specgap_report::RunData::load(&dir.path().join("run")).unwrap();
        let options = specgap_report::ReportOptions { extraction: extraction.into(), ..Default::default() };
        let report = specgap_report::build_report(&[run], &options).unwrap();
        let d = report.groups[0].delivery.clone().unwrap();
        let scored = d.scored_only.unwrap();
        (report.extraction, scored.quality, scored.valid)
    };
    assert_eq!(quality("auto"), (Some(panel.name.clone()), 1.0, 1.0));
    assert_eq!(report_of(dir.path()).extraction_check_output, Some(true));
    assert_eq!(quality(&panel.name), (Some(panel.name.clone()), 1.0, 1.0));
    assert_eq!(quality("direct"), (None, 0.0, 0.0));
    // A second step extracts nothing again.
    let again = extract_run(&store, &panel, &options()).unwrap();
    assert_eq!((again.submissions, again.already), (0, 1));
    assert_eq!(server.requests().len(), 9);
}

#[test]
fn an_extractor_that_repairs_a_value_is_outvoted_by_the_disagreement_rule() {
    let dir = tempfile::tempdir().unwrap();
    // The agent's plan ships stock out of a store: invalid (stores never ship).
    let (store, id) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&["2025-03-14,SKU-OAT,ST-HAR-1,ST-HAR-2,1"]))]);
    let models = ["x1", "x2", "x3", "x4", "x5"];
    // The first two models of the seeded order "repair" the plan by dropping the store's
    // shipment; the other three copy it as it is.
    let order = call_order(SEED, &id, "submission:1", 5);
    let repairers: Vec<String> = order[..2].iter().map(|s| models[*s as usize].to_string()).collect();
    let chosen = Arc::new(Mutex::new(repairers.clone()));
    let server = MockServer::start(move |request| {
        let repair = chosen.lock().unwrap().contains(&request.model().to_string());
        extractor(request, if repair { "rows = [r for r in rows if not r['from'].startswith('ST-')]" } else { "" })
    });
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &models, "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let e = store.extractions().unwrap()[0].extraction.clone();
    assert_eq!((e.status, e.score, e.valid, e.signature), (ExtractionStatus::Scored, Some(0.0), Some(false), Some(Signature::Constraint)));
    assert_eq!((e.routes, e.agreeing), (5, 3));
    let ballots = store.ballots_of(&id).unwrap();
    for b in &ballots {
        let score = b.ballot.vote.as_ref().unwrap()["score"].as_f64().unwrap();
        if repairers.contains(&b.ballot.model) {
            assert_eq!(score, 1.0, "the repaired plan would have passed");
        } else {
            assert_eq!(score, 0.0);
        }
    }
}

#[test]
fn extractors_without_a_majority_leave_the_run_unscored_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&[]))]);
    let models = ["x1", "x2", "x3"];
    let server = MockServer::start(|request| match request.model() {
        "x1" => extractor(request, ""),
        // Doubles the first supplier purchase: still valid, objective 0.99439196 (0.9996).
        "x2" => extractor(request, "first = next(r for r in rows if r['from'].startswith('SUP-'))\nfirst['qty'] *= 2"),
        // Keeps the first five shipments: valid, objective 0.39844629.
        _ => extractor(request, "rows = rows[:5]"),
    });
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &models, "")).unwrap().panel(PanelUse::Extractor);
    let summary = extract_run(&store, &panel, &options()).unwrap();
    assert_eq!(summary.unavailable, vec![id.clone()]);
    let e = store.extractions().unwrap()[0].extraction.clone();
    assert_eq!((e.status, e.score, e.valid, e.routes, e.agreeing), (ExtractionStatus::Unavailable, None, None, 3, 0));
    let mut scores: Vec<(String, f64)> = store
        .ballots_of(&id)
        .unwrap()
        .iter()
        .map(|b| (b.ballot.model.clone(), b.ballot.vote.as_ref().unwrap()["score"].as_f64().unwrap()))
        .collect();
    scores.sort_by(|a, b| a.0.cmp(&b.0));
    let reference = 0.99477596;
    assert_eq!(scores[0], ("x1".to_string(), 1.0));
    assert!((scores[1].1 - 0.99439196 / reference).abs() < 1e-12, "{scores:?}");
    assert!((scores[2].1 - 0.39844629 / reference).abs() < 1e-12, "{scores:?}");
    // The report lists the run as unscored and leaves its group's planned-run cells out.
    let run = specgap_report::RunData::load(&dir.path().join("run")).unwrap();
    let report = specgap_report::build_report(&[run], &Default::default()).unwrap();
    let delivery = report.groups[0].delivery.as_ref().unwrap();
    assert!(!delivery.complete);
    // The run's plan has three repeats; the other two were never run.
    let reasons: Vec<(&str, &str)> = delivery.unscored.iter().map(|u| (u.episode.as_str(), u.reason.as_str())).collect();
    assert!(reasons.contains(&(id.as_str(), "extraction_unavailable")), "{reasons:?}");
    assert_eq!(reasons.iter().filter(|(_, r)| *r == "absent").count(), 2);
    assert_eq!(report.extraction.as_deref(), Some(panel.name.as_str()));
}

#[test]
fn extractors_see_the_delivery_and_the_schema_only_and_cannot_change_the_delivery() {
    let package_evaluator = crate::fixture::retail_path().join("evaluator/evaluate.py");
    let probe = format!("cat {} ; echo x > /delivered/results/plan.csv ; ls /delivered/results ; ls / ", package_evaluator.display());
    let seen = Arc::new(Mutex::new(String::new()));
    let out = Arc::clone(&seen);
    let server = MockServer::start(move |request| {
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        if step == 1 {
            let last = request.messages().last().unwrap()["content"].as_str().unwrap_or("").to_string();
            *out.lock().unwrap() = last;
        }
        match step {
            0 => bash(0, &probe),
            _ => submit(step),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&[]))]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &["x1"], "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let output = seen.lock().unwrap().clone();
    assert!(output.contains("No such file or directory"), "the package's evaluator is not there: {output}");
    assert!(output.contains("Read-only file system"), "the delivery cannot be changed: {output}");
    assert!(!output.contains("def evaluate"), "{output}");
    // The root holds the sandbox's own directories and the three mounts, nothing of the package.
    assert!(output.contains("delivered") && output.contains("schema") && output.contains("workspace"), "{output}");
    assert!(output.contains("case"), "the request and business notes are mounted: {output}");
}

/// An extractor whose second step runs `command` (then submits).
fn scripted(request: &Captured, command: &str) -> Reply {
    match request.messages().iter().filter(|m| m["role"] == "assistant").count() {
        0 => bash(0, "ls /delivered"),
        1 => bash(1, command),
        step => submit(step),
    }
}

#[test]
fn empty_and_provenance_less_extractions_are_rejected_not_voted_as_zero() {
    // Issue 24 item 2 (seed 002 A.3: extractions without source provenance are rejected). The
    // first three extractors of the seeded order write nothing, write an unusable plan naming
    // only the client's data, and write one with no report; before, each was evaluated
    // (invalid, 0) and three agreeing 0s scored the run 0 after three routes. Now they are not
    // votes: the two faithful extractors agree on 1.0, short of the majority of 3, so the run
    // is unavailable after all five.
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&[]))]);
    let models = ["x1", "x2", "x3", "x4", "x5"];
    let order: Vec<String> = call_order(SEED, &id, "submission:1", 5).iter().map(|s| models[*s as usize].to_string()).collect();
    let lazy = order.clone();
    let server = MockServer::start(move |request| {
        let model = request.model().to_string();
        if model == lazy[0] {
            scripted(request, "true")
        } else if model == lazy[1] {
            scripted(
                request,
                "echo '{\"rows\": 1}' > plan.json && echo '{\"status\": \"success\", \"files_found\": [\"data/demand.csv\", \"/delivered/nowhere.csv\"]}' > _result.json",
            )
        } else if model == lazy[2] {
            scripted(request, "echo '{\"rows\": 1}' > plan.json")
        } else {
            extractor(request, "")
        }
    });
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &models, "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let e = store.extractions().unwrap()[0].extraction.clone();
    assert_eq!((e.status, e.score, e.routes, e.agreeing), (ExtractionStatus::Unavailable, None, 5, 0));
    let by_model: std::collections::BTreeMap<String, (Value, Value)> = store
        .ballots_of(&id)
        .unwrap()
        .into_iter()
        .map(|b| {
            let vote = b.ballot.vote.unwrap();
            (b.ballot.model, (vote["finding"].clone(), vote["score"].clone()))
        })
        .collect();
    assert_eq!(by_model[&order[0]], (json!("no_output"), Value::Null));
    assert_eq!(by_model[&order[1]], (json!("no_provenance"), Value::Null));
    assert_eq!(by_model[&order[2]], (json!("no_provenance"), Value::Null));
    assert_eq!(by_model[&order[3]], (json!("output"), json!(1.0)));
    assert_eq!(by_model[&order[4]], (json!("output"), json!(1.0)));
}

#[test]
fn a_majority_finding_no_answer_of_the_agents_is_no_artifact_and_scores_zero() {
    // The agent wrote only its notes: every extractor reports `failed` with nothing written.
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with(&dir.path().join("run"), &[("NOTES.md", "I ran out of time before writing the plan.\n".to_string())]);
    let server = MockServer::start(|request| {
        scripted(request, "echo '{\"status\": \"failed\", \"notes\": \"no plan in the workspace\", \"files_found\": []}' > _result.json")
    });
    let models = ["x1", "x2", "x3", "x4", "x5"];
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &models, "")).unwrap().panel(PanelUse::Extractor);
    let summary = extract_run(&store, &panel, &options()).unwrap();
    assert_eq!((summary.scored, summary.routes), (1, 3));
    let e = store.extractions().unwrap()[0].extraction.clone();
    assert_eq!(
        (e.status, e.score, e.success, e.valid, e.signature, e.routes, e.agreeing),
        (ExtractionStatus::Scored, Some(0.0), Some(false), Some(false), Some(Signature::Schema), 3, 3)
    );
    for b in store.ballots_of(&id).unwrap() {
        assert_eq!(b.ballot.vote.unwrap()["finding"], json!("no_deliverable"));
    }
}

#[test]
fn a_delivery_with_no_file_of_the_agents_is_not_extracted_and_has_no_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with(&dir.path().join("run"), &[]);
    let server = MockServer::start(|request| extractor(request, ""));
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &["x1", "x2", "x3"], "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    assert!(server.requests().is_empty(), "no extractor is asked");
    assert!(store.ballots_of(&id).unwrap().is_empty());
    let e = store.extractions().unwrap()[0].extraction.clone();
    assert_eq!(
        (e.status, e.score, e.valid, e.signature, e.routes, e.agreeing),
        (ExtractionStatus::Scored, Some(0.0), Some(false), Some(Signature::Schema), 0, 0)
    );
}

#[test]
fn check_output_tells_failures_of_form_and_nothing_about_the_score() {
    // Seed 002 A.9.4's verification block: the extractor writes a plan with the agent's column
    // names, hears the schema problem, fixes the field names and hears only that it was read.
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let out = Arc::clone(&heard);
    let wrong = "python3 -c \"import csv, json\nrows = [dict(r) for r in csv.DictReader(open('/delivered/results/plan.csv'))]\nfor r in rows: r['day2'] = r.pop('day')\njson.dump({'shipments': rows}, open('plan.json', 'w'))\"";
    let server = MockServer::start(move |request| {
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        if step == 2 || step == 4 {
            let last = request.messages().last().unwrap()["content"].as_str().unwrap_or("").to_string();
            out.lock().unwrap().push(last);
        }
        match step {
            0 => bash(0, wrong),
            1 => Reply::Calls(vec![("c1".into(), "check_output".into(), json!({}))]),
            2 => bash(2, &convert("")),
            3 => Reply::Calls(vec![("c3".into(), "check_output".into(), json!({}))]),
            _ => submit(step),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    // The agent's plan ships stock out of a store: invalid, so a score would be 0.
    let (store, _) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&["2025-03-14,SKU-OAT,ST-HAR-1,ST-HAR-2,1"]))]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &["x1"], "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(
        heard[0].starts_with("The scoring program could not use your output (schema). field-missing: shipment 1 lacks date"),
        "{}",
        heard[0]
    );
    assert!(heard[0].ends_with("never change the agent's values."), "{}", heard[0]);
    assert_eq!(
        heard[1],
        "The scoring program read your output. Stop checking now: write _result.json and submit. Whatever it makes of the answer is the agent's result."
    );
    let e = store.extractions().unwrap()[0].extraction.clone();
    assert_eq!((e.score, e.valid, e.signature), (Some(0.0), Some(false), Some(Signature::Constraint)));
    // Without the check the tool is not offered and the block is not in the opening.
    let server = MockServer::start(|request| extractor(request, ""));
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&[]))]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &["x1"], "[extraction]\ncheck_output = false\n"))
        .unwrap()
        .panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let request = &server.requests()[0];
    let tools: Vec<&str> = request.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["bash", "submit"]);
    assert!(!request.text().contains("check_output"), "{}", request.text());
    assert_eq!(store.extractions().unwrap()[0].extraction.score, Some(1.0));
    // The report says, for the run, that its extractors could not check (a deviation).
    let report = report_of(dir.path());
    assert_eq!(report.extraction_check_output, Some(false));
    let markdown = specgap_report::render::render_markdown(&report, "run");
    assert!(
        markdown.contains("Its extractors could not run the case evaluator on their output: a deviation from seed 002 A.9.4"),
        "{markdown}"
    );
}

/// The report of the run in `dir/run`, grouped as by default.
fn report_of(dir: &Path) -> specgap_report::Report {
    let run = specgap_report::RunData::load(&dir.join("run")).unwrap();
    specgap_report::build_report(&[run], &Default::default()).unwrap()
}

#[test]
fn a_run_never_extracted_says_so_in_the_report_and_table_17_counts_the_failures() {
    // Issue 24 item 2: before, a run of a schema case with no extraction panel at all was
    // scored from its direct artifact without a word (the warning came only with a panel).
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with(&dir.path().join("run"), &[("results/plan.csv", gold_csv(&[]))]);
    let report = report_of(dir.path());
    let source = report.groups[0].scoring_source.clone().unwrap();
    assert_eq!((source.runs, source.extracted, source.never_extracted, source.without_schema), (1, 0, 1, 0));
    assert_eq!(source.failures, None);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w
                .starts_with("1 run(s) of cases with a submission schema were never extracted (no extraction panel scored these runs)")),
        "{:?}",
        report.warnings
    );
    let markdown = specgap_report::render::render_markdown(&report, "run");
    assert!(markdown.contains("1 scored run(s) of cases with a submission schema were never extracted"), "{markdown}");
    // Extracted by a panel whose first extractor of the seeded order writes nothing.
    let models = ["x1", "x2", "x3", "x4", "x5"];
    let first = models[call_order(SEED, &id, "submission:1", 5)[0] as usize].to_string();
    let server =
        MockServer::start(move |request| if request.model() == first { scripted(request, "true") } else { extractor(request, "") });
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &models, "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let report = report_of(dir.path());
    let source = report.groups[0].scoring_source.clone().unwrap();
    assert_eq!((source.extracted, source.never_extracted, source.no_artifact), (1, 0, 0));
    let failures = source.failures.unwrap();
    assert_eq!((failures.slots, failures.failures, failures.no_artifact), (4, 1, 0));
    assert_eq!(failures.rate, Some(0.25));
    assert!(!report.warnings.iter().any(|w| w.contains("never extracted")), "{:?}", report.warnings);
    let markdown = specgap_report::render::render_markdown(&report, "run");
    assert!(markdown.contains("| 1 | 1 | 0 | 0 | 0 | 0 | 1/4 | 25.0 | 0 |"), "{markdown}");
}

#[test]
fn a_run_with_no_artifact_is_counted_as_such_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_with(&dir.path().join("run"), &[]);
    let server = MockServer::start(|request| extractor(request, ""));
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &["x1", "x2", "x3"], "")).unwrap().panel(PanelUse::Extractor);
    extract_run(&store, &panel, &options()).unwrap();
    let report = report_of(dir.path());
    let source = report.groups[0].scoring_source.clone().unwrap();
    assert_eq!((source.extracted, source.no_artifact), (0, 1));
    assert_eq!(source.failures.unwrap().no_artifact, 1);
    assert_eq!(report.groups[0].delivery.as_ref().unwrap().scored_only.as_ref().unwrap().quality, 0.0);
}
