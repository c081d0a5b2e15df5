//! # specgap-audit
//!
//! Human audits of runs and the stability of the simulated user: the evidence the papers rest
//! their measures on (seed 000 §4.2, §5.5–5.6, App. G; seed 001 §3.2, §5; seed 002 §4.3,
//! App. A.8), for any benchmark built on specgap.
//!
//! | module | what it holds | verb |
//! | --- | --- | --- |
//! | [`rubric`] | rubrics: label columns, their values, what a page may show (built-in and TOML) | — |
//! | [`unit`] | the units an audit samples (episodes, failed episodes, clarification targets with their questions, user replies, resamples, extraction verdicts, task packages, residual candidates) and their stratum fields | — |
//! | [`sample`] | the seeded stratified draw, its manifest, the label sheet (CSV) | `specgap audit sample` |
//! | [`page`] | one self-contained, escaped HTML page per item, showing only what the rubric allows | `specgap audit sample` |
//! | [`import`] | reading a rater's filled sheet: every row, label and value checked, then stored | `specgap audit import` |
//! | [`agreement`] | per-label rates (reweighted to the population) and agreement (percent, Cohen's κ, confusion) with case-cluster bootstrap intervals | `specgap audit report` |
//! | [`resample`] | re-sending recorded user-model requests byte for byte, K times each | `specgap resample` |
//! | [`summary`] | an optional model summary of an episode's trajectory on its page (role `summarizer`) | `specgap audit sample --summary-model` |
//!
//! ## Flow
//! `sample` draws items from one or more run stores and records the sample (its manifest,
//! rubric included, and items with stratum, case and weight) in the first run's store, the
//! sample's *home*; it writes `DIR/sheet.csv` (one empty row per item) and `DIR/pages/`.
//! Raters fill copies of the sheet; `import` checks each against the stored sample and keeps
//! it under the rater's name; `report` reads every sheet of every sample of the home run.
//! `resample` stores the replies beside the recorded request (table `resamples`) and draws a
//! sample of unit `resample` with rubric `seed000-resample`, so the same import and report give
//! the paper's stability summaries.
//!
//! Determinism: the draw, the item order and every bootstrap take the seed given to `sample`
//! (recorded in the manifest); the same seed over the same stores gives the same sample id,
//! items, sheet and pages.
#![deny(missing_docs)]

pub mod agreement;
mod candidate_page;
pub mod error;
mod extraction_page;
pub mod import;
pub mod page;
pub mod resample;
pub mod rubric;
pub mod sample;
pub mod summary;
mod task_page;
pub mod unit;

pub use error::AuditError;
pub use rubric::{Disclosure, LabelColumn, Rubric};
pub use unit::UnitKind;
