//! The coverage-judge panel (seed 002 §4.1, A.3, A.9.5) against a scripted mock server.

use serde_json::json;
use specgap_panels::order::call_order;
use specgap_panels::{JudgeOptions, PanelFile, judge_run};
use specgap_report::judge::{COVERED, MISSED, UNAVAILABLE};
use specgap_store::{BallotOutcome, PanelUse, Role, Store};

use crate::fixture::{EpisodeSpec, panel_file, retail, run_store};
use crate::mock::{Captured, MockServer, Reply};

const FIVE: [&str; 5] = ["j1", "j2", "j3", "j4", "j5"];
const SEED: u64 = 11;

/// Units: 1 "Does a store ... directly?", 2 "Is any lane closed this week?", 3 "Do suppliers
/// deliver on Saturdays?".
const QUESTIONS: &[(u32, &str)] = &[
    (1, "Does a store have to wait until its own warehouse runs out before a supplier ships to it directly? Is any lane closed this week?"),
    (2, "Do suppliers deliver on Saturdays?"),
];

/// The target a judge request is about (`POINT (<id>)` in the built-in prompt).
fn target_of(request: &Captured) -> String {
    let user = request.user();
    let start = user.find("POINT (").expect("the point's heading") + "POINT (".len();
    user[start..].split(')').next().unwrap().to_string()
}

fn ballot(covered: bool, indices: &[u32]) -> Reply {
    Reply::json(json!({"covered": covered, "question_indices": indices}))
}

fn options() -> JudgeOptions {
    JudgeOptions { jobs: 1, stop: None }
}

/// Stored verdicts of `judge` on `episode`: (target, verdict, matched unit indices), sorted.
fn verdicts(store: &Store, episode: &str, judge: &str) -> Vec<(String, String, Vec<u32>)> {
    let mut out: Vec<_> = store
        .judgements()
        .unwrap()
        .into_iter()
        .filter(|j| j.episode == episode && j.judgement.judge == judge)
        .map(|j| (j.judgement.target, j.judgement.verdict, j.judgement.matched_question_indices))
        .collect();
    out.sort();
    out
}

fn verdict_of(store: &Store, episode: &str, judge: &str, target: &str) -> (String, Vec<u32>) {
    let (_, verdict, matched) = verdicts(store, episode, judge).into_iter().find(|(t, _, _)| t == target).unwrap();
    (verdict, matched)
}

