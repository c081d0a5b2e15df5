//! Stage II, automatic filtering (seed 001 §3.2): which predecessor runs are candidate
//! residual states.
//!
//! A run is kept when, checked in this order (the first criterion it fails names its
//! exclusion):
//!
//! | exclusion | the run … |
//! | --- | --- |
//! | `not-clean-start` | started from a residual state, not from the clean workspace (it is a continuation, not a predecessor run) |
//! | `unfinished` | is still `running` or was `interrupted` (resume its generation) |
//! | `infrastructure-failure` | ended in an infrastructure error after the run's retries (§3.2 (c)) |
//! | `not-declared-complete` | did not end with a `submit` of its own: a budget, loop or script end, with or without an automatic submission (§3.2 (a)) |
//! | `no-valid-verdict` | its final submission has no valid evaluation, or the episode ended in an evaluation error (App. B.3: "a zero reward caused by an infrastructure or verification error is not treated as a failed attempt") |
//! | `passed` | passes the verifier (§3.2 (a): y = 0 is required) |
//! | `no-failing-tests` | fails but names no failing test or requirement (a reward- or delivery-scored task: `meta.toml` needs the failing set) |
//! | `unchanged` | changes nothing beyond incidental artifacts ([`crate::ignore`]; §3.2 (b)) |
//! | `duplicate` | leaves the same normalized final state as an earlier kept run of the same task ([`crate::diff`]; "retained only once") |
//!
//! "Earlier" is the sources' order, then each run's plan order (agent, condition, start,
//! repeat as `run.toml` lists them), so the first generated of identical states is kept.
//! The same episode id in two sources (a run and its copy, or merged shards) is one run: once
//! a copy is kept, a later one is a `duplicate` (state ids are episode ids, so they must be
//! unique).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use specgap_store::Status;

use crate::diff::{StateChanges, sha256_hex};
use crate::error::ResidualizeError;
use crate::ignore::IgnoreRules;
use crate::source::PredecessorRun;

/// Why Stage II excluded a run (the table in the module guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterExclusion {
    /// Started from a residual state.
    NotCleanStart,
    /// Running or interrupted.
    Unfinished,
    /// Infrastructure error after retries.
    InfrastructureFailure,
    /// No agent-declared final submission.
    NotDeclaredComplete,
    /// No valid verdict on the final submission.
    NoValidVerdict,
    /// Passes the verifier.
    Passed,
    /// Fails without a failing test or requirement.
    NoFailingTests,
    /// Nothing changed beyond incidental artifacts.
    Unchanged,
    /// The same normalized final state as an earlier kept run of the task.
    Duplicate,
}

impl FilterExclusion {
    /// Every exclusion, in the order the criteria are checked.
    pub const ALL: [FilterExclusion; 9] = [
        FilterExclusion::NotCleanStart,
        FilterExclusion::Unfinished,
        FilterExclusion::InfrastructureFailure,
        FilterExclusion::NotDeclaredComplete,
        FilterExclusion::NoValidVerdict,
        FilterExclusion::Passed,
        FilterExclusion::NoFailingTests,
        FilterExclusion::Unchanged,
        FilterExclusion::Duplicate,
    ];

