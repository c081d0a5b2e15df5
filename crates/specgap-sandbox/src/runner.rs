//! The bubblewrap runner (DESIGN §3.2): [`run`] executes one [`CommandSpec`] in a fresh
//! sandbox and returns its [`CommandOutput`].
//!
//! # What a sandboxed command sees
//! - user and group 1000 in a new user namespace, no capabilities, no way to create further
//!   user namespaces, a seccomp filter refusing `ptrace` and similar calls;
//! - new PID, network (loopback only, nothing else), IPC, UTS and cgroup namespaces;
//! - read-only `/usr` (and the `/bin`, `/sbin`, `/lib*` links or directories), a handful of
//!   `/etc` files (the loader cache, `alternatives`, `localtime`, and synthetic `passwd`,
//!   `group`, `hosts`, `nsswitch.conf` — nothing else of the host's `/etc`), fresh `/proc` and
//!   `/dev`, a private tmpfs `/tmp` (also `HOME`);
//! - the [`HostView`]'s read-only mounts, and the spec's [`Mount`]s (normally the workspace,
//!   writable, at [`WORKSPACE_MOUNT`], which is also the working directory);
//! - a clean environment: `PATH`, `HOME`, `TMPDIR`, `LANG`, `USER`, `TERM`, then the task's
//!   `[environment].env`, then the spec's `env` (later entries win).
//!
//! # How it ends
//! The wall-clock timeout kills bubblewrap's process group; bubblewrap's `--die-with-parent`
//! and the PID namespace then take every process of the sandbox with it, and every process
//! still in the command's cgroup is killed as well, so nothing survives the command.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::capture::Captured;
use crate::cgroup::Cgroups;
use crate::error::SandboxError;
use crate::host::{self, HostView, SANDBOX_UID};
use crate::netns::{self, Lease};
use crate::seccomp;
use crate::shellwords;
use crate::spawn::{self, SpawnRequest, Spawned};

/// Where the workspace is mounted inside the sandbox, and the default working directory.
pub const WORKSPACE_MOUNT: &str = "/workspace";

/// Top-level host entries that are a directory or a link into `/usr`.
const SYSTEM_TOP: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/// Sandbox paths a spec mount may not cover.
const RESERVED: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/dev"];

/// Variables holding a sandbox path the harness chose, moved with an image's placement.
const PLACED_VARS: [&str; 4] = ["PWD", "SPECGAP_WORKSPACE", "SPECGAP_OUT", "SPECGAP_CANDIDATE"];

/// Fd numbers inside bwrap: argument list, seccomp program, JSON status stream.
const FD_ARGS: RawFd = 3;
const FD_SECCOMP: RawFd = 4;
const FD_STATUS: RawFd = 5;

/// What to execute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Program {
    /// A shell command string, run as `/bin/sh -c <string>`.
    Shell(String),
    /// A program and its arguments, looked up on the sandbox `PATH`.
    Argv(Vec<String>),
}

/// A host path made visible inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Existing host path.
    pub host: PathBuf,
    /// Absolute path inside the sandbox (not `/` and not under a system directory).
    pub sandbox: PathBuf,
    /// Whether the command may write to it.
    pub writable: bool,
}

/// Resource limits of one command (DESIGN §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall-clock limit; at expiry the whole process tree is killed.
    pub timeout: Duration,
    /// Maximum number of processes (cgroup `pids.max`), `None` for no limit.
    pub max_processes: Option<u32>,
    /// Maximum memory in bytes (cgroup v1 `memory.limit_in_bytes`, v2 `memory.max`), `None`
    /// for no limit.
    pub memory_bytes: Option<u64>,
    /// Bytes of each of stdout and stderr kept: the first half and the last half; the middle
    /// is counted (bytes and line breaks) and left out (see [`Captured`]).
    pub output_bytes: usize,
}

impl Default for Limits {
    /// 60 s, 512 processes, 4 GiB, 256 KiB of each stream.
    fn default() -> Self {
        Limits { timeout: Duration::from_secs(60), max_processes: Some(512), memory_bytes: Some(4 << 30), output_bytes: 256 << 10 }
    }
}

