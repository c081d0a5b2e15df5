//! Paged, filtered and aggregated reads for viewers; the read-only open; random access to
//! trajectories (a growing file, a cut frame, an event kind this build does not know).

use std::io::Write;

use specgap_protocol::event::{EventKind, Usage};
use specgap_protocol::run::{EndReason, EpisodeKey};
use specgap_store::{EpisodeFilter, EpisodeOrder, Role, Status, Store, TrajectoryIndex, read_trajectory_values, trajectory_path};

use crate::{config, meta, result, summary};

/// An episode of `task` × `agent` under `condition`, repeat `repeat`, finished with `score`
/// (None: an infrastructure error).
fn episode(store: &Store, task: &str, agent: &str, condition: &str, repeat: u32, score: Option<f64>) -> String {
    let key = EpisodeKey {
        task: task.into(),
        task_hash: "h".into(),
        agent: agent.into(),
        agent_hash: agent.into(),
        user_hash: "u".into(),
        condition: condition.into(),
        start: "clean".into(),
        repeat,
        seed: 7,
    };
    let mut w = store.begin_episode(&key, &meta()).unwrap();
    let id = w.id().to_string();
    match score {
        Some(score) => {
            let record = specgap_store::SubmissionRecord {
                automatic: false,
                agent_declared: true,
                result: Some(result(r#"{"version":1,"requirements":{"a":{"pass":true}}}"#)),
                scored: Some(specgap_protocol::result::Scored {
                    kind: specgap_protocol::result::ScoringKind::Requirement,
                    score,
                    success: score == 1.0,
                }),
                failing_requirement: None,
                error: None,
                diff: Vec::new(),
            };
            w.write_submission(1, &record).unwrap();
            w.finish(summary(Status::Finished, Some(EndReason::Submitted), 5)).unwrap();
        }
        None => {
            let mut s = summary(Status::InfraError, None, 5);
            s.error = Some("sandbox did not start".into());
            w.finish(s).unwrap();
        }
    }
    id
}

fn sample(store: &Store) {
    episode(store, "t/a", "scripted:gold", "partial", 0, Some(1.0));
    episode(store, "t/a", "scripted:gold", "partial", 1, Some(1.0));
    episode(store, "t/a", "scripted:literal", "partial", 0, Some(0.2));
    episode(store, "t/b", "scripted:literal", "full", 0, Some(0.4));
    episode(store, "t/b", "scripted:gold", "full", 0, None);
}

#[test]
fn episode_page_filters_counts_and_pages_without_overlap() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    sample(&store);
    let all = store.episode_page(&EpisodeFilter::default(), EpisodeOrder::Key, 0, 100).unwrap();
    assert_eq!(all.total, 5);
    let keys: Vec<(String, String, u32)> = all.rows.iter().map(|e| (e.task.clone(), e.agent.clone(), e.repeat)).collect();
    assert_eq!(
        keys,
        vec![
            ("t/a".into(), "scripted:gold".into(), 0),
            ("t/a".into(), "scripted:gold".into(), 1),
            ("t/a".into(), "scripted:literal".into(), 0),
            ("t/b".into(), "scripted:gold".into(), 0),
            ("t/b".into(), "scripted:literal".into(), 0),
        ]
    );
    // Two pages of two and a last of one, in the same order.
    let mut paged = Vec::new();
    for offset in [0, 2, 4] {
        let page = store.episode_page(&EpisodeFilter::default(), EpisodeOrder::Key, offset, 2).unwrap();
        assert_eq!(page.total, 5);
        paged.extend(page.rows.into_iter().map(|e| e.id));
    }
    assert_eq!(paged, all.rows.iter().map(|e| e.id.clone()).collect::<Vec<_>>());

    let gold = EpisodeFilter { agent: Some("scripted:gold".into()), ..EpisodeFilter::default() };
    assert_eq!(store.episode_page(&gold, EpisodeOrder::Key, 0, 100).unwrap().total, 3);
    let scored_range = EpisodeFilter { min_score: Some(0.3), max_score: Some(0.9), ..EpisodeFilter::default() };
    let page = store.episode_page(&scored_range, EpisodeOrder::Key, 0, 100).unwrap();
    assert_eq!(page.rows.iter().map(|e| e.final_score).collect::<Vec<_>>(), vec![Some(0.4)]);
    let errors = EpisodeFilter { status: Some(Status::InfraError), ..EpisodeFilter::default() };
    let page = store.episode_page(&errors, EpisodeOrder::Key, 0, 100).unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.rows[0].error.as_deref(), Some("sandbox did not start"));
    let repeat1 = EpisodeFilter { repeat: Some(1), end_reason: Some("submitted".into()), ..EpisodeFilter::default() };
    assert_eq!(store.episode_page(&repeat1, EpisodeOrder::Key, 0, 100).unwrap().total, 1);
    // A value that holds SQL is a value, not SQL.
    let hostile = EpisodeFilter { task: Some("t/a' OR '1'='1".into()), ..EpisodeFilter::default() };
    assert_eq!(store.episode_page(&hostile, EpisodeOrder::Key, 0, 100).unwrap().total, 0);

    let by_score = store.episode_page(&EpisodeFilter::default(), EpisodeOrder::ScoreDescending, 0, 100).unwrap();
    assert_eq!(by_score.rows.iter().map(|e| e.final_score).collect::<Vec<_>>(), vec![Some(1.0), Some(1.0), Some(0.4), Some(0.2), None]);
    let ids = store.episode_ids(&gold, EpisodeOrder::Key, 1, 5).unwrap();
    assert_eq!(ids, vec![all.rows[1].id.clone(), all.rows[3].id.clone()]);
}

