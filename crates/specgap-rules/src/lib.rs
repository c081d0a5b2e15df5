//! # specgap-rules
//!
//! The evaluation protocols of the three source papers as named, recorded objects (issue 24
//! item 1). A [`Protocol`] fixes everything a paper fixes about a run: the conditions and starts
//! it offers, the budgets ([`BudgetRules`]), the end rules ([`EndRules`]), which roles are
//! played by models and how their votes combine ([`Roles`]), the number of repeats and the
//! measures the report shows. Each end rule, budget and default belongs to a protocol and acts
//! only under it: the engine asks the protocol whether a rule applies
//! ([`EndRules::repeated_call`] and its siblings).
//!
//! | name | paper | what it is |
//! | --- | --- | --- |
//! | [`tiganeval()`] | seed 000 (TiGanEval) | partial / full / literal / plan on requirement tasks; 120 turns, 360 tool calls, no wall clock; four loop rules (App. F); a model owner (App. F.4) |
//! | [`swe_residual()`] | seed 001 (SWE-Residual) | blind continuation from clean and residual starts; the source benchmark's budgets, the same for both starts (§4.1); no harness loop rules (the scaffold's own) |
//! | [`fde_bench()`] | seed 002 (FDE-Bench) | hidden / interact / interact-req / full-info / oracle on delivery cases; 43,200 s, no step cap, 30 clarification rounds (§5.1, A.3); model customer, detector, 5-judge coverage panel, 5-route extractors; three repeats |
//! | `custom` | — | a protocol file ([`load_custom`]) that lists every rule, for combinations no paper runs (a residual start with a partial instruction and an owner) |
//!
//! The name `specgap-rules` keeps a paper's protocol apart from the crate `specgap-protocol`
//! (the shared serde types) and from `PROTOCOL_VERSION` (the version of what the harness's
//! episode semantics are): docs/decisions.md "Named protocols".
//!
//! Numbers in the rules use `0` for "off" (an end rule that does not exist, a budget without a
//! cap), so a recorded protocol is a plain TOML table with every key present.

#![deny(missing_docs)]

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

mod builtin;
mod file;

pub use builtin::{builtin, builtin_names, fde_bench, swe_residual, tiganeval};
pub use file::{ProtocolFileError, load_custom, parse_custom};

/// The name of the protocol read from a file.
pub const CUSTOM: &str = "custom";

/// One paper's (or a custom file's) evaluation protocol (module guide).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// `tiganeval`, `swe-residual`, `fde-bench` or `custom`.
    pub name: String,
    /// Where its rules come from, in words (`seed 000 §5.1, App. D, App. F`; a custom file's
    /// own description).
    pub source: String,
    /// The condition presets it offers (`partial`, `full`, …; `oracle` stands for every
    /// `oracle:R`).
    pub conditions: Vec<String>,
    /// The starts it offers: `clean`, `residual`.
    pub starts: Vec<String>,
    /// Budgets of every episode.
    pub budgets: BudgetRules,
    /// The end rules the episode loop follows.
    pub end_rules: EndRules,
    /// Which roles are played by models, and their vote rules.
    pub roles: Roles,
    /// Repeats of every (task, condition, start) when `--repeats` is not given.
    pub repeats: u32,
    /// The measures and tables the report leads with (names of report sections, in words).
    pub measures: Vec<String>,
}

/// The budgets a protocol fixes (DESIGN §4 "Budget precedence": a flag or a task's `[budget]`
/// goes over them). `0` means no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRules {
    /// Agent turns per episode (seed 000 §5.1: 120); `0`: no cap (seed 002).
    pub turns: u32,
    /// Tool calls per episode (seed 000 §5.1: 360); `0`: no cap.
    pub tool_calls: u32,
    /// Wall-clock seconds per episode (seed 002 §5.1: 43,200); `0`: no wall clock (seed 000
    /// names none).
    pub wall_sec: u64,
    /// Submissions of a condition with consequence feedback (seed 000 §5.1: up to four); a
    /// condition without feedback always has one.
    pub submissions: u32,
    /// Clarification rounds a delivery condition answers before the customer asks the agent to
    /// proceed (seed 002 A.3: at most 30); `0`: no limit.
    pub clarification_rounds: u32,
    /// Whether the agent's prompt states the wall-clock budget (no paper does).
    pub announce_wall: bool,
}

