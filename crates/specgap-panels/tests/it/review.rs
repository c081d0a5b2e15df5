//! `review-user` (issue 28): the rule reviewer on relay turns of the bundled retail case (a
//! relay that volunteers a target, one that contradicts itself, a wrong refusal, an invented
//! answer), and the panel reviewer against the mock server, asserting on the prompt each seat
//! received.

use serde_json::json;
use specgap_panels::PanelFile;
use specgap_panels::review::{Profile, RELAY_UNKNOWN, REVIEW_SYSTEM, review_message, review_with_panel, review_with_rules, rule_findings};
use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::simulator::{Finding, Severity, Tag, UserTurn};
use specgap_store::{EpisodeMeta, EpisodeSummary, Question, Status, Store};

use crate::fixture::{config, key, panel_file, retail, retail_path};
use crate::mock::{MockServer, Reply};

const LANE_QUESTION: &str = "Are any lanes closed or unavailable this week?";

fn answer(prompt: &str, text: &str, turn: u32) -> UserTurn {
    UserTurn { turn, kind: "answer".into(), prompt: prompt.into(), text: text.into() }
}

fn target_answer(profile: &Profile, id: &str) -> String {
    profile.entries.iter().find(|t| t.id == id).unwrap().answer.trim().to_string()
}

#[test]
fn rules_find_volunteered_refused_and_invented_answers() {
    let profile = Profile::of(&retail());
    assert_eq!(profile.role, "customer");
    let lane = target_answer(&profile, "pinecrest-millbrook-lane-closed");
    let ships = target_answer(&profile, "stores-do-not-ship");
    let turns = [
        // Asked about lanes, told about lanes and (unasked) about stores shipping.
        answer(LANE_QUESTION, &format!("{lane}\n\n{ships}"), 1),
        // Nothing links: "I don't know" is right.
        answer("What is your favourite colour?", RELAY_UNKNOWN, 2),
        // The lane question again, refused.
        answer(LANE_QUESTION, RELAY_UNKNOWN, 3),
        // An answer from nowhere.
        answer(LANE_QUESTION, "Every lane is open.", 4),
    ];
    let findings = rule_findings(&turns, &profile);
    assert_eq!(
        findings,
        [
            Finding { turn: 1, tag: Tag::Volunteered, severity: Severity::Helped, evidence: "not asked about: stores-do-not-ship".into() },
            Finding {
                turn: 3,
                tag: Tag::WrongRefusal,
                severity: Severity::Hindered,
                evidence: "the question links to pinecrest-millbrook-lane-closed".into()
            },
            Finding { turn: 4, tag: Tag::OffProfile, severity: Severity::Hindered, evidence: "Every lane is open.".into() },
        ]
    );
}

#[test]
fn rules_find_a_relay_that_contradicts_itself() {
    // The package edited: a second lane target with the same example questions and the
    // opposite answer, so the relay gives both to one question.
    let mut profile = Profile::of(&retail());
    let mut open = profile.entries.iter().find(|t| t.id == "pinecrest-millbrook-lane-closed").unwrap().clone();
    open.id = "lanes-all-open".into();
    open.answer = "Every lane in lanes.csv is open all week.".into();
    profile.entries.push(open);
    let lane = target_answer(&profile, "pinecrest-millbrook-lane-closed");
    let turns = [answer(LANE_QUESTION, &format!("{lane}\n\nEvery lane in lanes.csv is open all week."), 1)];
    assert_eq!(
        rule_findings(&turns, &profile),
        [Finding {
            turn: 1,
            tag: Tag::Contradiction,
            severity: Severity::Hindered,
            evidence: "pinecrest-millbrook-lane-closed and lanes-all-open answer the same question differently".into()
        }]
    );
}

/// A run of the retail case with one episode whose questions got `answers`.
fn run_with_answers(dir: &std::path::Path, answers: &[(&str, String)]) -> String {
    let package = retail();
    let store = Store::create(dir, &config(5, &package, &retail_path())).unwrap();
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Optimization, scoring_kind: ScoringKind::Delivery };
    let mut writer = store.begin_episode(&key(&package, 5, 0), &meta).unwrap();
    for (i, (question, reply)) in answers.iter().enumerate() {
        writer
            .record_question(&Question { turn: i as u32 + 1, text: question.to_string(), answer: reply.clone(), matched_targets: vec![] })
            .unwrap();
    }
    let id = writer.id().to_string();
    writer
        .finish(EpisodeSummary {
            status: Status::Finished,
            end_reason: Some(EndReason::Submitted),
            turns: 3,
            tool_calls: 3,
            wall_ms: 10,
            error: None,
        })
        .unwrap();
    id
}