    /// The kebab-case code stored and printed in JSON.
    pub fn code(self) -> &'static str {
        match self {
            FilterExclusion::NotCleanStart => "not-clean-start",
            FilterExclusion::Unfinished => "unfinished",
            FilterExclusion::InfrastructureFailure => "infrastructure-failure",
            FilterExclusion::NotDeclaredComplete => "not-declared-complete",
            FilterExclusion::NoValidVerdict => "no-valid-verdict",
            FilterExclusion::Passed => "passed",
            FilterExclusion::NoFailingTests => "no-failing-tests",
            FilterExclusion::Unchanged => "unchanged",
            FilterExclusion::Duplicate => "duplicate",
        }
    }

    /// The funnel's words for it.
    pub fn label(self) -> &'static str {
        match self {
            FilterExclusion::NotCleanStart => "Not started from the clean state",
            FilterExclusion::Unfinished => "Unfinished (running or interrupted)",
            FilterExclusion::InfrastructureFailure => "Infrastructure failure",
            FilterExclusion::NotDeclaredComplete => "Not declared complete (budget, loop or script end)",
            FilterExclusion::NoValidVerdict => "No valid verifier result",
            FilterExclusion::Passed => "Passes the verifier",
            FilterExclusion::NoFailingTests => "No failing test or requirement to record",
            FilterExclusion::Unchanged => "No change beyond build outputs, caches and logs",
            FilterExclusion::Duplicate => "Duplicate of an earlier final state",
        }
    }
}

/// Stage II's verdict on one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Screen {
    /// A candidate residual state, id [`ScreenedRun::episode`].
    Candidate,
    /// Excluded, with the criterion and a detail in words.
    Excluded {
        /// The criterion it failed.
        reason: FilterExclusion,
        /// Specifics (the end reason, the error, the run it duplicates).
        detail: String,
    },
}

/// One predecessor run after Stage II, as stored in `residualize/candidates.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenedRun {
    /// The source run directory (canonical).
    pub run: String,
    /// Episode id; a candidate's state id.
    pub episode: String,
    /// Task name.
    pub task: String,
    /// Task content hash at generation.
    pub task_hash: String,
    /// Package directory recorded by the run, if any.
    pub task_path: Option<String>,
    /// The predecessor (agent spec).
    pub agent: String,
    /// Canonical condition.
    pub condition: String,
    /// Start.
    pub start: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// Episode status.
    pub status: String,
    /// End reason, if any.
    pub end_reason: Option<String>,
    /// Agent turns.
    pub steps: u32,
    /// Number of the final submission, if any.
    pub final_submission: Option<u32>,
    /// Failing tests (or requirements) of the final submission, sorted.
    pub failing_tests: Vec<String>,
    /// Files the final diff changes.
    pub changed_files: Vec<String>,
    /// The changed files that are not incidental artifacts.
    pub substantive_files: Vec<String>,
    /// Hex SHA-256 of the final diff as stored (byte-exact).
    pub diff_sha256: Option<String>,
    /// Hex SHA-256 of the normalized final diff.
    pub normalized_sha256: Option<String>,
    /// Hex SHA-256 of the final submission's machine layer (`machine.tar`, an image task's
    /// changes outside the workspace), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_sha256: Option<String>,
    /// Stage II's verdict.
    #[serde(flatten)]
    pub screen: Screen,
}

impl ScreenedRun {
    /// Whether Stage II kept it.
    pub fn is_candidate(&self) -> bool {
        self.screen == Screen::Candidate
    }

    /// `episodes/<id>/submissions/<k>/workspace.diff` of the final submission in its run.
    pub fn final_diff_path(&self) -> Option<std::path::PathBuf> {
        self.final_submission.map(|k| {
            std::path::Path::new(&self.run)
                .join(specgap_store::EPISODES_DIR)
                .join(&self.episode)
                .join("submissions")
                .join(k.to_string())
                .join("workspace.diff")
        })
    }

    /// `episodes/<id>/submissions/<k>/machine.tar` of the final submission, when it exists (an
    /// image task whose predecessor changed files outside the workspace).
    pub fn final_machine_path(&self) -> Option<std::path::PathBuf> {
        let diff = self.final_diff_path()?;
        let layer = diff.with_file_name(specgap_store::MACHINE_LAYER_FILE);
        layer.is_file().then_some(layer)
    }

    /// The final diff's bytes (empty without a submission).
    ///
    /// # Errors
    /// I/O errors naming the file.
    pub fn final_diff(&self) -> Result<Vec<u8>, ResidualizeError> {
        match self.final_diff_path() {
            Some(path) => Ok(fs_err::read(path)?),
            None => Ok(Vec::new()),
        }
    }