/// The loop rules that end an episode (DESIGN §3.5), each with its count, `0` when the
/// protocol has no such rule. Budgets, context overflow and the submission rules end every
/// protocol's episodes and are not listed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndRules {
    /// The Nth consecutive identical call (same tool and arguments) is not run and ends the
    /// episode `loop_repeated_call` (seed 000 App. F: the fourth).
    pub repeated_call: u32,
    /// The Nth consecutive command that succeeds with blank output ends the episode
    /// `loop_blank_output` (seed 000 App. F: the fourth `run_experiment`).
    pub blank_output: u32,
    /// The Nth consecutive `ask_user` under an owner condition is not answered and ends the
    /// episode `loop_ask_user` (seed 000 App. F: the fourth owner question).
    pub ask_user: u32,
    /// The Nth consecutive reply without a tool call ends the episode `no_tool_call` (the
    /// earlier ones get a reminder). No paper lists it for its own harness; specgap keeps it
    /// for seed 002, whose scaffolds stop when their model stops calling tools
    /// (docs/decisions.md "Named protocols").
    pub no_tool_call: u32,
    /// The Nth consecutive refusal or content-filter stop ends the episode `refusals` (seed 000
    /// App. F: "persistent content filtering"; specgap reads persistent as three).
    pub refusals: u32,
}

/// Which roles a protocol has played by models (seed 000 App. F.4; seed 002 §4.1, A.3, A.9),
/// each `None` when the protocol has no model for it (the harness's deterministic rule is then
/// the protocol's own, not a stand-in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roles {
    /// The project owner who answers questions and turns observations into instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Panel>,
    /// The client who answers clarification questions from the business information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer: Option<Panel>,
    /// The judges of question coverage of clarification targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage_judge: Option<Panel>,
    /// The detector of questions in prose replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_detector: Option<Panel>,
    /// The extractors that bring a delivery into the evaluator's schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractors: Option<Panel>,
}

/// A model-backed role: how many models play it and how many must agree for a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// Models (1: one model plays the role).
    pub models: u32,
    /// Agreeing models a verdict needs (1 for a single model).
    pub agree: u32,
}

/// A role of [`Roles`], by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RoleName {
    /// [`Roles::owner`].
    Owner,
    /// [`Roles::customer`].
    Customer,
    /// [`Roles::coverage_judge`].
    CoverageJudge,
    /// [`Roles::question_detector`].
    QuestionDetector,
    /// [`Roles::extractors`].
    Extractors,
}

impl RoleName {
    /// The role's words in a report (`owner`, `coverage judge`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RoleName::Owner => "owner",
            RoleName::Customer => "customer",
            RoleName::CoverageJudge => "coverage judge",
            RoleName::QuestionDetector => "question detector",
            RoleName::Extractors => "extractors",
        }
    }
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Roles {
    /// The panel of `role`, if the protocol has the role played by models.
    pub fn get(&self, role: RoleName) -> Option<Panel> {
        match role {
            RoleName::Owner => self.owner,
            RoleName::Customer => self.customer,
            RoleName::CoverageJudge => self.coverage_judge,
            RoleName::QuestionDetector => self.question_detector,
            RoleName::Extractors => self.extractors,
        }
    }
}

impl Panel {
    /// The vote rule in words: `one model`, `5 models, at least 3 agree`.
    pub fn describe(&self) -> String {
        if self.models <= 1 { "one model".into() } else { format!("{} models, at least {} agree", self.models, self.agree) }
    }
}

/// `Some(n)` for a rule count or budget `n > 0`, `None` for `0` (off / no cap).
fn on(n: u32) -> Option<u32> {
    (n > 0).then_some(n)
}

impl EndRules {
    /// The identical-call count, if the rule applies.
    pub fn repeated_call(&self) -> Option<u32> {
        on(self.repeated_call)
    }
    /// The blank-output count, if the rule applies.
    pub fn blank_output(&self) -> Option<u32> {
        on(self.blank_output)
    }
    /// The consecutive-`ask_user` count, if the rule applies.
    pub fn ask_user(&self) -> Option<u32> {
        on(self.ask_user)
    }
    /// The consecutive no-tool-call count, if the rule applies.
    pub fn no_tool_call(&self) -> Option<u32> {
        on(self.no_tool_call)
    }
    /// The consecutive-refusal count, if the rule applies.
    pub fn refusals(&self) -> Option<u32> {
        on(self.refusals)
    }
}

