//! Installing adapters into the versioned cache and finding installations again.
//!
//! Layout: `<root>/<adapter>/<version>/` where `<root>` is `$XDG_CACHE_HOME/specgap/agents`
//! (default `~/.cache/specgap/agents`). A pip installation holds `requirements.txt` (the
//! lock) and `venv/`; an npm one `package.json`, `package-lock.json` and `node_modules/`; both
//! end with `specgap-install.toml` ([`Manifest`]), written last. Installations are made in
//! place, not renamed into place, because a venv's scripts name their own absolute path; a
//! directory without a manifest is an interrupted installation and is replaced by the next
//! `install`. One installer at a time per adapter (an exclusive `flock` on
//! `<root>/<adapter>/.install.lock`), so parallel test processes share one installation.
//!
//! Nothing is run from the packages: npm install scripts are skipped (`--ignore-scripts`;
//! the adapters start the platform builds directly) and pip installs wheels and sdists only
//! with `--require-hashes` against the committed lock.

use std::io::Write as _;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sha2::{Digest as _, Sha256};

use crate::manifest::{MANIFEST_FORMAT, Manifest, ManifestError, NodeRuntime, PythonRuntime};
use crate::registry::{AdapterVersion, Entry, Installer, Lock};
use crate::tree::{TreeError, fingerprint, tree_hash};

/// Environment variable choosing the Python interpreter for pip installations.
pub const PYTHON_ENV: &str = "SPECGAP_PYTHON";
/// Environment variable choosing `node` for npm installations.
pub const NODE_ENV: &str = "SPECGAP_NODE";
/// The Python version the pip locks are generated for unless the adapter names another
/// ([`crate::registry::Adapter::python`]).
pub const LOCK_PYTHON: &str = "3.11";
/// Host directories every sandbox sees; a runtime prefix under one needs no mount.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Why an installation cannot be made or used.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` is set.
    #[error("cannot place the agent cache: neither XDG_CACHE_HOME nor HOME is set")]
    NoCacheDir,
    /// The version is not installed.
    #[error("cli agent {label} is not installed; install it with `specgap agents install {label}`")]
    NotInstalled {
        /// `<adapter>@<version>`.
        label: String,
    },
    /// An installation was interrupted.
    #[error("the installation of {label} in {} is incomplete (interrupted?); install it again with `specgap agents install {label}`", dir.display())]
    Incomplete {
        /// `<adapter>@<version>`.
        label: String,
        /// Its directory.
        dir: PathBuf,
    },
    /// Its files changed since it was installed.
    #[error(
        "the installation of {label} in {} changed since it was installed (tree hash {recorded} then, {now} now); reinstall it with `specgap agents install --force {label}`",
        dir.display()
    )]
    Changed {
        /// `<adapter>@<version>`.
        label: String,
        /// Its directory.
        dir: PathBuf,
        /// The recorded tree hash.
        recorded: String,
        /// The hash now.
        now: String,
    },
    /// The manifest names another adapter or version than its directory.
    #[error("{} holds a manifest of {found}, not {label}; remove it and install again", dir.display())]
    Mismatch {
        /// Expected `<adapter>@<version>`.
        label: String,
        /// What the manifest says.
        found: String,
        /// The directory.
        dir: PathBuf,
    },
    /// No suitable Python interpreter.
    #[error("{0}")]
    NoPython(String),
    /// No usable `node` / `npm`.
    #[error("{0}")]
    NoNode(String),
    /// An installer step failed.
    #[error("{what} failed ({status}){hint}\n{tail}")]
    Step {
        /// What was run, e.g. `pip install of mini-swe-agent 2.4.6`.
        what: String,
        /// Its exit status.
        status: String,
        /// A hint (network, missing module), with leading punctuation, or empty.
        hint: String,
        /// The last lines of its output.
        tail: String,
    },
    /// A program could not be started.
    #[error("cannot run {program}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The installed tree lacks the program to start.
    #[error("the installation of {label} has no {entry}; its package may have changed layout (install another version or report it)")]
    NoEntry {
        /// `<adapter>@<version>`.
        label: String,
        /// The entry path.
        entry: String,
    },
    /// A file operation failed.
    #[error("cannot prepare {}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The tree could not be hashed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The manifest could not be read or written.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io { path: path.to_path_buf(), source }
}

