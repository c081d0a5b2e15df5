//! `cli:<adapter>`: a role played by an agent program (`cli:claude-code` as seed 000 §4.2 did,
//! `cli:codex`, `cli:command=<template>`, ...) run once per request outside an engine episode
//! ([`specgap_agents::cli::alone::run_alone`]): in its own sandbox, behind the model gateway
//! that holds the key, with no harness tool.
//!
//! **What it sees.** The mounts of [`crate::sandbox_view::role_view`] (the Planner the source
//! read-only at `/source`, the Builder its working directory at `/work`, the Auditor the
//! package read-only at `/package`, the Calibrator each rollout's episode directory read-only
//! at `/rollouts/<rollout id>`, the Implementer its workspace copy at `/work`), a fresh
//! empty `/workspace` it starts in, and a fresh `/handoff`.
//!
//! **The hand-off.** The role writes its JSON hand-off to `/handoff/handoff.json`
//! ([`crate::sandbox_view::HANDOFF_FILE`]); when it wrote no such file, its final message is
//! taken instead (unwrapped from one code fence). Every request, retries included, is a fresh
//! run: the message of a retry says why the last answer was refused.
//!
//! **Records.** Request `n` of a role runs in `<runs>/<role>-<n>/` (`workspace/`, `handoff/`,
//! `scratch/`, and `record/` with `trajectory.jsonl` and the gateway's journal); its model
//! usage, as the gateway counted and priced it, is what [`Role::take_usage`] returns, also
//! after a run that failed (the model service failing mid-run: its answered requests count).

use std::path::PathBuf;
use std::time::Duration;

use specgap_agents::cli::CliConfig;
use specgap_agents::cli::alone::{AloneJob, run_alone};

use crate::role::{Role, RoleError, RoleName, RoleRequest, Usage};
use crate::sandbox_view::{HANDOFF_FILE, HANDOFF_MOUNT, RoleView, role_view};

/// Wall time of one role run unless told otherwise (`--role-wall`).
pub const DEFAULT_ROLE_WALL: Duration = Duration::from_secs(3600);

/// A role played by a `cli:` agent (module guide).
#[derive(Debug)]
pub struct CliRole {
    label: String,
    role: RoleName,
    config: CliConfig,
    runs: PathBuf,
    wall: Duration,
    asked: usize,
    usage: Option<Usage>,
}

impl CliRole {
    /// `config`'s program playing `role`, labelled `label` (the spec, `cli:claude-code`), its
    /// runs under `runs`, each at most `wall` long.
    pub fn new(label: impl Into<String>, config: CliConfig, role: RoleName, runs: PathBuf, wall: Duration) -> CliRole {
        CliRole { label: label.into(), role, config, runs, wall, asked: 0, usage: None }
    }

    fn fresh_dir(&self, dir: &std::path::Path) -> Result<(), RoleError> {
        let failed = |source| RoleError::RunDir { role: self.role.as_str(), path: dir.to_owned(), source };
        if dir.exists() {
            fs_err::remove_dir_all(dir).map_err(failed)?;
        }
        for sub in ["workspace", "handoff"] {
            fs_err::create_dir_all(dir.join(sub)).map_err(failed)?;
        }
        Ok(())
    }
}

impl Role for CliRole {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn answer(&mut self, request: &RoleRequest) -> Result<String, RoleError> {
        self.asked += 1;
        let role = self.role.as_str();
        let id = format!("{role}-{}", self.asked);
        let dir = self.runs.join(&id);
        self.fresh_dir(&dir)?;
        let handoff_dir = dir.join("handoff");
        let view = role_view(request, &handoff_dir).map_err(|source| RoleError::View { role, source })?;
        let job = AloneJob {
            id,
            workspace: dir.join("workspace"),
            mounts: view.mounts.clone(),
            scratch: dir.join("scratch"),
            record_dir: dir.join("record"),
            system_prompt: request.prompt.clone(),
            message: message(request, &view),
            wall: self.wall,
        };
        let outcome = match run_alone(&self.config, &job) {
            Ok(outcome) => outcome,
            Err(failure) => {
                // What the run spent before it failed is the role's spending all the same: the
                // pipeline journals it with the error and counts it toward the caps.
                self.usage = Some(failure.usage);
                return Err(RoleError::Cli { role, source: Box::new(failure.error) });
            }
        };
        self.usage = Some(outcome.usage.clone());
        let file = handoff_dir.join(HANDOFF_FILE);
        if file.is_file() {
            return fs_err::read_to_string(&file).map_err(|source| RoleError::RunDir { role, path: file, source });
        }
        match outcome.final_text {
            Some(text) if !text.trim().is_empty() => Ok(crate::chat::unfence(&text).to_owned()),
            _ => Err(RoleError::NoHandoff { role, trajectory: outcome.trajectory }),
        }
    }

    /// Runs already journaled are not repeated: the next run's number follows theirs, so
    /// their directories stay.
    fn resume_after(&mut self, answered: usize) {
        self.asked = answered;
    }

    fn take_usage(&mut self) -> Option<Usage> {
        self.usage.take()
    }
}

/// The message a role run starts with: what is mounted where, the step's inputs as JSON, where
/// the hand-off goes, and on a retry why the last answer was refused.
pub fn message(request: &RoleRequest, view: &RoleView) -> String {
    let mut text = String::from("What you can see:\n");
    for mount in &view.mounts {
        let mode = if mount.writable { "writable" } else { "read-only" };
        text.push_str(&format!("- {} ({mode})\n", mount.sandbox.display()));
    }
    text.push_str("- /workspace (writable, your starting directory, otherwise empty)\n");
    let inputs = serde_json::to_string_pretty(&request.inputs).unwrap_or_default();
    text.push_str(&format!("\nThe inputs of this step, as JSON:\n\n{inputs}\n"));
    if let Some(reason) = &request.retry_reason {
        text.push_str(&format!("\nYour last answer was refused: {reason}\n"));
    }
    text.push_str(&format!(
        "\nWhen you are done, write your JSON hand-off, and nothing else, to {HANDOFF_MOUNT}/{HANDOFF_FILE}, then end your turn.\n"
    ));
    text
}