impl Limits {
    /// Why each of the process and memory limits these limits ask for cannot be applied on
    /// this machine, one phrase per limit (naming the cgroup controller and the cause: no
    /// hierarchy holds it, it is not delegated, a control file is not writable); empty when
    /// every limit asked for can be. Probes by making and removing a cgroup with the limit set,
    /// exactly as a command's group is made (DESIGN §3.2; `specgap run --require-limits`).
    pub fn unavailable(&self) -> Vec<String> {
        crate::cgroup::unavailable(self.max_processes.is_some(), self.memory_bytes.is_some())
    }
}

/// One command to run in a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// What to execute.
    pub program: Program,
    /// Host paths visible inside, in order (later mounts may cover earlier ones).
    pub mounts: Vec<Mount>,
    /// Working directory inside the sandbox (absolute).
    pub cwd: PathBuf,
    /// Extra environment, applied after the task's `[environment].env`.
    pub env: BTreeMap<String, String>,
    /// Bytes fed on standard input (empty: standard input is `/dev/null`).
    pub stdin: Vec<u8>,
    /// Limits.
    pub limits: Limits,
}

impl CommandSpec {
    /// `/bin/sh -c <command>` with `workspace` mounted writable at [`WORKSPACE_MOUNT`] as the
    /// working directory, default [`Limits`].
    pub fn shell(command: impl Into<String>, workspace: &Path) -> Self {
        Self::with_program(Program::Shell(command.into()), workspace)
    }

    /// `argv` (program looked up on the sandbox `PATH`) with `workspace` mounted as in
    /// [`CommandSpec::shell`].
    pub fn argv(argv: Vec<String>, workspace: &Path) -> Self {
        Self::with_program(Program::Argv(argv), workspace)
    }

    fn with_program(program: Program, workspace: &Path) -> Self {
        CommandSpec {
            program,
            mounts: vec![Mount { host: workspace.to_path_buf(), sandbox: PathBuf::from(WORKSPACE_MOUNT), writable: true }],
            cwd: PathBuf::from(WORKSPACE_MOUNT),
            env: BTreeMap::new(),
            stdin: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// Sets the wall-clock timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.limits.timeout = timeout;
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets standard input.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// Adds a read-only mount.
    pub fn read_only(mut self, host: impl Into<PathBuf>, sandbox: impl Into<PathBuf>) -> Self {
        self.mounts.push(Mount { host: host.into(), sandbox: sandbox.into(), writable: false });
        self
    }
}

/// How commands are run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxConfig {
    /// `false` (`--no-sandbox`) runs commands directly on the host with the same environment,
    /// timeout and cgroup limits but no isolation; every command logs a warning.
    pub enabled: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig { enabled: true }
    }
}

impl SandboxConfig {
    /// Checks that commands can run: with the sandbox enabled, `bwrap` must be on `PATH`.
    ///
    /// # Errors
    /// [`SandboxError::BwrapMissing`].
    pub fn check(&self) -> Result<(), SandboxError> {
        if self.enabled && bwrap_path().is_none() {
            return Err(SandboxError::BwrapMissing);
        }
        Ok(())
    }

    /// The path by which a command run under this configuration sees `mount`: its sandbox
    /// path when sandboxed, its host path when the sandbox is disabled.
    pub fn visible_path<'a>(&self, mount: &'a Mount) -> &'a Path {
        if self.enabled { &mount.sandbox } else { &mount.host }
    }
}

/// What a command did. A non-zero exit, a timeout or cut output are results, not errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandOutput {
    /// Exit code; `None` when killed by a signal (or on timeout).
    pub exit_code: Option<i32>,
    /// Whether the wall-clock limit killed it.
    pub timed_out: bool,
    /// Whether the memory limit killed a process of it.
    pub memory_exceeded: bool,
    /// Standard output: head and tail kept, with the exact size of the whole stream.
    pub stdout: Captured,
    /// Standard error: head and tail kept, with the exact size of the whole stream.
    pub stderr: Captured,
    /// Wall-clock time from start to exit.
    pub duration: Duration,
    /// Whether it ran inside bubblewrap.
    pub sandboxed: bool,
}

