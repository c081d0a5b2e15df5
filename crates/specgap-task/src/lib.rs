//! # specgap-task
//!
//! Loads, validates and checks task packages of format 1 and 2 (DESIGN §2; [`format2`]'s
//! guide lists what format 2 adds).
//!
//! * [`load`] reads one package directory into a [`TaskPackage`] and enforces every rule that
//!   needs no evaluator run: the required files, unknown keys, unique requirement ids and
//!   priorities, observations and mutants naming known requirements, safe `delete.txt`
//!   entries and symlinks, entry kinds, residual `meta.toml`, the delivery reference. Every
//!   failure is a [`LoadError`] naming the file (and the line and column for TOML).
//! * [`discover`] finds and loads every package below a set of paths, sorted by task name;
//!   when some fail, the error names every one of them.
//! * Each [`TaskPackage`] carries a content hash ([`TaskPackage::hash`]) that keys episodes
//!   in the run store, and the [`TaskPackage::scoring_context`] that
//!   `specgap_protocol::result` needs to validate and score an evaluator's `result.json`.
//! * [`check`] runs the checks of `specgap check` (seed 000 Appendix E.2 for requirement-scored
//!   tasks, seed 001 residual states, seed 002 delivery cases) and renders their table
//!   ([`full_instruction`] is `--strict`'s one-paragraph-per-requirement rule); [`eval`]
//!   evaluates any directory as a submission (`specgap eval`).
//! * Both judge submissions through the [`Judge`] trait; [`SandboxJudge`] materializes the
//!   starter, an overlay or a residual state with `specgap-sandbox` and runs the real evaluator
//!   under bubblewrap. [`leak`] is the leak scan, [`heard`] the commands whose output it also
//!   reads; [`matching`] the shared question-matching rule;
//!   [`owner`] the sentences of `user.toml` the relay owner answers from (and the leak scan
//!   reads); [`residual`] the left-out files of a residual state (shared by `check` and the
//!   report); [`visible_answer`] the registered answers an agent can already read (a `check`
//!   warning, seed 002 §3.2).
//!
//! ```no_run
//! let package = specgap_task::load("examples/tasks/payment-retry")?;
//! for requirement in package.requirements() {
//!     println!("{} (priority {})", requirement.id, requirement.priority);
//! }
//! let judge = specgap_task::SandboxJudge::new(true)?;
//! let report = specgap_task::check::check_package(&package, &judge);
//! print!("{}", specgap_task::check::render_table(&report));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod check;
mod discover;
mod error;
pub mod eval;
pub mod format2;
pub mod format2_env;
pub mod full_instruction;
pub mod heard;
mod judge;
pub mod leak;
mod load;
pub mod matching;
pub mod owner;
mod package;
pub mod residual;
mod sandbox_judge;
pub mod stages;
pub mod synthesis;
mod tree;
pub mod views;
pub mod visible_answer;

pub use discover::{discover, discover_dirs};
pub use error::{LoadError, Location};
pub use format2_env::{ImageEnvironment, ResolvedSource};
pub use judge::{EvaluateError, Judge, Judged, Outcome, Submission};
pub use load::{MACHINE_LAYER_FILE, is_requirement_id, load};
pub use package::{DeliverySchema, Overlay, ResidualState, Solutions, TaskPackage};
pub use sandbox_judge::{JudgeSetupError, SandboxJudge};
pub use stages::{PackageStages, StageText};
pub use views::{TaskViews, ViewError, cache_for, cached_task_root, environment_digests, task_views, views_on, views_with_layer};
