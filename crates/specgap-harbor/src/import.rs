//! `specgap import harbor`: writes one specgap package per Harbor task (docs/harbor.md has the
//! mapping table), or refuses the task with its reasons.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fs_err as fs;
use sha2::{Digest, Sha256};
use specgap_env::{EngineChoice, EnvCache};
use specgap_protocol::package::MinReward;
use toml::{Table, Value};

use crate::error::{HarborError, io, walk};
use crate::gold::{self, GoldOutcome};
use crate::task::{self, EnvironmentPlan, HARBOR_VERSION, Plan, Refusal};

/// The evaluator program written into every imported package (`evaluator/harbor_verify.py`).
pub const VERIFIER_PROGRAM: &str = include_str!("harbor_verify.py");
/// Where an imported package keeps the Harbor task it came from, verbatim (inside
/// `evaluator/`, so it is private).
pub const HARBOR_COPY: &str = "evaluator/harbor";
/// Host programs an imported host-command package needs: Harbor's `test.sh` is a bash
/// script, and the evaluator is a Python program.
const HOST_COMMANDS: [&str; 2] = ["bash", "python3"];
/// Host programs an imported image task's evaluator runs on (`[evaluator.environment].commands`,
/// issue 26): `harbor_verify.py` runs on the host's `python3`, its `test.sh` calls on the image,
/// which need have neither python3 nor bash.
pub const VERIFIER_COMMANDS: [&str; 1] = ["python3"];
/// The file [`import`] writes beside the packages: Harbor's protocol as a custom protocol
/// (`specgap run DIR --protocol DIR/harbor-protocol.toml --condition hidden --start clean`).
pub const PROTOCOL_FILE: &str = "harbor-protocol.toml";

/// Harbor's protocol (docs/harbor.md "Protocol") in specgap's custom protocol format: the
/// task's instruction under `hidden` (no questions, no feedback), one submission, a clean
/// start, one trial per task; no turn, call or wall caps of its own, so each task's `[budget]`
/// (Harbor's `[agent].timeout_sec`) bounds its episodes and the run records it as the task's
/// override; none of seed 000's loop rules; a reply without a tool call ends the episode on the
/// second in a row, as a Harbor agent's run ends when its model stops calling tools.
pub const PROTOCOL: &str = r#"# Harbor's protocol for tasks imported by `specgap import harbor` (docs/harbor.md "Protocol").
format = 1
description = "Harbor (imported tasks): the task's own instruction, one submission, no questions or feedback, the task's agent timeout as its wall budget"
conditions = ["hidden"]
starts = ["clean"]
repeats = 1
measures = ["reward (Score@1 / Success@1)"]

[budgets]
turns = 0
tool_calls = 0
wall_sec = 0
submissions = 1
clarification_rounds = 0
announce_wall = false

[end_rules]
repeated_call = 0
blank_output = 0
ask_user = 0
no_tool_call = 2
refusals = 0
"#;

/// Seconds the evaluator gets beyond its steps' verifier timeouts.
const EVALUATOR_MARGIN_SEC: u64 = 60;

/// Options of [`import`].
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Run `solution/solve.sh` on the starter to make the gold overlay.
    pub gold: bool,
    /// Run it in the sandbox (`false`: directly on the host, trusted tasks only).
    pub sandbox: bool,
    /// A Harbor simulated-user persona (the text of the file Harbor's `--user-persona-path`
    /// names), written into every package's `user.toml` ([`user_profile`]).
    pub persona: Option<String>,
    /// The container engine that builds an image task's environment at import (its work
    /// directory's files are the starter): `Auto` (`$SPECGAP_ENGINE` when set, else podman,
    /// else docker), a named one, or `None` (only
    /// `docker_image` tasks, pulled by specgap itself; a Dockerfile is then not built and the
    /// task's starter is marked incomplete).
    pub engine: EngineChoice,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions { gold: true, sandbox: true, persona: None, engine: EngineChoice::Auto }
    }
}

/// What the owner may let the engineer change in an imported task: Harbor tasks name no
/// limit, so the whole work directory.
const EDITABLE_SURFACE: &str = "Anything in the work directory the task needs changed.";

