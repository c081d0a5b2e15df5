//! Conditions (DESIGN §4): presets, axis overrides, the canonical condition string, starts,
//! applicability, budgets and the seeded `oracle:R` subset.
//!
//! A [`Condition`] is a [`Preset`] plus [`Overrides`]; every axis (opening instruction,
//! prompt, `ask_user`, feedback, submissions, tool profile) is read through its methods, which
//! apply the overrides over the preset's table row. The canonical string is the preset name
//! followed by `+key=value` for each override that changes the preset's value, in the fixed
//! order `submissions`, `ask`, `feedback`, `profile`, `gate`: `partial`, `partial+submissions=2`,
//! `oracle:0.5+profile=shell`, `interact-req+gate=on`. Overrides equal to the preset's own
//! value, or without effect on it, are dropped, so two spellings of the same setting key the
//! same episodes.

use std::fmt;
use std::str::FromStr;

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest as _, Sha256};
use specgap_protocol::package::{Budget, ClarificationTarget};
use specgap_rules::{EndRules, Paper, Protocol};
use specgap_task::TaskPackage;

/// A condition preset: one row of DESIGN §4's table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Preset {
    /// Owner's partial instruction, evidence prompt, feedback, 4 submissions (seed 000 Partial).
    Partial,
    /// The complete specification, evidence prompt, 1 submission (seed 000 Full).
    Full,
    /// Partial instruction executed literally, no `ask_user`, feedback (seed 000 Literal).
    Literal,
    /// Plan phase then execute phase, 1 submission (seed 000 §5.4).
    Plan,
    /// The original request only under a neutral engineering prompt, nothing to ask, no
    /// feedback, 1 submission, profile `shell` (seed 001 §3.2 "blind continuation"); the same
    /// prompt for clean and residual starts.
    Blind,
    /// Request only, nobody to ask (seed 002 Hidden).
    Hidden,
    /// Request, the customer may be asked (seed 002 Interact).
    Interact,
    /// Request, the prompt tells the agent to clarify with the customer before building
    /// (seed 002 Interact-Req); nothing is withheld unless the `gate` override is on.
    InteractReq,
    /// Request plus the complete business information (seed 002 Full).
    FullInfo,
    /// Request plus the registered answers of a seeded share `R` in [0, 1] of the
    /// clarification targets (seed 002 A.6).
    Oracle(f64),
}

/// Which text the opening message carries (DESIGN §4 "opening instruction").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpeningKind {
    /// `instruction.md`.
    Instruction,
    /// `instruction.full.md`.
    FullInstruction,
    /// `instruction.md` + `information.md`.
    InstructionAndInformation,
    /// `instruction.md` + the registered answers of the oracle subset.
    InstructionAndAnswers,
}

/// Which system prompt the agent gets (DESIGN §4 "prompt").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Instructions are evidence (seed 000 Partial / Full).
    Evidence,
    /// Execute the owner's explicit requests only (seed 000 Literal).
    Literal,
    /// Plan phase, then execute phase (seed 000 §5.4).
    Plan,
    /// Delivery engineer for a client request (seed 002 A.9.1).
    Delivery,
    /// Delivery, clarify first (seed 002 Interact-Req).
    DeliveryClarifyFirst,
    /// A neutral software-engineering prompt that says nothing about missing information,
    /// clarification or earlier work (seed 001 blind continuation).
    Neutral,
}

/// The `ask_user` axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// `ask_user` is not offered.
    Off,
    /// The agent may ask (under `interact-req` the prompt tells it to ask first).
    Optional,
    /// The hard clarify-first gate, only under `interact-req+gate=on`: editing, running and
    /// submitting are withheld until the agent has asked and then says it has what it needs.
    /// Seed 002 §4.1 has no such gate; it is kept as an explicit option.
    Required,
}

/// Tool profile (DESIGN §3 tool table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// list_files, read_text, write_text, replace_text, run_project, run_experiment,
    /// ask_user, submit (seed 000 Table 2).
    Owner,
    /// bash, ask_user, submit (residual and terminal work).
    Shell,
}

impl Profile {
    /// `owner` or `shell`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Owner => "owner",
            Profile::Shell => "shell",
        }
    }
}

