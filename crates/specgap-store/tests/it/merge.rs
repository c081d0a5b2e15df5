//! `merge`: joining shards, and each refusal with its exact message.

use specgap_store::{MergeSummary, Store, merge, read_trajectory};

use crate::{config, run_episode};

/// Two shards of seed 7: shard 1 has repeats 0 and 1, shard 2 has repeat 2.
fn two_shards(root: &std::path::Path) -> (Store, Store) {
    let s1 = Store::create(&root.join("s1"), &config(7, Some([1, 2]))).unwrap();
    let s2 = Store::create(&root.join("s2"), &config(7, Some([2, 2]))).unwrap();
    run_episode(&s1, 0, 1.0, 10);
    run_episode(&s1, 1, 0.0, 10);
    run_episode(&s2, 2, 1.0, 10);
    (s1, s2)
}

#[test]
fn merge_joins_shards_rows_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, s2) = two_shards(tmp.path());
    let out = tmp.path().join("all");
    let summary = merge(&[s1.dir(), s2.dir()], &out).unwrap();
    assert_eq!(
        summary,
        MergeSummary {
            runs: 2,
            episodes: 3,
            duplicates: 0,
            not_applicable: 0,
            missing_shards: vec![]
        }
    );
    let merged = Store::open(&out).unwrap();
    assert_eq!(merged.config(), &config(7, None));
    let mut ids: Vec<String> = s1
        .episodes()
        .unwrap()
        .into_iter()
        .chain(s2.episodes().unwrap())
        .map(|e| e.id)
        .collect();
    ids.sort();
    assert_eq!(
        merged
            .episodes()
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect::<Vec<_>>(),
        ids
    );
    // Full rows, timestamps included, are copied verbatim.
    let full = merged.dump_tables(false).unwrap();
    let mut episodes = s1.dump_tables(false).unwrap()["episodes"].clone();
    episodes.extend(s2.dump_tables(false).unwrap()["episodes"].clone());
    episodes.sort();
    assert_eq!(full["episodes"], episodes);
    assert_eq!(full["submissions"].len(), 3);
    for id in &ids {
        assert_eq!(read_trajectory(&out, id).unwrap().events.len(), 1);
        assert!(
            out.join("episodes")
                .join(id)
                .join("submissions/1/workspace.diff")
                .is_file()
        );
    }
}

#[test]
fn an_identical_episode_in_two_runs_is_kept_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, s2) = two_shards(tmp.path());
    run_episode(&s2, 0, 1.0, 999);
    let summary = merge(&[s1.dir(), s2.dir()], &tmp.path().join("all")).unwrap();
    assert_eq!((summary.episodes, summary.duplicates), (3, 1));
}

#[test]
fn a_partial_merge_reports_the_missing_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, _) = two_shards(tmp.path());
    let summary = merge(&[s1.dir()], &tmp.path().join("all")).unwrap();
    assert_eq!(summary.missing_shards, vec![2]);
}

#[test]
fn merge_refuses_a_different_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, Some([1, 2]))).unwrap();
    let b = Store::create(&tmp.path().join("b"), &config(8, Some([2, 2]))).unwrap();
    let err = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap_err();
    let (pa, pb) = (a.dir().display(), b.dir().display());
    assert_eq!(
        err.to_string(),
        format!("cannot merge {pb} with {pa}: `seed` differs: 7 in {pa}, 8 in {pb}")
    );
    assert!(!tmp.path().join("all").exists());
}

#[test]
fn merge_refuses_a_different_task_hash_naming_the_task() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, Some([1, 2]))).unwrap();
    let mut other = config(7, Some([2, 2]));
    other.tasks[0].hash = "bbb".into();
    let b = Store::create(&tmp.path().join("b"), &other).unwrap();
    let err = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap_err();
    let (pa, pb) = (a.dir().display(), b.dir().display());
    assert_eq!(
        err.to_string(),
        format!(
            "cannot merge {pb} with {pa}: task `examples/x` has hash aaa in {pa} and bbb in {pb}"
        )
    );
}