impl CommandOutput {
    /// Exit code 0 and no timeout.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// The first `bwrap` on the harness's `PATH`, looked up once.
pub(crate) fn bwrap_path() -> Option<PathBuf> {
    static BWRAP: OnceLock<Option<PathBuf>> = OnceLock::new();
    BWRAP.get_or_init(|| host::find_on_path("bwrap")).clone()
}

/// Runs `spec` in a fresh sandbox (or, with `config.enabled == false`, directly on the host
/// with a warning) and waits for it, enforcing `spec.limits`.
///
/// # Errors
/// [`SandboxError::BwrapMissing`] when enabled without bubblewrap; [`SandboxError::InvalidSpec`]
/// and [`SandboxError::BadBind`] for an unusable spec; [`SandboxError::Setup`] when bubblewrap
/// could not build the sandbox; [`SandboxError::Spawn`] / [`SandboxError::Io`] otherwise.
pub fn run(spec: &CommandSpec, host: &HostView, config: &SandboxConfig) -> Result<CommandOutput, SandboxError> {
    validate(spec)?;
    let env = environment(spec, host, config);
    if !config.enabled
        && let Some(rootfs) = host.rootfs()
    {
        return Err(SandboxError::InvalidSpec(format!(
            "an image environment ({}) runs only in the sandbox; --no-sandbox would run the command on the host's files",
            rootfs.display()
        )));
    }
    if config.enabled {
        let bwrap = bwrap_path().ok_or(SandboxError::BwrapMissing)?;
        run_bwrap(&bwrap, spec, host, env)
    } else {
        tracing::warn!("sandbox disabled (--no-sandbox): running {:?} directly on the host", program_text(&spec.program));
        run_unsandboxed(spec, env)
    }
}

fn program_text(program: &Program) -> String {
    match program {
        Program::Shell(cmd) => cmd.clone(),
        Program::Argv(argv) => argv.join(" "),
    }
}

pub(crate) fn validate(spec: &CommandSpec) -> Result<(), SandboxError> {
    let invalid = |msg: String| Err(SandboxError::InvalidSpec(msg));
    if let Program::Argv(argv) = &spec.program
        && argv.is_empty()
    {
        return invalid("expected a non-empty argv".into());
    }
    if !is_clean_absolute(&spec.cwd) {
        return invalid(format!("working directory {} must be an absolute path without `..`", spec.cwd.display()));
    }
    for mount in &spec.mounts {
        let dest = &mount.sandbox;
        if !is_clean_absolute(dest) || dest == Path::new("/") {
            return invalid(format!("mount point {} must be an absolute path other than / without `..`", dest.display()));
        }
        if RESERVED.iter().any(|r| dest.starts_with(r)) {
            return invalid(format!("mount point {} would cover a system directory", dest.display()));
        }
        if !mount.host.exists() {
            return Err(SandboxError::BadBind { path: mount.host.clone(), reason: "expected an existing host path".into() });
        }
    }
    Ok(())
}

fn is_clean_absolute(path: &Path) -> bool {
    path.is_absolute() && !path.components().any(|c| c == Component::ParentDir)
}

/// The command's environment: base variables, then `[environment].env`, then the spec's.
pub(crate) fn environment(spec: &CommandSpec, host: &HostView, config: &SandboxConfig) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let path = if config.enabled {
        host.path_var()
    } else {
        // Unsandboxed, also keep the harness's PATH so host-only programs stay reachable.
        let mut p = host.path_var();
        if let Ok(own) = std::env::var("PATH") {
            p = format!("{p}:{own}");
        }
        p
    };
    env.insert("PATH".to_string(), path);
    env.insert("HOME".to_string(), "/tmp".to_string());
    env.insert("TMPDIR".to_string(), "/tmp".to_string());
    env.insert("LANG".to_string(), "C.UTF-8".to_string());
    env.insert("USER".to_string(), "specgap".to_string());
    env.insert("LOGNAME".to_string(), "specgap".to_string());
    env.insert("TERM".to_string(), "dumb".to_string());
    if config.enabled {
        // What a shell would export; programs started without one still find it.
        env.insert("PWD".to_string(), spec.cwd.display().to_string());
    }
    env.extend(host.env().iter().map(|(k, v)| (k.clone(), v.clone())));
    env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(image) = host.rootfs_view() {
        // The harness's own paths, moved where the image's package wants them.
        for key in PLACED_VARS {
            if let Some(value) = env.get_mut(key) {
                *value = image.place(Path::new(value.as_str())).display().to_string();
            }
        }
    }
    env
}