#[test]
fn the_rule_review_of_a_stored_run_cites_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = Profile::of(&retail());
    let lane = target_answer(&profile, "pinecrest-millbrook-lane-closed");
    let ships = target_answer(&profile, "stores-do-not-ship");
    let run = tmp.path().join("run");
    let id = run_with_answers(&run, &[(LANE_QUESTION, lane.clone()), (LANE_QUESTION, format!("{lane} {ships}"))]);
    let review = review_with_rules(&run).unwrap();
    assert_eq!(review.reviewer, "rules:1");
    assert_eq!(review.unchecked, [Tag::BrokeCharacter, Tag::StoppedEarly]);
    let [episode] = review.episodes.as_slice() else { panic!("one episode") };
    assert_eq!(episode.episode, id);
    assert_eq!(episode.turns.len(), 2);
    assert_eq!(episode.findings.len(), 1);
    assert_eq!((episode.findings[0].turn, episode.findings[0].tag), (2, Tag::Volunteered));
}

#[test]
fn the_panel_review_sends_each_seat_the_turn_in_context_and_votes() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = Profile::of(&retail());
    let lane = target_answer(&profile, "pinecrest-millbrook-lane-closed");
    let run = tmp.path().join("run");
    run_with_answers(&run, &[(LANE_QUESTION, lane.clone()), ("Anything else?", "You are an AI benchmark agent.".into())]);
    // judge-a and judge-b flag turn 2 as breaking character (hindered, minor); judge-c finds
    // nothing anywhere.
    let server = MockServer::start(|request| {
        let user = request.user();
        let flagged = user.contains("Turn under review:\nturn 2") && request.model() != "judge-c";
        let severity = if request.model() == "judge-a" { "hindered" } else { "minor" };
        if flagged {
            Reply::json(json!({"findings": [{"tag": "broke-character", "severity": severity, "evidence": "speaks about the benchmark"}]}))
        } else {
            Reply::json(json!({"findings": []}))
        }
    });
    let path = panel_file(tmp.path(), &server.url, &["judge-a", "judge-b", "judge-c"], "");
    let review = review_with_panel(&run, &PanelFile::load(&path).unwrap(), 7).unwrap();
    assert!(review.reviewer.starts_with("panel:"));
    let [episode] = review.episodes.as_slice() else { panic!("one episode") };
    // 2 of 3 name the tag: kept; severity tie (hindered 1, minor 1) goes to hindered.
    assert_eq!(
        episode.findings,
        [Finding { turn: 2, tag: Tag::BrokeCharacter, severity: Severity::Hindered, evidence: "speaks about the benchmark".into() }]
    );
    // Every seat got every turn: the system prompt, and the profile, the conversation before
    // and the turn under review.
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    for (i, turn) in episode.turns.iter().enumerate() {
        let expected = review_message(&profile, &episode.turns[..i], turn);
        for model in ["judge-a", "judge-b", "judge-c"] {
            let got: Vec<_> = server.requests_of(model).into_iter().filter(|r| r.user() == expected).collect();
            assert_eq!(got.len(), 1, "{model} turn {}", turn.turn);
            assert_eq!(got[0].messages()[0]["content"], REVIEW_SYSTEM);
        }
    }
    let second = review_message(&profile, &episode.turns[..1], &episode.turns[1]);
    assert!(second.contains(&format!("- [pinecrest-millbrook-lane-closed] {lane}")), "{second}");
    assert!(
        second.contains(&format!("Conversation before this turn:\nturn 1 — agent asked: {LANE_QUESTION}\nuser answered: {lane}\n")),
        "{second}"
    );
    assert!(
        second.ends_with("Turn under review:\nturn 2 — agent asked: Anything else?\nuser answered: You are an AI benchmark agent.\n"),
        "{second}"
    );
    assert_eq!(review.ballots.len(), 6);
}