/// The `user.toml` of an imported task with a Harbor persona: the persona verbatim (trimmed);
/// as its understanding the task's instruction, which Harbor's simulated user holds as its
/// private goal; the whole work directory as the editable surface.
pub fn user_profile(persona: &str, instruction: &str) -> specgap_protocol::package::UserProfile {
    specgap_protocol::package::UserProfile {
        persona: persona.trim().to_string(),
        understanding: instruction.trim().to_string(),
        editable_surface: EDITABLE_SURFACE.to_string(),
        style: None,
    }
}

/// What became of one task.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A package was written.
    Imported {
        /// The task directory.
        source: PathBuf,
        /// The package directory.
        package: PathBuf,
        /// The task name.
        name: String,
        /// `host` or `image` (runs on issue 25's task environments: podman or docker).
        environment: &'static str,
        /// What became of the gold solution.
        gold: GoldOutcome,
        /// Why the starter is incomplete: an image task whose image could not be built at
        /// import, so the files its image has in the work directory are missing from
        /// `workspace/` (the package's evaluator then refuses to score; [`STARTER_INCOMPLETE`]).
        starter_incomplete: Option<String>,
        /// How many things could not be mapped (listed in the package's NOTES.md).
        unmapped: usize,
    },
    /// The task was refused.
    Refused(Refusal),
    /// A directory that looks like a Harbor task (it holds two of its parts) but has no
    /// `task.toml`; or, when nothing below the source is a task, the source itself.
    NotATask {
        /// The directory.
        dir: PathBuf,
        /// The task parts it holds ([`task::task_parts`]).
        parts: Vec<&'static str>,
        /// Whether this is the source itself, with no Harbor task in or below it.
        is_source: bool,
    },
}

impl Outcome {
    /// The one line `specgap import harbor` prints for this task.
    pub fn line(&self) -> String {
        match self {
            Outcome::Imported { source, name, environment, gold, starter_incomplete, unmapped, .. } => format!(
                "imported {}: {name} ({environment} environment, {}gold {}, {unmapped} not mapped, verifier trusts the workspace)",
                task::dir_name(source),
                starter_incomplete.as_deref().map(|why| format!("starter incomplete ({why}), ")).unwrap_or_default(),
                gold.describe()
            ),
            Outcome::Refused(refusal) => format!("refused {}: {}", task::dir_name(&refusal.dir), refusal.reasons.join("; ")),
            Outcome::NotATask { dir, parts, is_source: true } => format!(
                "not a Harbor task {}: no task.toml in it or in any directory below it (a Harbor task is a directory with task.toml, instruction.md and tests/test.sh){}",
                dir.display(),
                holding(parts)
            ),
            Outcome::NotATask { dir, parts, is_source: false } => {
                format!("not a Harbor task {}: no task.toml{}", task::dir_name(dir), holding(parts))
            }
        }
    }
}

/// `, though it holds …` for a directory's task parts, or nothing.
fn holding(parts: &[&str]) -> String {
    if parts.is_empty() { String::new() } else { format!(", though it holds {}", parts.join(", ")) }
}

impl Outcome {
    /// Whether this outcome makes `specgap import harbor` exit 1 (a refused task, a task
    /// whose starter is incomplete, or a directory that is not a task).
    pub fn is_failure(&self) -> bool {
        !matches!(self, Outcome::Imported { starter_incomplete: None, .. })
    }

    /// The directory this outcome is about.
    pub fn dir(&self) -> &Path {
        match self {
            Outcome::Imported { source, .. } => source,
            Outcome::Refused(refusal) => &refusal.dir,
            Outcome::NotATask { dir, .. } => dir,
        }
    }
}