/// bubblewrap's arguments, up to and including `--`; with `json_status`, bubblewrap reports
/// the sandbox's pid and the command's exit on [`FD_STATUS`]; with `pooled_net`, the sandbox
/// stays in the network namespace bubblewrap is started in (one from [`crate::netns`]).
fn bwrap_args(spec: &CommandSpec, host: &HostView, json_status: bool, pooled_net: bool) -> Vec<Vec<u8>> {
    let mut args: Vec<Vec<u8>> = Vec::new();
    let mut push = |parts: &[&[u8]]| args.extend(parts.iter().map(|p| p.to_vec()));
    let uid = SANDBOX_UID.to_string();
    if pooled_net {
        push(&[b"--unshare-user", b"--unshare-ipc", b"--unshare-pid", b"--unshare-uts", b"--unshare-cgroup-try"]);
    } else {
        push(&[b"--unshare-all", b"--unshare-user"]);
    }
    push(&[b"--disable-userns"]);
    push(&[b"--uid", uid.as_bytes(), b"--gid", uid.as_bytes()]);
    push(&[b"--cap-drop", b"ALL", b"--die-with-parent", b"--new-session", b"--hostname", b"specgap"]);
    if let Some(image) = host.rootfs_view() {
        args.extend(image.bwrap_args(host.etc_dir()));
    } else {
        host_system_args(&mut args, host);
    }
    let mut push = |parts: &[&[u8]]| args.extend(parts.iter().map(|p| p.to_vec()));
    // /proc/1 is bubblewrap's own init; its memory is nobody's business.
    push(&[b"--proc", b"/proc", b"--ro-bind", b"/dev/null", b"/proc/1/mem", b"--dev", b"/dev", b"--tmpfs", b"/tmp"]);
    for path in host.read_only_mounts() {
        push(&[b"--ro-bind", path.as_os_str().as_bytes(), path.as_os_str().as_bytes()]);
    }
    let place = |path: &Path| host.rootfs_view().map_or_else(|| path.to_path_buf(), |image| image.place(path));
    // An image's `/run` is shown read-only: mounts below `/run/specgap` (an agent's task
    // files, harness tools, host runtime) get a tmpfs there, made read-only once they are in.
    let run_tmpfs = host.rootfs_view().is_some_and(|image| spec.mounts.iter().any(|m| image.run_tmpfs_needed(&place(&m.sandbox))));
    if run_tmpfs {
        push(&[b"--tmpfs", crate::rootfs::RUN_MOUNT.as_bytes()]);
    }
    for mount in &spec.mounts {
        let flag: &[u8] = if mount.writable { b"--bind" } else { b"--ro-bind" };
        push(&[flag, mount.host.as_os_str().as_bytes(), place(&mount.sandbox).as_os_str().as_bytes()]);
    }
    if run_tmpfs {
        push(&[b"--remount-ro", crate::rootfs::RUN_MOUNT.as_bytes()]);
    }
    // The sandbox's root is bubblewrap's tmpfs; make it (and the directories bubblewrap
    // created in it, such as /etc) read-only. Mounted paths keep their own flags.
    push(&[b"--remount-ro", b"/"]);
    push(&[b"--chdir", place(&spec.cwd).as_os_str().as_bytes()]);
    let seccomp_fd = FD_SECCOMP.to_string();
    push(&[b"--seccomp", seccomp_fd.as_bytes()]);
    if json_status {
        let status_fd = FD_STATUS.to_string();
        push(&[b"--json-status-fd", status_fd.as_bytes()]);
    }
    args
}

/// The host's system view: read-only `/usr`, the top-level links or directories into it,
/// and the synthetic `/etc`.
fn host_system_args(args: &mut Vec<Vec<u8>>, host: &HostView) {
    let mut push = |parts: &[&[u8]]| args.extend(parts.iter().map(|p| p.to_vec()));
    push(&[b"--ro-bind", b"/usr", b"/usr"]);
    for top in SYSTEM_TOP {
        match std::fs::symlink_metadata(top) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(top) {
                    push(&[b"--symlink", target.as_os_str().as_bytes(), top.as_bytes()]);
                }
            }
            Ok(meta) if meta.is_dir() => push(&[b"--ro-bind", top.as_bytes(), top.as_bytes()]),
            _ => {}
        }
    }
    // One mount for all of /etc: bubblewrap rereads the mount table after every bind, so each
    // mount saved is worth more than the one before it.
    push(&[b"--ro-bind", host.etc_dir().as_os_str().as_bytes(), b"/etc"]);
}

