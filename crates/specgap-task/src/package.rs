//! [`TaskPackage`]: a loaded, validated task package of format 1 or 2 (DESIGN §2).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::format2_env::ImageEnvironment;
use crate::stages::PackageStages;
use specgap_protocol::package::{ClarificationTarget, Observation, Requirement, ResidualMeta, TaskManifest, UserProfile};
use specgap_protocol::result::{EvalResult, ScoringContext, ScoringKind};

/// A solution overlay (DESIGN §2): files copied over the *starter workspace*, then the paths
/// of its `delete.txt` removed.
///
/// `delete.txt` at the overlay's root is an instruction, not a file of the overlay: it is
/// never copied into the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    /// The overlay directory (`solutions/gold`, `solutions/literal` or
    /// `solutions/mutants/<requirement-id>`), absolute when the package root is.
    pub dir: PathBuf,
    /// Workspace-relative paths to remove after copying, lexically normalised (no `.`, no
    /// `..`, never absolute), in file order; empty without a `delete.txt`.
    pub delete: Vec<PathBuf>,
}

/// The reference solutions of a package (seed 000 Appendix E.2: gold, literal reference, one
/// mutant per requirement).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Solutions {
    /// `solutions/gold/`: passes every requirement / test / the delivery reference.
    pub gold: Option<Overlay>,
    /// `solutions/literal/`: does exactly what instruction.md asks, nothing more.
    pub literal: Option<Overlay>,
    /// `solutions/mutants/<requirement-id>/`: the gold broken so that requirement fails.
    pub mutants: BTreeMap<String, Overlay>,
}

/// A residual state (seed 001 §3): a predecessor's final workspace, stored as a patch.
#[derive(Debug, Clone, PartialEq)]
pub struct ResidualState {
    /// The state id (its directory name under `residual/`).
    pub id: String,
    /// `residual/<id>/state.patch`: `git diff --binary` against the clean workspace.
    pub patch: PathBuf,
    /// `residual/<id>/meta.toml`, parsed.
    pub meta: ResidualMeta,
    /// `residual/<id>/machine.tar`, when present: a whole-machine state's changes outside the
    /// workspace as an OCI layer over the task's image (seed 001's Terminal-Bench track;
    /// image environments only, docs/decisions.md "Whole-machine residual states").
    pub machine: Option<PathBuf>,
}

/// A format-2 delivery case's submission schema (`[delivery].schema`): a JSON Schema the
/// submission format follows (seed 002's extraction contract), private to the harness.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliverySchema {
    /// The schema file inside the package (outside `workspace/`), absolute when the package
    /// root is.
    pub path: PathBuf,
    /// Its parsed contents: a JSON object, or `true` / `false`.
    pub schema: serde_json::Value,
}

/// A loaded task package. Build one with [`crate::load`]; every invariant of DESIGN §2 that
/// can be checked without running the evaluator holds.
#[derive(Debug, Clone)]
pub struct TaskPackage {
    pub(crate) root: PathBuf,
    pub(crate) manifest: TaskManifest,
    pub(crate) instruction: String,
    pub(crate) instruction_full: Option<String>,
    /// Sorted by priority, highest (1) first.
    pub(crate) requirements: Vec<Requirement>,
    /// The ids of `requirements`, same order; backs [`TaskPackage::scoring_context`].
    pub(crate) requirement_ids: Vec<String>,
    pub(crate) observations: Vec<Observation>,
    pub(crate) user: Option<UserProfile>,
    pub(crate) information: Option<String>,
    pub(crate) clarifications: Vec<ClarificationTarget>,
    pub(crate) solutions: Solutions,
    pub(crate) residual: BTreeMap<String, ResidualState>,
    pub(crate) notes: Option<String>,
    pub(crate) delivery_schema: Option<DeliverySchema>,
    pub(crate) image_environment: Option<ImageEnvironment>,
    pub(crate) stages: Option<PackageStages>,
    pub(crate) synthesis: Option<crate::synthesis::SynthesisRecord>,
    pub(crate) hash: String,
    pub(crate) workspace_hash: String,
}

impl TaskPackage {
    /// The package directory, as given to [`crate::load`] (or found by [`crate::discover`]).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `synthesis.toml`: what `specgap synthesize` recorded about this package, if it built it.
    pub fn synthesis(&self) -> Option<&crate::synthesis::SynthesisRecord> {
        self.synthesis.as_ref()
    }

