//! [`Store`]: one run directory — `run.toml`, `results.sqlite` and `episodes/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, params};
use specgap_protocol::run::{EpisodeKey, RunConfig};

use crate::config::{self, EXACT};
use crate::error::{ExecuteCached, SqlContext, StoreError, json_error};
use crate::files;
use crate::read;
use crate::rows::*;
use crate::schema::{self, TABLES};
use crate::writer::EpisodeWriter;

/// File name of the database inside a run directory.
pub const RESULTS_DB: &str = "results.sqlite";

/// Directory of per-episode files inside a run directory.
pub const EPISODES_DIR: &str = "episodes";

/// An open run store. Cheap to clone; clones share one SQLite connection behind a mutex, so
/// a `Store` can be handed to every worker thread (writes are a few small statements per
/// event of interest, so one serialized connection is not a bottleneck, and it avoids
/// `SQLITE_BUSY` between our own writers). Other processes (`specgap show` during a run) read
/// concurrently thanks to WAL mode.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    db_path: PathBuf,
    config: RunConfig,
    conn: Mutex<Connection>,
}

impl Store {
    /// Makes `dir` a run store for `config`: creates the directory, writes `run.toml`, creates
    /// `results.sqlite` (schema [`schema::SCHEMA_VERSION`], WAL) and `episodes/`. When `dir`
    /// already holds a run of exactly this configuration, that store is opened instead, so
    /// creating and resuming are the same call.
    ///
    /// # Errors
    /// [`StoreError::NonEmptyDir`] when `dir` has files but no `run.toml`;
    /// [`StoreError::ConfigMismatch`] naming the first differing field when it holds another
    /// configuration; file and SQLite errors.
    pub fn create(dir: &Path, config: &RunConfig) -> Result<Store, StoreError> {
        if dir.join(config::RUN_TOML).is_file() {
            let existing = config::read_config(dir)?;
            if let Some(difference) = config::config_difference(&existing, "the store", config, "the new configuration", EXACT) {
                return Err(StoreError::ConfigMismatch { dir: dir.to_path_buf(), difference });
            }
            return Store::open(dir);
        }
        // The runner's lock may be there already (Store::create_for_runner).
        if !files::is_missing_or_only(dir, &[crate::runner_lock::RUNNER_LOCK])? {
            return Err(StoreError::NonEmptyDir { dir: dir.to_path_buf() });
        }
        fs_err::create_dir_all(dir.join(EPISODES_DIR))?;
        // run.toml first: a crash right after it leaves a store that `open` completes (the
        // database is created on open), never a directory `create` would refuse.
        config::write_config(dir, config)?;
        Store::open(dir)
    }

    /// [`Store::create`] for the process that will run episodes into the store: takes the
    /// store's runner lock ([`crate::lock_runner`]) before creating anything but the directory
    /// and the lock file, and only then looks at what the directory holds, so of two runs racing
    /// for one new directory the second is refused with the first's pid (or, once the first is
    /// done, meets its finished store) instead of a half-made one. Looking first and locking
    /// after left a window in which the loser saw the winner's first files but not yet its lock.
    ///
    /// # Errors
    /// [`StoreError::NonEmptyDir`] (a lock file this call made in such a directory is removed
    /// again), [`StoreError::RunnerBusy`], and those of [`Store::create`].
    pub fn create_for_runner(dir: &Path, config: &RunConfig) -> Result<(Store, crate::RunnerLock), StoreError> {
        fs_err::create_dir_all(dir)?;
        let lock_path = dir.join(crate::runner_lock::RUNNER_LOCK);
        let lock_existed = lock_path.exists();
        let lock = crate::lock_runner(dir)?;
        match Store::create(dir, config) {
            Ok(store) => Ok((store, lock)),
            Err(error @ StoreError::NonEmptyDir { .. }) => {
                drop(lock);
                if !lock_existed {
                    // Leave a foreign directory as it was found.
                    let _ = fs_err::remove_file(&lock_path);
                }
                Err(error)
            }
            Err(error) => Err(error),
        }
    }

