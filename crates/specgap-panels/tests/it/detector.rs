//! The question-detector panel (seed 002 A.9.3) against scripted detector models: what it
//! asks, how it votes, and what it returns to the engine.

use serde_json::json;
use specgap_engine::detector::{QuestionDetector, ReplyText};
use specgap_engine::session::{SessionLink, UsageSink};
use specgap_panels::{PanelDetector, PanelFile};
use specgap_store::{BallotOutcome, PanelUse, Role};

use crate::fixture::panel_file;
use crate::mock::{Captured, MockServer, Reply};

const FIVE: [&str; 5] = ["d1", "d2", "d3", "d4", "d5"];

fn reply(text: &str) -> ReplyText<'_> {
    ReplyText { text, turn: 4, with_tool_calls: false, artifact_missing: Some(false) }
}

/// The agent reply inside a detector request.
fn agent_reply(request: &Captured) -> String {
    request.user().strip_prefix("The agent's reply:\n\n").unwrap_or_else(|| panic!("{}", request.user())).to_string()
}

fn asking(questions: &[&str]) -> Reply {
    Reply::json(json!({"asking": true, "questions": questions}))
}

fn not_asking() -> Reply {
    Reply::json(json!({"asking": false, "questions": []}))
}

fn panel_detector(server: &MockServer, models: &[&str]) -> (PanelDetector, SessionLink) {
    let dir = tempfile::tempdir().unwrap();
    let panel = PanelFile::load(&panel_file(dir.path(), &server.url, models, "")).unwrap().panel(PanelUse::Detector);
    let mut detector = PanelDetector::new(panel, 3, "e1").unwrap();
    let link = SessionLink { deadline: Default::default(), usage: UsageSink::detached(Role::Detector) };
    detector.attach(&link);
    (detector, link)
}

#[test]
fn a_rhetorical_question_and_an_offer_are_not_questions() {
    let rhetorical = "How do we balance cost against waiting? We weight waiting more, as the brief says. The plan is in plan.json.";
    let offer = "The plan is in plan.json. Shall I also plot the routes?";
    let server = MockServer::start(move |request| {
        let text = agent_reply(request);
        if text == rhetorical || text == offer { not_asking() } else { asking(&["?"]) }
    });
    let (mut detector, link) = panel_detector(&server, &FIVE);
    for text in [rhetorical, offer] {
        let detection = detector.detect(&reply(text)).unwrap();
        assert!(detection.questions.is_empty(), "{text}");
        assert_eq!(detection.ballots.len(), 5);
        assert!(detection.ballots.iter().all(|b| b.outcome == BallotOutcome::Ballot && b.subject == "turn:4"));
        assert!(detection.ballots.iter().all(|b| b.vote == Some(json!({"asking": false, "questions": []}))));
    }
    assert_eq!(server.requests().len(), 10);
    assert_eq!(link.usage.total().requests, 10);
    // Each request holds the system rules and the reply, nothing else.
    for request in server.requests() {
        assert_eq!(request.messages().len(), 2);
        assert!(request.messages()[0]["content"].as_str().unwrap().contains("Offering to do more is not asking"));
        assert_eq!(request.body["temperature"], json!(0));
    }
}

#[test]
fn a_compound_question_becomes_two() {
    let text = "I read the data. What speed do the trucks drive, and is loading time included?";
    // Three models split it; two keep it whole: the most common count (two) wins.
    let server = MockServer::start(|request| match request.model() {
        "d1" | "d3" | "d5" => asking(&["What speed do the trucks drive?", "Is loading time included in the lead time?"]),
        _ => asking(&["What speed do the trucks drive, and is loading time included?"]),
    });
    let (mut detector, _) = panel_detector(&server, &FIVE);
    let detection = detector.detect(&reply(text)).unwrap();
    assert_eq!(detection.questions, ["What speed do the trucks drive?", "Is loading time included in the lead time?"]);
}

#[test]
fn a_reply_without_a_question_mark_costs_no_request() {
    let server = MockServer::start(|_| asking(&["x"]));
    let (mut detector, _) = panel_detector(&server, &FIVE);
    let detection = detector.detect(&reply("Please tell me the unit of the stock counts.")).unwrap();
    assert!(detection.questions.is_empty() && detection.ballots.is_empty());
    assert!(server.requests().is_empty());
}

#[test]
fn the_vote_is_a_strict_majority_of_the_ballots_returned() {
    // Two ask, one does not, one answers garbage twice, one fails: 2 of 3 returned ask.
    let server = MockServer::start(|request| match request.model() {
        "d1" | "d2" => asking(&["Which unit is the stock in?"]),
        "d3" => not_asking(),
        "d4" => Reply::text("maybe"),
        _ => Reply::Status(500, "down".into()),
    });
    let (mut detector, _) = panel_detector(&server, &FIVE);
    let detection = detector.detect(&reply("Which unit is the stock in?")).unwrap();
    assert_eq!(detection.questions, ["Which unit is the stock in?"]);
    let outcomes: Vec<(String, BallotOutcome)> = {
        let mut o: Vec<_> = detection.ballots.iter().map(|b| (b.model.clone(), b.outcome)).collect();
        o.sort();
        o
    };
    assert_eq!(
        outcomes,
        [
            ("d1".to_string(), BallotOutcome::Ballot),
            ("d2".to_string(), BallotOutcome::Ballot),
            ("d3".to_string(), BallotOutcome::Ballot),
            ("d4".to_string(), BallotOutcome::Malformed),
            ("d5".to_string(), BallotOutcome::Failed),
        ]
    );
    // d4 got its repair retry with the detector's own repair text.
    let d4 = server.requests_of("d4");
    assert_eq!(d4.len(), 2);
    assert!(d4[1].user().starts_with(
        "Your previous reply could not be read. Reply with exactly one JSON object with the keys \"asking\" and \"questions\""
    ));
    // Half of the returned ballots is not a majority.
    let server = MockServer::start(|request| match request.model() {
        "d1" => asking(&["Which unit?"]),
        _ => not_asking(),
    });
    let (mut detector, _) = panel_detector(&server, &FIVE[..2]);
    assert!(detector.detect(&reply("Which unit?")).unwrap().questions.is_empty());
}

#[test]
fn no_ballot_at_all_is_an_error_not_a_silence() {
    let server = MockServer::start(|_| Reply::Status(503, "overloaded".into()));
    let (mut detector, _) = panel_detector(&server, &FIVE[..3]);
    let error = detector.detect(&reply("Which unit?")).unwrap_err();
    assert_eq!(error.message, "none of the 3 detector models returned a ballot on turn 4");
    assert!(!error.abandoned);
    assert_eq!(error.ballots.len(), 3);
}

#[test]
fn an_overlong_reply_reaches_the_models_clipped() {
    let text = format!("{}Which unit?{}", "a".repeat(3000), "b".repeat(9000));
    let server = MockServer::start(|_| not_asking());
    let (mut detector, _) = panel_detector(&server, &FIVE[..1]);
    detector.detect(&reply(&text)).unwrap();
    let sent = agent_reply(&server.requests()[0]);
    assert_eq!(sent, format!("{}\n[... 2011 characters left out ...]\n{}", "a".repeat(2000), "b".repeat(8000)));
}
