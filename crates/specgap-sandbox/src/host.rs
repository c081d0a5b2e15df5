//! [`HostView`]: what of the host a sandboxed command sees besides the system directories
//! (DESIGN §2 `[environment]`, §3.2).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use fs_err as fs;
use specgap_protocol::package::Environment;

use crate::error::SandboxError;
use crate::machine::Machine;
use crate::rootfs::{ImagePlacement, RootfsView};
use crate::scratch;

/// `PATH` inside the sandbox after the resolved command directories.
pub const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Host directories that every sandbox sees read-only anyway; a command found under one needs
/// no extra mount.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Version managers whose shims are resolved with `<tool> which <name>`.
const SHIM_TOOLS: &[&str] = &["pyenv", "rbenv", "nodenv", "goenv", "plenv", "jenv", "phpenv", "asdf"];

/// The user and group a sandboxed command runs as (DESIGN §3.2: never root inside).
pub const SANDBOX_UID: u32 = 1000;

/// The resolved host view of one task's `[environment]`: extra read-only mounts (installation
/// prefixes of `commands`, and `binds`), directories to put first on the sandbox `PATH`, the
/// task's extra environment, and a synthetic `/etc/passwd`, `/etc/group`, `/etc/hosts` and
/// `/etc/nsswitch.conf` (the host's are never shown). Cheap to clone; build it once per task.
#[derive(Debug, Clone)]
pub struct HostView {
    bin_dirs: Vec<PathBuf>,
    mounts: Vec<PathBuf>,
    env: BTreeMap<String, String>,
    etc: Arc<tempfile::TempDir>,
    rootfs: Option<Arc<RootfsView>>,
}

impl HostView {
    /// A view with nothing but the system directories (no `[environment]`).
    ///
    /// # Errors
    /// [`SandboxError::Io`] when the synthetic `/etc` files cannot be written.
    pub fn system() -> Result<HostView, SandboxError> {
        Ok(HostView { bin_dirs: Vec::new(), mounts: Vec::new(), env: BTreeMap::new(), etc: shared_etc(EtcKind::Commands)?, rootfs: None })
    }

    /// The same view with the `/etc` of an external agent's sandbox ([`crate::AgentSandbox`]):
    /// `hosts: files dns` and a `resolv.conf` naming [`AGENT_NAMESERVER`], where the episode's
    /// network tripwire answers (specgap-gateway's `tripwire`). Every other sandbox keeps
    /// `hosts: files` and no resolver.
    ///
    /// # Errors
    /// [`SandboxError::Io`] when the agent's `/etc` cannot be written.
    pub(crate) fn for_agent(&self) -> Result<HostView, SandboxError> {
        let rootfs = match &self.rootfs {
            Some(image) => Some(Arc::new(image.for_agent()?)),
            None => None,
        };
        Ok(HostView { etc: shared_etc(EtcKind::Agent)?, rootfs, ..self.clone() })
    }

    /// Resolves `[environment]`: each of `commands` is looked up on the host `PATH`; a
    /// version-manager shim (pyenv, rbenv, nodenv, asdf, …) is resolved to the real program
    /// with `<tool> which <name>`; symbolic links are followed. A program outside the system
    /// directories gets its installation prefix (the parent of its `bin/` directory, e.g.
    /// `/root/.pyenv/versions/3.11.7`) mounted read-only at the same path and its directory put
    /// first on the sandbox `PATH`. `binds` are mounted read-only at the same path.
    ///
    /// # Errors
    /// [`SandboxError::ImageEnvironment`] for an image environment (format 2);
    /// [`SandboxError::CommandNotFound`], [`SandboxError::ShimUnresolved`], and
    /// [`SandboxError::BadBind`] for a bind that is relative, missing, `/`, or would expose the
    /// harness's working directory (a prefix or bind that contains it).
    pub fn resolve(environment: &Environment) -> Result<HostView, SandboxError> {
        if let Some(source) = environment.image_source() {
            return Err(SandboxError::ImageEnvironment { key: source.key(), value: source.value().to_string() });
        }
        let mut view = HostView::system()?;
        for name in &environment.commands {
            let found = find_on_path(name).ok_or_else(|| SandboxError::CommandNotFound(name.clone()))?;
            let real = resolve_shim(name, &found)?;
            let real = fs::canonicalize(&real)?;
            view.add_program(&real)?;
        }
        for bind in &environment.binds {
            let path = PathBuf::from(bind);
            check_mountable(&path)?;
            if !path.exists() {
                return Err(SandboxError::BadBind { path, reason: "expected an existing host path".into() });
            }
            push_unique(&mut view.mounts, path);
        }
        view.env = environment.env.clone();
        Ok(view)
    }