    /// `[task].name`, unique in a suite.
    pub fn name(&self) -> &str {
        &self.manifest.task.name
    }

    /// The parsed `task.toml`.
    pub fn manifest(&self) -> &TaskManifest {
        &self.manifest
    }

    /// The package format (`format` in task.toml): 1, or 2 when it may use the format-2 keys
    /// ([`specgap_protocol::package::FORMAT_2_KEYS`]).
    pub fn format(&self) -> u32 {
        self.manifest.format
    }

    /// `[task].tags` (format 2), in file order; empty when absent.
    pub fn tags(&self) -> &[String] {
        &self.manifest.task.tags
    }

    /// `[task].subfamily` (format 2), the sub-family within `[task].family`, if given.
    pub fn subfamily(&self) -> Option<&str> {
        self.manifest.task.subfamily.as_deref()
    }

    /// `[stages]` (format 2), loaded: `None` for a task of one stage.
    pub fn stages(&self) -> Option<&PackageStages> {
        self.stages.as_ref()
    }

    /// `[delivery].schema` (format 2), read and parsed, if given.
    pub fn delivery_schema(&self) -> Option<&DeliverySchema> {
        self.delivery_schema.as_ref()
    }

    /// The task's image environment (format 2: `[environment]` names an image, a Dockerfile,
    /// a rootfs tarball or an OCI layout), checked; `None` for a host-command environment.
    pub fn image_environment(&self) -> Option<&ImageEnvironment> {
        self.image_environment.as_ref()
    }

    /// `instruction.md`: the opening instruction (owner's partial instruction or client's
    /// request), verbatim.
    pub fn instruction(&self) -> &str {
        &self.instruction
    }

    /// `instruction.full.md`, the complete specification (condition `full`), if present.
    pub fn instruction_full(&self) -> Option<&str> {
        self.instruction_full.as_deref()
    }

    /// `workspace/`: the agent-visible starting files.
    pub fn workspace_dir(&self) -> PathBuf {
        self.root.join("workspace")
    }

    /// `evaluator/`: the private evaluator; `[evaluator].command` runs with a private copy of
    /// it as the working directory.
    pub fn evaluator_dir(&self) -> PathBuf {
        self.root.join("evaluator")
    }

    /// The requirements, sorted by priority, highest (1) first. Empty when the package has
    /// no `requirements.toml`.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The requirement ids in priority order (highest first).
    pub fn requirement_ids(&self) -> &[String] {
        &self.requirement_ids
    }

    /// One requirement by id.
    pub fn requirement(&self, id: &str) -> Option<&Requirement> {
        self.requirements.iter().find(|r| r.id == id)
    }

    /// Whether the task is requirement-scored (DESIGN §2): `requirements.toml` exists (the
    /// loader rejects one that defines no requirement).
    pub fn is_requirement_scored(&self) -> bool {
        !self.requirements.is_empty()
    }

    /// Whether the task is a delivery case (`[delivery]` in task.toml). It is
    /// delivery-scored unless it also has requirements or its evaluator reports tests.
    pub fn is_delivery(&self) -> bool {
        self.manifest.delivery.is_some()
    }

    /// The scoring kind as far as the package alone decides it: `Some(Requirement)` with
    /// requirements; `None` otherwise, because test-scored vs delivery / reward depends on
    /// whether the evaluator reports `tests` (use [`TaskPackage::scoring_kind`]).
    pub fn static_scoring_kind(&self) -> Option<ScoringKind> {
        self.is_requirement_scored().then_some(ScoringKind::Requirement)
    }

    /// The scoring kind DESIGN §2 gives the task before its evaluator has reported anything:
    /// requirement-scored with requirements; else test-scored when it has residual states
    /// (their `failing_tests` are tests its verifier fails, seed 001 §3, and `check` holds
    /// them to the tests the evaluator reports, so it reports tests); else delivery-scored
    /// with `[delivery]`; else reward-scored, since an evaluator that has reported no tests
    /// makes a task test-scored only once it does.
    ///
    /// The run store records this for an episode when it begins and replaces it with the kind
    /// of the episode's first valid evaluation, so an episode with none (every attempt an
    /// evaluation error) keeps it. (It used to be `test` for every task without requirements
    /// or `[delivery]`, so reward-scored tasks whose evaluations failed were stored as test.)
    pub fn planned_scoring_kind(&self) -> ScoringKind {
        if self.is_requirement_scored() {
            ScoringKind::Requirement
        } else if !self.residual.is_empty() {
            ScoringKind::Test
        } else if self.is_delivery() {
            ScoringKind::Delivery
        } else {
            ScoringKind::Reward
        }
    }