    /// The exclusion, if any.
    pub fn exclusion(&self) -> Option<FilterExclusion> {
        match &self.screen {
            Screen::Candidate => None,
            Screen::Excluded { reason, .. } => Some(*reason),
        }
    }
}

/// Runs Stage II over `runs` (sources in order, each in plan order) under `rules`.
///
/// # Errors
/// I/O errors reading a final `workspace.diff`; [`ResidualizeError::TaskVersions`] when the
/// candidates of one task name come from two package versions.
pub fn screen(runs: &[PredecessorRun], rules: &IgnoreRules) -> Result<Vec<ScreenedRun>, ResidualizeError> {
    let mut kept_states: HashMap<(String, String), String> = HashMap::new();
    let mut seen_episodes: HashMap<String, String> = HashMap::new();
    let mut versions: HashMap<String, String> = HashMap::new();
    let mut out = Vec::with_capacity(runs.len());
    for run in runs.iter().filter(|r| r.status != Status::NotApplicable) {
        let mut screened = blank(run);
        let verdict = match before_diff(run) {
            Some(excluded) => excluded,
            None => {
                let changes = read_changes(run, rules, &mut screened)?;
                // Two states are the same when their workspaces and their machines are.
                let state_key =
                    (run.task.clone(), format!("{}+{}", changes.normalized_sha256, screened.machine_sha256.as_deref().unwrap_or("")));
                if let Some(first) = seen_episodes.get(&run.episode) {
                    excluded(FilterExclusion::Duplicate, format!("episode {} is also in {first}", run.episode))
                } else if !changes.changed() && screened.machine_sha256.is_none() {
                    let detail = if changes.files.is_empty() {
                        "the final state equals the clean state".to_string()
                    } else {
                        format!("changes only {}", changes.files.join(", "))
                    };
                    excluded(FilterExclusion::Unchanged, detail)
                } else if let Some(first) = kept_states.get(&state_key) {
                    excluded(FilterExclusion::Duplicate, format!("same final state as episode {first}"))
                } else {
                    kept_states.insert(state_key, run.episode.clone());
                    Screen::Candidate
                }
            }
        };
        if verdict == Screen::Candidate {
            if let Some(first) = versions.get(&run.task)
                && *first != run.task_hash
            {
                return Err(ResidualizeError::TaskVersions { task: run.task.clone(), first: first.clone(), second: run.task_hash.clone() });
            }
            versions.insert(run.task.clone(), run.task_hash.clone());
            seen_episodes.insert(run.episode.clone(), run.run_dir.display().to_string());
        }
        screened.screen = verdict;
        out.push(screened);
    }
    Ok(out)
}

fn excluded(reason: FilterExclusion, detail: impl Into<String>) -> Screen {
    Screen::Excluded { reason, detail: detail.into() }
}

/// The criteria decided without reading the final diff, in order; `None` when all hold.
fn before_diff(run: &PredecessorRun) -> Option<Screen> {
    if run.start != "clean" {
        return Some(excluded(FilterExclusion::NotCleanStart, format!("start {}", run.start)));
    }
    let error = run.error.clone().unwrap_or_default();
    match run.status {
        Status::Running | Status::Interrupted => {
            return Some(excluded(FilterExclusion::Unfinished, format!("status {}", run.status.as_str())));
        }
        Status::InfraError => return Some(excluded(FilterExclusion::InfrastructureFailure, error)),
        Status::EvalError => return Some(excluded(FilterExclusion::NoValidVerdict, error)),
        Status::Finished | Status::NotApplicable => {}
    }
    let end = run.end_reason.clone().unwrap_or_else(|| "unknown".into());
    let Some(last) = run.last.as_ref().filter(|l| l.declared) else {
        let detail = match &run.last {
            Some(_) => format!("ended {end}; the final submission was automatic"),
            None => format!("ended {end} without a submission"),
        };
        return Some(excluded(FilterExclusion::NotDeclaredComplete, detail));
    };
    if !last.valid {
        return Some(excluded(FilterExclusion::NoValidVerdict, format!("submission {} has no valid evaluation", last.k)));
    }
    if last.success == Some(true) {
        return Some(excluded(FilterExclusion::Passed, format!("submission {} passes", last.k)));
    }
    if run.failing.is_empty() {
        return Some(excluded(FilterExclusion::NoFailingTests, "the evaluator names no failing test or requirement"));
    }
    None
}