/// Imports `source` (a Harbor task directory, or a dataset: a directory whose task
/// directories lie below it) into `out`, one package per task in `out/<task directory
/// name>/`, in name order, and [`PROTOCOL_FILE`] beside them when any task was imported.
/// Directories below `source` that look like tasks but have no `task.toml`, and `source`
/// itself when no task is in or below it, are [`Outcome::NotATask`].
///
/// # Errors
/// [`HarborError::NotADirectory`] when `source` is no directory;
/// [`HarborError::OutputExists`] when a package directory exists and is not empty; I/O
/// errors.
pub fn import(source: &Path, out: &Path, options: &ImportOptions) -> Result<Vec<Outcome>, HarborError> {
    if !source.is_dir() {
        return Err(HarborError::NotADirectory { path: source.to_path_buf() });
    }
    let (tasks, lookalikes) = find_tasks(source)?;
    let mut outcomes = Vec::new();
    for dir in tasks {
        let destination = out.join(task::dir_name(&dir));
        outcomes.push(import_task(&dir, &destination, options)?);
    }
    outcomes.extend(lookalikes.into_iter().map(|dir| Outcome::NotATask { parts: task::task_parts(&dir), dir, is_source: false }));
    outcomes.sort_by(|a, b| a.dir().cmp(b.dir()));
    if outcomes.is_empty() {
        outcomes.push(Outcome::NotATask { dir: source.to_path_buf(), parts: task::task_parts(source), is_source: true });
    }
    if outcomes.iter().any(|o| matches!(o, Outcome::Imported { .. })) {
        write(&out.join(PROTOCOL_FILE), PROTOCOL)?;
    }
    Ok(outcomes)
}

/// The summary table printed after the lines: imported (host / image) and refused counts.
pub fn summary(outcomes: &[Outcome]) -> String {
    let count = |f: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let host = count(&|o| matches!(o, Outcome::Imported { environment: "host", .. }));
    let image = count(&|o| matches!(o, Outcome::Imported { environment: "image", .. }));
    let incomplete = count(&|o| matches!(o, Outcome::Imported { starter_incomplete: Some(_), .. }));
    let gold = count(&|o| matches!(o, Outcome::Imported { gold: GoldOutcome::Written { .. }, .. }));
    let refused = count(&|o| matches!(o, Outcome::Refused(_)));
    let not_tasks = count(&|o| matches!(o, Outcome::NotATask { .. }));
    let rows = [
        ("tasks", outcomes.len() - not_tasks),
        ("imported, host environment", host),
        ("imported, image environment", image),
        ("imported, starter incomplete (image not built)", incomplete),
        ("with a gold overlay", gold),
        ("refused", refused),
        ("not a Harbor task (no task.toml)", not_tasks),
    ];
    let mut table = String::from("| outcome | tasks |\n| --- | ---: |\n");
    for (what, n) in rows {
        table.push_str(&format!("| {what} | {n} |\n"));
    }
    table
}

/// The task directories at or below `source`, sorted, and the directories that look like
/// tasks (two of [`task::task_parts`]) without a `task.toml`; neither's own subdirectories
/// are searched.
fn find_tasks(source: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), HarborError> {
    if task::is_task_dir(source) {
        return Ok((vec![source.to_path_buf()], Vec::new()));
    }
    let mut found = Vec::new();
    let mut lookalikes = Vec::new();
    let mut walker = walkdir::WalkDir::new(source).min_depth(1).sort_by_file_name().into_iter();
    while let Some(entry) = walker.next() {
        let entry = entry.map_err(walk(source))?;
        if !entry.file_type().is_dir() || entry.file_name().to_string_lossy().starts_with('.') {
            if entry.file_type().is_dir() {
                walker.skip_current_dir();
            }
            continue;
        }
        if task::is_task_dir(entry.path()) {
            found.push(entry.path().to_path_buf());
            walker.skip_current_dir();
        } else if task::task_parts(entry.path()).len() >= 2 {
            lookalikes.push(entry.path().to_path_buf());
            walker.skip_current_dir();
        }
    }
    Ok((found, lookalikes))
}