    /// Opens the run store in `dir` (for resume, `show`, `report`), upgrading its schema in
    /// place when it is older than this build's.
    ///
    /// # Errors
    /// [`StoreError::NotAStore`] without `run.toml`; [`StoreError::ConfigParse`];
    /// [`StoreError::SchemaTooNew`]; SQLite errors.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let config = config::read_config(dir)?;
        fs_err::create_dir_all(dir.join(EPISODES_DIR))?;
        let db_path = dir.join(RESULTS_DB);
        if !schema::refuse_empty(&db_path)? {
            refuse_lost_database(dir, &db_path)?;
        }
        let conn = schema::open_connection(&db_path)?;
        Ok(Store::from_parts(dir, db_path, config, conn))
    }

    /// Opens the run store in `dir` for reading only (the viewer): the connection is opened
    /// read-only and nothing is created. A store of the current schema version is not
    /// written at all. A store of an older version is first upgraded in place as
    /// [`Store::open`] does (`show` and `report` do the same; the migration rule keeps every
    /// step additive), since this build's readers select the columns the steps add; it is then
    /// reopened read-only. A store written by a newer build is refused. Every write through
    /// the returned store fails.
    ///
    /// # Errors
    /// [`StoreError::NotAStore`] without `run.toml` or `results.sqlite`;
    /// [`StoreError::ConfigParse`]; [`StoreError::SchemaTooNew`]; SQLite errors.
    pub fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        let config = config::read_config(dir)?;
        let db_path = dir.join(RESULTS_DB);
        if !db_path.is_file() {
            return Err(StoreError::NotAStore { dir: dir.to_path_buf() });
        }
        schema::refuse_empty(&db_path)?;
        let conn = schema::open_reader(&db_path)?;
        let found: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).at(&db_path)?;
        if found > schema::SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew { path: db_path, found, supported: schema::SCHEMA_VERSION });
        }
        if found < schema::SCHEMA_VERSION {
            drop(conn);
            drop(Store::open(dir)?);
            let conn = schema::open_reader(&db_path)?;
            return Ok(Store::from_parts(dir, db_path, config, conn));
        }
        Ok(Store::from_parts(dir, db_path, config, conn))
    }

    /// Opens the run store in `dir` to run more episodes into it (`--resume`): as
    /// [`Store::open`], but a run made under another protocol version than this build's
    /// ([`specgap_protocol::run::PROTOCOL_VERSION`]) is refused, since its finished episodes
    /// and the new ones would follow different rules.
    ///
    /// # Errors
    /// [`StoreError::ProtocolMismatch`], and those of [`Store::open`].
    pub fn open_for_resume(dir: &Path) -> Result<Store, StoreError> {
        let store = Store::open(dir)?;
        let stored = store.config().protocol_version;
        let current = specgap_protocol::run::PROTOCOL_VERSION;
        if stored != current {
            return Err(StoreError::ProtocolMismatch { dir: dir.to_path_buf(), stored, current });
        }
        Ok(store)
    }

    fn from_parts(dir: &Path, db_path: PathBuf, config: RunConfig, conn: Connection) -> Store {
        let inner = Inner { dir: dir.to_path_buf(), db_path, config, conn: Mutex::new(conn) };
        Store { inner: Arc::new(inner) }
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The resolved configuration from `run.toml`.
    pub fn config(&self) -> &RunConfig {
        &self.inner.config
    }

    /// Records in `run.toml` that a run merged without some shards (`[merge] missing`) now
    /// holds every shard: `--resume` ran the missing shards' episodes. Returns whether
    /// `run.toml` changed (not for a run that is no partial merge). This handle's
    /// [`Store::config`] keeps the configuration it was opened with.
    ///
    /// # Errors
    /// `run.toml` cannot be written.
    pub fn record_merge_completed(&self) -> Result<bool, StoreError> {
        let mut config = self.inner.config.clone();
        match config.merge.as_mut() {
            Some(merge) if !merge.missing.is_empty() => merge.missing.clear(),
            _ => return Ok(false),
        }
        config::write_config(&self.inner.dir, &config)?;
        Ok(true)
    }

    /// Path of `results.sqlite`.
    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// Directory of episode `id`: `DIR/episodes/<id>`.
    pub fn episode_dir(&self, id: &str) -> PathBuf {
        self.inner.dir.join(EPISODES_DIR).join(id)
    }

    /// Locks the shared connection. A panic in another thread while holding the lock cannot
    /// leave a half transaction (rusqlite rolls back on drop), so a poisoned lock is reused.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.inner.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts (or restarts) the episode of `key`: inserts its row or marks it `running` with
    /// `attempts + 1`, clears every row of an earlier unfinished attempt except its `errors`
    /// and `usage` (kept, keyed by attempt, as the record of what was retried and paid for),
    /// and replaces its directory with an empty one holding a new trajectory file.
    ///
    /// Retrying within a run: record the attempt's errors, then either drop its writer or
    /// finish it as `infra_error` / `eval_error`, and call `begin_episode` again; the next
    /// attempt starts clean with `attempts + 1`.
    ///
    /// # Errors
    /// [`StoreError::AlreadyFinished`] when the episode is `finished` or `not_applicable`: call
    /// [`Store::reset_episode`] first to run it again.
    pub fn begin_episode(&self, key: &EpisodeKey, meta: &EpisodeMeta) -> Result<EpisodeWriter, StoreError> {
        let id = key.id();
        let attempt = {
            let path = self.db_path();
            let mut conn = self.conn();
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).at(path)?;
            let existing: Option<(String, u32)> = tx
                .query_row("SELECT status, attempts FROM episodes WHERE id = ?1", [&id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .at(path)?;
            if let Some((status, _)) = &existing {
                let status = Status::parse(status)?;
                if matches!(status, Status::Finished | Status::NotApplicable) {
                    return Err(StoreError::AlreadyFinished { id, status: status.as_str().to_string() });
                }
                delete_attempt_rows(&tx, path, &id)?;
            }
            let attempt = existing.map_or(1, |(_, attempts)| attempts + 1);
            upsert_running(&tx, path, &id, key, meta, attempt)?;
            tx.commit().at(path)?;
            attempt
        };
        let dir = self.episode_dir(&id);
        files::remove_dir_if_exists(&dir)?;
        fs_err::create_dir_all(&dir)?;
        EpisodeWriter::new(self.clone(), id, key.start.clone(), attempt, dir)
    }

    /// A [`UsageRecorder`](crate::UsageRecorder) for the last attempt of episode `id`
    /// (`episodes.attempts`), for model calls made about an episode outside its run — a
    /// judge at report time records its usage under [`Role::Judge`] there.
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`] when the episode is not in the store; SQLite errors.
    pub fn usage_recorder(&self, id: &str) -> Result<crate::UsageRecorder, StoreError> {
        let attempts: Option<u32> =
            self.conn().query_row("SELECT attempts FROM episodes WHERE id = ?1", [id], |r| r.get(0)).optional().at(self.db_path())?;
        let attempts = attempts.ok_or_else(|| StoreError::UnknownEpisode { id: id.to_string() })?;
        Ok(crate::UsageRecorder::new(self.clone(), id.to_string(), attempts))
    }

    /// The stored status of episode `id`, or `None` when it was never begun.
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`] for an unknown status text.
    pub fn episode_status(&self, id: &str) -> Result<Option<Status>, StoreError> {
        let path = self.db_path();
        let status: Option<String> =
            self.conn().query_row("SELECT status FROM episodes WHERE id = ?1", [id], |r| r.get(0)).optional().at(path)?;
        status.as_deref().map(Status::parse).transpose()
    }

    /// Ids (sorted) of the episodes a continued run runs again: status running, interrupted
    /// or infra_error ([`Status::needs_rerun`]; `specgap run --resume` adds eval_error).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn unfinished_or_failed(&self) -> Result<Vec<String>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT id FROM episodes WHERE status IN ('running','interrupted','infra_error') ORDER BY id").at(path)?;
        let ids = stmt.query_map([], |r| r.get(0)).at(path)?.collect::<Result<Vec<String>, _>>().at(path)?;
        Ok(ids)
    }

    /// Deletes every row of episode `id` (all attempts) and its directory. Deleting an
    /// episode that is not there is not an error.
    ///
    /// # Errors
    /// SQLite and file errors.
    pub fn reset_episode(&self, id: &str) -> Result<(), StoreError> {
        {
            let path = self.db_path();
            let mut conn = self.conn();
            let tx = conn.transaction().at(path)?;
            for (table, column) in TABLES.iter().rev() {
                if let Some(column) = column {
                    tx.execute_cached(&format!("DELETE FROM {table} WHERE {column} = ?1"), [id]).at(path)?;
                }
            }
            tx.commit().at(path)?;
        }
        files::remove_dir_if_exists(&self.episode_dir(id))
    }

    /// Records that a (task, agent, condition, start) does not apply (DESIGN §4); recording
    /// the same combination again replaces the reason.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn record_not_applicable(&self, row: &NotApplicableRow) -> Result<(), StoreError> {
        self.conn()
            .execute_cached(
                "INSERT OR REPLACE INTO not_applicable (task, agent, condition, start, reason) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![row.task, row.agent, row.condition, row.start, row.reason],
            )
            .at(self.db_path())?;
        Ok(())
    }

    /// Records (or replaces) a judge's verdict on one clarification target of episode `id`.
    /// Usable after the episode finished (an offline judge run at report time).
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`] when the episode is not in the store; SQLite errors.
    pub fn record_judgement(&self, id: &str, judgement: &Judgement) -> Result<(), StoreError> {
        let indices =
            serde_json::to_string(&judgement.matched_question_indices).map_err(json_error("judgements.matched_question_indices"))?;
        let path = self.db_path();
        let conn = self.conn();
        let known: Option<i64> = conn.query_row("SELECT 1 FROM episodes WHERE id = ?1", [id], |r| r.get(0)).optional().at(path)?;
        if known.is_none() {
            return Err(StoreError::UnknownEpisode { id: id.to_string() });
        }
        conn.execute_cached(
            "INSERT OR REPLACE INTO judgements (episode, judge, target, verdict, matched_question_indices)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, judgement.judge, judgement.target, judgement.verdict, indices],
        )
        .at(path)?;
        Ok(())
    }

    /// Records (or replaces) many judgements in one transaction — what an offline judge run at
    /// report time writes for thousands of episodes. All or nothing.
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`] for the first row whose episode is not in the store
    /// (nothing is written); JSON and SQLite errors.
    pub fn record_judgements(&self, rows: &[JudgementRow]) -> Result<(), StoreError> {
        let path = self.db_path();
        let mut conn = self.conn();
        let tx = conn.transaction().at(path)?;
        {
            let mut known = tx.prepare("SELECT 1 FROM episodes WHERE id = ?1").at(path)?;
            let mut insert = tx
                .prepare(
                    "INSERT OR REPLACE INTO judgements (episode, judge, target, verdict, matched_question_indices)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .at(path)?;
            for row in rows {
                if !known.exists([&row.episode]).at(path)? {
                    return Err(StoreError::UnknownEpisode { id: row.episode.clone() });
                }
                let j = &row.judgement;
                let indices =
                    serde_json::to_string(&j.matched_question_indices).map_err(json_error("judgements.matched_question_indices"))?;
                insert.execute(params![row.episode, j.judge, j.target, j.verdict, indices]).at(path)?;
            }
        }
        tx.commit().at(path)
    }

    /// Every table's rows rendered as text, sorted, keyed by table name: for comparing two
    /// stores table by table (determinism tests, merge checks). With `exclude_volatile`,
    /// wall-clock and duration columns (names ending `_ts` or `_ms`) are left out, so two runs
    /// of the same seed compare equal. NULL renders as `NULL`, reals in shortest round-trip
    /// form, blobs as hex.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn dump_tables(&self, exclude_volatile: bool) -> Result<BTreeMap<String, Vec<Vec<String>>>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut out = BTreeMap::new();
        for (table, _) in TABLES {
            let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).at(path)?;
            let keep: Vec<usize> = stmt
                .column_names()
                .iter()
                .enumerate()
                .filter(|(_, name)| !(exclude_volatile && schema::is_volatile_column(name)))
                .map(|(i, _)| i)
                .collect();
            let mut rows = stmt.query([]).at(path)?;
            let mut rendered = Vec::new();
            while let Some(row) = rows.next().at(path)? {
                let mut cells = Vec::with_capacity(keep.len());
                for &i in &keep {
                    cells.push(render_value(row.get_ref(i).at(path)?));
                }
                rendered.push(cells);
            }
            rendered.sort();
            out.insert((*table).to_string(), rendered);
        }
        Ok(out)
    }

    /// All episode rows, by id.
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`] for unknown enum texts.
    pub fn episodes(&self) -> Result<Vec<EpisodeRow>, StoreError> {
        self.read_all(&read::EPISODES)
    }

    /// The row of episode `id`, if present.
    ///
    /// # Errors
    /// As [`Store::episodes`].
    pub fn episode(&self, id: &str) -> Result<Option<EpisodeRow>, StoreError> {
        Ok(self.read_of(&read::EPISODES, id)?.into_iter().next())
    }

    /// All residual start evaluations, by episode.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn start_results(&self) -> Result<Vec<StartResultRow>, StoreError> {
        self.read_all(&read::START_RESULTS)
    }

    /// All submissions, by (episode, k).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`].
    pub fn submissions(&self) -> Result<Vec<SubmissionRow>, StoreError> {
        self.read_all(&read::SUBMISSIONS)
    }

    /// All requirement outcomes, by (episode, k, requirement).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::Json`] for a damaged `measured`.
    pub fn requirement_outcomes(&self) -> Result<Vec<RequirementOutcomeRow>, StoreError> {
        self.read_all(&read::REQUIREMENT_OUTCOMES)
    }

    /// All test outcomes, by (episode, k, test).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`].
    pub fn tests(&self) -> Result<Vec<TestRow>, StoreError> {
        self.read_all(&read::TESTS)
    }

    /// All delivery verdicts, by (episode, k).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`]; [`StoreError::Json`].
    pub fn deliveries(&self) -> Result<Vec<DeliveryRow>, StoreError> {
        self.read_all(&read::DELIVERIES)
    }

    /// All questions, by (episode, idx).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::Json`].
    pub fn questions(&self) -> Result<Vec<QuestionRow>, StoreError> {
        self.read_all(&read::QUESTIONS)
    }

    /// All judgements, by (episode, judge, target).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::Json`].
    pub fn judgements(&self) -> Result<Vec<JudgementRow>, StoreError> {
        self.read_all(&read::JUDGEMENTS)
    }

    /// All usage rows, by (episode, attempt, role).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`].
    pub fn usage(&self) -> Result<Vec<UsageRow>, StoreError> {
        self.read_all(&read::USAGE)
    }

    /// The sum of every usage row, computed by SQLite in one pass (no rows are read out): what
    /// the runner's spending limits compare with before each episode, so that checking stays
    /// cheap at 10⁵ episodes. Counts are exact; `cost_usd` is SQLite's `TOTAL` (compensated
    /// summation since SQLite 3.43) in table order, which may differ from adding [`Store::usage`]'s rows in key order
    /// in the last bits (docs/decisions.md "Spending limits read one SQL sum").
    ///
    /// # Errors
    /// SQLite errors, including an integer overflow of a sum beyond `i64::MAX`.
    pub fn usage_total(&self) -> Result<specgap_protocol::event::Usage, StoreError> {
        // SUM of integers stays an integer (NULL on no rows, hence the COALESCE); TOTAL is the
        // floating-point sum, 0.0 on no rows.
        const SQL: &str = "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), \
                           COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(reasoning_tokens), 0), \
                           COALESCE(SUM(requests), 0), COALESCE(SUM(retries), 0), COALESCE(SUM(latency_ms), 0), \
                           TOTAL(cost_usd) FROM usage";
        let path = self.db_path();
        self.conn()
            .query_row(SQL, [], |r| {
                Ok(specgap_protocol::event::Usage {
                    input_tokens: r.get(0)?,
                    output_tokens: r.get(1)?,
                    cached_tokens: r.get(2)?,
                    reasoning_tokens: r.get(3)?,
                    requests: r.get(4)?,
                    retries: r.get(5)?,
                    latency_ms: r.get(6)?,
                    cost_usd: r.get(7)?,
                })
            })
            .at(path)
    }

    /// All error rows, by (episode, attempt, idx).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`].
    pub fn errors(&self) -> Result<Vec<ErrorRow>, StoreError> {
        self.read_all(&read::ERRORS)
    }

    /// All not-applicable combinations, by (task, agent, condition, start).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn not_applicable(&self) -> Result<Vec<NotApplicableRow>, StoreError> {
        self.read_all(&read::NOT_APPLICABLE)
    }

    /// Every row of the store, for reports, each table in primary-key order.
    ///
    /// The largest tables of a typical run after `episodes` (`requirement_outcomes`, `tests`,
    /// `judgements`) are read on a second, read-only connection in a second thread while this
    /// connection reads the others: reports of 100,000 episodes spend most of their load time
    /// here. Each table is its own read, as when read one by one; when the second connection
    /// cannot be opened or fails, its tables are read on this one.
    ///
    /// # Errors
    /// As the per-table readers.
    pub fn rows(&self) -> Result<RunRows, StoreError> {
        let path = self.db_path();
        let Ok(second) = schema::open_reader(path) else {
            let conn = self.conn();
            let mut rows = read_first_half(&conn, path)?;
            read_second_half(&conn, path)?.fill(&mut rows);
            return Ok(rows);
        };
        std::thread::scope(|scope| {
            let other = scope.spawn(move || read_second_half(&second, path));
            let mut rows = read_first_half(&self.conn(), path)?;
            let other = match other.join() {
                Ok(Ok(other)) => other,
                // A read-only connection can fail where the store's own succeeds (a WAL index
                // it may not create): read those tables again on this one.
                Ok(Err(_)) => read_second_half(&self.conn(), path)?,
                // The reader thread only returns; a panic there is a bug worth propagating.
                Err(panic) => std::panic::resume_unwind(panic),
            };
            other.fill(&mut rows);
            Ok(rows)
        })
    }

    /// Everything about episode `id`, or `None` when it is not in the store (for `show`).
    ///
    /// # Errors
    /// As the per-table readers.
    pub fn episode_detail(&self, id: &str) -> Result<Option<EpisodeDetail>, StoreError> {
        let Some(episode) = self.episode(id)? else {
            return Ok(None);
        };
        Ok(Some(EpisodeDetail {
            episode,
            start_result: self.read_of(&read::START_RESULTS, id)?.into_iter().next(),
            submissions: self.read_of(&read::SUBMISSIONS, id)?,
            requirement_outcomes: self.read_of(&read::REQUIREMENT_OUTCOMES, id)?,
            tests: self.read_of(&read::TESTS, id)?,
            deliveries: self.read_of(&read::DELIVERIES, id)?,
            questions: self.read_of(&read::QUESTIONS, id)?,
            judgements: self.read_of(&read::JUDGEMENTS, id)?,
            ballots: self.read_of(&read::BALLOTS, id)?,
            extractions: self.read_of(&read::EXTRACTIONS, id)?,
            usage: self.read_of(&read::USAGE, id)?,
            errors: self.read_of(&read::ERRORS, id)?,
        }))
    }

    /// Every row of one table, in primary-key order.
    fn read_all<T>(&self, reader: &read::Reader<T>) -> Result<Vec<T>, StoreError> {
        reader.read(&self.conn(), self.db_path(), None)
    }

    /// The rows of one table that belong to episode `id`, in primary-key order.
    fn read_of<T>(&self, reader: &read::Reader<T>, id: &str) -> Result<Vec<T>, StoreError> {
        reader.read(&self.conn(), self.db_path(), Some(id))
    }
}