fn read_changes(run: &PredecessorRun, rules: &IgnoreRules, screened: &mut ScreenedRun) -> Result<StateChanges, ResidualizeError> {
    let diff = match run.final_diff_path() {
        Some(path) => fs_err::read(path)?,
        None => Vec::new(),
    };
    let changes = StateChanges::of(&diff, rules);
    screened.changed_files = changes.files.clone();
    screened.substantive_files = changes.substantive.clone();
    screened.diff_sha256 = Some(sha256_hex(&diff));
    screened.normalized_sha256 = Some(changes.normalized_sha256.clone());
    screened.machine_sha256 = match screened.final_machine_path() {
        Some(layer) => Some(sha256_hex(&fs_err::read(layer)?)),
        None => None,
    };
    Ok(changes)
}

fn blank(run: &PredecessorRun) -> ScreenedRun {
    ScreenedRun {
        run: run.run_dir.display().to_string(),
        episode: run.episode.clone(),
        task: run.task.clone(),
        task_hash: run.task_hash.clone(),
        task_path: run.task_path.as_ref().map(|p| p.display().to_string()),
        agent: run.agent.clone(),
        condition: run.condition.clone(),
        start: run.start.clone(),
        repeat: run.repeat,
        status: run.status.as_str().to_string(),
        end_reason: run.end_reason.clone(),
        steps: run.steps,
        final_submission: run.last.as_ref().map(|l| l.k),
        failing_tests: run.failing.clone(),
        changed_files: Vec::new(),
        substantive_files: Vec::new(),
        diff_sha256: None,
        normalized_sha256: None,
        machine_sha256: None,
        screen: Screen::Candidate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FinalSubmission;

    fn run(success: Option<bool>, failing: &[&str]) -> PredecessorRun {
        PredecessorRun {
            run_dir: "/runs/r".into(),
            episode: "e1".into(),
            task: "t".into(),
            task_hash: "h".into(),
            task_path: None,
            agent: "a".into(),
            condition: "blind".into(),
            start: "clean".into(),
            repeat: 0,
            status: Status::Finished,
            end_reason: Some("submitted".into()),
            steps: 1,
            last: Some(FinalSubmission { k: 1, declared: true, valid: true, success }),
            failing: failing.iter().map(|s| (*s).to_string()).collect(),
            error: None,
            plan_position: (0, 0, "clean".into(), 0),
        }
    }

    #[test]
    fn a_failing_run_that_names_no_failing_test_cannot_become_a_state() {
        // A reward- or delivery-scored task fails without a failing set; meta.toml needs one.
        assert_eq!(
            before_diff(&run(Some(false), &[])),
            Some(Screen::Excluded {
                reason: FilterExclusion::NoFailingTests,
                detail: "the evaluator names no failing test or requirement".into()
            })
        );
        assert_eq!(before_diff(&run(Some(false), &["t1"])), None);
        assert_eq!(
            before_diff(&run(Some(true), &[])),
            Some(Screen::Excluded { reason: FilterExclusion::Passed, detail: "submission 1 passes".into() })
        );
    }

    #[test]
    fn codes_are_the_serialized_names() {
        for reason in FilterExclusion::ALL {
            assert_eq!(serde_json::to_value(reason).unwrap(), serde_json::Value::String(reason.code().into()));
        }
    }
}
