//! The gold solution of an imported task: the task's `solution/solve.sh` (each step's, in
//! order) run once at import on a copy of the starter, in the sandbox, and stored as the
//! overlay `solutions/gold/` (changed and new files, and `delete.txt` for removed ones), so
//! `specgap check` proves the gold passes and the starter fails (Harbor's oracle run).
//!
//! A multi-step task's steps run as Harbor's oracle runs them: before step k's `solve.sh`,
//! step k's `workdir/` files are added (the stage's `files`), and what step k's `solve.sh`
//! changed is also that stage's own gold, `stages/<label>/gold/` (written only when it changed
//! something), which scripted `gold` applies at stage k.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err as fs;
use specgap_sandbox::{CommandSpec, HostView, Limits, Mount, SandboxConfig};

use crate::error::{HarborError, io, walk};
use crate::import::{copy_file, copy_tree, write};
use crate::task::Plan;

/// Longest a `solve.sh` may run at import when the task sets no agent timeout.
const SOLVE_TIMEOUT_SEC: u64 = 600;

/// What became of a task's gold solution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoldOutcome {
    /// `solutions/gold/` was written: `files` changed or new files, `deleted` removed ones.
    Written {
        /// Files in the overlay.
        files: usize,
        /// Entries of `delete.txt`.
        deleted: usize,
    },
    /// The task has no `solution/solve.sh`.
    NoSolution,
    /// `solve.sh` failed; no gold was written.
    Failed {
        /// Which step, its exit status and the tail of its stderr.
        why: String,
    },
    /// The task runs on an image that could not be built at import (the reason).
    NeedsEnvironment {
        /// Why the image could not be built or run.
        why: String,
    },
    /// The import was asked not to run solutions.
    NotAsked,
}

impl GoldOutcome {
    /// A few words for the import line and NOTES.md.
    pub fn describe(&self) -> String {
        match self {
            GoldOutcome::Written { files, deleted } => {
                format!("solutions/gold/ from solve.sh ({files} files, {deleted} deleted)")
            }
            GoldOutcome::NoSolution => "none (no solution/solve.sh)".into(),
            GoldOutcome::Failed { why } => format!("none (solve.sh failed: {why})"),
            GoldOutcome::NeedsEnvironment { why } => format!("not made (solve.sh needs the task's image: {why})"),
            GoldOutcome::NotAsked => "not made (--no-gold)".into(),
        }
    }
}

/// How `solve.sh` is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// `bash solve.sh` (host tasks: bash is one of their host programs).
    Bash,
    /// The script itself, made executable, so its `#!` line picks the interpreter, as
    /// Harbor's oracle starts it (image tasks, whose image may have no bash).
    Direct,
}