/// The cache root: `$XDG_CACHE_HOME/specgap/agents`, else `$HOME/.cache/specgap/agents`.
///
/// # Errors
/// [`InstallError::NoCacheDir`].
pub fn default_root() -> Result<PathBuf, InstallError> {
    let nonempty = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = match nonempty("XDG_CACHE_HOME") {
        Some(cache) => cache,
        None => nonempty("HOME").ok_or(InstallError::NoCacheDir)?.join(".cache"),
    };
    Ok(base.join("specgap").join("agents"))
}

/// `<root>/<adapter>/<version>`.
pub fn install_dir(root: &Path, version: &AdapterVersion) -> PathBuf {
    root.join(version.adapter.name).join(&version.version)
}

/// A complete installation found in the cache.
#[derive(Debug, Clone)]
pub struct Installation {
    dir: PathBuf,
    manifest: Manifest,
}

impl Installation {
    /// The installation of `version` under `root`, from its manifest (not yet verified).
    ///
    /// # Errors
    /// [`InstallError::NotInstalled`], [`InstallError::Incomplete`] or
    /// [`InstallError::Mismatch`], each naming the install command.
    pub fn open(root: &Path, version: &AdapterVersion) -> Result<Installation, InstallError> {
        let dir = install_dir(root, version);
        let label = version.label();
        if !dir.is_dir() {
            return Err(InstallError::NotInstalled { label });
        }
        if !dir.join(crate::tree::MANIFEST_FILE).is_file() {
            return Err(InstallError::Incomplete { label, dir });
        }
        let manifest = Manifest::read(&dir)?;
        if manifest.adapter != version.adapter.name || manifest.version != version.version {
            return Err(InstallError::Mismatch { label, found: format!("{}@{}", manifest.adapter, manifest.version), dir });
        }
        Ok(Installation { dir, manifest })
    }

    /// Checks that the tree is as installed: a matching fingerprint is enough (one `lstat`
    /// per file); otherwise the tree hash is computed again and must match the recorded one.
    ///
    /// # Errors
    /// [`InstallError::Changed`], or a failure to read the tree.
    pub fn verify(&self) -> Result<(), InstallError> {
        if fingerprint(&self.dir)? == self.manifest.fingerprint {
            return Ok(());
        }
        let now = tree_hash(&self.dir)?;
        if now == self.manifest.tree_hash {
            return Ok(());
        }
        Err(InstallError::Changed {
            label: format!("{}@{}", self.manifest.adapter, self.manifest.version),
            dir: self.dir.clone(),
            recorded: self.manifest.tree_hash.clone(),
            now,
        })
    }

    /// The installation directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The recorded tree hash.
    pub fn tree_hash(&self) -> &str {
        &self.manifest.tree_hash
    }

    /// The absolute path of the program to start.
    pub fn entry_path(&self) -> PathBuf {
        self.dir.join(&self.manifest.entry)
    }

    /// Host paths to mount read-only in the sandbox: the directory where the installation is
    /// found now, then the runtime's prefix. The manifest's first mount is the directory at
    /// installation time; a cache moved or copied since (a `target/` copied with its test
    /// cache, another `XDG_CACHE_HOME`) would otherwise mount a path that no longer exists.
    pub fn mounts(&self) -> Vec<PathBuf> {
        let recorded_dir = self.manifest.mounts.first();
        let mut mounts = vec![self.dir.clone()];
        mounts.extend(self.manifest.mounts.iter().filter(|m| Some(*m) != recorded_dir && **m != self.dir).cloned());
        mounts
    }
}

/// The tree hash of the installed `version` from the default cache, verified: what a `cli:`
/// agent's configuration records (its episode key changes with the installed tree).
///
/// # Errors
/// [`InstallError`]: not installed (naming the install command), incomplete, changed.
pub fn installed_tree_hash(version: &AdapterVersion) -> Result<String, InstallError> {
    let installation = Installation::open(&default_root()?, version)?;
    installation.verify()?;
    Ok(installation.tree_hash().to_string())
}

/// Options of [`install`].
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// Replace an existing complete installation.
    pub force: bool,
    /// The Python interpreter for pip installations (default: [`PYTHON_ENV`], else
    /// `python3.11` or `python3` on `PATH`).
    pub python: Option<PathBuf>,
}

/// What [`install`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// A new installation was made.
    Made,
    /// A complete, unchanged installation was already there.
    AlreadyThere,
}

/// Holds the per-adapter installer lock until dropped.
struct InstallLock {
    _file: std::fs::File,
}

