//! # specgap-report
//!
//! The measures of the three source papers, computed from run stores, and the reports that
//! present them.
//!
//! ## Where things are
//!
//! | module | what | source |
//! | --- | --- | --- |
//! | [`run`] | [`RunData`]: a store's rows, the task packages' context, offline judgements | DESIGN §6 |
//! | [`episode`] | [`Episode`]: one episode joined across tables; grouping dimensions | — |
//! | [`first`] | Score@k / Success@k of one episode, carried forward | seed 000 §4.1 |
//! | [`outcome`] | Score@k and Success@k per group and family, outcome cost, Partial as a share of Full, In round / Ahead, plan mode against Partial | seed 000 §4.1, §5.2–5.4, Table 4–7 |
//! | [`residual`] | Res, Clean, Residual Gap, CondFail, predecessor groups, acceptance bias, clean against residual rankings | seed 001 §5.2, App. C.2, D |
//! | [`benchmark`] | statistics of the suite: residual states (Table 2), requirements stated per task (Table 3) | seed 001 §4, App. A; seed 000 Table 3 |
//! | [`plan`] | planned runs of delivery cases: the store joined with `run.toml`'s plan; why a run has no score | seed 002 §4.2, App. A.3 |
//! | [`extraction`] | which delivery score a run of a case with a submission schema gets: the extraction panel's or the direct artifact's | seed 002 §4.1, A.3 |
//! | [`delivery`] | Quality, DSR, validity, pass@k, pass^k over planned runs, scored-only column, zero-score signatures, oracle curves | seed 002 §4.2, App. A.3, A.6, A.7 |
//! | [`clarification`] | Recall, Precision, Ask-F1, KQC1, ATC (rounds), Redund., ask rate, type- and domain-specific Recall | seed 002 §4.2, App. A.3, A.5, A.6 |
//! | [`cases`] | per-case data of the seed 002 cells and their 95% case-bootstrap intervals | seed 002 App. A.4 |
//! | [`associations`] | Spearman matrix with Holm, model-demeaned ρ, Recall by type and domain against Quality, the domain mix against Quality, runtime and cost against Quality | seed 002 §5.2–5.3, App. A.4–A.5 |
//! | [`case_associations`] | across cases: the case-level Quality ranking ρ between systems, issue-type share against case Quality and DSR | seed 002 §5.2, App. A.5 Table 8(b) |
//! | [`repeats`] | within-system repeat analyses: higher-Recall repeats, zero-score repeats, covering a point of a domain | seed 002 §5.3, App. A.5, A.7 |
//! | [`scoring_source`] | where each group's delivery scores came from (extracted, no artifact, unavailable, never extracted) and the extraction failures | seed 002 §4.1, A.3, Table 17 |
//! | [`judge`] | the offline clarification-coverage judge (shared matching rule); which judge's verdicts a report uses | seed 002 §4.1, A.3 |
//! | [`agreement`] | a coverage panel's judges against each other and against the offline rule (Cohen's κ) | seed 002 §4.3, A.8 |
//! | [`diff`], [`opened`], [`shell`] | workspace diffs (Kept, Left-out files); what each step did with files (`specgap_protocol::action`), with shell commands read by a small POSIX shell reader; opened files and inspection | seed 001 App. D.2 |
//! | [`report`], [`render`], [`render_delivery`], [`render_analyses`], [`svg`] | the report: Markdown, self-contained HTML with SVG charts, versioned JSON | docs/report-schema.md |
//! | [`faithful`] | the report's first lines: "protocol P, faithful" or each deviation (overrides, offline stand-ins for model roles, combinations no paper runs, an offline coverage judge, no extraction) | issue 24 |
//! | [`inputs`] | checks on the runs given to a report: duplicates, shards, missing results, replicates differing beyond the seed | seed 000 §5.6, DESIGN §6 |
//! | [`network`] | `cli:` episodes that tried to reach the network outside the gateway, or ran without the tripwire (warnings) | issue 15 |
//! | [`usage`] | model usage and cost per group and role, from the stores' `usage` rows | DESIGN §6 |
//! | [`pricing`] | which recorded costs are known: models without a price are `unpriced` (null in JSON), never a 0 in a total | DESIGN §6 |
//! | [`noise`] | run-to-run noise per group: flip rate, within-task sd, task / repeat variance split | issue 28; Searle et al. 1992 §3.5–3.6 |
//! | [`simulator`] | the simulated user's reviews (`review-user`): findings per 100 user turns by tag, exclusion of episodes with a severe finding | issue 28 |
//! | [`study`] | `plan-study`: tasks × repeats needed for a difference at a power, per measure of each seed, from a pilot or assumed sds; seeded simulation check | issue 28 |
//! | [`detectable`] | the minimum detectable difference of every compared measure (paired t / seeded simulation), with a verdict | issue 28; statsmodels `TTestPower` |
//! | [`mod@compare`] | runs paired by task: bootstrap interval, Wilcoxon, Holm over a family (one call, or a family file) | seed 002 §5.1, A.6 |
//!
//! ## How the pieces fit
//!
//! ```no_run
//! use specgap_report::{RunData, ReportOptions, build_report, render::render_markdown};
//! let run = RunData::load(std::path::Path::new("runs/latest"))?;
//! let report = build_report(&[run], &ReportOptions::default())?;
//! print!("{}", render_markdown(&report, "runs/latest"));
//! # Ok::<(), specgap_report::ReportError>(())
//! ```
//!
//! [`RunData::load`] reads every row of a store once; the measures are pure functions of
//! [`Episode`]s, except the seed 001 acceptance-bias measures, which read final diffs, the
//! starting states' diffs (`start/workspace.diff`, else the state rebuilt from its package) and
//! trajectories of normally submitted residual episodes from the run directory. Statistics
//! (bootstrap, Wilcoxon, Holm, Spearman, pass@k, mean ± sd) come from `specgap-stats`.
//!
//! A measure that does not apply — no delivery task, no question to judge, no residual start,
//! a package that cannot be read — is absent (`None`, left out of JSON, `—` in tables), never
//! 0. Only scored episodes (finished, with a scored end reason) enter measures; errors and
//! interruptions are counted apart — except in seed 002's delivery cells, which are defined over
//! the planned runs: there an unscored planned run is listed and leaves the cells incomplete
//! ([`plan`]).
#![deny(missing_docs)]

pub mod agreement;
pub mod associations;
pub mod benchmark;
pub mod case_associations;
pub mod cases;
pub mod clarification;
pub mod compare;
pub mod context;
pub mod delivery;
pub mod detectable;
pub mod diff;
pub mod episode;
mod error;
pub mod extraction;
pub mod faithful;
pub mod first;
pub mod inputs;
pub mod judge;
mod keyed;
pub mod machine;
pub mod network;
pub mod noise;
pub mod opened;
pub mod outcome;
pub mod plan;
pub mod pricing;
pub mod render;
pub mod render_analyses;
pub mod render_delivery;
pub mod repeats;
pub mod report;
pub mod reset;
pub mod residual;
pub mod run;
pub mod scoring_source;
pub mod shell;
pub mod simulator;
pub mod study;
pub mod svg;
pub mod usage;
pub mod verdicts;

pub use compare::{CompareOptions, Comparison, Selection, compare, compare_family};
pub use episode::{Dim, Episode};
pub use error::ReportError;
pub use report::{Report, ReportOptions, build_report};
pub use run::RunData;
