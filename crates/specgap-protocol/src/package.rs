//! Task package formats 1 and 2 (DESIGN §2): the serde shapes of every TOML file in a package.
//!
//! Every struct rejects unknown keys (`deny_unknown_fields`), because a misspelt key in a
//! task package silently changes what is measured. Semantic checks (unique priorities,
//! observations naming known requirements, …) live in `specgap-task`.
//!
//! Format 2 adds keys and changes nothing else, so a format-1 package reads the same under
//! both; the additions ([`FORMAT_2_KEYS`]) are optional fields here, and the loader rejects
//! each of them in a package that says `format = 1`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The package formats this version of specgap reads, oldest first.
pub const PACKAGE_FORMATS: [u32; 2] = [1, 2];

/// The format that introduced the additions of 2026-12-01 ([`FORMAT_2_KEYS`]).
pub const FORMAT_2: u32 = 2;

/// Every key format 2 adds (file, then the key's place in it), in the order CHANGELOG.md
/// lists them. Each is optional; each is an error in a format-1 package.
pub const FORMAT_2_KEYS: [&str; 15] = [
    "task.toml [task].tags",
    "task.toml [task].subfamily",
    "task.toml [delivery].schema",
    "observations.toml [[observation]].request",
    "task.toml [project].probes",
    "task.toml [environment].image",
    "task.toml [environment].dockerfile",
    "task.toml [environment].rootfs",
    "task.toml [environment].oci_layout",
    "task.toml [environment].workdir",
    "task.toml [evaluator].dir",
    "task.toml [evaluator].out",
    "task.toml [evaluator.environment]",
    "task.toml [evaluator].trusts_workspace",
    "task.toml [stages]",
];

/// Where the workspace appears in an image environment without `[environment].workdir`.
pub const DEFAULT_WORKDIR: &str = "/workspace";

/// `task.toml`: the manifest of a task package (DESIGN §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskManifest {
    /// Package format version: one of [`PACKAGE_FORMATS`] (1, or 2 to use [`FORMAT_2_KEYS`]).
    pub format: u32,
    /// Identity and family of the task.
    pub task: TaskInfo,
    /// What commands inside the sandbox need.
    #[serde(default)]
    pub environment: Environment,
    /// What `run_project` replays, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<Project>,
    /// How the private evaluator is started.
    pub evaluator: EvaluatorSpec,
    /// Per-task budgets (DESIGN §4 precedence: CLI > preset > this > defaults).
    #[serde(default)]
    pub budget: Budget,
    /// Present on delivery cases only (seed 002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Format 2: the task's ordered stages (a Harbor multi-step task); absent for a task of
    /// one stage, which is every task before format 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Stages>,
}

/// `[stages]` of `task.toml` (format 2): a task given in ordered parts, each part's
/// instruction sent after the previous part's submission was scored (Harbor's `[[steps]]`,
/// docs/harbor.md). One submission per stage; submission k answers stage k, and the
/// evaluator learns which stage it scores from `SPECGAP_STAGE` (1-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stages {
    /// How the episode's score is made from the stage submissions' scores (default `mean`).
    #[serde(default)]
    pub score: StageScore,
    /// The stages, in order; at least one. The first stage's instruction is the episode's
    /// opening message (`instruction.md`, or `instruction.full.md` under `full`), so it has no
    /// `instruction` key; every later stage has one.
    pub stage: Vec<Stage>,
}

/// One entry of `[[stages.stage]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// A label (lowercase words joined by hyphens), unique in the task.
    pub name: String,
    /// The stage's instruction file, relative to the package root and outside `workspace/`
    /// (the agent must not read it before the stage begins). Absent on the first stage only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// When this stage's submission falls short of it, the episode ends there and the later
    /// stages are never given (Harbor's `min_reward` of a step): a number in [0, 1] that the
    /// Score must reach, or a table of reward keys (`{ accuracy = 0.8 }`) each of which the
    /// result's `rewards` must reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_reward: Option<MinReward>,
    /// The stage's files: an overlay directory (relative to the package root, outside
    /// `workspace/`; a top-level `delete.txt` lists files to remove) applied to the workspace
    /// when the stage begins, before its instruction is sent (Harbor's `steps/<name>/workdir/`).
    /// Absent on the first stage, whose files are `workspace/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<String>,
    /// The stage's gold: an overlay directory (relative to the package root, outside
    /// `workspace/`) that solves this stage from the state the previous stages' golds and this
    /// stage's files leave (Harbor's oracle running step k's `solve.sh` at step k). Scripted
    /// `gold` applies it at this stage; `check` proves each stage's gold passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold: Option<String>,
}

