//! `specgap export-task PACKAGE --out DIR`: writes a specgap package as a Harbor task
//! directory (Harbor 0.25.0's format) for the conditions Harbor can express: the full
//! instruction, one submission, no owner, the evaluator's score written as `reward.json`.
//!
//! The verb is `export-task`, not `export`: `specgap export` exports runs (ATIF).
//!
//! | Harbor | from the package |
//! | --- | --- |
//! | `task.toml [task]` name, version, description, keywords | `[task]` name (as Harbor's `org/name`), version, description, tags |
//! | `task.toml [metadata]` family, subfamily | `[task]` family, subfamily |
//! | `task.toml [agent].timeout_sec` | `[budget].wall_sec` |
//! | `task.toml [verifier].timeout_sec` | `[evaluator].timeout_sec` |
//! | `task.toml [environment]` | `network_mode = "no-network"`, `workdir`, `env`; `docker_image` for an `image` package |
//! | `environment/Dockerfile` | a host-command package: a base image, `WORKDIR`, the workspace copied in; a `dockerfile` package: its own |
//! | `instruction.md` | `instruction.full.md`, else `instruction.md` |
//! | `tests/test.sh` | runs `[evaluator].command` on a private copy of `evaluator/` with specgap's variables, then `specgap_reward.py` |
//! | `solution/solve.sh` | applies `solutions/gold/` (and its `delete.txt`) |
//! | `multi_step_reward_strategy`, `[[steps]]` (name, `min_reward`) | `[stages]`: `score`, each stage's name and `min_reward` (number or table) |
//! | `steps/<name>/instruction.md` | the first stage: as `instruction.md` above; a later stage: its instruction |
//! | `steps/<name>/tests/` | as `tests/`, with `SPECGAP_STAGE=k` for stage k |
//! | `steps/<name>/workdir/` | the stage's `files` (an overlay that deletes nothing) |
//! | `steps/<name>/solution/` | the stage's `gold`; without stage golds, `solutions/gold/` as the first step's |
//!
//! A package imported from Harbor is exported as the Harbor task it came from (its verbatim
//! copy in `evaluator/harbor/`), so import → export → import gives the same package.

use std::path::Path;

use fs_err as fs;
use toml::{Table, Value};

use crate::error::{HarborError, io};
use crate::import::{HARBOR_COPY, copy_tree, write};
use crate::task::label;

/// The converter from specgap's result to Harbor's reward, written as `tests/specgap_reward.py`.
pub const REWARD_PROGRAM: &str = include_str!("specgap_reward.py");
/// Base image of a host-command package that needs Python.
pub const PYTHON_BASE_IMAGE: &str = "python:3.12-slim";
/// Base image of any other host-command package.
pub const PLAIN_BASE_IMAGE: &str = "debian:bookworm-slim";
/// Where the workspace is in an exported host-command task.
const WORKSPACE: &str = "/workspace";

/// What [`export_task`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exported {
    /// The package came from Harbor: its original task directory was written back.
    Original,
    /// The package was converted; `gold` says whether a `solve.sh` was written.
    Converted {
        /// Whether the package had a gold solution (`solution/solve.sh`; for a staged
        /// package, at least one step's).
        gold: bool,
        /// How many `[[steps]]` were written: the package's stages; 0 for a one-step task.
        steps: usize,
    },
}

