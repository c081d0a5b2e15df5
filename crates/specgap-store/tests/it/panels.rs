//! Model-panel rows (schema version 4): panels, ballots, extraction verdicts — written, read
//! back, kept by merge, cleared with their episode, and added to an older store in place.

use serde_json::json;
use specgap_protocol::result::Signature;
use specgap_store::{Ballot, BallotOutcome, Extraction, ExtractionStatus, Judgement, PanelRecord, PanelUse, Store, merge};

use crate::{config, run_episode};

fn panel(name: &str, use_: PanelUse) -> PanelRecord {
    PanelRecord {
        name: name.into(),
        use_,
        config: json!({"models": [{"model": "m1", "base_url": "http://127.0.0.1:1/v1"}]}),
        prompt_version: "1".into(),
        prompt_hash: "ab".repeat(32),
    }
}

fn ballot(panel: &str, subject: &str, seat: u32, outcome: BallotOutcome) -> Ballot {
    let ok = outcome == BallotOutcome::Ballot;
    Ballot {
        panel: panel.into(),
        subject: subject.into(),
        seat,
        model: format!("m{seat}"),
        position: 4 - seat,
        prompt_version: "1".into(),
        outcome,
        vote: ok.then(|| json!({"covered": true, "question_indices": [1]})),
        request: json!([{"model": format!("m{seat}"), "messages": []}]),
        response: json!(["{\"covered\": true, \"question_indices\": [1]}"]),
        error: (!ok).then(|| "the reply is not json".to_string()),
    }
}

fn extraction(panel: &str) -> Extraction {
    Extraction {
        panel: panel.into(),
        k: 1,
        status: ExtractionStatus::Scored,
        score: Some(0.75),
        success: Some(false),
        valid: Some(true),
        objective: Some(0.7462),
        signature: Some(Signature::Quality),
        routes: 3,
        agreeing: 3,
    }
}

#[test]
fn panel_rows_round_trip_and_reach_run_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 10);
    store.record_panel(&panel("panel:aaaaaaaaaaaa", PanelUse::Judge)).unwrap();
    let ballots =
        vec![ballot("panel:aaaaaaaaaaaa", "t1", 0, BallotOutcome::Ballot), ballot("panel:aaaaaaaaaaaa", "t1", 1, BallotOutcome::Malformed)];
    let judgement = Judgement {
        judge: "panel:aaaaaaaaaaaa".into(),
        target: "t1".into(),
        verdict: "unavailable".into(),
        matched_question_indices: vec![],
    };
    store.record_panel_judgements(&id, &ballots, std::slice::from_ref(&judgement)).unwrap();
    store
        .record_extraction(
            &id,
            &[ballot("panel:bbbbbbbbbbbb", "submission:1", 2, BallotOutcome::Failed)],
            &extraction("panel:bbbbbbbbbbbb"),
        )
        .unwrap();

    assert_eq!(store.panels().unwrap(), vec![panel("panel:aaaaaaaaaaaa", PanelUse::Judge)]);
    let stored: Vec<Ballot> = store.ballots_of(&id).unwrap().into_iter().map(|b| b.ballot).collect();
    assert_eq!(stored, [ballots.clone(), vec![ballot("panel:bbbbbbbbbbbb", "submission:1", 2, BallotOutcome::Failed)]].concat());
    let rows = store.rows().unwrap();
    assert_eq!(rows.panels.len(), 1);
    assert_eq!(
        rows.votes.iter().map(|v| (v.subject.as_str(), v.seat, v.outcome, v.vote.clone())).collect::<Vec<_>>(),
        [
            ("t1", 0, BallotOutcome::Ballot, Some(json!({"covered": true, "question_indices": [1]}))),
            ("t1", 1, BallotOutcome::Malformed, None),
            ("submission:1", 2, BallotOutcome::Failed, None),
        ]
    );
    assert_eq!(rows.extractions.len(), 1);
    assert_eq!(rows.extractions[0].extraction, extraction("panel:bbbbbbbbbbbb"));
    assert_eq!(rows.judgements.iter().find(|j| j.judgement.judge.starts_with("panel:")).unwrap().judgement, judgement);
    let detail = store.episode_detail(&id).unwrap().unwrap();
    assert_eq!((detail.ballots.len(), detail.extractions.len()), (3, 1));
}

#[test]
fn panel_writes_refuse_an_unknown_episode_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let err = store.record_panel_judgements("feedfeedfeedfeed", &[ballot("panel:a", "t1", 0, BallotOutcome::Ballot)], &[]).unwrap_err();
    assert_eq!(err.to_string(), "episode feedfeedfeedfeed is not in the store");
    assert!(store.ballots().unwrap().is_empty());
}

#[test]
fn reset_clears_an_episodes_ballots_and_extractions_but_keeps_panels() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 10);
    store.record_panel(&panel("panel:aaaaaaaaaaaa", PanelUse::Extractor)).unwrap();
    store
        .record_extraction(
            &id,
            &[ballot("panel:aaaaaaaaaaaa", "submission:1", 0, BallotOutcome::Ballot)],
            &extraction("panel:aaaaaaaaaaaa"),
        )
        .unwrap();
    store.reset_episode(&id).unwrap();
    assert!(store.ballots().unwrap().is_empty());
    assert!(store.extractions().unwrap().is_empty());
    assert_eq!(store.panels().unwrap().len(), 1);
}

#[test]
fn merge_keeps_ballots_with_their_episodes_and_each_panel_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s1 = Store::create(&tmp.path().join("s1"), &config(7, Some([1, 2]))).unwrap();
    let s2 = Store::create(&tmp.path().join("s2"), &config(7, Some([2, 2]))).unwrap();
    let a = run_episode(&s1, 0, 1.0, 10);
    let b = run_episode(&s2, 1, 1.0, 10);
    for (store, id) in [(&s1, &a), (&s2, &b)] {
        store.record_panel(&panel("panel:aaaaaaaaaaaa", PanelUse::Judge)).unwrap();
        store.record_panel_judgements(id, &[ballot("panel:aaaaaaaaaaaa", "t1", 0, BallotOutcome::Ballot)], &[]).unwrap();
    }
    let out = tmp.path().join("all");
    merge(&[s1.dir(), s2.dir()], &out).unwrap();
    let merged = Store::open(&out).unwrap();
    assert_eq!(merged.panels().unwrap().len(), 1);
    let mut episodes: Vec<String> = merged.ballots().unwrap().into_iter().map(|b| b.episode).collect();
    episodes.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(episodes, expected);
}

#[test]
fn a_version_3_store_gains_the_panel_tables_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 10);
    let db = store.db_path().to_path_buf();
    let before = store.dump_tables(true).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DROP TABLE resamples; DROP TABLE audit_labels; DROP TABLE audit_sheets; DROP TABLE audit_items; DROP TABLE audit_samples;\n         DROP TABLE ballots; DROP TABLE extractions; DROP TABLE panels; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(tmp.path()).unwrap();
    assert_eq!(store.dump_tables(true).unwrap(), before);
    store.record_panel(&panel("panel:aaaaaaaaaaaa", PanelUse::Detector)).unwrap();
    store.record_ballots(&id, &[ballot("panel:aaaaaaaaaaaa", "turn:2", 0, BallotOutcome::Ballot)]).unwrap();
    assert_eq!(store.ballots().unwrap().len(), 1);
}
