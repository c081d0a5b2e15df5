//! Creating and opening stores: run.toml, WAL, schema version, refusals.

use specgap_store::{SCHEMA_VERSION, Store};

use crate::{config, run_episode};

#[test]
fn create_writes_run_toml_and_opens_it_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let cfg = config(7, Some([1, 2]));
    let store = Store::create(&dir, &cfg).unwrap();
    assert_eq!(store.config(), &cfg);
    assert!(dir.join("episodes").is_dir());
    drop(store);
    let reopened = Store::open(&dir).unwrap();
    assert_eq!(reopened.config(), &cfg);
    let text = std::fs::read_to_string(dir.join("run.toml")).unwrap();
    let parsed: specgap_protocol::run::RunConfig = toml::from_str(&text).unwrap();
    assert_eq!(parsed, cfg);
}

#[test]
fn database_is_in_wal_mode_with_schema_version() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let conn = rusqlite::Connection::open(store.db_path()).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 5);
    assert_eq!(SCHEMA_VERSION, 5);
}

#[test]
fn create_refuses_a_non_empty_directory_that_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let err = Store::create(tmp.path(), &config(7, None)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{} is not empty and is not a specgap run; expected an empty or new directory", tmp.path().display())
    );
}

#[test]
fn create_refuses_a_run_of_another_configuration_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    Store::create(tmp.path(), &config(7, None)).unwrap();
    let err = Store::create(tmp.path(), &config(8, None)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{} holds a run of a different configuration: `seed` differs: 7 in the store, 8 in the new configuration",
            tmp.path().display()
        )
    );
}

#[test]
fn create_on_a_run_of_the_same_configuration_opens_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let id = run_episode(&store, 0, 1.0, 10);
    drop(store);
    let again = Store::create(tmp.path(), &config(7, None)).unwrap();
    let ids: Vec<String> = again.episodes().unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![id]);
}

#[test]
fn open_refuses_a_directory_without_run_toml() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Store::open(tmp.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{} is not a specgap run directory: expected run.toml and results.sqlite in it", tmp.path().display())
    );
}

#[test]
fn open_refuses_a_newer_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let db = store.db_path().to_path_buf();
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Store::open(tmp.path()).unwrap_err();
    assert_eq!(err.to_string(), format!("{} has schema version 99; this specgap reads versions up to 5", db.display()));
}

#[test]
fn worker_threads_share_one_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|repeat| {
            let store = store.clone();
            std::thread::spawn(move || run_episode(&store, repeat, 1.0, 10))
        })
        .collect();
    let mut ids: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    ids.sort();
    let stored: Vec<String> = store.episodes().unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(stored, ids);
    assert_eq!(store.submissions().unwrap().len(), 4);
}

#[test]
fn store_and_writer_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<Store>();
    assert_send::<specgap_store::EpisodeWriter>();
}

#[test]
fn one_runner_at_a_time_holds_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    assert!(!specgap_store::runner_alive(dir).unwrap(), "no lock file: no runner");
    let first = specgap_store::lock_runner(dir).unwrap();
    assert!(specgap_store::runner_alive(dir).unwrap());
    let second = specgap_store::lock_runner(dir).unwrap_err();
    assert_eq!(
        second.to_string(),
        format!(
            "another specgap process (pid {}) is running episodes into {}; wait for it to end (or stop it) before running or resuming this run",
            std::process::id(),
            dir.display()
        )
    );
    drop(first);
    assert!(!specgap_store::runner_alive(dir).unwrap());
    let _again = specgap_store::lock_runner(dir).unwrap();
}

/// A runner that meets a store another runner is making is refused by the lock. (The race this
/// guards — a runner that looked before locking saw the winner's first files but not yet its
/// lock, and said "not empty" — needs two processes; `two_runs_racing_…` in the CLI tests runs
/// them. Since the lock is taken first, what a runner refuses is decided while holding it.)
#[test]
fn a_runner_meeting_a_store_being_made_is_refused_by_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    // The winner holds the lock and has written a first file of its store.
    std::fs::create_dir(&dir).unwrap();
    let winner = specgap_store::lock_runner(&dir).unwrap();
    std::fs::create_dir(dir.join("episodes")).unwrap();
    let err = Store::create_for_runner(&dir, &config(7, None)).unwrap_err();
    assert!(matches!(err, specgap_store::StoreError::RunnerBusy { .. }), "{err}");
    drop(winner);
}

