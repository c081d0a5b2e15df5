//! Image environments (package format 2, issue 25): a sandbox whose system view is an image's
//! cached root filesystem (`specgap env build`), read-only, in place of the host's `/usr`,
//! `/bin`, `/lib*` and synthetic `/etc`.
//!
//! bubblewrap's root stays its own tmpfs (remounted read-only at the end), and each top-level
//! entry of the image is placed in it: a directory or file read-only bound, a symbolic link
//! recreated. The image's `proc`, `dev`, `sys` and `tmp` are not used (fresh `/proc` and
//! `/dev`, a private tmpfs `/tmp`, no `/sys`). The image's `/etc` is shown whole, read-only,
//! with specgap's synthetic `passwd` and `group` (the sandbox user 1000 as `specgap`, home
//! `/tmp`) bound over the image's own when it has them. A mount point inside an image
//! directory (a `workdir` of `/home/user/app`) is made as an empty directory in the cached
//! tree, because bubblewrap cannot create one in a read-only bind.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::error::SandboxError;
use crate::machine::{Machine, Overlay};

/// Top-level names of an image never shown: the sandbox provides its own.
const NOT_SHOWN: [&str; 4] = ["proc", "dev", "sys", "tmp"];

/// The `/etc` files of specgap's synthetic set bound over the image's own.
const ETC_OVERRIDES: [&str; 2] = ["passwd", "group"];

/// The `/etc` files an external agent's sandbox also gets from specgap's agent set (names
/// resolve through the network tripwire, [`crate::AGENT_NAMESERVER`]), bound over the image's
/// own; one the image lacks is made as an empty file in the cached tree first (a mount point).
const AGENT_ETC_OVERRIDES: [&str; 3] = ["hosts", "nsswitch.conf", "resolv.conf"];

/// Where the harness's fixed sandbox paths appear in an image environment (format 2:
/// `[environment].workdir`, `[evaluator].dir`, `[evaluator].out`), so packages that hard-code
/// such paths (Harbor's `/app`, `/tests`, `/logs/verifier`) run unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePlacement {
    /// Where the workspace appears, instead of [`crate::WORKSPACE_MOUNT`].
    pub workdir: PathBuf,
    /// Where the evaluator's private copy appears (its cwd), instead of `/evaluator`.
    pub evaluator_dir: Option<PathBuf>,
    /// The evaluator's output directory (`SPECGAP_OUT`), instead of `/out`.
    pub evaluator_out: Option<PathBuf>,
}

impl ImagePlacement {
    /// The workspace at `workdir`, the evaluator's paths at the harness's defaults.
    pub fn workdir(workdir: impl Into<PathBuf>) -> Self {
        ImagePlacement { workdir: workdir.into(), evaluator_dir: None, evaluator_out: None }
    }

    /// `(harness path, image path)` pairs, most specific first.
    fn remaps(&self) -> Vec<(PathBuf, PathBuf)> {
        let mut pairs = vec![(PathBuf::from(crate::WORKSPACE_MOUNT), self.workdir.clone())];
        if let Some(dir) = &self.evaluator_dir {
            pairs.push((PathBuf::from(EVALUATOR_MOUNT), dir.clone()));
        }
        if let Some(out) = &self.evaluator_out {
            pairs.push((PathBuf::from(OUT_MOUNT), out.clone()));
        }
        pairs
    }

    /// Every sandbox path a mount may be placed at on this image.
    fn mount_points(&self) -> Vec<PathBuf> {
        let mut points = vec![self.workdir.clone(), PathBuf::from(RUN_MOUNT)];
        points.push(self.evaluator_dir.clone().unwrap_or_else(|| PathBuf::from(EVALUATOR_MOUNT)));
        points.push(self.evaluator_out.clone().unwrap_or_else(|| PathBuf::from(OUT_MOUNT)));
        points
    }
}

/// The evaluator's default paths ([`crate::evaluator`]).
pub(crate) const EVALUATOR_MOUNT: &str = "/evaluator";
pub(crate) const OUT_MOUNT: &str = "/out";
pub(crate) const RUN_MOUNT: &str = "/run/specgap";

#[derive(Debug, Clone, PartialEq, Eq)]
enum TopKind {
    Dir,
    File,
    Link(PathBuf),
}