/// Imports one task directory into `destination`.
///
/// # Errors
/// As [`import`].
pub fn import_task(dir: &Path, destination: &Path, options: &ImportOptions) -> Result<Outcome, HarborError> {
    let plan = match task::plan(dir)? {
        Ok(plan) => plan,
        Err(refusal) => return Ok(Outcome::Refused(refusal)),
    };
    if destination.exists() && fs::read_dir(destination).map_err(io(destination))?.next().is_some() {
        return Err(HarborError::OutputExists { path: destination.to_path_buf() });
    }
    fs::create_dir_all(destination).map_err(io(destination))?;
    write_workspace(&plan, destination)?;
    copy_tree(dir, &destination.join(HARBOR_COPY))?;
    let is_image = matches!(plan.environment, EnvironmentPlan::Image { .. });
    if is_image && dir.join("environment").is_dir() {
        copy_tree(&dir.join("environment"), &destination.join("environment"))?;
    }
    let opening = plan.steps.first().map(|step| step.instruction.clone()).unwrap_or_default();
    write(&destination.join("instruction.md"), &opening)?;
    for (step, label) in plan.steps.iter().zip(stage_labels(&plan)).skip(1) {
        write(&destination.join(stage_file(&label)), &step.instruction)?;
    }
    if let Some(persona) = &options.persona {
        let path = destination.join("user.toml");
        let profile = user_profile(persona, &every_instruction(&plan));
        let text = toml::to_string(&profile).map_err(|source| HarborError::Toml { path: path.clone(), source })?;
        write(&path, &text)?;
    }
    write(&destination.join("evaluator/harbor_verify.py"), VERIFIER_PROGRAM)?;
    write(&destination.join("task.toml"), &manifest(&plan, destination, &[])?)?;
    // An image task's image is built at import, gold or not: the files of its work directory
    // are the starter (the workspace is mounted over the image's work directory).
    let built = match &plan.environment {
        EnvironmentPlan::Image { .. } => Some(image_starter(&plan, destination, options.engine)?),
        EnvironmentPlan::Host { .. } => None,
    };
    let starter_incomplete = built.as_ref().and_then(|b| b.as_ref().err()).map(|why| format!("the image was not built: {why}"));
    let starter = starter_hashes(&destination.join("workspace"))?;
    let mut stage_files = Vec::with_capacity(plan.steps.len());
    for ((index, step), label) in plan.steps.iter().enumerate().zip(stage_labels(&plan)) {
        let dir = destination.join(stage_files_dir(&label));
        let later = index > 0 && step.staged.is_some();
        stage_files.push(if later { starter_hashes(&dir)? } else { BTreeMap::new() });
    }
    write(&destination.join("evaluator/harbor.json"), &verifier_config(&plan, &starter, &stage_files, starter_incomplete.as_deref()))?;
    let gold = task_gold(&plan, destination, built.as_ref(), options)?;
    let golds: Vec<String> =
        stage_labels(&plan).into_iter().filter(|label| plan.steps.len() > 1 && destination.join(stage_gold_dir(label)).is_dir()).collect();
    if !golds.is_empty() {
        write(&destination.join("task.toml"), &manifest(&plan, destination, &golds)?)?;
    }
    write(&destination.join("NOTES.md"), &notes(&plan, &gold, starter_incomplete.as_deref(), options.persona.is_some()))?;
    Ok(Outcome::Imported {
        source: dir.to_path_buf(),
        package: destination.to_path_buf(),
        name: plan.name.clone(),
        environment: if is_image { "image" } else { "host" },
        gold,
        starter_incomplete,
        unmapped: plan.unmapped.len(),
    })
}

/// Makes the gold of a task (when asked and it has a solution): on the host's programs, or on
/// its image when `built` says the image was built (`None`: a host task).
fn task_gold(
    plan: &Plan,
    destination: &Path,
    built: Option<&Result<(), String>>,
    options: &ImportOptions,
) -> Result<GoldOutcome, HarborError> {
    if !options.gold {
        return Ok(GoldOutcome::NotAsked);
    }
    if plan.steps.iter().all(|s| s.solve.is_none()) {
        return Ok(GoldOutcome::NoSolution);
    }
    match built {
        Some(Err(_)) => Ok(GoldOutcome::NeedsEnvironment { why: "it was not built".into() }),
        Some(Ok(())) => match image_view(destination, options.engine)? {
            Ok(view) => gold::make_gold(plan, destination, &view, gold::Launch::Direct, options.sandbox),
            Err(why) => Ok(GoldOutcome::NeedsEnvironment { why }),
        },
        None => {
            let view = specgap_sandbox::HostView::resolve(&host_environment(plan))?;
            gold::make_gold(plan, destination, &view, gold::Launch::Bash, options.sandbox)
        }
    }
}

/// The environment cache (`$XDG_CACHE_HOME/specgap/env`), or why there is none.
fn env_cache() -> Result<EnvCache, String> {
    EnvCache::default_root().map(EnvCache::new).map_err(|error| one_line(&chain(&error)))
}

