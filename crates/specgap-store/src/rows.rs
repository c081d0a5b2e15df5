//! Plain structs for what goes into the store and what comes out of it, one per table
//! (columns documented in `docs/store-schema.md`).

use std::collections::BTreeMap;

use specgap_protocol::event::Usage;
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind, Signature, TestOutcome, Violation};
use specgap_protocol::run::{EndReason, EpisodeKey};

use crate::error::StoreError;

/// Lifecycle status of an episode (`episodes.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Begun and not finished: a crash or kill left it, or it is running now.
    Running,
    /// Ended normally (any scored end reason); counts in measures.
    Finished,
    /// The condition or start does not apply to the task (DESIGN §4).
    NotApplicable,
    /// Infrastructure failure after the run's retries (DESIGN §3); reported apart.
    InfraError,
    /// Evaluation error after retries (DESIGN §2); reported apart, never the agent's failure.
    EvalError,
    /// The run was interrupted (Ctrl-C) while the episode ran.
    Interrupted,
}

impl Status {
    /// The text stored in `episodes.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Finished => "finished",
            Status::NotApplicable => "not_applicable",
            Status::InfraError => "infra_error",
            Status::EvalError => "eval_error",
            Status::Interrupted => "interrupted",
        }
    }

    /// Parses the stored text.
    ///
    /// # Errors
    /// [`StoreError::BadValue`] for an unknown name.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "running" => Status::Running,
            "finished" => Status::Finished,
            "not_applicable" => Status::NotApplicable,
            "infra_error" => Status::InfraError,
            "eval_error" => Status::EvalError,
            "interrupted" => Status::Interrupted,
            other => {
                return Err(StoreError::BadValue { table: "episodes", column: "status", value: other.to_string() });
            }
        })
    }

    /// Whether a continued run of the same configuration (`specgap run --out DIR` on an
    /// existing store) runs the episode again: unfinished (`running`, `interrupted`) and
    /// infrastructure-failed episodes. Evaluation errors are kept there: they point at the
    /// task's evaluator, and a fixed evaluator changes the task hash and hence the episode key.
    /// `specgap run --resume` runs `eval_error` episodes again as well (the runner's
    /// `RunOptions::rerun_eval_errors`).
    pub fn needs_rerun(self) -> bool {
        matches!(self, Status::Running | Status::Interrupted | Status::InfraError)
    }
}

/// Who used a model (`usage.role`). Every model call made for an episode is recorded under
/// one of these roles as it completes (docs/store-schema.md, `usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// The agent under test (its own model calls, or those it makes through the gateway).
    Agent,
    /// The simulated owner / customer.
    User,
    /// A model judging clarification coverage (seed 002 A.3 Recall / Ask-F1).
    Judge,
    /// A model extracting a delivered artifact into the case's submission schema (seed 002
    /// §4.1, A.9.4).
    Extractor,
    /// A model detecting questions or refusals in an agent's replies (seed 002 A.9.3).
    Detector,
    /// A model summarizing a trajectory for reviewers (seed 001 §3.2 Stage III; schema
    /// version 5).
    Summarizer,
}

impl Role {
    /// Every role, in the order `specgap show` lists them.
    pub const ALL: [Role; 6] = [Role::Agent, Role::User, Role::Judge, Role::Extractor, Role::Detector, Role::Summarizer];

    /// The text stored in `usage.role`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::User => "user",
            Role::Judge => "judge",
            Role::Extractor => "extractor",
            Role::Detector => "detector",
            Role::Summarizer => "summarizer",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, StoreError> {
        Role::ALL.into_iter().find(|role| role.as_str() == text).ok_or_else(|| StoreError::BadValue {
            table: "usage",
            column: "role",
            value: text.to_string(),
        })
    }
}

/// Class of an episode error (`errors.class`), DESIGN §3 "Infrastructure failures".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// Model service, sandbox start or other harness failure.
    Infrastructure,
    /// The evaluator failed to produce a valid `result.json` (DESIGN §2).
    Evaluation,
}

impl ErrorClass {
    /// The text stored in `errors.class`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Infrastructure => "infrastructure",
            ErrorClass::Evaluation => "evaluation",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, StoreError> {
        match text {
            "infrastructure" => Ok(ErrorClass::Infrastructure),
            "evaluation" => Ok(ErrorClass::Evaluation),
            other => Err(StoreError::BadValue { table: "errors", column: "class", value: other.to_string() }),
        }
    }
}

