//! [`load`]: read and validate one task package of format 1 or 2 (DESIGN §2; the format-2
//! additions' rules are in [`crate::format2`]).
//!
//! The order of the checks fixes which error a package with several problems reports first:
//! task.toml, the required files and directories, the tree (entry kinds, symlinks), then
//! requirements, observations, the other TOML files, solutions and residual states.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use specgap_protocol::package::{ClarificationTarget, Observation, PACKAGE_FORMATS, Requirement, ResidualMeta, TaskManifest, UserProfile};
use toml::Spanned;

use crate::error::{LoadError, Location};
use crate::package::{Overlay, ResidualState, Solutions, TaskPackage};
use crate::tree;
use crate::{format2, format2_env};

/// The TOML files formats 1 and 2 define at a package's top level; any other `*.toml` there is
/// most likely a misspelling (`requirement.toml` would silently unscore a task), so it is an
/// error.
const KNOWN_TOML: [&str; 6] =
    ["task.toml", "requirements.toml", "observations.toml", "user.toml", "clarifications.toml", crate::synthesis::SYNTHESIS_FILE];

/// Loads the package at `path` and checks every rule of DESIGN §2 that needs no evaluator run.
///
/// Reads task.toml, instruction.md, instruction.full.md, workspace/, evaluator/,
/// requirements.toml, observations.toml, user.toml, information.md, clarifications.toml,
/// solutions/ (gold, literal, mutants, each with an optional delete.txt), `residual/<id>/`
/// (state.patch + meta.toml), NOTES.md and, in format 2, the `[delivery].schema` file, and
/// hashes every file.
///
/// # Errors
/// The first [`LoadError`] found; each names the file and, for TOML, the line and column.
pub fn load(path: impl AsRef<Path>) -> Result<TaskPackage, LoadError> {
    let root = path.as_ref().to_path_buf();
    let task_toml = root.join("task.toml");
    if !is_present(&task_toml)? {
        return Err(LoadError::MissingTaskToml { root });
    }
    let (manifest, spans) = load_manifest(&task_toml)?;
    let instruction =
        read_optional_text(&root.join("instruction.md"))?.ok_or_else(|| LoadError::MissingInstruction { root: root.clone() })?;
    require_dir(&root.join("workspace"), || LoadError::MissingWorkspace { root: root.clone() })?;
    require_dir(&root.join("evaluator"), || LoadError::MissingEvaluator { root: root.clone() })?;

    let entries = tree::walk(&root)?;
    tree::check_symlinks(&root, &entries)?;

    let requirements = load_requirements(&root)?;
    let requirement_ids: Vec<String> = requirements.iter().map(|r| r.id.clone()).collect();
    let observations = load_observations(&root, &requirement_ids, manifest.format)?;
    let user = read_optional_toml::<UserProfile>(&root.join("user.toml"))?;
    let clarifications = load_clarifications(&root, &requirement_ids)?;
    let solutions = load_solutions(&root, &requirement_ids)?;
    let residual = load_residual(&root)?;
    reject_unknown_toml(&root)?;
    let synthesis = load_synthesis(&root)?;
    let delivery_schema = match manifest.delivery.as_ref().and_then(|d| d.schema.as_deref()) {
        Some(rel) => Some(format2::load_schema(&root, rel, spans.schema)?),
        None => None,
    };
    let image_environment = format2_env::resolve(&root, &manifest, &spans.environment)?;
    let stages = match &manifest.stages {
        Some(stages) => Some(crate::stages::load(&root, stages, spans.stages.clone())?),
        None => None,
    };
    if image_environment.is_none()
        && let Some(state) = residual.values().find(|state| state.machine.is_some())
    {
        return Err(LoadError::Invalid {
            at: Location::path(state.machine.as_deref().unwrap_or(&root)),
            message: "a machine layer is a change to an image's files; this package's [environment] names no image (format 2 `image`, `dockerfile`, `rootfs` or `oci_layout`)".into(),
        });
    }

    let hashes = tree::content_hashes(&root, &entries)?;
    Ok(TaskPackage {
        manifest,
        instruction,
        instruction_full: read_optional_text(&root.join("instruction.full.md"))?,
        requirements,
        requirement_ids,
        observations,
        user,
        information: read_optional_text(&root.join("information.md"))?,
        clarifications,
        solutions,
        residual,
        notes: read_optional_text(&root.join("NOTES.md"))?,
        delivery_schema,
        image_environment,
        stages,
        synthesis,
        hash: hashes.package,
        workspace_hash: hashes.workspace,
        root,
    })
}