/// Axis overrides from the command line (`--submissions`, `--ask`, `--feedback`,
/// `--profile`), applied over every listed preset. `None` keeps the preset's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Submission budget (at least 1).
    pub submissions: Option<u32>,
    /// `ask on|off`: `true` offers `ask_user` (a preset that requires asking keeps requiring
    /// it), `false` withdraws it.
    pub ask: Option<bool>,
    /// `feedback on|off`.
    pub feedback: Option<bool>,
    /// `profile owner|shell`.
    pub profile: Option<Profile>,
    /// `gate on|off`: the hard clarify-first gate of `interact-req` ([`Ask::Required`]);
    /// without effect on every other preset, where it is dropped.
    pub gate: Option<bool>,
}

/// A condition: a preset with axis overrides (DESIGN §4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Condition {
    preset: Preset,
    overrides: Overrides,
}

/// Why a condition string, override or start does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConditionError {
    /// Not one of the presets.
    #[error("unknown condition `{0}`; expected partial, full, literal, plan, blind, hidden, interact, interact-req, full-info or oracle:R")]
    UnknownPreset(String),
    /// `oracle:R` with R not a number in [0, 1].
    #[error("bad oracle ratio `{0}`; expected a number from 0 to 1, e.g. oracle:0.5")]
    BadRatio(String),
    /// A `+key=value` part that is not a known override.
    #[error("bad condition override `{0}`; expected submissions=N, ask=on|off, feedback=on|off, profile=owner|shell or gate=on|off")]
    BadOverride(String),
    /// A start that is not `clean`, `residual:<id>` or `residual:all`.
    #[error("bad start `{0}`; expected clean, residual:<id> or residual:all")]
    BadStart(String),
}

impl Preset {
    /// Parses a preset name (`partial`, …, `oracle:0.5`).
    ///
    /// # Errors
    /// [`ConditionError::UnknownPreset`] or [`ConditionError::BadRatio`].
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        Ok(match text {
            "partial" => Preset::Partial,
            "full" => Preset::Full,
            "literal" => Preset::Literal,
            "plan" => Preset::Plan,
            "blind" => Preset::Blind,
            "hidden" => Preset::Hidden,
            "interact" => Preset::Interact,
            "interact-req" => Preset::InteractReq,
            "full-info" => Preset::FullInfo,
            other => {
                let ratio = other.strip_prefix("oracle:").ok_or_else(|| ConditionError::UnknownPreset(other.into()))?;
                let r: f64 = ratio.parse().map_err(|_| ConditionError::BadRatio(ratio.into()))?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(ConditionError::BadRatio(ratio.into()));
                }
                Preset::Oracle(r)
            }
        })
    }

    /// The preset's name; `oracle:R` prints R in Rust's shortest round-trip form
    /// (`oracle:0.5`, `oracle:1`).
    pub fn name(self) -> String {
        match self {
            Preset::Partial => "partial".into(),
            Preset::Full => "full".into(),
            Preset::Literal => "literal".into(),
            Preset::Plan => "plan".into(),
            Preset::Blind => "blind".into(),
            Preset::Hidden => "hidden".into(),
            Preset::Interact => "interact".into(),
            Preset::InteractReq => "interact-req".into(),
            Preset::FullInfo => "full-info".into(),
            Preset::Oracle(r) => format!("oracle:{r}"),
        }
    }

    /// Whether the preset is a delivery condition (seed 002), whose `ask_user` is bounded by
    /// the clarification-round limit rather than the consecutive-question loop rule.
    pub fn is_delivery(self) -> bool {
        matches!(self, Preset::Hidden | Preset::Interact | Preset::InteractReq | Preset::FullInfo | Preset::Oracle(_))
    }

    fn ask(self) -> Ask {
        match self {
            Preset::Partial | Preset::Full | Preset::Plan | Preset::Interact | Preset::InteractReq => Ask::Optional,
            Preset::Literal | Preset::Blind | Preset::Hidden | Preset::FullInfo | Preset::Oracle(_) => Ask::Off,
        }
    }

    fn profile(self) -> Profile {
        if self == Preset::Blind { Profile::Shell } else { Profile::Owner }
    }

    fn feedback(self) -> bool {
        matches!(self, Preset::Partial | Preset::Literal)
    }

    fn submissions(self) -> u32 {
        if self.feedback() { 4 } else { 1 }
    }
}