/// What the engine knows about an episode beyond its key, given to `begin_episode`.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeMeta {
    /// User spec (`relay`, `chat:<model>`); the key holds only its hash.
    pub user: String,
    /// Task family, for per-family breakdowns (seed 000 §4).
    pub family: Family,
    /// The task's scoring kind (DESIGN §2).
    pub scoring_kind: ScoringKind,
}

/// One submission as the engine hands it to the store.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionRecord {
    /// True for the automatic final submission of a budget or loop end (DESIGN §3.5).
    pub automatic: bool,
    /// True when the agent called `submit` itself (seed 001 App. D.1 "normally submitted").
    pub agent_declared: bool,
    /// The evaluator's `result.json`, when it produced one that parsed.
    pub result: Option<EvalResult>,
    /// Score and Success; `None` when the evaluation was not valid.
    pub scored: Option<Scored>,
    /// Highest-priority failing requirement, if any.
    pub failing_requirement: Option<String>,
    /// Evaluation error message, if any.
    pub error: Option<String>,
    /// The workspace diff against the starting base: the exact bytes of a `git diff --binary`
    /// patch (names quoted as git quotes them; contents need not be UTF-8).
    pub diff: Vec<u8>,
}

/// A question the agent asked with `ask_user`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// 1-based agent turn in which it was asked.
    pub turn: u32,
    /// The question text as the agent wrote it.
    pub text: String,
    /// The reply the agent got.
    pub answer: String,
    /// Ids of the clarification targets the shared matching rule links to it (DESIGN §5).
    pub matched_targets: Vec<String>,
}

/// A judge's verdict on one clarification target of an episode (seed 002 §4 coverage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// Judge name: `offline:<rule version>` (the shared matching rule) or a coverage panel's
    /// `panel:<hash>` (`panels.name`).
    pub judge: String,
    /// Clarification target id.
    pub target: String,
    /// The judge's verdict: `covered`, `missed`, or `unavailable` (a panel none of whose
    /// judges returned a ballot; docs/store-schema.md).
    pub verdict: String,
    /// 0-based question-unit indices the judge linked to the target: the episode's questions
    /// in `idx` order, split at question marks, numbered consecutively (docs/store-schema.md).
    pub matched_question_indices: Vec<u32>,
}

/// What a model panel is used for (`panels.use`; seed 002 §4.1, A.3, A.9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PanelUse {
    /// Clarification-coverage judges (seed 002 §4.1 "Requirement coverage", A.9.5).
    Judge,
    /// Artifact extractors (seed 002 §4.1 "Extraction and case evaluation", A.9.4).
    Extractor,
    /// Question detectors of the delivery text channel (seed 002 A.9.3).
    Detector,
}

impl PanelUse {
    /// The text stored in `panels.use`.
    pub fn as_str(self) -> &'static str {
        match self {
            PanelUse::Judge => "judge",
            PanelUse::Extractor => "extractor",
            PanelUse::Detector => "detector",
        }
    }

    /// The `usage` role the panel's model calls are recorded under.
    pub fn role(self) -> Role {
        match self {
            PanelUse::Judge => Role::Judge,
            PanelUse::Extractor => Role::Extractor,
            PanelUse::Detector => Role::Detector,
        }
    }
}

/// A row of `panels`: one panel configuration verdicts were made with.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelRecord {
    /// `panel:<12 hex digits>`: the start of the sha256 of the use, the configuration and
    /// the prompt texts, so equal names mean equal panels. Judge verdicts in `judgements`
    /// carry it as their judge name.
    pub name: String,
    /// What the panel is for.
    pub use_: PanelUse,
    /// The configuration as JSON: the models (endpoint, model, key variable, request
    /// arguments; never a key), the vote rule and the settings of the use.
    pub config: serde_json::Value,
    /// The prompt version: the built-in prompts' version, or `file:` and the override's hash.
    pub prompt_version: String,
    /// Hex sha256 of every prompt text the panel sends.
    pub prompt_hash: String,
}

/// How one panel model's ballot ended (`ballots.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BallotOutcome {
    /// The model returned a ballot that parses; it counts in the vote.
    Ballot,
    /// The model answered twice (the request and its one repair retry) with text that is not
    /// the JSON asked for; dropped from the vote.
    Malformed,
    /// The model service failed after the client's retries (or the request was abandoned);
    /// dropped from the vote.
    Failed,
}