/// Builds an image task's environment (issue 25's cache and engine) and copies the files of
/// the image's work directory into the package's `workspace/`; the reason, in one line, when
/// the image cannot be built.
fn image_starter(plan: &Plan, destination: &Path, engine: EngineChoice) -> Result<Result<(), String>, HarborError> {
    let package = specgap_task::load(destination)?;
    let Some(image) = package.image_environment() else {
        return Ok(Err("the package names no image environment".into()));
    };
    let cache = match env_cache() {
        Ok(cache) => cache,
        Err(why) => return Ok(Err(why)),
    };
    let built = match cache.build(&image.source.source, image.source.path.as_deref(), engine) {
        Ok(built) => built,
        Err(error) => return Ok(Err(one_line(&chain(&error)))),
    };
    let inside = built.rootfs.join(plan.workdir.trim_start_matches('/'));
    let workspace = destination.join("workspace");
    if inside.is_dir() {
        copy_tree(&inside, &workspace)?;
    }
    // Harbor uploads the first step's `workdir/` into the running image: its files win.
    if let Some(staged) = plan.steps.first().and_then(|step| step.staged.as_ref()) {
        copy_staged(&plan.dir.join(staged), &workspace)?;
    }
    Ok(Ok(()))
}

/// The view an image task's commands run in (its image, built by [`image_starter`]); the
/// reason, in one line, when it cannot be made.
fn image_view(destination: &Path, engine: EngineChoice) -> Result<Result<specgap_sandbox::HostView, String>, HarborError> {
    let package = specgap_task::load(destination)?;
    let cache = match env_cache() {
        Ok(cache) => cache,
        Err(why) => return Ok(Err(why)),
    };
    match specgap_task::task_views(&package, &cache, engine) {
        Ok(views) => Ok(Ok(views.commands)),
        Err(error) => Ok(Err(one_line(&chain(&error)))),
    }
}

/// Longest reason an import line quotes.
const REASON_CHARS: usize = 300;

/// `text` on one line (its non-blank lines trimmed and joined by ` / `), cut to
/// [`REASON_CHARS`] characters.
fn one_line(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" / ");
    if joined.chars().count() <= REASON_CHARS {
        return joined;
    }
    let cut: String = joined.chars().take(REASON_CHARS).collect();
    format!("{cut}…")
}

/// An error and its causes, joined by `: `.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(&format!(": {inner}"));
        cause = inner.source();
    }
    text
}

/// `[evaluator.environment]` of an imported image task: `harbor_verify.py` on the host's
/// [`VERIFIER_COMMANDS`], its `test.sh` calls on the task's image, or on the separate
/// verifier's (`[verifier.environment].docker_image`) when the task names one.
fn evaluator_environment(plan: &Plan) -> Table {
    let mut own = Table::new();
    own.insert("commands".into(), Value::Array(VERIFIER_COMMANDS.iter().map(|c| Value::from(*c)).collect()));
    if let Some(image) = &plan.verifier_image {
        own.insert("image".into(), image.clone().into());
    }
    own
}

/// The host-command `[environment]` of an imported task.
pub(crate) fn host_environment(plan: &Plan) -> specgap_protocol::package::Environment {
    specgap_protocol::package::Environment {
        commands: HOST_COMMANDS.iter().map(|c| c.to_string()).collect(),
        env: plan.env.clone(),
        ..Default::default()
    }
}

/// The starter: the files a trivial Dockerfile copies under the work directory, then each
/// step's staged files.
fn write_workspace(plan: &Plan, destination: &Path) -> Result<(), HarborError> {
    let workspace = destination.join("workspace");
    fs::create_dir_all(&workspace).map_err(io(&workspace))?;
    if let EnvironmentPlan::Host { files } = &plan.environment {
        for (source, rel) in files {
            let target = if rel.is_empty() { workspace.clone() } else { workspace.join(rel) };
            if source.is_dir() {
                copy_tree(source, &target)?;
            } else {
                copy_file(source, &target)?;
            }
        }
    }
    for ((index, step), label) in plan.steps.iter().enumerate().zip(stage_labels(plan)) {
        if let Some(staged) = &step.staged {
            // The first step's files are the starter; a later step's are its stage's files,
            // added to the workspace when the stage begins (as Harbor uploads them).
            let target = if index == 0 { workspace.clone() } else { destination.join(stage_files_dir(&label)) };
            copy_staged(&plan.dir.join(staged), &target)?;
        }
    }
    Ok(())
}