#[test]
fn a_three_to_two_split_covers_with_the_union_of_the_yes_voters_citations() {
    let server = MockServer::start(|request| match (request.model(), target_of(request).as_str()) {
        ("j1", "same-city-first") => ballot(true, &[1]),
        ("j2", "same-city-first") => ballot(true, &[1, 2]),
        ("j3", "same-city-first") => ballot(true, &[1]),
        // A no ballot's citations are not the panel's.
        ("j4", "same-city-first") => ballot(false, &[3]),
        ("j2", "pinecrest-millbrook-lane-closed") => ballot(true, &[2]),
        ("j3", "pinecrest-millbrook-lane-closed") => ballot(true, &[2]),
        _ => ballot(false, &[]),
    });
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = run_store(dir.path(), SEED, &[EpisodeSpec::asking(0, QUESTIONS)]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE, "")).unwrap().panel(PanelUse::Judge);
    let summary = judge_run(&store, &panel, &options()).unwrap();
    assert_eq!((summary.episodes, summary.targets, summary.covered, summary.unavailable, summary.dropped), (1, 8, 1, 0, 0));
    assert_eq!(verdict_of(&store, &ids[0], &panel.name, "same-city-first"), (COVERED.to_string(), vec![0, 1]));
    // Two of five is not enough.
    assert_eq!(verdict_of(&store, &ids[0], &panel.name, "pinecrest-millbrook-lane-closed"), (MISSED.to_string(), vec![]));
    // Every model was asked once per target, 5 × 8 requests, in the seeded order per target.
    let requests = server.requests();
    assert_eq!(requests.len(), 40);
    for (i, target) in retail().clarifications().iter().enumerate() {
        let asked: Vec<&str> = requests[i * 5..i * 5 + 5].iter().map(|r| r.model()).collect();
        assert!(requests[i * 5..i * 5 + 5].iter().all(|r| target_of(r) == target.id));
        let order: Vec<&str> = call_order(SEED, &ids[0], &target.id, 5).iter().map(|s| FIVE[*s as usize]).collect();
        assert_eq!(asked, order, "target {}", target.id);
    }
    // Every ballot is stored with its model, prompt version, request and response.
    let ballots = store.ballots_of(&ids[0]).unwrap();
    assert_eq!(ballots.len(), 40);
    let j2 = ballots.iter().find(|b| b.ballot.model == "j2" && b.ballot.subject == "same-city-first").unwrap();
    assert_eq!(j2.ballot.outcome, BallotOutcome::Ballot);
    assert_eq!(j2.ballot.vote, Some(json!({"covered": true, "question_indices": [1, 2]})));
    assert_eq!(j2.ballot.prompt_version, specgap_panels::prompts::JUDGE_PROMPT_VERSION);
    assert_eq!(j2.ballot.response, json!([json!({"covered": true, "question_indices": [1, 2]}).to_string()]));
    assert_eq!(j2.ballot.request.as_array().unwrap().len(), 1);
    assert_eq!(j2.ballot.request[0]["model"], "j2");
    // The panel's configuration and prompt hash are recorded with the verdicts.
    let panels = store.panels().unwrap();
    assert_eq!(panels.len(), 1);
    assert_eq!((panels[0].name.as_str(), panels[0].use_), (panel.name.as_str(), PanelUse::Judge));
    assert_eq!(panels[0].prompt_hash, panel.prompts.hash());
    assert_eq!(panels[0].config["models"].as_array().unwrap().len(), 5);
}

#[test]
fn a_judge_malformed_twice_is_dropped_and_the_vote_counts_the_rest() {
    let server = MockServer::start(|request| match (request.model(), target_of(request).as_str()) {
        ("j1", _) => Reply::text("I think it is covered."),
        // Malformed once, then a valid ballot after the repair retry: it counts.
        ("j5", "same-city-first") if !request.user().starts_with("Your previous reply could not be read") => Reply::text("covered: yes"),
        (_, "same-city-first") => ballot(true, &[1]),
        _ => ballot(false, &[]),
    });
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = run_store(dir.path(), SEED, &[EpisodeSpec::asking(0, QUESTIONS)]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE, "")).unwrap().panel(PanelUse::Judge);
    let summary = judge_run(&store, &panel, &options()).unwrap();
    assert_eq!(summary.dropped, 8, "j1 is dropped on every target");
    assert_eq!(verdict_of(&store, &ids[0], &panel.name, "same-city-first"), (COVERED.to_string(), vec![0]));
    // j1 was asked twice per target: the request, then the same request with the repair text
    // before the user message.
    let j1: Vec<Captured> = server.requests_of("j1").into_iter().filter(|r| target_of(r) == "same-city-first").collect();
    assert_eq!(j1.len(), 2);
    let (first, second) = (j1[0].user(), j1[1].user());
    assert!(second.starts_with("Your previous reply could not be read"), "{second}");
    assert!(second.ends_with(first), "the retry repeats the original message");
    assert_eq!(j1[0].messages()[0], j1[1].messages()[0], "same system message");
    let stored = store.ballots_of(&ids[0]).unwrap();
    let dropped = stored.iter().find(|b| b.ballot.model == "j1" && b.ballot.subject == "same-city-first").unwrap();
    assert_eq!(dropped.ballot.outcome, BallotOutcome::Malformed);
    assert_eq!(dropped.ballot.vote, None);
    assert_eq!(dropped.ballot.response, json!(["I think it is covered.", "I think it is covered."]));
    assert_eq!(dropped.ballot.error.as_deref(), Some("the reply is not a json object"));
    let repaired = stored.iter().find(|b| b.ballot.model == "j5" && b.ballot.subject == "same-city-first").unwrap();
    assert_eq!(repaired.ballot.outcome, BallotOutcome::Ballot);
    assert_eq!(repaired.ballot.request.as_array().unwrap().len(), 2);
}

