//! The SQLite schema of `results.sqlite`, its version and the migration rule
//! (documented column by column in `docs/store-schema.md`).
//!
//! Migration rule: the version lives in `PRAGMA user_version`. Every schema change bumps
//! [`SCHEMA_VERSION`] and appends one step to `MIGRATIONS` that turns version N−1 into N using
//! only additive statements (new tables, new nullable or defaulted columns), so older stores
//! open after an in-place upgrade and their rows keep their meaning. Opening a store whose
//! version is newer than [`SCHEMA_VERSION`] is refused.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{SqlContext, StoreError};

/// Current schema version, stored in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 5;

/// How long a writer waits for another connection's lock before failing (milliseconds).
pub const BUSY_TIMEOUT_MS: u64 = 10_000;

/// Migration steps: `MIGRATIONS[i]` turns version `i + 1` into `i + 2`. A new store is made
/// at version 1 and taken through every step, so new and upgraded stores have one schema.
const MIGRATIONS: &[&str] = &[USAGE_ROLES_V2, START_VERDICT_V3, PANELS_V4, AUDITS_V5];

/// Version 3: `start_results.score` and `start_results.success`, the Score and Success of the
/// residual starting state by the task's scoring kind (NULL in rows written before); a state
/// with `success = 1` passes the verifier and is not a valid residual state (seed 001 §3.1;
/// docs/store-schema.md "Version 3").
const START_VERDICT_V3: &str = r#"
ALTER TABLE start_results ADD COLUMN score REAL;
ALTER TABLE start_results ADD COLUMN success INTEGER;
"#;

/// Version 2: `usage.role` also takes `judge`, `extractor` and `detector`. SQLite cannot
/// change a CHECK constraint in place, so the table is rebuilt under its own name with the
/// same columns, rows copied unchanged; no column changes name, unit or meaning
/// (docs/store-schema.md "Version 2").
const USAGE_ROLES_V2: &str = r#"
CREATE TABLE usage_v2 (
    episode          TEXT NOT NULL REFERENCES episodes(id),
    attempt          INTEGER NOT NULL CHECK (attempt >= 1),
    role             TEXT NOT NULL CHECK (role IN ('agent','user','judge','extractor','detector')),
    input_tokens     INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL,
    cached_tokens    INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    requests         INTEGER NOT NULL,
    retries          INTEGER NOT NULL,
    latency_ms       INTEGER NOT NULL,
    cost_usd         REAL NOT NULL,
    PRIMARY KEY (episode, attempt, role)
) STRICT;
INSERT INTO usage_v2 (episode, attempt, role, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
                      requests, retries, latency_ms, cost_usd)
    SELECT episode, attempt, role, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
           requests, retries, latency_ms, cost_usd FROM usage;
DROP TABLE usage;
ALTER TABLE usage_v2 RENAME TO usage;
"#;

/// Version 4: model panels (issue 16; seed 002 §4.1, A.3, A.9.3–A.9.5). `panels` names each
/// panel configuration a verdict was made with; `ballots` holds every ballot of every panel
/// model (request and response included); `extractions` the extraction panel's verdict on a
/// submission. Only new tables (docs/store-schema.md "Version 4").
const PANELS_V4: &str = r#"
CREATE TABLE panels (
    name            TEXT PRIMARY KEY,
    use             TEXT NOT NULL CHECK (use IN ('judge','extractor','detector')),
    config          TEXT NOT NULL,
    prompt_version  TEXT NOT NULL,
    prompt_hash     TEXT NOT NULL
) STRICT;
CREATE TABLE ballots (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    panel           TEXT NOT NULL,
    subject         TEXT NOT NULL,
    seat            INTEGER NOT NULL CHECK (seat >= 0),
    model           TEXT NOT NULL,
    position        INTEGER NOT NULL CHECK (position >= 0),
    prompt_version  TEXT NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('ballot','malformed','failed')),
    vote            TEXT,
    request         TEXT NOT NULL,
    response        TEXT NOT NULL,
    error           TEXT,
    PRIMARY KEY (episode, panel, subject, seat)
) STRICT;
CREATE TABLE extractions (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    panel           TEXT NOT NULL,
    k               INTEGER NOT NULL CHECK (k >= 1),
    status          TEXT NOT NULL CHECK (status IN ('scored','unavailable')),
    score           REAL,
    success         INTEGER,
    valid           INTEGER,
    objective       REAL,
    signature       TEXT,
    routes          INTEGER NOT NULL,
    agreeing        INTEGER NOT NULL,
    PRIMARY KEY (episode, panel, k)
) STRICT;
"#;

