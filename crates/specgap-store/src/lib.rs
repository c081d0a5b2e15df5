//! # specgap-store
//!
//! The run store of DESIGN §6: one directory per run.
//!
//! ```text
//! DIR/run.toml                                   resolved configuration (RunConfig)
//! DIR/results.sqlite                             episodes and everything measured about them
//! DIR/episodes/<id>/trajectory.jsonl.zst         every event in order, one zstd frame per event
//! DIR/episodes/<id>/start/result.json            evaluator on a residual starting state
//! DIR/episodes/<id>/start/workspace.diff         that state against the clean base (harness diff)
//! DIR/episodes/<id>/submissions/<k>/result.json  evaluator on submission k (k from 1)
//! DIR/episodes/<id>/submissions/<k>/workspace.diff
//! DIR/runner.lock                                held (flock) by the process running episodes
//! ```
//!
//! Writing (the engine): [`Store::create`] once per run, then per episode
//! [`Store::begin_episode`] → [`EpisodeWriter`] (`event`, `write_start_result`, `write_start_diff`,
//! `write_submission`, `record_question`, `record_usage`, `record_error`, …; a
//! [`UsageRecorder`] adds model usage from any thread as each request completes) →
//! [`EpisodeWriter::finish`]. A `Store` is cheap to clone and shared by worker threads; they
//! serialize on one SQLite connection (WAL mode, busy timeout for other processes).
//!
//! Resuming: [`Store::open_for_resume`] (which refuses a run of another protocol version), then
//! [`Store::unfinished_or_failed`] lists what a continued run runs again
//! ([`Status::needs_rerun`]; `specgap run --resume` also reruns `eval_error` episodes);
//! `begin_episode` clears an earlier attempt itself, keeping its errors and usage.
//!
//! Reading (reports, `show`): [`Store::rows`], the per-table readers, [`Store::episode_detail`]
//! and [`read_trajectory`], which tolerates (and reports) a cut last frame left by a crash.
//!
//! Reading at scale (the viewer): [`Store::open_read_only`] writes nothing to a store of this
//! build's schema (an older one is upgraded first); [`Store::episode_page`] /
//! [`Store::episode_ids`] page through the episodes an
//! [`EpisodeFilter`] selects, [`Store::episode_facets`], [`Store::outcome_matrix`] and
//! [`Store::usage_by_agent`] aggregate in SQL, and [`Store::data_version`] changes when a
//! running `specgap run` commits. [`TrajectoryIndex`] finds every event's frame without
//! decoding it (and follows a file that is still growing), so one page of a 10,000-event
//! trajectory decodes only that page; events come back as raw JSON values, so event kinds
//! this build does not know are passed on, not refused ([`read_trajectory_values`]).
//!
//! Model panels (seed 002 coverage judges, artifact extractors, question detectors):
//! [`Store::record_panel`], then per episode [`Store::record_panel_judgements`] or
//! [`Store::record_extraction`] (ballots and verdicts in one transaction), or a live detector's
//! [`EpisodeWriter::record_ballots`]; read back with [`Store::panels`], [`Store::ballots`],
//! [`Store::votes`] and [`Store::extractions`] (also in [`RunRows`]).
//!
//! Audits (schema version 5): [`Store::record_audit_sample`] (a drawn sample and its items),
//! [`Store::record_audit_labels`] (one rater's sheet), [`Store::record_resample`]; read back
//! with [`Store::audit_samples`], [`Store::audit_items`], [`Store::audit_sheets`],
//! [`Store::audit_labels`] and [`Store::resamples`]. The rows' meaning is `specgap-audit`'s.
//!
//! Sharding: [`merge`] / [`merge_with`] join shards of one run into one store, refusing a set
//! with a missing shard (unless partial merges are allowed), a shard twice in copies that
//! differ, or shards of different plans; [`run_dirs`] expands a directory of published shards.
//! [`publish`] copies a finished run from local disk to shared storage atomically (WAL
//! checkpointed first); [`network_filesystem`] tells when a store would sit on NFS or the
//! like. [`Store::dump_tables`] renders every table as sorted text for determinism checks.
//!
//! Every column is documented, with units, in `docs/store-schema.md`; the schema version is
//! [`SCHEMA_VERSION`] (`PRAGMA user_version`), with the migration rule in [`schema`].
#![deny(missing_docs)]

mod audits;
mod config;
mod error;
mod files;
mod merge;
mod panels;
mod publish;
mod query;
mod read;
mod rows;
mod runner_lock;
pub mod schema;
mod store;
mod trajectory;
mod trajectory_index;
mod writer;

pub use audits::{AuditItemRecord, AuditLabelRecord, AuditSampleRecord, AuditSheetRecord, ResampleRecord};
pub use config::RUN_TOML;
pub use error::StoreError;
pub use merge::{MergeOptions, MergeSummary, merge, merge_with, run_dirs};
pub use publish::{network_filesystem, publish};
pub use query::{AgentUsage, EpisodeFacets, EpisodeFilter, EpisodeOrder, EpisodePage, MatrixCell};
pub use rows::{
    Ballot, BallotOutcome, BallotRow, DeliveryRow, EpisodeDetail, EpisodeMeta, EpisodeRow, EpisodeSummary, ErrorClass, ErrorRecord,
    ErrorRow, Extraction, ExtractionRow, ExtractionStatus, Judgement, JudgementRow, NotApplicableRow, PanelRecord, PanelUse, Question,
    QuestionRow, RequirementOutcomeRow, Role, RunRows, StartResultRow, Status, SubmissionRecord, SubmissionRow, TestRow, UsageRow, VoteRow,
};
pub use runner_lock::{RUNNER_LOCK, RunnerLock, lock_runner, runner_alive};
pub use schema::{SCHEMA_VERSION, is_volatile_column};
pub use store::{EPISODES_DIR, RESULTS_DB, Store};
pub use trajectory::{TRAJECTORY_FILE, Trajectory, TruncatedTail, read_trajectory, read_trajectory_file, trajectory_path};
pub use trajectory_index::{TrajectoryIndex, read_trajectory_values};
pub use writer::{EpisodeWriter, MACHINE_LAYER_FILE, START_DIFF_FILE, UsageRecorder};
