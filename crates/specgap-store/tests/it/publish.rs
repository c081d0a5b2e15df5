//! `publish`: a finished run copied to shared storage whole, under a name never reused.

use specgap_store::{Store, StoreError, publish};

use crate::{config, files_under, run_episode};

#[test]
fn a_published_run_holds_every_row_with_the_wal_checkpointed_and_no_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(&tmp.path().join("local"), &config(7, Some([2, 4]))).unwrap();
    let _lock = specgap_store::lock_runner(store.dir()).unwrap();
    run_episode(&store, 0, 1.0, 10);
    run_episode(&store, 1, 0.0, 10);
    // The rows are in the WAL until a checkpoint moves them.
    assert!(std::fs::metadata(store.dir().join("results.sqlite-wal")).unwrap().len() > 0);
    let shared = tmp.path().join("shared/study");
    let published = publish(&store, &shared, "shard-2-of-4").unwrap();
    assert_eq!(published, shared.join("shard-2-of-4"));
    assert_eq!(std::fs::metadata(store.dir().join("results.sqlite-wal")).unwrap().len(), 0);
    let mut expected = files_under(store.dir());
    expected.retain(|f| !["runner.lock", "results.sqlite-wal", "results.sqlite-shm"].contains(&f.as_str()));
    assert_eq!(files_under(&published), expected);
    // The database file alone holds everything: read it without its WAL.
    let copy = Store::open(&published).unwrap();
    assert_eq!(copy.dump_tables(false).unwrap(), store.dump_tables(false).unwrap());
    assert_eq!(copy.config(), store.config());
    // Nothing but the copy is left in the shared directory.
    let names: Vec<String> = std::fs::read_dir(&shared).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["shard-2-of-4"]);
}

#[test]
fn publishing_again_never_replaces_a_published_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(&tmp.path().join("local"), &config(7, None)).unwrap();
    run_episode(&store, 0, 1.0, 10);
    let shared = tmp.path().join("shared");
    assert_eq!(publish(&store, &shared, "run").unwrap(), shared.join("run"));
    assert_eq!(publish(&store, &shared, "run").unwrap(), shared.join("run.2"));
    assert_eq!(publish(&store, &shared, "run").unwrap(), shared.join("run.3"));
    for bad in ["", ".hidden", "a/b"] {
        let err = publish(&store, &shared, bad).unwrap_err();
        assert!(matches!(err, StoreError::BadPublishName { .. }), "{bad}: {err}");
    }
}