/// Version 5: human audits and simulator resamples (issue 18; seed 000 §5.6, App. G; seed 001
/// §3.2; seed 002 §4.3, A.8). `usage.role` also takes `summarizer` (the table rebuilt under
/// its own name with the wider `CHECK`, rows copied unchanged, as in version 2);
/// `audit_samples` / `audit_items` hold each drawn sample and its items, `audit_sheets` /
/// `audit_labels` every rater's imported labels, `resamples` the user-model replies
/// `specgap resample` got for a recorded request. Otherwise only new tables
/// (docs/store-schema.md "Version 5").
const AUDITS_V5: &str = r#"
CREATE TABLE usage_v5 (
    episode          TEXT NOT NULL REFERENCES episodes(id),
    attempt          INTEGER NOT NULL CHECK (attempt >= 1),
    role             TEXT NOT NULL CHECK (role IN ('agent','user','judge','extractor','detector','summarizer')),
    input_tokens     INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL,
    cached_tokens    INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    requests         INTEGER NOT NULL,
    retries          INTEGER NOT NULL,
    latency_ms       INTEGER NOT NULL,
    cost_usd         REAL NOT NULL,
    PRIMARY KEY (episode, attempt, role)
) STRICT;
INSERT INTO usage_v5 (episode, attempt, role, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
                      requests, retries, latency_ms, cost_usd)
    SELECT episode, attempt, role, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
           requests, retries, latency_ms, cost_usd FROM usage;
DROP TABLE usage;
ALTER TABLE usage_v5 RENAME TO usage;
CREATE TABLE audit_samples (
    id              TEXT PRIMARY KEY,
    unit            TEXT NOT NULL,
    rubric          TEXT NOT NULL,
    manifest        TEXT NOT NULL
) STRICT;
CREATE TABLE audit_items (
    sample          TEXT NOT NULL REFERENCES audit_samples(id),
    item            TEXT NOT NULL,
    position        INTEGER NOT NULL CHECK (position >= 0),
    run             INTEGER NOT NULL CHECK (run >= 0),
    episode         TEXT,
    stratum         TEXT NOT NULL,
    cluster         TEXT NOT NULL,
    weight          REAL NOT NULL,
    judges          TEXT NOT NULL,
    PRIMARY KEY (sample, item)
) STRICT;
CREATE TABLE audit_sheets (
    sample          TEXT NOT NULL REFERENCES audit_samples(id),
    rater           TEXT NOT NULL,
    path            TEXT NOT NULL,
    sha256          TEXT NOT NULL,
    rows            INTEGER NOT NULL,
    imported_ts     INTEGER NOT NULL,
    PRIMARY KEY (sample, rater)
) STRICT;
CREATE TABLE audit_labels (
    sample          TEXT NOT NULL,
    item            TEXT NOT NULL,
    rater           TEXT NOT NULL,
    label           TEXT NOT NULL,
    value           TEXT NOT NULL,
    PRIMARY KEY (sample, item, rater, label),
    FOREIGN KEY (sample, rater) REFERENCES audit_sheets(sample, rater),
    FOREIGN KEY (sample, item) REFERENCES audit_items(sample, item)
) STRICT;
CREATE TABLE resamples (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    batch           TEXT NOT NULL,
    request         INTEGER NOT NULL CHECK (request >= 0),
    k               INTEGER NOT NULL CHECK (k >= 1),
    purpose         TEXT NOT NULL CHECK (purpose IN ('answer','feedback')),
    role            TEXT NOT NULL CHECK (role IN ('user')),
    reply           TEXT,
    error           TEXT,
    usage           TEXT NOT NULL,
    PRIMARY KEY (episode, batch, request, k)
) STRICT;
"#;

/// Tables in dependency order (parents first), with the column naming the episode they belong
/// to (`None` for run-level tables).
pub(crate) const TABLES: &[(&str, Option<&str>)] = &[
    ("episodes", Some("id")),
    ("start_results", Some("episode")),
    ("submissions", Some("episode")),
    ("requirement_outcomes", Some("episode")),
    ("tests", Some("episode")),
    ("deliveries", Some("episode")),
    ("questions", Some("episode")),
    ("judgements", Some("episode")),
    ("usage", Some("episode")),
    ("errors", Some("episode")),
    ("ballots", Some("episode")),
    ("extractions", Some("episode")),
    ("resamples", Some("episode")),
    ("not_applicable", None),
    ("panels", None),
    ("audit_samples", None),
    ("audit_items", None),
    ("audit_sheets", None),
    ("audit_labels", None),
];

/// Whether a column holds a wall-clock time or a duration, which differ between two runs of
/// the same seed: by naming rule, every such column ends in `_ts` or `_ms`.
pub fn is_volatile_column(name: &str) -> bool {
    name.ends_with("_ts") || name.ends_with("_ms")
}