    /// The view of an image environment (format 2): `rootfs` (an image's root filesystem,
    /// e.g. from `specgap env build`) read-only in place of the host's system directories and
    /// `/etc` (see [`crate::rootfs`]), and `environment.env`. The harness's sandbox paths are
    /// moved as `placement` says (the workspace to its workdir, the evaluator's to its dir and
    /// out), and each that lies inside an image directory is made to exist in `rootfs` first.
    /// Such a view runs only sandboxed.
    ///
    /// # Errors
    /// [`SandboxError::BadBind`] when `rootfs` is not a directory or a mount point crosses a
    /// non-directory of the image; [`SandboxError::Io`].
    pub fn on_rootfs(rootfs: &Path, environment: &Environment, placement: &ImagePlacement) -> Result<HostView, SandboxError> {
        let mut view = HostView::system()?;
        view.rootfs = Some(Arc::new(RootfsView::scan(rootfs, placement)?));
        view.env = environment.env.clone();
        Ok(view)
    }

    /// The same image view (environment, placement) on another root filesystem: the image
    /// with a layer over it (a whole-machine residual state, a submission's machine).
    ///
    /// # Errors
    /// [`SandboxError::Overlay`] for a view that is not an image environment's; those of
    /// [`HostView::on_rootfs`].
    pub fn with_root(&self, rootfs: &Path) -> Result<HostView, SandboxError> {
        let Some(image) = self.rootfs.as_deref() else {
            return Err(SandboxError::Overlay("only an image environment has a root filesystem to replace".into()));
        };
        Ok(HostView { rootfs: Some(Arc::new(RootfsView::scan(rootfs, image.placement())?)), ..self.clone() })
    }

    /// The same image view on `machine` ([`crate::machine`]): every sandbox made with it
    /// mounts the machine's overlay over the image, so its commands may change any of the
    /// image's files and the changes stay in the machine.
    ///
    /// # Errors
    /// [`SandboxError::Overlay`] for a view that is not an image environment's;
    /// [`SandboxError::BadBind`] for a layer path overlayfs cannot take.
    pub fn with_machine(&self, machine: &Machine) -> Result<HostView, SandboxError> {
        let Some(image) = self.rootfs.as_deref() else {
            return Err(SandboxError::Overlay("only an image environment runs on a copy-on-write machine".into()));
        };
        Ok(HostView { rootfs: Some(Arc::new(image.on_machine(machine)?)), ..self.clone() })
    }

    /// The machine paths a layer of this view's machine leaves out ([`Machine::write_layer`]'s
    /// `skip`): where the harness mounts the workspace, the evaluator's files, `/tmp` and the
    /// other sandbox paths. Empty for a host-command view.
    pub fn machine_mount_points(&self) -> Vec<PathBuf> {
        self.rootfs.as_deref().map(RootfsView::mount_points).unwrap_or_default()
    }

    /// The image root filesystem this view runs on, if it is an image environment's.
    pub fn rootfs(&self) -> Option<&Path> {
        self.rootfs.as_deref().map(RootfsView::root)
    }

    pub(crate) fn rootfs_view(&self) -> Option<&RootfsView> {
        self.rootfs.as_deref()
    }

    /// `PATH` for sandboxed commands: the resolved command directories, then [`SYSTEM_PATH`].
    pub fn path_var(&self) -> String {
        let mut parts: Vec<String> = self.bin_dirs.iter().map(|d| d.display().to_string()).collect();
        parts.push(SYSTEM_PATH.to_string());
        parts.join(":")
    }

    /// Host paths mounted read-only at the same path in every sandbox of this view.
    pub fn read_only_mounts(&self) -> &[PathBuf] {
        &self.mounts
    }

    /// Directories put first on the sandbox `PATH`.
    pub fn bin_dirs(&self) -> &[PathBuf] {
        &self.bin_dirs
    }

