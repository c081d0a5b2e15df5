//! [`task_views`]: the sandbox views a task's commands and its evaluator run on — the host's
//! system directories with `[environment]` commands and binds, or (format 2) an image's root
//! filesystem built into the environment cache (`specgap env build`), with the workspace and
//! the evaluator's files placed where the package says.

use std::path::Path;

use specgap_env::{EngineChoice, EnvCache, EnvError};
use specgap_protocol::package::Environment;
use specgap_protocol::run::EnvironmentRef;
use specgap_sandbox::{HostView, ImagePlacement, SandboxError};

use crate::format2_env::{ImageEnvironment, ResolvedSource};
use crate::package::TaskPackage;

/// The views of one task: the agent's commands, the evaluator's and its candidate calls' (the
/// same unless the package names `[evaluator.environment]`).
#[derive(Debug, Clone)]
pub struct TaskViews {
    /// Where the agent's commands and `run_project` run.
    pub commands: HostView,
    /// Where the evaluator runs: the host's programs with `[evaluator.environment].commands`,
    /// else the candidates' view.
    pub evaluator: HostView,
    /// Where the evaluator's candidate calls (`$SPECGAP_CANDIDATE`) run: the evaluator's own
    /// image, else the commands' view.
    pub candidates: HostView,
}

/// Why a task's views could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// An image environment could not be built or found in the cache.
    #[error("cannot build the {which} ({key} `{value}`)")]
    Build {
        /// `task environment` or `evaluator environment`.
        which: &'static str,
        /// The source key.
        key: &'static str,
        /// Its value.
        value: String,
        /// The cause.
        #[source]
        source: EnvError,
    },
    /// The user's environment cache has no place (no `$XDG_CACHE_HOME` or `$HOME`).
    #[error("cannot place the environment cache")]
    Cache(#[source] EnvError),
    /// A machine layer could not be stacked on the task's image.
    #[error("cannot stack the machine layer {} on the task environment", layer.display())]
    Layer {
        /// The layer tarball.
        layer: std::path::PathBuf,
        /// The cause.
        #[source]
        source: EnvError,
    },
    /// The sandbox view could not be made (a host command missing, a bad bind or mount point).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// The views of `package`. An image environment is built first when the cache lacks it
/// (`engine` chooses podman or docker for `image` and `dockerfile` sources).
///
/// # Errors
/// [`ViewError`].
pub fn task_views(package: &TaskPackage, cache: &EnvCache, engine: EngineChoice) -> Result<TaskViews, ViewError> {
    let environment = &package.manifest().environment;
    let Some(image) = package.image_environment() else {
        let view = HostView::resolve(environment)?;
        return Ok(TaskViews { commands: view.clone(), evaluator: view.clone(), candidates: view });
    };
    let placement = placement(image);
    let rootfs = build(cache, &image.source, "task environment", engine)?;
    let commands = HostView::on_rootfs(&rootfs, environment, &placement)?;
    let candidates = match &image.evaluator_source {
        None => commands.clone(),
        Some(own) => {
            let rootfs = build(cache, own, "evaluator environment", engine)?;
            HostView::on_rootfs(&rootfs, environment, &placement)?
        }
    };
    let evaluator = evaluator_on_host(image, environment)?.unwrap_or_else(|| candidates.clone());
    Ok(TaskViews { commands, evaluator, candidates })
}

/// The host view of an evaluator that runs on the host's programs
/// (`[evaluator.environment].commands`, with the task's `env`); `None` when it runs on an image.
fn evaluator_on_host(image: &ImageEnvironment, environment: &Environment) -> Result<Option<HostView>, SandboxError> {
    if !image.evaluator_on_host() {
        return Ok(None);
    }
    let host = Environment { commands: image.evaluator_commands.clone(), env: environment.env.clone(), ..Environment::default() };
    HostView::resolve(&host).map(Some)
}

/// `views` (an image task's, from [`task_views`]) with `layer` (an OCI layer of a machine's
/// changes: a whole-machine residual state's `machine.tar`, or a submission's machine) over the
/// task's image, stacked in `cache` ([`EnvCache::layered`]). The candidates' view changes with
/// it unless the package names an evaluator image of its own (Harbor's separate verifier
/// environment sees the workspace only); so does the evaluator's, unless it runs on the host's
/// programs.
///
/// # Errors
/// [`ViewError::Layer`]; [`ViewError::Sandbox`] for a host-command view.
pub fn views_with_layer(views: &TaskViews, package: &TaskPackage, cache: &EnvCache, layer: &Path) -> Result<TaskViews, ViewError> {
    let Some(root) = views.commands.rootfs() else {
        return Err(ViewError::Sandbox(SandboxError::Overlay("a machine layer needs an image environment".into())));
    };
    let layered = cache.layered(root, layer).map_err(|source| ViewError::Layer { layer: layer.to_path_buf(), source })?;
    let commands = views.commands.with_root(&layered.rootfs)?;
    let image = package.image_environment();
    let own_image = image.is_some_and(|image| image.evaluator_source.is_some());
    let candidates = if own_image { views.candidates.clone() } else { commands.clone() };
    let evaluator = if image.is_some_and(ImageEnvironment::evaluator_on_host) { views.evaluator.clone() } else { candidates.clone() };
    Ok(TaskViews { commands, evaluator, candidates })
}

/// The environment cache `package`'s views are built in: the user's
/// ([`EnvCache::default_root`]) for an image environment, none for host commands.
///
/// # Errors
/// [`ViewError::Cache`].
pub fn cache_for(package: &TaskPackage) -> Result<EnvCache, ViewError> {
    if package.image_environment().is_none() {
        return Ok(EnvCache::new(""));
    }
    Ok(EnvCache::new(EnvCache::default_root().map_err(ViewError::Cache)?))
}

/// [`task_views`] in the user's cache ([`cache_for`]), with `layer` over the image when given
/// ([`views_with_layer`]).
///
/// # Errors
/// [`ViewError`].
pub fn views_on(package: &TaskPackage, layer: Option<&Path>, engine: EngineChoice) -> Result<TaskViews, ViewError> {
    let cache = cache_for(package)?;
    let engine = if package.image_environment().is_some() { engine } else { EngineChoice::None };
    let views = task_views(package, &cache, engine)?;
    match layer {
        Some(layer) => views_with_layer(&views, package, &cache, layer),
        None => Ok(views),
    }
}

fn placement(image: &ImageEnvironment) -> ImagePlacement {
    ImagePlacement {
        workdir: image.workdir.clone(),
        evaluator_dir: image.evaluator_dir.clone(),
        evaluator_out: image.evaluator_out.clone(),
    }
}

fn build(cache: &EnvCache, source: &ResolvedSource, which: &'static str, engine: EngineChoice) -> Result<std::path::PathBuf, ViewError> {
    let built = cache.build(&source.source, source.path.as_deref(), engine).map_err(|err| ViewError::Build {
        which,
        key: source.source.key(),
        value: source.source.value().to_string(),
        source: err,
    })?;
    Ok(built.rootfs)
}

/// The task image's root filesystem when the user's environment cache already holds it;
/// nothing is built, pulled or asked of an engine. `None` for a host-command task, an `image`
/// reference (its digest needs an engine or its registry), or an environment not built yet.
pub fn cached_task_root(package: &TaskPackage) -> Option<std::path::PathBuf> {
    let image = package.image_environment()?;
    if matches!(image.source.source, specgap_protocol::package::ImageSource::Image(_)) {
        return None;
    }
    let key = specgap_env::environment_digest(&image.source.source, image.source.path.as_deref(), EngineChoice::None).ok()?;
    cache_for(package).ok()?.lookup(&key)
}

/// The digest of each image environment of `package` as it is now (its environment cache
/// key, [`specgap_env::environment_digest`]), without building: the task's (`role = "task"`)
/// and the evaluator's own when it has one (`role = "evaluator"`). Empty for a host-command
/// environment. A run records them; `--resume` compares them.
///
/// # Errors
/// [`ViewError::Build`] when a digest cannot be computed (an unreadable file, no engine for
/// an `image` reference, one the engine cannot find).
pub fn environment_digests(package: &TaskPackage, engine: EngineChoice) -> Result<Vec<EnvironmentRef>, ViewError> {
    let Some(image) = package.image_environment() else {
        return Ok(Vec::new());
    };
    let mut sources = vec![("task", "task environment", &image.source)];
    if let Some(own) = &image.evaluator_source {
        sources.push(("evaluator", "evaluator environment", own));
    }
    sources
        .into_iter()
        .map(|(role, which, source)| {
            let digest = specgap_env::environment_digest(&source.source, source.path.as_deref(), engine).map_err(|err| {
                ViewError::Build { which, key: source.source.key(), value: source.source.value().to_string(), source: err }
            })?;
            Ok(EnvironmentRef {
                role: role.to_string(),
                source: source.source.key().to_string(),
                value: source.source.value().to_string(),
                digest,
            })
        })
        .collect()
}