/// Copies a step's `workdir/` to `target`, without its `setup.sh` (not run: NOTES.md).
pub(crate) fn copy_staged(staged: &Path, target: &Path) -> Result<(), HarborError> {
    copy_tree(staged, target)?;
    let setup = target.join("setup.sh");
    // Only the step's own: a `setup.sh` the image has in its work directory stays.
    if staged.join("setup.sh").exists() && setup.exists() {
        fs::remove_file(&setup).map_err(io(&setup))?;
    }
    Ok(())
}

/// The package's stage names: each step's name as a label (lowercase letters and digits in
/// words joined by hyphens), made unique with `-2`, `-3`, … where two collide.
pub(crate) fn stage_labels(plan: &Plan) -> Vec<String> {
    let mut labels: Vec<String> = Vec::with_capacity(plan.steps.len());
    for (index, step) in plan.steps.iter().enumerate() {
        let words: Vec<String> = step
            .name
            .to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        let mut base = words.join("-");
        base.truncate(56);
        let base = base.trim_end_matches('-').to_string();
        let base = if base.is_empty() { format!("step-{}", index + 1) } else { base };
        let mut label = base.clone();
        let mut n = 2;
        while labels.contains(&label) {
            label = format!("{base}-{n}");
            n += 1;
        }
        labels.push(label);
    }
    labels
}

/// Where a later stage's instruction goes in the package (outside `workspace/`).
fn stage_file(label: &str) -> String {
    format!("stages/{label}.md")
}

/// Where a later stage's files (its step's `workdir/`) go in the package.
pub(crate) fn stage_files_dir(label: &str) -> String {
    format!("stages/{label}/files")
}

/// Where a stage's own gold overlay goes in the package.
pub(crate) fn stage_gold_dir(label: &str) -> String {
    format!("stages/{label}/gold")
}

/// `[stages]` of a multi-step task: one stage per step, Harbor's strategy as the score.
/// Each later step's `workdir/` is the stage's `files` (`stages/<label>/files`); a step whose
/// `solve.sh` changed something has `gold` (`stages/<label>/gold`) once the gold is made
/// (`golds`: the labels that have one).
fn stages_table(plan: &Plan, golds: &[String]) -> Option<Value> {
    if plan.steps.len() < 2 {
        return None;
    }
    let mut stages = Table::new();
    stages.insert("score".into(), (if plan.strategy == "final" { "final" } else { "mean" }).into());
    let entries = plan
        .steps
        .iter()
        .zip(stage_labels(plan))
        .enumerate()
        .map(|(index, (step, label))| {
            let mut entry = Table::new();
            entry.insert("name".into(), label.clone().into());
            if index > 0 {
                entry.insert("instruction".into(), stage_file(&label).into());
            }
            match &step.min_reward {
                Some(MinReward::Score(min)) => {
                    entry.insert("min_reward".into(), Value::Float(*min));
                }
                Some(MinReward::Keys(keys)) => {
                    let table = keys.iter().map(|(key, min)| (key.clone(), Value::Float(*min))).collect();
                    entry.insert("min_reward".into(), Value::Table(table));
                }
                None => {}
            }
            if index > 0 && step.staged.is_some() {
                entry.insert("files".into(), stage_files_dir(&label).into());
            }
            if golds.contains(&label) {
                entry.insert("gold".into(), stage_gold_dir(&label).into());
            }
            Value::Table(entry)
        })
        .collect();
    stages.insert("stage".into(), Value::Array(entries));
    Some(Value::Table(stages))
}

/// Every step's instruction in order, each under its own heading (one step: its instruction):
/// what a simulated user knows of the whole task.
fn every_instruction(plan: &Plan) -> String {
    if let [only] = plan.steps.as_slice() {
        return only.instruction.clone();
    }
    let total = plan.steps.len();
    let parts: Vec<String> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| format!("## Step {} of {total}: {}\n\n{}", i + 1, step.name, step.instruction.trim_end()))
        .collect();
    format!("{}\n", parts.join("\n\n"))
}

/// The key of `evaluator/harbor.json` that marks an incomplete starter (an image task whose
/// image was not built at import), with the reason: `harbor_verify.py` then refuses to score,
/// so `specgap check` fails (its `kind` row: the starter could not be evaluated) saying so.
pub const STARTER_INCOMPLETE: &str = "starter_incomplete";

