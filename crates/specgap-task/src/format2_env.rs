//! Format 2's image environments (DESIGN §2 `[environment]`, issue 25): the keys that let a
//! task run on an image's root filesystem instead of the host's, and their rules.
//!
//! | key | rule |
//! | --- | --- |
//! | `[environment].image` | an image reference for a container engine: not blank, no whitespace |
//! | `[environment].dockerfile` | a regular file in the package, outside `workspace/` and `evaluator/`; its directory is the build context |
//! | `[environment].rootfs` | a regular file in the package (a tarball, plain, gzip or zstd), outside `workspace/` and `evaluator/` |
//! | `[environment].oci_layout` | a directory in the package holding `oci-layout` and `index.json`, outside `workspace/` and `evaluator/` |
//! | `[environment].workdir` | an absolute path of plain names, not `/` nor under `/proc`, `/dev`, `/sys` (default `/workspace`) |
//! | `[evaluator].dir`, `[evaluator].out` | the same form; none of workdir, dir, out equal to or inside another |
//! | `[evaluator.environment]` | at most one of `image`, `dockerfile`, `rootfs`, `oci_layout`, with the rules above, and/or `commands` (command names); at least one |
//! | `[evaluator.environment].commands` | the evaluator runs on the host's programs, its candidate calls on the image; not beside `[evaluator].dir` or `out` |
//!
//! At most one of the four source keys names the task's image. `commands` and `binds` (host
//! programs and paths) are refused beside one: an image brings its own programs.
//! `workdir`, `[evaluator].dir`, `out` and `[evaluator.environment]` need an image source.

use std::path::{Component, Path, PathBuf};

use specgap_protocol::package::{ImageSource, TaskManifest};

use crate::error::{LoadError, Location};
use crate::tree;

/// Paths an image environment may not place a mount under (the sandbox's own file systems).
const RESERVED_PREFIXES: [&str; 3] = ["/proc", "/dev", "/sys"];

/// Where each checked key stands in task.toml (the file itself when a key is absent).
#[derive(Debug, Clone)]
pub(crate) struct EnvironmentSpans {
    /// `[environment]`'s source key, or the table.
    pub source: Location,
    /// `[environment].workdir`.
    pub workdir: Location,
    /// `[environment].commands` or `binds`, whichever is set.
    pub host_keys: Location,
    /// `[evaluator].dir`.
    pub dir: Location,
    /// `[evaluator].out`.
    pub out: Location,
    /// `[evaluator.environment]`.
    pub evaluator_environment: Location,
}

/// One resolved image source: the key as written and, for a package path, the file or
/// directory it names (absolute when the package root is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSource {
    /// The source as written in task.toml.
    pub source: ImageSource,
    /// `dockerfile`, `rootfs`, `oci_layout`: the path inside the package; `image`: `None`.
    pub path: Option<PathBuf>,
}

impl ResolvedSource {
    /// A Dockerfile's build context: its directory. `None` for the other sources.
    pub fn build_context(&self) -> Option<&Path> {
        match self.source {
            ImageSource::Dockerfile(_) => self.path.as_deref().and_then(Path::parent),
            _ => None,
        }
    }
}

/// A task's image environment (format 2), checked: where its root filesystem comes from and
/// where the workspace and the evaluator's files appear in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEnvironment {
    /// The task's image (agent, commands, and the evaluator unless [`Self::evaluator_source`]).
    pub source: ResolvedSource,
    /// `[environment].workdir`: where the workspace is mounted (default `/workspace`).
    pub workdir: PathBuf,
    /// `[evaluator].dir`: where the evaluator's private copy appears, if fixed.
    pub evaluator_dir: Option<PathBuf>,
    /// `[evaluator].out`: the evaluator's output directory, if fixed.
    pub evaluator_out: Option<PathBuf>,
    /// `[evaluator.environment]`: the evaluator's own image, if it has one.
    pub evaluator_source: Option<ResolvedSource>,
    /// `[evaluator.environment].commands`: when not empty, the evaluator runs on the host's
    /// programs (these), and only its candidate calls on [`Self::evaluator_image`].
    pub evaluator_commands: Vec<String>,
}

impl ImageEnvironment {
    /// The image the evaluator runs on: its own, or the task's.
    pub fn evaluator_image(&self) -> &ResolvedSource {
        self.evaluator_source.as_ref().unwrap_or(&self.source)
    }

    /// Whether the evaluator's own command runs on the host's programs
    /// (`[evaluator.environment].commands`), its candidate calls on [`Self::evaluator_image`].
    pub fn evaluator_on_host(&self) -> bool {
        !self.evaluator_commands.is_empty()
    }
}