/// Writes the package at `package` as a Harbor task directory `out` (which must not exist or
/// be empty).
///
/// # Errors
/// [`HarborError::Load`] when the package does not load; [`HarborError::OutputExists`];
/// [`HarborError::NotExportable`] for an image given as a root filesystem or OCI layout
/// (Harbor builds from a Dockerfile or pulls an image) and for a task name Harbor's
/// `org/name` cannot hold; I/O errors.
pub fn export_task(package: &Path, out: &Path) -> Result<Exported, HarborError> {
    let loaded = specgap_task::load(package)?;
    if out.exists() && fs::read_dir(out).map_err(io(out))?.next().is_some() {
        return Err(HarborError::OutputExists { path: out.to_path_buf() });
    }
    let original = package.join(HARBOR_COPY);
    if original.join("task.toml").is_file() {
        copy_tree(&original, out)?;
        return Ok(Exported::Original);
    }
    let image = image_keys(package)?;
    let manifest = loaded.manifest();
    let not_exportable = |reason: String| HarborError::NotExportable { path: package.to_path_buf(), reason };
    let name = harbor_name(&manifest.task.name)
        .ok_or_else(|| not_exportable(format!("its name `{}` has no org/name form", manifest.task.name)))?;
    if let Some(stages) = loaded.stages() {
        stages_exportable(stages).map_err(not_exportable)?;
    }
    let workdir = image.workdir.clone().unwrap_or_else(|| WORKSPACE.to_string());
    match (&image.image, &image.dockerfile) {
        (None, None) if image.other.is_some() => {
            return Err(not_exportable(format!(
                "its image comes from `{}`; Harbor needs a Dockerfile or an image reference",
                image.other.unwrap_or_default()
            )));
        }
        (None, Some(dockerfile)) => {
            let context = package.join(dockerfile).parent().map(Path::to_path_buf).unwrap_or_default();
            copy_tree(&context, &out.join("environment"))?;
            if !dockerfile.ends_with("/Dockerfile") && dockerfile != "Dockerfile" {
                return Err(not_exportable(format!("its Dockerfile is named {dockerfile}; Harbor reads environment/Dockerfile")));
            }
        }
        (None, None) => {
            let python = manifest.environment.commands.iter().any(|c| c.starts_with("python"));
            let base = if python { PYTHON_BASE_IMAGE } else { PLAIN_BASE_IMAGE };
            copy_tree(&loaded.workspace_dir(), &out.join("environment/workspace"))?;
            write(&out.join("environment/Dockerfile"), &format!("FROM {base}\nWORKDIR {WORKSPACE}\nCOPY workspace/ {WORKSPACE}/\n"))?;
        }
        (Some(_), _) => {}
    }
    let instruction = loaded.instruction_full().unwrap_or(loaded.instruction());
    let steps = loaded.stages().map_or(0, |stages| stages.len());
    let gold = match loaded.stages() {
        None => {
            write(&out.join("instruction.md"), instruction)?;
            write_tests(&loaded, &out.join("tests"), &workdir, None)?;
            let gold = loaded.solutions().gold.clone();
            if let Some(gold) = &gold {
                write_solution(&gold.dir, &out.join("solution"), &workdir)?;
            }
            gold.is_some()
        }
        Some(stages) => write_steps(&loaded, stages, instruction, out, &workdir)?,
    };
    write(&out.join("task.toml"), &harbor_manifest(&loaded, &name, &image, &workdir, out)?)?;
    Ok(Exported::Converted { gold, steps })
}

/// Why a staged package's stages cannot be Harbor steps, if they cannot: a stage's files that
/// delete something (Harbor uploads a step's `workdir/`, it never removes), or that hold a
/// top-level `setup.sh` (Harbor would run it when the step begins).
fn stages_exportable(stages: &specgap_task::PackageStages) -> Result<(), String> {
    for stage in &stages.stages {
        let Some(files) = &stage.files else { continue };
        if !files.delete.is_empty() {
            return Err(format!(
                "stage `{}`'s files delete {} path(s) (delete.txt); a Harbor step's workdir/ can only add files",
                stage.name,
                files.delete.len()
            ));
        }
        if files.dir.join("setup.sh").exists() {
            return Err(format!("stage `{}`'s files hold setup.sh, which Harbor would run as the step's setup script", stage.name));
        }
    }
    Ok(())
}

/// Writes one Harbor step per stage (`steps/<name>/`): the stage's instruction (the first
/// stage's is `instruction`), tests running the package's evaluator with `SPECGAP_STAGE` set
/// to the stage's number, the stage's files as `workdir/`, and the stage's gold (without stage
/// golds, `solutions/gold/` as the first step's) as `solution/`. Returns whether any step has
/// a solution.
fn write_steps(
    loaded: &specgap_task::TaskPackage,
    stages: &specgap_task::PackageStages,
    instruction: &str,
    out: &Path,
    workdir: &str,
) -> Result<bool, HarborError> {
    let whole_gold = loaded.solutions().gold.clone().filter(|_| !stages.has_stage_golds());
    let mut any_gold = false;
    for (index, stage) in stages.stages.iter().enumerate() {
        let k = index as u32 + 1;
        let dir = out.join("steps").join(&stage.name);
        write(&dir.join("instruction.md"), stage.instruction.as_deref().unwrap_or(instruction))?;
        write_tests(loaded, &dir.join("tests"), workdir, Some(k))?;
        if let Some(files) = &stage.files {
            copy_tree(&files.dir, &dir.join("workdir"))?;
            // The overlay's delete.txt lists nothing (stages_exportable): not a file to upload.
            let delete = dir.join("workdir/delete.txt");
            if delete.is_file() {
                fs::remove_file(&delete).map_err(io(&delete))?;
            }
        }
        let gold = stage.gold.as_ref().or(whole_gold.as_ref().filter(|_| k == 1));
        if let Some(gold) = gold {
            write_solution(&gold.dir, &dir.join("solution"), workdir)?;
            any_gold = true;
        }
    }
    Ok(any_gold)
}