impl BallotOutcome {
    /// The text stored in `ballots.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            BallotOutcome::Ballot => "ballot",
            BallotOutcome::Malformed => "malformed",
            BallotOutcome::Failed => "failed",
        }
    }
}

/// One panel model's ballot on one subject of an episode (a clarification target, a
/// submission, an agent turn).
#[derive(Debug, Clone, PartialEq)]
pub struct Ballot {
    /// Panel name (`panels.name`).
    pub panel: String,
    /// What was voted on: a clarification target id (judge), `submission:<k>` (extractor),
    /// `turn:<n>` (detector).
    pub subject: String,
    /// 0-based index of the model in the panel file.
    pub seat: u32,
    /// The model name sent.
    pub model: String,
    /// 0-based place of this call in the seeded call order of the subject.
    pub position: u32,
    /// The prompt version the request was built from.
    pub prompt_version: String,
    /// How the ballot ended.
    pub outcome: BallotOutcome,
    /// The parsed ballot (`Ballot` outcome only): `{"covered","question_indices"}` (judge),
    /// `{"asking","questions"}` (detector), `{"score","valid",…}` (extractor).
    pub vote: Option<serde_json::Value>,
    /// Every request sent, in order (a JSON array of request bodies or, for an extractor,
    /// its session's opening).
    pub request: serde_json::Value,
    /// Every response received, in order (a JSON array of texts or, for an extractor, its
    /// session transcript).
    pub response: serde_json::Value,
    /// Why there is no ballot, lowercase (`Malformed` and `Failed`).
    pub error: Option<String>,
}

/// A row of `ballots`.
#[derive(Debug, Clone, PartialEq)]
pub struct BallotRow {
    /// Episode id.
    pub episode: String,
    /// The ballot.
    pub ballot: Ballot,
}

/// A row of `ballots` without its request and response (what reports read).
#[derive(Debug, Clone, PartialEq)]
pub struct VoteRow {
    /// Episode id.
    pub episode: String,
    /// Panel name.
    pub panel: String,
    /// What was voted on.
    pub subject: String,
    /// 0-based model index in the panel file.
    pub seat: u32,
    /// Model name.
    pub model: String,
    /// How the ballot ended.
    pub outcome: BallotOutcome,
    /// The parsed ballot.
    pub vote: Option<serde_json::Value>,
}

/// Whether the extraction panel agreed on a score (`extractions.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtractionStatus {
    /// At least three extractions gave the same score to 4 decimal places (seed 002 A.3).
    Scored,
    /// No three agreed: the run has no score ("unavailable", seed 002 A.3).
    Unavailable,
}

impl ExtractionStatus {
    /// The text stored in `extractions.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractionStatus::Scored => "scored",
            ExtractionStatus::Unavailable => "unavailable",
        }
    }
}

/// The extraction panel's verdict on submission `k` of an episode (seed 002 §4.1, A.3).
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    /// Panel name.
    pub panel: String,
    /// The submission extracted (1-based).
    pub k: u32,
    /// Scored or unavailable.
    pub status: ExtractionStatus,
    /// The agreed delivery score (seed 002 §4.2 s_ir), when scored.
    pub score: Option<f64>,
    /// Success (score at the reference), when scored.
    pub success: Option<bool>,
    /// Validity (no hard constraint violated) of an evaluation supporting the score.
    pub valid: Option<bool>,
    /// That evaluation's raw objective.
    pub objective: Option<f64>,
    /// That evaluation's zero-score signature.
    pub signature: Option<Signature>,
    /// Extractor sessions run (early stopping leaves the rest out).
    pub routes: u32,
    /// Extractions whose score equals the recorded one to 4 decimal places.
    pub agreeing: u32,
}

/// A row of `extractions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionRow {
    /// Episode id.
    pub episode: String,
    /// The verdict.
    pub extraction: Extraction,
}

/// An infrastructure or evaluation error met during an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRecord {
    /// Infrastructure or evaluation.
    pub class: ErrorClass,
    /// What went wrong.
    pub message: String,
    /// Tail of the failing program's stderr (empty when none).
    pub stderr_tail: String,
    /// Whether the failure is deterministic (not retried more than once, DESIGN §3).
    pub deterministic: bool,
}

/// What `finish` records about an ended episode.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeSummary {
    /// Final status; `Running` is refused.
    pub status: Status,
    /// Why the episode ended, if it did.
    pub end_reason: Option<EndReason>,
    /// Agent turns taken.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Wall-clock duration of the attempt in milliseconds.
    pub wall_ms: u64,
    /// Error message for `infra_error` / `eval_error` / `interrupted`.
    pub error: Option<String>,
}

