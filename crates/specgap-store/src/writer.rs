//! [`EpisodeWriter`]: what the engine calls while one episode runs.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, Transaction, params};
use specgap_protocol::event::{Event, EventKind, Usage};
use specgap_protocol::result::EvalResult;

use crate::error::{ExecuteCached, SqlContext, StoreError, json_error};
use crate::files;
use crate::rows::*;
use crate::store::Store;
use crate::trajectory::{FrameWriter, TRAJECTORY_FILE};

/// Name of the starting state's diff inside `DIR/episodes/<id>/start/`
/// ([`EpisodeWriter::write_start_diff`]).
pub const START_DIFF_FILE: &str = "workspace.diff";

/// Name of a submission's machine layer inside `DIR/episodes/<id>/submissions/<k>/`
/// ([`EpisodeWriter::write_submission_machine`]).
pub const MACHINE_LAYER_FILE: &str = "machine.tar";

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes one attempt of one episode: its trajectory, files and rows. Made by
/// [`Store::begin_episode`]; owned by the worker running the episode (`Send`).
///
/// Dropping a writer without [`EpisodeWriter::finish`] leaves the episode `running`, which
/// `--resume` runs again from scratch.
#[derive(Debug)]
pub struct EpisodeWriter {
    store: Store,
    id: String,
    start: String,
    attempt: u32,
    dir: PathBuf,
    frames: FrameWriter,
    started: Instant,
    /// The moment the last event was stamped with (events never go back in time).
    last_at: Instant,
    next_seq: u64,
    next_question: u32,
    next_error: u32,
    /// A staged task's aggregation of its stage submissions ([`EpisodeWriter::aggregate_stages`]).
    stage_score: Option<specgap_protocol::package::StageScore>,
}

impl EpisodeWriter {
    pub(crate) fn new(store: Store, id: String, start: String, attempt: u32, dir: PathBuf) -> Result<Self, StoreError> {
        let frames = FrameWriter::create(&dir.join(TRAJECTORY_FILE))?;
        Ok(EpisodeWriter {
            store,
            id,
            start,
            attempt,
            dir,
            frames,
            started: Instant::now(),
            last_at: Instant::now(),
            next_seq: 0,
            next_question: 0,
            next_error: 0,
            stage_score: None,
        })
    }

    /// The episode id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The 1-based attempt being written.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The episode directory (`DIR/episodes/<id>`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends an event to the trajectory, assigning `seq` (0-based, consecutive), `ts_ms`
    /// (ms since the Unix epoch) and `elapsed_ms` (ms since `begin_episode`). The event is in
    /// the file (as its own zstd frame) when this returns. Returns the `seq` assigned.
    ///
    /// # Errors
    /// File errors.
    pub fn event(&mut self, kind: EventKind) -> Result<u64, StoreError> {
        self.append(kind, Instant::now())
    }

    /// Appends an event that happened at `at`, a moment the caller saw pass (something the
    /// agent's surroundings recorded while it worked, written at the next turn: a `cli:`
    /// agent's network attempts), stamped with that moment rather than with now — but never
    /// with one before the previous event's, so `elapsed_ms` keeps the order of `seq`.
    ///
    /// # Errors
    /// File errors.
    pub fn event_at(&mut self, kind: EventKind, at: Instant) -> Result<u64, StoreError> {
        self.append(kind, at)
    }

    fn append(&mut self, kind: EventKind, at: Instant) -> Result<u64, StoreError> {
        let at = at.max(self.last_at);
        let seq = self.next_seq;
        let elapsed_ms = u64::try_from(at.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX);
        let ago_ms = u64::try_from(Instant::now().saturating_duration_since(at).as_millis()).unwrap_or(0);
        let event = Event { seq, ts_ms: now_ms().saturating_sub(ago_ms), elapsed_ms, kind };
        self.frames.append(&event)?;
        self.next_seq += 1;
        self.last_at = at;
        Ok(seq)
    }