/// The command line bubblewrap execs: a shell command made only of words (no expansion,
/// redirection or built-in) runs as those words, as the shell itself would have run it, and
/// saves starting the shell; anything else runs under `/bin/sh -c`.
fn sandboxed_argv(program: &Program) -> Vec<String> {
    match program {
        Program::Shell(cmd) => match shellwords::simple_words(cmd) {
            Some(words) if !shellwords::is_builtin(&words[0]) => words,
            _ => vec!["/bin/sh".to_string(), "-c".to_string(), cmd.clone()],
        },
        Program::Argv(list) => list.clone(),
    }
}

/// The host pid of the sandbox's PID-namespace init, from bubblewrap's JSON status stream.
fn namespace_init_pid(status_stream: &[u8]) -> Option<libc::pid_t> {
    let text = String::from_utf8_lossy(status_stream);
    let rest = text.split("\"child-pid\":").nth(1)?;
    rest.trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Waits (at most 5 s) until `pid` has exited (gone, or a zombie).
fn wait_until_gone(pid: libc::pid_t) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut pause = Duration::from_micros(50);
    while Instant::now() < deadline {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return };
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
    tracing::warn!("sandbox init {pid} still running 5 s after its namespace was killed");
}

/// Whether bubblewrap's JSON status stream reports the command's exit. bubblewrap writes
/// `"exit-code"` only when the sandbox was set up and the command ran to its end, so its
/// absence (without a timeout) means the sandbox never started.
fn reports_exit(status_stream: &[u8]) -> bool {
    status_stream.windows(b"\"exit-code\"".len()).any(|w| w == b"\"exit-code\"")
}

pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    Ok(spawn::pipe()?)
}

/// A pipe whose read end already holds `bytes` (writer closed), for data bubblewrap reads once.
fn filled_pipe(bytes: &[u8]) -> Result<OwnedFd, SandboxError> {
    let (read, write) = pipe()?;
    if bytes.len() <= 60 * 1024 {
        let mut file = std::fs::File::from(write);
        file.write_all(bytes)?;
    } else {
        let data = bytes.to_vec();
        std::thread::spawn(move || {
            let mut file = std::fs::File::from(write);
            let _ = file.write_all(&data);
        });
    }
    Ok(read)
}

fn run_bwrap(bwrap: &Path, spec: &CommandSpec, host: &HostView, env: BTreeMap<String, String>) -> Result<CommandOutput, SandboxError> {
    let (status_read, status_write) = pipe()?;
    let stdin = if spec.stdin.is_empty() { spawn::Stdio::Null } else { spawn::Stdio::Piped };
    let start = Instant::now();
    let launched = launch_bwrap(
        bwrap,
        spec,
        host,
        &env,
        &sandboxed_argv(&spec.program),
        &[(status_write.as_raw_fd(), FD_STATUS)],
        [stdin, spawn::Stdio::Piped, spawn::Stdio::Piped],
        true,
        false,
    )?;
    drop(status_write);
    let mut output = collect(launched.child, spec, launched.cgroups, launched.lease, true, start)?;
    let mut status_stream = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::fs::File::from(status_read), &mut status_stream);
    if output.timed_out
        && let Some(init) = namespace_init_pid(&status_stream)
    {
        // Killing bubblewrap makes the kernel kill its PID namespace; the namespace's init
        // finishes exiting only after every process in it is gone, so wait for that.
        wait_until_gone(init);
    }
    if !reports_exit(&status_stream) && !output.timed_out {
        // The sandbox was built but the program could not be executed: that is the command's
        // failure (as a shell reports it: 127 not found, 126 not executable), not the sandbox's.
        let stderr = output.stderr.text();
        if let Some(line) = stderr.lines().last().filter(|l| l.starts_with("bwrap: execvp ")) {
            output.exit_code = Some(if line.ends_with("No such file or directory") { 127 } else { 126 });
            return Ok(output);
        }
        return Err(SandboxError::Setup {
            status: output.exit_code.map_or_else(|| "killed".to_string(), |c| c.to_string()),
            stderr: output.stderr.text().trim().to_string(),
        });
    }
    Ok(output)
}