/// Whether something (anything, even a dangling symlink) exists at `path`.
fn is_present(path: &Path) -> Result<bool, LoadError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(false),
        Err(_) => fs_err::symlink_metadata(path).map(|_| true).map_err(LoadError::from),
    }
}

/// Requires a real directory (not a symlink to one) at `path`.
fn require_dir(path: &Path, missing: impl FnOnce() -> LoadError) -> Result<(), LoadError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == ErrorKind::NotFound => return Err(missing()),
        Err(_) => fs_err::symlink_metadata(path)?,
    };
    let found = if meta.is_dir() {
        return Ok(());
    } else if meta.file_type().is_symlink() {
        "a symlink"
    } else if meta.is_file() {
        "a regular file"
    } else {
        "a special file"
    };
    Err(LoadError::NotADirectory { path: path.to_path_buf(), found })
}

fn read_optional_text(path: &Path) -> Result<Option<String>, LoadError> {
    if !is_present(path)? {
        return Ok(None);
    }
    Ok(Some(read_text(path)?))
}

/// Reads a text file that must be a regular file (or a link to one). Anything else is
/// refused before it is opened: opening a fifo would block the loader forever, and a device
/// could be read without end. (Files are read before the tree walk rejects special files.)
pub(crate) fn read_text(path: &Path) -> Result<String, LoadError> {
    let meta = fs_err::metadata(path)?;
    if !meta.is_file() {
        return Err(LoadError::NotAFile { path: path.to_path_buf(), found: tree::kind_name(&meta.file_type()) });
    }
    Ok(fs_err::read_to_string(path)?)
}

/// Reads and deserializes a TOML file, locating shape errors by line and column.
fn read_toml<T: DeserializeOwned>(path: &Path) -> Result<(T, String), LoadError> {
    let text = read_text(path)?;
    let value = toml::from_str::<T>(&text).map_err(|err| LoadError::toml(path, &text, &err))?;
    Ok((value, text))
}

fn read_optional_toml<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, LoadError> {
    if !is_present(path)? {
        return Ok(None);
    }
    read_toml(path).map(|(value, _)| Some(value))
}

fn at<T>(path: &Path, text: &str, spanned: &Spanned<T>) -> Location {
    Location::at_offset(path, text, spanned.span().start)
}

// ---------------------------------------------------------------------------------------------
// task.toml