#[test]
fn facets_matrix_and_usage_by_agent_aggregate_in_sql() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    sample(&store);
    let facets = store.episode_facets().unwrap();
    assert_eq!(facets.episodes, 5);
    assert_eq!(facets.tasks.into_iter().collect::<Vec<_>>(), vec![("t/a".to_string(), 3), ("t/b".to_string(), 2)]);
    assert_eq!(facets.conditions.get("full"), Some(&2));
    assert_eq!(facets.statuses.get("infra_error"), Some(&1));
    assert_eq!(facets.statuses.get("finished"), Some(&4));
    assert_eq!(facets.end_reasons.into_iter().collect::<Vec<_>>(), vec![("submitted".to_string(), 4)]);
    assert_eq!(facets.max_repeat, Some(1));

    let cells = store.outcome_matrix(&EpisodeFilter::default()).unwrap();
    type Cell<'a> = (&'a str, &'a str, u64, u64, Option<f64>, u64, u64);
    let summary: Vec<Cell> =
        cells.iter().map(|c| (c.task.as_str(), c.agent.as_str(), c.episodes, c.scored, c.mean_score, c.successes, c.errors)).collect();
    assert_eq!(
        summary,
        vec![
            ("t/a", "scripted:gold", 2, 2, Some(1.0), 2, 0),
            ("t/a", "scripted:literal", 1, 1, Some(0.2), 0, 0),
            ("t/b", "scripted:gold", 1, 0, None, 0, 1),
            ("t/b", "scripted:literal", 1, 1, Some(0.4), 0, 0),
        ]
    );
    let full = EpisodeFilter { condition: Some("full".into()), ..EpisodeFilter::default() };
    assert_eq!(store.outcome_matrix(&full).unwrap().len(), 2);

    // Usage: two attempts' rows of one episode and one of another, summed per agent and role.
    let key = EpisodeKey {
        task: "t/c".into(),
        task_hash: "h".into(),
        agent: "chat:m".into(),
        agent_hash: "m".into(),
        user_hash: "u".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat: 0,
        seed: 7,
    };
    let mut w = store.begin_episode(&key, &meta()).unwrap();
    let usage = Usage { input_tokens: 100, output_tokens: 20, cached_tokens: 40, requests: 1, cost_usd: 0.5, ..Usage::default() };
    w.record_usage(Role::Agent, &usage).unwrap();
    w.record_usage(Role::Agent, &usage).unwrap();
    w.record_usage(Role::User, &Usage { input_tokens: 7, requests: 1, ..Usage::default() }).unwrap();
    drop(w);
    let rows = store.usage_by_agent().unwrap();
    let seen: Vec<(&str, Role, u64, u64, u64, f64)> =
        rows.iter().map(|r| (r.agent.as_str(), r.role, r.episodes, r.usage.input_tokens, r.usage.requests, r.usage.cost_usd)).collect();
    assert_eq!(seen, vec![("chat:m", Role::Agent, 1, 200, 2, 1.0), ("chat:m", Role::User, 1, 7, 1, 0.0)]);
}

#[test]
fn score_histogram_and_ended_durations_aggregate_in_sql() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    sample(&store);
    // Scores 1.0, 1.0, 0.2, 0.4 and one infrastructure error without a score.
    assert_eq!(store.score_histogram(&EpisodeFilter::default(), 10).unwrap(), (vec![0, 0, 1, 0, 1, 0, 0, 0, 0, 2], 1));
    let gold = EpisodeFilter { agent: Some("scripted:gold".into()), ..EpisodeFilter::default() };
    assert_eq!(store.score_histogram(&gold, 2).unwrap(), (vec![0, 2], 1));
    // Every sample episode ended after 5 ms; a running one does not count.
    let key = EpisodeKey {
        task: "t/c".into(),
        task_hash: "h".into(),
        agent: "scripted:gold".into(),
        agent_hash: "g".into(),
        user_hash: "u".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat: 0,
        seed: 7,
    };
    let _running = store.begin_episode(&key, &meta()).unwrap();
    assert_eq!(store.ended_wall_ms().unwrap(), (5, 25));
}