/// Writes a tests directory: the evaluator's copy, `test.sh` (for stage `stage` of a staged
/// package, with `SPECGAP_STAGE` set), the candidate launcher and the reward converter.
fn write_tests(loaded: &specgap_task::TaskPackage, tests: &Path, workdir: &str, stage: Option<u32>) -> Result<(), HarborError> {
    copy_tree(&loaded.evaluator_dir(), &tests.join("evaluator"))?;
    write(&tests.join("test.sh"), &test_script(loaded, workdir, stage))?;
    write(&tests.join("specgap-candidate"), &candidate_script(workdir))?;
    let delivery = loaded.manifest().delivery.as_ref().map(|d| {
        format!(
            "[{}, \"{}\"]",
            d.reference,
            match d.direction {
                specgap_protocol::package::Direction::Max => "max",
                specgap_protocol::package::Direction::Min => "min",
            }
        )
    });
    write(
        &tests.join("specgap_reward.py"),
        &REWARD_PROGRAM.replace("DELIVERY = None  #", &format!("DELIVERY = {}  #", delivery.as_deref().unwrap_or("None"))),
    )?;
    for script in ["test.sh", "specgap-candidate"] {
        make_executable(&tests.join(script))?;
    }
    Ok(())
}

/// Writes a solution directory: the gold overlay `gold` as `gold/` and the `solve.sh` that
/// applies it.
fn write_solution(gold: &Path, solution: &Path, workdir: &str) -> Result<(), HarborError> {
    copy_tree(gold, &solution.join("gold"))?;
    write(&solution.join("solve.sh"), &solve_script(workdir))?;
    make_executable(&solution.join("solve.sh"))
}

/// The image keys of a format-2 package (issue 25), read from task.toml's text so this works
/// whichever keys the loaded manifest type has.
#[derive(Debug, Default)]
struct ImageKeys {
    image: Option<String>,
    dockerfile: Option<String>,
    other: Option<String>,
    workdir: Option<String>,
}

fn image_keys(package: &Path) -> Result<ImageKeys, HarborError> {
    let path = package.join("task.toml");
    let text = fs::read_to_string(&path).map_err(io(&path))?;
    let table: Table = text.parse().unwrap_or_default();
    let environment = table.get("environment").and_then(Value::as_table).cloned().unwrap_or_default();
    let key = |k: &str| environment.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(ImageKeys {
        image: key("image"),
        dockerfile: key("dockerfile"),
        other: key("rootfs").or_else(|| key("oci_layout")),
        workdir: key("workdir"),
    })
}

/// specgap's `org/name[/more]` as Harbor's `org/name` (later segments joined with `-`).
fn harbor_name(name: &str) -> Option<String> {
    let mut segments = name.split('/');
    let org = segments.next()?;
    let rest: Vec<&str> = segments.collect();
    if rest.is_empty() {
        return None;
    }
    let candidate = format!("{org}/{}", rest.join("-"));
    let starts_well = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    (starts_well(org) && starts_well(&rest.join("-")) && !candidate.contains("..")).then_some(candidate)
}

fn harbor_manifest(
    loaded: &specgap_task::TaskPackage,
    name: &str,
    image: &ImageKeys,
    workdir: &str,
    out: &Path,
) -> Result<String, HarborError> {
    let manifest = loaded.manifest();
    let mut root = Table::new();
    root.insert("schema_version".into(), "1.4".into());
    let mut info = Table::new();
    info.insert("name".into(), name.into());
    info.insert("version".into(), manifest.task.version.clone().into());
    info.insert("description".into(), manifest.task.description.clone().into());
    if !manifest.task.tags.is_empty() {
        info.insert("keywords".into(), Value::Array(manifest.task.tags.iter().cloned().map(Value::from).collect()));
    }
    root.insert("task".into(), Value::Table(info));
    let mut metadata = Table::new();
    metadata.insert("family".into(), manifest.task.family.as_str().into());
    if let Some(subfamily) = &manifest.task.subfamily {
        metadata.insert("category".into(), label(subfamily).into());
    }
    metadata.insert("specgap_hash".into(), loaded.hash().into());
    root.insert("metadata".into(), Value::Table(metadata));
    let mut verifier = Table::new();
    verifier.insert("timeout_sec".into(), Value::Float(manifest.evaluator.timeout_sec as f64));
    root.insert("verifier".into(), Value::Table(verifier));
    if let Some(wall) = manifest.budget.wall_sec {
        let mut agent = Table::new();
        agent.insert("timeout_sec".into(), Value::Float(wall as f64));
        root.insert("agent".into(), Value::Table(agent));
    }
    let mut environment = Table::new();
    if let Some(reference) = &image.image {
        environment.insert("docker_image".into(), reference.clone().into());
    }
    environment.insert("workdir".into(), workdir.into());
    environment.insert("network_mode".into(), "no-network".into());
    if !manifest.environment.env.is_empty() {
        environment.insert(
            "env".into(),
            Value::Table(manifest.environment.env.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect()),
        );
    }
    root.insert("environment".into(), Value::Table(environment));
    if let Some(stages) = loaded.stages() {
        root.insert("multi_step_reward_strategy".into(), stages.score.as_str().into());
        root.insert("steps".into(), Value::Array(stages.stages.iter().map(step_entry).collect()));
    }
    let text = toml::to_string(&root).map_err(|source| HarborError::Toml { path: out.join("task.toml"), source })?;
    Ok(format!("# Exported from the specgap package {} by `specgap export-task`.\n{text}", manifest.task.name))
}