/// The spans of the task.toml values the loader checks beyond their type. Unknown keys are
/// ignored here; the strict parse into [`TaskManifest`] rejects them.
#[derive(Deserialize)]
struct ManifestProbe {
    format: Option<Spanned<toml::Value>>,
    task: Option<TaskProbe>,
    evaluator: Option<EvaluatorProbe>,
    delivery: Option<DeliveryProbe>,
    project: Option<ProjectProbe>,
    environment: Option<EnvironmentProbe>,
    budget: Option<BudgetProbe>,
    stages: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct BudgetProbe {
    wall_sec: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct EnvironmentProbe {
    commands: Option<Spanned<toml::Value>>,
    binds: Option<Spanned<toml::Value>>,
    image: Option<Spanned<toml::Value>>,
    dockerfile: Option<Spanned<toml::Value>>,
    rootfs: Option<Spanned<toml::Value>>,
    oci_layout: Option<Spanned<toml::Value>>,
    workdir: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct ProjectProbe {
    probes: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct TaskProbe {
    name: Option<Spanned<toml::Value>>,
    tags: Option<Spanned<toml::Value>>,
    subfamily: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct EvaluatorProbe {
    command: Option<Spanned<toml::Value>>,
    timeout_sec: Option<Spanned<toml::Value>>,
    dir: Option<Spanned<toml::Value>>,
    out: Option<Spanned<toml::Value>>,
    environment: Option<Spanned<toml::Value>>,
    trusts_workspace: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
struct DeliveryProbe {
    reference: Option<Spanned<toml::Value>>,
    artifact: Option<Spanned<toml::Value>>,
    schema: Option<Spanned<toml::Value>>,
}

/// What [`load_manifest`] leaves for after the tree walk has vetted every symlink: where
/// `[delivery].schema` and the image-environment keys stand.
struct ManifestSpans {
    schema: Location,
    /// Where `[stages]` stands.
    stages: Location,
    environment: format2_env::EnvironmentSpans,
}

/// Reads task.toml; returns it with the locations of the keys read after the tree walk.
fn load_manifest(path: &Path) -> Result<(TaskManifest, ManifestSpans), LoadError> {
    let (probe, text) = read_toml::<ManifestProbe>(path)?;
    check_format(path, &text, probe.format.as_ref())?;
    let manifest = toml::from_str::<TaskManifest>(&text).map_err(|err| LoadError::toml(path, &text, &err))?;
    let locate = |spanned: Option<&Spanned<toml::Value>>| match spanned {
        Some(s) => at(path, &text, s),
        None => Location::path(path),
    };
    let task_probe = probe.task.as_ref();
    let delivery_probe = probe.delivery.as_ref();
    let env_probe = probe.environment.as_ref();
    let eval_probe = probe.evaluator.as_ref();
    let env_key = |pick: fn(&EnvironmentProbe) -> Option<&Spanned<toml::Value>>| env_probe.and_then(pick);
    let eval_key = |pick: fn(&EvaluatorProbe) -> Option<&Spanned<toml::Value>>| eval_probe.and_then(pick);
    let format_2_keys = [
        ("[task].tags", task_probe.and_then(|t| t.tags.as_ref())),
        ("[task].subfamily", task_probe.and_then(|t| t.subfamily.as_ref())),
        ("[delivery].schema", delivery_probe.and_then(|d| d.schema.as_ref())),
        ("[project].probes", probe.project.as_ref().and_then(|p| p.probes.as_ref())),
        ("[environment].image", env_key(|e| e.image.as_ref())),
        ("[environment].dockerfile", env_key(|e| e.dockerfile.as_ref())),
        ("[environment].rootfs", env_key(|e| e.rootfs.as_ref())),
        ("[environment].oci_layout", env_key(|e| e.oci_layout.as_ref())),
        ("[environment].workdir", env_key(|e| e.workdir.as_ref())),
        ("[evaluator].dir", eval_key(|e| e.dir.as_ref())),
        ("[evaluator].out", eval_key(|e| e.out.as_ref())),
        ("[evaluator.environment]", eval_key(|e| e.environment.as_ref())),
        ("[evaluator].trusts_workspace", eval_key(|e| e.trusts_workspace.as_ref())),
        ("[stages]", probe.stages.as_ref()),
    ];
    for (key, spanned) in format_2_keys {
        if spanned.is_some() {
            format2::require_format_2(manifest.format, locate(spanned), key)?;
        }
    }
    format2::check_labels(
        &manifest.task,
        locate(task_probe.and_then(|t| t.tags.as_ref())),
        locate(task_probe.and_then(|t| t.subfamily.as_ref())),
    )?;
    let name_at = locate(task_probe.and_then(|t| t.name.as_ref()));
    if !is_task_name(&manifest.task.name) {
        return Err(LoadError::BadTaskName { at: name_at, name: manifest.task.name.clone() });
    }
    let evaluator = probe.evaluator.as_ref();
    if manifest.evaluator.command.trim().is_empty() {
        return Err(LoadError::EmptyEvaluatorCommand { at: locate(evaluator.and_then(|e| e.command.as_ref())) });
    }
    if manifest.evaluator.timeout_sec == 0 {
        return Err(LoadError::Invalid {
            at: locate(evaluator.and_then(|e| e.timeout_sec.as_ref())),
            message: "[evaluator].timeout_sec = 0; expected at least 1 second".into(),
        });
    }
    if manifest.budget.wall_sec == Some(0) {
        return Err(LoadError::Invalid {
            at: locate(probe.budget.as_ref().and_then(|b| b.wall_sec.as_ref())),
            message: "[budget].wall_sec = 0; expected at least 1 second (leave the key out for the protocol's wall clock)".into(),
        });
    }
    if let Some(project) = &manifest.project
        && project.probes.iter().any(|c| c.trim().is_empty())
    {
        return Err(LoadError::Invalid {
            at: locate(probe.project.as_ref().and_then(|p| p.probes.as_ref())),
            message: "[project].probes has a blank command; expected a shell command in each entry".into(),
        });
    }
    for bind in &manifest.environment.binds {
        if !Path::new(bind).is_absolute() {
            return Err(LoadError::Invalid {
                at: Location::path(path),
                message: format!("[environment].binds entry `{bind}` is relative; expected an absolute host path"),
            });
        }
    }
    if let Some(delivery) = &manifest.delivery {
        let probe = delivery_probe;
        if !delivery.reference.is_finite() || delivery.reference == 0.0 {
            return Err(LoadError::BadDeliveryReference {
                at: locate(probe.and_then(|d| d.reference.as_ref())),
                value: delivery.reference,
            });
        }
        if let Err(err) = globset::Glob::new(&delivery.artifact) {
            return Err(LoadError::Invalid {
                at: locate(probe.and_then(|d| d.artifact.as_ref())),
                message: format!("[delivery].artifact `{}` is not a usable glob: {}", delivery.artifact, err.kind()),
            });
        }
    }
    let source = env_key(|e| e.image.as_ref())
        .or(env_key(|e| e.dockerfile.as_ref()))
        .or(env_key(|e| e.rootfs.as_ref()))
        .or(env_key(|e| e.oci_layout.as_ref()));
    let environment = format2_env::EnvironmentSpans {
        source: locate(source),
        workdir: locate(env_key(|e| e.workdir.as_ref())),
        host_keys: locate(env_key(|e| e.commands.as_ref()).or(env_key(|e| e.binds.as_ref()))),
        dir: locate(eval_key(|e| e.dir.as_ref())),
        out: locate(eval_key(|e| e.out.as_ref())),
        evaluator_environment: locate(eval_key(|e| e.environment.as_ref())),
    };
    let schema = locate(delivery_probe.and_then(|d| d.schema.as_ref()));
    let stages = locate(probe.stages.as_ref());
    Ok((manifest, ManifestSpans { schema, stages, environment }))
}

fn check_format(path: &Path, text: &str, format: Option<&Spanned<toml::Value>>) -> Result<(), LoadError> {
    let Some(format) = format else {
        return Err(LoadError::FormatMissing { at: Location::path(path) });
    };
    match format.get_ref() {
        toml::Value::Integer(n) if PACKAGE_FORMATS.iter().any(|f| i64::from(*f) == *n) => Ok(()),
        other => Err(LoadError::FormatUnsupported { at: at(path, text, format), found: other.to_string() }),
    }
}

/// `org/name`: one or more non-empty segments of ASCII letters, digits, `.`, `_`, `-`,
/// joined by `/`, none of them `.` or `..` (names become directory names in reports).
fn is_task_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        })
}

// ---------------------------------------------------------------------------------------------
// requirements.toml, observations.toml, clarifications.toml

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequirementsDoc {
    #[serde(default)]
    requirement: Vec<Spanned<Requirement>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservationsDoc {
    #[serde(default)]
    observation: Vec<Spanned<Observation>>,
}

/// The spans of `request` keys (format 2), read beside [`ObservationsDoc`].
#[derive(Deserialize)]
struct ObservationsProbe {
    #[serde(default)]
    observation: Vec<ObservationProbe>,
}

#[derive(Deserialize)]
struct ObservationProbe {
    request: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClarificationsDoc {
    #[serde(default)]
    target: Vec<Spanned<ClarificationTarget>>,
}

/// Whether `id` is lowercase-hyphenated: words of `a-z0-9` joined by single hyphens, the
/// first character a letter (DESIGN §2 `requirements.toml`).
pub fn is_requirement_id(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_lowercase())
        && id.split('-').all(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

/// Loads requirements.toml (if present), sorted by priority, highest first.
fn load_requirements(root: &Path) -> Result<Vec<Requirement>, LoadError> {
    let path = root.join("requirements.toml");
    if !is_present(&path)? {
        return Ok(Vec::new());
    }
    let (doc, text) = read_toml::<RequirementsDoc>(&path)?;
    if doc.requirement.is_empty() {
        return Err(LoadError::Invalid {
            at: Location::path(&path),
            message: "defines no requirement; expected at least one [[requirement]] (or no requirements.toml)".into(),
        });
    }
    let mut ids: HashSet<&str> = HashSet::new();
    let mut priorities: HashMap<u32, &str> = HashMap::new();
    for spanned in &doc.requirement {
        let requirement = spanned.get_ref();
        let here = || at(&path, &text, spanned);
        if !is_requirement_id(&requirement.id) {
            return Err(LoadError::BadRequirementId { at: here(), id: requirement.id.clone() });
        }
        if !ids.insert(&requirement.id) {
            return Err(LoadError::DuplicateRequirement { at: here(), id: requirement.id.clone() });
        }
        if requirement.priority == 0 {
            return Err(LoadError::ZeroPriority { at: here(), id: requirement.id.clone() });
        }
        if let Some(first) = priorities.insert(requirement.priority, &requirement.id) {
            return Err(LoadError::DuplicatePriority {
                at: here(),
                priority: requirement.priority,
                first: first.to_owned(),
                second: requirement.id.clone(),
            });
        }
    }
    let mut requirements: Vec<Requirement> = doc.requirement.into_iter().map(Spanned::into_inner).collect();
    requirements.sort_by_key(|r| r.priority);
    Ok(requirements)
}

/// Loads observations.toml: required with requirements, every observation naming a known
/// requirement, one observation per (requirement, failure mode), every requirement covered;
/// a `request` only in format 2, and never blank.
fn load_observations(root: &Path, requirement_ids: &[String], format: u32) -> Result<Vec<Observation>, LoadError> {
    let path = root.join("observations.toml");
    if !is_present(&path)? {
        if requirement_ids.is_empty() {
            return Ok(Vec::new());
        }
        return Err(LoadError::MissingObservations { root: root.to_path_buf() });
    }
    let (doc, text) = read_toml::<ObservationsDoc>(&path)?;
    let probe = toml::from_str::<ObservationsProbe>(&text).map_err(|err| LoadError::toml(&path, &text, &err))?;
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (spanned, probe) in doc.observation.iter().zip(&probe.observation) {
        let observation = spanned.get_ref();
        if let (Some(request), Some(request_at)) = (&observation.request, &probe.request) {
            let request_at = at(&path, &text, request_at);
            format2::require_format_2(format, request_at.clone(), "[[observation]].request")?;
            if request.trim().is_empty() {
                return Err(LoadError::Invalid {
                    at: request_at,
                    message: "request is blank; expected what the owner needs to be different, in the owner's words (or no `request`)"
                        .into(),
                });
            }
        }
        if !requirement_ids.contains(&observation.requirement) {
            return Err(LoadError::UnknownRequirement {
                at: at(&path, &text, spanned),
                referrer: "observation".into(),
                id: observation.requirement.clone(),
            });
        }
        if !seen.insert((&observation.requirement, &observation.failure_mode)) {
            return Err(LoadError::DuplicateObservation {
                at: at(&path, &text, spanned),
                requirement: observation.requirement.clone(),
                failure_mode: observation.failure_mode.clone(),
            });
        }
    }
    for id in requirement_ids {
        if !doc.observation.iter().any(|o| &o.get_ref().requirement == id) {
            return Err(LoadError::RequirementWithoutObservation { at: Location::path(&path), id: id.clone() });
        }
    }
    Ok(doc.observation.into_iter().map(Spanned::into_inner).collect())
}

/// Loads clarifications.toml: unique ids; a `rule_source` that looks like a requirement id
/// (lowercase-hyphenated with at least one hyphen) must name a known requirement when the
/// task has requirements. Free-text sources ("the pricing sheet") are not checked.
fn load_clarifications(root: &Path, requirement_ids: &[String]) -> Result<Vec<ClarificationTarget>, LoadError> {
    let path = root.join("clarifications.toml");
    if !is_present(&path)? {
        return Ok(Vec::new());
    }
    let (doc, text) = read_toml::<ClarificationsDoc>(&path)?;
    let mut ids: HashSet<&str> = HashSet::new();
    for spanned in &doc.target {
        let target = spanned.get_ref();
        if !ids.insert(&target.id) {
            return Err(LoadError::DuplicateClarification { at: at(&path, &text, spanned), id: target.id.clone() });
        }
        let Some(source) = &target.rule_source else {
            continue;
        };
        let looks_like_requirement = source.contains('-') && is_requirement_id(source);
        if !requirement_ids.is_empty() && looks_like_requirement && !requirement_ids.contains(source) {
            return Err(LoadError::UnknownRequirement {
                at: at(&path, &text, spanned),
                referrer: format!("clarification target `{}` rule_source", target.id),
                id: source.clone(),
            });
        }
    }
    Ok(doc.target.into_iter().map(Spanned::into_inner).collect())
}

// ---------------------------------------------------------------------------------------------
// solutions/ and residual/

/// The sorted `(name, path)` children of a directory; names must be UTF-8.
fn children(dir: &Path) -> Result<Vec<(String, PathBuf)>, LoadError> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let Ok(name) = entry.file_name().into_string() else {
            return Err(LoadError::UnexpectedEntry { path, found: "non-UTF-8 name", expected: "UTF-8 file names" });
        };
        out.push((name, path));
    }
    out.sort();
    Ok(out)
}

fn is_real_dir(path: &Path) -> Result<bool, LoadError> {
    Ok(fs_err::symlink_metadata(path)?.is_dir())
}

fn load_solutions(root: &Path, requirement_ids: &[String]) -> Result<Solutions, LoadError> {
    let dir = root.join("solutions");
    let mut solutions = Solutions::default();
    if !is_present(&dir)? {
        return Ok(solutions);
    }
    require_dir(&dir, || LoadError::NotADirectory { path: dir.clone(), found: "nothing" })?;
    for (name, path) in children(&dir)? {
        match name.as_str() {
            "gold" | "literal" | "mutants" if !is_real_dir(&path)? => {
                require_dir(&path, || LoadError::NotADirectory { path: path.clone(), found: "nothing" })?;
            }
            "gold" => solutions.gold = Some(load_overlay(&path)?),
            "literal" => solutions.literal = Some(load_overlay(&path)?),
            "mutants" => solutions.mutants = load_mutants(&path, requirement_ids)?,
            _ => {
                return Err(LoadError::UnexpectedEntry {
                    path,
                    found: "entry",
                    expected: "only gold/, literal/ and mutants/ under solutions/",
                });
            }
        }
    }
    Ok(solutions)
}

fn load_mutants(dir: &Path, requirement_ids: &[String]) -> Result<BTreeMap<String, Overlay>, LoadError> {
    let mut mutants = BTreeMap::new();
    for (name, path) in children(dir)? {
        if !is_real_dir(&path)? {
            return Err(LoadError::UnexpectedEntry {
                path,
                found: "non-directory",
                expected: "one directory per requirement id under solutions/mutants/",
            });
        }
        if !requirement_ids.contains(&name) {
            return Err(LoadError::UnknownRequirement { at: Location::path(&path), referrer: "mutant directory".into(), id: name });
        }
        let overlay = load_overlay(&path)?;
        mutants.insert(name, overlay);
    }
    Ok(mutants)
}

/// An overlay directory and its `delete.txt`: one workspace-relative path per line; blank
/// lines and lines starting with `#` are ignored; surrounding whitespace is trimmed.
pub(crate) fn load_overlay(dir: &Path) -> Result<Overlay, LoadError> {
    let delete_txt = dir.join("delete.txt");
    let mut delete = Vec::new();
    if is_present(&delete_txt)? {
        let text = read_text(&delete_txt)?;
        for (index, line) in text.lines().enumerate() {
            let entry = line.trim();
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let escape = |why| LoadError::DeleteEscapes { at: Location::at_line(&delete_txt, index + 1), entry: entry.to_owned(), why };
            if Path::new(entry).is_absolute() {
                return Err(escape("is absolute"));
            }
            match tree::normalize_relative(Path::new(entry)) {
                None => return Err(escape("leaves the workspace")),
                Some(p) if p.as_os_str().is_empty() => {
                    return Err(escape("names the workspace itself"));
                }
                Some(p) => delete.push(p),
            }
        }
    }
    Ok(Overlay { dir: dir.to_path_buf(), delete })
}

/// Residual state ids become part of `--start residual:<id>`, so they are restricted to
/// letters, digits, `.`, `_` and `-`.
fn is_state_id(id: &str) -> bool {
    !id.is_empty() && !id.starts_with('.') && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A whole-machine residual state's layer inside `residual/<id>/` ([`ResidualState::machine`]).
pub const MACHINE_LAYER_FILE: &str = "machine.tar";

fn load_residual(root: &Path) -> Result<BTreeMap<String, ResidualState>, LoadError> {
    let dir = root.join("residual");
    let mut states = BTreeMap::new();
    if !is_present(&dir)? {
        return Ok(states);
    }
    require_dir(&dir, || LoadError::NotADirectory { path: dir.clone(), found: "nothing" })?;
    for (id, path) in children(&dir)? {
        if !is_real_dir(&path)? || !is_state_id(&id) {
            return Err(LoadError::UnexpectedEntry {
                path,
                found: "entry",
                expected: "one directory per residual state under residual/, named with letters, digits, `.`, `_` or `-`",
            });
        }
        let patch = path.join("state.patch");
        if !is_present(&patch)? {
            return Err(LoadError::MissingResidualFile { dir: path, file: "state.patch" });
        }
        let patch_meta = fs_err::metadata(&patch)?;
        if !patch_meta.is_file() {
            return Err(LoadError::NotAFile { path: patch, found: tree::kind_name(&patch_meta.file_type()) });
        }
        let meta_path = path.join("meta.toml");
        if !is_present(&meta_path)? {
            return Err(LoadError::MissingResidualFile { dir: path, file: "meta.toml" });
        }
        let (meta, _) = read_toml::<ResidualMeta>(&meta_path)?;
        if meta.failing_tests.is_empty() {
            return Err(LoadError::Invalid {
                at: Location::path(&meta_path),
                message: "failing_tests is empty; a residual state is one the verifier still fails, so list those tests".into(),
            });
        }
        let machine = path.join(MACHINE_LAYER_FILE);
        let machine = if is_present(&machine)? {
            let found = fs_err::symlink_metadata(&machine)?;
            if !found.is_file() {
                return Err(LoadError::NotAFile { path: machine, found: tree::kind_name(&found.file_type()) });
            }
            Some(machine)
        } else {
            None
        };
        states.insert(id.clone(), ResidualState { id, patch, meta, machine });
    }
    Ok(states)
}

/// `synthesis.toml`, when present: its format must be one this specgap reads.
fn load_synthesis(root: &Path) -> Result<Option<crate::synthesis::SynthesisRecord>, LoadError> {
    let path = root.join(crate::synthesis::SYNTHESIS_FILE);
    let record = read_optional_toml::<crate::synthesis::SynthesisRecord>(&path)?;
    if let Some(record) = &record
        && record.format != crate::synthesis::SYNTHESIS_FORMAT
    {
        return Err(LoadError::Invalid {
            at: Location::path(&path),
            message: format!(
                "synthesis.toml format {} is not supported; this specgap reads format {}",
                record.format,
                crate::synthesis::SYNTHESIS_FORMAT
            ),
        });
    }
    Ok(record)
}

fn reject_unknown_toml(root: &Path) -> Result<(), LoadError> {
    for (name, path) in children(root)? {
        if name.ends_with(".toml") && !KNOWN_TOML.contains(&name.as_str()) {
            return Err(LoadError::UnexpectedEntry {
                path,
                found: "toml file",
                expected: "only task.toml, requirements.toml, observations.toml, user.toml, clarifications.toml and synthesis.toml at the package top level",
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_ids() {
        for ok in ["charge-once", "a", "retry-after-2s", "x1-y2"] {
            assert!(is_requirement_id(ok), "{ok}");
        }
        for bad in ["Charge-once", "charge_once", "-a", "a-", "a--b", "1st", "", "a b"] {
            assert!(!is_requirement_id(bad), "{bad}");
        }
    }

    #[test]
    fn task_names() {
        assert!(is_task_name("examples/config-drift"));
        assert!(is_task_name("solo"));
        for bad in ["", "/a", "a/", "a//b", "a/../b", "a b", "a/./b"] {
            assert!(!is_task_name(bad), "{bad}");
        }
    }
}