/// Checks the image-environment keys of `manifest` (format already known to allow them) and
/// resolves their package paths. Runs after the tree walk, so every symlink on the way is
/// known to stay inside the package. `Ok(None)`: a host-command environment.
pub(crate) fn resolve(root: &Path, manifest: &TaskManifest, spans: &EnvironmentSpans) -> Result<Option<ImageEnvironment>, LoadError> {
    let env = &manifest.environment;
    let evaluator = &manifest.evaluator;
    let sources = ImageSource::all_of(&env.image, &env.dockerfile, &env.rootfs, &env.oci_layout);
    if sources.len() > 1 {
        return Err(invalid(&spans.source, several("[environment]", &sources)));
    }
    let Some(source) = sources.into_iter().next() else {
        return host_only(manifest, spans).map(|()| None);
    };
    if !env.commands.is_empty() || !env.binds.is_empty() {
        return Err(invalid(
            &spans.host_keys,
            format!(
                "[environment].commands and binds name host programs and paths, and this environment is an image \
                 ([environment].{}); install what the task needs in the image instead",
                source.key()
            ),
        ));
    }
    let source = resolve_source(root, source, "[environment]", &spans.source)?;
    let workdir = mount_path(env.workdir(), "[environment].workdir", &spans.workdir)?;
    let evaluator_dir = evaluator.dir.as_deref().map(|d| mount_path(d, "[evaluator].dir", &spans.dir)).transpose()?;
    let evaluator_out = evaluator.out.as_deref().map(|d| mount_path(d, "[evaluator].out", &spans.out)).transpose()?;
    check_apart(&workdir, &evaluator_dir, &evaluator_out, spans)?;
    let (evaluator_source, evaluator_commands) = evaluator_environment(root, manifest, spans)?;
    Ok(Some(ImageEnvironment { source, workdir, evaluator_dir, evaluator_out, evaluator_source, evaluator_commands }))
}

/// `[evaluator.environment]` of an image environment: its image (at most one source) and its
/// host `commands`; at least one of them. `commands` runs the evaluator on the host's programs,
/// so `[evaluator].dir` and `out` (places inside an image) are refused beside it.
fn evaluator_environment(
    root: &Path,
    manifest: &TaskManifest,
    spans: &EnvironmentSpans,
) -> Result<(Option<ResolvedSource>, Vec<String>), LoadError> {
    let evaluator = &manifest.evaluator;
    let Some(table) = &evaluator.environment else { return Ok((None, Vec::new())) };
    let at = &spans.evaluator_environment;
    let sources = ImageSource::all_of(&table.image, &table.dockerfile, &table.rootfs, &table.oci_layout);
    if sources.len() > 1 {
        return Err(invalid(at, several("[evaluator.environment]", &sources)));
    }
    if sources.is_empty() && table.commands.is_empty() {
        return Err(invalid(
            at,
            "[evaluator.environment] names no image; expected one of `image`, `dockerfile`, `rootfs`, `oci_layout`, \
             or `commands` (the evaluator on the host's programs), or no table: the task's image"
                .into(),
        ));
    }
    if !table.commands.is_empty() {
        if let Some(name) = table.commands.iter().find(|c| c.trim().is_empty() || c.contains('/')) {
            return Err(invalid(at, format!("[evaluator.environment].commands names `{name}`; expected command names (e.g. `python3`)")));
        }
        let placed = [("[evaluator].dir", &evaluator.dir, &spans.dir), ("[evaluator].out", &evaluator.out, &spans.out)];
        if let Some((key, _, place)) = placed.into_iter().find(|(_, value, _)| value.is_some()) {
            return Err(invalid(
                place,
                format!(
                    "{key} places the evaluator's files inside an image, and [evaluator.environment].commands runs the \
                     evaluator on the host's programs; remove {key} (its candidate calls still run on the image)"
                ),
            ));
        }
    }
    let source = match sources.into_iter().next() {
        Some(first) => Some(resolve_source(root, first, "[evaluator.environment]", at)?),
        None => None,
    };
    Ok((source, table.commands.clone()))
}

/// A host-command environment: the keys that only mean something on an image are refused.
fn host_only(manifest: &TaskManifest, spans: &EnvironmentSpans) -> Result<(), LoadError> {
    let needs_image = |key: &str, at: &Location| {
        Err(invalid(
            at,
            format!(
                "{key} places files inside an image environment, and [environment] names no image; \
                 add one of `image`, `dockerfile`, `rootfs`, `oci_layout` to [environment]"
            ),
        ))
    };
    if manifest.environment.workdir.is_some() {
        return needs_image("[environment].workdir", &spans.workdir);
    }
    if manifest.evaluator.dir.is_some() {
        return needs_image("[evaluator].dir", &spans.dir);
    }
    if manifest.evaluator.out.is_some() {
        return needs_image("[evaluator].out", &spans.out);
    }
    if manifest.evaluator.environment.is_some() {
        return needs_image("[evaluator.environment]", &spans.evaluator_environment);
    }
    Ok(())
}

fn several(table: &str, sources: &[ImageSource]) -> String {
    let keys: Vec<String> = sources.iter().map(|s| format!("`{}`", s.key())).collect();
    format!("{table} names its image by {}; expected exactly one of them", keys.join(" and "))
}

fn invalid(at: &Location, message: String) -> LoadError {
    LoadError::Invalid { at: at.clone(), message }
}

