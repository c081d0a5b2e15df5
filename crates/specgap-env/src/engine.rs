//! Container engines (podman, docker): resolving an image to its id, building a Dockerfile,
//! and exporting an image's flattened root filesystem (`create` + `export`).
//!
//! Machines without `CAP_SYS_RESOURCE` cannot raise a container's limits above the caller's,
//! and an engine's defaults may lie above them, so `build` passes the caller's own soft
//! limits as `--ulimit nofile=…` and `--ulimit nproc=…` (nproc at most the kernel's
//! `pid_max`). `SPECGAP_PODMAN_RUNTIME` (e.g.
//! `runc`) is given to podman as `--runtime` where its default runtime does not work.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{EnvError, io};

/// The engines specgap drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Podman (preferred when both are present: it needs no daemon).
    Podman,
    /// Docker.
    Docker,
}

impl EngineKind {
    /// The program name.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Podman => "podman",
            EngineKind::Docker => "docker",
        }
    }
}

/// Which engine `env build` may use (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// `$SPECGAP_ENGINE` when set, else the first of podman, docker on PATH, if any.
    #[default]
    Auto,
    /// None: only `rootfs` and `oci_layout` environments can be built.
    None,
    /// This one; an error when it is not on PATH.
    Use(EngineKind),
}

impl std::str::FromStr for EngineChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(EngineChoice::Auto),
            "none" => Ok(EngineChoice::None),
            "podman" => Ok(EngineChoice::Use(EngineKind::Podman)),
            "docker" => Ok(EngineChoice::Use(EngineKind::Docker)),
            other => Err(format!("unknown engine `{other}`; expected auto, podman, docker or none")),
        }
    }
}

/// The environment variable `EngineChoice::Auto` follows when set.
pub const ENGINE_VARIABLE: &str = "SPECGAP_ENGINE";

/// A container engine found on PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    /// Which engine.
    pub kind: EngineKind,
    /// Its program.
    pub program: PathBuf,
}

