//! Stage I's record, read back: the predecessor runs of one or more run stores, one
//! [`PredecessorRun`] per episode with what Stage II decides on — status, end reason, steps,
//! the final submission and its verdict, the failing tests — in the run's plan order.
//!
//! A run store already records everything the paper's Stage I keeps per run (§3.2: the full
//! trajectory, the termination reason, whether the predecessor declared completion, the
//! verifier outcome, and a binary-safe patch of the final state), so generation is an ordinary
//! `specgap run` and any run, of any agent, can be a source.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use specgap_protocol::result::TestOutcome;
use specgap_store::{EPISODES_DIR, Status, Store, SubmissionRow};

use crate::error::ResidualizeError;

/// The final submission of a predecessor run.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalSubmission {
    /// 1-based submission number.
    pub k: u32,
    /// The agent called `submit` itself (not an automatic budget or loop submission).
    pub declared: bool,
    /// The evaluation gave a valid verdict.
    pub valid: bool,
    /// The verdict: success under the task's scoring kind (`None` without a valid verdict).
    pub success: Option<bool>,
}

/// One episode of a source run, as Stage II sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PredecessorRun {
    /// The run directory it comes from (canonical).
    pub run_dir: PathBuf,
    /// Episode id.
    pub episode: String,
    /// Task name.
    pub task: String,
    /// Task content hash at generation time.
    pub task_hash: String,
    /// Where the run read the package from (`run.toml` `tasks[].path`), when recorded.
    pub task_path: Option<PathBuf>,
    /// Agent spec: the predecessor.
    pub agent: String,
    /// Canonical condition string.
    pub condition: String,
    /// `clean` or `residual:<id>`.
    pub start: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// Lifecycle status.
    pub status: Status,
    /// Why it ended (`snake_case`), if it did.
    pub end_reason: Option<String>,
    /// Agent turns taken (the state's `steps`).
    pub steps: u32,
    /// The last submission, if any.
    pub last: Option<FinalSubmission>,
    /// What the last submission fails: the tests reported `fail` or `error` when the evaluator
    /// reported tests, else the failing requirement ids; sorted.
    pub failing: Vec<String>,
    /// The episode's error message, if any.
    pub error: Option<String>,
    /// Position in the run's plan: (agent index, condition index, start, repeat), for the order
    /// in which duplicates are resolved (the first generated is kept).
    pub(crate) plan_position: (usize, usize, String, u32),
}

impl PredecessorRun {
    /// `episodes/<id>/submissions/<k>/workspace.diff` of the last submission.
    pub fn final_diff_path(&self) -> Option<PathBuf> {
        self.last.as_ref().map(|last| {
            self.run_dir.join(EPISODES_DIR).join(&self.episode).join("submissions").join(last.k.to_string()).join("workspace.diff")
        })
    }
}

/// Reads every episode of the run in `dir`, sorted by task name, then the run's plan order.
///
/// # Errors
/// [`ResidualizeError::SourceRunning`] while a runner holds the store's lock;
/// [`ResidualizeError::Store`] when it cannot be opened or read.
pub fn read_run(dir: &Path) -> Result<Vec<PredecessorRun>, ResidualizeError> {
    let on_store = ResidualizeError::store(dir);
    if specgap_store::runner_alive(dir).map_err(ResidualizeError::store(dir))? {
        return Err(ResidualizeError::SourceRunning { dir: dir.to_path_buf() });
    }
    let store = Store::open(dir).map_err(on_store)?;
    let rows = store.rows().map_err(ResidualizeError::store(dir))?;
    let config = store.config();
    let agent_index: HashMap<&str, usize> = config.agents.iter().enumerate().map(|(i, a)| (a.spec.as_str(), i)).collect();
    let condition_index: HashMap<&str, usize> = config.conditions.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    let task_paths: HashMap<(&str, &str), &str> =
        config.tasks.iter().map(|t| ((t.name.as_str(), t.hash.as_str()), t.path.as_str())).collect();

    let mut last_submission: HashMap<&str, &SubmissionRow> = HashMap::new();
    for s in &rows.submissions {
        let slot = last_submission.entry(s.episode.as_str()).or_insert(s);
        if s.k > slot.k {
            *slot = s;
        }
    }
    // Failing sets of each episode's last submission: tests when any were reported, else
    // requirements (as `specgap check` reads a residual state's failing set).
    let mut failing_tests: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut reported_tests: BTreeMap<&str, bool> = BTreeMap::new();
    for t in &rows.tests {
        if last_submission.get(t.episode.as_str()).is_some_and(|s| s.k == t.k) {
            reported_tests.insert(t.episode.as_str(), true);
            if matches!(t.outcome, TestOutcome::Fail | TestOutcome::Error) {
                failing_tests.entry(t.episode.as_str()).or_default().push(t.test.clone());
            }
        }
    }
    let mut failing_requirements: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for r in &rows.requirement_outcomes {
        if !r.pass && last_submission.get(r.episode.as_str()).is_some_and(|s| s.k == r.k) {
            failing_requirements.entry(r.episode.as_str()).or_default().push(r.requirement.clone());
        }
    }

    let canonical = fs_err::canonicalize(dir)?;
    let mut out = Vec::with_capacity(rows.episodes.len());
    for e in &rows.episodes {
        let id = e.id.as_str();
        let last = last_submission.get(id).map(|s| FinalSubmission {
            k: s.k,
            declared: s.agent_declared && !s.automatic,
            valid: s.valid_evaluation,
            success: s.success,
        });
        let mut failing = if reported_tests.contains_key(id) {
            failing_tests.get(id).cloned().unwrap_or_default()
        } else {
            failing_requirements.get(id).cloned().unwrap_or_default()
        };
        failing.sort();
        out.push(PredecessorRun {
            run_dir: canonical.clone(),
            episode: e.id.clone(),
            task: e.task.clone(),
            task_hash: e.task_hash.clone(),
            task_path: task_paths.get(&(e.task.as_str(), e.task_hash.as_str())).map(PathBuf::from),
            agent: e.agent.clone(),
            condition: e.condition.clone(),
            start: e.start.clone(),
            repeat: e.repeat,
            status: e.status,
            end_reason: e.end_reason.map(|r| r.as_str().to_string()),
            steps: e.turns,
            last,
            failing,
            error: e.error.clone(),
            plan_position: (
                agent_index.get(e.agent.as_str()).copied().unwrap_or(usize::MAX),
                condition_index.get(e.condition.as_str()).copied().unwrap_or(usize::MAX),
                e.start.clone(),
                e.repeat,
            ),
        });
    }
    out.sort_by(|a, b| (&a.task, &a.plan_position, &a.episode).cmp(&(&b.task, &b.plan_position, &b.episode)));
    Ok(out)
}