/// Runs the steps' `solve.sh` on a copy of `package/workspace`, in the view `host` (the
/// host's programs, or the task's image), and writes the overlay.
///
/// # Errors
/// I/O errors; a sandbox that cannot start. A failing `solve.sh` is
/// [`GoldOutcome::Failed`].
pub fn make_gold(plan: &Plan, package: &Path, host: &HostView, launch: Launch, sandbox: bool) -> Result<GoldOutcome, HarborError> {
    if plan.steps.iter().all(|s| s.solve.is_none()) {
        return Ok(GoldOutcome::NoSolution);
    }
    let staged = plan.steps.len() > 1;
    let mut stage_golds: Vec<PathBuf> = Vec::new();
    let config = SandboxConfig { enabled: sandbox };
    config.check()?;
    let scratch = tempfile::Builder::new().prefix("specgap-harbor-gold-").tempdir().map_err(io(std::env::temp_dir()))?;
    let workspace = scratch.path().join("workspace");
    let starter = package.join("workspace");
    copy_tree(&starter, &workspace)?;
    let timeout = Duration::from_secs(plan.wall_sec.unwrap_or(SOLVE_TIMEOUT_SEC));
    for ((index, plan_step), label) in plan.steps.iter().enumerate().zip(crate::import::stage_labels(plan)) {
        let step = plan_step.name.as_str();
        if index > 0
            && let Some(files) = &plan_step.staged
        {
            crate::import::copy_staged(&plan.dir.join(files), &workspace)?;
        }
        let Some(solve) = plan_step.solve.as_deref() else { continue };
        let before = scratch.path().join(format!("before-{index}"));
        if staged {
            copy_tree(&workspace, &before)?;
        }
        let solution_dir = plan.dir.join(solve).parent().map(Path::to_path_buf).unwrap_or_default();
        let copy = scratch.path().join(format!("solution-{step}"));
        copy_tree(&solution_dir, &copy)?;
        let script = match launch {
            Launch::Bash => "bash /solution/solve.sh",
            Launch::Direct => {
                make_executable(&copy.join("solve.sh"))?;
                "/solution/solve.sh"
            }
        };
        let mut spec = CommandSpec::shell(script, &workspace);
        let (workdir, solution) =
            if sandbox { (PathBuf::from(&plan.workdir), PathBuf::from("/solution")) } else { (workspace.clone(), copy.clone()) };
        if sandbox {
            spec.mounts = vec![
                Mount { host: workspace.clone(), sandbox: workdir.clone(), writable: true },
                Mount { host: copy.clone(), sandbox: solution.clone(), writable: false },
            ];
        } else {
            spec.program = specgap_sandbox::Program::Shell(format!("bash '{}/solve.sh'", copy.display()));
        }
        spec.cwd = workdir;
        spec.limits = Limits { timeout, ..Limits::default() };
        let output = specgap_sandbox::run(&spec, host, &config)?;
        if output.timed_out || output.exit_code != Some(0) {
            let status = if output.timed_out { "timed out".to_string() } else { format!("status {:?}", output.exit_code) };
            let stderr = output.stderr.text();
            let tail: String = stderr.chars().rev().take(200).collect::<Vec<_>>().into_iter().rev().collect();
            // A task whose oracle fails has no gold at all: no stage keeps its own either.
            for dir in &stage_golds {
                fs::remove_dir_all(dir).map_err(io(dir))?;
            }
            return Ok(GoldOutcome::Failed { why: format!("step {step}, {status}: {}", tail.trim()) });
        }
        if staged {
            let gold = package.join(crate::import::stage_gold_dir(&label));
            match write_overlay(&before, &workspace, &gold)? {
                GoldOutcome::Written { files: 0, deleted: 0 } => fs::remove_dir_all(&gold).map_err(io(&gold))?,
                _ => stage_golds.push(gold),
            }
        }
    }

    write_overlay(&starter, &workspace, &package.join("solutions/gold"))
}

fn make_executable(path: &Path) -> Result<(), HarborError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(path).map_err(io(path))?.permissions().mode();
    fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o755)).map_err(io(path))
}

/// Writes the overlay turning `starter` into `solved`.
fn write_overlay(starter: &Path, solved: &Path, gold: &Path) -> Result<GoldOutcome, HarborError> {
    let before = regular_files(starter)?;
    let after = regular_files(solved)?;
    fs::create_dir_all(gold).map_err(io(gold))?;
    let mut files = 0;
    for rel in &after {
        let new = solved.join(rel);
        let changed =
            !before.contains(rel) || fs::read(starter.join(rel)).map_err(io(starter.join(rel)))? != fs::read(&new).map_err(io(&new))?;
        if changed {
            copy_file(&new, &gold.join(rel))?;
            files += 1;
        }
    }
    let deleted: Vec<&PathBuf> = before.difference(&after).collect();
    if !deleted.is_empty() {
        let lines: String = deleted.iter().map(|p| format!("{}\n", p.display())).collect();
        write(&gold.join("delete.txt"), &lines)?;
    }
    Ok(GoldOutcome::Written { files, deleted: deleted.len() })
}

/// Workspace-relative paths of the regular files below `root` (links and `.git` left out).
fn regular_files(root: &Path) -> Result<BTreeSet<PathBuf>, HarborError> {
    let mut files = BTreeSet::new();
    for entry in walkdir::WalkDir::new(root).into_iter().filter_entry(|e| e.file_name() != ".git") {
        let entry = entry.map_err(walk(root))?;
        if entry.file_type().is_file() {
            files.insert(entry.path().strip_prefix(root).unwrap_or(entry.path()).to_path_buf());
        }
    }
    Ok(files)
}