#[test]
fn merge_refuses_a_missing_task_and_a_different_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, None)).unwrap();
    let mut fewer = config(7, None);
    fewer.tasks.clear();
    let b = Store::create(&tmp.path().join("b"), &fewer).unwrap();
    let mut agent = config(7, None);
    agent.agents[0].hash = "ag2".into();
    let c = Store::create(&tmp.path().join("c"), &agent).unwrap();
    let (pa, pb, pc) = (a.dir().display(), b.dir().display(), c.dir().display());
    let err = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot merge {pb} with {pa}: task `examples/x` is in {pa} but not in {pb}")
    );
    let err = merge(&[a.dir(), c.dir()], &tmp.path().join("all")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot merge {pc} with {pa}: agent `scripted:gold` has configuration hash ag1 in {pa} and ag2 in {pc}"
        )
    );
}

#[test]
fn merge_ignores_shard_and_task_path() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, Some([1, 2]))).unwrap();
    let mut moved = config(7, Some([2, 2]));
    moved.tasks[0].path = "/elsewhere/x".into();
    let b = Store::create(&tmp.path().join("b"), &moved).unwrap();
    let summary = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap();
    assert_eq!((summary.runs, summary.missing_shards), (2, vec![]));
}

#[test]
fn merge_refuses_an_episode_with_different_results() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, s2) = two_shards(tmp.path());
    let id = run_episode(&s2, 0, 0.0, 10);
    let err = merge(&[s1.dir(), s2.dir()], &tmp.path().join("all")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "episode {id} has different results in {} and {} (table episodes)",
            s1.dir().display(),
            s2.dir().display()
        )
    );
}

#[test]
fn merge_refuses_a_non_empty_output_and_no_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, _) = two_shards(tmp.path());
    let err = merge(&[s1.dir()], s1.dir()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "merge output {} is not empty; expected an empty or new directory",
            s1.dir().display()
        )
    );
    let none: [&std::path::Path; 0] = [];
    assert_eq!(
        merge(&none, &tmp.path().join("all"))
            .unwrap_err()
            .to_string(),
        "merge needs at least one run directory"
    );
}

#[test]
fn not_applicable_rows_are_joined_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, s2) = two_shards(tmp.path());
    let row = |condition: &str| specgap_store::NotApplicableRow {
        task: "examples/x".into(),
        agent: "scripted:gold".into(),
        condition: condition.into(),
        start: "clean".into(),
        reason: "no instruction.full.md".into(),
    };
    s1.record_not_applicable(&row("full")).unwrap();
    s2.record_not_applicable(&row("full")).unwrap();
    s2.record_not_applicable(&row("interact")).unwrap();
    let out = tmp.path().join("all");
    let summary = merge(&[s1.dir(), s2.dir()], &out).unwrap();
    assert_eq!(summary.not_applicable, 2);
    assert_eq!(
        Store::open(&out).unwrap().not_applicable().unwrap(),
        vec![row("full"), row("interact")]
    );
}

#[test]
fn merge_compares_fields_added_to_run_config_later() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, Some([1, 2]))).unwrap();
    let mut other = config(7, Some([2, 2]));
    other.budget.turns = Some(50);
    let b = Store::create(&tmp.path().join("b"), &other).unwrap();
    let err = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap_err();
    let (pa, pb) = (a.dir().display(), b.dir().display());
    assert_eq!(
        err.to_string(),
        format!(
            r#"cannot merge {pb} with {pa}: `budget` differs: (absent) in {pa}, {{"turns":50}} in {pb}"#
        )
    );
}

#[test]
fn merge_refuses_runs_of_different_protocol_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let mut first = config(7, Some([1, 2]));
    first.protocol_version = 2;
    let s1 = Store::create(&tmp.path().join("s1"), &first).unwrap();
    // Shard 2 was made by a build of protocol 1 (its run.toml names no version).
    let s2 = Store::create(&tmp.path().join("s2"), &config(7, Some([2, 2]))).unwrap();
    run_episode(&s1, 0, 1.0, 10);
    run_episode(&s2, 2, 1.0, 10);
    let out = tmp.path().join("all");
    let err = merge(&[s1.dir(), s2.dir()], &out).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot merge {1} with {0}: the protocol version differs: 2 in {0}, 1 in {1} (what a condition means \
             changed between them, so their episodes cannot form one run)",
            s1.dir().display(),
            s2.dir().display()
        )
    );
    assert!(!out.exists(), "a refused merge writes nothing");
}