    /// The task's `[environment].env`.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The directory holding the synthetic `/etc` files.
    pub(crate) fn etc_dir(&self) -> &Path {
        self.etc.path()
    }

    fn add_program(&mut self, real: &Path) -> Result<(), SandboxError> {
        let Some(bin_dir) = real.parent() else {
            return Err(SandboxError::BadBind { path: real.to_path_buf(), reason: "program has no parent directory".into() });
        };
        if is_system_path(bin_dir) {
            if !SYSTEM_PATH.split(':').any(|p| Path::new(p) == bin_dir) {
                push_unique(&mut self.bin_dirs, bin_dir.to_path_buf());
            }
            return Ok(());
        }
        let prefix = installation_prefix(bin_dir);
        check_mountable(&prefix)?;
        push_unique(&mut self.mounts, prefix);
        push_unique(&mut self.bin_dirs, bin_dir.to_path_buf());
        Ok(())
    }
}

/// The directory to mount for a program in `bin_dir`: the parent of a `bin` directory when
/// that parent is specific enough (at least two levels deep and not the home directory),
/// else the program's own directory.
fn installation_prefix(bin_dir: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if bin_dir.file_name().is_some_and(|n| n == "bin")
        && let Some(parent) = bin_dir.parent()
    {
        let deep_enough = parent.components().filter(|c| matches!(c, Component::Normal(_))).count() >= 2;
        if deep_enough && home.as_deref() != Some(parent) {
            return parent.to_path_buf();
        }
    }
    bin_dir.to_path_buf()
}

fn is_system_path(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// Refuses mounts that are relative, contain `..`, are `/`, or contain the harness's working
/// directory (which usually holds the task suite and the run store).
fn check_mountable(path: &Path) -> Result<(), SandboxError> {
    let bad = |reason: &str| Err(SandboxError::BadBind { path: path.to_path_buf(), reason: reason.to_string() });
    if !path.is_absolute() {
        return bad("expected an absolute path");
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return bad("expected a path without `..`");
    }
    if path == Path::new("/") {
        return bad("mounting / would expose the whole host");
    }
    if let Ok(cwd) = std::env::current_dir()
        && cwd.starts_with(path)
    {
        return bad("it contains the harness's working directory, which must stay private");
    }
    Ok(())
}

fn push_unique(list: &mut Vec<PathBuf>, path: PathBuf) {
    if !list.contains(&path) {
        list.push(path);
    }
}

/// Where the harness looks for host programs (bubblewrap, git, a task's tools) when `PATH`
/// is unset or empty (`env -i`, a bare service unit): Debian's default for root, which holds
/// the user's directories too.
pub(crate) const DEFAULT_SEARCH_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The host `PATH`, or [`DEFAULT_SEARCH_PATH`] when it is unset or empty.
pub(crate) fn search_path() -> std::ffi::OsString {
    std::env::var_os("PATH").filter(|p| !p.is_empty()).unwrap_or_else(|| DEFAULT_SEARCH_PATH.into())
}

/// The first executable `name` on [`search_path`] (or `name` itself when it is absolute).
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return (path.is_absolute() && is_executable(&path)).then_some(path);
    }
    std::env::split_paths(&search_path()).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// When `found` is a version-manager shim (a small script in a `shims/` directory that execs
/// the manager), asks the manager which real program it would run; otherwise returns `found`.
fn resolve_shim(name: &str, found: &Path) -> Result<PathBuf, SandboxError> {
    let in_shims_dir = found.parent().and_then(Path::file_name).is_some_and(|n| n == "shims");
    if !in_shims_dir {
        return Ok(found.to_path_buf());
    }
    let Ok(script) = std::fs::read_to_string(found) else {
        return Ok(found.to_path_buf()); // a binary in a `shims` directory is a real program
    };
    let Some(tool) = shim_tool(&script) else {
        return Ok(found.to_path_buf());
    };
    let unresolved = |reason: String| SandboxError::ShimUnresolved { name: name.to_string(), shim: found.to_path_buf(), reason };
    let output = Command::new(&tool).arg("which").arg(name).output().map_err(|e| unresolved(format!("cannot run {tool}: {e}")))?;
    if !output.status.success() {
        return Err(unresolved(format!("`{tool} which {name}` failed: {}", String::from_utf8_lossy(&output.stderr).trim())));
    }
    let real = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if !real.is_absolute() || !is_executable(&real) {
        return Err(unresolved(format!("`{tool} which {name}` printed `{}`, not an executable path", real.display())));
    }
    Ok(real)
}

