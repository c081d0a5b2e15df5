//! Calibration rollouts (seed 000 §4.2, App. E.4): before the Calibrator answers, specgap runs
//! the reference agent on the package under `full`, `partial` and `literal`, with repeats, as
//! normal episodes into a run store under the synthesis directory, and hands the Calibrator
//! one summary per episode.
//!
//! The pipeline knows the runner only through [`Rollouts`], so this crate does not depend on
//! the engine; `specgap synthesize --reference AGENT --rollouts N` supplies one that runs
//! `specgap run` in process.

use std::path::{Path, PathBuf};

use serde::Serialize;
use specgap_protocol::event::Usage;

/// The conditions the reference agent runs under, in this order (seed 000's calibration).
pub const CALIBRATION_CONDITIONS: [&str; 3] = ["full", "partial", "literal"];

/// One calibration episode, as the Calibrator is told about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RolloutSummary {
    /// The episode id in the rollouts' run store (what the Calibrator cites as `rollout`).
    pub rollout: String,
    /// `full`, `partial` or `literal` (as the store writes it).
    pub condition: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// The episode's status (`finished`, `infra_error`, ...).
    pub status: String,
    /// Why it ended, when it did.
    pub end_reason: Option<String>,
    /// Score of the last evaluated submission.
    pub score: Option<f64>,
    /// Whether that submission passed every requirement.
    pub success: Option<bool>,
    /// Submissions made.
    pub submissions: u32,
    /// Agent turns.
    pub turns: u32,
    /// The episode's directory in the store (its trajectory is there).
    pub episode_dir: PathBuf,
    /// What the episode's model requests spent (every role of the episode: agent and
    /// simulated user), as the run priced them; counted toward the synthesis's `--max-tokens`
    /// and `--max-cost`, journaled under the stage `rollouts`, not shown to the Calibrator.
    #[serde(skip)]
    pub usage: Usage,
}

impl RolloutSummary {
    /// One line for the Calibrator's prompt.
    pub fn line(&self) -> String {
        let score = self.score.map_or("no evaluated submission".to_owned(), |s| format!("score {s}"));
        let success = match self.success {
            Some(true) => ", success",
            Some(false) => ", no success",
            None => "",
        };
        format!(
            "- {} ({} repeat {}): {}{}, {}{}, {} submission(s), {} turn(s); trajectory in {}",
            self.rollout,
            self.condition,
            self.repeat,
            self.status,
            self.end_reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default(),
            score,
            success,
            self.submissions,
            self.turns,
            self.episode_dir.display()
        )
    }
}

/// Why the rollouts could not be run.
#[derive(Debug, thiserror::Error)]
#[error("the calibration rollouts of {} could not be run into {}", package.display(), store.display())]
pub struct RolloutError {
    /// The package.
    pub package: PathBuf,
    /// The run store directory.
    pub store: PathBuf,
    /// The cause.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// What the rollouts may still spend under the synthesis's caps (`--max-tokens`,
/// `--max-cost` minus what the roles and earlier rollouts spent): the runner starts another
/// episode only while its rollouts' spending is within it (at most the budget), so a cap
/// passed between two rollouts stops them there; the pipeline then stops the synthesis naming
/// the cap. `None`: no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RolloutBudget {
    /// Prompt + completion tokens.
    pub tokens: Option<u64>,
    /// US dollars.
    pub cost_usd: Option<f64>,
}

impl RolloutBudget {
    /// Whether `spent` is still within the budget (another episode may start).
    pub fn allows(&self, spent: &Usage) -> bool {
        self.tokens.is_none_or(|cap| spent.input_tokens + spent.output_tokens <= cap)
            && self.cost_usd.is_none_or(|cap| spent.cost_usd <= cap)
    }
}

/// Runs the reference agent on a package.
pub trait Rollouts {
    /// A label for the journal (`replay:gold.jsonl × 2`).
    fn label(&self) -> String;

    /// Runs the reference agent on `package` under [`CALIBRATION_CONDITIONS`] into the run
    /// store `store` (created, or continued when it exists: a resumed synthesis), and returns
    /// one summary per episode that ran, ordered by condition as listed, then repeat; once
    /// the episodes' spending passes `budget` no further episode starts
    /// ([`RolloutBudget`]).
    ///
    /// # Errors
    /// [`RolloutError`] when the run cannot be made or read.
    fn run(&mut self, package: &Path, store: &Path, budget: RolloutBudget) -> Result<Vec<RolloutSummary>, RolloutError>;
}

/// The Calibrator's `{rollouts}` text.
pub fn render(rollouts: &[RolloutSummary]) -> String {
    if rollouts.is_empty() {
        return "(none)".to_owned();
    }
    rollouts.iter().map(RolloutSummary::line).collect::<Vec<_>>().join("\n")
}
