//! What a role played in its own sandbox (a `cli:` role, [`crate::cli_role`]) may see and
//! write, per seed 000 App. E: the mounts of its [`specgap_sandbox::AgentSandbox`], computed
//! from the request alone so they can be checked without starting anything.
//!
//! | role | read-only | writable |
//! | --- | --- | --- |
//! | Planner | the source task at `/source` | the hand-off directory `/handoff` |
//! | Builder | — | its working directory at `/work`; `/handoff` |
//! | Auditor | the package at `/package` (evaluator and solutions included) | `/handoff` |
//! | Calibrator | each rollout's episode directory at `/rollouts/<rollout id>` | `/handoff` |
//! | Implementer | — (instruction.full.md is in its prompt) | its copy of the workspace at `/work`; `/handoff` |
//!
//! `/handoff` is a fresh directory per request into which the role writes its JSON hand-off
//! ([`HANDOFF_FILE`]); nothing else of the synthesis (the journal, other rounds, the brief's
//! source when it is not the Planner) is mounted. [`crate::cli_role::CliRole`] adds these
//! mounts after an empty writable `/workspace` the program starts in.

use std::path::{Path, PathBuf};

use specgap_sandbox::Mount;

use crate::role::{RoleName, RoleRequest};

/// Where the hand-off directory is mounted.
pub const HANDOFF_MOUNT: &str = "/handoff";
/// The file inside it the role writes its hand-off JSON to.
pub const HANDOFF_FILE: &str = "handoff.json";

/// The mounts of one role's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleView {
    /// Every mount, in the table's order, the hand-off directory last.
    pub mounts: Vec<Mount>,
    /// The directory the role starts in inside the sandbox.
    pub cwd: PathBuf,
}

/// Why a view could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The request lacks what the role must be shown.
    #[error("the {role}'s request has no {what}, so its sandbox cannot be set up")]
    Missing {
        /// The role.
        role: &'static str,
        /// `inputs.source`, `a working directory`, ...
        what: &'static str,
    },
}

fn read_only(host: impl Into<PathBuf>, sandbox: impl Into<PathBuf>) -> Mount {
    Mount { host: host.into(), sandbox: sandbox.into(), writable: false }
}

fn writable(host: impl Into<PathBuf>, sandbox: impl Into<PathBuf>) -> Mount {
    Mount { host: host.into(), sandbox: sandbox.into(), writable: true }
}

/// The view of `request`'s role, with its hand-off directory at `handoff_dir` on the host.
///
/// # Errors
/// [`ViewError::Missing`] when the request lacks the path the role must be shown (the
/// Planner's `inputs.source`, the Auditor's `inputs.package`, a writing role's working
/// directory, a rollout's `rollout` or `episode_dir`).
pub fn role_view(request: &RoleRequest, handoff_dir: &Path) -> Result<RoleView, ViewError> {
    let role = request.role.as_str();
    let input = |key: &'static str, what: &'static str| {
        request.inputs.get(key).and_then(|v| v.as_str()).map(PathBuf::from).ok_or(ViewError::Missing { role, what })
    };
    let work_dir = || request.work_dir.clone().ok_or(ViewError::Missing { role, what: "working directory" });
    let (mut mounts, cwd) = match request.role {
        RoleName::Planner => (vec![read_only(input("source", "inputs.source")?, "/source")], PathBuf::from("/source")),
        RoleName::Auditor => (vec![read_only(input("package", "inputs.package")?, "/package")], PathBuf::from("/package")),
        RoleName::Builder | RoleName::Implementer => (vec![writable(work_dir()?, "/work")], PathBuf::from("/work")),
        RoleName::Calibrator => {
            let mut mounts = Vec::new();
            for rollout in request.inputs.get("rollouts").and_then(|v| v.as_array()).into_iter().flatten() {
                let field = |key| rollout.get(key).and_then(|v| v.as_str());
                let (Some(id), Some(dir)) = (field("rollout"), field("episode_dir")) else {
                    return Err(ViewError::Missing { role, what: "rollout id and episode directory" });
                };
                mounts.push(read_only(dir, format!("/rollouts/{id}")));
            }
            (mounts, PathBuf::from(HANDOFF_MOUNT))
        }
    };
    mounts.push(writable(handoff_dir, HANDOFF_MOUNT));
    Ok(RoleView { mounts, cwd })
}