    /// Records the evaluator's verdict on a residual starting state: `start/result.json`, a
    /// `start_results` row (state = the start without its `residual:` prefix) and the
    /// requirement / test / delivery rows with k = 0.
    ///
    /// # Errors
    /// File, JSON and SQLite errors.
    pub fn write_start_result(&mut self, result: &EvalResult) -> Result<(), StoreError> {
        let dir = self.dir.join("start");
        fs_err::create_dir_all(&dir)?;
        write_json(&dir.join("result.json"), result)?;
        let state = self.start.strip_prefix("residual:").unwrap_or(&self.start).to_string();
        let path = self.store.db_path().to_path_buf();
        let mut conn = self.store.conn();
        let tx = conn.transaction().at(&path)?;
        delete_result_rows(&tx, &path, &self.id, 0)?;
        tx.execute_cached("DELETE FROM start_results WHERE episode = ?1", [&self.id]).at(&path)?;
        tx.execute_cached("INSERT INTO start_results (episode, state, reward) VALUES (?1, ?2, ?3)", params![self.id, state, result.reward])
            .at(&path)?;
        insert_result_rows(&tx, &path, &self.id, 0, result)?;
        tx.commit().at(&path)
    }

    /// Records the Score and Success of the residual starting state by the task's scoring
    /// kind (`start_results.score`, `.success`; schema version 3), after
    /// [`EpisodeWriter::write_start_result`]. `success = true` marks a state that passes the
    /// verifier, which a residual state must not (seed 001 §3.1).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn record_start_score(&mut self, scored: &specgap_protocol::result::Scored) -> Result<(), StoreError> {
        self.store
            .conn()
            .execute_cached(
                "UPDATE start_results SET score = ?2, success = ?3 WHERE episode = ?1",
                params![self.id, scored.score, scored.success],
            )
            .at(self.store.db_path())?;
        Ok(())
    }

    /// Records the harness's own diff of a residual starting state against the clean base
    /// (the materialized state, as the engine diffs every submission): `start/workspace.diff`.
    /// Seed 001's Kept takes the predecessor's lines from it, so they do not depend on how the
    /// package author made `state.patch`.
    ///
    /// # Errors
    /// File errors.
    pub fn write_start_diff(&mut self, diff: &[u8]) -> Result<(), StoreError> {
        let dir = self.dir.join("start");
        fs_err::create_dir_all(&dir)?;
        files::write_atomic(&dir.join(START_DIFF_FILE), diff)
    }

    /// Records the machine layer of submission `k` of an image episode (the changes its
    /// commands made outside the workspace, as an OCI layer): `submissions/<k>/machine.tar`,
    /// copied from `layer`. Written only when the layer changes something.
    ///
    /// # Errors
    /// File errors.
    pub fn write_submission_machine(&mut self, k: u32, layer: &Path) -> Result<(), StoreError> {
        let dir = self.dir.join("submissions").join(k.to_string());
        fs_err::create_dir_all(&dir)?;
        let staged = dir.join(format!(".{MACHINE_LAYER_FILE}.partial"));
        fs_err::copy(layer, &staged)?;
        fs_err::rename(&staged, dir.join(MACHINE_LAYER_FILE))?;
        Ok(())
    }

    /// Records submission `k` (1-based): `submissions/<k>/result.json` (when there is a
    /// result), `submissions/<k>/workspace.diff`, the `submissions` row
    /// (`valid_evaluation` = `scored` is present) and its requirement / test / delivery rows.
    /// Writing the same k again replaces it.
    ///
    /// # Errors
    /// File, JSON and SQLite errors.
    pub fn write_submission(&mut self, k: u32, record: &SubmissionRecord) -> Result<(), StoreError> {
        let dir = self.dir.join("submissions").join(k.to_string());
        fs_err::create_dir_all(&dir)?;
        if let Some(result) = &record.result {
            write_json(&dir.join("result.json"), result)?;
        }
        files::write_atomic(&dir.join("workspace.diff"), &record.diff)?;
        let path = self.store.db_path().to_path_buf();
        let mut conn = self.store.conn();
        let tx = conn.transaction().at(&path)?;
        delete_result_rows(&tx, &path, &self.id, k)?;
        tx.execute_cached("DELETE FROM submissions WHERE episode = ?1 AND k = ?2", params![self.id, k]).at(&path)?;
        let scored = record.scored.as_ref();
        tx.execute_cached(
            "INSERT INTO submissions (episode, k, automatic, agent_declared, valid_evaluation, kind, score, success,
                                      reward, failing_requirement, error, diff_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                self.id,
                k,
                record.automatic,
                record.agent_declared,
                scored.is_some(),
                scored.map(|s| s.kind.as_str()),
                scored.map(|s| s.score),
                scored.map(|s| s.success),
                record.result.as_ref().and_then(|r| r.reward),
                record.failing_requirement,
                record.error,
                record.diff.len() as u64,
            ],
        )
        .at(&path)?;
        if let Some(result) = &record.result {
            insert_result_rows(&tx, &path, &self.id, k, result)?;
        }
        tx.execute_cached(
            "UPDATE episodes SET submissions = (SELECT COUNT(*) FROM submissions WHERE episode = ?1) WHERE id = ?1",
            [&self.id],
        )
        .at(&path)?;
        tx.commit().at(&path)
    }

    /// Records an `ask_user` question and its answer; returns its 0-based `idx` (the order
    /// asked in this attempt).
    ///
    /// # Errors
    /// JSON and SQLite errors.
    pub fn record_question(&mut self, question: &Question) -> Result<u32, StoreError> {
        let idx = self.next_question;
        let matched = serde_json::to_string(&question.matched_targets).map_err(json_error("questions.matched_targets"))?;
        self.store
            .conn()
            .execute_cached(
                "INSERT INTO questions (episode, idx, turn, text, answer, matched_targets) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![self.id, idx, question.turn, question.text, question.answer, matched],
            )
            .at(self.store.db_path())?;
        self.next_question += 1;
        Ok(idx)
    }

    /// Records (or replaces) a judge's verdict on one clarification target of this episode.
    ///
    /// # Errors
    /// As [`Store::record_judgement`].
    pub fn record_judgement(&mut self, judgement: &Judgement) -> Result<(), StoreError> {
        self.store.record_judgement(&self.id, judgement)
    }

    /// Records ballots of this episode (a live question detector's; seed 002 A.9.3).
    ///
    /// # Errors
    /// As [`Store::record_ballots`].
    pub fn record_ballots(&mut self, ballots: &[crate::Ballot]) -> Result<(), StoreError> {
        self.store.record_ballots(&self.id, ballots)
    }

    /// Adds model usage of `role` to this attempt's `usage` row (created on first use), so it
    /// may be called once per model request, once per call, or once at the end; the row holds
    /// the sum. Same as [`UsageRecorder::record`] on [`EpisodeWriter::usage_recorder`].
    ///
    /// # Errors
    /// SQLite errors (also for counts above `i64::MAX`).
    pub fn record_usage(&mut self, role: Role, usage: &Usage) -> Result<(), StoreError> {
        self.usage_recorder().record(role, usage)
    }

    /// A handle that adds usage to this attempt's `usage` rows from anywhere (another thread,
    /// a model client in the middle of its retries), so usage is in the store as each request
    /// completes, whatever happens to the process afterwards.
    pub fn usage_recorder(&self) -> UsageRecorder {
        UsageRecorder::new(self.store.clone(), self.id.clone(), self.attempt)
    }

    /// Records an infrastructure or evaluation error of this attempt; returns its 0-based
    /// index within the attempt. Error rows survive a restart of the episode.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn record_error(&mut self, error: &ErrorRecord) -> Result<u32, StoreError> {
        let idx = self.next_error;
        self.store
            .conn()
            .execute_cached(
                "INSERT INTO errors (episode, attempt, idx, class, message, stderr_tail, deterministic)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![self.id, self.attempt, idx, error.class.as_str(), error.message, error.stderr_tail, error.deterministic],
            )
            .at(self.store.db_path())?;
        self.next_error += 1;
        Ok(idx)
    }

    /// Makes `final_score` / `final_success` of a staged task's episode (`[stages]`, one
    /// submission per stage) the aggregate `score` of its validly evaluated submissions:
    /// `mean` averages their Scores, with Success when every one succeeded; `final` is the
    /// last one's, as for any episode. Call it before [`EpisodeWriter::finish`].
    pub fn aggregate_stages(&mut self, score: specgap_protocol::package::StageScore) {
        self.stage_score = Some(score);
    }

    /// Ends the attempt in one transaction: status, end reason, counts, `wall_ms`,
    /// `ended_ts`, error, the submission count, and `final_score` / `final_success` from the
    /// last validly evaluated submission (NULL without one), or for a staged task their
    /// aggregate ([`EpisodeWriter::aggregate_stages`]). The trajectory is synced to disk
    /// first.
    ///
    /// # Errors
    /// [`StoreError::NotFinal`] for `Status::Running`; file and SQLite errors.
    pub fn finish(mut self, summary: EpisodeSummary) -> Result<(), StoreError> {
        if summary.status == Status::Running {
            return Err(StoreError::NotFinal { id: self.id.clone(), status: summary.status.as_str().to_string() });
        }
        self.frames.sync()?;
        let path = self.store.db_path().to_path_buf();
        let mut conn = self.store.conn();
        let tx = conn.transaction().at(&path)?;
        let last_valid: Option<(f64, bool)> = match self.stage_score {
            Some(specgap_protocol::package::StageScore::Mean) => tx
                .query_row(
                    "SELECT AVG(score), MIN(success) FROM submissions WHERE episode = ?1 AND valid_evaluation = 1",
                    [&self.id],
                    |r| Ok(r.get::<_, Option<f64>>(0)?.zip(r.get::<_, Option<bool>>(1)?)),
                )
                .at(&path)?,
            _ => tx
                .query_row(
                    "SELECT score, success FROM submissions WHERE episode = ?1 AND valid_evaluation = 1 ORDER BY k DESC LIMIT 1",
                    [&self.id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .at(&path)?,
        };
        let changed = tx
            .execute(
                "UPDATE episodes SET status = ?2, end_reason = ?3, turns = ?4, tool_calls = ?5, wall_ms = ?6,
                        ended_ts = ?7, error = ?8, final_score = ?9, final_success = ?10,
                        submissions = (SELECT COUNT(*) FROM submissions WHERE episode = ?1),
                        -- the kind planned before any evaluation is a guess between test and
                        -- reward (DESIGN §2 decides by what the evaluator reports): the first
                        -- valid evaluation settles it
                        scoring_kind = COALESCE((SELECT kind FROM submissions WHERE episode = ?1
                                                 AND kind IS NOT NULL ORDER BY k LIMIT 1), scoring_kind)
                 WHERE id = ?1",
                params![
                    self.id,
                    summary.status.as_str(),
                    summary.end_reason.map(|r| r.as_str()),
                    summary.turns,
                    summary.tool_calls,
                    summary.wall_ms,
                    now_ms(),
                    summary.error,
                    last_valid.map(|(score, _)| score),
                    last_valid.map(|(_, success)| success),
                ],
            )
            .at(&path)?;
        if changed == 0 {
            // Someone reset the episode while it ran.
            return Err(StoreError::UnknownEpisode { id: self.id.clone() });
        }
        tx.commit().at(&path)
    }
}

/// Adds model usage to the `usage` rows of one attempt of one episode (made by
/// [`EpisodeWriter::usage_recorder`]; cheap to clone, `Send + Sync`). Each call is one
/// committed upsert, so what was recorded survives a crash of the process.
#[derive(Debug, Clone)]
pub struct UsageRecorder {
    store: Store,
    episode: String,
    attempt: u32,
}

impl UsageRecorder {
    pub(crate) fn new(store: Store, episode: String, attempt: u32) -> Self {
        UsageRecorder { store, episode, attempt }
    }

    /// The episode id.
    pub fn episode(&self) -> &str {
        &self.episode
    }

    /// The 1-based attempt.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Adds `usage` to the (episode, attempt, `role`) row, creating it on first use.
    ///
    /// # Errors
    /// SQLite errors (also for counts above `i64::MAX`).
    pub fn record(&self, role: Role, usage: &Usage) -> Result<(), StoreError> {
        self.store
            .conn()
            .execute_cached(
                "INSERT INTO usage (episode, attempt, role, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
                                    requests, retries, latency_ms, cost_usd)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT(episode, attempt, role) DO UPDATE SET
                    input_tokens = input_tokens + excluded.input_tokens,
                    output_tokens = output_tokens + excluded.output_tokens,
                    cached_tokens = cached_tokens + excluded.cached_tokens,
                    reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
                    requests = requests + excluded.requests,
                    retries = retries + excluded.retries,
                    latency_ms = latency_ms + excluded.latency_ms,
                    cost_usd = cost_usd + excluded.cost_usd",
                params![
                    self.episode,
                    self.attempt,
                    role.as_str(),
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cached_tokens,
                    usage.reasoning_tokens,
                    usage.requests,
                    usage.retries,
                    usage.latency_ms,
                    usage.cost_usd,
                ],
            )
            .at(self.store.db_path())?;
        Ok(())
    }
}