impl InstallLock {
    fn take(path: &Path) -> Result<InstallLock, InstallError> {
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).map_err(io_error(path))?;
        // SAFETY: a valid descriptor; flock blocks until the lock is ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(InstallError::Io { path: path.to_path_buf(), source: std::io::Error::last_os_error() });
        }
        Ok(InstallLock { _file: file })
    }
}

/// Installs `version` under `root` from its committed lock (module guide), reporting steps
/// through `note`. An existing complete installation that verifies is kept unless
/// `options.force`.
///
/// # Errors
/// [`InstallError`]: no interpreter / node, a failing pip / npm (with the tail of its output
/// and a hint when it looks like the network), a missing entry, file errors.
pub fn install(
    root: &Path,
    version: &AdapterVersion,
    options: &InstallOptions,
    note: &mut dyn FnMut(&str),
) -> Result<(Installation, Installed), InstallError> {
    let adapter_dir = root.join(version.adapter.name);
    fs_err::create_dir_all(&adapter_dir).map_err(|e| InstallError::Io { path: adapter_dir.clone(), source: e })?;
    let _lock = InstallLock::take(&adapter_dir.join(".install.lock"))?;
    let dir = install_dir(root, version);
    match Installation::open(root, version) {
        Ok(existing) if !options.force && existing.verify().is_ok() => return Ok((existing, Installed::AlreadyThere)),
        Err(InstallError::NotInstalled { .. }) => {}
        _ => {
            note(&format!("removing the earlier installation in {}", dir.display()));
            std::fs::remove_dir_all(&dir).map_err(io_error(&dir))?;
        }
    }
    let lock = version.lock().ok_or_else(|| InstallError::NotInstalled { label: version.label() })?;
    std::fs::create_dir_all(&dir).map_err(io_error(&dir))?;
    let made = make(&dir, version, lock, options, note);
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let manifest = made?;
    manifest.write(&dir)?;
    Ok((Installation { dir, manifest }, Installed::Made))
}

fn make(
    dir: &Path,
    version: &AdapterVersion,
    lock: &Lock,
    options: &InstallOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Manifest, InstallError> {
    let mut lock_hash = Sha256::new();
    for (name, text) in lock.files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(io_error(&path))?;
        lock_hash.update(name.as_bytes());
        lock_hash.update([0]);
        lock_hash.update(text.as_bytes());
        lock_hash.update([0]);
    }
    let adapter = version.adapter;
    let mut mounts = vec![dir.to_path_buf()];
    let (python, node) = match adapter.installer {
        Installer::Pip => {
            let want = if adapter.python.is_empty() { LOCK_PYTHON } else { adapter.python };
            let python = find_python(options.python.as_deref(), want)?;
            note(&format!(
                "installing {} with pip into a Python {} venv (interpreter {})",
                version.label(),
                python.version,
                python.interpreter.display()
            ));
            install_pip(dir, version, &python)?;
            push_runtime_prefix(&mut mounts, &python.prefix);
            (Some(python), None)
        }
        Installer::Npm => {
            let node = find_node()?;
            note(&format!("installing {} with npm ci (node {} at {})", version.label(), node.version, node.path.display()));
            install_npm(dir, version)?;
            push_runtime_prefix(&mut mounts, &node.prefix);
            (None, Some(node))
        }
    };
    let entry = dir.join(adapter.entry.path());
    let usable = match adapter.entry {
        Entry::Program(_) => std::fs::metadata(&entry).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0),
        Entry::NodeScript(_) => entry.is_file(),
    };
    if !usable {
        return Err(InstallError::NoEntry { label: version.label(), entry: adapter.entry.path().to_string() });
    }
    note("hashing the installed tree");
    Ok(Manifest {
        format: MANIFEST_FORMAT,
        adapter: adapter.name.to_string(),
        package: adapter.package.to_string(),
        version: version.version.clone(),
        installer: adapter.installer.name().to_string(),
        lock_sha256: lock_hash.finalize().iter().map(|b| format!("{b:02x}")).collect(),
        tree_hash: tree_hash(dir)?,
        fingerprint: fingerprint(dir)?,
        entry: adapter.entry.path().to_string(),
        entry_is_node_script: matches!(adapter.entry, Entry::NodeScript(_)),
        mounts,
        specgap_version: env!("CARGO_PKG_VERSION").to_string(),
        installed_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        python,
        node,
    })
}

fn push_runtime_prefix(mounts: &mut Vec<PathBuf>, prefix: &Path) {
    if !SYSTEM_DIRS.iter().any(|dir| prefix.starts_with(dir)) && !mounts.iter().any(|m| m == prefix) {
        mounts.push(prefix.to_path_buf());
    }
}