const SCHEMA_V1: &str = r#"
CREATE TABLE episodes (
    id              TEXT PRIMARY KEY,
    task            TEXT NOT NULL,
    task_hash       TEXT NOT NULL,
    agent           TEXT NOT NULL,
    agent_hash      TEXT NOT NULL,
    user            TEXT NOT NULL,
    user_hash       TEXT NOT NULL,
    condition       TEXT NOT NULL,
    start           TEXT NOT NULL,
    repeat          INTEGER NOT NULL,
    seed            TEXT NOT NULL,
    family          TEXT NOT NULL,
    scoring_kind    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN
                        ('running','finished','not_applicable','infra_error','eval_error','interrupted')),
    end_reason      TEXT,
    attempts        INTEGER NOT NULL,
    submissions     INTEGER NOT NULL DEFAULT 0,
    final_score     REAL,
    final_success   INTEGER,
    turns           INTEGER NOT NULL DEFAULT 0,
    tool_calls      INTEGER NOT NULL DEFAULT 0,
    wall_ms         INTEGER NOT NULL DEFAULT 0,
    started_ts      INTEGER NOT NULL,
    ended_ts        INTEGER,
    error           TEXT
) STRICT;

CREATE TABLE start_results (
    episode         TEXT PRIMARY KEY REFERENCES episodes(id),
    state           TEXT NOT NULL,
    reward          REAL
) STRICT;

CREATE TABLE submissions (
    episode             TEXT NOT NULL REFERENCES episodes(id),
    k                   INTEGER NOT NULL CHECK (k >= 1),
    automatic           INTEGER NOT NULL,
    agent_declared      INTEGER NOT NULL,
    valid_evaluation    INTEGER NOT NULL,
    kind                TEXT,
    score               REAL,
    success             INTEGER,
    reward              REAL,
    failing_requirement TEXT,
    error               TEXT,
    diff_bytes          INTEGER NOT NULL,
    PRIMARY KEY (episode, k)
) STRICT;

CREATE TABLE requirement_outcomes (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    k               INTEGER NOT NULL CHECK (k >= 0),
    requirement     TEXT NOT NULL,
    pass            INTEGER NOT NULL,
    failure_mode    TEXT,
    measured        TEXT NOT NULL,
    detail          TEXT,
    PRIMARY KEY (episode, k, requirement)
) STRICT;

CREATE TABLE tests (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    k               INTEGER NOT NULL CHECK (k >= 0),
    test            TEXT NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('pass','fail','error','skip')),
    PRIMARY KEY (episode, k, test)
) STRICT;

CREATE TABLE deliveries (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    k               INTEGER NOT NULL CHECK (k >= 0),
    valid           INTEGER NOT NULL,
    objective       REAL,
    signature       TEXT,
    violations      TEXT NOT NULL,
    PRIMARY KEY (episode, k)
) STRICT;

CREATE TABLE questions (
    episode         TEXT NOT NULL REFERENCES episodes(id),
    idx             INTEGER NOT NULL CHECK (idx >= 0),
    turn            INTEGER NOT NULL,
    text            TEXT NOT NULL,
    answer          TEXT NOT NULL,
    matched_targets TEXT NOT NULL,
    PRIMARY KEY (episode, idx)
) STRICT;

CREATE TABLE judgements (
    episode                  TEXT NOT NULL REFERENCES episodes(id),
    judge                    TEXT NOT NULL,
    target                   TEXT NOT NULL,
    verdict                  TEXT NOT NULL,
    matched_question_indices TEXT NOT NULL,
    PRIMARY KEY (episode, judge, target)
) STRICT;

CREATE TABLE usage (
    episode          TEXT NOT NULL REFERENCES episodes(id),
    attempt          INTEGER NOT NULL CHECK (attempt >= 1),
    role             TEXT NOT NULL CHECK (role IN ('agent','user')),
    input_tokens     INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL,
    cached_tokens    INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    requests         INTEGER NOT NULL,
    retries          INTEGER NOT NULL,
    latency_ms       INTEGER NOT NULL,
    cost_usd         REAL NOT NULL,
    PRIMARY KEY (episode, attempt, role)
) STRICT;

CREATE TABLE errors (
    episode          TEXT NOT NULL REFERENCES episodes(id),
    attempt          INTEGER NOT NULL CHECK (attempt >= 1),
    idx              INTEGER NOT NULL CHECK (idx >= 0),
    class            TEXT NOT NULL CHECK (class IN ('infrastructure','evaluation')),
    message          TEXT NOT NULL,
    stderr_tail      TEXT NOT NULL,
    deterministic    INTEGER NOT NULL,
    PRIMARY KEY (episode, attempt, idx)
) STRICT;