fn run_unsandboxed(spec: &CommandSpec, env: BTreeMap<String, String>) -> Result<CommandOutput, SandboxError> {
    let cwd = host_path_of(spec, &spec.cwd)?;
    let mut cmd = match &spec.program {
        Program::Shell(text) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(text);
            c
        }
        Program::Argv(argv) => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    cmd.env_clear().envs(&env).current_dir(&cwd);
    let cgroups = Cgroups::create(spec.limits.max_processes, spec.limits.memory_bytes);
    prepare_child(&mut cmd, &cgroups, &[]);
    let program = PathBuf::from(match &spec.program {
        Program::Shell(_) => "/bin/sh".to_string(),
        Program::Argv(argv) => argv[0].clone(),
    });
    cmd.stdin(if spec.stdin.is_empty() { Stdio::null() } else { Stdio::piped() }).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let child = cmd.spawn().map_err(|source| SandboxError::Spawn { program, source })?;
    collect(Spawned::from_child(child), spec, cgroups, None, false, start)
}

/// A started bubblewrap: the process, the cgroups it was moved into, and the pooled network
/// namespace it lives in (if any; it goes back once the cgroups are empty).
pub(crate) struct Launched {
    pub child: Spawned,
    pub cgroups: Cgroups,
    pub lease: Option<Lease>,
}

/// Starts bubblewrap for `spec` (its mounts, working directory and process / memory limits)
/// running `program`, with `env`, the harness fds `fds` handed over at their sandbox numbers
/// besides the argument list and the seccomp filter, and `stdio` as its standard streams; with
/// `freezer`, the sandbox also gets a cgroup-v1 `freezer` group. The caller closes its own
/// copies of the fds in `fds` afterwards.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_bwrap(
    bwrap: &Path,
    spec: &CommandSpec,
    host: &HostView,
    env: &BTreeMap<String, String>,
    program: &[String],
    fds: &[(RawFd, RawFd)],
    stdio: [spawn::Stdio; 3],
    json_status: bool,
    freezer: bool,
) -> Result<Launched, SandboxError> {
    if let Some(image) = host.rootfs_view() {
        let placed: Vec<PathBuf> = spec.mounts.iter().map(|m| image.place(&m.sandbox)).collect();
        image.prepare_mount_points(placed.iter().map(PathBuf::as_path))?;
    }
    let (args_read, args_write) = pipe()?;
    let seccomp_fd = filled_pipe(&seccomp::filter_bytes())?;
    let mut args: Vec<Vec<u8>> = vec![b"--args".to_vec(), FD_ARGS.to_string().into_bytes(), b"--".to_vec()];
    args.extend(program.iter().map(|a| a.as_bytes().to_vec()));
    let mut handed = vec![(args_read.as_raw_fd(), FD_ARGS), (seccomp_fd.as_raw_fd(), FD_SECCOMP)];
    handed.extend_from_slice(fds);
    let [stdin, stdout, stderr] = stdio;
    // A machine's overlay is mounted by a wrapper that then becomes bubblewrap (same pid).
    let wrapped = match host.rootfs_view().and_then(|image| image.overlay()) {
        Some(overlay) => Some(crate::machine::overlay_support()?.wrap(overlay, bwrap, &args)),
        None => None,
    };
    let (program, args) = match &wrapped {
        Some((program, args)) => (program.as_path(), args.as_slice()),
        None => (bwrap, args.as_slice()),
    };
    let request = SpawnRequest { program, args, env, fds: &handed, stdin, stdout, stderr };
    let mut cgroups = Cgroups::create(spec.limits.max_processes, spec.limits.memory_bytes);
    if freezer {
        cgroups.add_freezer();
    }
    let (child, lease) = spawn_sandbox(&request, &cgroups)?;
    if cgroups.lower_priority() {
        // bubblewrap waits for its arguments (written below) before it forks anything, so
        // every process of the sandbox inherits the lower priority.
        lower_priority(child.id());
    }
    drop((args_read, seccomp_fd));
    start_bwrap(&child, &cgroups, args_write, &bwrap_args(spec, host, json_status, lease.is_some()));
    Ok(Launched { child, cgroups, lease })
}