impl Engine {
    /// The engine `choice` selects, or `None` (no engine wanted, or none on PATH under `Auto`).
    /// `Auto` follows `$SPECGAP_ENGINE` when it is set (`auto`, `podman`, `docker`, `none`):
    /// commands without an `--engine` flag (`run`, `check`, their workers) are told so.
    ///
    /// # Errors
    /// [`EnvError::EngineMissing`] when `choice` names an engine that is not on PATH;
    /// [`EnvError::BadEngineVariable`] for another value of `SPECGAP_ENGINE`.
    pub fn find(choice: EngineChoice) -> Result<Option<Engine>, EnvError> {
        let choice = match (choice, std::env::var(ENGINE_VARIABLE)) {
            (EngineChoice::Auto, Ok(text)) if !text.is_empty() => {
                text.parse().map_err(|reason| EnvError::BadEngineVariable { value: text.clone(), reason })?
            }
            _ => choice,
        };
        match choice {
            EngineChoice::None => Ok(None),
            EngineChoice::Use(kind) => on_path(kind.name())
                .map(|program| Some(Engine { kind, program }))
                .ok_or_else(|| EnvError::EngineMissing(kind.name().into())),
            EngineChoice::Auto => Ok([EngineKind::Podman, EngineKind::Docker]
                .into_iter()
                .find_map(|kind| on_path(kind.name()).map(|program| Engine { kind, program }))),
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        if self.kind == EngineKind::Podman
            && let Some(runtime) = std::env::var_os("SPECGAP_PODMAN_RUNTIME").filter(|r| !r.is_empty())
        {
            command.arg("--runtime").arg(runtime);
        }
        command
    }

    /// The image id (`sha256:<hex>`) of `reference`, pulling it first when the engine lacks it.
    ///
    /// # Errors
    /// [`EnvError::EngineFailed`] when neither inspect nor pull finds it.
    pub fn image_id(&self, reference: &str) -> Result<String, EnvError> {
        if let Ok(id) = self.inspect_id(reference) {
            return Ok(id);
        }
        let mut pull = self.command();
        pull.args(["pull", "--quiet", reference]);
        run_quiet(pull)?;
        self.inspect_id(reference)
    }

    fn inspect_id(&self, reference: &str) -> Result<String, EnvError> {
        let mut inspect = self.command();
        inspect.args(["image", "inspect", "--format", "{{.Id}}", reference]);
        let out = run_quiet(inspect)?;
        let id = String::from_utf8_lossy(&out).trim().to_string();
        Ok(if id.starts_with("sha256:") { id } else { format!("sha256:{id}") })
    }

    /// Builds `dockerfile` with `context` as its build context, tagged `tag`; returns the id.
    ///
    /// # Errors
    /// [`EnvError::EngineFailed`] with the build's stderr tail.
    pub fn build(&self, dockerfile: &Path, context: &Path, tag: &str) -> Result<String, EnvError> {
        let mut build = self.command();
        build.arg("build").arg("--file").arg(dockerfile).arg("--tag").arg(tag);
        if let Some(limit) = soft_limit(libc::RLIMIT_NOFILE) {
            build.arg("--ulimit").arg(format!("nofile={limit}:{limit}"));
        }
        // runc refuses an nproc limit above the kernel's pid_max (measured: 96363 and 65536
        // fail, 32768 = pid_max works), and more processes than pids cannot exist anyway.
        if let Some(limit) = soft_limit(libc::RLIMIT_NPROC) {
            let limit = pid_max().map_or(limit, |max| limit.min(max));
            build.arg("--ulimit").arg(format!("nproc={limit}:{limit}"));
        }
        build.arg(context);
        run_quiet(build)?;
        self.inspect_id(tag)
    }

    /// Writes the flattened root filesystem of image `id` as a tarball at `tar_path`: a
    /// container is created (never started), exported and removed.
    ///
    /// # Errors
    /// [`EnvError::EngineFailed`], [`EnvError::Io`].
    pub fn export(&self, id: &str, tar_path: &Path) -> Result<(), EnvError> {
        let mut create = self.command();
        create.args(["create", id, "/bin/sh"]);
        let out = run_quiet(create)?;
        let container = String::from_utf8_lossy(&out).trim().to_string();
        let file = std::fs::File::create(tar_path).map_err(io(tar_path))?;
        let mut export = self.command();
        export.arg("export").arg(&container).stdout(file);
        let exported = run_with_stdout(export);
        let mut remove = self.command();
        remove.args(["rm", "--force", &container]);
        let removed = run_quiet(remove);
        exported?;
        removed.map(|_| ())
    }

    /// The engine's image names (`repository:tag`) under `repository`, sorted.
    ///
    /// # Errors
    /// [`EnvError::EngineFailed`].
    pub fn tags_under(&self, repository: &str) -> Result<Vec<String>, EnvError> {
        let mut images = self.command();
        images.args(["images", "--format", "{{.Repository}}:{{.Tag}}"]);
        let out = run_quiet(images)?;
        // An engine's reference filter matches images, and lists every name of a match, so
        // the names are picked here.
        let prefix = format!("{repository}:");
        let mut tags: Vec<String> =
            String::from_utf8_lossy(&out).lines().map(str::trim).filter(|name| name.starts_with(&prefix)).map(str::to_string).collect();
        tags.sort();
        tags.dedup();
        Ok(tags)
    }

    /// Removes the image name `tag` (the image too, when no other name holds it).
    ///
    /// # Errors
    /// [`EnvError::EngineFailed`].
    pub fn untag(&self, tag: &str) -> Result<(), EnvError> {
        let mut remove = self.command();
        remove.args(["rmi", tag]);
        run_quiet(remove).map(|_| ())
    }
}

/// The caller's soft limit of `resource`, when finite.
fn soft_limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given and nothing else.
    let ok = unsafe { libc::getrlimit(resource, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// `/proc/sys/kernel/pid_max`, when readable.
fn pid_max() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max").ok()?.trim().parse().ok()
}

pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

fn describe(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    words.join(" ")
}

/// Runs `command`, returning its stdout; a failure carries its stderr's last 2,000 bytes.
fn run_quiet(mut command: Command) -> Result<Vec<u8>, EnvError> {
    let text = describe(&command);
    let out = command.stdin(Stdio::null()).output().map_err(io(command.get_program()))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    Err(failed(text, out.status, &out.stderr))
}

/// Runs `command` whose stdout is already redirected.
fn run_with_stdout(mut command: Command) -> Result<(), EnvError> {
    let text = describe(&command);
    let out = command.stdin(Stdio::null()).stderr(Stdio::piped()).output().map_err(io(command.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(failed(text, out.status, &out.stderr))
}

fn failed(command: String, status: std::process::ExitStatus, stderr: &[u8]) -> EnvError {
    let tail = &stderr[stderr.len().saturating_sub(2000)..];
    EnvError::EngineFailed { command, status: status.to_string(), stderr: String::from_utf8_lossy(tail).trim().to_string() }
}