/// An image's root filesystem, scanned once: its top-level entries and how each is shown.
#[derive(Debug, Clone)]
pub(crate) struct RootfsView {
    root: PathBuf,
    top: Vec<(OsString, TopKind)>,
    etc_overrides: Vec<&'static str>,
    /// Whether the image has a `/run` directory: bubblewrap cannot make mount points under
    /// `/run/specgap` in its read-only bind, so such mounts get a tmpfs there first.
    has_run_dir: bool,
    remaps: Vec<(PathBuf, PathBuf)>,
    placement: ImagePlacement,
    /// An execute-only copy of the image's own `/bin/sh`, for sessions' command servers
    /// ([`SERVER_SHELL_PATH`]); `None` when the image has no shell.
    server_shell: Option<Arc<tempfile::TempDir>>,
    /// A copy-on-write machine's overlay ([`crate::machine`]): the image's entries come from
    /// its merged tree, writable; `None` shows the image read-only.
    overlay: Option<Overlay>,
}

/// Where a session's command server finds its execute-only shell on an image. Named `sh`, so
/// a multi-call binary (busybox) runs its shell; outside the image's `/etc`, which is the
/// image's own and read-only.
pub(crate) const SERVER_SHELL_PATH: &str = "/.specgap-server/sh";
const SERVER_SHELL_DIR: &str = "/.specgap-server";

impl RootfsView {
    /// Scans `root` (an unpacked image, e.g. `specgap env build`'s) and makes every mount
    /// point of `placement` that lies inside one of its directories exist there.
    ///
    /// # Errors
    /// [`SandboxError::BadBind`] when `root` is not a directory or a mount point's parent in
    /// the image is not a directory; [`SandboxError::Io`].
    pub(crate) fn scan(root: &Path, placement: &ImagePlacement) -> Result<RootfsView, SandboxError> {
        let meta = fs_err::symlink_metadata(root)?;
        if !meta.is_dir() {
            return Err(SandboxError::BadBind { path: root.to_path_buf(), reason: "expected an image's root filesystem directory".into() });
        }
        for point in placement.mount_points() {
            ensure_mount_point(root, &point)?;
        }
        let mut top = Vec::new();
        for entry in fs_err::read_dir(root)? {
            let entry = entry?;
            let name = entry.file_name();
            if NOT_SHOWN.iter().any(|n| name.as_bytes() == n.as_bytes()) {
                continue;
            }
            let kind = entry.file_type()?;
            let kind = if kind.is_symlink() {
                TopKind::Link(fs_err::read_link(entry.path())?)
            } else if kind.is_dir() {
                TopKind::Dir
            } else if kind.is_file() {
                TopKind::File
            } else {
                continue;
            };
            top.push((name, kind));
        }
        top.sort_by(|a, b| a.0.cmp(&b.0));
        let etc = root.join("etc");
        let etc_overrides = ETC_OVERRIDES.into_iter().filter(|f| is_plain_file(&etc.join(f))).collect();
        let server_shell = server_shell(root)?;
        let has_run_dir = top.iter().any(|(name, kind)| name.as_bytes() == b"run" && *kind == TopKind::Dir);
        Ok(RootfsView {
            root: root.to_path_buf(),
            top,
            etc_overrides,
            has_run_dir,
            remaps: placement.remaps(),
            placement: placement.clone(),
            server_shell,
            overlay: None,
        })
    }