impl Condition {
    /// A preset without overrides.
    pub fn new(preset: Preset) -> Self {
        Condition { preset, overrides: Overrides::default() }
    }

    /// The preset with `overrides` applied; overrides equal to the preset's value are dropped.
    pub fn with_overrides(preset: Preset, overrides: Overrides) -> Self {
        let kept = Overrides {
            submissions: overrides.submissions.filter(|n| *n != preset.submissions()),
            ask: overrides.ask.filter(|on| *on != (preset.ask() != Ask::Off)),
            feedback: overrides.feedback.filter(|on| *on != preset.feedback()),
            profile: overrides.profile.filter(|p| *p != preset.profile()),
            gate: None,
        };
        // The gate exists only where interact-req still offers `ask_user`; `gate=off` is the
        // preset's own value.
        let asks = kept.ask.unwrap_or(preset.ask() != Ask::Off);
        let kept = Overrides { gate: overrides.gate.filter(|on| *on && preset == Preset::InteractReq && asks), ..kept };
        Condition { preset, overrides: kept }
    }

    /// Parses a canonical condition string (`partial`, `partial+submissions=2+ask=off`).
    ///
    /// # Errors
    /// [`ConditionError`] naming the part that does not parse.
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        let mut parts = text.trim().split('+');
        let preset = Preset::parse(parts.next().unwrap_or_default())?;
        let mut overrides = Overrides::default();
        for part in parts {
            let bad = || ConditionError::BadOverride(part.to_string());
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            match key {
                "submissions" => overrides.submissions = Some(value.parse().ok().filter(|n| *n >= 1).ok_or_else(bad)?),
                "ask" => overrides.ask = Some(parse_on_off(value).ok_or_else(bad)?),
                "feedback" => overrides.feedback = Some(parse_on_off(value).ok_or_else(bad)?),
                "profile" => overrides.profile = Some(parse_profile(value).ok_or_else(bad)?),
                "gate" => overrides.gate = Some(parse_on_off(value).ok_or_else(bad)?),
                _ => return Err(bad()),
            }
        }
        Ok(Condition::with_overrides(preset, overrides))
    }

    /// Parses a comma-separated preset list (`--condition partial,full`) and applies the
    /// same axis overrides to each.
    ///
    /// # Errors
    /// The first [`ConditionError`].
    pub fn parse_list(list: &str, overrides: Overrides) -> Result<Vec<Condition>, ConditionError> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|name| Ok(Condition::with_overrides(Preset::parse(name)?, overrides)))
            .collect()
    }

    /// The preset.
    pub fn preset(&self) -> Preset {
        self.preset
    }

    /// The overrides that differ from the preset.
    pub fn overrides(&self) -> Overrides {
        self.overrides
    }

    /// The canonical condition string (module guide).
    pub fn canonical(&self) -> String {
        let mut s = self.preset.name();
        if let Some(n) = self.overrides.submissions {
            s.push_str(&format!("+submissions={n}"));
        }
        if let Some(on) = self.overrides.ask {
            s.push_str(&format!("+ask={}", on_off(on)));
        }
        if let Some(on) = self.overrides.feedback {
            s.push_str(&format!("+feedback={}", on_off(on)));
        }
        if let Some(p) = self.overrides.profile {
            s.push_str(&format!("+profile={}", p.as_str()));
        }
        if let Some(on) = self.overrides.gate {
            s.push_str(&format!("+gate={}", on_off(on)));
        }
        s
    }

    /// Which text opens the episode.
    pub fn opening(&self) -> OpeningKind {
        match self.preset {
            Preset::Full => OpeningKind::FullInstruction,
            Preset::FullInfo => OpeningKind::InstructionAndInformation,
            Preset::Oracle(_) => OpeningKind::InstructionAndAnswers,
            _ => OpeningKind::Instruction,
        }
    }

    /// Which system prompt the agent gets.
    pub fn prompt(&self) -> PromptKind {
        match self.preset {
            Preset::Partial | Preset::Full => PromptKind::Evidence,
            Preset::Literal => PromptKind::Literal,
            Preset::Plan => PromptKind::Plan,
            Preset::Blind => PromptKind::Neutral,
            Preset::InteractReq if self.ask() != Ask::Off => PromptKind::DeliveryClarifyFirst,
            _ => PromptKind::Delivery,
        }
    }

    /// The `ask_user` axis after overrides: `ask=off` withdraws it (and with it the
    /// clarify-first prompt and gate), `ask=on` offers it where the preset did not, and
    /// `gate=on` makes it [`Ask::Required`] under `interact-req`.
    pub fn ask(&self) -> Ask {
        match (self.overrides.ask, self.preset.ask()) {
            (Some(false), _) => Ask::Off,
            (_, Ask::Off) if self.overrides.ask != Some(true) => Ask::Off,
            _ if self.overrides.gate == Some(true) => Ask::Required,
            _ => Ask::Optional,
        }
    }

    /// Whether a failed submission returns consequence feedback (and costs a submission).
    pub fn feedback(&self) -> bool {
        self.overrides.feedback.unwrap_or(self.preset.feedback())
    }

    /// The submission budget: the override, else the preset's (4 with feedback, else 1).
    /// Without feedback it is always 1: the first submission ends the episode (DESIGN §3.4),
    /// so a larger budget would only mislead the agent.
    pub fn submissions(&self) -> u32 {
        if !self.feedback() {
            return 1;
        }
        self.overrides.submissions.unwrap_or(self.preset.submissions())
    }

    /// The tool profile: the override, else the preset's (`shell` for `blind`, else `owner`).
    pub fn profile(&self) -> Profile {
        self.overrides.profile.unwrap_or(self.preset.profile())
    }

    /// Whether this is a plan-mode condition (`write_plan` gates editing and submitting).
    pub fn is_plan(&self) -> bool {
        self.preset == Preset::Plan
    }

    /// Whether this is a delivery condition (see [`Preset::is_delivery`]).
    pub fn is_delivery(&self) -> bool {
        self.preset.is_delivery()
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl FromStr for Condition {
    type Err = ConditionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Condition::parse(s)
    }
}