/// `evaluator/harbor.json`: what harbor_verify.py needs.
/// `stage_files`: per step, the SHA-256 of each file its stage adds (empty for the first);
/// `incomplete`: why the starter is incomplete, if it is ([`STARTER_INCOMPLETE`]).
fn verifier_config(
    plan: &Plan,
    starter: &BTreeMap<String, String>,
    stage_files: &[BTreeMap<String, String>],
    incomplete: Option<&str>,
) -> String {
    let steps: Vec<serde_json::Value> =
        plan.steps.iter().map(|s| serde_json::json!({"name": s.name, "tests": format!("harbor/{}", s.tests)})).collect();
    let mut config = serde_json::json!({
        "harbor_version": HARBOR_VERSION,
        "workdir": plan.workdir,
        "steps": steps,
        "strategy": plan.strategy,
        "verifier_timeout_sec": plan.verifier_timeout_sec,
        "verifier_env": plan.verifier_env,
        "declared_outputs": plan.declared_outputs,
        "starter_sha256": starter,
        "stage_sha256": stage_files,
    });
    if let (Some(why), Some(object)) = (incomplete, config.as_object_mut()) {
        object.insert(STARTER_INCOMPLETE.into(), why.into());
    }
    format!("{}\n", serde_json::to_string_pretty(&config).unwrap_or_default())
}

/// `task.toml` (format 2).
fn manifest(plan: &Plan, destination: &Path, golds: &[String]) -> Result<String, HarborError> {
    let mut root = Table::new();
    root.insert("format".into(), Value::Integer(2));
    let mut info = Table::new();
    info.insert("name".into(), plan.name.clone().into());
    info.insert("version".into(), plan.version.clone().into());
    info.insert("description".into(), plan.description.clone().into());
    info.insert("family".into(), plan.family.into());
    if !plan.tags.is_empty() {
        info.insert("tags".into(), Value::Array(plan.tags.iter().cloned().map(Value::from).collect()));
    }
    if let Some(subfamily) = &plan.subfamily {
        info.insert("subfamily".into(), subfamily.clone().into());
    }
    root.insert("task".into(), Value::Table(info));
    let mut environment = Table::new();
    match &plan.environment {
        EnvironmentPlan::Host { .. } => {
            environment.insert("commands".into(), Value::Array(HOST_COMMANDS.iter().map(|c| Value::from(*c)).collect()));
        }
        EnvironmentPlan::Image { dockerfile, docker_image, .. } => {
            match (docker_image, dockerfile) {
                (Some(image), _) => environment.insert("image".into(), image.clone().into()),
                (None, Some(file)) => environment.insert("dockerfile".into(), file.clone().into()),
                (None, None) => None,
            };
            environment.insert("workdir".into(), plan.workdir.clone().into());
        }
    }
    if !plan.env.is_empty() {
        environment.insert("env".into(), Value::Table(plan.env.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect()));
    }
    root.insert("environment".into(), Value::Table(environment));
    let mut evaluator = Table::new();
    evaluator.insert("command".into(), "python3 harbor_verify.py".into());
    evaluator.insert("trusts_workspace".into(), Value::Boolean(true));
    let timeout = plan.verifier_timeout_sec * plan.steps.len() as u64 + EVALUATOR_MARGIN_SEC;
    evaluator.insert("timeout_sec".into(), Value::Integer(i64::try_from(timeout).unwrap_or(i64::MAX)));
    if let EnvironmentPlan::Image { .. } = &plan.environment {
        evaluator.insert("environment".into(), Value::Table(evaluator_environment(plan)));
    }
    root.insert("evaluator".into(), Value::Table(evaluator));
    if let Some(wall) = plan.wall_sec {
        let mut budget = Table::new();
        budget.insert("wall_sec".into(), Value::Integer(i64::try_from(wall).unwrap_or(i64::MAX)));
        root.insert("budget".into(), Value::Table(budget));
    }
    if let Some(stages) = stages_table(plan, golds) {
        root.insert("stages".into(), stages);
    }
    let text = toml::to_string(&root).map_err(|source| HarborError::Toml { path: destination.join("task.toml"), source })?;
    Ok(format!("# Imported from a Harbor task (Harbor {HARBOR_VERSION}'s format) by `specgap import harbor`; see NOTES.md.\n{text}"))
}