/// A stage's `min_reward` (Harbor's step `min_reward`, `trial/multi_step.py`): the stage
/// passes its threshold when the number or every key is reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MinReward {
    /// In [0, 1]: the stage submission's Score must be at least this.
    Score(f64),
    /// Reward key -> minimum (any finite number): the result's `rewards` must hold every key
    /// at or above its minimum; a missing key falls short (Harbor counts it as -inf).
    Keys(BTreeMap<String, f64>),
}

/// How a staged episode's score is aggregated over its stage submissions (Harbor's
/// `multi_step_reward_strategy`). Stages never reached (after a `min_reward` stop) do not count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageScore {
    /// The mean of the stage submissions' scores; Success when every one succeeded.
    #[default]
    Mean,
    /// The last stage submission's Score and Success.
    Final,
}

impl StageScore {
    /// The name used in `task.toml` (`mean`, `final`).
    pub fn as_str(self) -> &'static str {
        match self {
            StageScore::Mean => "mean",
            StageScore::Final => "final",
        }
    }
}

/// `[task]` of `task.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskInfo {
    /// `org/name`, unique in a suite.
    pub name: String,
    /// The task's own version string.
    pub version: String,
    /// One line saying what the task is.
    pub description: String,
    /// Task family (seed 000 §4): swe | research | optimization | ml | terminal.
    pub family: Family,
    /// Format 2: free lowercase tags for breakdowns and selection (`["billing", "retries"]`):
    /// each of lowercase letters and digits in words joined by single hyphens, unique in the
    /// task. Empty when absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Format 2: the sub-family within [`TaskInfo::family`], for per-family breakdowns, in the
    /// same lowercase-hyphenated form as a tag: e.g. seed 000 §4.3's three research families,
    /// `instrumented-study` (instrumented studies of devices and operations),
    /// `ml-experiment` (machine learning experiments) and `online-system` (online systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subfamily: Option<String>,
}

/// Task family, as in seed 000 §4 (used for per-family breakdowns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Software engineering.
    Swe,
    /// Research and analysis.
    Research,
    /// Optimization and operations (delivery cases).
    Optimization,
    /// Machine learning.
    Ml,
    /// Terminal / shell work.
    Terminal,
}

impl Family {
    /// The lowercase name used in `task.toml` and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Swe => "swe",
            Family::Research => "research",
            Family::Optimization => "optimization",
            Family::Ml => "ml",
            Family::Terminal => "terminal",
        }
    }
}

/// `[environment]` of `task.toml`: what sandboxed commands need, either from the host
/// (`commands`, `binds`: a host-command environment, the default) or as an image's root
/// filesystem (format 2: exactly one of `image`, `dockerfile`, `rootfs`, `oci_layout`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Command names resolved on the host `PATH`; their installation directories are mounted
    /// read-only in the sandbox. Host-command environments only.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Extra absolute host paths mounted read-only. Host-command environments only.
    #[serde(default)]
    pub binds: Vec<String>,
    /// Extra environment variables for every sandboxed command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Format 2: an image reference resolved by a container engine (`python:3.12-slim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Format 2: a Dockerfile relative to the package root (`environment/Dockerfile`), built by
    /// a container engine with its directory as the build context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
    /// Format 2: a root filesystem tarball relative to the package root
    /// (`environment/rootfs.tar`, optionally gzip- or zstd-compressed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<String>,
    /// Format 2: an OCI image layout directory relative to the package root
    /// (`environment/oci`, holding `oci-layout` and `index.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_layout: Option<String>,
    /// Format 2: the absolute path where the workspace appears in an image environment
    /// (default [`DEFAULT_WORKDIR`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
}

/// Where an image environment's root filesystem comes from (format 2, DESIGN §2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageSource {
    /// An image reference resolved by a container engine.
    Image(String),
    /// A Dockerfile path relative to the package root; its directory is the build context.
    Dockerfile(String),
    /// A root filesystem tarball relative to the package root.
    Rootfs(String),
    /// An OCI image layout directory relative to the package root.
    OciLayout(String),
}

