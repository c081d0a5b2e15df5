//! `dump_tables`: every table as sorted text, with or without volatile columns.

use specgap_store::{Store, is_volatile_column};

use crate::{config, counts, run_episode};

#[test]
fn volatile_columns_are_named_ts_or_ms() {
    assert!(is_volatile_column("started_ts"));
    assert!(is_volatile_column("wall_ms"));
    assert!(is_volatile_column("latency_ms"));
    assert!(!is_volatile_column("turns"));
    assert!(!is_volatile_column("cost_usd"));
}

#[test]
fn dump_without_volatile_columns_compares_runs_of_one_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, None)).unwrap();
    let b = Store::create(&tmp.path().join("b"), &config(7, None)).unwrap();
    run_episode(&a, 0, 0.5, 100);
    run_episode(&b, 0, 0.5, 200);
    let (full_a, full_b) = (a.dump_tables(false).unwrap(), b.dump_tables(false).unwrap());
    assert_ne!(full_a, full_b, "wall_ms differs");
    let (stable_a, stable_b) = (a.dump_tables(true).unwrap(), b.dump_tables(true).unwrap());
    assert_eq!(stable_a, stable_b);
    // episodes has 25 columns, 3 of them volatile (wall_ms, started_ts, ended_ts).
    assert_eq!(full_a["episodes"][0].len(), 25);
    assert_eq!(stable_a["episodes"][0].len(), 22);
    let id = stable_a["episodes"][0][0].clone();
    let expected_submission: Vec<String> =
        [id.as_str(), "1", "0", "1", "1", "requirement", "0.5", "0", "NULL", "a", "NULL", "19"].map(String::from).to_vec();
    assert_eq!(stable_a["submissions"][0], expected_submission);
    let expected_counts = [
        ("audit_items", 0),
        ("audit_labels", 0),
        ("audit_samples", 0),
        ("audit_sheets", 0),
        ("ballots", 0),
        ("deliveries", 0),
        ("episodes", 1),
        ("errors", 0),
        ("extractions", 0),
        ("judgements", 0),
        ("not_applicable", 0),
        ("panels", 0),
        ("questions", 0),
        ("requirement_outcomes", 1),
        ("resamples", 0),
        ("start_results", 0),
        ("submissions", 1),
        ("tests", 0),
        ("usage", 0),
    ];
    assert_eq!(counts(&stable_a), expected_counts.iter().map(|(t, n)| (t.to_string(), *n)).collect());
}

#[test]
fn a_different_result_shows_in_the_stable_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, None)).unwrap();
    let b = Store::create(&tmp.path().join("b"), &config(7, None)).unwrap();
    run_episode(&a, 0, 0.5, 100);
    run_episode(&b, 0, 1.0, 100);
    assert_ne!(a.dump_tables(true).unwrap()["submissions"], b.dump_tables(true).unwrap()["submissions"]);
}