#[test]
fn a_runner_refusing_a_foreign_directory_leaves_no_lock_file_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let err = Store::create_for_runner(tmp.path(), &config(7, None)).unwrap_err();
    assert!(matches!(err, specgap_store::StoreError::NonEmptyDir { .. }), "{err}");
    let names: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["notes.txt"]);
}

/// The `usage` table of schema version 1, whose role check knew only `agent` and `user`, and
/// none of the columns and tables added since.
const USAGE_V1: &str = "CREATE TABLE usage_old (
    episode TEXT NOT NULL REFERENCES episodes(id), attempt INTEGER NOT NULL CHECK (attempt >= 1),
    role TEXT NOT NULL CHECK (role IN ('agent','user')), input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,
    requests INTEGER NOT NULL, retries INTEGER NOT NULL, latency_ms INTEGER NOT NULL, cost_usd REAL NOT NULL,
    PRIMARY KEY (episode, attempt, role)) STRICT;
INSERT INTO usage_old SELECT * FROM usage;
DROP TABLE usage;
ALTER TABLE usage_old RENAME TO usage;
ALTER TABLE start_results DROP COLUMN score;
ALTER TABLE start_results DROP COLUMN success;
DROP TABLE ballots; DROP TABLE extractions; DROP TABLE panels;
DROP TABLE resamples; DROP TABLE audit_labels; DROP TABLE audit_sheets; DROP TABLE audit_items; DROP TABLE audit_samples;
PRAGMA user_version = 1;";

fn usage(requests: u64, cost_usd: f64) -> specgap_protocol::event::Usage {
    specgap_protocol::event::Usage { requests, input_tokens: 10 * requests, cost_usd, ..Default::default() }
}

#[test]
fn a_version_1_store_is_upgraded_in_place_keeping_its_usage_rows_and_takes_the_new_roles_and_columns() {
    use specgap_store::Role;
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let mut writer = store.begin_episode(&crate::key(0, "clean"), &crate::meta()).unwrap();
    writer.record_usage(Role::Agent, &usage(3, 0.25)).unwrap();
    writer.record_usage(Role::User, &usage(1, 0.0)).unwrap();
    let id = writer.id().to_string();
    drop(writer);
    let before = store.usage().unwrap();
    let db = store.db_path().to_path_buf();
    drop(store);
    // Turn the database back into a version-1 one, and check that it refuses a judge row.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(USAGE_V1).unwrap();
    let refused = conn.execute("INSERT INTO usage VALUES (?1, 1, 'judge', 0, 0, 0, 0, 1, 0, 0, 0.0)", [&id]);
    assert!(refused.is_err(), "the version-1 table refuses the judge role");
    drop(conn);

    let store = Store::open(tmp.path()).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, specgap_store::SCHEMA_VERSION);
    assert_eq!(store.usage().unwrap(), before);
    // Version 3 added the starting state's verdict columns.
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('start_results')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(columns, ["episode", "state", "reward", "score", "success"]);
    let mut writer = store.begin_episode(&crate::key(0, "clean"), &crate::meta()).unwrap();
    for role in [Role::Judge, Role::Extractor, Role::Detector, Role::Summarizer] {
        writer.record_usage(role, &usage(2, 0.5)).unwrap();
    }
    let roles: Vec<(u32, &str, u64)> = store.usage().unwrap().iter().map(|u| (u.attempt, u.role.as_str(), u.usage.requests)).collect();
    assert_eq!(roles, [(1, "agent", 3), (1, "user", 1), (2, "detector", 2), (2, "extractor", 2), (2, "judge", 2), (2, "summarizer", 2)]);
}

