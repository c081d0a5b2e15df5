//! `merge`: joining shards, and each refusal with its exact message.

use std::path::{Path, PathBuf};

use specgap_protocol::run::MergeRecord;
use specgap_store::{MergeOptions, MergeSummary, Store, StoreError, merge, merge_with, read_trajectory, run_dirs};

use crate::{config, key, run_episode};

/// Two shards of seed 7: shard 1 has repeats 0 and 1, shard 2 has repeat 2.
fn two_shards(root: &Path) -> (Store, Store) {
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
            shards: 2,
            missing_shards: vec![],
            identical_copies: vec![],
        }
    );
    let merged = Store::open(&out).unwrap();
    let mut expected = config(7, None);
    expected.merge = Some(MergeRecord { shards: 2, missing: vec![] });
    assert_eq!(merged.config(), &expected);
    let mut ids: Vec<String> = s1.episodes().unwrap().into_iter().chain(s2.episodes().unwrap()).map(|e| e.id).collect();
    ids.sort();
    assert_eq!(merged.episodes().unwrap().into_iter().map(|e| e.id).collect::<Vec<_>>(), ids);
    // Full rows, timestamps included, are copied verbatim.
    let full = merged.dump_tables(false).unwrap();
    let mut episodes = s1.dump_tables(false).unwrap()["episodes"].clone();
    episodes.extend(s2.dump_tables(false).unwrap()["episodes"].clone());
    episodes.sort();
    assert_eq!(full["episodes"], episodes);
    assert_eq!(full["submissions"].len(), 3);
    for id in &ids {
        assert_eq!(read_trajectory(&out, id).unwrap().events.len(), 1);
        assert!(out.join("episodes").join(id).join("submissions/1/workspace.diff").is_file());
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
fn a_set_missing_a_shard_is_refused_naming_it_unless_a_partial_merge_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, _) = two_shards(tmp.path());
    let out = tmp.path().join("all");
    let err = merge(&[s1.dir()], &out).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot merge: shard 2 of 2 is missing; the runs given hold shard 1 ({}) — merge every shard, or allow a partial merge (specgap merge --allow-partial) to merge only these and record the missing ones",
            s1.dir().display()
        )
    );
    assert!(!out.exists(), "a refused merge writes nothing");
    let summary = merge_with(&[s1.dir()], &out, MergeOptions { allow_partial: true }).unwrap();
    assert_eq!((summary.episodes, summary.shards, summary.missing_shards), (2, 2, vec![2]));
    let record = Store::open(&out).unwrap().config().merge.clone();
    assert_eq!(record, Some(MergeRecord { shards: 2, missing: vec![2] }));
    let text = std::fs::read_to_string(out.join("run.toml")).unwrap();
    assert!(text.contains("[merge]\nshards = 2\nmissing = [2]\n"), "{text}");
}

/// Four shards of seed 7 over repeats 0..4 (shard i holds repeat i − 1).
fn four_shards(root: &Path) -> Vec<Store> {
    (1..=4)
        .map(|i| {
            let mut c = config(7, Some([i, 4]));
            c.repeats = 4;
            c.plan_hash = Some("p1".into());
            let store = Store::create(&root.join(format!("s{i}")), &c).unwrap();
            run_episode(&store, i - 1, 1.0, 10);
            store
        })
        .collect()
}

#[test]
fn missing_shards_are_all_named_with_what_each_run_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let shards = four_shards(tmp.path());
    let err = merge(&[shards[0].dir(), shards[2].dir()], &tmp.path().join("all")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot merge: shards 2, 4 of 4 are missing; the runs given hold shard 1 ({}), shard 3 ({}) — merge every shard, or allow a partial merge (specgap merge --allow-partial) to merge only these and record the missing ones",
            shards[0].dir().display(),
            shards[2].dir().display()
        )
    );
}

#[test]
fn an_identical_copy_of_a_shard_is_merged_once() {
    let tmp = tempfile::tempdir().unwrap();
    let shards = four_shards(tmp.path());
    // A retried shard 2, published again: the same episode with the same results (its
    // timestamps and durations differ).
    let mut c = config(7, Some([2, 4]));
    c.repeats = 4;
    c.plan_hash = Some("p1".into());
    let again = Store::create(&tmp.path().join("s2-again"), &c).unwrap();
    run_episode(&again, 1, 1.0, 999);
    let mut dirs: Vec<&Path> = shards.iter().map(Store::dir).collect();
    dirs.insert(2, again.dir());
    let out = tmp.path().join("all");
    let summary = merge(&dirs, &out).unwrap();
    assert_eq!((summary.runs, summary.episodes, summary.duplicates), (5, 4, 1));
    assert_eq!(summary.identical_copies, vec![(2, again.dir().to_path_buf(), shards[1].dir().to_path_buf())]);
    let whole = tmp.path().join("without-the-copy");
    merge(&shards.iter().map(Store::dir).collect::<Vec<_>>(), &whole).unwrap();
    assert_eq!(Store::open(&out).unwrap().dump_tables(false).unwrap(), Store::open(&whole).unwrap().dump_tables(false).unwrap());
}