/// The tables [`Store::rows`] reads on its second connection.
struct SecondHalf {
    requirement_outcomes: Vec<RequirementOutcomeRow>,
    tests: Vec<TestRow>,
    judgements: Vec<JudgementRow>,
}

impl SecondHalf {
    fn fill(self, rows: &mut RunRows) {
        rows.requirement_outcomes = self.requirement_outcomes;
        rows.tests = self.tests;
        rows.judgements = self.judgements;
    }
}

fn read_second_half(conn: &Connection, path: &Path) -> Result<SecondHalf, StoreError> {
    Ok(SecondHalf {
        requirement_outcomes: read::REQUIREMENT_OUTCOMES.read(conn, path, None)?,
        tests: read::TESTS.read(conn, path, None)?,
        judgements: read::JUDGEMENTS.read(conn, path, None)?,
    })
}

/// Every table but the [`SecondHalf`] (left empty).
fn read_first_half(conn: &Connection, path: &Path) -> Result<RunRows, StoreError> {
    Ok(RunRows {
        episodes: read::EPISODES.read(conn, path, None)?,
        start_results: read::START_RESULTS.read(conn, path, None)?,
        submissions: read::SUBMISSIONS.read(conn, path, None)?,
        deliveries: read::DELIVERIES.read(conn, path, None)?,
        questions: read::QUESTIONS.read(conn, path, None)?,
        usage: read::USAGE.read(conn, path, None)?,
        errors: read::ERRORS.read(conn, path, None)?,
        not_applicable: read::NOT_APPLICABLE.read(conn, path, None)?,
        panels: read::PANELS.read(conn, path, None)?,
        votes: read::VOTES.read(conn, path, None)?,
        extractions: read::EXTRACTIONS.read(conn, path, None)?,
        ..RunRows::default()
    })
}