#[test]
fn all_judges_failing_leaves_the_target_unavailable_not_missed_and_a_later_step_asks_again() {
    let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let up = std::sync::Arc::clone(&healthy);
    let server = MockServer::start(move |request| {
        if !up.load(std::sync::atomic::Ordering::SeqCst) && target_of(request) == "same-city-first" {
            Reply::Status(503, "overloaded".into())
        } else {
            ballot(false, &[])
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = run_store(dir.path(), SEED, &[EpisodeSpec::asking(0, QUESTIONS)]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE, "")).unwrap().panel(PanelUse::Judge);
    let summary = judge_run(&store, &panel, &options()).unwrap();
    assert_eq!((summary.targets, summary.unavailable, summary.dropped), (8, 1, 5));
    assert_eq!(verdict_of(&store, &ids[0], &panel.name, "same-city-first"), (UNAVAILABLE.to_string(), vec![]));
    let failed = store.ballots_of(&ids[0]).unwrap();
    let failed: Vec<_> = failed.iter().filter(|b| b.ballot.subject == "same-city-first").collect();
    assert!(failed.iter().all(|b| b.ballot.outcome == BallotOutcome::Failed));
    assert_eq!(failed[0].ballot.error.as_deref(), Some("model service failed after 1 attempts; last fault: http 503: overloaded"));
    // The report's measures of that run are unavailable, not 0.
    let run = specgap_report::RunData::load(dir.path()).unwrap();
    let report_options = specgap_report::ReportOptions { judge: panel.name.clone(), ..Default::default() };
    let report = specgap_report::build_report(&[run], &report_options).unwrap();
    let clarification = report.groups[0].clarification.as_ref().unwrap();
    assert!(clarification.recall.is_none(), "{clarification:?}");
    // The service is back: a second step asks only about the undecided target.
    healthy.store(true, std::sync::atomic::Ordering::SeqCst);
    let before = server.requests().len();
    let again = judge_run(&store, &panel, &options()).unwrap();
    assert_eq!((again.episodes, again.targets, again.unavailable), (1, 1, 0));
    assert_eq!(server.requests().len() - before, 5);
    assert_eq!(verdict_of(&store, &ids[0], &panel.name, "same-city-first"), (MISSED.to_string(), vec![]));
}

#[test]
fn a_second_step_asks_no_model_and_judge_usage_equals_the_mocks_counts() {
    let server = MockServer::start(|request| match request.model() {
        "j1" => Reply::Text(json!({"covered": false, "question_indices": []}).to_string(), 250, 12),
        _ => Reply::Text(json!({"covered": false}).to_string(), 200, 8),
    });
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = run_store(
        dir.path(),
        SEED,
        &[EpisodeSpec::asking(0, QUESTIONS), EpisodeSpec::asking(1, &[(1, "Which lanes are closed?")]), EpisodeSpec::asking(2, &[])],
    );
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE, "")).unwrap().panel(PanelUse::Judge);
    let summary = judge_run(&store, &panel, &JudgeOptions { jobs: 2, stop: None }).unwrap();
    assert_eq!((summary.episodes, summary.targets), (3, 24));
    // The episode without questions is judged missed without a request.
    assert_eq!(verdicts(&store, &ids[2], &panel.name).iter().filter(|v| v.1 == MISSED).count(), 8);
    assert_eq!(server.requests().len(), 2 * 8 * 5);
    let again = judge_run(&store, &panel, &options()).unwrap();
    assert_eq!((again.episodes, again.targets, again.already), (0, 0, 3));
    assert_eq!(server.requests().len(), 80, "a second step asks no model");
    // Usage under `judge` equals the mock's counts, per episode: 8 targets × (1 j1 + 4 others).
    let usage = store.usage().unwrap();
    for id in &ids[..2] {
        let row = usage.iter().find(|u| &u.episode == id && u.role == Role::Judge).unwrap();
        assert_eq!(row.attempt, 1);
        assert_eq!(row.usage.requests, 40);
        assert_eq!(row.usage.input_tokens, 8 * (250 + 4 * 200));
        assert_eq!(row.usage.output_tokens, 8 * (12 + 4 * 8));
        assert_eq!(row.usage.retries, 0);
        let cost = (8.0 * (250.0 + 800.0) * 1.0 + 8.0 * (12.0 + 32.0) * 10.0) / 1e6;
        assert!((row.usage.cost_usd - cost).abs() < 1e-12, "{} vs {cost}", row.usage.cost_usd);
    }
    assert!(!usage.iter().any(|u| u.episode == ids[2] && u.role == Role::Judge));
}