/// `config` (which, like a store written before the field existed, names no protocol version)
/// with `protocol_version` set.
fn config_of_protocol(version: u32) -> specgap_protocol::run::RunConfig {
    let mut config = config(7, None);
    config.protocol_version = version;
    config
}

#[test]
fn resume_refuses_a_run_of_another_protocol_version() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp.path().join("old");
    let store = Store::create(&old, &config(7, None)).unwrap();
    assert_eq!(store.config().protocol_version, 1, "a run.toml without the field is protocol 1");
    drop(store);
    let err = Store::open_for_resume(&old).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{} was run under protocol version 1, and this specgap follows protocol version {}: resuming would mix \
             episodes whose conditions mean different things. Finish it with the specgap release that started it, \
             or start a new run (specgap run ... --out <new directory>)",
            old.display(),
            specgap_protocol::run::PROTOCOL_VERSION
        )
    );
    // Reading it (show, report) is fine, and a run of this build's protocol resumes.
    Store::open(&old).unwrap();
    let current = tmp.path().join("current");
    Store::create(&current, &config_of_protocol(specgap_protocol::run::PROTOCOL_VERSION)).unwrap();
    let reopened = Store::open_for_resume(&current).unwrap();
    assert_eq!(reopened.config().protocol_version, 5);
    let text = std::fs::read_to_string(current.join("run.toml")).unwrap();
    assert!(text.contains("protocol_version = 5\n"), "{text}");
}

#[test]
fn create_refuses_a_run_of_another_protocol_version() {
    let tmp = tempfile::tempdir().unwrap();
    Store::create(tmp.path(), &config_of_protocol(1)).unwrap();
    let err = Store::create(tmp.path(), &config_of_protocol(2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{} holds a run of a different configuration: the protocol version differs: 1 in the store, 2 in the new \
             configuration (what a condition means changed between them, so their episodes cannot form one run)",
            tmp.path().display()
        )
    );
}

/// Sets `PRAGMA user_version` of the store in `dir` to `version`.
fn set_user_version(dir: &std::path::Path, version: i64) {
    let conn = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    conn.pragma_update(None, "user_version", version).unwrap();
}

fn open_error(dir: &std::path::Path) -> String {
    specgap_protocol::text::error_chain(&Store::open(dir).expect_err("the store is refused"))
}

#[test]
fn a_wrong_user_version_names_the_file_and_both_versions_and_changes_nothing() {
    // Issue 31 item 12: user_version 2 on a version-5 store gave "duplicate column name: score".
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    run_episode(&store, 0, 1.0, 10);
    let db = store.db_path().to_path_buf();
    drop(store);
    set_user_version(tmp.path(), 2);
    assert_eq!(
        open_error(tmp.path()),
        format!(
            "{} says it has schema version 2 (PRAGMA user_version), but its tables do not have that version's shape: the \
             step from version 2 to 3 fails (duplicate column name: score); this specgap reads versions 1 to 5. The file \
             was not changed: restore it from a copy, or start a new run",
            db.display()
        )
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 2, "the failed migration was rolled back");
}

#[test]
fn a_negative_or_zero_user_version_over_existing_tables_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Store::create(tmp.path(), &config(7, None)).unwrap().db_path().to_path_buf();
    set_user_version(tmp.path(), -1);
    assert_eq!(
        open_error(tmp.path()),
        format!(
            "{} says it has schema version -1 (PRAGMA user_version), but no schema version is negative; this specgap reads \
             versions 1 to 5. The file was not changed: restore it from a copy, or start a new run",
            db.display()
        )
    );
    set_user_version(tmp.path(), 0);
    assert_eq!(
        open_error(tmp.path()),
        format!(
            "{} says it has schema version 0 (PRAGMA user_version), but it already holds 19 tables (version 0 is a new, \
             empty database); this specgap reads versions 1 to 5. The file was not changed: restore it from a copy, or \
             start a new run",
            db.display()
        )
    );
    set_user_version(tmp.path(), 99);
    assert_eq!(open_error(tmp.path()), format!("{} has schema version 99; this specgap reads versions up to 5", db.display()));
}