    /// The scoring kind of an evaluation of this task (DESIGN §2: requirements, then tests,
    /// then delivery, then reward).
    pub fn scoring_kind(&self, result: &EvalResult) -> ScoringKind {
        result.kind(&self.scoring_context())
    }

    /// What [`EvalResult::validate`] and [`EvalResult::score`] need: requirement ids (priority
    /// order) and the delivery reference and direction.
    pub fn scoring_context(&self) -> ScoringContext<'_> {
        ScoringContext {
            requirement_ids: &self.requirement_ids,
            delivery: self.manifest.delivery.as_ref().map(|d| (d.reference, d.direction)),
        }
    }

    /// The observation registry (`observations.toml`), in file order. In format 2 each may
    /// carry the owner's `request` ([`Observation::request`]).
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// The observations of one requirement, in file order (the first is the one used when
    /// the evaluator reports no failure mode, DESIGN §3.4).
    pub fn observations_for<'a>(&'a self, requirement: &'a str) -> impl Iterator<Item = &'a Observation> + 'a {
        self.observations.iter().filter(move |o| o.requirement == requirement)
    }

    /// The observation for a reported failure: the one with this failure mode, or the
    /// requirement's first observation when `failure_mode` is `None` or unregistered
    /// (DESIGN §3.4).
    pub fn observation(&self, requirement: &str, failure_mode: Option<&str>) -> Option<&Observation> {
        let exact = failure_mode.and_then(|mode| self.observations.iter().find(|o| o.requirement == requirement && o.failure_mode == mode));
        exact.or_else(|| self.observations.iter().find(|o| o.requirement == requirement))
    }

    /// `user.toml`, the simulated owner / customer, if present.
    pub fn user(&self) -> Option<&UserProfile> {
        self.user.as_ref()
    }

    /// `information.md`, the complete business information (condition `full-info`), if present.
    pub fn information(&self) -> Option<&str> {
        self.information.as_deref()
    }

    /// Clarification targets (`clarifications.toml`, seed 002 §3.2), in file order.
    pub fn clarifications(&self) -> &[ClarificationTarget] {
        &self.clarifications
    }

    /// The solution overlays.
    pub fn solutions(&self) -> &Solutions {
        &self.solutions
    }

    /// One overlay by scripted-agent name: `gold`, `literal` or `mutant:<requirement-id>`.
    pub fn solution(&self, name: &str) -> Option<&Overlay> {
        match name {
            "gold" => self.solutions.gold.as_ref(),
            "literal" => self.solutions.literal.as_ref(),
            other => other.strip_prefix("mutant:").and_then(|id| self.solutions.mutants.get(id)),
        }
    }

    /// Residual states by id (sorted).
    pub fn residual_states(&self) -> &BTreeMap<String, ResidualState> {
        &self.residual
    }

    /// One residual state by id.
    pub fn residual(&self, id: &str) -> Option<&ResidualState> {
        self.residual.get(id)
    }

    /// `NOTES.md`, private notes for task authors, if present.
    pub fn notes(&self) -> Option<&str> {
        self.notes.as_deref()
    }

    /// The content hash: lowercase hex SHA-256 over every entry of the package (relative
    /// paths, entry kinds, file contents with the executable bit, symlink targets) in a
    /// stable order. Keys episodes in the run store (DESIGN §6).
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The content hash of `workspace/` alone (lowercase hex SHA-256, the same rule as
    /// [`TaskPackage::hash`] with paths relative to `workspace/`): equal for packages whose
    /// workspaces are equal, whatever else differs. Keys the harness's git base of the
    /// workspace, so task directories that share a workspace build it once (issue 32).
    pub fn workspace_hash(&self) -> &str {
        &self.workspace_hash
    }
}
