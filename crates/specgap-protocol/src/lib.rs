//! # specgap-protocol
//!
//! The plain data types every other specgap crate speaks. Nothing here does I/O; each type is
//! a serde mirror of a normative contract in `DESIGN.md` (or, for [`escape`], a pure text rule
//! every renderer shares):
//!
//! | module | contract |
//! | --- | --- |
//! | [`package`] | task package formats 1 and 2 (DESIGN §2): `task.toml`, `requirements.toml`, `observations.toml`, `user.toml`, `clarifications.toml`, residual `meta.toml` |
//! | [`action`] | the normalized vocabulary of what an agent's step did with files (read, write, edit, search, list, run), shared by the report's shell analysis and agent adapters (seed 001 App. D.2) |
//! | [`reads`] | when a file a command read counts as *opened*: its content reached the agent (seed 001 App. D.2; issue 24 item 4) |
//! | [`event`] | trajectory events and tool calls (DESIGN §3, §6) |
//! | [`run`] | `run.toml` and its protocol version, episode keys and ids, end reasons (DESIGN §3.5, §6) |
//! | [`text`] | observation `{key}` placeholders and one-line error chains |
//! | [`request`] | model requests stored once per message: body segments, content addresses, the byte-for-byte rebuild (the chat user's requests, `specgap resample`) |
//! | [`path_quote`] | file names as bytes: git's C-style quoting in diffs, the quoting of names shown to the agent, and reading both back |
//! | [`escape`] | untrusted text (an agent's, a package's) written into files people open: HTML text and attribute values, Markdown code fences and table cells — the one escaper of the report, residualize's review bundles and the audit pages |
//! | [`result`] | the evaluator protocol's `result.json` (DESIGN §2) and the scoring kinds that turn it into Score and Success |
//!
//! Parsing files into these types (and reporting errors that name the file) is the job of
//! `specgap-task`; this crate only defines shapes and the pure rules attached to them.
#![deny(missing_docs)]

pub mod action;
pub mod escape;
pub mod event;
pub mod package;
pub mod path_quote;
pub mod reads;
pub mod request;
pub mod result;
pub mod run;
pub mod text;
