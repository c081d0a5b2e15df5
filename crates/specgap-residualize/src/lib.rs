//! # specgap-residualize
//!
//! Seed 001's *Residualization* (§3.2, App. B): turning predecessor runs into validated
//! residual states of task packages, as one resumable pipeline over any agents' runs.
//!
//! | stage | paper | here |
//! | --- | --- | --- |
//! | I. generation | predecessors attempt each task from the clean state under a generous budget; trajectory, termination reason, declared completion, verdict and a binary-safe patch are recorded | an ordinary run store ([`generation::PROTOCOL`] is what `specgap residualize generate` runs); [`source`] reads any run back |
//! | II. automatic filtering | submitted but failing, changed beyond incidental artifacts, no infrastructure failure, duplicates once | [`filter`] with [`ignore`] rules and [`diff`]'s normalized diffs |
//! | III. human review | two reviewers judge each candidate from the request, the changes and a trajectory summary: task-directed, task–verifier consistent | [`review`]: bundles ([`summary`]'s deterministic digest, a hook for a model summary), CSV label sheets, Cohen's kappa |
//! | IV. reconstruction | apply the patch at the base without a commit; check the state is usable and still fails | [`build`]: `residual/<id>/state.patch` + `meta.toml`, rebuilt, run, re-verified, installed |
//! | Table 5 | candidates excluded at each step | [`funnel`] (Markdown and JSON), every stage |
//!
//! [`pipeline::advance`] runs the stages in order as far as its inputs allow and stores each
//! result under `DIR/residualize/` ([`pipeline`]'s guide lists the files and the rules of
//! resumption), so a second call continues where the first stopped. State ids are the
//! predecessor episodes' ids.
//!
//! Why a crate of its own: the pipeline reads run stores (`specgap-store`), loads and checks
//! packages (`specgap-task`), rebuilds and runs states in the sandbox (`specgap-sandbox`) and
//! computes agreement (`specgap-stats`). The engine runs episodes and has no business with
//! review sheets or statistics; the report reads stores but never writes packages. Generation
//! itself needs the engine's runner, which the `specgap` binary drives, so this crate does not
//! depend on the engine.
//!
//! ```no_run
//! use specgap_residualize::pipeline::{Request, TargetRequest, advance};
//! let request = Request {
//!     dir: "runs/predecessors".into(),
//!     reviews: vec![("alice".into(), "alice.csv".into()), ("bob".into(), "bob.csv".into())],
//!     target: Some(TargetRequest::WriteTo("residual-tasks".into())),
//!     sandbox: true,
//!     ..Request::default()
//! };
//! let advanced = advance(&request, None, &|line| eprintln!("{line}"))?;
//! print!("{}", advanced.funnel.markdown());
//! # Ok::<(), specgap_residualize::ResidualizeError>(())
//! ```
#![deny(missing_docs)]

pub mod build;
pub mod diff;
mod error;
pub mod filter;
mod fsio;
pub mod funnel;
pub mod generation;
pub mod ignore;
pub mod pipeline;
pub mod review;
pub mod source;
pub mod summary;

pub use error::ResidualizeError;