#[test]
fn each_judge_request_holds_the_target_its_triggers_and_the_numbered_questions_and_nothing_else_of_it() {
    let server = MockServer::start(|_| ballot(false, &[]));
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = run_store(dir.path(), SEED, &[EpisodeSpec::asking(0, QUESTIONS)]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE, "")).unwrap().panel(PanelUse::Judge);
    judge_run(&store, &panel, &options()).unwrap();
    let package = retail();
    let requests = server.requests();
    assert_eq!(requests.len(), 40);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["temperature"], json!(0), "temperature 0 by default");
        let target = package.clarifications().iter().find(|t| t.id == target_of(request)).unwrap();
        let text = request.text();
        assert!(text.contains(&format!("POINT ({})\n{}\n", target.id, target.description)), "{text}");
        for trigger in &target.triggers {
            assert!(text.contains(&format!("  - {trigger}\n")), "trigger {trigger} missing");
        }
        assert!(text.contains(
            "1. Does a store have to wait until its own warehouse runs out before a supplier ships to it directly?\n2. Is any lane closed this week?\n3. Do suppliers deliver on Saturdays?\n"
        ));
        // Never the registered answer, the issue type, the domain or the rule source.
        assert!(!text.contains(&target.answer), "answer of {} leaked", target.id);
        for hidden in ["issue_type", "domain", "rule_source", "evaluator rule"] {
            assert!(!text.contains(hidden), "{hidden} in {text}");
        }
        let issue = serde_json::to_value(target.issue_type).unwrap();
        let domain = serde_json::to_value(target.domain).unwrap();
        for value in [issue, domain] {
            let value = value.as_str().unwrap();
            assert!(!target.description.contains(value));
            assert!(!text.contains(value), "{value} leaked for {}", target.id);
        }
        // The key variable is not set, so no Authorization header; nothing but the two messages.
        assert_eq!(request.authorization, None);
        assert_eq!(request.messages().len(), 2);
        assert!(request.body.get("tools").is_none());
    }
}

#[test]
fn a_prompt_file_replaces_the_built_in_message_and_names_a_new_panel() {
    let server = MockServer::start(|request| {
        assert!(request.user().starts_with("Point "), "{}", request.user());
        ballot(false, &[])
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("user.txt"), "Point {{target_id}}: {{target}}\n{{questions}}\n").unwrap();
    let (store, ids) = run_store(dir.path().join("run").as_path(), SEED, &[EpisodeSpec::asking(0, QUESTIONS)]);
    let file = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE[..1], "[prompts]\njudge_user = \"user.txt\"\n")).unwrap();
    let panel = file.panel(PanelUse::Judge);
    assert!(panel.prompts.version.starts_with("file:"));
    judge_run(&store, &panel, &options()).unwrap();
    let ballots = store.ballots_of(&ids[0]).unwrap();
    assert!(ballots.iter().all(|b| b.ballot.prompt_version == panel.prompts.version));
    let first = &server.requests()[0];
    let target = first.user().split(':').next().unwrap().trim_start_matches("Point ").to_string();
    assert!(first.user().contains("\n1. Does a store"), "{}", first.user());
    assert!(retail().clarifications().iter().any(|t| t.id == target));
    // The built-in prompt names another panel.
    let builtin = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE[..1], "")).unwrap().panel(PanelUse::Judge);
    assert_ne!(builtin.name, panel.name);
}