/// Which paper a condition preset or start belongs to (issue 24 item 1: without `--protocol`
/// a condition runs under its paper's protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Paper {
    /// Seed 000: partial, full, literal, plan.
    Tiganeval,
    /// Seed 001: blind, and every residual start.
    SweResidual,
    /// Seed 002: hidden, interact, interact-req, full-info, oracle:R.
    FdeBench,
}

impl Paper {
    /// The paper of a condition preset name (`oracle:0.5` and `oracle` are seed 002's);
    /// `None` for a name no paper has.
    pub fn of_preset(preset: &str) -> Option<Paper> {
        let base = preset.split(':').next().unwrap_or_default();
        match base {
            "partial" | "full" | "literal" | "plan" => Some(Paper::Tiganeval),
            "blind" => Some(Paper::SweResidual),
            "hidden" | "interact" | "interact-req" | "full-info" | "oracle" => Some(Paper::FdeBench),
            _ => None,
        }
    }

    /// The paper's protocol.
    pub fn protocol(self) -> Protocol {
        match self {
            Paper::Tiganeval => tiganeval(),
            Paper::SweResidual => swe_residual(),
            Paper::FdeBench => fde_bench(),
        }
    }
}

/// Why a run's protocol cannot be chosen or does not offer what the run asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// `--protocol NAME` with a name that is no built-in protocol and no file.
    #[error("unknown protocol `{0}`; expected tiganeval, swe-residual, fde-bench or the path of a custom protocol file")]
    Unknown(String),
    /// A condition the protocol does not offer.
    #[error(
        "protocol {protocol} does not offer condition {condition} (it offers {offered}); use --protocol with a protocol that does, or a custom protocol file"
    )]
    ConditionNotOffered {
        /// The protocol.
        protocol: String,
        /// The condition's preset.
        condition: String,
        /// The offered presets, comma-separated.
        offered: String,
    },
    /// A start the protocol does not offer.
    #[error(
        "protocol {protocol} does not offer {start} starts (it offers {offered}); a residual start with another paper's condition needs --protocol FILE (a custom protocol)"
    )]
    StartNotOffered {
        /// The protocol.
        protocol: String,
        /// `clean` or `residual`.
        start: String,
        /// The offered starts.
        offered: String,
    },
    /// No `--protocol`, and the run's conditions and starts come from different papers.
    #[error(
        "the run combines {what}, which belong to different papers' protocols; name one with --protocol (a custom protocol file lists the rules of a combination)"
    )]
    Mixed {
        /// What is combined, in words.
        what: String,
    },
}

impl Protocol {
    /// Whether the protocol offers the condition preset `preset` (`oracle:0.5` matches
    /// `oracle`).
    pub fn offers_condition(&self, preset: &str) -> bool {
        let base = preset.split(':').next().unwrap_or_default();
        self.conditions.iter().any(|c| c == preset || c == base)
    }

    /// Whether the protocol offers the start kind `start` (`clean` or `residual`; a
    /// `residual:<id>` counts as `residual`).
    pub fn offers_start(&self, start: &str) -> bool {
        let kind = if start.starts_with("residual") { "residual" } else { start };
        self.starts.iter().any(|s| s == kind)
    }

    /// Checks that the protocol offers every condition preset and start of a run.
    ///
    /// # Errors
    /// [`ProtocolError::ConditionNotOffered`] or [`ProtocolError::StartNotOffered`] for the
    /// first one it does not.
    pub fn check_offers<'a>(
        &self,
        presets: impl IntoIterator<Item = &'a str>,
        starts: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ProtocolError> {
        for preset in presets {
            if !self.offers_condition(preset) {
                return Err(ProtocolError::ConditionNotOffered {
                    protocol: self.name.clone(),
                    condition: preset.to_string(),
                    offered: self.conditions.join(", "),
                });
            }
        }
        for start in starts {
            if !self.offers_start(start) {
                let kind = if start.starts_with("residual") { "residual" } else { start };
                return Err(ProtocolError::StartNotOffered {
                    protocol: self.name.clone(),
                    start: kind.to_string(),
                    offered: self.starts.join(", "),
                });
            }
        }
        Ok(())
    }

