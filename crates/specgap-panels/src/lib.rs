//! # specgap-panels
//!
//! The model panels of seed 002 — several models voting on one question, each ballot stored —
//! used three ways:
//!
//! | use | what it decides | vote rule | when | module |
//! | --- | --- | --- | --- | --- |
//! | coverage judge | whether an episode's questions cover each clarification target (Recall, Precision, Ask-F1, …) | covered on ≥ 3 of 5 configured judges; matched questions = union cited by them (§4.1, A.3) | after the run: `specgap judge RUN --panel FILE` | [`judge`] |
//! | extractor | the delivery score of an artifact in another layout than the case evaluator reads | stop once 3 scores agree to 4 decimal places; none: unscored (§4.1, A.3) | after the run: `specgap extract RUN --panel FILE` | [`extract`] |
//! | user reviewer | whether each owner / customer turn kept to the user's profile (error taxonomy, severity) | a tag on a strict majority of the ballots returned (issue 28) | after the run: `specgap review-user RUN --panel FILE` (offline rules without `--panel`) | [`review`] |
//! | question detector | whether an agent's reply text asks the client something, and what | strict majority of the ballots returned (A.9.3) | live, on each reply of the delivery text channel: `specgap run --detector-panel FILE` | [`detector`] |
//!
//! One mechanism serves all three: a panel file ([`config`]) names the models and may replace
//! the built-in prompts ([`prompts`]); each model is a *seat* ([`seat`]) on the chat client of
//! `specgap-agents`, whose retries with seeded backoff, deadline, usage and cost are reused as
//! they are; a reply that is not the JSON asked for gets one repair retry; the seats are called
//! in a seeded order per subject ([`order`]); the vote rules are pure functions ([`vote`]); an
//! extractor's `_result.json` report and whether its extraction counts — output with source
//! provenance, rejected, or no answer of the agent's found — are [`provenance`]'s.
//! Every ballot — model, prompt version, each request and response — goes to the run store's
//! `ballots` table, the panel's configuration and prompt hash to `panels`, and its model usage
//! to `usage` under the role `judge`, `extractor` or `detector`.
//!
//! Why a crate of its own: the panels join the chat client (`specgap-agents`), the store, the
//! report's question units and task contexts, the engine's session types and the sandbox
//! (extraction sessions); none of those should depend on the others for it, and
//! `specgap-report` stays free of model calls (the offline rules remain its only path).
#![deny(missing_docs)]

pub mod config;
pub mod detector;
pub mod error;
pub mod extract;
pub mod json;
pub mod judge;
pub mod order;
pub mod prompts;
pub mod provenance;
pub mod review;
pub mod seat;
pub mod vote;

pub use config::{Panel, PanelFile, PanelModel};
pub use detector::{DetectingUser, DetectingUsers, PanelDetector};
pub use error::PanelError;
pub use extract::{ExtractOptions, ExtractSummary, extract_run};
pub use judge::{JudgeOptions, JudgeSummary, judge_run};

/// sha256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).into()
}

/// Lowercase hex sha256 of `bytes`.
pub(crate) fn hex_sha256(bytes: &[u8]) -> String {
    sha256(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