    /// The same view for an external agent's sandbox ([`crate::AgentSandbox`]): the agent's
    /// `hosts`, `nsswitch.conf` and `resolv.conf` over the image's (made as empty mount points
    /// in the cached tree where the image's `/etc` lacks them), so names resolve through the
    /// episode's network tripwire as on the host.
    ///
    /// # Errors
    /// [`SandboxError::Io`] when a mount point cannot be made.
    pub(crate) fn for_agent(&self) -> Result<RootfsView, SandboxError> {
        let mut view = self.clone();
        let etc = self.root.join("etc");
        let etc_is_dir = std::fs::symlink_metadata(&etc).is_ok_and(|m| m.is_dir());
        if !etc_is_dir {
            return Ok(view);
        }
        for file in AGENT_ETC_OVERRIDES {
            let path = etc.join(file);
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_file() => {}
                // A link (Debian's resolv.conf often is one) or something else: shown as the image has it.
                Ok(_) => continue,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    fs_err::write(&path, b"")?;
                }
                Err(err) => return Err(SandboxError::Io(err)),
            }
            view.etc_overrides.push(file);
        }
        Ok(view)
    }

    /// Makes the mount point of each of `mounts` (sandbox paths, already placed) exist in the
    /// cached tree when it lies inside an image directory, as [`RootfsView::scan`] does for the
    /// placement's; mounts under `/run/specgap` are left out (they get a tmpfs,
    /// [`RootfsView::run_tmpfs_needed`]).
    ///
    /// # Errors
    /// As [`RootfsView::scan`].
    pub(crate) fn prepare_mount_points<'p>(&self, mounts: impl IntoIterator<Item = &'p Path>) -> Result<(), SandboxError> {
        for point in mounts {
            if !point.starts_with(RUN_MOUNT) {
                ensure_mount_point(&self.root, point)?;
            }
        }
        Ok(())
    }

    /// Whether a mount at `point` needs a tmpfs at `/run/specgap` first: the image has a
    /// `/run` directory, which is shown read-only, and `point` lies below `/run/specgap`.
    pub(crate) fn run_tmpfs_needed(&self, point: &Path) -> bool {
        self.has_run_dir && point.starts_with(RUN_MOUNT) && point != Path::new(RUN_MOUNT)
    }

    /// `path` (a sandbox path the harness chose: a mount point, a cwd, `SPECGAP_WORKSPACE`)
    /// moved to where the image's package wants it: `/workspace/x` → `<workdir>/x`, and so on.
    pub(crate) fn place(&self, path: &Path) -> PathBuf {
        for (from, to) in &self.remaps {
            if let Ok(rest) = path.strip_prefix(from) {
                return if rest.as_os_str().is_empty() { to.clone() } else { to.join(rest) };
            }
        }
        path.to_path_buf()
    }

    /// Where the sandbox finds the command server's shell: the image's own, or `None`.
    pub(crate) fn server_shell_path(&self) -> Option<&'static str> {
        self.server_shell.as_ref().map(|_| SERVER_SHELL_PATH)
    }

    /// The root filesystem directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// How the harness's paths are placed on this image.
    pub(crate) fn placement(&self) -> &ImagePlacement {
        &self.placement
    }

    /// The same view on `machine`: the image's entries writable through its overlay.
    pub(crate) fn on_machine(&self, machine: &Machine) -> Result<RootfsView, SandboxError> {
        Ok(RootfsView { overlay: Some(machine.overlay(&self.root)?), ..self.clone() })
    }

    /// The overlay to mount before bubblewrap starts, when the view is a machine's.
    pub(crate) fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_ref()
    }

    /// The sandbox paths the harness mounts over the image (the workspace, the evaluator's,
    /// the run directory): what a machine's layer leaves out.
    pub(crate) fn mount_points(&self) -> Vec<PathBuf> {
        let mut points: Vec<PathBuf> = self.remaps.iter().map(|(_, to)| to.clone()).collect();
        points.extend([RUN_MOUNT, EVALUATOR_MOUNT, OUT_MOUNT, SERVER_SHELL_DIR].map(PathBuf::from));
        points.extend(NOT_SHOWN.iter().map(|name| Path::new("/").join(name)));
        points
    }

    /// bubblewrap arguments placing the image in the sandbox's root, with `synthetic_etc`'s
    /// `passwd` and `group` over the image's.
    pub(crate) fn bwrap_args(&self, synthetic_etc: &Path) -> Vec<Vec<u8>> {
        let mut args: Vec<Vec<u8>> = Vec::new();
        let mut push = |parts: &[&[u8]]| args.extend(parts.iter().map(|p| p.to_vec()));
        // On a machine, the image's entries come writable from the overlay's merged tree.
        let (from, bind): (&Path, &[u8]) = match &self.overlay {
            Some(overlay) => (&overlay.merged, b"--bind"),
            None => (&self.root, b"--ro-bind"),
        };
        for (name, kind) in &self.top {
            let host = from.join(name);
            let inside = Path::new("/").join(name);
            match kind {
                TopKind::Dir | TopKind::File => {
                    push(&[bind, host.as_os_str().as_bytes(), inside.as_os_str().as_bytes()]);
                }
                TopKind::Link(target) => push(&[b"--symlink", target.as_os_str().as_bytes(), inside.as_os_str().as_bytes()]),
            }
        }
        if let Some(dir) = &self.server_shell {
            let shell = dir.path().join("sh");
            push(&[b"--ro-bind", shell.as_os_str().as_bytes(), SERVER_SHELL_PATH.as_bytes()]);
        }
        for file in &self.etc_overrides {
            let from = synthetic_etc.join(file);
            let to = Path::new("/etc").join(file);
            push(&[b"--ro-bind", from.as_os_str().as_bytes(), to.as_os_str().as_bytes()]);
        }
        args
    }
}