fn run(command: &mut Command, program: &str) -> Result<Output, InstallError> {
    command.stdin(Stdio::null()).output().map_err(|source| InstallError::Spawn { program: program.to_string(), source })
}

/// The last `lines` lines of a command's stdout and stderr.
fn tail(output: &Output, lines: usize) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A hint for an installer's failure output.
fn hint(output_tail: &str, registry: &str) -> String {
    const NETWORK: &[&str] = &[
        "NewConnectionError",
        "Could not fetch",
        "Failed to establish a new connection",
        "Temporary failure in name resolution",
        "Name or service not known",
        "Connection refused",
        "ConnectTimeout",
        "Read timed out",
        "ENOTFOUND",
        "ETIMEDOUT",
        "EAI_AGAIN",
        "ECONNREFUSED",
        "ECONNRESET",
        "network",
    ];
    if NETWORK.iter().any(|n| output_tail.contains(n)) {
        return format!("; {registry} could not be reached: check the network (or proxy settings) and try again");
    }
    if output_tail.contains("No matching distribution found") {
        return format!(
            "; pip found no file of a locked package: {registry} could not be reached (check the network or proxy settings), or it has no build of that package for this interpreter and platform (each lock is for its adapter's Python version, {LOCK_PYTHON} unless it says otherwise, on linux x86_64)"
        );
    }
    if output_tail.contains("ensurepip") || output_tail.contains("No module named venv") {
        return "; this interpreter cannot make virtual environments (on Debian: apt-get install python3-venv)".to_string();
    }
    if output_tail.contains("THESE PACKAGES DO NOT MATCH THE HASHES") {
        return "; a downloaded file does not match the lock's hash (a changed or tampered package)".to_string();
    }
    String::new()
}

fn step(what: String, output: &Output, registry: &str) -> Result<(), InstallError> {
    if output.status.success() {
        return Ok(());
    }
    let tail = tail(output, 25);
    Err(InstallError::Step { what, status: output.status.to_string(), hint: hint(&tail, registry), tail })
}

const PYTHON_PROBE: &str = "import sys; print(sys.executable); print(sys.base_prefix); print('%d.%d.%d' % sys.version_info[:3])";

/// The interpreter for pip installations of a lock made for Python `want` (`3.11`, `3.12`):
/// `explicit`, else [`PYTHON_ENV`] when set and of that version, else the first of
/// `python<want>` and `python3` on `PATH` that is, else pyenv's `<root>/versions/<want>.*`
/// (`$PYENV_ROOT`, default `~/.pyenv`; a pyenv shim answers only for its selected version).
fn find_python(explicit: Option<&Path>, want: &str) -> Result<PythonRuntime, InstallError> {
    let from_env = std::env::var_os(PYTHON_ENV).filter(|v| !v.is_empty());
    let mut candidates: Vec<PathBuf> = Vec::new();
    match (explicit, &from_env) {
        (Some(path), _) => candidates.push(path.to_path_buf()),
        (None, env) => {
            candidates.extend(env.iter().map(PathBuf::from));
            candidates.push(PathBuf::from(format!("python{want}")));
            candidates.push(PathBuf::from("python3"));
            candidates.extend(pyenv_pythons(want));
        }
    }
    let mut seen = Vec::new();
    for candidate in &candidates {
        let Ok(output) = Command::new(candidate).arg("-c").arg(PYTHON_PROBE).stdin(Stdio::null()).output() else {
            seen.push(format!("{}: not found", candidate.display()));
            continue;
        };
        let text = String::from_utf8_lossy(&output.stdout);
        let lines: Vec<&str> = text.lines().collect();
        match lines.as_slice() {
            [executable, prefix, version] if output.status.success() => {
                if version.starts_with(&format!("{want}.")) {
                    return Ok(PythonRuntime {
                        interpreter: PathBuf::from(executable),
                        prefix: PathBuf::from(prefix),
                        version: (*version).to_string(),
                    });
                }
                seen.push(format!("{}: Python {version}", candidate.display()));
            }
            _ => seen.push(format!("{}: does not run as Python", candidate.display())),
        }
    }
    Err(InstallError::NoPython(format!(
        "this pip lock is made for Python {want}, and no Python {want} interpreter was found ({}); install Python {want} or set {PYTHON_ENV} to one",
        seen.join("; ")
    )))
}