/// The version-manager program a shim script execs (`exec "/root/.pyenv/libexec/pyenv" exec
/// ...` gives `/root/.pyenv/libexec/pyenv`), if it is one of [`SHIM_TOOLS`].
fn shim_tool(script: &str) -> Option<String> {
    if !script.starts_with("#!") {
        return None;
    }
    script.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("exec ")?;
        let token = rest.split_whitespace().next()?.trim_matches('"').trim_matches('\'');
        let file = Path::new(token).file_name()?.to_str()?;
        SHIM_TOOLS.contains(&file).then(|| token.to_string())
    })
}

/// File name, in the view's `/etc`, of an execute-only copy (mode 0111) of the host's
/// `/bin/sh`. A process that executes a program it cannot read is made non-dumpable by the
/// kernel, so the session's command server runs from this copy: commands, which run as the
/// same uid, then cannot open its `/proc/<pid>/fd`, `mem` or `environ`.
pub(crate) const SERVER_SHELL: &str = "specgap-server-sh";

/// Host `/etc` entries copied into every sandbox's `/etc` (when present): the dynamic loader's
/// cache, Debian's `alternatives` links (many `/usr/bin` programs point into them) and the time
/// zone link. Symbolic links are copied as links; their targets are under `/usr`.
const HOST_ETC: &[&str] = &["ld.so.cache", "alternatives", "localtime"];

/// The resolver an external agent's sandbox names in `/etc/resolv.conf`: the address of the
/// network tripwire's DNS responder (specgap-gateway `tripwire::RESOLVER`).
pub const AGENT_NAMESERVER: &str = "127.0.0.53";

/// Which `/etc` a sandbox gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EtcKind {
    /// Commands, evaluators, sessions: `hosts: files`, no resolver.
    Commands,
    /// An external agent: `hosts: files dns`, the tripwire as resolver.
    Agent,
}

/// The `/etc` directory of `kind` all live views share (its content never depends on the
/// view): written when no view holds one, removed when the last view holding it is dropped.
fn shared_etc(kind: EtcKind) -> Result<Arc<tempfile::TempDir>, SandboxError> {
    type Shared = std::sync::Mutex<std::sync::Weak<tempfile::TempDir>>;
    static COMMANDS: Shared = std::sync::Mutex::new(std::sync::Weak::new());
    static AGENT: Shared = std::sync::Mutex::new(std::sync::Weak::new());
    let slot = match kind {
        EtcKind::Commands => &COMMANDS,
        EtcKind::Agent => &AGENT,
    };
    let mut shared = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(etc) = shared.upgrade() {
        return Ok(etc);
    }
    let etc = Arc::new(write_etc(kind)?);
    *shared = Arc::downgrade(&etc);
    Ok(etc)
}

/// Prefix of a view's `/etc` directory; the owning process id follows.
const ETC_PREFIX: &str = "specgap-etc-";