/// Writes pretty JSON atomically.
fn write_json(path: &Path, value: &EvalResult) -> Result<(), StoreError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(json_error(path.display().to_string()))?;
    text.push(b'\n');
    files::write_atomic(path, &text)
}

/// Deletes requirement / test / delivery rows of (episode, k).
fn delete_result_rows(tx: &Transaction<'_>, path: &Path, id: &str, k: u32) -> Result<(), StoreError> {
    for table in ["requirement_outcomes", "tests", "deliveries"] {
        tx.execute_cached(&format!("DELETE FROM {table} WHERE episode = ?1 AND k = ?2"), params![id, k]).at(path)?;
    }
    Ok(())
}

/// Inserts every value of `result` into requirement_outcomes, tests and deliveries at k.
fn insert_result_rows(tx: &Transaction<'_>, path: &Path, id: &str, k: u32, result: &EvalResult) -> Result<(), StoreError> {
    for (requirement, outcome) in result.requirements.iter().flatten() {
        let measured = serde_json::to_string(&outcome.measured).map_err(json_error("requirement_outcomes.measured"))?;
        tx.execute_cached(
            "INSERT INTO requirement_outcomes (episode, k, requirement, pass, failure_mode, measured, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![id, k, requirement, outcome.pass, outcome.failure_mode, measured, outcome.detail],
        )
        .at(path)?;
    }
    for (test, outcome) in result.tests.iter().flatten() {
        let outcome = serde_json::to_value(outcome).map_err(json_error("tests.outcome"))?;
        tx.execute_cached("INSERT INTO tests (episode, k, test, outcome) VALUES (?1, ?2, ?3, ?4)", params![id, k, test, outcome.as_str()])
            .at(path)?;
    }
    if let Some(delivery) = &result.delivery {
        let violations = serde_json::to_string(&delivery.violations).map_err(json_error("deliveries.violations"))?;
        let signature = delivery.signature.map(serde_json::to_value).transpose().map_err(json_error("deliveries.signature"))?;
        tx.execute_cached(
            "INSERT INTO deliveries (episode, k, valid, objective, signature, violations) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, k, delivery.valid, delivery.objective, signature.as_ref().and_then(|v| v.as_str()), violations],
        )
        .at(path)?;
    }
    Ok(())
}
