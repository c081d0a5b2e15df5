//! The one error type of the store: every failure names the file, episode or field concerned.

use std::path::PathBuf;

/// Everything that can go wrong while creating, writing, reading or merging a run store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed; `fs_err` errors already name the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),

    /// An SQLite statement failed on `results.sqlite`.
    #[error("sqlite error on {path}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },

    /// `run.toml` could not be parsed.
    #[error("{path} is not a valid run configuration")]
    ConfigParse {
        /// The `run.toml` file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: toml::de::Error,
    },

    /// The run configuration could not be written as TOML.
    #[error("run configuration cannot be written as toml")]
    ConfigSerialize(#[source] toml::ser::Error),

    /// A directory expected to be a run has no `run.toml`.
    #[error("{dir} is not a specgap run directory: expected run.toml and results.sqlite in it")]
    NotAStore {
        /// The directory.
        dir: PathBuf,
    },

    /// Another live process is running episodes into this store.
    #[error("another specgap process{} is running episodes into {dir}; wait for it to end (or stop it) before running or resuming this run", pid.map_or_else(String::new, |p| format!(" (pid {p})")))]
    RunnerBusy {
        /// The run directory.
        dir: PathBuf,
        /// The holder's pid, when its lock file says.
        pid: Option<u32>,
    },

    /// `Store::create` was pointed at a non-empty directory that is not a run.
    #[error("{dir} is not empty and is not a specgap run; expected an empty or new directory")]
    NonEmptyDir {
        /// The directory.
        dir: PathBuf,
    },

    /// `Store::create` was pointed at a run of a different configuration.
    #[error("{dir} holds a run of a different configuration: {difference}")]
    ConfigMismatch {
        /// The directory.
        dir: PathBuf,
        /// The first difference found, in words.
        difference: String,
    },

    /// `--resume` of a run made under another protocol version than this build's.
    #[error(
        "{dir} was run under protocol version {stored}, and this specgap follows protocol version {current}: \
         resuming would mix episodes whose conditions mean different things. Finish it with the specgap \
         release that started it, or start a new run (specgap run ... --out <new directory>)"
    )]
    ProtocolMismatch {
        /// The run directory.
        dir: PathBuf,
        /// `protocol_version` in its run.toml.
        stored: u32,
        /// This build's protocol version.
        current: u32,
    },

    /// The database was written by a newer specgap.
    #[error("{path} has schema version {found}; this specgap reads versions up to {supported}")]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA user_version` found.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },

    /// `PRAGMA user_version` holds a version this build cannot migrate from (negative), or
    /// the tables do not have the shape of the version it names: a migration step failed.
    #[error(
        "{path} says it has schema version {found} (PRAGMA user_version), but {problem}; this specgap reads versions 1 to \
         {expected}. The file was not changed: restore it from a copy, or start a new run"
    )]
    SchemaMismatch {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA user_version` found.
        found: i64,
        /// This build's version.
        expected: i64,
        /// What does not fit, in words (with SQLite's message when a step failed).
        problem: String,
    },

    /// `results.sqlite` is there but holds nothing (0 bytes): its results are lost, and opening
    /// it would make an empty store of it.
    #[error(
        "{path} is empty (0 bytes): the run's results are lost or the file was truncated. Refusing to read it as a run \
         without episodes (or to run every episode again into it): restore it from a copy, or start a new run elsewhere"
    )]
    EmptyDatabase {
        /// The database file.
        path: PathBuf,
    },

    /// `results.sqlite` is missing from a run whose `episodes/` directory holds episodes: its
    /// results are lost, and creating a new database would run every episode again.
    #[error(
        "{path} is missing, but {episodes} holds {count} episode director{}: the run's results are lost. Refusing to \
         start the run over into it: restore the file from a copy, or start a new run elsewhere",
        if *count == 1 { "y" } else { "ies" }
    )]
    MissingDatabase {
        /// The database file.
        path: PathBuf,
        /// The episodes directory.
        episodes: PathBuf,
        /// Episode directories found.
        count: usize,
    },

    /// A row cannot be read as its table's row type (a value outside its column's set or of
    /// the wrong type); names the row by its key.
    #[error("{path}: the {table} row of {key_name} {key} cannot be read")]
    BadRow {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: &'static str,
        /// What the key names (`episode`, `panel`, `task`).
        key_name: &'static str,
        /// The key's value (the episode id), or `?` when unreadable.
        key: String,
        /// Why it cannot be read.
        #[source]
        source: Box<StoreError>,
    },

    /// WAL journaling could not be switched on.
    #[error("{path}: expected journal mode wal, sqlite reports `{mode}`")]
    NotWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite reported.
        mode: String,
    },

    /// A JSON value (result.json, a JSON column, a trajectory event) could not be written or read.
    #[error("{what}: invalid json")]
    Json {
        /// What was being converted.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },

    /// A text column holds a value outside its documented set.
    #[error("{table}.{column} holds `{value}`, which is not a known value")]
    BadValue {
        /// Table.
        table: &'static str,
        /// Column.
        column: &'static str,
        /// The stored text.
        value: String,
    },

    /// `begin_episode` on an episode that already has a final result.
    #[error("episode {id} is already {status}; reset it before running it again")]
    AlreadyFinished {
        /// Episode id.
        id: String,
        /// Its stored status.
        status: String,
    },

    /// An operation named an episode the store does not have.
    #[error("episode {id} is not in the store")]
    UnknownEpisode {
        /// Episode id.
        id: String,
    },

    /// `finish` was called with a status that is not final.
    #[error("episode {id}: expected a final status in finish, got `{status}`")]
    NotFinal {
        /// Episode id.
        id: String,
        /// The status given.
        status: String,
    },

    /// A trajectory has a damaged frame before its end (a damaged last frame is tolerated).
    #[error("{path}: zstd frame at byte {offset} cannot be decoded")]
    TrajectoryFrame {
        /// The trajectory file.
        path: PathBuf,
        /// Byte offset of the frame.
        offset: u64,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },

    /// A trajectory frame decoded to something that is not one event line.
    #[error("{path}: frame at byte {offset} is not one json event")]
    TrajectoryEvent {
        /// The trajectory file.
        path: PathBuf,
        /// Byte offset of the frame.
        offset: u64,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },

    /// `merge` was given no runs.
    #[error("merge needs at least one run directory")]
    MergeNoRuns,

    /// `merge` was given an output directory that is not empty.
    #[error("merge output {dir} is not empty; expected an empty or new directory")]
    MergeOutputNotEmpty {
        /// The output directory.
        dir: PathBuf,
    },

    /// Two runs given to `merge` are not shards of the same run.
    #[error("cannot merge {other} with {first}: {difference}")]
    MergeMismatch {
        /// The first run given.
        first: PathBuf,
        /// The run that differs from it.
        other: PathBuf,
        /// The first difference found, in words.
        difference: String,
    },

    /// Two runs given to `merge` have different plan hashes (`run.toml` `plan_hash`): they
    /// plan different episodes, so their shards do not partition one run.
    #[error(
        "cannot merge {other} with {first}: they are shards of different plans (plan hash {first_hash} in {first}, {other_hash} in {other}); their suites, flags or specgap builds differ — merge only shards started with the same command"
    )]
    MergePlanMismatch {
        /// The first run given with a plan hash.
        first: PathBuf,
        /// Its plan hash.
        first_hash: String,
        /// The run whose plan differs.
        other: PathBuf,
        /// Its plan hash.
        other_hash: String,
    },

    /// Two runs given to `merge` split their run into different numbers of shards.
    #[error(
        "cannot merge {other} with {first}: {first} holds shards of {first_count} and {other} shards of {other_count}; shards of one run share their count n of --shard i/n"
    )]
    MergeShardCounts {
        /// The first run given.
        first: PathBuf,
        /// Its shard count.
        first_count: u32,
        /// The run whose count differs.
        other: PathBuf,
        /// Its shard count.
        other_count: u32,
    },

    /// Some shards of the run are in none of the runs given (and a partial merge was not
    /// allowed).
    #[error(
        "cannot merge: {} of {count} {} missing; the runs given hold {given} — merge every shard, or allow a partial merge (specgap merge --allow-partial) to merge only these and record the missing ones",
        shard_list(.missing),
        if .missing.len() == 1 { "is" } else { "are" }
    )]
    MergeMissingShards {
        /// The shard count n.
        count: u32,
        /// The 1-based numbers of the missing shards, ascending.
        missing: Vec<u32>,
        /// What each run given holds, in words (`shard 1 (DIR), shards 2, 4 (DIR)`).
        given: String,
    },

    /// One shard is given twice and the copies differ (identical copies are merged once).
    #[error(
        "shard {shard}/{count} is given twice, in {first} and in {other}, and the copies differ: {difference} — keep the copy you mean and leave the other out"
    )]
    MergeDuplicateShard {
        /// The shard number.
        shard: u32,
        /// The shard count.
        count: u32,
        /// The copy read first.
        first: PathBuf,
        /// The other copy.
        other: PathBuf,
        /// How they differ, in words.
        difference: String,
    },

    /// The WAL could not be checkpointed before publishing: another connection holds it.
    #[error("cannot checkpoint {path} before publishing it: another process is using the store")]
    CheckpointBusy {
        /// The database.
        path: PathBuf,
    },

    /// A name to publish a run under that is not one plain directory name.
    #[error("cannot publish a run as {name:?}: the name must be one directory name, not empty, hidden or holding `/`")]
    BadPublishName {
        /// The name given.
        name: String,
    },

    /// One run directory is given to `merge` twice (the same path, or two paths to one
    /// directory).
    #[error("{}", same_run_message(first, second))]
    MergeSameRunTwice {
        /// The first path as given.
        first: PathBuf,
        /// The later path as given.
        second: PathBuf,
        /// The directory both lead to (canonical).
        dir: PathBuf,
    },

    /// A directory given to `merge` is neither a run nor holds any.
    #[error("{dir} is not a run directory (no run.toml) and holds none")]
    MergeNoRunsIn {
        /// The directory.
        dir: PathBuf,
    },

    /// A rater's labels of an audit sample are stored already.
    #[error(
        "rater {rater} has labelled audit sample {sample} already; to replace those labels with a corrected sheet, import it with --replace (another rater needs another name)"
    )]
    DuplicateRater {
        /// The sample.
        sample: String,
        /// The rater.
        rater: String,
    },

    /// A run given to `merge` holds audit samples (schema version 5): audits are drawn from
    /// the merged run, so its items and labels name one store.
    #[error("{dir} holds audit samples; merge the shards first, then draw audit samples from the merged run")]
    MergeAudited {
        /// The run holding audit samples.
        dir: PathBuf,
    },

    /// An episode appears in two runs with different results.
    #[error("episode {id} has different results in {first} and {other} (table {table})")]
    MergeConflict {
        /// Episode id.
        id: String,
        /// The run where it was first seen.
        first: PathBuf,
        /// The run where it differs.
        other: PathBuf,
        /// The first table whose rows differ.
        table: &'static str,
    },
}

/// `shard 3` or `shards 2, 4`.
pub(crate) fn shard_list(shards: &[u32]) -> String {
    let numbers: Vec<String> = shards.iter().map(u32::to_string).collect();
    let noun = if shards.len() == 1 { "shard" } else { "shards" };
    format!("{noun} {}", numbers.join(", "))
}

/// Attaches the database path to rusqlite errors.
pub(crate) trait SqlContext<T> {
    /// Converts an SQLite error into [`StoreError::Sqlite`] naming `path`.
    fn at(self, path: &std::path::Path) -> Result<T, StoreError>;
}

impl<T> SqlContext<T> for Result<T, rusqlite::Error> {
    fn at(self, path: &std::path::Path) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Sqlite { path: path.to_path_buf(), source })
    }
}

/// `execute` through the connection's prepared-statement cache: an episode runs the same
/// dozen statements, and parsing each anew cost about as much as running it.
pub(crate) trait ExecuteCached {
    /// Prepares `sql` (or takes it from the cache) and executes it with `params`.
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
}

impl ExecuteCached for rusqlite::Connection {
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }
}

/// Wraps a serde_json error with what was being converted. `what` becomes a `String` only
/// when there is an error: readers pass a `&'static str` for every row they parse.
pub(crate) fn json_error(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> StoreError {
    move |source| StoreError::Json { what: what.into(), source }
}

/// The message of [`StoreError::MergeSameRunTwice`] (as `specgap report` words its own): the
/// second spelling only when it differs.
fn same_run_message(first: &std::path::Path, second: &std::path::Path) -> String {
    // Compared as spelled: `Path` equality would call `run` and `run/.` the same.
    if first.as_os_str() == second.as_os_str() {
        format!("run directory {} is given twice; give each run once", first.display())
    } else {
        format!("run directory {} is given twice (again as {}); give each run once", first.display(), second.display())
    }
}