    /// The model-backed roles of the protocol, in [`RoleName`] order.
    pub fn model_roles(&self) -> Vec<(RoleName, Panel)> {
        [RoleName::Owner, RoleName::Customer, RoleName::CoverageJudge, RoleName::QuestionDetector, RoleName::Extractors]
            .into_iter()
            .filter_map(|role| self.roles.get(role).map(|panel| (role, panel)))
            .collect()
    }

    /// The protocol as a TOML table (what `run.toml` records under `[protocol.rules]`).
    ///
    /// # Errors
    /// Never for a protocol built here; a serializer error is passed on.
    pub fn to_toml(&self) -> Result<toml::Table, toml::ser::Error> {
        toml::Table::try_from(self)
    }

    /// A protocol from the TOML table [`Protocol::to_toml`] wrote.
    ///
    /// # Errors
    /// The deserializer's error when the table is not a protocol.
    pub fn from_toml(table: toml::Table) -> Result<Self, toml::de::Error> {
        table.try_into()
    }
}

/// Which protocol a run follows: the built-in name, a custom file, or (no `--protocol`) the
/// paper every condition and start belongs to.
///
/// `spec` is `--protocol`'s value: a built-in name ([`builtin_names`]), `custom:<path>` or a
/// path to a protocol file (anything with a `/` or ending in `.toml`). Without it, the
/// paper of each preset ([`Paper::of_preset`]) and of each residual start (seed 001) must be
/// one and the same.
///
/// # Errors
/// [`SelectError::Protocol`] for an unknown name or a mixed run without `--protocol`;
/// [`SelectError::File`] for a custom file that does not load.
pub fn select<'a>(
    spec: Option<&str>,
    presets: impl IntoIterator<Item = &'a str> + Clone,
    starts: impl IntoIterator<Item = &'a str> + Clone,
) -> Result<Protocol, SelectError> {
    match spec {
        Some(spec) => by_spec(spec),
        None => Ok(by_conditions(presets, starts)?),
    }
}

/// The protocol `--protocol SPEC` names (see [`select`]).
///
/// # Errors
/// As [`select`].
pub fn by_spec(spec: &str) -> Result<Protocol, SelectError> {
    if let Some(protocol) = builtin(spec) {
        return Ok(protocol);
    }
    let path = spec.strip_prefix("custom:").unwrap_or(spec);
    if spec.starts_with("custom:") || path.contains('/') || path.ends_with(".toml") {
        return Ok(load_custom(Path::new(path))?);
    }
    Err(SelectError::Protocol(ProtocolError::Unknown(spec.to_string())))
}

/// The paper protocol of a run without `--protocol` (see [`select`]).
///
/// # Errors
/// [`ProtocolError::Mixed`] when the presets and starts belong to different papers.
pub fn by_conditions<'a>(
    presets: impl IntoIterator<Item = &'a str>,
    starts: impl IntoIterator<Item = &'a str>,
) -> Result<Protocol, ProtocolError> {
    let mut papers: Vec<(Paper, String)> = Vec::new();
    for preset in presets {
        if let Some(paper) = Paper::of_preset(preset) {
            papers.push((paper, format!("condition {preset}")));
        }
    }
    for start in starts {
        if start.starts_with("residual") {
            papers.push((Paper::SweResidual, format!("start {start}")));
        }
    }
    let first = papers.first().map_or(Paper::Tiganeval, |(paper, _)| *paper);
    if papers.iter().any(|(paper, _)| *paper != first) {
        let what: Vec<String> = papers.iter().map(|(_, what)| what.clone()).collect();
        return Err(ProtocolError::Mixed { what: what.join(", ") });
    }
    Ok(first.protocol())
}

/// Why [`select`] found no protocol.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// An unknown name, a condition or start not offered, or a mixed run.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// A custom protocol file that does not load.
    #[error(transparent)]
    File(#[from] ProtocolFileError),
}