/// Deletes the rows an attempt writes, except `errors` and `usage`, which are kept per attempt.
fn delete_attempt_rows(tx: &rusqlite::Transaction<'_>, path: &Path, id: &str) -> Result<(), StoreError> {
    for table in [
        "start_results",
        "submissions",
        "requirement_outcomes",
        "tests",
        "deliveries",
        "questions",
        "judgements",
        "ballots",
        "extractions",
        "resamples",
    ] {
        tx.execute_cached(&format!("DELETE FROM {table} WHERE episode = ?1"), [id]).at(path)?;
    }
    Ok(())
}

fn upsert_running(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    id: &str,
    key: &EpisodeKey,
    meta: &EpisodeMeta,
    attempt: u32,
) -> Result<(), StoreError> {
    tx.execute_cached(
        "INSERT INTO episodes (id, task, task_hash, agent, agent_hash, user, user_hash, condition, start, repeat,
                               seed, family, scoring_kind, status, attempts, started_ts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'running', ?14, ?15)
         ON CONFLICT(id) DO UPDATE SET
            user = excluded.user, family = excluded.family, scoring_kind = excluded.scoring_kind,
            status = 'running', end_reason = NULL, attempts = excluded.attempts, submissions = 0,
            final_score = NULL, final_success = NULL, turns = 0, tool_calls = 0, wall_ms = 0,
            started_ts = excluded.started_ts, ended_ts = NULL, error = NULL",
        params![
            id,
            key.task,
            key.task_hash,
            key.agent,
            key.agent_hash,
            meta.user,
            key.user_hash,
            key.condition,
            key.start,
            key.repeat,
            key.seed.to_string(),
            meta.family.as_str(),
            meta.scoring_kind.as_str(),
            attempt,
            crate::writer::now_ms(),
        ],
    )
    .at(path)?;
    Ok(())
}

/// Renders one SQLite value for [`Store::dump_tables`].
pub(crate) fn render_value(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".to_string(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => format!("{f:?}"),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => b.iter().map(|byte| format!("{byte:02x}")).collect(),
    }
}

/// Refuses to make a new `results.sqlite` for the run in `dir` when its `episodes/` directory
/// already holds episodes: the database that recorded them is lost (a store is created with
/// its database before any episode directory).
fn refuse_lost_database(dir: &Path, db_path: &Path) -> Result<(), StoreError> {
    let episodes = dir.join(EPISODES_DIR);
    let mut count = 0;
    for entry in fs_err::read_dir(&episodes)? {
        if entry?.file_type()?.is_dir() {
            count += 1;
        }
    }
    if count > 0 {
        return Err(StoreError::MissingDatabase { path: db_path.to_path_buf(), episodes, count });
    }
    Ok(())
}