/// pyenv's interpreters of Python `want`, newest patch release first.
fn pyenv_pythons(want: &str) -> Vec<PathBuf> {
    let root = std::env::var_os("PYENV_ROOT")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".pyenv")));
    let Some(versions) = root.map(|r| r.join("versions")) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(&versions) else { return Vec::new() };
    let mut found: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let patch = name.strip_prefix(&format!("{want}."))?.parse::<u32>().ok()?;
            let python = e.path().join("bin").join(format!("python{want}"));
            python.is_file().then_some((patch, python))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, p)| p).collect()
}

fn install_pip(dir: &Path, version: &AdapterVersion, python: &PythonRuntime) -> Result<(), InstallError> {
    let venv = dir.join("venv");
    let output = run(Command::new(&python.interpreter).arg("-m").arg("venv").arg(&venv), &python.interpreter.display().to_string())?;
    step(format!("making a virtual environment with {}", python.interpreter.display()), &output, "PyPI")?;
    let venv_python = venv.join("bin/python");
    let output = run(
        Command::new(&venv_python)
            .args([
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--require-hashes",
                "--no-input",
                "--disable-pip-version-check",
                "--no-warn-script-location",
            ])
            .args(["-r", "requirements.txt"])
            .current_dir(dir)
            .env("PIP_NO_INPUT", "1"),
        "pip",
    )?;
    step(format!("pip install of {}", version.label()), &output, "PyPI")
}

const NODE_PROBE: &str = "process.execPath + '\\n' + process.version";

fn find_node() -> Result<NodeRuntime, InstallError> {
    let node = std::env::var_os(NODE_ENV).filter(|v| !v.is_empty()).map_or_else(|| PathBuf::from("node"), PathBuf::from);
    let missing = |why: String| {
        InstallError::NoNode(format!(
            "npm agents need Node.js and npm: {why}; install Node.js 20 or newer with npm, or set {NODE_ENV} to a node"
        ))
    };
    let output = Command::new(&node)
        .arg("-p")
        .arg(NODE_PROBE)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing(format!("cannot run {}: {e}", node.display())))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let [path, version] = text.lines().collect::<Vec<_>>()[..] else {
        return Err(missing(format!("{} does not run as node", node.display())));
    };
    let path = PathBuf::from(path);
    let prefix = path.parent().and_then(Path::parent).map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
    match Command::new("npm").arg("--version").stdin(Stdio::null()).output() {
        Ok(output) if output.status.success() => {}
        _ => return Err(missing("npm is not on PATH".into())),
    }
    Ok(NodeRuntime { path, prefix, version: version.to_string() })
}

fn install_npm(dir: &Path, version: &AdapterVersion) -> Result<(), InstallError> {
    let output = run(
        Command::new("npm")
            .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir)
            .env("npm_config_update_notifier", "false"),
        "npm",
    )?;
    step(format!("npm ci of {}", version.label()), &output, "the npm registry")
}

/// One entry of the cache as `specgap agents list` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The adapter directory's name.
    pub adapter: String,
    /// The version directory's name.
    pub version: String,
    /// Its state.
    pub state: ListedState,
    /// Whether it is the adapter's pinned default version.
    pub is_default: bool,
}

/// The state of a listed installation.
#[derive(Debug, Clone)]
pub enum ListedState {
    /// Complete; the fingerprint matches.
    Ready(Box<Manifest>),
    /// Complete, but its files' metadata changed since installation (`run` rehashes it).
    Modified(Box<Manifest>),
    /// No manifest: interrupted.
    Incomplete,
    /// The manifest cannot be read.
    Unreadable(String),
}