CREATE TABLE not_applicable (
    task            TEXT NOT NULL,
    agent           TEXT NOT NULL,
    condition       TEXT NOT NULL,
    start           TEXT NOT NULL,
    reason          TEXT NOT NULL,
    PRIMARY KEY (task, agent, condition, start)
) STRICT;

CREATE INDEX episodes_by_status ON episodes(status);
"#;

/// Opens (creating if needed) `results.sqlite` at `path`: WAL journaling, foreign keys on,
/// busy timeout [`BUSY_TIMEOUT_MS`], schema created or migrated to [`SCHEMA_VERSION`].
///
/// A missing file is made whole under a temporary name and then renamed into place
/// ([`create_database`]), so `results.sqlite` is never seen half made: an empty one is always
/// a lost store, and is refused.
///
/// # Errors
/// [`StoreError::Sqlite`], [`StoreError::NotWal`], [`StoreError::SchemaTooNew`],
/// [`StoreError::SchemaMismatch`], [`StoreError::EmptyDatabase`].
pub(crate) fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    if !refuse_empty(path)? {
        create_database(path)?;
    }
    configure(path)
}

/// Whether the file at `path` exists; [`StoreError::EmptyDatabase`] when it holds 0 bytes.
pub(crate) fn refuse_empty(path: &Path) -> Result<bool, StoreError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() == 0 => Err(StoreError::EmptyDatabase { path: path.to_path_buf() }),
        Ok(_) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) => fs_err::metadata(path).map(|_| true).map_err(StoreError::from),
    }
}

/// Makes a new database at `path`: the schema is written into `<path>.new` (left over from an
/// interrupted creation, it is discarded first), which is closed and then renamed to `path`.
fn create_database(path: &Path) -> Result<(), StoreError> {
    let mut name = path.as_os_str().to_os_string();
    name.push(".new");
    let staging = std::path::PathBuf::from(name);
    for suffix in ["", "-wal", "-shm"] {
        let mut leftover = staging.as_os_str().to_os_string();
        leftover.push(suffix);
        match std::fs::remove_file(&leftover) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => fs_err::remove_file(&leftover)?,
        }
    }
    let conn = configure(&staging)?;
    conn.close().map_err(|(_, source)| StoreError::Sqlite { path: staging.clone(), source })?;
    fs_err::rename(&staging, path)?;
    Ok(())
}

/// Opens the database at `path` with the store's settings and brings its schema up to date.
fn configure(path: &Path) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path).at(path)?;
    conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS)).at(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).at(path)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::NotWal { path: path.to_path_buf(), mode });
    }
    // NORMAL is durable against process crashes in WAL mode; only power loss can drop the
    // last transactions, which a resume re-runs.
    conn.pragma_update(None, "synchronous", "NORMAL").at(path)?;
    conn.pragma_update(None, "foreign_keys", "ON").at(path)?;
    // Room for every statement the writer repeats (the default keeps 16).
    conn.set_prepared_statement_cache_capacity(64);
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// Opens a second, read-only connection to an existing `results.sqlite` at `path` (for
/// reading tables in parallel): busy timeout [`BUSY_TIMEOUT_MS`], no schema check or
/// migration (the store's own connection did that when it was opened).
///
/// # Errors
/// [`StoreError::Sqlite`] when the file cannot be opened.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).at(path)?;
    conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS)).at(path)?;
    Ok(conn)
}

/// Brings the schema to [`SCHEMA_VERSION`] in one transaction.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).at(path)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0)).at(path)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew { path: path.to_path_buf(), found, supported: SCHEMA_VERSION });
    }
    let mismatch = |problem: String| StoreError::SchemaMismatch { path: path.to_path_buf(), found, expected: SCHEMA_VERSION, problem };
    if found < 0 {
        return Err(mismatch("no schema version is negative".into()));
    }
    let mut version = found;
    if version == 0 {
        // A new database has no table; version 0 over existing tables is a damaged version.
        let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", [], |row| row.get(0)).at(path)?;
        if tables > 0 {
            return Err(mismatch(format!("it already holds {tables} tables (version 0 is a new, empty database)")));
        }
        tx.execute_batch(SCHEMA_V1).at(path)?;
        version = 1;
    }
    let first = usize::try_from(version - 1).unwrap_or(0);
    for (i, step) in MIGRATIONS.iter().enumerate().skip(first) {
        tx.execute_batch(step).map_err(|source| {
            let (from, to) = (i + 1, i + 2);
            // SQLite's message goes in the sentence; its error code adds nothing a reader can act on.
            let sqlite = match &source {
                rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
                other => other.to_string(),
            };
            mismatch(format!("its tables do not have that version's shape: the step from version {from} to {to} fails ({sqlite})"))
        })?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION).at(path)?;
    tx.commit().at(path)
}