#[test]
fn open_read_only_writes_nothing_and_sees_other_writers_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let writer = Store::create(tmp.path(), &config(7, None)).unwrap();
    episode(&writer, "t/a", "scripted:gold", "partial", 0, Some(1.0));
    let reader = Store::open_read_only(tmp.path()).unwrap();
    let before = reader.data_version().unwrap();
    assert_eq!(reader.episodes().unwrap().len(), 1);
    episode(&writer, "t/a", "scripted:gold", "partial", 1, Some(0.5));
    assert_ne!(reader.data_version().unwrap(), before, "a commit by another connection changes the data version");
    assert_eq!(reader.episodes().unwrap().len(), 2);
    let err = reader.begin_episode(&crate::key(0, "clean"), &meta()).err().map(|e| e.to_string());
    assert!(err.is_some(), "a read-only store refuses writes");
    drop(writer);
    // After the writer closed (SQLite removes -wal / -shm), a read-only open still works.
    let again = Store::open_read_only(tmp.path()).unwrap();
    assert_eq!(again.episodes().unwrap().len(), 2);
    // A directory that is a run without a database is not a store.
    let empty = tempfile::tempdir().unwrap();
    std::fs::copy(tmp.path().join("run.toml"), empty.path().join("run.toml")).unwrap();
    let err = Store::open_read_only(empty.path()).err().map(|e| e.to_string());
    assert_eq!(err, Some(format!("{} is not a specgap run directory: expected run.toml and results.sqlite in it", empty.path().display())));
    assert!(!empty.path().join("results.sqlite").exists());
}

#[test]
fn open_read_only_upgrades_an_older_store_first_so_its_readers_find_their_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = episode(&store, "t/a", "scripted:gold", "partial", 0, Some(1.0));
    drop(store);
    // Make it a version-2 store: without the columns version 3 added and the tables of
    // versions 4 and 5.
    let conn = rusqlite::Connection::open(tmp.path().join("results.sqlite")).unwrap();
    conn.execute_batch(
        "ALTER TABLE start_results DROP COLUMN score; ALTER TABLE start_results DROP COLUMN success;
         DROP TABLE panels; DROP TABLE ballots; DROP TABLE extractions;
         DROP TABLE audit_labels; DROP TABLE audit_sheets; DROP TABLE audit_items; DROP TABLE audit_samples;
         DROP TABLE resamples; PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(conn);
    let reader = Store::open_read_only(tmp.path()).unwrap();
    assert!(reader.episode_detail(&id).unwrap().is_some());
    assert_eq!(reader.start_results().unwrap(), vec![]);
    assert_eq!((reader.ballots().unwrap(), reader.extractions().unwrap()), (vec![], vec![]));
    let version: i64 =
        rusqlite::Connection::open(tmp.path().join("results.sqlite")).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, specgap_store::SCHEMA_VERSION);
}

#[test]
fn trajectory_index_follows_a_growing_file_and_reads_ranges_raw() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let mut w = store.begin_episode(&crate::key(0, "clean"), &meta()).unwrap();
    let path = trajectory_path(store.dir(), w.id());
    for i in 0..5 {
        w.event(EventKind::Overlay { name: format!("o{i}") }).unwrap();
    }
    let mut index = TrajectoryIndex::build(&path).unwrap();
    assert_eq!(index.len(), 5);
    assert_eq!(index.pending_tail(), None);
    let page = index.read(&path, 1..3).unwrap();
    assert_eq!(page.iter().map(|e| e["name"].as_str().unwrap()).collect::<Vec<_>>(), vec!["o1", "o2"]);
    assert_eq!(page[0]["seq"], 1);
    for i in 5..8 {
        w.event(EventKind::Overlay { name: format!("o{i}") }).unwrap();
    }
    assert_eq!(index.refresh(&path).unwrap(), 3);
    assert_eq!(index.len(), 8);
    assert_eq!(index.read(&path, 6..100).unwrap().len(), 2, "a range past the end is clamped");
    assert!(index.read(&path, 9..12).unwrap().is_empty());
    drop(w);

    // A frame of an event kind this build does not know, then half a frame.
    let unknown = br#"{"seq":8,"ts_ms":1,"elapsed_ms":1,"type":"phase_change","phase":"execute"}
"#;
    let frame = zstd::bulk::compress(unknown, 3).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(&frame).unwrap();
    file.write_all(&frame[..frame.len() / 2]).unwrap();
    drop(file);
    assert_eq!(index.refresh(&path).unwrap(), 1);
    let tail = index.pending_tail().unwrap();
    assert_eq!(tail.bytes, (frame.len() / 2) as u64);
    assert_eq!(index.read(&path, 8..9).unwrap()[0]["type"], "phase_change");
    let (events, cut) = read_trajectory_values(&path).unwrap();
    assert_eq!(events.len(), 9);
    assert_eq!(cut, Some(tail));
    // The typed reader refuses the unknown kind; the raw reader is what viewers use.
    assert!(specgap_store::read_trajectory_file(&path).is_err());

    // A rewritten (shorter) file is indexed anew.
    std::fs::write(&path, &frame).unwrap();
    index.refresh(&path).unwrap();
    assert_eq!(index.len(), 1);
}