fn parse_on_off(value: &str) -> Option<bool> {
    match value {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// Parses `owner` or `shell`.
pub fn parse_profile(value: &str) -> Option<Profile> {
    match value {
        "owner" => Some(Profile::Owner),
        "shell" => Some(Profile::Shell),
        _ => None,
    }
}

/// Where an episode starts (DESIGN §3.1, seed 001).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Start {
    /// The clean workspace.
    Clean,
    /// A residual state `residual/<id>/`.
    Residual(String),
}

impl Start {
    /// Parses `clean` or `residual:<id>` (`residual:all` is expanded per task by
    /// [`expand_starts`]).
    ///
    /// # Errors
    /// [`ConditionError::BadStart`].
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        match text {
            "clean" => Ok(Start::Clean),
            other => match other.strip_prefix("residual:") {
                Some(id) if !id.is_empty() && id != "all" => Ok(Start::Residual(id.into())),
                _ => Err(ConditionError::BadStart(other.into())),
            },
        }
    }

    /// `clean` or `residual:<id>`.
    pub fn canonical(&self) -> String {
        match self {
            Start::Clean => "clean".into(),
            Start::Residual(id) => format!("residual:{id}"),
        }
    }
}

impl fmt::Display for Start {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// Expands a `--start` value for one task: `clean`, `residual:<id>` (kept even when the task
/// lacks it, so [`applicability`] can record it as not applicable) or `residual:all` (every
/// residual state of the task, sorted by id; none when it has none).
///
/// # Errors
/// [`ConditionError::BadStart`].
pub fn expand_starts(spec: &str, package: &TaskPackage) -> Result<Vec<Start>, ConditionError> {
    if spec == "residual:all" {
        return Ok(package.residual_states().keys().map(|id| Start::Residual(id.clone())).collect());
    }
    Ok(vec![Start::parse(spec)?])
}

/// Why a condition or start cannot run on a task (DESIGN §4): recorded, never run half-way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not applicable: {reason}")]
pub struct NotApplicable {
    /// What the task lacks, in words.
    pub reason: String,
}

impl NotApplicable {
    /// A reason.
    pub fn new(reason: impl Into<String>) -> Self {
        NotApplicable { reason: reason.into() }
    }
}

/// Whether `condition` from `start` can run on `package` (DESIGN §4): `full` needs
/// instruction.full.md; feedback needs an observation registry; `interact` / `interact-req`
/// and `full-info` need information.md; `oracle:R` needs clarification targets; a residual
/// start needs that state.
///
/// # Errors
/// [`NotApplicable`] with the first missing piece.
pub fn applicability(package: &TaskPackage, condition: &Condition, start: &Start) -> Result<(), NotApplicable> {
    let preset = condition.preset();
    if preset == Preset::Full && package.instruction_full().is_none() {
        return Err(NotApplicable::new("condition full needs instruction.full.md"));
    }
    if condition.feedback() && package.observations().is_empty() {
        return Err(NotApplicable::new(format!(
            "condition {} gives feedback and the task has no observations.toml entries",
            condition.canonical()
        )));
    }
    let needs_information = matches!(preset, Preset::Interact | Preset::InteractReq | Preset::FullInfo);
    if needs_information && package.information().is_none() {
        return Err(NotApplicable::new(format!("condition {} needs information.md", preset.name())));
    }
    if matches!(preset, Preset::Oracle(_)) && package.clarifications().is_empty() {
        return Err(NotApplicable::new(format!("condition {} needs clarifications.toml targets", preset.name())));
    }
    if let Start::Residual(id) = start
        && package.residual(id).is_none()
    {
        return Err(NotApplicable::new(format!("start residual:{id} needs residual/{id}/")));
    }
    Ok(())
}

/// The episode budgets after DESIGN §4's precedence: command-line flag > condition preset
/// (submissions) > `task.toml` `[budget]` > the protocol's budgets ([`specgap_rules`]), with
/// the protocol's end rules beside them, so every part of the engine that reads a budget reads
/// the rules of the same protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Agent turns (model replies or script lines); [`UNBOUNDED`] without a cap.
    pub turns: u32,
    /// Tool calls over the whole episode; [`UNBOUNDED`] without a cap.
    pub tool_calls: u32,
    /// Wall-clock seconds for the episode; [`UNBOUNDED_WALL`] without a wall clock.
    pub wall_sec: u64,
    /// Evaluated submissions.
    pub submissions: u32,
    /// Answered clarification rounds allowed under delivery conditions (seed 002 A.3);
    /// [`UNBOUNDED`] without a limit.
    pub clarification_rounds: u32,
    /// The loop rules of the protocol (each acts only when the protocol has it).
    pub rules: EndRules,
    /// Whether the prompts state the wall-clock budget.
    pub announce_wall: bool,
    /// The caps on the workspace's apparent size, one file's and one diff's (issue 31 item
    /// 1; [`specgap_sandbox::quota`]).
    pub workspace: specgap_sandbox::WorkspaceLimits,
}