#[test]
fn a_shard_given_twice_in_copies_that_differ_is_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let shards = four_shards(tmp.path());
    let mut c = config(7, Some([3, 4]));
    c.repeats = 4;
    c.plan_hash = Some("p1".into());
    let other = Store::create(&tmp.path().join("s3-other"), &c).unwrap();
    run_episode(&other, 2, 0.0, 10);
    let mut dirs: Vec<&Path> = shards.iter().map(Store::dir).collect();
    dirs.push(other.dir());
    let err = merge(&dirs, &tmp.path().join("all")).unwrap_err();
    let id = key(2, "clean").id();
    assert_eq!(
        err.to_string(),
        format!(
            "shard 3/4 is given twice, in {} and in {}, and the copies differ: episode {id} has different results (table episodes) — keep the copy you mean and leave the other out",
            shards[2].dir().display(),
            other.dir().display()
        )
    );
    // A copy that holds less (its process was killed before the episode began) differs too.
    let empty = Store::create(&tmp.path().join("s3-empty"), &c).unwrap();
    dirs.pop();
    dirs.push(empty.dir());
    let err = merge(&dirs, &tmp.path().join("all")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "shard 3/4 is given twice, in {0} and in {1}, and the copies differ: episode {id} is in {0} only — keep the copy you mean and leave the other out",
            shards[2].dir().display(),
            empty.dir().display()
        )
    );
}

#[test]
fn shards_of_different_plans_or_counts_are_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let shards = four_shards(tmp.path());
    let mut c = config(7, Some([4, 4]));
    c.repeats = 4;
    c.plan_hash = Some("p2".into());
    let other_plan = Store::create(&tmp.path().join("s4-other-plan"), &c).unwrap();
    let dirs = [shards[0].dir(), shards[1].dir(), shards[2].dir(), other_plan.dir()];
    let (p1, p4) = (shards[0].dir().display(), other_plan.dir().display());
    assert_eq!(
        merge(&dirs, &tmp.path().join("all")).unwrap_err().to_string(),
        format!(
            "cannot merge {p4} with {p1}: they are shards of different plans (plan hash p1 in {p1}, p2 in {p4}); their suites, flags or specgap builds differ — merge only shards started with the same command"
        )
    );
    let mut c = config(7, Some([2, 3]));
    c.repeats = 4;
    c.plan_hash = Some("p1".into());
    let other_count = Store::create(&tmp.path().join("s2-of-3"), &c).unwrap();
    let pc = other_count.dir().display();
    assert_eq!(
        merge(&[shards[0].dir(), other_count.dir()], &tmp.path().join("all")).unwrap_err().to_string(),
        format!(
            "cannot merge {pc} with {p1}: {p1} holds shards of 4 and {pc} shards of 3; shards of one run share their count n of --shard i/n"
        )
    );
}

#[test]
fn merging_is_idempotent_and_a_partial_merge_completes_with_the_missing_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let shards = four_shards(tmp.path());
    let all: Vec<&Path> = shards.iter().map(Store::dir).collect();
    let full = tmp.path().join("full");
    merge(&all, &full).unwrap();
    let dump = |dir: &Path| Store::open(dir).unwrap().dump_tables(false).unwrap();
    let run_toml = |dir: &Path| std::fs::read_to_string(dir.join("run.toml")).unwrap();
    // A merged run merged again, alone or with shards it holds, is the same run.
    for (name, inputs) in [("again", vec![full.as_path()]), ("with-a-shard", vec![full.as_path(), shards[1].dir()])] {
        let out = tmp.path().join(name);
        let summary = merge(&inputs, &out).unwrap();
        assert_eq!(summary.missing_shards, Vec::<u32>::new(), "{name}");
        assert_eq!(dump(&out), dump(&full), "{name}");
        assert_eq!(run_toml(&out), run_toml(&full), "{name}");
    }
    // Shards 1, 2, 4 now; shard 3 later.
    let partial = tmp.path().join("partial");
    merge_with(&[all[0], all[1], all[3]], &partial, MergeOptions { allow_partial: true }).unwrap();
    let err = merge(&[partial.as_path()], &tmp.path().join("still-partial")).unwrap_err();
    assert!(matches!(err, StoreError::MergeMissingShards { ref missing, .. } if missing == &[3]), "{err}");
    let completed = tmp.path().join("completed");
    let summary = merge(&[partial.as_path(), all[2]], &completed).unwrap();
    assert_eq!((summary.episodes, summary.missing_shards), (4, vec![]));
    assert_eq!(dump(&completed), dump(&full));
    assert_eq!(run_toml(&completed), run_toml(&full));
}