impl ImageSource {
    /// The task.toml key that names this source (`image`, `dockerfile`, `rootfs`, `oci_layout`).
    pub fn key(&self) -> &'static str {
        match self {
            ImageSource::Image(_) => "image",
            ImageSource::Dockerfile(_) => "dockerfile",
            ImageSource::Rootfs(_) => "rootfs",
            ImageSource::OciLayout(_) => "oci_layout",
        }
    }

    /// The value as written (a reference or a package-relative path).
    pub fn value(&self) -> &str {
        match self {
            ImageSource::Image(v) | ImageSource::Dockerfile(v) | ImageSource::Rootfs(v) | ImageSource::OciLayout(v) => v,
        }
    }

    /// The sources set among the four keys, in key order (a valid table has at most one).
    pub fn all_of(
        image: &Option<String>,
        dockerfile: &Option<String>,
        rootfs: &Option<String>,
        oci_layout: &Option<String>,
    ) -> Vec<ImageSource> {
        let mut found = Vec::new();
        found.extend(image.clone().map(ImageSource::Image));
        found.extend(dockerfile.clone().map(ImageSource::Dockerfile));
        found.extend(rootfs.clone().map(ImageSource::Rootfs));
        found.extend(oci_layout.clone().map(ImageSource::OciLayout));
        found
    }
}

impl Environment {
    /// The image source, or `None` for a host-command environment. The loader guarantees at
    /// most one of the four keys; were there several, the first in key order wins.
    pub fn image_source(&self) -> Option<ImageSource> {
        ImageSource::all_of(&self.image, &self.dockerfile, &self.rootfs, &self.oci_layout).into_iter().next()
    }

    /// Where the workspace appears in an image environment: `workdir`, or [`DEFAULT_WORKDIR`].
    pub fn workdir(&self) -> &str {
        self.workdir.as_deref().unwrap_or(DEFAULT_WORKDIR)
    }
}

/// `[evaluator.environment]` (format 2): the evaluator's own image when it differs from the
/// task's (Harbor's separate verifier), and/or `commands`: the evaluator's program runs on the
/// host's programs while its candidate calls run on the image. At most one of the four image
/// keys; at least one of them or `commands`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorEnvironment {
    /// Host command names (as `[environment].commands`): when set, the evaluator's own command
    /// runs on the host's system directories with these programs (no network, as a
    /// host-command evaluator), and only its candidate calls (`$SPECGAP_CANDIDATE`) run on the
    /// image — this table's, else the task's. Issue 26: an imported Harbor verifier
    /// (`python3 harbor_verify.py`) on an image without `python3`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// An image reference resolved by a container engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// A Dockerfile relative to the package root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
    /// A root filesystem tarball relative to the package root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<String>,
    /// An OCI image layout directory relative to the package root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_layout: Option<String>,
}

impl EvaluatorEnvironment {
    /// The image source (the loader guarantees exactly one key).
    pub fn image_source(&self) -> Option<ImageSource> {
        ImageSource::all_of(&self.image, &self.dockerfile, &self.rootfs, &self.oci_layout).into_iter().next()
    }
}

/// `[project]` of `task.toml`: what `run_project` replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// Directory of records, relative to the workspace.
    pub records: String,
    /// Shell command; `{record}` is replaced by the record's workspace-relative path, shell-quoted.
    pub replay: String,
    /// Format 2: other shell commands the task expects the agent to run on the project (its
    /// test suite, a tool its README names), each run in the workspace. `specgap check` runs
    /// each on the starter in the sandbox and scans what it prints, as it scans the replays
    /// (seed 000 §4.2 criterion 4: nothing the agent can see or hear states an unstated
    /// requirement). Never run by the engine itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
}

/// `[evaluator]` of `task.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorSpec {
    /// Shell command run with cwd = a private copy of `evaluator/`. Must not be empty.
    pub command: String,
    /// Wall-clock limit in seconds.
    #[serde(default = "default_evaluator_timeout")]
    pub timeout_sec: u64,
    /// Format 2, image environments: the absolute path where the evaluator's private copy of
    /// `evaluator/` appears (`/tests`), and its working directory. Unset: a private path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Format 2, image environments: the absolute path of the evaluator's output directory,
    /// where it writes `result.json` (`SPECGAP_OUT`; e.g. Harbor's `/logs/verifier`). Unset: a
    /// private path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// Format 2: the evaluator's own image; unset, it runs in the task's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EvaluatorEnvironment>,
    /// Format 2: the evaluator runs submitted code where it writes its verdict, so a
    /// submission could forge it (an imported Harbor verifier, docs/harbor.md "Trust model").
    /// `specgap check` says so in a `verifier-trust` row. Default `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusts_workspace: bool,
}

fn default_evaluator_timeout() -> u64 {
    600
}

/// `[budget]` of `task.toml`; absent keys fall back to the defaults of DESIGN §4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Agent turns (one model reply or script line each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Tool calls over the whole episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u32>,
    /// Wall-clock seconds for the whole episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_sec: Option<u64>,
}