/// A turn, tool-call or round budget without a cap (a protocol's `0`).
pub const UNBOUNDED: u32 = u32::MAX;
/// A wall budget without a clock (a protocol's `0`): no deadline is set.
pub const UNBOUNDED_WALL: u64 = u64::MAX;

/// Budget flags from the command line; `None` defers to the next source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetFlags {
    /// `--turns`.
    pub turns: Option<u32>,
    /// `--tool-calls`.
    pub tool_calls: Option<u32>,
    /// `--wall-sec`.
    pub wall_sec: Option<u64>,
    /// `--clarification-rounds`.
    pub clarification_rounds: Option<u32>,
    /// `--max-workspace-bytes` (default [`specgap_sandbox::quota::DEFAULT_MAX_WORKSPACE_BYTES`]).
    pub max_workspace_bytes: Option<u64>,
    /// `--max-file-bytes` (default [`specgap_sandbox::quota::DEFAULT_MAX_FILE_BYTES`]).
    pub max_file_bytes: Option<u64>,
    /// `--max-diff-bytes` (default [`specgap_sandbox::quota::DEFAULT_MAX_DIFF_BYTES`]).
    pub max_diff_bytes: Option<u64>,
}

/// The protocol of the paper `condition`'s preset comes from (issue 24 item 1: without
/// `--protocol`, a condition runs under its paper's protocol).
pub fn paper_protocol(condition: &Condition) -> Protocol {
    Paper::of_preset(&condition.preset().name()).unwrap_or(Paper::Tiganeval).protocol()
}

fn cap(n: u32) -> u32 {
    if n == 0 { UNBOUNDED } else { n }
}

