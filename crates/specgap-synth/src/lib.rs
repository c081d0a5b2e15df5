//! # specgap-synth
//!
//! `specgap synthesize`: seed 000's task-construction pipeline (TiGanTrans, §4.2, Figure 3,
//! App. E) turning a source task whose instruction states every requirement into a checked
//! partial / full task package, with each of the four roles played through a pluggable
//! [`role::Role`].
//!
//! * [`handoff`] — the structured hand-offs ([`handoff::PlannerBrief`],
//!   [`handoff::BuilderHandoff`], [`handoff::AuditorVerdict`], [`handoff::CalibratorVerdict`]),
//!   parsed and validated by [`handoff::parse`] into errors that name the field.
//! * [`role`] — the [`role::Role`] seam and the offline [`role::ScriptedRole`]
//!   (`scripted:<file>`); [`role::role_from_spec`] names what cannot play a role yet.
//! * [`chat`] — `chat:<model>` roles: a conversation per hand-off with the chat agent's client,
//!   shown exactly what the paper gives that role; writing roles send their files in the
//!   hand-off.
//! * [`acceptance`] — the checks specgap itself runs between Builder and Auditor:
//!   `check --strict` plus the `brief:*` rows.
//! * [`pipeline`] — [`pipeline::synthesize`]: the stages, the fix and redesign loops, the
//!   iteration limits ([`pipeline::Limits`]), the output directory.
//! * [`rollouts`] — the reference agent's calibration rollouts under full, partial and
//!   literal ([`rollouts::Rollouts`], supplied by the CLI), summarized for the Calibrator.
//! * [`journal`] — `<out>/journal.json`, every hand-off, check and verdict.
//! * [`prompts`] — the role prompts (replaceable files).
//! * [`review`] — human review: pages, sheets, and the import that marks the package's
//!   `synthesis.toml` reviewed with a version.
//! * [`trajectory`] — the rollouts' trajectories as a `chat:` Calibrator reads them.
//! * [`sandbox_view`] — the mounts a role played in its own sandbox would get (App. E).
//!
//! What this slice does not do yet (`cli:` roles, `--max-cost`) is listed in
//! `docs/synthesize.md`.
//!
//! ```no_run
//! use specgap_synth::pipeline::{Config, Limits, Roles, synthesize};
//! use specgap_synth::role::role_from_spec;
//! let config = Config {
//!     source: "examples/tasks/payment-retry".into(),
//!     out: "synth-out".into(),
//!     limits: Limits::default(),
//!     prompts: Default::default(),
//!     resume: false,
//! };
//! let mut roles = Roles {
//!     planner: role_from_spec("scripted:planner.json")?,
//!     builder: role_from_spec("scripted:builder.json")?,
//!     auditor: role_from_spec("scripted:auditor.json")?,
//!     calibrator: role_from_spec("scripted:calibrator.json")?,
//!     implementer: None,
//!     reference: None,
//! };
//! let judge = specgap_task::SandboxJudge::new(true)?;
//! let done = synthesize(&config, &mut roles, &judge)?;
//! println!("ready: {}", done.package.display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod acceptance;
pub mod chat;
pub mod cli_role;
pub mod handoff;
pub mod journal;
pub mod pipeline;
pub mod prompts;
pub mod review;
pub mod role;
pub mod rollouts;
pub mod sandbox_view;
pub mod trajectory;
mod tree;