/// An execute-only (0111) copy of the image's `/bin/sh`, links followed inside the image: a
/// process that executes a program it cannot read is not dumpable, so the commands of a
/// session (same uid) cannot read the server's memory or fds (as with the host's shell).
fn server_shell(root: &Path) -> Result<Option<Arc<tempfile::TempDir>>, SandboxError> {
    let Some(real) = resolve_in_root(root, Path::new("bin/sh")) else { return Ok(None) };
    if !is_plain_file(&real) {
        return Ok(None);
    }
    let dir = tempfile::Builder::new().prefix("specgap-image-shell-").tempdir_in(crate::scratch::parent())?;
    let copy = dir.path().join("sh");
    fs_err::copy(&real, &copy)?;
    fs_err::set_permissions(&copy, std::fs::Permissions::from_mode(0o111))?;
    Ok(Some(Arc::new(dir)))
}

/// Where the image at `root` (an unpacked root filesystem) has the program `name`: the first
/// directory of [`crate::host::SYSTEM_PATH`] holding an executable file of that name, links
/// followed as the image would see them (never leaving it). Returns the image path
/// (`/bin/bash`) and the file in the cached tree; `None` when the image has no such program.
pub fn find_program(root: &Path, name: &str) -> Option<(PathBuf, PathBuf)> {
    crate::host::SYSTEM_PATH.split(':').find_map(|dir| {
        let inside = Path::new(dir).join(name);
        let rel = inside.strip_prefix("/").ok()?;
        let real = resolve_in_root(root, rel)?;
        let meta = std::fs::metadata(&real).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some((inside, real))
    })
}

/// `rel` inside the image at `root` with every link followed as the image would see it
/// (absolute targets from the image's root), never leaving it; `None` when a part is missing or
/// there are more than 40 links.
fn resolve_in_root(root: &Path, rel: &Path) -> Option<PathBuf> {
    let mut pending: Vec<OsString> = rel.iter().rev().map(OsString::from).collect();
    let mut resolved = PathBuf::new();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        match part.to_str() {
            Some("." | "/") => continue,
            Some("..") => {
                resolved.pop();
                continue;
            }
            _ => {}
        }
        let candidate = resolved.join(&part);
        let meta = std::fs::symlink_metadata(root.join(&candidate)).ok()?;
        if !meta.file_type().is_symlink() {
            resolved = candidate;
            continue;
        }
        links += 1;
        if links > 40 {
            return None;
        }
        let target = std::fs::read_link(root.join(&candidate)).ok()?;
        if target.is_absolute() {
            resolved = PathBuf::new();
        }
        pending.extend(target.iter().rev().map(OsString::from));
    }
    Some(root.join(resolved))
}

fn is_plain_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Makes `point` (absolute, plain names) exist in `root` when its first component is an image
/// directory: bubblewrap makes mount points in its own tmpfs root, not in a read-only bind.
/// Links on the way are refused: followed, they could lead out of the image.
fn ensure_mount_point(root: &Path, point: &Path) -> Result<(), SandboxError> {
    let mut names = point.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name),
        _ => None,
    });
    let Some(first) = names.next() else { return Ok(()) };
    let mut at = root.join(first);
    match std::fs::symlink_metadata(&at) {
        Ok(meta) if meta.is_dir() => {}
        // Absent: bubblewrap makes it in its tmpfs. Another kind: bubblewrap reports it.
        _ => return Ok(()),
    }
    for name in names {
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(SandboxError::BadBind {
                    path: at.clone(),
                    reason: format!("mount point {} passes through something in the image that is not a directory", point.display()),
                });
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => create_missing_dir(&at)?,
            Err(err) => return Err(SandboxError::Io(err)),
        }
    }
    Ok(())
}

/// Creates the directory `at`, which was just seen missing. Sandboxes on one image share its
/// root, so another one may have made it since: a directory there then is success, as it
/// would have been had it been there first (CI of 2026-12-08: two `cli:` agents' image tests
/// both making `/home/specgap`).
fn create_missing_dir(at: &Path) -> Result<(), SandboxError> {
    match fs_err::create_dir(at) {
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && std::fs::symlink_metadata(at).is_ok_and(|m| m.is_dir()) => Ok(()),
        made => made.map_err(SandboxError::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_point_made_meanwhile_is_success_and_anything_else_is_not() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("home");
        create_missing_dir(&dir).unwrap();
        assert!(dir.is_dir());
        // Made by another sandbox between the look and the create.
        create_missing_dir(&dir).unwrap();
        let file = root.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let err = create_missing_dir(&file).unwrap_err();
        assert!(err.to_string().contains("file"), "{err}");
        let nested = root.path().join("absent/inner");
        assert!(create_missing_dir(&nested).is_err());
    }
}