impl Budgets {
    /// The budgets of one episode under its condition's paper protocol ([`paper_protocol`]).
    pub fn resolve(condition: &Condition, task: &Budget, flags: &BudgetFlags) -> Self {
        Budgets::resolve_under(&paper_protocol(condition), condition, task, flags)
    }

    /// The budgets of one episode under `protocol`. The submission flag arrives through the
    /// condition's overrides; without it a condition with feedback has the protocol's
    /// submissions and one without feedback has one (DESIGN §3.4).
    pub fn resolve_under(protocol: &Protocol, condition: &Condition, task: &Budget, flags: &BudgetFlags) -> Self {
        let b = &protocol.budgets;
        let submissions = match (condition.feedback(), condition.overrides().submissions) {
            (false, _) => 1,
            (true, Some(n)) => n,
            (true, None) => b.submissions.max(1),
        };
        Budgets {
            turns: flags.turns.or(task.turns).unwrap_or(cap(b.turns)),
            tool_calls: flags.tool_calls.or(task.tool_calls).unwrap_or(cap(b.tool_calls)),
            wall_sec: flags.wall_sec.or(task.wall_sec).unwrap_or(if b.wall_sec == 0 { UNBOUNDED_WALL } else { b.wall_sec }),
            submissions,
            clarification_rounds: flags.clarification_rounds.unwrap_or(cap(b.clarification_rounds)),
            rules: protocol.end_rules,
            announce_wall: b.announce_wall,
            workspace: workspace_limits(flags),
        }
    }
}

/// The workspace caps of `flags`, each defaulting to [`specgap_sandbox::quota`]'s.
fn workspace_limits(flags: &BudgetFlags) -> specgap_sandbox::WorkspaceLimits {
    let defaults = specgap_sandbox::WorkspaceLimits::default();
    specgap_sandbox::WorkspaceLimits {
        max_workspace_bytes: flags.max_workspace_bytes.unwrap_or(defaults.max_workspace_bytes),
        max_file_bytes: flags.max_file_bytes.unwrap_or(defaults.max_file_bytes),
        max_diff_bytes: flags.max_diff_bytes.unwrap_or(defaults.max_diff_bytes),
    }
}

/// The number of targets `oracle:R` reveals out of `n`: round-half-up(R·n) (seed 002 A.6).
pub fn oracle_count(ratio: f64, n: usize) -> usize {
    // The small epsilon keeps products like 0.3 * 5 = 1.4999999999999998 on the half.
    let count = (ratio * n as f64 + 0.5 + 1e-9).floor();
    (count.max(0.0) as usize).min(n)
}