/// NOTES.md: where the package came from, its protocol, its trust model, what was not
/// mapped.
fn notes(plan: &Plan, gold: &GoldOutcome, incomplete: Option<&str>, persona: bool) -> String {
    let mut text = format!(
        "# Imported from Harbor\n\n\
         Source: the Harbor task `{}` (task format of Harbor {HARBOR_VERSION}), kept verbatim in `{HARBOR_COPY}/`.\n\n\
         Protocol: Harbor's: the task's full instruction, one submission, no questions, no owner feedback, Harbor's budgets; specgap's `hidden` condition \
         (docs/harbor.md). Under seed 000's protocols it needs a partial / full pair (instruction.full.md, requirements, observations, user.toml).\n\n\
         Trust: the verifier trusts the workspace. The task's `tests/test.sh` runs the submitted code in its own \
         processes, as in Harbor, in a sandbox of its own; only `evaluator/harbor_verify.py` writes specgap's result. \
         Rewards a submission may have written itself are refused when detected (docs/harbor.md, \"Trust model\").\n\n\
         Gold: {}.\n",
        task::dir_name(&plan.dir),
        gold.describe()
    );
    if let Some(why) = incomplete {
        text.push_str(&format!(
            "\nStarter: incomplete, {why}. The files the task's image has in its work directory ({}) are missing from \
             `workspace/`, so the evaluator refuses to score; import the task again where its image can be built (podman or docker).\n",
            plan.workdir
        ));
    }
    if plan.steps.len() > 1 {
        text.push_str(&format!(
            "\nSteps: {} stages (`[stages]`), one per Harbor step: `instruction.md` is the first step's instruction, each later step's \
             is sent when the previous step's submission has been scored, the evaluator runs only that step's tests \
             (`SPECGAP_STAGE`), and the episode's score is the {} of the steps' rewards.\n",
            plan.steps.len(),
            if plan.strategy == "final" { "last" } else { "mean" }
        ));
    }
    if persona {
        text.push_str(
            "\nUser: `user.toml` holds the Harbor simulated user's persona, with the task's instruction as what the user knows \
             (Harbor's user agent keeps it as its private goal); `--user chat:…` answers in that character under a condition with `ask_user`.\n",
        );
    }
    if let EnvironmentPlan::Image { why, .. } = &plan.environment {
        text.push_str(&format!(
            "\nEnvironment: an image, because {why}; it runs on specgap's task environments (issue 25: podman or docker builds it).\n"
        ));
    }
    text.push_str("\n## Not mapped\n\n");
    if plan.unmapped.is_empty() {
        text.push_str("Nothing.\n");
    }
    for item in &plan.unmapped {
        text.push_str(&format!("- {item}\n"));
    }
    text
}

/// SHA-256 of every regular file of the starter, by workspace-relative path.
fn starter_hashes(workspace: &Path) -> Result<BTreeMap<String, String>, HarborError> {
    let mut hashes = BTreeMap::new();
    for entry in walkdir::WalkDir::new(workspace).sort_by_file_name() {
        let entry = entry.map_err(walk(workspace))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let bytes = fs::read(entry.path()).map_err(io(entry.path()))?;
        let rel = entry.path().strip_prefix(workspace).unwrap_or(entry.path()).to_string_lossy().into_owned();
        hashes.insert(rel, hex(&Sha256::digest(&bytes)));
    }
    Ok(hashes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), HarborError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io(parent))?;
    }
    fs::write(path, text).map_err(io(path))
}

/// Copies a file, keeping its executable bit.
pub(crate) fn copy_file(from: &Path, to: &Path) -> Result<(), HarborError> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(io(parent))?;
    }
    fs::copy(from, to).map_err(io(from))?;
    Ok(())
}

/// Copies a directory tree: directories, regular files (with their mode), symbolic links as
/// links; hidden `.git` directories are left out.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), HarborError> {
    let walker = walkdir::WalkDir::new(from).sort_by_file_name().into_iter().filter_entry(|e| e.file_name() != ".git");
    for entry in walker {
        let entry = entry.map_err(walk(from))?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let target = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(io(&target))?;
        } else if kind.is_symlink() {
            let link = fs::read_link(entry.path()).map_err(io(entry.path()))?;
            std::os::unix::fs::symlink(&link, &target).map_err(io(&target))?;
        } else if kind.is_file() {
            copy_file(entry.path(), &target)?;
        }
    }
    Ok(())
}
