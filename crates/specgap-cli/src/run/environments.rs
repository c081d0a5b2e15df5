//! Image environments of a run (package format 2, issue 25): the digest each task's
//! environment has is recorded in `run.toml` (`[[tasks.environments]]`), a resumed run
//! refuses an environment whose digest changed, and a run builds the environments its cache
//! lacks before the first episode starts.

use std::time::Instant;

use anyhow::{Context as _, bail};
use specgap_env::{EngineChoice, EnvCache};
use specgap_protocol::run::{EnvironmentRef, TaskRef};
use specgap_task::TaskPackage;

/// The engine a run resolves `image` references and builds Dockerfiles with (a run has no
/// `--engine` flag; `specgap env build --engine` prepares the cache beforehand). Without
/// podman or docker, `image` references are pulled from their registries by specgap.
const RUN_ENGINE: EngineChoice = EngineChoice::Auto;

/// The digests `package`'s environments have now (none for a host-command environment).
///
/// # Errors
/// A digest cannot be computed (no engine for an `image`, an unreadable tarball).
pub fn digests(package: &TaskPackage) -> anyhow::Result<Vec<EnvironmentRef>> {
    specgap_task::environment_digests(package, RUN_ENGINE)
        .with_context(|| format!("task {}: cannot tell its environment's digest", package.name()))
}

/// Refuses to resume `task` when an environment's digest differs from the one `run.toml`
/// recorded, or when an environment was added or removed. A `run.toml` written before digests
/// were recorded has none: then nothing is compared (a file environment is still covered by
/// the package hash) and a note says so.
///
/// # Errors
/// The refusal, naming the task, both digests and what to do.
pub fn check_stored(task: &TaskRef, package: &TaskPackage) -> anyhow::Result<()> {
    if task.environments.is_empty() {
        if package.image_environment().is_some() && package.hash() == task.hash {
            eprintln!(
                "note: run.toml records no environment digest for task {} (written before specgap recorded them); its image is not checked",
                task.name
            );
        }
        return Ok(());
    }
    let now = digests(package)?;
    for recorded in &task.environments {
        let Some(current) = now.iter().find(|n| n.role == recorded.role) else {
            bail!(
                "task {} no longer has the {} environment the run began with ({} `{}`, digest {}); resuming would mix episodes \
                 of two environments. Restore it, or start a new run (`specgap run --out NEW_DIR`)",
                task.name,
                recorded.role,
                recorded.source,
                recorded.value,
                recorded.digest
            );
        };
        if current.digest != recorded.digest {
            bail!(
                "task {}: its {} environment changed since the run began ({} `{}`: digest {} in run.toml, {} now); resuming \
                 would evaluate the run's episodes in two environments. Restore the environment the run began with ({}), or \
                 start a new run (`specgap run --out NEW_DIR`)",
                task.name,
                recorded.role,
                current.source,
                current.value,
                recorded.digest,
                current.digest,
                restore_hint(&current.source)
            );
        }
    }
    if let Some(added) = now.iter().find(|n| !task.environments.iter().any(|r| r.role == n.role)) {
        bail!(
            "task {} has a {} environment now ({} `{}`) that the run did not begin with; resuming would mix episodes of two \
             environments. Start a new run (`specgap run --out NEW_DIR`)",
            task.name,
            added.role,
            added.source,
            added.value
        );
    }
    Ok(())
}

fn restore_hint(source: &str) -> &'static str {
    match source {
        "image" => {
            "point the reference back at the image whose config digest (podman's image id) is recorded, e.g. with `podman tag` \
             or by pushing that image to the tag again"
        }
        "dockerfile" => "the build context's files as they were",
        _ => "the package's file as it was",
    }
}

/// Builds every environment of `tasks` that the environment cache lacks, with a spinner on a
/// terminal and a line on stderr for each one built (cached ones pass silently): the first episodes then start at once, and a
/// build that fails stops the run before anything is stored.
///
/// # Errors
/// The cache cannot be placed, or a build fails (naming the task and the source).
pub fn build_missing(tasks: &[TaskPackage]) -> anyhow::Result<()> {
    let with_images: Vec<&TaskPackage> = tasks.iter().filter(|t| t.image_environment().is_some()).collect();
    if with_images.is_empty() {
        return Ok(());
    }
    let cache = EnvCache::new(EnvCache::default_root()?);
    for package in with_images {
        let Some(image) = package.image_environment() else { continue };
        let sources = std::iter::once(("task", &image.source)).chain(image.evaluator_source.iter().map(|own| ("evaluator", own)));
        for (role, source) in sources {
            let started = Instant::now();
            // A spinner while the engine builds (drawn only when stderr is a terminal).
            let spinner = indicatif::ProgressBar::new_spinner();
            spinner.set_message(format!("preparing the {role} environment of task {} ({})", package.name(), source.source.key()));
            spinner.enable_steady_tick(std::time::Duration::from_millis(120));
            let built = cache.build(&source.source, source.path.as_deref(), RUN_ENGINE);
            spinner.finish_and_clear();
            let built = built.with_context(|| {
                format!(
                    "task {}: cannot build its {role} environment ({} `{}`)",
                    package.name(),
                    source.source.key(),
                    source.source.value()
                )
            })?;
            if !built.cached {
                eprintln!(
                    "built the {role} environment of task {} ({} `{}`) in {:.1} s: {}",
                    package.name(),
                    source.source.key(),
                    source.source.value(),
                    started.elapsed().as_secs_f64(),
                    built.key
                );
            }
        }
    }
    Ok(())
}

/// Refuses a run in which a `cli:` agent would meet an image its CLI cannot run in
/// (specgap-agents `cli::image::check`: no `/bin/sh`, no `bash` for a CLI whose shell tool
/// runs it, an adapter without image support, a host loader specgap cannot start a CLI with),
/// naming the agent, the task and the image. Runs once the environments are built, before the
/// store exists, so a refusal leaves nothing behind.
///
/// # Errors
/// The refusal, or the cache that cannot be placed or read.
pub fn check_cli_agents(agents: &[specgap_protocol::run::ComponentRef], tasks: &[TaskPackage]) -> anyhow::Result<()> {
    let adapters: Vec<(&str, String)> = agents
        .iter()
        .filter(|agent| agent.config.get("kind").and_then(toml::Value::as_str) == Some("cli"))
        .filter_map(|agent| agent.config.get("adapter").and_then(toml::Value::as_str).map(|a| (agent.spec.as_str(), a.to_string())))
        .collect();
    if adapters.is_empty() {
        return Ok(());
    }
    let with_images: Vec<&TaskPackage> = tasks.iter().filter(|t| t.image_environment().is_some()).collect();
    if with_images.is_empty() {
        return Ok(());
    }
    let cache = EnvCache::new(EnvCache::default_root()?);
    for package in with_images {
        let Some(image) = package.image_environment() else { continue };
        let built = cache.build(&image.source.source, image.source.path.as_deref(), RUN_ENGINE).with_context(|| {
            format!(
                "task {}: cannot find its environment ({} `{}`)",
                package.name(),
                image.source.source.key(),
                image.source.source.value()
            )
        })?;
        for (spec, adapter) in &adapters {
            if let Err(why) = specgap_agents::cli::image::check(adapter, &built.rootfs) {
                bail!(
                    "agent {spec} cannot run in the image of task {} ([environment].{} `{}`): {why}; nothing was started. Run \
                     the task with another agent, or give its image what the agent needs",
                    package.name(),
                    image.source.source.key(),
                    image.source.source.value()
                );
            }
        }
    }
    Ok(())
}
