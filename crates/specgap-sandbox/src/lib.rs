//! # specgap-sandbox
//!
//! Everything specgap does to files and processes on behalf of an episode (DESIGN §3.1–3.2)
//! and of an evaluator (DESIGN §2 "Evaluator protocol"):
//!
//! | step | API |
//! | --- | --- |
//! | cache a package's clean workspace as a git base with a fixed commit id | [`BaseCache::base`] → [`Base`] |
//! | make an episode's workspace (clean, or a residual state's `state.patch` applied) | [`materialize()`] |
//! | apply a solution overlay (`solutions/gold/`, mutants, …) with its `delete.txt` | [`apply_overlay`] |
//! | the submission as a byte-exact patch against the base (any file names) | [`diff`] |
//! | a copy of the work tree for evaluation | [`freeze`] |
//! | run a command under bubblewrap with limits | [`run`] with a [`CommandSpec`], a [`HostView`] and a [`SandboxConfig`] |
//! | tell beforehand whether the process and memory limits (cgroup v1 or v2) can be applied here | [`Limits::unavailable`] |
//! | run an episode's commands one after another in one long-lived sandbox | [`Session::run_shell`] |
//! | the workspace files each of those commands read, measured with fanotify | [`Session::last_reads`] → [`Reads`] |
//! | run an external agent program in a sandbox of its own, freeze it, end it | [`AgentSandbox`] |
//! | give an image episode a copy-on-write root (overlayfs) and write its changes as a layer | [`Machine`], [`HostView::with_machine`], [`Machine::write_layer`] |
//! | run a package's evaluator and validate its `result.json` | [`run_evaluator`] → [`Evaluation`] or [`EvalError`] |
//! | show a captured stream within a byte budget, cut once with the true counts stated | [`Captured::render`] |
//!
//! ```no_run
//! use std::path::Path;
//! use specgap_sandbox::{BaseCache, CommandSpec, HostView, SandboxConfig, diff, materialize, run};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cache = BaseCache::new("/tmp/run/bases")?;
//! let base = cache.base("3f2a9c", Path::new("examples/tasks/x/workspace"))?;
//! let ws = Path::new("/tmp/run/ws/episode-1");
//! materialize(&base, ws, None)?;
//! let host = HostView::system()?;
//! let out = run(&CommandSpec::shell("echo hi > note.txt", ws), &host, &SandboxConfig::default())?;
//! assert!(out.success());
//! let patch = diff(&base, ws)?; // adds note.txt
//! # let _ = patch; Ok(()) }
//! ```
//!
//! ## Trust
//! The agent under test and the submitted code are untrusted. The harness never runs git (or
//! anything) against an agent's `.git`; every diff comes from the cache's copy of the base
//! with hooks, fsmonitor, external diff, textconv and work-tree attributes disabled (text-only
//! changes are diffed in process, byte for byte as git would). Every command runs as uid 1000
//! without capabilities in new user, PID, IPC, UTS and cgroup namespaces and a network
//! namespace of its own (fresh, or lent from a pool to one sandbox at a time), sees only the
//! system directories, the task's `[environment]` and its own mounts, and is killed whole at
//! its timeout; nothing it starts outlives it. See [`runner`] for the full sandbox view,
//! [`session`] for an episode's commands sharing one sandbox, and [`evaluator`] for the
//! evaluator's and the candidate's.
#![deny(missing_docs)]

pub mod agent;
mod capture;
mod cgroup;
pub mod error;
pub mod evaluator;
mod fsutil;
mod git;
pub mod host;
pub mod machine;
pub mod materialize;
mod netns;
mod patch;
pub mod quota;
pub mod reads;
pub mod rootfs;
pub mod runner;
pub mod scratch;
mod seccomp;
mod server;
pub mod session;
mod shellwords;
mod spawn;
mod watch;

pub use agent::{AgentSandbox, ProgramExit, SandboxProcess};
pub use capture::{Captured, cut_marker};
pub use cgroup::{
    CPU_PERIOD_US, FALLBACK_NICE, NO_CPU_CONTROLLER_ENV, cpu_group_parent, cpu_unavailable, default_sandbox_cpus, sandbox_cpu_quota_us,
    set_sandbox_cpus,
};
pub use error::{MaterializeError, SandboxError};
pub use evaluator::{CandidateLayout, EvalError, Evaluation, EvaluatorRun, run_evaluator};
pub use host::{AGENT_NAMESERVER, HostView};
pub use machine::{LayerSummary, Machine};
pub use materialize::{Base, BaseCache, BoundedDiff, WHOLE_READ_MAX_BYTES, apply_overlay, diff, diff_within, freeze, materialize};
pub use quota::{WorkspaceLimits, over_limit};
pub use reads::{ReadWatch, ReadWatchError, Reads};
pub use rootfs::ImagePlacement;
pub use runner::{CommandOutput, CommandSpec, Limits, Mount, Program, SandboxConfig, WORKSPACE_MOUNT, run};
pub use scratch::memory_scratch;
pub use session::{Session, Shell};