/// Writes the `/etc` every sandbox of the view gets, mounted read-only as a whole: synthetic
/// `passwd`, `group`, `hosts` and `nsswitch.conf` (the host's are never shown; an agent's
/// also `resolv.conf`, [`EtcKind`]), copies of [`HOST_ETC`], and the command server's
/// execute-only shell.
fn write_etc(kind: EtcKind) -> Result<tempfile::TempDir, SandboxError> {
    let parent = scratch::parent();
    scratch::remove_dead_owners(&parent, ETC_PREFIX);
    let dir = tempfile::Builder::new().prefix(&format!("{ETC_PREFIX}{}-", std::process::id())).tempdir_in(&parent)?;
    for name in HOST_ETC {
        copy_host_etc(&Path::new("/etc").join(name), &dir.path().join(name))?;
    }
    let shell = dir.path().join(SERVER_SHELL);
    fs::copy(fs::canonicalize("/bin/sh")?, &shell)?;
    fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o111))?;
    let uid = SANDBOX_UID;
    let hosts_sources = match kind {
        EtcKind::Commands => "files",
        EtcKind::Agent => "files dns",
    };
    let mut files = vec![
        ("passwd", format!("specgap:x:{uid}:{uid}:specgap:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")),
        ("group", format!("specgap:x:{uid}:\nnogroup:x:65534:\n")),
        ("hosts", "127.0.0.1 localhost\n::1 localhost\n".to_string()),
        ("nsswitch.conf", format!("passwd: files\ngroup: files\nhosts: {hosts_sources}\n")),
    ];
    if kind == EtcKind::Agent {
        // Without a tripwire nothing answers there and a lookup fails at once, as with none.
        files.push(("resolv.conf", format!("nameserver {AGENT_NAMESERVER}\noptions timeout:2 attempts:1\n")));
    }
    for (name, text) in files {
        let path = dir.path().join(name);
        fs::write(&path, text)?;
        fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

/// Copies a file, a symbolic link (as a link) or a directory of them; a missing `from` is
/// skipped.
fn copy_host_etc(from: &Path, to: &Path) -> Result<(), SandboxError> {
    let Ok(meta) = std::fs::symlink_metadata(from) else { return Ok(()) };
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(from)?, to)?;
    } else if meta.is_dir() {
        fs::create_dir(to)?;
        for entry in fs::read_dir(from)? {
            let name = entry?.file_name();
            copy_host_etc(&from.join(&name), &to.join(&name))?;
        }
    } else if meta.is_file() {
        fs::copy(from, to)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyenv_shim_names_its_manager() {
        let script = "#!/usr/bin/env bash\nset -e\nexport PYENV_ROOT=\"/root/.pyenv\"\nexec \"/root/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n";
        assert_eq!(shim_tool(script).as_deref(), Some("/root/.pyenv/libexec/pyenv"));
        assert_eq!(shim_tool("#!/bin/sh\nexec /usr/bin/env python3 \"$@\"\n"), None);
        assert_eq!(shim_tool("\x7fELF"), None);
    }

    #[test]
    fn prefix_is_parent_of_bin_when_specific() {
        assert_eq!(installation_prefix(Path::new("/root/.pyenv/versions/3.11.7/bin")), PathBuf::from("/root/.pyenv/versions/3.11.7"));
        assert_eq!(installation_prefix(Path::new("/opt/bin")), PathBuf::from("/opt/bin"));
        assert_eq!(installation_prefix(Path::new("/opt/tool/libexec")), PathBuf::from("/opt/tool/libexec"));
    }

    #[test]
    fn etc_dirs_of_dead_processes_are_removed_and_live_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        // pid_max is at most 2^22, so this pid cannot be alive.
        let dead = parent.path().join(format!("{ETC_PREFIX}4194305-Ab12cd"));
        let live = parent.path().join(format!("{ETC_PREFIX}{}-Xy34ef", std::process::id()));
        let other = parent.path().join("specgap-etc-notapid");
        for dir in [&dead, &live, &other] {
            std::fs::create_dir(dir).unwrap();
        }
        scratch::remove_dead_owners(parent.path(), ETC_PREFIX);
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn only_an_agents_etc_resolves_names_through_the_tripwire() {
        let commands = HostView::system().unwrap();
        let agent = commands.for_agent().unwrap();
        let read = |view: &HostView, name: &str| std::fs::read_to_string(view.etc_dir().join(name)).ok();
        assert_eq!(read(&commands, "nsswitch.conf").as_deref(), Some("passwd: files\ngroup: files\nhosts: files\n"));
        assert_eq!(read(&commands, "resolv.conf"), None);
        assert_eq!(read(&agent, "nsswitch.conf").as_deref(), Some("passwd: files\ngroup: files\nhosts: files dns\n"));
        assert_eq!(read(&agent, "resolv.conf").as_deref(), Some("nameserver 127.0.0.53\noptions timeout:2 attempts:1\n"));
        assert_eq!(read(&agent, "passwd"), read(&commands, "passwd"));
    }

    #[test]
    fn mount_checks() {
        assert!(check_mountable(Path::new("relative")).is_err());
        assert!(check_mountable(Path::new("/")).is_err());
        assert!(check_mountable(Path::new("/opt/../etc")).is_err());
        assert!(check_mountable(Path::new("/opt/data")).is_ok());
    }
}