#[test]
fn a_zero_byte_database_is_refused_by_open_and_open_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Store::create(tmp.path(), &config(7, None)).unwrap().db_path().to_path_buf();
    std::fs::File::create(&db).unwrap();
    let message = format!(
        "{} is empty (0 bytes): the run's results are lost or the file was truncated. Refusing to read it as a run without \
         episodes (or to run every episode again into it): restore it from a copy, or start a new run elsewhere",
        db.display()
    );
    assert_eq!(open_error(tmp.path()), message);
    assert_eq!(Store::open_read_only(tmp.path()).err().map(|e| e.to_string()), Some(message));
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
}

#[test]
fn a_new_database_is_made_under_a_staging_name_and_renamed_into_place() {
    let tmp = tempfile::tempdir().unwrap();
    // A staging file left by a creation that was killed is discarded.
    std::fs::create_dir_all(tmp.path().join("run")).unwrap();
    let dir = tmp.path().join("run");
    let store = Store::create(&dir, &config(7, None)).unwrap();
    drop(store);
    std::fs::remove_file(dir.join("results.sqlite")).unwrap();
    std::fs::write(dir.join("results.sqlite.new"), b"half made").unwrap();
    let store = Store::open(&dir).unwrap();
    assert_eq!(store.episodes().unwrap().len(), 0);
    assert!(!dir.join("results.sqlite.new").exists());
}

#[test]
fn one_bad_row_is_named_by_its_table_and_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let good = run_episode(&store, 0, 1.0, 10);
    let bad = run_episode(&store, 1, 0.5, 10);
    let db = store.db_path().to_path_buf();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE episodes SET end_reason = 'exploded' WHERE id = ?1", [&bad]).unwrap();
    let err = store.episodes().expect_err("the bad row is refused");
    assert_eq!(
        specgap_protocol::text::error_chain(&err),
        format!(
            "{}: the episodes row of episode {bad} cannot be read: episodes.end_reason holds `exploded`, which is not a known value",
            db.display()
        )
    );
    // Reading the other episode alone still works.
    assert_eq!(store.episode(&good).unwrap().map(|row| row.id), Some(good));
}

#[test]
fn usage_total_sums_every_row_of_every_role_and_episode_and_is_zero_on_an_empty_store() {
    use specgap_protocol::event::Usage;
    use specgap_store::Role;
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    assert_eq!(store.usage_total().unwrap(), Usage::default());
    let mut first = store.begin_episode(&crate::key(0, "clean"), &crate::meta()).unwrap();
    first
        .record_usage(
            Role::Agent,
            &Usage {
                input_tokens: 100,
                output_tokens: 7,
                cached_tokens: 40,
                requests: 2,
                latency_ms: 900,
                cost_usd: 0.25,
                ..Usage::default()
            },
        )
        .unwrap();
    first
        .record_usage(
            Role::User,
            &Usage { input_tokens: 11, output_tokens: 3, reasoning_tokens: 2, requests: 1, retries: 1, cost_usd: 0.5, ..Usage::default() },
        )
        .unwrap();
    let mut second = store.begin_episode(&crate::key(1, "clean"), &crate::meta()).unwrap();
    second
        .record_usage(
            Role::Agent,
            &Usage { input_tokens: 5, output_tokens: 1, requests: 1, latency_ms: 100, cost_usd: 0.125, ..Usage::default() },
        )
        .unwrap();
    let by_rows = store.usage().unwrap().iter().fold(Usage::default(), |mut sum, row| {
        sum.add(&row.usage);
        sum
    });
    let expected = Usage {
        input_tokens: 116,
        output_tokens: 11,
        cached_tokens: 40,
        reasoning_tokens: 2,
        requests: 4,
        retries: 1,
        latency_ms: 1000,
        cost_usd: 0.875,
    };
    assert_eq!(by_rows, expected);
    assert_eq!(store.usage_total().unwrap(), expected);
}