#[test]
fn a_directory_of_runs_stands_for_the_runs_inside_it_hidden_ones_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let published = tmp.path().join("published");
    let shards = four_shards(&published);
    std::fs::create_dir_all(published.join(".s9.partial-1")).unwrap();
    std::fs::copy(shards[0].dir().join("run.toml"), published.join(".s9.partial-1/run.toml")).unwrap();
    std::fs::write(published.join("notes.txt"), "not a run").unwrap();
    let expected: Vec<PathBuf> = shards.iter().map(|s| s.dir().to_path_buf()).collect();
    assert_eq!(run_dirs(&[&published]).unwrap(), expected);
    assert_eq!(run_dirs(&[shards[2].dir()]).unwrap(), vec![shards[2].dir().to_path_buf()]);
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(
        run_dirs(&[&empty]).unwrap_err().to_string(),
        format!("{} is not a run directory (no run.toml) and holds none", empty.display())
    );
}

#[test]
fn merge_refuses_a_different_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::create(&tmp.path().join("a"), &config(7, Some([1, 2]))).unwrap();
    let b = Store::create(&tmp.path().join("b"), &config(8, Some([2, 2]))).unwrap();
    let err = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap_err();
    let (pa, pb) = (a.dir().display(), b.dir().display());
    assert_eq!(err.to_string(), format!("cannot merge {pb} with {pa}: `seed` differs: 7 in {pa}, 8 in {pb}"));
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
    assert_eq!(err.to_string(), format!("cannot merge {pb} with {pa}: task `examples/x` has hash aaa in {pa} and bbb in {pb}"));
}

#[test]
fn merge_refuses_shards_whose_environment_digests_differ() {
    use specgap_protocol::run::EnvironmentRef;
    let tmp = tempfile::tempdir().unwrap();
    let environment = |digest: &str| EnvironmentRef {
        role: "task".into(),
        source: "image".into(),
        value: "python:3.12-slim".into(),
        digest: digest.into(),
    };
    let mut first = config(7, Some([1, 2]));
    first.tasks[0].environments = vec![environment("image-111")];
    let mut second = config(7, Some([2, 2]));
    second.tasks[0].environments = vec![environment("image-222")];
    let a = Store::create(&tmp.path().join("a"), &first).unwrap();
    let b = Store::create(&tmp.path().join("b"), &second).unwrap();
    let err = merge(&[a.dir(), b.dir()], &tmp.path().join("all")).unwrap_err();
    let (pa, pb) = (a.dir().display(), b.dir().display());
    assert_eq!(
        err.to_string(),
        format!("cannot merge {pb} with {pa}: task `examples/x` has environment digests task image-111 in {pa} and task image-222 in {pb}")
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
    assert_eq!(err.to_string(), format!("cannot merge {pb} with {pa}: task `examples/x` is in {pa} but not in {pb}"));
    let err = merge(&[a.dir(), c.dir()], &tmp.path().join("all")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot merge {pc} with {pa}: agent `scripted:gold` has configuration hash ag1 in {pa} and ag2 in {pc}")
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
        format!("episode {id} has different results in {} and {} (table episodes)", s1.dir().display(), s2.dir().display())
    );
}

#[test]
fn merge_refuses_a_non_empty_output_and_no_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, _) = two_shards(tmp.path());
    let err = merge(&[s1.dir()], s1.dir()).unwrap_err();
    assert_eq!(err.to_string(), format!("merge output {} is not empty; expected an empty or new directory", s1.dir().display()));
    let none: [&std::path::Path; 0] = [];
    assert_eq!(merge(&none, &tmp.path().join("all")).unwrap_err().to_string(), "merge needs at least one run directory");
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
    assert_eq!(Store::open(&out).unwrap().not_applicable().unwrap(), vec![row("full"), row("interact")]);
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
    assert_eq!(err.to_string(), format!(r#"cannot merge {pb} with {pa}: `budget` differs: (absent) in {pa}, {{"turns":50}} in {pb}"#));
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

/// Regression: `specgap merge runs/a runs/a` (or two paths to one directory) was accepted as
/// a shard given twice with identical copies.
#[test]
fn one_run_directory_given_twice_is_refused_naming_both_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, s2) = two_shards(tmp.path());
    let canonical = fs_err::canonicalize(s1.dir()).unwrap();
    let link = tmp.path().join("link-to-s1");
    std::os::unix::fs::symlink(s1.dir(), &link).unwrap();
    let dotted = tmp.path().join("s2/../s1");
    for second in [s1.dir().to_path_buf(), link, dotted] {
        let out = tmp.path().join("all");
        let err = merge(&[s1.dir(), s2.dir(), second.as_path()], &out).unwrap_err();
        let expected = if second == s1.dir() {
            format!("run directory {} is given twice; give each run once", s1.dir().display())
        } else {
            format!("run directory {} is given twice (again as {}); give each run once", s1.dir().display(), second.display())
        };
        assert_eq!(err.to_string(), expected);
        let StoreError::MergeSameRunTwice { dir, .. } = err else { unreachable!() };
        assert_eq!(dir, canonical);
        assert!(!out.exists(), "a refused merge writes nothing");
    }
}