/// A row of `episodes`.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRow {
    /// Episode id ([`EpisodeKey::id`]).
    pub id: String,
    /// Task name.
    pub task: String,
    /// Task content hash.
    pub task_hash: String,
    /// Agent spec.
    pub agent: String,
    /// Agent configuration hash.
    pub agent_hash: String,
    /// User spec.
    pub user: String,
    /// User configuration hash.
    pub user_hash: String,
    /// Canonical condition with overrides.
    pub condition: String,
    /// `clean` or `residual:<id>`.
    pub start: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// Run seed.
    pub seed: u64,
    /// Task family.
    pub family: Family,
    /// Scoring kind.
    pub scoring_kind: ScoringKind,
    /// Lifecycle status.
    pub status: Status,
    /// Why it ended (`None` while running).
    pub end_reason: Option<EndReason>,
    /// Attempts begun (1 + restarts after infrastructure failures).
    pub attempts: u32,
    /// Submissions recorded in the final attempt.
    pub submissions: u32,
    /// Score of the last validly evaluated submission (`None` without one).
    pub final_score: Option<f64>,
    /// Success of the last validly evaluated submission.
    pub final_success: Option<bool>,
    /// Agent turns.
    pub turns: u32,
    /// Tool calls.
    pub tool_calls: u32,
    /// Wall-clock duration of the final attempt (ms; volatile).
    pub wall_ms: u64,
    /// Start of the final attempt, ms since the Unix epoch (volatile).
    pub started_ts: u64,
    /// End of the final attempt, ms since the Unix epoch (volatile; `None` while running).
    pub ended_ts: Option<u64>,
    /// Error message, if any.
    pub error: Option<String>,
}

impl EpisodeRow {
    /// The key this row was written for.
    pub fn key(&self) -> EpisodeKey {
        EpisodeKey {
            task: self.task.clone(),
            task_hash: self.task_hash.clone(),
            agent: self.agent.clone(),
            agent_hash: self.agent_hash.clone(),
            user_hash: self.user_hash.clone(),
            condition: self.condition.clone(),
            start: self.start.clone(),
            repeat: self.repeat,
            seed: self.seed,
        }
    }
}

/// A row of `start_results`: the evaluator on a residual starting state.
#[derive(Debug, Clone, PartialEq)]
pub struct StartResultRow {
    /// Episode id.
    pub episode: String,
    /// Residual state id (`residual:<id>` without the prefix).
    pub state: String,
    /// Reward reported, if any; tests, requirements and delivery are in their tables at k = 0.
    pub reward: Option<f64>,
    /// Score of the starting state by the task's scoring kind; `None` in stores written
    /// before schema version 3.
    pub score: Option<f64>,
    /// Success of the starting state: `Some(true)` means it passes the verifier and is not a
    /// valid residual state (seed 001 §3.1); `None` before schema version 3.
    pub success: Option<bool>,
}

/// A row of `submissions`.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionRow {
    /// Episode id.
    pub episode: String,
    /// 1-based submission number.
    pub k: u32,
    /// Automatic final submission.
    pub automatic: bool,
    /// The agent called `submit` itself.
    pub agent_declared: bool,
    /// The evaluation produced a scorable result.
    pub valid_evaluation: bool,
    /// Scoring kind used (`None` when not valid).
    pub kind: Option<ScoringKind>,
    /// Score (`None` when not valid).
    pub score: Option<f64>,
    /// Success (`None` when not valid).
    pub success: Option<bool>,
    /// `reward` as reported, whatever the kind.
    pub reward: Option<f64>,
    /// Highest-priority failing requirement.
    pub failing_requirement: Option<String>,
    /// Evaluation error message.
    pub error: Option<String>,
    /// Size of `workspace.diff` in bytes.
    pub diff_bytes: u64,
}

/// A row of `requirement_outcomes`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequirementOutcomeRow {
    /// Episode id.
    pub episode: String,
    /// Submission number; 0 is the starting state.
    pub k: u32,
    /// Requirement id.
    pub requirement: String,
    /// Whether it holds.
    pub pass: bool,
    /// Failure mode reported.
    pub failure_mode: Option<String>,
    /// Measured values.
    pub measured: BTreeMap<String, serde_json::Value>,
    /// Evaluator's free text.
    pub detail: Option<String>,
}

