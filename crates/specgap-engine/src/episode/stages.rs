//! What a staged task (`[stages]`, docs/writing-tasks.md "Stages") changes in the workspace
//! as it goes (docs/decisions.md "Stages: files and gold per stage"):
//!
//! * **Stage files.** When stage k+1 begins (its instruction is about to be sent after
//!   submission k was scored), its `files` overlay is applied to the workspace, as Harbor
//!   uploads a step's `workdir/` when the step starts. The files are then part of the
//!   workspace's diff against the base, like the agent's own changes: the base is the task's
//!   starter, and the stage files are what the task added since.
//! * **Stage gold.** `apply_overlay gold` in a package whose stages have their own gold
//!   applies the open stage's gold (nothing for a stage without one), so scripted `gold`
//!   delivers stage k's state at stage k, as Harbor's oracle runs step k's `solve.sh` at step k.

use super::*;
use specgap_task::Overlay;

impl Episode<'_, '_> {
    /// The open stage's number (1-based): one more than the submissions made.
    fn open_stage(&self) -> u32 {
        self.submissions.len() as u32 + 1
    }

    /// Applies stage `k`'s files to the workspace, if it has any.
    ///
    /// # Errors
    /// An infrastructure error when the overlay cannot be applied.
    pub(super) fn begin_stage(&mut self, k: u32) -> Result<(), EpisodeError> {
        let files = self.ctx.package.stages().and_then(|stages| stages.stage(k)).and_then(|stage| stage.files.as_ref());
        match files {
            Some(overlay) => sandbox_ops::apply_overlay(&self.ws_dir, overlay),
            None => Ok(()),
        }
    }

    /// The overlay `apply_overlay {name}` applies: for `gold` in a package whose stages have
    /// their own gold, the open stage's (`Some(None)`: the stage has none, nothing to apply);
    /// otherwise the package's solution of that name (`None`: there is none).
    pub(super) fn overlay_named(&self, name: &str) -> Option<Option<&Overlay>> {
        if let Some(stages) = self.ctx.package.stages().filter(|stages| name == "gold" && stages.has_stage_golds()) {
            return Some(stages.stage(self.open_stage()).and_then(|stage| stage.gold.as_ref()));
        }
        self.ctx.package.solution(name).map(Some)
    }
}
