//! # specgap-harbor
//!
//! Harbor interop (issue 26; docs/harbor.md).
//!
//! * [`import()`] (`specgap import harbor <task-dir|dataset-dir> --out <dir>`) writes one
//!   specgap package (format 2) per Harbor task, or refuses it with its reasons
//!   ([`Outcome::line`], [`summary`]). [`task::plan`] decides the mapping; [`dockerfile`]
//!   which Dockerfiles run on the host's programs; [`gold`] turns `solution/solve.sh` into the
//!   gold overlay. The package's evaluator is `harbor_verify.py` ([`VERIFIER_PROGRAM`]),
//!   which runs the task's own `tests/test.sh` through the candidate launcher with a
//!   candidate layout (`specgap_sandbox::CandidateLayout`) and converts Harbor's
//!   `reward.txt` / `reward.json` into specgap's `result.json`, refusing rewards a
//!   submission forged where it can tell.
//! * [`export::export_task`] (`specgap export-task`) writes a package as a Harbor task
//!   directory.
//!
//! The Harbor version followed throughout is [`HARBOR_VERSION`].
#![deny(missing_docs)]

pub mod dockerfile;
mod error;
pub mod export;
pub mod gold;
mod import;
pub mod task;

pub use error::HarborError;
pub use gold::GoldOutcome;
pub use import::{
    HARBOR_COPY, ImportOptions, Outcome, PROTOCOL, PROTOCOL_FILE, STARTER_INCOMPLETE, VERIFIER_COMMANDS, VERIFIER_PROGRAM, import,
    import_task, summary, user_profile,
};
pub use specgap_env::EngineChoice;
pub use task::{HARBOR_VERSION, Refusal};