/// A row of `tests`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRow {
    /// Episode id.
    pub episode: String,
    /// Submission number; 0 is the starting state.
    pub k: u32,
    /// Test id.
    pub test: String,
    /// Outcome.
    pub outcome: TestOutcome,
}

/// A row of `deliveries`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRow {
    /// Episode id.
    pub episode: String,
    /// Submission number; 0 is the starting state.
    pub k: u32,
    /// Valid delivery.
    pub valid: bool,
    /// Raw objective.
    pub objective: Option<f64>,
    /// Zero-score signature (seed 002 §5.4).
    pub signature: Option<Signature>,
    /// Hard-constraint violations.
    pub violations: Vec<Violation>,
}

/// A row of `questions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionRow {
    /// Episode id.
    pub episode: String,
    /// 0-based order in which the question was asked.
    pub idx: u32,
    /// The question.
    pub question: Question,
}

/// A row of `judgements`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgementRow {
    /// Episode id.
    pub episode: String,
    /// The judgement.
    pub judgement: Judgement,
}

/// A row of `usage`: summed model usage of one role in one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// Episode id.
    pub episode: String,
    /// 1-based attempt.
    pub attempt: u32,
    /// Whose model calls.
    pub role: Role,
    /// Summed usage.
    pub usage: Usage,
}

/// A row of `errors`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRow {
    /// Episode id.
    pub episode: String,
    /// 1-based attempt.
    pub attempt: u32,
    /// 0-based order within the attempt.
    pub idx: u32,
    /// The error.
    pub error: ErrorRecord,
}

/// A row of `not_applicable`: a (task, agent, condition, start) skipped by DESIGN §4.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NotApplicableRow {
    /// Task name.
    pub task: String,
    /// Agent spec.
    pub agent: String,
    /// Canonical condition.
    pub condition: String,
    /// Start.
    pub start: String,
    /// Why it does not apply, e.g. "no instruction.full.md".
    pub reason: String,
}

/// Everything the store holds about one episode, for `show`.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeDetail {
    /// The episode row.
    pub episode: EpisodeRow,
    /// Residual start evaluation, if any.
    pub start_result: Option<StartResultRow>,
    /// Submissions by k.
    pub submissions: Vec<SubmissionRow>,
    /// Requirement outcomes by (k, requirement).
    pub requirement_outcomes: Vec<RequirementOutcomeRow>,
    /// Tests by (k, test).
    pub tests: Vec<TestRow>,
    /// Deliveries by k.
    pub deliveries: Vec<DeliveryRow>,
    /// Questions by idx.
    pub questions: Vec<QuestionRow>,
    /// Judgements by (judge, target).
    pub judgements: Vec<JudgementRow>,
    /// Panel ballots by (panel, subject, seat), requests and responses included.
    pub ballots: Vec<BallotRow>,
    /// Extraction verdicts by (panel, k).
    pub extractions: Vec<ExtractionRow>,
    /// Usage by (attempt, role).
    pub usage: Vec<UsageRow>,
    /// Errors by (attempt, idx).
    pub errors: Vec<ErrorRow>,
}

/// Every row of a store, for reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRows {
    /// Episodes by id.
    pub episodes: Vec<EpisodeRow>,
    /// Residual start evaluations by episode.
    pub start_results: Vec<StartResultRow>,
    /// Submissions by (episode, k).
    pub submissions: Vec<SubmissionRow>,
    /// Requirement outcomes by (episode, k, requirement).
    pub requirement_outcomes: Vec<RequirementOutcomeRow>,
    /// Tests by (episode, k, test).
    pub tests: Vec<TestRow>,
    /// Deliveries by (episode, k).
    pub deliveries: Vec<DeliveryRow>,
    /// Questions by (episode, idx).
    pub questions: Vec<QuestionRow>,
    /// Judgements by (episode, judge, target).
    pub judgements: Vec<JudgementRow>,
    /// Usage by (episode, attempt, role).
    pub usage: Vec<UsageRow>,
    /// Errors by (episode, attempt, idx).
    pub errors: Vec<ErrorRow>,
    /// Not-applicable combinations by (task, agent, condition, start).
    pub not_applicable: Vec<NotApplicableRow>,
    /// Panel configurations by name.
    pub panels: Vec<PanelRecord>,
    /// Panel ballots without requests and responses, by (episode, panel, subject, seat).
    pub votes: Vec<VoteRow>,
    /// Extraction verdicts by (episode, panel, k).
    pub extractions: Vec<ExtractionRow>,
}