/// The seed of the `oracle:R` permutation of one (run seed, task, repeat): the first eight
/// bytes (little-endian) of sha256 over `"{seed}\0{task}\0{repeat}"`.
pub fn oracle_seed(run_seed: u64, task: &str, repeat: u32) -> u64 {
    let digest = Sha256::digest(format!("{run_seed}\0{task}\0{repeat}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// The clarification targets `oracle:R` reveals (seed 002 A.6): the first
/// round-half-up(R·n) of one permutation of the task's n targets, shuffled by a ChaCha8Rng
/// seeded with [`oracle_seed`]. The permutation does not depend on R, so the subsets are
/// nested across R. Returned in registry order (the order of `clarifications.toml`), as seed
/// 002 A.9.1 renders the answers.
pub fn oracle_targets<'a>(
    targets: &'a [ClarificationTarget],
    ratio: f64,
    run_seed: u64,
    task: &str,
    repeat: u32,
) -> Vec<&'a ClarificationTarget> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(oracle_seed(run_seed, task, repeat));
    order.shuffle(&mut rng);
    let mut chosen: Vec<usize> = order.into_iter().take(oracle_count(ratio, targets.len())).collect();
    chosen.sort_unstable();
    chosen.into_iter().map(|i| &targets[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_strings_round_trip() {
        for text in [
            "partial",
            "full",
            "literal",
            "plan",
            "blind",
            "hidden",
            "interact",
            "interact-req",
            "interact-req+gate=on",
            "blind+profile=owner",
            "full-info",
            "oracle:0.5",
            "oracle:1",
            "oracle:0",
        ] {
            assert_eq!(Condition::parse(text).unwrap().canonical(), text);
        }
        let c = Condition::parse("partial+submissions=2+ask=off").unwrap();
        assert_eq!(c.canonical(), "partial+submissions=2+ask=off");
        assert_eq!(c.submissions(), 2);
        assert_eq!(c.ask(), Ask::Off);
        // Overrides equal to the preset's value vanish; order is fixed.
        assert_eq!(Condition::parse("partial+profile=shell+submissions=4").unwrap().canonical(), "partial+profile=shell");
        assert_eq!(Condition::parse("literal+ask=off+feedback=on").unwrap().canonical(), "literal");
        // The gate exists only on interact-req while it offers ask_user; elsewhere it is dropped.
        assert_eq!(Condition::parse("interact+gate=on").unwrap().canonical(), "interact");
        assert_eq!(Condition::parse("interact-req+gate=off").unwrap().canonical(), "interact-req");
        assert_eq!(Condition::parse("interact-req+ask=off+gate=on").unwrap().canonical(), "interact-req+ask=off");
        assert_eq!(Condition::parse("blind+profile=shell").unwrap().canonical(), "blind");
    }

    #[test]
    fn preset_axes_follow_the_table() {
        let axes = |t: &str| {
            let c = Condition::parse(t).unwrap();
            (c.ask(), c.feedback(), c.submissions(), c.prompt(), c.opening())
        };
        assert_eq!(axes("partial"), (Ask::Optional, true, 4, PromptKind::Evidence, OpeningKind::Instruction));
        assert_eq!(axes("full"), (Ask::Optional, false, 1, PromptKind::Evidence, OpeningKind::FullInstruction));
        assert_eq!(axes("literal"), (Ask::Off, true, 4, PromptKind::Literal, OpeningKind::Instruction));
        assert_eq!(axes("plan"), (Ask::Optional, false, 1, PromptKind::Plan, OpeningKind::Instruction));
        assert_eq!(axes("hidden"), (Ask::Off, false, 1, PromptKind::Delivery, OpeningKind::Instruction));
        assert_eq!(axes("interact"), (Ask::Optional, false, 1, PromptKind::Delivery, OpeningKind::Instruction));
        assert_eq!(axes("interact-req"), (Ask::Optional, false, 1, PromptKind::DeliveryClarifyFirst, OpeningKind::Instruction));
        assert_eq!(axes("interact-req+gate=on"), (Ask::Required, false, 1, PromptKind::DeliveryClarifyFirst, OpeningKind::Instruction));
        assert_eq!(axes("blind"), (Ask::Off, false, 1, PromptKind::Neutral, OpeningKind::Instruction));
        let blind = Condition::parse("blind").unwrap();
        assert_eq!((blind.profile(), blind.is_delivery()), (Profile::Shell, false));
        assert_eq!(Condition::parse("blind+profile=owner").unwrap().profile(), Profile::Owner);
        assert_eq!(axes("full-info"), (Ask::Off, false, 1, PromptKind::Delivery, OpeningKind::InstructionAndInformation));
        assert_eq!(axes("oracle:0.25"), (Ask::Off, false, 1, PromptKind::Delivery, OpeningKind::InstructionAndAnswers));
        assert_eq!(axes("interact-req+ask=off").0, Ask::Off);
        assert_eq!(axes("interact-req+ask=off").3, PromptKind::Delivery);
        assert_eq!(axes("hidden+ask=on").0, Ask::Optional);
    }

    #[test]
    fn parse_errors_name_the_part() {
        assert_eq!(Condition::parse("parital"), Err(ConditionError::UnknownPreset("parital".into())));
        assert_eq!(Condition::parse("oracle:1.5"), Err(ConditionError::BadRatio("1.5".into())));
        assert_eq!(Condition::parse("oracle:x"), Err(ConditionError::BadRatio("x".into())));
        assert_eq!(Condition::parse("partial+submissions=0"), Err(ConditionError::BadOverride("submissions=0".into())));
        assert_eq!(Condition::parse("partial+ask=maybe"), Err(ConditionError::BadOverride("ask=maybe".into())));
        assert_eq!(Condition::parse("interact-req+gate=yes"), Err(ConditionError::BadOverride("gate=yes".into())));
        assert_eq!(Start::parse("residual:"), Err(ConditionError::BadStart("residual:".into())));
        assert_eq!(Start::parse("residual:r1"), Ok(Start::Residual("r1".into())));
    }

    #[test]
    fn list_applies_overrides_to_every_preset() {
        let o = Overrides { submissions: Some(2), ..Overrides::default() };
        let list = Condition::parse_list("partial, full", o).unwrap();
        let names: Vec<_> = list.iter().map(Condition::canonical).collect();
        assert_eq!(names, ["partial+submissions=2", "full+submissions=2"]);
    }

    #[test]
    fn budget_precedence() {
        let c = Condition::parse("partial+submissions=3").unwrap();
        let task = Budget { turns: Some(50), tool_calls: None, wall_sec: Some(600) };
        let flags = BudgetFlags { turns: Some(10), ..BudgetFlags::default() };
        let b = Budgets::resolve(&c, &task, &flags);
        let rules = specgap_rules::tiganeval().end_rules;
        assert_eq!(
            b,
            Budgets {
                turns: 10,
                tool_calls: 360,
                wall_sec: 600,
                submissions: 3,
                clarification_rounds: UNBOUNDED,
                rules,
                announce_wall: false,
                workspace: specgap_sandbox::WorkspaceLimits::default(),
            }
        );
        // Seed 000 names no wall clock; seed 002 has 43,200 s, no step cap and 30 rounds.
        let d = Budgets::resolve(&Condition::new(Preset::Full), &Budget::default(), &BudgetFlags::default());
        assert_eq!((d.turns, d.tool_calls, d.wall_sec, d.submissions), (120, 360, UNBOUNDED_WALL, 1));
        let h = Budgets::resolve(&Condition::new(Preset::Hidden), &Budget::default(), &BudgetFlags::default());
        assert_eq!((h.turns, h.tool_calls, h.wall_sec, h.clarification_rounds), (UNBOUNDED, UNBOUNDED, 43_200, 30));
        assert_eq!(h.rules, specgap_rules::fde_bench().end_rules);
    }

    fn targets(n: usize) -> Vec<ClarificationTarget> {
        (0..n)
            .map(|i| ClarificationTarget {
                id: format!("t{i}"),
                description: String::new(),
                issue_type: specgap_protocol::package::IssueType::Missing,
                domain: specgap_protocol::package::Domain::DataSemantics,
                rule_source: None,
                answer: format!("a{i}"),
                triggers: vec![],
            })
            .collect()
    }

    #[test]
    fn oracle_subsets_are_seeded_and_nested() {
        let all = targets(7);
        let ids = |r: f64, seed: u64, repeat: u32| {
            oracle_targets(&all, r, seed, "examples/x", repeat).iter().map(|t| t.id.clone()).collect::<Vec<_>>()
        };
        // Every subset is in registry order; each is contained in the next larger one.
        assert_eq!(ids(1.0, 7, 0), ["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
        let mut previous: Vec<String> = Vec::new();
        for (r, n) in [(0.0, 0), (0.25, 2), (0.5, 4), (0.75, 5), (1.0, 7)] {
            let subset = ids(r, 7, 0);
            assert_eq!(subset.len(), n, "R = {r}");
            let mut sorted = subset.clone();
            sorted.sort();
            assert_eq!(subset, sorted, "R = {r}: registry order");
            assert!(previous.iter().all(|id| subset.contains(id)), "R = {r}: nested");
            previous = subset;
        }
        assert_eq!(ids(0.5, 7, 0), ids(0.5, 7, 0));
        // Another repeat or seed draws another permutation (fixed by the seed derivation).
        assert_ne!(ids(0.5, 7, 1), ids(0.5, 7, 0));
        assert_ne!(ids(0.5, 8, 0), ids(0.5, 7, 0));
    }

    #[test]
    fn oracle_count_rounds_half_up() {
        assert_eq!(oracle_count(0.5, 5), 3);
        assert_eq!(oracle_count(0.3, 5), 2);
        assert_eq!(oracle_count(0.25, 4), 1);
        assert_eq!(oracle_count(0.49, 2), 1);
        assert_eq!(oracle_count(0.0, 7), 0);
        assert_eq!(oracle_count(1.0, 7), 7);
        assert_eq!(oracle_count(0.1, 4), 0);
    }
}