#[test]
fn a_report_judged_by_the_panel_shows_agreement_between_judges_and_with_the_offline_rule() {
    // same-city-first: j1–j3 yes; pinecrest lane: j2, j3 yes; everything else no.
    let server = MockServer::start(|request| match (request.model(), target_of(request).as_str()) {
        ("j1" | "j2" | "j3", "same-city-first") => ballot(true, &[1]),
        ("j2" | "j3", "pinecrest-millbrook-lane-closed") => ballot(true, &[2]),
        ("j4", _) => Reply::Status(500, "down".into()),
        _ => ballot(false, &[]),
    });
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = run_store(dir.path(), SEED, &[EpisodeSpec::asking(0, QUESTIONS)]);
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, &FIVE, "")).unwrap().panel(PanelUse::Judge);
    judge_run(&store, &panel, &options()).unwrap();
    drop(store);
    let run = specgap_report::RunData::load(dir.path()).unwrap();
    // The offline rule covers same-city-first, the lane and the supplier days on these
    // questions (pinned in specgap-task's matching tests).
    let offline: Vec<&str> = run
        .rows
        .judgements
        .iter()
        .filter(|j| j.judgement.judge == specgap_report::judge::OFFLINE_JUDGE && j.judgement.verdict == COVERED)
        .map(|j| j.judgement.target.as_str())
        .collect();
    assert_eq!(offline, ["same-city-first", "pinecrest-millbrook-lane-closed", "supplier-lead-business-days"]);
    let report_options = specgap_report::ReportOptions { judge: "panel".into(), ..Default::default() };
    let report = specgap_report::build_report(&[run], &report_options).unwrap();
    assert_eq!(report.judge, panel.name);
    let a = report.judge_agreement.as_ref().unwrap();
    assert_eq!((a.items, a.covered, a.missed, a.unavailable), (8, 1, 7, 0));
    let seats: Vec<(&str, usize, usize, usize)> = a.seats.iter().map(|s| (s.model.as_str(), s.ballots, s.covered, s.failed)).collect();
    assert_eq!(seats, [("j1", 8, 1, 0), ("j2", 8, 2, 0), ("j3", 8, 2, 0), ("j4", 0, 0, 8), ("j5", 8, 0, 0)]);
    let pair = |x: &str, y: &str| a.pairs.iter().find(|p| p.a == x && p.b == y).unwrap();
    // sklearn.metrics.cohen_kappa_score([1,0,0,0,0,0,0,0], [1,1,0,0,0,0,0,0]) = 0.6
    let p = pair("j1", "j2");
    assert_eq!((p.items, p.agreement), (8, Some(0.875)));
    assert!((p.kappa.unwrap() - 0.6).abs() < 1e-12);
    // cohen_kappa_score([1,0,0,0,0,0,0,0], [0]*8) = 0.0
    assert_eq!(pair("j1", "j5").kappa, Some(0.0));
    assert_eq!(pair("j2", "j3").kappa, Some(1.0));
    // A judge with no ballot shares no item.
    assert_eq!((pair("j1", "j4").items, pair("j1", "j4").kappa), (0, None));
    // The panel against the offline rule:
    // cohen_kappa_score([1,0,0,0,0,0,0,0], [1,0,1,0,1,0,0,0]) = 0.3846153846153846
    assert_eq!((a.offline.a.as_str(), a.offline.b.as_str()), (panel.name.as_str(), "offline:3"));
    assert_eq!((a.offline.items, a.offline.agreement), (8, Some(0.75)));
    assert!((a.offline.kappa.unwrap() - 0.384_615_384_615_384_6).abs() < 1e-12);
    let markdown = specgap_report::render::render_markdown(&report, "run");
    assert!(markdown.contains(&format!("## Coverage judges of {} (seed 002 A.8)", panel.name)), "{markdown}");
    assert!(markdown.contains(&format!("| {} | offline:3 | 8 | 75.0 | 0.3846 |", panel.name)), "{markdown}");
    // The clarification table names the panel as its judge.
    assert!(markdown.contains(&format!("Clarification by judge `{}`", panel.name)));
}