/// Sets process `pid`'s niceness to [`fallback_niceness`] (the CPU limit's stand-in where the
/// `cpu` controller is not usable); a failure is logged.
fn lower_priority(pid: libc::pid_t) {
    // SAFETY: setpriority(2) on a pid this process just spawned; no memory is touched.
    let failed = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, fallback_niceness()) } != 0;
    if failed {
        tracing::warn!("cannot lower the scheduling priority of process {pid}: {}", std::io::Error::last_os_error());
    }
}

/// Starts bubblewrap for `request`, inside a pooled network namespace when one can be leased
/// (which needs the `pids` group to tell when the sandbox is gone).
fn spawn_sandbox(request: &SpawnRequest<'_>, cgroups: &Cgroups) -> Result<(Spawned, Option<Lease>), SandboxError> {
    let spawn_error = |source| SandboxError::Spawn { program: request.program.to_path_buf(), source };
    let lease = if cgroups.has_pids() { netns::lease() } else { None };
    match lease {
        Some(lease) => {
            let child = lease.inside(|| spawn::spawn(request)).map_err(spawn_error)?.map_err(spawn_error)?;
            Ok((child, Some(lease)))
        }
        None => Ok((spawn::spawn(request).map_err(spawn_error)?, None)),
    }
}

/// Lets a freshly spawned bubblewrap go: moves it into `cgroups` (it is still waiting for its
/// argument list, so it has started nothing yet), then writes `args` (NUL-terminated each)
/// into its argument pipe and closes it.
fn start_bwrap(child: &Spawned, cgroups: &Cgroups, args_pipe: OwnedFd, args: &[Vec<u8>]) {
    cgroups.join(child.id());
    let mut bytes = Vec::new();
    for arg in args {
        bytes.extend_from_slice(arg);
        bytes.push(0);
    }
    let mut file = std::fs::File::from(args_pipe);
    if bytes.len() <= 60 * 1024 {
        // Fits in the pipe: no wait. An early exit of bubblewrap (EPIPE) shows in its status.
        let _ = file.write_all(&bytes);
    } else {
        std::thread::spawn(move || {
            let _ = file.write_all(&bytes);
        });
    }
}

/// The host path behind a sandbox path, through the spec's mounts (last match wins).
///
/// Callers that built the spec with [`SandboxConfig::visible_path`] under a disabled sandbox
/// already hold a host path inside one of the mounts' host directories; it is used as it is.
fn host_path_of(spec: &CommandSpec, sandbox: &Path) -> Result<PathBuf, SandboxError> {
    if spec.mounts.iter().any(|m| sandbox.starts_with(&m.host)) {
        return Ok(sandbox.to_path_buf());
    }
    spec.mounts
        .iter()
        .rev()
        .find_map(|m| sandbox.strip_prefix(&m.sandbox).ok().map(|rest| m.host.join(rest)))
        .ok_or_else(|| SandboxError::InvalidSpec(format!("working directory {} is not inside any mount", sandbox.display())))
}

/// The niceness a sandbox gets where the `cpu` controller cannot be used:
/// [`crate::cgroup::FALLBACK_NICE`], or the runner's own niceness when that is already higher
/// (a runner started under `nice -n 15` never raises its sandboxes to 10).
fn fallback_niceness() -> i32 {
    // SAFETY: getpriority reads the calling process's niceness and touches no memory. -1 is
    // both an error and a valid niceness; either way the fallback value wins.
    let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    own.max(crate::cgroup::FALLBACK_NICE)
}

/// Sets up the child between fork and exec: its own process group (so a timeout can kill the
/// group), membership of the command's cgroups (before it can fork), the inherited fds moved
/// to their fixed numbers, and every other fd marked close-on-exec.
fn prepare_child(cmd: &mut Command, cgroups: &Cgroups, fd_map: &[(RawFd, RawFd)]) {
    cmd.process_group(0);
    let procs: Vec<CString> = cgroups.procs_files();
    let niceness = cgroups.lower_priority().then(fallback_niceness);
    let fd_map: Vec<(RawFd, RawFd)> = fd_map.to_vec();
    let first_free = fd_map.iter().map(|(_, to)| to + 1).max().unwrap_or(3);
    // SAFETY: the closure only calls async-signal-safe functions (getpid, open, write, close,
    // fcntl, dup2, syscall) on data prepared before fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            join_cgroups(&procs);
            if let Some(niceness) = niceness {
                libc::setpriority(libc::PRIO_PROCESS, 0, niceness);
            }
            let mut moved = [0 as RawFd; 8];
            for (i, (from, _)) in fd_map.iter().enumerate().take(moved.len()) {
                moved[i] = libc::fcntl(*from, libc::F_DUPFD_CLOEXEC, 64);
                if moved[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, (_, to)) in fd_map.iter().enumerate().take(moved.len()) {
                if libc::dup2(moved[i], *to) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Marks (not closes) the rest close-on-exec: std's own exec-error pipe keeps working.
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            libc::syscall(libc::SYS_close_range, first_free as libc::c_uint, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC);
            Ok(())
        });
    }
}