/// One `[[steps]]` entry: the stage's name and its `min_reward` (a number, gating Harbor's
/// `reward` key, which is specgap's Score; or the table of keys, which the exported
/// `reward.json` carries from the result's `rewards`).
fn step_entry(stage: &specgap_task::StageText) -> Value {
    let mut entry = Table::new();
    entry.insert("name".into(), stage.name.clone().into());
    if let Some(min) = stage.min_reward {
        entry.insert("min_reward".into(), Value::Float(min));
    } else if !stage.min_reward_keys.is_empty() {
        let keys = stage.min_reward_keys.iter().map(|(key, min)| (key.clone(), Value::Float(*min))).collect();
        entry.insert("min_reward".into(), Value::Table(keys));
    }
    Value::Table(entry)
}

/// Single-quotes `text` for a POSIX shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn test_script(loaded: &specgap_task::TaskPackage, workdir: &str, stage: Option<u32>) -> String {
    let manifest = loaded.manifest();
    let stage = stage.map(|k| format!(" SPECGAP_STAGE={k}")).unwrap_or_default();
    format!(
        r#"#!/bin/bash
# Written by `specgap export-task`: runs the specgap evaluator of {name} on the workspace and
# writes its score as Harbor's reward. The evaluator works on a private copy of its files;
# submitted code runs only through $SPECGAP_CANDIDATE, in a copy of the workspace.
set -u
out=$(mktemp -d)
evaluator=$(mktemp -d)
cp -a /tests/evaluator/. "$evaluator"/
export SPECGAP_WORKSPACE={workdir} SPECGAP_OUT="$out" SPECGAP_TASK={task} SPECGAP_CANDIDATE=/tests/specgap-candidate{stage}
(cd "$evaluator" && /bin/sh -c {command})
echo "specgap evaluator exited with status $?" >&2
mkdir -p /logs/verifier
python3 /tests/specgap_reward.py "$out/result.json" > /logs/verifier/reward.json
"#,
        name = manifest.task.name,
        workdir = quote(workdir),
        task = quote(&manifest.task.name),
        command = quote(&manifest.evaluator.command),
    )
}

fn candidate_script(workdir: &str) -> String {
    format!(
        r#"#!/bin/sh
# Written by `specgap export-task`: specgap's candidate launcher inside a Harbor container.
# Runs "$@" in a fresh copy of the workspace (Harbor offers no second sandbox).
copy=$(mktemp -d) || exit 125
cp -a {workdir}/. "$copy"/ || exit 125
cd "$copy" || exit 125
"$@"
status=$?
cd / && rm -rf "$copy"
exit $status
"#,
        workdir = quote(workdir)
    )
}

fn solve_script(workdir: &str) -> String {
    format!(
        r#"#!/bin/bash
# Written by `specgap export-task`: applies specgap's gold overlay to the workspace.
set -eu
cd {workdir}
for entry in /solution/gold/* /solution/gold/.[!.]*; do
  [ -e "$entry" ] || continue
  [ "$(basename "$entry")" = delete.txt ] && continue
  cp -a "$entry" .
done
if [ -f /solution/gold/delete.txt ]; then
  grep -v '^[[:space:]]*\(#\|$\)' /solution/gold/delete.txt | while IFS= read -r path; do rm -rf -- "./$path"; done
fi
"#,
        workdir = quote(workdir)
    )
}

fn make_executable(path: &Path) -> Result<(), HarborError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(io(path))
}