/// `[delivery]` of `task.toml` (seed 002 §3): how a delivery case is scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    /// The accepted reference's raw objective value (finite, non-zero).
    pub reference: f64,
    /// `max`: score = x / reference; `min`: score = reference / x.
    pub direction: Direction,
    /// Glob of the deliverable, relative to the workspace.
    pub artifact: String,
    /// Format 2: a JSON Schema of the submission format (seed 002's extraction contract), as
    /// a path relative to the package root, outside `workspace/` and so private. The loader
    /// requires a regular file that parses as JSON and is a schema (an object, or `true` /
    /// `false`); it does not judge submissions by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
}

/// Optimisation direction of a delivery case's objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Larger objective is better.
    Max,
    /// Smaller objective is better.
    Min,
}

/// `requirements.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequirementsFile {
    /// The task's true requirements R (seed 000 §3).
    #[serde(default)]
    pub requirement: Vec<Requirement>,
}

/// One requirement: a machine-checkable predicate on the delivered workspace (seed 000 §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// Lowercase, hyphenated identifier, unique in the task.
    pub id: String,
    /// 1 is the highest; unique within the task. Feedback names the failing requirement with
    /// the highest priority (DESIGN §3.4).
    pub priority: u32,
    /// Whether the partial instruction states it.
    pub stated: bool,
    /// The full rule.
    pub description: String,
    /// Where the evidence lives; for authors and auditors only.
    pub discovery: String,
}

/// `observations.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationsFile {
    /// The observation registry (seed 000 §3.2).
    #[serde(default)]
    pub observation: Vec<Observation>,
}

/// What a person would see when a requirement fails in one failure mode (seed 000 §3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// The requirement id this observation belongs to.
    pub requirement: String,
    /// The failure mode id the evaluator reports.
    pub failure_mode: String,
    /// Context for the user model only; never shown to the agent.
    pub scene: String,
    /// First context: what happened.
    pub incident: String,
    /// Second context: one measured, actionable fact; `{key}` placeholders are filled from
    /// the evaluator's `measured` values.
    pub detail: String,
    /// Format 2: the owner's request in the owner's own voice — what the owner needs to be
    /// different, never the rule behind it (DESIGN §5: the relay owner turns an observation
    /// into the next instruction from what was seen and this). Not blank when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// `user.toml`: the simulated owner or customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserProfile {
    /// Who the owner / customer is.
    pub persona: String,
    /// What the owner believes at the start.
    pub understanding: String,
    /// What the owner lets the engineer touch.
    pub editable_surface: String,
    /// Optional speaking style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
}

/// `clarifications.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClarificationsFile {
    /// Clarification targets (seed 002 §3.2).
    #[serde(default)]
    pub target: Vec<ClarificationTarget>,
}

/// A registered fact the customer holds that the request and data do not settle (seed 002 §3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClarificationTarget {
    /// Identifier, unique in the task.
    pub id: String,
    /// What the target is about.
    pub description: String,
    /// missing | ambiguous | invalidated | conflicting.
    pub issue_type: IssueType,
    /// scoring-convention | constraint-rule | computation-convention | data-semantics.
    pub domain: Domain,
    /// Optional: the requirement or rule the target comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_source: Option<String>,
    /// The registered customer answer.
    pub answer: String,
    /// Example questions that would surface it.
    pub triggers: Vec<String>,
}

/// Why a clarification target is needed (seed 002 §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IssueType {
    /// The request omits the fact.
    Missing,
    /// The request admits several readings.
    Ambiguous,
    /// The request or data states something no longer true.
    Invalidated,
    /// Sources disagree.
    Conflicting,
}

/// Content domain of a clarification target (seed 002 §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Domain {
    /// How the delivery is scored.
    ScoringConvention,
    /// A hard rule the delivery must obey.
    ConstraintRule,
    /// How a quantity is computed.
    ComputationConvention,
    /// What a data field means.
    DataSemantics,
}

/// `residual/<state-id>/meta.toml`: a predecessor's final state (seed 001 §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidualMeta {
    /// Model or agent name that left the state.
    pub predecessor: String,
    /// Whether the predecessor declared the work complete.
    pub declared_complete: bool,
    /// Steps the predecessor took.
    pub steps: u32,
    /// Test ids the verifier fails on this state.
    pub failing_tests: Vec<String>,
    /// Files the gold changes and this state does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<Vec<String>>,
    /// Free text for authors.
    #[serde(default)]
    pub notes: String,
}