/// Checks one source and finds its package path.
fn resolve_source(root: &Path, source: ImageSource, table: &str, at: &Location) -> Result<ResolvedSource, LoadError> {
    let key = format!("{table}.{}", source.key());
    let path = match &source {
        ImageSource::Image(reference) => {
            if reference.trim().is_empty() || reference.chars().any(char::is_whitespace) {
                return Err(invalid(
                    at,
                    format!("{key} `{reference}` is not an image reference; expected one without whitespace (e.g. `python:3.12-slim`)"),
                ));
            }
            None
        }
        ImageSource::Dockerfile(rel) | ImageSource::Rootfs(rel) => {
            let path = package_path(root, rel, &key, at)?;
            require_kind(&path, rel, &key, at, false)?;
            Some(path)
        }
        ImageSource::OciLayout(rel) => {
            let path = package_path(root, rel, &key, at)?;
            require_kind(&path, rel, &key, at, true)?;
            for member in ["oci-layout", "index.json"] {
                if !path.join(member).is_file() {
                    return Err(invalid(at, format!("{key} `{rel}` has no `{member}`; expected an OCI image layout directory")));
                }
            }
            Some(path)
        }
    };
    Ok(ResolvedSource { source, path })
}

/// `rel` as a path inside the package, outside `workspace/` (the agent would see how its
/// image is made, and the evaluator's files would be built in) and `evaluator/` (private).
fn package_path(root: &Path, rel: &str, key: &str, at: &Location) -> Result<PathBuf, LoadError> {
    if Path::new(rel).is_absolute() {
        return Err(invalid(at, format!("{key} `{rel}` is absolute; expected a path relative to the package root")));
    }
    let normal = match tree::normalize_relative(Path::new(rel)) {
        Some(normal) if !normal.as_os_str().is_empty() => normal,
        _ => return Err(invalid(at, format!("{key} `{rel}` does not name a path inside the package"))),
    };
    let path = root.join(&normal);
    for private in ["workspace", "evaluator"] {
        let first_is = normal.components().next() == Some(Component::Normal(private.as_ref()));
        if first_is || resolves_into(&path, &root.join(private)) {
            return Err(invalid(
                at,
                format!(
                    "{key} `{rel}` is inside {private}/; keep the environment's files outside workspace/ and evaluator/ (e.g. environment/)"
                ),
            ));
        }
    }
    Ok(path)
}

fn require_kind(path: &Path, rel: &str, key: &str, at: &Location, dir: bool) -> Result<(), LoadError> {
    let expected = if dir { "a directory" } else { "a regular file" };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() == dir && (dir || meta.is_file()) => Ok(()),
        Ok(_) => Err(invalid(at, format!("{key} `{rel}` is not {expected}"))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(invalid(at, format!("{key} `{rel}`: no such path in the package"))),
        Err(_) => fs_err::metadata(path).map(|_| ()).map_err(LoadError::from),
    }
}

fn resolves_into(path: &Path, dir: &Path) -> bool {
    match (std::fs::canonicalize(path), std::fs::canonicalize(dir)) {
        (Ok(path), Ok(dir)) => path.starts_with(dir),
        _ => false,
    }
}

/// A mount point inside the image: absolute, plain names only, not `/`, not reserved.
fn mount_path(value: &str, key: &str, at: &Location) -> Result<PathBuf, LoadError> {
    let path = Path::new(value);
    let plain = path.is_absolute()
        && path.components().skip(1).all(|c| matches!(c, Component::Normal(_)))
        && !value.contains("//")
        && !value.ends_with('/')
        && !value.split('/').any(|part| part == ".");
    if !plain || path == Path::new("/") {
        return Err(invalid(
            at,
            format!("{key} `{value}` is not usable; expected an absolute path of plain names other than / (e.g. `/app`)"),
        ));
    }
    if let Some(reserved) = RESERVED_PREFIXES.iter().find(|r| path.starts_with(r)) {
        return Err(invalid(at, format!("{key} `{value}` is under {reserved}, which the sandbox provides itself")));
    }
    Ok(path.to_path_buf())
}

/// workdir, dir and out are separate mounts: none may equal or contain another.
fn check_apart(workdir: &Path, dir: &Option<PathBuf>, out: &Option<PathBuf>, spans: &EnvironmentSpans) -> Result<(), LoadError> {
    let mut named: Vec<(&str, &Path, &Location)> = vec![("[environment].workdir", workdir, &spans.workdir)];
    if let Some(dir) = dir {
        named.push(("[evaluator].dir", dir, &spans.dir));
    }
    if let Some(out) = out {
        named.push(("[evaluator].out", out, &spans.out));
    }
    for (i, (a_key, a, _)) in named.iter().enumerate() {
        for (b_key, b, b_at) in named.iter().skip(i + 1) {
            if a.starts_with(b) || b.starts_with(a) {
                return Err(invalid(
                    b_at,
                    format!(
                        "{b_key} `{}` overlaps {a_key} `{}`; expected separate directories, neither inside the other",
                        b.display(),
                        a.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}