/// Writes the calling process's pid into each `cgroup.procs` file. Async-signal-safe.
fn join_cgroups(procs: &[CString]) {
    // SAFETY: getpid/open/write/close on NUL-terminated paths built before fork.
    unsafe {
        let mut pid = libc::getpid() as u32;
        let mut digits = [0u8; 12];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (pid % 10) as u8;
            pid /= 10;
            if pid == 0 {
                break;
            }
        }
        for path in procs {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, digits[at..].as_ptr().cast(), digits.len() - at);
                libc::close(fd);
            }
        }
    }
}

/// Feeds the child's stdin, captures its output, enforces the timeout, kills whatever is
/// left, reaps, and assembles the [`CommandOutput`]; a leased network namespace goes back to the
/// pool once the cgroup shows every process gone.
fn collect(
    mut child: Spawned,
    spec: &CommandSpec,
    mut cgroups: Cgroups,
    lease: Option<Lease>,
    sandboxed: bool,
    start: Instant,
) -> Result<CommandOutput, SandboxError> {
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = spec.stdin.clone();
        // Detached: it ends when the command closes or exits (EPIPE), whichever comes first.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let watched = crate::watch::watch(pid, child.stdout.take(), child.stderr.take(), spec.limits.output_bytes, spec.limits.timeout);
    let status = child.wait()?;
    if let Some(signal) = status.signal() {
        tracing::debug!("sandboxed command ended by signal {signal}");
    }
    let duration = start.elapsed();
    let memory_exceeded = cgroups.memory_exceeded();
    if cgroups.kill_and_remove()
        && let Some(lease) = lease
    {
        lease.give_back();
    }

    Ok(CommandOutput {
        exit_code: if watched.timed_out { None } else { status.code() },
        timed_out: watched.timed_out,
        memory_exceeded,
        stdout: watched.stdout,
        stderr: watched.stderr,
        duration,
        sandboxed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_programs_run_under_sh_unless_they_are_plain_words() {
        assert_eq!(sandboxed_argv(&Program::Shell("echo hi".into())), ["/bin/sh", "-c", "echo hi"], "a built-in");
        assert_eq!(sandboxed_argv(&Program::Shell("ls -l > x".into())), ["/bin/sh", "-c", "ls -l > x"]);
        assert_eq!(sandboxed_argv(&Program::Shell("sh -c 'a; b'".into())), ["sh", "-c", "a; b"]);
        assert_eq!(sandboxed_argv(&Program::Argv(vec!["ls".into(), "-l".into()])), ["ls", "-l"]);
    }

    #[test]
    fn the_namespace_init_pid_is_read_from_the_status_stream() {
        assert_eq!(namespace_init_pid(b"{ \"child-pid\": 31173, \"cgroup-namespace\": 4026532182 }\n"), Some(31173));
        assert_eq!(namespace_init_pid(b""), None);
    }

    #[test]
    fn only_a_reported_exit_counts_as_started() {
        assert!(reports_exit(b"{ \"child-pid\": 12 }\n{ \"exit-code\": 3 }\n"));
        assert!(!reports_exit(b"{ \"child-pid\": 12, \"pid-namespace\": 4 }\n"));
        assert!(!reports_exit(b""));
    }

    #[test]
    fn mounts_may_not_cover_system_directories() {
        let ws = std::env::temp_dir();
        let mut spec = CommandSpec::shell("true", &ws);
        spec.mounts.push(Mount { host: ws.clone(), sandbox: PathBuf::from("/usr/local/x"), writable: false });
        assert!(matches!(validate(&spec), Err(SandboxError::InvalidSpec(_))));
        let spec = CommandSpec::argv(vec![], &ws);
        assert!(matches!(validate(&spec), Err(SandboxError::InvalidSpec(_))));
    }
}