/// Every installation under `root`, sorted by adapter and version (an absent root lists
/// nothing).
///
/// # Errors
/// [`InstallError::Io`] when the cache cannot be read.
pub fn list(root: &Path) -> Result<Vec<Listed>, InstallError> {
    let mut listed = Vec::new();
    let Ok(adapters) = std::fs::read_dir(root) else { return Ok(listed) };
    for adapter_entry in adapters {
        let adapter_entry = adapter_entry.map_err(io_error(root))?;
        if !adapter_entry.file_type().map_err(io_error(root))?.is_dir() {
            continue;
        }
        let adapter = adapter_entry.file_name().to_string_lossy().into_owned();
        let default = crate::registry::adapter(&adapter).map(|a| a.default_version);
        for version_entry in std::fs::read_dir(adapter_entry.path()).map_err(io_error(&adapter_entry.path()))? {
            let version_entry = version_entry.map_err(io_error(root))?;
            let name = version_entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !version_entry.file_type().map_err(io_error(root))?.is_dir() {
                continue;
            }
            let dir = version_entry.path();
            let state = if !dir.join(crate::tree::MANIFEST_FILE).is_file() {
                ListedState::Incomplete
            } else {
                match Manifest::read(&dir) {
                    Err(e) => ListedState::Unreadable(e.to_string()),
                    Ok(manifest) => match fingerprint(&dir) {
                        Ok(print) if print == manifest.fingerprint => ListedState::Ready(Box::new(manifest)),
                        _ => ListedState::Modified(Box::new(manifest)),
                    },
                }
            };
            listed.push(Listed { is_default: default == Some(name.as_str()), adapter: adapter.clone(), version: name, state });
        }
    }
    listed.sort_by(|a, b| (&a.adapter, &a.version).cmp(&(&b.adapter, &b.version)));
    Ok(listed)
}

/// Writes `text` to standard error (progress notes of the CLI).
pub fn note_to_stderr(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_recognise_network_and_venv_failures() {
        assert_eq!(
            hint("WARNING: Retrying ... NewConnectionError('<...>: Failed to establish a new connection')", "PyPI"),
            "; PyPI could not be reached: check the network (or proxy settings) and try again"
        );
        assert_eq!(
            hint("npm error code EAI_AGAIN", "the npm registry"),
            "; the npm registry could not be reached: check the network (or proxy settings) and try again"
        );
        assert!(hint("Error: Command '['/x/venv/bin/python3', '-Im', 'ensurepip']' returned non-zero", "PyPI").contains("python3-venv"));
        assert!(
            hint("ERROR: No matching distribution found for aiohappyeyeballs==2.7.1", "PyPI")
                .starts_with("; pip found no file of a locked package: PyPI could not be reached")
        );
        assert_eq!(hint("ERROR: some other failure", "PyPI"), "");
    }

    #[test]
    fn runtime_prefixes_under_system_directories_need_no_mount() {
        let mut mounts = vec![PathBuf::from("/cache/x/1")];
        push_runtime_prefix(&mut mounts, Path::new("/usr"));
        push_runtime_prefix(&mut mounts, Path::new("/root/.pyenv/versions/3.11.7"));
        push_runtime_prefix(&mut mounts, Path::new("/root/.pyenv/versions/3.11.7"));
        assert_eq!(mounts, [PathBuf::from("/cache/x/1"), PathBuf::from("/root/.pyenv/versions/3.11.7")]);
    }

    #[test]
    fn a_moved_cache_mounts_the_installation_where_it_is_now_not_where_it_was_installed() {
        let root = tempfile::tempdir().unwrap();
        let version = AdapterVersion::parse("gemini-cli").unwrap();
        let dir = install_dir(root.path(), &version);
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            adapter: version.adapter.name.to_string(),
            package: version.adapter.package.to_string(),
            version: version.version.clone(),
            installer: "npm".into(),
            lock_sha256: String::new(),
            tree_hash: String::new(),
            fingerprint: String::new(),
            entry: version.adapter.entry.path().to_string(),
            entry_is_node_script: true,
            mounts: vec![PathBuf::from("/tmp/gone/specgap/agents/gemini-cli/0.61.0"), PathBuf::from("/opt/node-20")],
            specgap_version: "0.1.0".into(),
            installed_at: 0,
            python: None,
            node: None,
        };
        manifest.write(&dir).unwrap();
        let installation = Installation::open(root.path(), &version).unwrap();
        assert_eq!(installation.mounts(), [dir.clone(), PathBuf::from("/opt/node-20")]);
    }

    #[test]
    fn an_absent_cache_lists_nothing_and_an_absent_version_names_the_install_command() {
        let dir = tempfile::tempdir().unwrap();
        assert!(list(&dir.path().join("none")).unwrap().is_empty());
        let version = AdapterVersion::parse("codex").unwrap();
        assert_eq!(
            Installation::open(dir.path(), &version).unwrap_err().to_string(),
            "cli agent codex@0.171.0 is not installed; install it with `specgap agents install codex@0.171.0`"
        );
        std::fs::create_dir_all(install_dir(dir.path(), &version)).unwrap();
        assert!(matches!(Installation::open(dir.path(), &version), Err(InstallError::Incomplete { .. })));
        assert!(matches!(list(dir.path()).unwrap()[0].state, ListedState::Incomplete));
    }
}
