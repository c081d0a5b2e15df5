//! `Store::rows` scans tables and sorts in memory (and reads some tables on a second
//! connection); its order must be SQLite's `ORDER BY <primary key>`.

use rusqlite::Connection;
use specgap_protocol::event::Usage;
use specgap_protocol::result::{Scored, ScoringKind};
use specgap_protocol::run::EndReason;
use specgap_store::*;

use crate::{config, key, meta, result, summary};

/// Writes repeat `repeat` with two submissions, tests and requirements, questions, a
/// judgement per target (targets recorded in reverse order) and usage of both roles (user
/// first).
fn write_episode(store: &Store, repeat: u32) {
    let mut w = store.begin_episode(&key(repeat, "clean"), &meta()).unwrap();
    let text = r#"{"version":1,"requirements":{"zeta":{"pass":true},"alpha":{"pass":false},"Mid":{"pass":true}},
        "tests":{"t9":"pass","t10":"fail","T1":"skip"}}"#;
    for k in [1, 2] {
        let record = SubmissionRecord {
            automatic: false,
            agent_declared: true,
            result: Some(result(text)),
            scored: Some(Scored { kind: ScoringKind::Requirement, score: 0.5, success: false }),
            failing_requirement: Some("alpha".into()),
            error: None,
            diff: Vec::new(),
        };
        w.write_submission(k, &record).unwrap();
    }
    for (turn, text) in [(1, "Which file?"), (2, "Which test?")] {
        w.record_question(&Question { turn, text: text.into(), answer: "none".into(), matched_targets: vec![] }).unwrap();
    }
    for target in ["t2", "t10", "t1"] {
        w.record_judgement(&Judgement {
            judge: "offline".into(),
            target: target.into(),
            verdict: "missed".into(),
            matched_question_indices: vec![],
        })
        .unwrap();
    }
    for role in [Role::User, Role::Agent] {
        w.record_usage(role, &Usage::default()).unwrap();
    }
    w.finish(summary(Status::Finished, Some(EndReason::Submitted), 10)).unwrap();
}

/// The primary keys of `table` as text, in `ORDER BY <order>`.
fn keys(store: &Store, table: &str, columns: &str, order: &str) -> Vec<String> {
    let conn = Connection::open(store.db_path()).unwrap();
    let sql = format!("SELECT {columns} FROM {table} ORDER BY {order}");
    let mut stmt = conn.prepare(&sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        Ok((0..n)
            .map(|i| match r.get_ref(i).unwrap() {
                rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join("|"))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[test]
fn rows_come_in_primary_key_order() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    for repeat in 0..8 {
        write_episode(&store, repeat);
    }
    // Storage order is not key order here, so the in-memory sort is exercised.
    assert_ne!(keys(&store, "episodes", "id", "rowid"), keys(&store, "episodes", "id", "id"));
    let rows = store.rows().unwrap();
    let joined = |parts: Vec<String>| parts.join("|");
    let expected = |table: &str, columns: &str| keys(&store, table, columns, columns);
    assert_eq!(rows.episodes.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), expected("episodes", "id"));
    assert_eq!(
        rows.submissions.iter().map(|s| joined(vec![s.episode.clone(), s.k.to_string()])).collect::<Vec<_>>(),
        expected("submissions", "episode, k")
    );
    let requirements: Vec<String> =
        rows.requirement_outcomes.iter().map(|r| joined(vec![r.episode.clone(), r.k.to_string(), r.requirement.clone()])).collect();
    assert_eq!(requirements.len(), 8 * 2 * 3);
    assert_eq!(requirements, expected("requirement_outcomes", "episode, k, requirement"));
    assert_eq!(
        rows.tests.iter().map(|t| joined(vec![t.episode.clone(), t.k.to_string(), t.test.clone()])).collect::<Vec<_>>(),
        expected("tests", "episode, k, test")
    );
    assert_eq!(
        rows.questions.iter().map(|q| joined(vec![q.episode.clone(), q.idx.to_string()])).collect::<Vec<_>>(),
        expected("questions", "episode, idx")
    );
    assert_eq!(
        rows.judgements
            .iter()
            .map(|j| joined(vec![j.episode.clone(), j.judgement.judge.clone(), j.judgement.target.clone()]))
            .collect::<Vec<_>>(),
        expected("judgements", "episode, judge, target")
    );
    assert_eq!(
        rows.usage.iter().map(|u| joined(vec![u.episode.clone(), u.attempt.to_string(), u.role.as_str().to_string()])).collect::<Vec<_>>(),
        expected("usage", "episode, attempt, role")
    );
    // Bulk reads and the per-episode reads (which keep ORDER BY) agree row for row.
    for episode in &rows.episodes {
        let detail = store.episode_detail(&episode.id).unwrap().unwrap();
        let of = |e: &str| e == episode.id;
        assert_eq!(detail.episode, *episode);
        assert_eq!(detail.requirement_outcomes, rows.requirement_outcomes.iter().filter(|r| of(&r.episode)).cloned().collect::<Vec<_>>());
        assert_eq!(detail.tests, rows.tests.iter().filter(|t| of(&t.episode)).cloned().collect::<Vec<_>>());
        assert_eq!(detail.judgements, rows.judgements.iter().filter(|j| of(&j.episode)).cloned().collect::<Vec<_>>());
    }
}
